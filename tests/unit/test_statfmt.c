// SPDX-License-Identifier: GPL-2.0
/* bpfprof stat's output against lines perf stat 6.1 printed on this machine (aligned and -x ,),
 * the -r statistics, and perf's event names. */
#include <errno.h>
#include <math.h>
#include "test.h"
#include "out/statfmt.h"
#include "probe/perfevent.h"

/* One row as a string. */
static char *row_text(const char *sep, const struct stat_row *row)
{
	static char buf[512];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	stat_print_row(f, sep, row);
	fclose(f);
	return buf;
}

static struct stat_row counted(const char *name, double value, bool clock)
{
	struct stat_row r = { .state = STAT_COUNTED, .name = name, .value = value, .clock = clock,
			      .run_ns = 835563, .run_pct = 100 };
	return r;
}

static void test_aligned_rows(void)
{
	struct stat_row r = counted("task-clock", 1.14, true);

	r.metric = (struct stat_metric){ "%8.3f", 0.634, "CPUs utilized" };
	CHECK_STR(row_text(NULL, &r), "              1.14 msec task-clock                       #    0.634 CPUs utilized          \n");
	r = counted("context-switches", 0, false);
	stat_rate_metric(0, &r.metric);
	CHECK_STR(row_text(NULL, &r), "                 0      context-switches                 #    0.000 /sec                   \n");
	r = counted("page-faults", 101, false);
	stat_rate_metric(88305, &r.metric);
	CHECK_STR(row_text(NULL, &r), "               101      page-faults                      #   88.305 K/sec                  \n");
	r = (struct stat_row){ .state = STAT_NOT_SUPPORTED, .name = "cycles", .run_pct = 100 };
	CHECK_STR(row_text(NULL, &r), "   <not supported>      cycles                                                      \n");
	r = counted("context-switches", 2, false);
	CHECK_STR(row_text(NULL, &r), "                 2      context-switches                                                   \n");
}

static void test_aligned_noise_cpu_interval(void)
{
	struct stat_row r = counted("task-clock", 0.88, true);
	char stamp[32];

	r.metric = (struct stat_metric){ "%8.3f", 0.017, "CPUs utilized" };
	r.noise = true, r.noise_pct = 4.52;
	CHECK_STR(row_text(NULL, &r), "              0.88 msec task-clock                       #    0.017 CPUs utilized            ( +-  4.52% )\n");
	r = counted("context-switches", 56, false);
	stat_rate_metric(277.751, &r.metric);
	r.prefix = "CPU0";
	CHECK_STR(row_text(NULL, &r), "CPU0                       56      context-switches                 #  277.751 /sec                   \n");
	/* perf stat --per-core's row, to the character: the core, its CPUs, the count */
	r.prefix = "S0-D0-C0", r.prefix_cpus = 1;
	CHECK_STR(row_text(NULL, &r), "S0-D0-C0           1                 56      context-switches                 #  277.751 /sec                   \n");
	r.prefix_cpus = 0;
	r = counted("task-clock", 0.84, true);
	r.metric = (struct stat_metric){ "%8.3f", 0.003, "CPUs utilized" };
	r.time = stat_time_stamp(300407852, stamp, sizeof(stamp));
	CHECK_STR(row_text(NULL, &r), "     0.300407852               0.84 msec task-clock                       #    0.003 CPUs utilized          \n");
	r = (struct stat_row){ .state = STAT_NOT_COUNTED, .name = "task-clock", .clock = true,
			       .time = stat_time_stamp(600958687, stamp, sizeof(stamp)) };
	CHECK_STR(row_text(NULL, &r), "     0.600958687      <not counted> msec task-clock                                                  \n");
}

static void test_csv_rows(void)
{
	struct stat_row r = counted("task-clock", 0.84, true);
	char stamp[32];

	r.metric = (struct stat_metric){ "%8.3f", 0.008, "CPUs utilized" };
	CHECK_STR(row_text(",", &r), "0.84,msec,task-clock,835563,100.00,0.008,CPUs utilized\n");
	r = counted("page-faults", 74, false);
	stat_rate_metric(88563, &r.metric);
	CHECK_STR(row_text(",", &r), "74,,page-faults,835563,100.00,88.563,K/sec\n");
	r = (struct stat_row){ .state = STAT_NOT_SUPPORTED, .name = "cycles", .run_pct = 100 };
	CHECK_STR(row_text(",", &r), "<not supported>,,cycles,0,100.00,,\n");
	r.noise = true;
	CHECK_STR(row_text(",", &r), "<not supported>,,cycles,0.00%,0,100.00,,\n");
	r = counted("task-clock", 0.76, true);
	r.run_ns = 764486, r.noise = true, r.noise_pct = 1.19;
	r.metric = (struct stat_metric){ "%8.3f", 0.015, "CPUs utilized" };
	CHECK_STR(row_text(",", &r), "0.76,msec,task-clock,1.19%,764486,100.00,0.015,CPUs utilized\n");
	r = counted("context-switches", 590, false);
	r.run_ns = 300761453, r.prefix = "CPU0";
	r.time = stat_time_stamp(300695410, stamp, sizeof(stamp));
	CHECK_STR(row_text(",", &r), "     0.300695410,CPU0,590,,context-switches,300761453,100.00,,\n");
	/* perf stat --per-socket -x,: the socket and its CPUs as two fields */
	r.time = NULL, r.prefix = "S0", r.prefix_cpus = 2;
	CHECK_STR(row_text(",", &r), "S0,2,590,,context-switches,300761453,100.00,,\n");
	/* a semicolon as perf takes any separator */
	r = counted("cs", 3, false);
	CHECK_STR(row_text(";", &r), "3;;cs;835563;100.00;;\n");
}

static void test_rates(void)
{
	struct stat_metric m;

	stat_rate_metric(999, &m);
	CHECK_STR(m.unit, "/sec");
	stat_rate_metric(1500, &m);
	CHECK_STR(m.unit, "K/sec");
	CHECK(fabs(m.value - 1.5) < 1e-9);
	stat_rate_metric(2.5e6, &m);
	CHECK_STR(m.unit, "M/sec");
	stat_rate_metric(3e9, &m);
	CHECK_STR(m.unit, "G/sec");
}

static void test_run_stats(void)
{
	struct run_stats s = {};

	CHECK(run_stats_stddev(&s) == 0);
	run_stats_add(&s, 5);
	CHECK(run_stats_stddev(&s) == 0 && run_stats_noise_pct(&s) == 0);
	s = (struct run_stats){};
	run_stats_add(&s, 1);
	run_stats_add(&s, 2);
	run_stats_add(&s, 3);
	CHECK(fabs(s.mean - 2) < 1e-12);
	/* perf's stddev_stats(): the error of the mean, sqrt(variance / n) */
	CHECK(fabs(run_stats_stddev(&s) - sqrt(1.0 / 3)) < 1e-12);
	CHECK(fabs(run_stats_noise_pct(&s) - 100 * sqrt(1.0 / 3) / 2) < 1e-9);
	s = (struct run_stats){};
	run_stats_add(&s, 0);
	run_stats_add(&s, 0);
	CHECK(run_stats_noise_pct(&s) == 0);
}

static char *footer_text(const struct run_stats *s, double user, double sys)
{
	static char buf[512];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	stat_print_footer(f, s, user, sys);
	fclose(f);
	return buf;
}

static void test_header_footer(void)
{
	struct run_stats one = { 1, 0.202066928, 0 };
	/* three runs whose mean is 0.0514214 s with an error of 0.0000843 s (perf's line) */
	struct run_stats three = { 3, 0.0514214, 0.0000843 * 0.0000843 * 6 };
	char buf[256];
	FILE *f;

	CHECK_STR(footer_text(&one, -1, -1), "\n       0.202066928 seconds time elapsed\n\n");
	CHECK_STR(footer_text(&one, 0, 0.001841),
		  "\n       0.202066928 seconds time elapsed\n\n       0.000000000 seconds user\n"
		  "       0.001841000 seconds sys\n\n\n");
	CHECK_STR(footer_text(&three, -1, -1),
		  "\n         0.0514214 +- 0.0000843 seconds time elapsed  ( +-  0.16% )\n\n");
	f = fmemopen(buf, sizeof(buf), "w");
	stat_print_header(f, "'sleep 0.05'", 3);
	fclose(f);
	CHECK_STR(buf, "\n Performance counter stats for 'sleep 0.05' (3 runs):\n\n");
	f = fmemopen(buf, sizeof(buf), "w");
	stat_print_interval_heading(f, NULL);
	stat_print_interval_heading(f, "CPU");
	stat_print_interval_heading(f, "core");
	fclose(f);
	CHECK_STR(buf, "#           time             counts unit events\n"
		       "#           time CPU                    counts unit events\n"
		       "#           time core            cpus             counts unit events\n");
}

static void test_perf_event_names(void)
{
	struct perfev ev;

	CHECK_INT(perfev_parse("cs", &ev), 0);
	CHECK_STR(ev.desc->name, "context-switches");
	CHECK_INT(perfev_parse("faults", &ev), 0);
	CHECK_STR(ev.desc->name, "page-faults");
	CHECK_INT(perfev_parse("migrations", &ev), 0);
	CHECK_STR(ev.desc->name, "cpu-migrations");
	CHECK_INT(perfev_parse("task-clock", &ev), 0);
	CHECK(ev.desc->clock && !ev.exclude_user && !ev.exclude_kernel);
	CHECK_INT(perfev_parse("cycles:u", &ev), 0);
	CHECK(!strcmp(ev.desc->name, "cpu-cycles") && ev.exclude_kernel && !ev.exclude_user);
	CHECK_INT(perfev_parse("instructions:k", &ev), 0);
	CHECK(ev.exclude_user && !ev.exclude_kernel);
	CHECK_INT(perfev_parse("branches:uk", &ev), 0);
	CHECK(!ev.exclude_user && !ev.exclude_kernel);
	CHECK_INT(perfev_parse("cycles:q", &ev), -EINVAL);
	CHECK_INT(perfev_parse("cycles:", &ev), -EINVAL);
	CHECK_INT(perfev_parse("sched:sched_switch", &ev), -ENOENT);
	CHECK_INT(perfev_parse("vfs_read", &ev), -ENOENT);
	CHECK_INT(perfev_parse("context-switch", &ev), -ENOENT);
	CHECK(perfev_unsupported(-ENOENT) && perfev_unsupported(-EOPNOTSUPP));
	CHECK(!perfev_unsupported(-EACCES) && !perfev_unsupported(-EINVAL));
}

int main(void)
{
	RUN(test_aligned_rows);
	RUN(test_aligned_noise_cpu_interval);
	RUN(test_csv_rows);
	RUN(test_rates);
	RUN(test_run_stats);
	RUN(test_header_footer);
	RUN(test_perf_event_names);
	TESTS_DONE();
}
