/* The steps every stack-collecting subcommand (profile, offcpu) shares once its BPF programs
 * run: waiting for the end of the run while snapshotting new processes, and writing the report or
 * folded stacks (stdout or -o) and the flame graph SVG. */
#ifndef BPFPROF_STACKRUN_H
#define BPFPROF_STACKRUN_H
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "out/flamegraph.h"
#include "out/folded.h"
#include "out/report.h"
#include "unwind/unwinder.h"

/* Options every stack command (profile, offcpu) shares: which stacks and how many, how user
 * stacks are unwound, where the output goes, and the run (DURATION or -- COMMAND). */
struct stack_opts {
	bool user_only, kernel_only;           /* -U, -K */
	__u64 max_stack, max_stacks;           /* --max-stack, --max-stacks */
	enum unwind_method unwind;             /* --unwind */
	__u64 unwind_mem_mb;                   /* --unwind-mem */
	bool folded, annotate, no_children;    /* -f, --annotate, --no-children */
	double percent_limit, call_graph_limit;
	const char *svg_path, *out_path, *title; /* --svg, -o, --title */
	double duration;                       /* DURATION seconds, 0: until Ctrl-C */
	char **command;                        /* after "--", or NULL */
};

enum {
	STACK_OPT_MAX_STACK = 1024, STACK_OPT_MAX_STACKS, STACK_OPT_UNWIND, STACK_OPT_UNWIND_MEM,
	STACK_OPT_ANNOTATE, STACK_OPT_SVG, STACK_OPT_TITLE, STACK_OPT_NO_CHILDREN,
	STACK_OPT_PERCENT_LIMIT, STACK_OPT_CALL_GRAPH_LIMIT,
};

/* getopt_long entries of the shared options, for a command's table; their short letters are
 * "UKfo:v" (and -h, which each command answers with its own usage). */
#define STACK_LONG_OPTIONS                                                          \
	{ "user-stacks-only", no_argument, NULL, 'U' },                             \
	{ "kernel-stacks-only", no_argument, NULL, 'K' },                           \
	{ "max-stack", required_argument, NULL, STACK_OPT_MAX_STACK },              \
	{ "max-stacks", required_argument, NULL, STACK_OPT_MAX_STACKS },            \
	{ "unwind", required_argument, NULL, STACK_OPT_UNWIND },                    \
	{ "unwind-mem", required_argument, NULL, STACK_OPT_UNWIND_MEM },            \
	{ "folded", no_argument, NULL, 'f' },                                       \
	{ "annotate", no_argument, NULL, STACK_OPT_ANNOTATE },                      \
	{ "svg", required_argument, NULL, STACK_OPT_SVG },                          \
	{ "title", required_argument, NULL, STACK_OPT_TITLE },                      \
	{ "output", required_argument, NULL, 'o' },                                 \
	{ "no-children", no_argument, NULL, STACK_OPT_NO_CHILDREN },                \
	{ "percent-limit", required_argument, NULL, STACK_OPT_PERCENT_LIMIT },      \
	{ "call-graph-limit", required_argument, NULL, STACK_OPT_CALL_GRAPH_LIMIT }, \
	{ "verbose", no_argument, NULL, 'v' }

/* Sets the defaults and splits off "-- COMMAND".  Returns the index of "--" (or argc): where
 * getopt must stop; or -EINVAL (message printed). */
int stack_opts_begin(struct stack_opts *o, int argc, char **argv);
/* Handles one option of the shared set: 1 when it was one (stored), 0 when it is the command's
 * own, -EINVAL when its argument is bad (message printed). */
int stack_opts_parse(struct stack_opts *o, int opt, const char *arg);
/* After getopt: the optional DURATION, nothing else before "--", and -U with -K.
 * 0 or -EINVAL (message printed). */
int stack_opts_end(struct stack_opts *o, int dashdash, char **argv);

/* ring_buffer__new() callback for struct proc_seen_event; ctx is the struct syms_cache. */
int stack_proc_event(void *ctx, void *data, size_t size);

/* -p / -t targets: true once every listed process and thread has exited (never without any). */
bool stack_targets_gone(const __u32 *pids, int nr_pids, const __u32 *tids, int nr_tids);

struct syms_cache;
/* Polls rb until DURATION seconds after start (0: no limit), the child exits (child may be
 * NULL), every -p/-t target has exited, or SIGINT/SIGTERM; meanwhile, and once more at the end,
 * takes the second snapshot of newly seen processes (syms_cache__revisit). */
void stack_run_loop(struct ring_buffer *rb, struct syms_cache *sc, struct child *child,
		    __u64 start, double duration, const __u32 *pids, int nr_pids,
		    const __u32 *tids, int nr_tids);

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
