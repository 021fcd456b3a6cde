/* Continuous profiling: --every SEC cuts a run into periods (the runner's run loop, on the
 * monotonic clock; the run goes on until Ctrl-C or DURATION), each a profile of its own, no
 * sample lost or counted twice at a boundary (stack_run_take_period()).  A period goes to
 * --pprof-dir DIR (a pprof file each, the newest --keep N kept) and/or --push URL (Grafana
 * Pyroscope's ingest API, named by --app and --label); with neither, it is written as a run's
 * end is (the report, or folded stacks with -f) to stdout or -o. */
#ifndef BPFPROF_PERIOD_H
#define BPFPROF_PERIOD_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "core/options.h"
#include "out/pprof.h"
#include "out/stack.h"

#define PERIOD_MIN_S 1
#define PERIOD_KEEP_DEFAULT 60
/* At the end of a run, what is queued for --push gets this long to go out. */
#define PERIOD_PUSH_GRACE_MS 5000

struct period_opts {
	double every;          /* --every SEC; 0: one profile at the end */
	const char *pprof_dir; /* --pprof-dir DIR */
	__u64 keep;            /* --keep N */
	const char *push;      /* --push URL */
	const char *app;       /* --app NAME */
	char **labels;         /* --label K=V, repeatable */
	int nr_labels;
};

extern struct period_opts period_opts;
/* The "Continuous profiling" option group (CAP_PERIODS). */
extern const struct opt period_opts_table[];

void period_opts_reset(void);
/* After parsing: what needs --every, what --every excludes (--svg, --pprof FILE: one file of a
 * whole run), --every's minimum, the URL and --app.  0 or -EINVAL (printed). */
int period_opts_check(void);

/* Before tracing: the directory made and tried, the sender thread started.  0 or -errno
 * (printed). */
int period_open(const char *cmd_name);
/* --every with neither --pprof-dir nor --push: each period written as a run's end is. */
bool period_text(void);
/* --every with --pprof-dir or --push: the aggregation keeps threads apart for pprof's pid and
 * tid labels. */
bool period_pprof(void);
/* A monotonic time (now_ns()'s clock) on the wall clock, ns since the epoch. */
__s64 period_wall_ns(__u64 mono_ns);
/* One period (monotonic ns start to end) of samples (n samples s, or the entries of t where t is
 * given): meta's times set to it, encoded as pprof, written to --pprof-dir and queued for --push
 * (sample_rate: -F, or 0).  The run never waits on the network; a file that cannot be written is
 * printed and counted.  0 or -errno (only for what fails before any destination: encoding). */
int period_send(const struct stack_sample *s, size_t n, const struct stack_tree *t,
		struct pprof_meta *meta, __u64 start_ns, __u64 end_ns, __u64 sample_rate);
/* The end of the run: --push's queue gets PERIOD_PUSH_GRACE_MS, then what was written, sent and
 * dropped is printed on stderr (unless quiet: the run failed before).  0, or -EIO when a period
 * file could not be written. */
int period_close(bool quiet);
#endif
