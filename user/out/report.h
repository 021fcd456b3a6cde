/* perf-style report, like `perf report --stdio --children` with its call-graph trees. */
#ifndef BPFPROF_REPORT_H
#define BPFPROF_REPORT_H
#include "out/stack.h"

enum report_unit {
	REPORT_SAMPLES, /* values are sample counts */
	REPORT_TIME_US, /* values are microseconds, shown as ms */
};

struct report_header {
	const char *event;       /* "cpu-clock", "sched_switch (off-CPU)" ... */
	__u64 frequency;         /* Hz, 0 when not sampling at a frequency */
	__u64 period;            /* a sample every period events (perf record -c), or 0 */
	double duration_s;       /* wall time of the run */
	__u64 lost;              /* samples that could not be stored */
	const char *lost_detail; /* e.g. "stack capture failed 3, stack table full 0", or NULL */
	const char *unwind;      /* "fp" / "eh" / NULL */
	const char *excluded;    /* what the run left out, e.g. "the idle task (--include-idle)" */
	const char *extra;       /* one more "# ..." line, or NULL */
	const char *symbols;     /* what symbolization could not use ("JIT maps not read: ..."), or NULL */
	const char *lines;       /* where source lines and inlined frames are missing, or NULL */
	const char *cut;         /* stacks kept at a caller's path at the bound on distinct stacks
				  * ("Stacks cut: ..."), or NULL */
	const char *source;      /* where the samples were read from (bpfprof report's files), or
				  * NULL; the last line, and not a pprof comment (out/pprof.h) */
};

/* What rows are: perf report's --sort keys (the symbol always). */
enum report_sort {
	REPORT_SORT_COMM = 1 << 0,
	REPORT_SORT_DSO = 1 << 1,
	REPORT_SORT_SYM = 1 << 2,
	REPORT_SORT_ALL = REPORT_SORT_COMM | REPORT_SORT_DSO | REPORT_SORT_SYM,
};

struct report_opts {
	bool children;        /* Children+Self columns (default), else Self only (--no-children) */
	double percent_limit; /* hide entries below this percentage */
	enum report_unit unit;
	bool call_graph;      /* print the call-graph tree under each entry (default true) */
	double call_graph_limit; /* hide call-graph branches below this percentage (perf: 0.5) */
	unsigned sort;        /* enum report_sort: the columns rows are told apart by; 0 = all */
	bool srcline;         /* --srcline: a row per source line (" FILE:LINE" after the name);
			       * otherwise inlined functions' rows end with the range of lines
			       * their samples had */
};

/* Writes the "# ..." header then the table of the stacks of a call-path tree (a drained run's
 * aggregation, read where it is: sym/stackagg.h's stack_agg__tree(); samples go through
 * stack_agg_report_write()), those of sample event `event` only unless it is -1; rows are
 * (Command, Shared Object, Symbol) sorted by Children (or Self), each followed by its call graph.
 * Waker frames, when present, appear as a second level under each entry ("woken by COMM").
 * Returns 0 or -errno. */
int report_write_tree(FILE *out, const struct report_header *h, const struct stack_tree *t,
		      int event, const struct report_opts *o);
#endif
