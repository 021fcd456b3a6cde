// SPDX-License-Identifier: GPL-2.0
/* The sched table (layout, sorting, --by-comm), and the runqlat histogram path: log-linear slots
 * folded into BCC's log2 rows, percentiles from the finer slots. */
#include <errno.h>
#include <stdint.h>
#include "test.h"
#include "out/hist.h"
#include "runqlat.h"
#include "out/schedtable.h"

#define MS 1000000ULL

static struct sched_row row(const char *comm, __u32 pid, __u64 runtime, __u64 switches,
			    __u64 delay, __u64 delays, __u64 max, __u64 max_at)
{
	struct sched_row r = { .pid = pid, .tgid = pid, .nr_tasks = 1 };

	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	r.s.runtime_ns = runtime;
	r.s.switches = switches;
	r.s.delay_ns = delay;
	r.s.delays = delays;
	r.s.max_delay_ns = max;
	r.s.max_delay_at = max_at;
	return r;
}

static char *write_table(const struct sched_row *rows, size_t n, bool by_comm)
{
	struct sched_table_opts o = { .by_comm = by_comm };
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	int err;

	err = sched_table_write(f, rows, n, &o);
	fclose(f);
	if (err) {
		free(out);
		return NULL;
	}
	return out;
}

/* The layout of perf sched latency, character for character. */
static void test_table_layout(void)
{
	struct sched_row rows[] = {
		row("cc1", 4242, 10001 * MS / 1000, 25, 100 * MS / 1000, 25, 26 * MS / 1000,
		    128745505849000ULL),
		row("sleeper", 7, 2 * MS, 3, 0, 0, 0, 0),
	};
	const char *want =
		"\n"
		" -----------------------------------------------------------------------------------------------------------------\n"
		"  Task                  |   Runtime ms  | Switches | Average delay ms | Maximum delay ms | Maximum delay at       |\n"
		" -----------------------------------------------------------------------------------------------------------------\n"
		"  cc1:4242              |     10.001 ms |       25 | avg:   0.004 ms | max:   0.026 ms | max at: 128745.505849 s\n"
		"  sleeper:7             |      2.000 ms |        3 | avg:   0.000 ms | max:   0.000 ms | max at:             - s\n"
		" -----------------------------------------------------------------------------------------------------------------\n"
		"  TOTAL:                |     12.001 ms |       28 | avg:   0.004 ms | max:   0.026 ms | max at: 128745.505849 s\n"
		" -----------------------------------------------------------------------------------------------------------------\n";
	char *out = write_table(rows, 2, false);

	CHECK_STR(out, want);
	free(out);
}

/* A name longer than the column pushes the rest right rather than being cut, as in perf. */
static void test_table_long_name(void)
{
	struct sched_row r = row("memfd:sealed-91", 4194304, MS, 1, MS, 1, MS, 1000000000ULL);
	char *out = write_table(&r, 1, false);

	CHECK(out && strstr(out, "\n  memfd:sealed-91:4194304 |      1.000 ms |        1 | avg:"));
	free(out);
}

static void test_table_empty(void)
{
	char *out = write_table(NULL, 0, false);

	CHECK(out && strstr(out, "  TOTAL:                |      0.000 ms |        0 | avg:   0.000 ms"));
	free(out);
}

static void test_sort_key_parse(void)
{
	enum sched_sort_key k = SCHED_SORT_AVG;

	CHECK_INT(sched_sort_key_parse("max", &k), 0);
	CHECK_INT(k, SCHED_SORT_MAX);
	CHECK_INT(sched_sort_key_parse("avg", &k), 0);
	CHECK_INT(k, SCHED_SORT_AVG);
	CHECK_INT(sched_sort_key_parse("runtime", &k), 0);
	CHECK_INT(k, SCHED_SORT_RUNTIME);
	CHECK_INT(sched_sort_key_parse("switches", &k), 0);
	CHECK_INT(k, SCHED_SORT_SWITCHES);
	k = SCHED_SORT_MAX;
	CHECK_INT(sched_sort_key_parse("switch", &k), 0); /* perf's spelling */
	CHECK_INT(k, SCHED_SORT_SWITCHES);
	CHECK_INT(sched_sort_key_parse("max,avg", &k), -EINVAL);
	CHECK_INT(sched_sort_key_parse("Max", &k), -EINVAL);
	CHECK_INT(sched_sort_key_parse("", &k), -EINVAL);
	CHECK_INT(sched_sort_key_parse("maxx", &k), -EINVAL);
}

/* Values 2^63 apart: subtracting them as a comparison would overflow and flip the order. */
static void test_sort_no_subtraction(void)
{
	struct sched_row rows[] = {
		row("small", 1, 1, 1, 1, 1, 1, 1),
		row("huge", 2, UINT64_MAX, UINT64_MAX, UINT64_MAX, 1, UINT64_MAX, 1),
		row("mid", 3, 1ULL << 63, 1ULL << 63, 1ULL << 63, 1, 1ULL << 63, 1),
	};

	for (int k = SCHED_SORT_MAX; k <= SCHED_SORT_SWITCHES; k++) {
		sched_rows_sort(rows, 3, k);
		CHECK_STR(rows[0].comm, "huge");
		CHECK_STR(rows[1].comm, "mid");
		CHECK_STR(rows[2].comm, "small");
		CHECK(sched_row_cmp(&rows[0], &rows[2], k) < 0);
		CHECK(sched_row_cmp(&rows[2], &rows[0], k) > 0);
		CHECK_INT(sched_row_cmp(&rows[1], &rows[1], k), 0);
	}
}

/* Averages compare exactly: 2^64-1 / 3 against (2^64-4) / 3 differ by one in the totals only. */
static void test_sort_avg_exact(void)
{
	struct sched_row a = row("a", 1, 0, 0, UINT64_MAX, 3, 5, 0);
	struct sched_row b = row("b", 2, 0, 0, UINT64_MAX - 3, 3, 5, 0);
	struct sched_row c = row("c", 3, 0, 0, 0, 0, 5, 0);   /* no delays: average 0 */
	struct sched_row d = row("d", 4, 0, 0, 0, 7, 5, 0);   /* delays of 0 ns: average 0 */

	CHECK(sched_row_cmp(&a, &b, SCHED_SORT_AVG) < 0);
	CHECK(sched_row_cmp(&b, &a, SCHED_SORT_AVG) > 0);
	CHECK(sched_row_cmp(&b, &c, SCHED_SORT_AVG) < 0);
	CHECK(sched_row_cmp(&c, &b, SCHED_SORT_AVG) > 0);
	/* equal averages fall through to the other keys and then the name */
	CHECK(sched_row_cmp(&c, &d, SCHED_SORT_AVG) < 0);
	CHECK(sched_avg_delay_ns(&c.s) == 0);
	CHECK(sched_avg_delay_ns(&a.s) > 6.1e18);
}

/* Ties on the key are broken by the other keys, then comm, then pid: a total order. */
static void test_sort_ties(void)
{
	struct sched_row rows[] = {
		row("b", 9, 10, 5, 20, 2, 10, 0),
		row("a", 8, 10, 5, 20, 2, 10, 0),
		row("a", 7, 10, 5, 20, 2, 10, 0),
		row("z", 1, 99, 5, 20, 2, 10, 0),
		row("y", 2, 10, 6, 20, 2, 10, 0),
	};

	sched_rows_sort(rows, 5, SCHED_SORT_MAX);
	/* same max and avg: runtime decides, then switches, then comm and pid */
	CHECK_STR(rows[0].comm, "z");
	CHECK_STR(rows[1].comm, "y");
	CHECK(!strcmp(rows[2].comm, "a") && rows[2].pid == 7);
	CHECK(!strcmp(rows[3].comm, "a") && rows[3].pid == 8);
	CHECK_STR(rows[4].comm, "b");
	sched_rows_sort(rows, 5, SCHED_SORT_SWITCHES);
	CHECK_STR(rows[0].comm, "y");
	CHECK_STR(rows[1].comm, "z");
}

static void test_merge_by_comm(void)
{
	struct sched_row rows[] = {
		row("worker", 10, 1 * MS, 2, 4 * MS, 2, 3 * MS, 100),
		row("idle", 1, 5 * MS, 1, 0, 0, 0, 0),
		row("worker", 11, 2 * MS, 3, 6 * MS, 3, 5 * MS, 200),
		row("worker", 12, 3 * MS, 4, 1 * MS, 1, 1 * MS, 300),
	};
	size_t n = sched_rows_merge_by_comm(rows, 4);
	char *out;

	CHECK_INT(n, 2);
	sched_rows_sort(rows, n, SCHED_SORT_MAX);
	CHECK_STR(rows[0].comm, "worker");
	CHECK_INT(rows[0].nr_tasks, 3);
	CHECK_INT(rows[0].s.runtime_ns, 6 * MS);
	CHECK_INT(rows[0].s.switches, 9);
	CHECK_INT(rows[0].s.delay_ns, 11 * MS);
	CHECK_INT(rows[0].s.delays, 6);
	CHECK_INT(rows[0].s.max_delay_ns, 5 * MS);
	CHECK_INT(rows[0].s.max_delay_at, 200);
	CHECK_STR(rows[1].comm, "idle");
	CHECK_INT(rows[1].nr_tasks, 1);
	out = write_table(rows, n, true);
	CHECK(out && strstr(out, "\n  worker:(3)            |      6.000 ms |        9 | avg:   1.833 ms"
			      " | max:   5.000 ms | max at:      0.000000 s\n"));
	CHECK(out && strstr(out, "\n  idle:(1)              |"));
	free(out);
	CHECK_INT(sched_rows_merge_by_comm(rows, 0), 0);
}

/* runqlat's rows: the kernel's nanosecond slots in BCC's log2 rows of usecs, every delay in
 * the row of its whole microseconds (0 -> 1 holds 0..1999 ns), nothing lost or added. */
static void test_runqlat_rows(void)
{
	static __u64 slots[HIST_NS_SLOTS];
	struct hist_layout log2 = { .kind = HIST_LOG2 };
	__u64 rows[HIST_LOG2_SLOTS], sum = 0, total = 0;

	memset(slots, 0, sizeof(slots));
	slots[hist_ns_slot(1500)] += 3;     /* 1.5 us */
	slots[hist_ns_slot(2100)] += 4;     /* 2.1 us */
	slots[hist_ns_slot(6000)] += 5;     /* 6 us */
	slots[hist_ns_slot(700000)] += 6;   /* 700 us */
	sum = 3 * 1500 + 4 * 2100 + 5 * 6000 + 6 * 700000;
	CHECK_INT(hist_ns_rows(slots, HIST_NS_SLOTS, sum, &log2, 1000, rows), 0);
	CHECK_INT(rows[0], 3);
	CHECK_INT(rows[1], 4);
	CHECK_INT(rows[2], 5);
	CHECK_INT(rows[9], 6);
	for (int i = 0; i < HIST_LOG2_SLOTS; i++)
		total += rows[i];
	CHECK_INT(total, 18);
}

/* Percentiles come from the fine slots: 1000 delays of 100..1099 us.  In log2 rows p50 would
 * only be known to lie in [512, 1023]; 16 sub-buckets per power of two pin it within 6.25%. */
static void test_runqlat_percentiles(void)
{
	static __u64 slots[HIST_NS_SLOTS];
	__u64 sum = 0, v;
	struct hist_summary s;
	char *out = NULL;
	size_t len;
	FILE *f;

	memset(slots, 0, sizeof(slots));
	for (v = 100; v < 1100; v++) {
		slots[hist_ns_slot(v * 1000)]++;
		sum += v * 1000;
	}
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, sum, 1000, &s), 0);
	CHECK_INT(s.count, 1000);
	CHECK(s.avg == 599.5);
	CHECK(s.pct[0] >= 599.5 * 0.9375 && s.pct[0] <= 599.5 * 1.0625);
	CHECK(s.pct[1] >= 1000 * 0.9375 && s.pct[1] <= 1000 * 1.0625);
	CHECK(s.pct[2] >= 1089 * 0.9375 && s.pct[2] <= 1089 * 1.0625);
	CHECK(!s.pct_open[3]);
	f = open_memstream(&out, &len);
	hist_print_summary(f, &s, "usecs");
	fclose(f);
	CHECK(out && !strncmp(out, "count 1000  avg 599.5 usecs  p50 ", 33));
	free(out);
	/* a delay beyond the last slot is open-ended: reported as ">=" its lower bound */
	memset(slots, 0, sizeof(slots));
	slots[HIST_NS_SLOTS - 1] = 1;
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, 1ULL << 50, 1000, &s), 0);
	CHECK(s.pct_open[0]);
}

/* timehist_header()'s text, to be freed */
static char *header_text(bool state, unsigned visual_cpus)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	timehist_header(f, state, visual_cpus);
	fclose(f);
	return out;
}

/* perf sched timehist's names and header, byte for byte */
static void test_timehist_layout(void)
{
	char buf[64], *out;

	timehist_task_name(buf, sizeof(buf), "sleep", 7802, 7802);
	CHECK_STR(buf, "sleep[7802]");
	timehist_task_name(buf, sizeof(buf), "rq-busy-0", 13728, 13725);
	CHECK_STR(buf, "rq-busy-0[13728/13725]");
	/* a comm of 16 bytes without its NUL */
	timehist_task_name(buf, sizeof(buf), "0123456789abcdefXYZ", 1, 1);
	CHECK_STR(buf, "0123456789abcdef[1]");
	timehist_task_name(buf, sizeof(buf), "swapper/1", 0, 0);
	CHECK_STR(buf, "<idle>");
	out = header_text(false, 0);
	CHECK_STR(out,
		  "           time    cpu  task name                       wait time  sch delay   run time\n"
		  "                        [tid/pid]                          (msec)     (msec)     (msec)\n"
		  "--------------- ------  ------------------------------  ---------  ---------  ---------\n");
	free(out);
	out = header_text(true, 0);
	CHECK_STR(out,
		  "           time    cpu  task name                       wait time  sch delay   run time  state\n"
		  "                        [tid/pid]                          (msec)     (msec)     (msec)\n"
		  "--------------- ------  ------------------------------  ---------  ---------  ---------  -----\n");
	free(out);
	/* -V: perf's column of CPU digits over three CPUs, and a switch's mark on CPU 1 */
	out = header_text(false, 3);
	CHECK_STR(out,
		  "           time    cpu  012  task name                       wait time  sch delay   run time\n"
		  "                             [tid/pid]                          (msec)     (msec)     (msec)\n"
		  "--------------- ------  ---  ------------------------------  ---------  ---------  ---------\n");
	free(out);
	timehist_cpu_visual(buf, 3, 1, 's');
	CHECK_STR(buf, " s ");
	timehist_cpu_visual(buf, 18, 17, 'm');
	CHECK_STR(buf, "                 m");
	out = header_text(false, 18);
	CHECK(strstr(out, "0123456789abcdef01  task name") != NULL);
	free(out);
	/* perf's letters for prev_state: preempted, sleeping, TASK_IDLE, a task's exit */
	CHECK(timehist_state_char(0) == 'R');
	CHECK(timehist_state_char(1) == 'S');
	CHECK(timehist_state_char(2) == 'D');
	CHECK(timehist_state_char(0x402) == 'I');
	CHECK(timehist_state_char(0x80) == 'X');
	CHECK(timehist_state_char(0x4) == 'T');
}

/* perf sched timehist -s's summary: rows by tid, terminated tasks apart, idle stats, totals */
static void test_timehist_summary(void)
{
	struct sched_row rows[3] = {
		{ .comm = "b", .pid = 20, .tgid = 20, .ppid = 1, .nr_tasks = 1,
		  .s = { .runtime_ns = 3000000, .switches = 2, .min_run_ns = 1000000,
			 .max_run_ns = 2000000 } },
		{ .comm = "a", .pid = 10, .tgid = 10, .ppid = 1, .nr_tasks = 1,
		  .s = { .runtime_ns = 1000000, .switches = 1, .min_run_ns = 1000000,
			 .max_run_ns = 1000000 } },
		{ .comm = "gone", .pid = 30, .tgid = 30, .ppid = 20, .nr_tasks = 1, .dead = true,
		  .s = { .runtime_ns = 500000, .switches = 1, .min_run_ns = 500000,
			 .max_run_ns = 500000 } },
	};
	__u64 idle[2] = { 7000000, 0 };
	struct timehist_summary_opts o = { .idle_ns = idle, .ncpu = 2, .sumsq_shift = 6 };
	char *out = NULL, *a, *b, *t;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK_INT(timehist_summary_write(f, rows, 3, &o), 0);
	fclose(f);
	a = strstr(out, "a[10]");
	b = strstr(out, "b[20]");
	t = strstr(out, "Terminated tasks:");
	CHECK(a && b && t && a < b && b < t && strstr(t, "gone[30]"));
	CHECK(strstr(out, "       b[20]       1          2        3.000      1.000       1.500       2.000") != NULL);
	CHECK(strstr(out, "cpu  0 idle for      7.000 msec\n") && !strstr(out, "cpu  1 idle"));
	CHECK(strstr(out, "    Total number of unique tasks: 3\n"
			  "Total number of context switches: 4\n"
			  "           Total run time (msec): 4.500\n") != NULL);
	free(out);
}

int main(void)
{
	RUN(test_timehist_layout);
	RUN(test_timehist_summary);
	RUN(test_table_layout);
	RUN(test_table_long_name);
	RUN(test_table_empty);
	RUN(test_sort_key_parse);
	RUN(test_sort_no_subtraction);
	RUN(test_sort_avg_exact);
	RUN(test_sort_ties);
	RUN(test_merge_by_comm);
	RUN(test_runqlat_rows);
	RUN(test_runqlat_percentiles);
	TESTS_DONE();
}
