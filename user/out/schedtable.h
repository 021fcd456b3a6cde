/* The per-task table of `bpfprof sched`, laid out as `perf sched latency` prints it.  Pure: rows
 * come in as plain structs, nothing here touches BPF. */
#ifndef BPFPROF_SCHEDTABLE_H
#define BPFPROF_SCHEDTABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "schedlat.h"

struct sched_row {
	char comm[SCHED_COMM_LEN]; /* NUL-terminated */
	__u32 pid;                 /* the task's TID */
	__u32 tgid;
	__u32 nr_tasks;            /* tasks merged into the row: 1, or more with --by-comm */
	struct sched_stats s;
	__u32 ppid;                /* its parent process */
	bool dead;                 /* it exited during the run */
};

enum sched_sort_key {
	SCHED_SORT_MAX,      /* maximum delay (default) */
	SCHED_SORT_AVG,      /* average delay */
	SCHED_SORT_RUNTIME,
	SCHED_SORT_SWITCHES,
};

/* "max", "avg", "runtime" or "switches".  Returns 0, or -EINVAL for anything else. */
int sched_sort_key_parse(const char *name, enum sched_sort_key *key);

/* Average delay in ns (total delay / number of delays; 0 without delays). */
double sched_avg_delay_ns(const struct sched_stats *s);

/* Compares two rows for the table: larger values of key first, ties broken by the other keys
 * (max, avg, runtime, switches), then by comm and pid ascending, so the order is total and the
 * output stable.  Values are compared, never subtracted (they are __u64), and averages are
 * compared exactly by cross-multiplication.  <0 when a goes first. */
int sched_row_cmp(const struct sched_row *a, const struct sched_row *b, enum sched_sort_key key);

void sched_rows_sort(struct sched_row *rows, size_t n, enum sched_sort_key key);

/* --by-comm: merges rows with the same comm in place, like perf's "comm:(N)": runtimes,
 * switches and delays add up, the maximum delay (and when it happened) is the largest one,
 * nr_tasks counts the tasks merged.  Returns the new number of rows. */
size_t sched_rows_merge_by_comm(struct sched_row *rows, size_t n);

struct sched_table_opts {
	bool by_comm; /* name rows "comm:(N)" rather than "comm:pid" */
};

/* Writes the table: header, one line per row in the given order, a TOTAL line (runtime and
 * switches summed, average over all delays, the largest maximum).  Times in ms with 3 decimals,
 * "Maximum delay at" in seconds of CLOCK_MONOTONIC with 6.  Returns 0 or -errno. */
int sched_table_write(FILE *f, const struct sched_row *rows, size_t n,
		      const struct sched_table_opts *o);

/* --timehist: a task as perf sched timehist names it, "comm[tid]" for a process's main thread,
 * "comm[tid/pid]" for its other threads, "<idle>" for an idle task (comm need not be
 * NUL-terminated). */
void timehist_task_name(char *buf, size_t size, const char *comm, __u32 tid, __u32 pid);

/* --timehist: perf sched timehist's three header lines (with --task-state's column, and -V's
 * column of CPU digits when visual_cpus is not 0). */
void timehist_header(FILE *f, bool state, unsigned visual_cpus);

/* -V (perf's --cpu-visual): one character per CPU, capped at TIMEHIST_VISUAL_MAX, all blank
 * but MARK at CPU ('s' a switch, 'i' the idle task's, 'm' a migration); buf holds ncpu + 1. */
#define TIMEHIST_VISUAL_MAX 256
void timehist_cpu_visual(char *buf, unsigned ncpu, unsigned cpu, char mark);

/* --timehist --state: the letter perf prints for a task state at switch-out (prev_state):
 * R (preempted), S, D, T, t, X, Z, P, I (TASK_IDLE), as the kernel's task_state_array. */
char timehist_state_char(__u32 state);

struct timehist_summary_opts {
	const __u64 *idle_ns; /* per CPU, or NULL: no idle stats */
	int ncpu;
	unsigned sumsq_shift; /* sched_stats.run_sumsq's */
};

/* --timehist --summary: perf sched timehist -s's "Runtime summary" (comm[tid] parent sched-in
 * run-time min-run avg-run max-run stddev), the tasks that exited under "Terminated tasks",
 * each CPU's idle time, and the totals.  Sorts rows.  0 or -EIO. */
int timehist_summary_write(FILE *f, struct sched_row *rows, size_t n,
			   const struct timehist_summary_opts *o);
#endif
