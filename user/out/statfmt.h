/* perf stat's output, line for line: counter rows (aligned, or -x SEP separated), their
 * derived figures, the -r noise, the header and the elapsed-time footer; and the running mean
 * and standard error perf keeps across -r runs.  Pure functions of plain data. */
#ifndef BPFPROF_STATFMT_H
#define BPFPROF_STATFMT_H
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

/* Welford's running mean and variance, as perf's struct stats. */
struct run_stats {
	double n, mean, m2;
};

void run_stats_add(struct run_stats *s, double v);
/* The standard error of the mean (perf's stddev_stats()): 0 below two values. */
double run_stats_stddev(const struct run_stats *s);
/* That error as a percentage of the mean (perf's "( +- x.xx% )"); 0 for a zero mean. */
double run_stats_noise_pct(const struct run_stats *s);

/* A derived figure after '#': "%8.3f" with "CPUs utilized", "K/sec"...; fmt NULL: none. */
struct stat_metric {
	const char *fmt;
	double value;
	char unit[32];
};

/* perf's rate: per second, in K/sec, M/sec or G/sec above a thousand, million, billion. */
void stat_rate_metric(double per_sec, struct stat_metric *m);

enum stat_row_state {
	STAT_COUNTED,
	STAT_NOT_SUPPORTED, /* the machine has no such counter */
	STAT_NOT_COUNTED,   /* it never ran (in this interval) */
};

/* One counter line. */
struct stat_row {
	const char *time;    /* -I: the interval's end, seconds since the start; NULL without */
	const char *prefix;  /* -A "CPU3", --per-core "S0-D0-C1", a process "ls-4242", a command
			      * "ls"; NULL without */
	int prefix_cpus;     /* --per-core/--per-socket: the CPUs counted in the prefix's unit */
	enum stat_row_state state;
	double value;        /* the count; msec for clocks */
	bool clock;          /* shown with two decimals and "msec" */
	const char *name;    /* as the user spelt it */
	bool noise;          /* -r N, N > 1: noise_pct is shown */
	double noise_pct;
	__u64 run_ns;        /* CSV: how long the counter ran */
	double run_pct;      /* the percentage of its enabled time; below 100: multiplexed */
	struct stat_metric metric;
};

/* Formats the -I time stamp as perf does ("%6lu.%09lu") into buf (at least 24 bytes). */
const char *stat_time_stamp(__u64 ns, char *buf, size_t size);

/* Writes one row; sep NULL: perf's aligned columns, else perf's -x SEP fields
 * (time, prefix, value, unit, name, noise, run, run%, metric value, metric unit). */
void stat_print_row(FILE *out, const char *sep, const struct stat_row *row);

/* " Performance counter stats for 'WHAT' (N runs):" between blank lines (aligned output only;
 * perf writes no header with -x). */
void stat_print_header(FILE *out, const char *what, int runs);

/* The footer: elapsed seconds (mean +- error with several runs, at two digits more than the
 * error's first), and user and sys seconds when given (>= 0). */
void stat_print_footer(FILE *out, const struct run_stats *elapsed, double user_s, double sys_s);

/* "-I" column heading, printed before the first interval (aligned output only); prefix_title
 * "CPU" for -A, "core" or "socket" for a unit's rows (with their CPUs' column), or NULL. */
void stat_print_interval_heading(FILE *out, const char *prefix_title);
#endif
