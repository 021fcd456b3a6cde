/* bpfprof sched: what the BPF side (bpf/sched.bpf.c) and the loader (user/cmd/sched.c) share.  Not
 * include/sched.h: that name would hide the C library's <sched.h> (-Iinclude). */
#ifndef BPFPROF_SCHEDLAT_H
#define BPFPROF_SCHEDLAT_H

#define SCHED_COMM_LEN 16

/* A task's scheduler statistics over the run, in ns; max_delay_at from bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC). */
struct sched_stats {
	__u64 runtime_ns;   /* on-CPU time: se.sum_exec_runtime's growth (perf sched latency's, the
			     * kernel's schedstat), or with --timehist the time from switch-in to
			     * switch-out (perf sched timehist's run time: with steal time too) */
	__u64 switches;     /* times switched out: nvcsw + nivcsw over the run */
	__u64 delay_ns;     /* total time runnable on a run queue, waiting for a CPU */
	__u64 delays;       /* number of such waits */
	__u64 max_delay_ns; /* the longest wait */
	__u64 max_delay_at; /* when it ended (the task got the CPU) */
	/* --timehist -s: the runs (switch-in to switch-out) one by one */
	__u64 min_run_ns;
	__u64 max_run_ns;
	__u64 run_sumsq;    /* sum of (run / 64 ns)^2, for perf's stddev (SCHED_SUMSQ_SHIFT) */
};
#define SCHED_SUMSQ_SHIFT 6

/* --timehist: one finished row of perf sched timehist, sent through the `rows` ring buffer. */
enum timehist_kind {
	TIMEHIST_SWITCH,  /* pid switched out: its wait, scheduling delay and run time */
	TIMEHIST_WAKEUP,  /* -w: pid (current on cpu) woke other_pid */
	TIMEHIST_MIGRATE, /* -M: pid (current on cpu) moved other_pid from orig_cpu to dest_cpu */
};

struct timehist_row {
	__u64 ts;       /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 wait_ns;  /* SWITCH: off the CPU before this run (0: not seen switched out) */
	__u64 delay_ns; /* SWITCH: waiting on a run queue before this run */
	__u64 run_ns;   /* SWITCH: on the CPU (0: not seen switched in) */
	__u32 kind;
	__u32 cpu;
	__u32 pid, tgid;             /* the task switched out, or current */
	__u32 other_pid, other_tgid; /* WAKEUP, MIGRATE: the task woken or moved */
	__u32 orig_cpu, dest_cpu;    /* MIGRATE */
	__u32 state;                 /* SWITCH: prev_state (TASK_RUNNING: preempted) */
	__u32 __pad;
	char comm[SCHED_COMM_LEN];
	char other_comm[SCHED_COMM_LEN];
};

/* Key of the `stats` map: TIDs are reused, so a task is its TID and its start time. */
struct sched_key {
	__u32 pid;
	__u32 __pad;
	__u64 start_ns;
};

/* Value of the `stats` map: filled when a task exits and, for the live ones, at the end of the
 * run by the task iterator. */
struct sched_row_raw {
	struct sched_stats s;
	__u32 tgid;
	__u32 pid;
	__u32 ppid;     /* the parent process (perf sched timehist -s's "parent") */
	__u32 dead;     /* copied at its exit: perf's "Terminated tasks" */
	char comm[SCHED_COMM_LEN];
};

enum sched_lost {
	SCHED_LOST_STATS_FULL, /* no room in `stats` for a task */
	SCHED_LOST_TASKS,      /* events without per-task state (storage or hash full) */
	SCHED_LOST_PREFILL,    /* tasks left without storage at the start (not events) */
	SCHED_LOST_ROWS,       /* --timehist rows dropped: ring buffer full */
	SCHED_LOST_REASONS,
};
#endif
