/* bpfprof top's table: the hottest functions, refreshed.  Each period's symbolized samples are
 * folded into entries (process, command, function) with Self and Children counts, which decay
 * (perf top's 7/8 a refresh), accumulate, or start over each refresh; rows are those entries
 * grouped by the --sort keys, optionally zoomed into one process or command, and laid out for a
 * screen or for plain text.  Pure data: no BPF, no terminal, unit-tested. */
#ifndef BPFPROF_TOPTABLE_H
#define BPFPROF_TOPTABLE_H
#include <stdbool.h>
#include <stddef.h>
#include "out/stack.h"

enum top_key { TOP_KEY_COMM, TOP_KEY_PID, TOP_KEY_DSO, TOP_KEY_SYM, TOP_NR_KEYS };

/* --sort: the row keys, in column order. */
struct top_sort {
	enum top_key keys[TOP_NR_KEYS];
	int nr;
};

/* Parses perf's comma list ("dso,sym", "comm,dso,sym", "pid").  0, or -EINVAL for an unknown or
 * repeated key or an empty list (nothing printed: the caller names the option). */
int top_sort_parse(const char *arg, struct top_sort *out);
bool top_sort_has(const struct top_sort *s, enum top_key k);

/* What happens to the counts at each refresh. */
enum top_mode {
	TOP_DECAY,       /* perf top's default: older periods weigh 7/8 less every refresh */
	TOP_ACCUMULATE,  /* everything since the start (or the last reset) */
	TOP_PER_REFRESH, /* only the last period (perf top -z) */
	TOP_NR_MODES,
};
const char *top_mode_name(enum top_mode m);

struct top_table;

struct top_table *top_table__new(const struct top_sort *sort);
void top_table__free(struct top_table *t);

/* What a period brought. */
struct top_period_stats {
	__u64 samples;        /* sum of the samples' values */
	__u64 kernel_samples; /* of those, taken in the kernel (innermost frame a kernel one) */
};

/* Starts a refresh as mode says (decays, clears or keeps the counts), then folds in the
 * period's samples: Self to each sample's innermost frame, Children once to every distinct
 * function of its stack.  0 or -ENOMEM (what was folded stays). */
int top_table__refresh(struct top_table *t, enum top_mode mode, const struct stack_sample *s,
		       size_t n, struct top_period_stats *stats);
/* Forgets every count (the 'z' key). */
void top_table__clear(struct top_table *t);
/* Entries held, for tests and -v. */
size_t top_table__entries(const struct top_table *t);

/* Which process the rows show: pid and comm 0 / NULL for all. */
struct top_zoom {
	__u32 pid;
	char comm[16];
};

struct top_row {
	const char *comm;       /* NULL unless comm or pid is a sort key */
	__u32 pid;              /* 0 unless pid is a sort key */
	const char *dso;        /* the frame's file, short; NULL unless dso or sym is a key */
	const char *sym;        /* NULL unless sym is a key */
	bool kernel;
	double self, children;  /* samples, decayed */
	__u32 main_pid;         /* the process with most of the row's count: what 'P' zooms into */
	const char *main_comm;
};

/* The rows, grouped by the sort keys, zoomed, sorted by Children (children) or Self, largest
 * first; rows whose sorted-by count is below percent_limit of the total are left out.  *total:
 * the zoomed samples (the 100%).  *rows is malloc'd (NULL with *nr 0 when empty); its strings are
 * the table's, valid until the next refresh.  0 or -ENOMEM. */
int top_table__rows(struct top_table *t, const struct top_zoom *zoom, bool children,
		    double percent_limit, struct top_row **rows, size_t *nr, double *total);
/* The same with only the first `first` rows in order (all where 0), the others after them in
 * no order: for a view that shows no more than those. */
int top_table__rows_first(struct top_table *t, const struct top_zoom *zoom, bool children,
			  double percent_limit, size_t first, struct top_row **rows, size_t *nr,
			  double *total);
/* The same rows in the table's own room, not copied: valid until the next call that makes rows
 * (a live view's thousands of rows, malloc'd and copied at each refresh, were mapped afresh and
 * faulted in each time).  *rows NULL with *nr 0 when empty. */
int top_table__rows_view(struct top_table *t, const struct top_zoom *zoom, bool children,
			 double percent_limit, size_t first, const struct top_row **rows, size_t *nr,
			 double *total);

/* ---- layout ---- */

struct top_layout {
	const struct top_sort *sort;
	bool children;     /* Children and Self columns, else Overhead */
	int width;         /* characters a line; 0 for no limit */
	int max_rows;      /* rows shown at most; 0 for every one */
	int first;         /* index of the first row shown (scrolled) */
	int selected;      /* row index shown in reverse video; -1 for none */
	bool narrow;       /* a screen: Command and Shared Object columns cut so symbols show */
};

/* The column header and the rows, one "\n"-ended line each, cut to l->width. 0 or -ENOMEM. */
int top_render_rows(struct stack_buf *b, const struct top_row *rows, size_t nr, double total,
		    const struct top_layout *l);

/* The header line perf top prints above its table. */
struct top_status {
	const char *event;     /* "cpu-clock", "sched:sched_switch" */
	__u64 freq;            /* Hz; 0 for events where every hit is a sample */
	double seconds;        /* the period's length */
	struct top_period_stats period;
	__u64 lost, lost_total; /* samples lost in the period, and since the start */
	const char *target;    /* "all CPUs", "pid 42" */
	enum top_mode mode;
	bool paused;
	const struct top_zoom *zoom; /* NULL or all zero: none */
	bool own_cpu;          /* -v: the next two are shown */
	double cpu_ms, cpu_ms_per_s; /* bpfprof's own CPU time in the period, and per second */
};

/* The status lines and a rule under them, cut to width (0: no limit). 0 or -ENOMEM. */
int top_render_status(struct stack_buf *b, const struct top_status *s, int width);
#endif
