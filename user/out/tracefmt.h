/* bpfprof trace's lines, laid out as perf prints them: perf trace's syscall lines and its -s
 * summary, perf script's tracepoint lines.  Pure: plain values in, text out; nothing here
 * touches BPF. */
#ifndef BPFPROF_TRACEFMT_H
#define BPFPROF_TRACEFMT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

/* A syscall argument as perf trace shows it. */
struct trace_arg {
	const char *name;
	__u64 val;
	const char *str; /* a string argument's text (read in the kernel), or NULL */
	bool is_str;     /* a string argument: shown quoted, or as its pointer when not read */
	bool is_ptr;     /* a pointer: hex */
	bool is_signed;
	unsigned size;   /* bytes of the value (1, 2, 4 or 8) */
};

/* perf trace's "name(arg: value, ...)": zero arguments left out as perf does, strings quoted,
 * pointers in hex, an fd argument holding AT_FDCWD as CWD, open flags as RDONLY|CLOEXEC.
 * Returns the length (snprintf's). */
int trace_format_call(char *buf, size_t size, const char *sys, const struct trace_arg *args,
		      int n);

/* perf trace's return value: "3", "0x7f12..." for syscalls returning addresses, or
 * "-1 ENOENT (No such file or directory)".  Returns buf. */
char *trace_format_ret(char *buf, size_t size, const char *sys, __s64 ret);

/* One perf trace line: "   0.123 ( 0.005 ms): ls/4242 openat(...)   = 3"; with dur_ms < 0 a
 * call that does not return: "   0.456 (         ): ls/4242 exit_group()   = ?". */
void trace_write_syscall(FILE *f, double t_ms, double dur_ms, const char *comm, __u32 tid,
			 const char *call, const char *ret);

/* One perf script line: "              ls  4242 [000]   123.456789: cat:name: fields". */
void trace_write_tp(FILE *f, const char *comm, __u32 tid, __u32 cpu, __u64 ts_ns,
		    const char *event, const char *fields);

/* -s: one syscall of one process. */
struct trace_sum_row {
	__u32 tgid;
	char comm[16];
	const char *sys;
	__u64 calls, errors, total_ns, min_ns, max_ns;
	__u64 sumsq; /* sum of (duration >> sumsq_shift)^2 */
};

/* perf trace -s's summary: per process (most events first) " comm (pid), N events, P%", then
 * its syscalls by total time: calls, errors, total, min, avg, max (ms) and the relative standard
 * error of the mean (perf's "stddev (%)").  Sorts rows in place.  0 or -errno. */
int trace_write_summary(FILE *f, struct trace_sum_row *rows, size_t n, unsigned sumsq_shift);
/* perf's rel_stddev_stats() over n values summing to total (ns) whose squares, each taken after
 * a shift right by shift, sum to sumsq: the standard error of the mean over the mean, in %. */
double rel_stddev_pct(__u64 n, double total, __u64 sumsq, unsigned shift);
#endif
