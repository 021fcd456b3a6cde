// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "out/outfile.h"
#include "out/schedtable.h"
#include "out/tracefmt.h"

#define NSEC_PER_MSEC 1000000.0
#define NSEC_PER_SEC 1000000000.0
/* perf sched latency's task column: "  comm:pid " padded to 24 characters */
#define TASK_COL 24
#define RULE " -----------------------------------------------------------------------------------------------------------------\n"

static const char *const sort_names[] = {
	[SCHED_SORT_MAX] = "max",
	[SCHED_SORT_AVG] = "avg",
	[SCHED_SORT_RUNTIME] = "runtime",
	[SCHED_SORT_SWITCHES] = "switches",
};

int sched_sort_key_parse(const char *name, enum sched_sort_key *key)
{
	for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++) {
		if (!strcmp(name, sort_names[i])) {
			*key = i;
			return 0;
		}
	}
	/* perf sched latency's name of the key */
	if (!strcmp(name, "switch")) {
		*key = SCHED_SORT_SWITCHES;
		return 0;
	}
	return -EINVAL;
}

double sched_avg_delay_ns(const struct sched_stats *s)
{
	return s->delays ? (double)s->delay_ns / (double)s->delays : 0;
}

/* Larger first. */
static int desc_u64(__u64 a, __u64 b)
{
	return a > b ? -1 : a < b;
}

/* a.delay / a.delays against b.delay / b.delays without division: 128-bit products are exact. */
static int desc_avg(const struct sched_stats *a, const struct sched_stats *b)
{
	unsigned __int128 x, y;

	if (!a->delays || !b->delays) {
		/* without delays the average is 0: only whether the other one is above 0 matters */
		bool ax = a->delays && a->delay_ns, bx = b->delays && b->delay_ns;

		return ax == bx ? 0 : ax ? -1 : 1;
	}
	x = (unsigned __int128)a->delay_ns * b->delays;
	y = (unsigned __int128)b->delay_ns * a->delays;
	return x > y ? -1 : x < y;
}

static int cmp_key(const struct sched_row *a, const struct sched_row *b, enum sched_sort_key key)
{
	switch (key) {
	case SCHED_SORT_MAX:
		return desc_u64(a->s.max_delay_ns, b->s.max_delay_ns);
	case SCHED_SORT_AVG:
		return desc_avg(&a->s, &b->s);
	case SCHED_SORT_RUNTIME:
		return desc_u64(a->s.runtime_ns, b->s.runtime_ns);
	case SCHED_SORT_SWITCHES:
		return desc_u64(a->s.switches, b->s.switches);
	}
	return 0;
}

int sched_row_cmp(const struct sched_row *a, const struct sched_row *b, enum sched_sort_key key)
{
	int c = cmp_key(a, b, key);

	for (int k = SCHED_SORT_MAX; !c && k <= SCHED_SORT_SWITCHES; k++)
		if (k != (int)key)
			c = cmp_key(a, b, k);
	if (!c)
		c = strcmp(a->comm, b->comm);
	if (!c)
		c = a->pid < b->pid ? -1 : a->pid > b->pid;
	return c;
}

static enum sched_sort_key sort_key;

static int qsort_cmp(const void *a, const void *b)
{
	return sched_row_cmp(a, b, sort_key);
}

void sched_rows_sort(struct sched_row *rows, size_t n, enum sched_sort_key key)
{
	sort_key = key;
	/* an empty table may have no array (NULL), which qsort may not be given */
	if (n)
		qsort(rows, n, sizeof(*rows), qsort_cmp);
}

static int cmp_comm(const void *a, const void *b)
{
	const struct sched_row *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	return c ? c : x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t sched_rows_merge_by_comm(struct sched_row *rows, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(rows, n, sizeof(*rows), cmp_comm);
	for (size_t i = 1; i < n; i++) {
		struct sched_row *m = &rows[out];
		const struct sched_row *r = &rows[i];

		if (strcmp(m->comm, r->comm)) {
			rows[++out] = *r;
			continue;
		}
		m->nr_tasks += r->nr_tasks;
		m->s.runtime_ns += r->s.runtime_ns;
		m->s.switches += r->s.switches;
		m->s.delay_ns += r->s.delay_ns;
		m->s.delays += r->s.delays;
		if (r->s.max_delay_ns > m->s.max_delay_ns) {
			m->s.max_delay_ns = r->s.max_delay_ns;
			m->s.max_delay_at = r->s.max_delay_at;
		}
	}
	return out + 1;
}

static void write_delays(FILE *f, const struct sched_stats *s)
{
	fprintf(f, " avg:%8.3f ms | max:%8.3f ms |", sched_avg_delay_ns(s) / NSEC_PER_MSEC,
		s->max_delay_ns / NSEC_PER_MSEC);
	if (s->delays)
		fprintf(f, " max at: %13.6f s\n", s->max_delay_at / NSEC_PER_SEC);
	else
		fprintf(f, " max at: %13s s\n", "-");
}

int sched_table_write(FILE *f, const struct sched_row *rows, size_t n,
		      const struct sched_table_opts *o)
{
	struct sched_stats total = {};
	int len;

	fputs("\n" RULE, f);
	fputs("  Task                  |   Runtime ms  | Switches | Average delay ms | "
	      "Maximum delay ms | Maximum delay at       |\n", f);
	fputs(RULE, f);
	for (size_t i = 0; i < n; i++) {
		const struct sched_row *r = &rows[i];

		if (o && o->by_comm)
			len = fprintf(f, "  %s:(%u) ", r->comm, r->nr_tasks);
		else
			len = fprintf(f, "  %s:%u ", r->comm, r->pid);
		if (len > 0 && len < TASK_COL)
			fprintf(f, "%*s", TASK_COL - len, "");
		fprintf(f, "|%11.3f ms |%9llu |", r->s.runtime_ns / NSEC_PER_MSEC,
			(unsigned long long)r->s.switches);
		write_delays(f, &r->s);
		total.runtime_ns += r->s.runtime_ns;
		total.switches += r->s.switches;
		total.delay_ns += r->s.delay_ns;
		total.delays += r->s.delays;
		if (r->s.max_delay_ns > total.max_delay_ns) {
			total.max_delay_ns = r->s.max_delay_ns;
			total.max_delay_at = r->s.max_delay_at;
		}
	}
	fputs(RULE, f);
	fprintf(f, "  TOTAL:%*s|%11.3f ms |%9llu |", TASK_COL - 8, "",
		total.runtime_ns / NSEC_PER_MSEC, (unsigned long long)total.switches);
	write_delays(f, &total);
	fputs(RULE, f);
	return stream_flush_check(f);
}

void timehist_task_name(char *buf, size_t size, const char *comm, __u32 tid, __u32 pid)
{
	int len = strnlen(comm, SCHED_COMM_LEN);

	if (!tid) /* every CPU's idle task (swapper/N), as perf names it */
		snprintf(buf, size, "<idle>");
	else if (tid == pid)
		snprintf(buf, size, "%.*s[%u]", len, comm, tid);
	else
		snprintf(buf, size, "%.*s[%u/%u]", len, comm, tid, pid);
}

void timehist_cpu_visual(char *buf, unsigned ncpu, unsigned cpu, char mark)
{
	for (unsigned i = 0; i < ncpu; i++)
		buf[i] = i == cpu ? mark : ' ';
	buf[ncpu] = '\0';
}

void timehist_header(FILE *f, bool state, unsigned visual_cpus)
{
	char digits[TIMEHIST_VISUAL_MAX + 3] = "", pad[TIMEHIST_VISUAL_MAX + 3] = "";
	char dashes[TIMEHIST_VISUAL_MAX + 3] = "";
	unsigned n = visual_cpus < TIMEHIST_VISUAL_MAX ? visual_cpus : TIMEHIST_VISUAL_MAX;

	/* -V: perf's CPU digits, in hex and wrapping after f, then two spaces */
	if (n) {
		for (unsigned i = 0; i < n; i++) {
			digits[i] = "0123456789abcdef"[i % 16];
			pad[i] = ' ';
			dashes[i] = '-';
		}
		strcpy(digits + n, "  ");
		strcpy(pad + n, "  ");
		strcpy(dashes + n, "  ");
	}
	fprintf(f, "%15s %6s  %s%-30s  %9s  %9s  %9s%s\n", "time", "cpu", digits, "task name",
		"wait time", "sch delay", "run time", state ? "  state" : "");
	fprintf(f, "%15s %6s  %s%-30s  %9s  %9s  %9s\n", "", "", pad, "[tid/pid]", "(msec)", "(msec)",
		"(msec)");
	fprintf(f, "--------------- ------  %s------------------------------  ---------  ---------  "
		"---------%s\n", dashes, state ? "  -----" : "");
}

char timehist_state_char(__u32 state)
{
	/* include/linux/sched.h's bits, in fs/proc/array.c's task_state_array order */
	static const char letters[] = "SDTtXZPI";
	__u32 bits = state & 0x7f;

	if (!state)
		return 'R';
	if ((state & 0x0402) == 0x0402) /* TASK_IDLE: uninterruptible, not counted in the load */
		return 'I';
	if (state & 0x0200) /* TASK_PARKED */
		return 'P';
	if (state & 0x0080) /* TASK_DEAD: its last switch, reported as exit_state's X */
		return 'X';
	for (int i = 0; bits && i < 6; i++)
		if (bits & (1u << i))
			return letters[i];
	return '?';
}

static int by_tid(const void *a, const void *b)
{
	const struct sched_row *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* perf's print_sched_time(): msec with three decimals */
static void summary_row(FILE *f, const struct sched_row *r, unsigned shift)
{
	char name[64];
	double avg = r->s.switches ? (double)r->s.runtime_ns / r->s.switches : 0;

	timehist_task_name(name, sizeof(name), r->comm, r->pid, r->tgid);
	fprintf(f, "%30s   %5u  %9llu %12.3f %10.3f %11.3f %11.3f  %5.2f\n", name, r->ppid,
		(unsigned long long)r->s.switches, r->s.runtime_ns / 1e6, r->s.min_run_ns / 1e6,
		avg / 1e6, r->s.max_run_ns / 1e6,
		rel_stddev_pct(r->s.switches, r->s.runtime_ns, r->s.run_sumsq, shift));
}

int timehist_summary_write(FILE *f, struct sched_row *rows, size_t n,
			   const struct timehist_summary_opts *o)
{
	__u64 tasks = 0, switches = 0, run = 0;
	bool dead_seen = false;

	if (n)
		qsort(rows, n, sizeof(*rows), by_tid);
	fprintf(f, "\nRuntime summary\n");
	fprintf(f, "%30s  parent   sched-in     run-time    min-run     avg-run     max-run  "
		"stddev\n", "comm");
	fprintf(f, "%30s            (count)       (msec)     (msec)      (msec)      (msec)       "
		"%%\n", "");
	fprintf(f, "-----------------------------------------------------------------------------"
		"-----------------------------\n");
	for (int dead = 0; dead < 2; dead++) {
		for (size_t i = 0; i < n; i++) {
			const struct sched_row *r = &rows[i];

			if (r->dead != dead || !r->s.switches)
				continue;
			if (dead && !dead_seen) {
				fprintf(f, "\nTerminated tasks:\n");
				dead_seen = true;
			}
			summary_row(f, r, o->sumsq_shift);
			tasks++;
			switches += r->s.switches;
			run += r->s.runtime_ns;
		}
	}
	if (o->idle_ns) {
		fprintf(f, "\nIdle stats:\n");
		for (int c = 0; c < o->ncpu; c++)
			if (o->idle_ns[c])
				fprintf(f, "%6s cpu %2d idle for %10.3f msec\n", "", c,
					o->idle_ns[c] / 1e6);
	}
	fprintf(f, "\n    Total number of unique tasks: %llu\n"
		   "Total number of context switches: %llu\n"
		   "           Total run time (msec): %.3f\n", (unsigned long long)tasks,
		(unsigned long long)switches, run / 1e6);
	return stream_flush_check(f);
}
