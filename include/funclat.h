/* bpfprof funclat: shared between bpf/funclat.bpf.c and user/cmd/funclat.c. */
#ifndef BPFPROF_FUNCLAT_H
#define BPFPROF_FUNCLAT_H
#include "histogram.h"

/* Functions (every glob match) timed in one run: one histogram each. */
#define FUNCLAT_MAX_FUNCS 1024
/* Entry timestamps kept per thread and function: recursion deeper than this is counted, not
 * timed (power of two: BPF masks the index). */
#define FUNCLAT_MAX_DEPTH 16
/* The call count is the sum of the slots: one atomic add fewer per call.  Slots are the
 * kernel's nanosecond layout (include/histogram.h), whatever unit funclat prints. */
struct funclat_hist {
	__u64 sum_ns;
	__u64 slots[HIST_NS_SLOTS];
};

/* Per thread and function: the entry times of the calls in progress, innermost last. */
struct funclat_start_key {
	__u32 tid;
	__u32 idx;
};
struct funclat_start {
	__u32 depth;
	__u32 pad;
	__u64 ts[FUNCLAT_MAX_DEPTH];
	__u16 row[FUNCLAT_MAX_DEPTH]; /* each call's histogram: the function's, or --by's key's */
};
/* --by: histograms for this many distinct keys (a __u16 row above) */
#define FUNCLAT_MAX_ROWS 4096

enum funclat_lost {
	FUNCLAT_LOST_DEPTH,      /* nested deeper than FUNCLAT_MAX_DEPTH */
	FUNCLAT_LOST_START_FULL, /* the per-thread start table was full */
	FUNCLAT_LOST_REASONS,
};
#endif
