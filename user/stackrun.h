/* The steps every stack-collecting subcommand (profile, offcpu) shares once its BPF programs
 * run: waiting for the end of the run while snapshotting new processes, and writing the report or
 * folded stacks (stdout or -o) and the flame graph SVG. */
#ifndef BPFPROF_STACKRUN_H
#define BPFPROF_STACKRUN_H
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "flamegraph.h"
#include "folded.h"
#include "report.h"

/* ring_buffer__new() callback for struct proc_seen_event; ctx is the struct syms_cache. */
int stack_proc_event(void *ctx, void *data, size_t size);

/* -p / -t targets: true once every listed process and thread has exited (never without any). */
bool stack_targets_gone(const __u32 *pids, int nr_pids, const __u32 *tids, int nr_tids);

/* Polls rb until DURATION seconds after start (0: no limit), the child exits (child may be
 * NULL), every -p/-t target has exited, or SIGINT/SIGTERM. */
void stack_run_loop(struct ring_buffer *rb, struct child *child, __u64 start, double duration,
		    const __u32 *pids, int nr_pids, const __u32 *tids, int nr_tids);

/* What to write and how. */
struct stack_outputs {
	const char *out_path;  /* -o FILE, or NULL for stdout */
	const char *svg_path;  /* --svg FILE, or NULL */
	bool folded;           /* -f: folded stacks instead of the report */
	struct folded_opts folded_opts;
	struct flamegraph_opts flamegraph;
	struct report_header header; /* with -f, its lost count and detail go to stderr */
	struct report_opts report;
	const char *lost_what; /* "samples", "blocks": for the stderr line */
};

/* Writes the SVG (if asked), then the report or folded stacks, each file complete or not at all
 * (outfile).  Prints the error.  Returns 0 or -errno. */
int stack_outputs_write(const struct stack_outputs *o, const struct stack_sample *s, size_t n);
#endif
