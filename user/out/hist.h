/* Latency histograms as text: BCC-style star charts and a one-line summary with percentiles.
 * Input is a plain array of slot counts, laid out as in include/histogram.h; nothing here touches
 * BPF, so subcommands read their maps into arrays and hand them over. */
#ifndef BPFPROF_HIST_H
#define BPFPROF_HIST_H
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "histogram.h"

enum hist_kind {
	HIST_LOG2,   /* hist_log2_slot() */
	HIST_LOGLIN, /* hist_loglin_slot(v, sub_shift) */
	HIST_LINEAR, /* hist_linear_slot(v, step, nr) */
};

struct hist_layout {
	enum hist_kind kind;
	__u32 sub_shift; /* HIST_LOGLIN: 2^sub_shift slots per power of two */
	__u64 step;      /* HIST_LINEAR: slot width; 0 counts as 1 */
};

/* Inclusive value range [*lo, *hi] of a slot of an nr-slot array.  *open is set when the slot is
 * the last one and also holds every larger value: always for linear (hist_linear_slot clamps),
 * and for log2/log-linear arrays shorter than the full layout (the BPF side clamps into the last
 * slot).  *hi is then the slot's nominal bound.  Returns 0, or -EINVAL/-ERANGE for a bad layout,
 * slot or nr (more slots than the layout has). */
int hist_slot_bounds(const struct hist_layout *l, int slot, int nr, __u64 *lo, __u64 *hi,
		     bool *open);

/* Prints the histogram as BCC's print_log2_hist does: a header naming the unit, then one
 * "lo -> hi : count |stars|" line per slot from the first to the last non-empty one, a 40-star
 * bar scaled to the largest count (20 when bounds need 20 digits), every line under 80 columns
 * (the bar shrinks if counts need more than 9 digits).  An open last slot prints as "lo -> inf".
 * Prints nothing for an empty histogram, like BCC.  Returns 0 or -errno (write error included). */
int hist_print(FILE *f, const __u64 *slots, int nr, const struct hist_layout *l, const char *unit);

/* hist_print() for log2 slots: "         0 -> 1          : 3        |****    |". */
int hist_print_log2(FILE *f, const __u64 *slots, int nr, const char *unit);

/* hist_print() for log-linear slots: "      1024 -> 1279       : ...". */
int hist_print_loglin(FILE *f, const __u64 *slots, int nr, __u32 sub_shift, const char *unit);

/* hist_print() for linear slots of width step: "       100 -> 199        : ...". */
int hist_print_linear(FILE *f, const __u64 *slots, int nr, __u64 step, const char *unit);

#define HIST_NR_PCT 4
/* The quantiles of struct hist_summary: 0.5, 0.9, 0.99, 0.999. */
extern const double hist_pct_q[HIST_NR_PCT];

struct hist_summary {
	__u64 count;
	__u64 sum;                  /* exact, recorded by the BPF side */
	double avg;                 /* sum / count: exact, not estimated */
	double pct[HIST_NR_PCT];    /* p50, p90, p99, p99.9, estimated from buckets */
	bool pct_open[HIST_NR_PCT]; /* landed in an open last slot: pct is that slot's lower bound */
};

/* Estimates the q-quantile (0 <= q <= 1) from bucket counts.  With rank = q * count, it finds the
 * first slot whose cumulative count reaches rank and interpolates linearly inside that slot's
 * inclusive range [lo, hi], as if its values were spread evenly:
 *   value = lo + (hi - lo) * (rank - count below the slot) / slot count
 * so a one-value slot gives that value exactly and the error is at most the slot width.  In an
 * open last slot the answer is its lower bound and *open (if not NULL) is set.  Returns 0,
 * -ENODATA for an empty histogram, or -EINVAL/-ERANGE for bad arguments. */
int hist_percentile(const __u64 *slots, int nr, const struct hist_layout *l, double q,
		    double *value, bool *open);

/* Fills *s: count, the exact average from sum, and the HIST_NR_PCT percentiles (see
 * hist_percentile()).  An empty histogram is not an error: count is 0 and the rest is 0.
 * Returns 0 or -EINVAL/-ERANGE for a bad layout or nr. */
int hist_summary(const __u64 *slots, int nr, const struct hist_layout *l, __u64 sum,
		 struct hist_summary *s);

/* Folds nr_in log-linear slots (2^sub_shift per power of two) into log2 slots, the coarser
 * layout printed BCC-style: log-linear slots nest inside log2 ones, so the fold is exact.  The
 * log2 slot of a log-linear slot is that of its lower bound; slots landing at or beyond nr_out go
 * into the last one, which is then open like the last input slot.  out[] is zeroed first.
 * Returns the number of log2 slots the input spans (at most nr_out), or -EINVAL / -ERANGE. */
int hist_loglin_to_log2(const __u64 *in, int nr_in, __u32 sub_shift, __u64 *out, int nr_out);

/* One line: "count 1234  avg 153.2 usecs  p50 128  p90 412  p99 980  p99.9 1900 usecs (estimated
 * from buckets)".  Averages and percentiles of an empty histogram print as "-"; a percentile in an
 * open last slot prints as ">=LO".  Returns 0 or -errno. */
int hist_print_summary(FILE *f, const struct hist_summary *s, const char *unit);
#endif
