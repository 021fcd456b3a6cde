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
	__u32 nr;        /* HIST_LINEAR: slots (the last open); others: their full layout */
};

/* Slots of a layout's full array: 64 for log2, HIST_LOGLIN_SLOTS(sub_shift), l->nr for linear. */
int hist_layout_slots(const struct hist_layout *l);

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

#define HIST_NR_PCT 4
/* The quantiles of struct hist_summary: 0.5, 0.9, 0.99, 0.999. */
extern const double hist_pct_q[HIST_NR_PCT];

struct hist_summary {
	__u64 count;
	__u64 sum;                  /* exact, recorded by the BPF side */
	double avg;                 /* sum / count: exact, not estimated */
	double pct[HIST_NR_PCT];    /* p50, p90, p99, p99.9: hist_ns_percentile() */
	bool pct_open[HIST_NR_PCT]; /* landed in an open last slot: pct is that slot's lower bound */
};

/* ---- nanosecond histograms, as the kernel keeps them (include/histogram.h: HIST_NS_*) ----
 *
 * What the slots stand for: each slot's values spread evenly over one part of the slot, the same
 * part for every slot, chosen so that the mean is the exact average the kernel summed (the lower
 * part when the values sit low in their slots, the upper one when they sit high).  The printed
 * rows and every percentile come from this one distribution, so they agree with each other and
 * with the average: values all in one slot give p50 = average, and every percentile lies in the
 * slot that holds it, within 6.25% of the true value. */

/* The q-quantile (0 < q <= 1) in ns; *open when it lands in the last, open slot (its lower bound
 * is returned).  0, or -ENODATA for an empty histogram, -EINVAL for bad arguments. */
int hist_ns_percentile(const __u64 *slots, int nr, __u64 sum_ns, double q, double *ns, bool *open);

/* Counts for display rows: the histogram in rows of layout l counted in units of unit_ns (BCC's
 * log2 rows of usecs, log-linear or linear rows), out[] holding hist_layout_slots(l) rows.  A
 * slot whose part crosses a row boundary is shared in proportion, and the shares are rounded so
 * that the rows add up to the count exactly.  0 or -EINVAL / -ENOMEM. */
int hist_ns_rows(const __u64 *slots, int nr, __u64 sum_ns, const struct hist_layout *l,
		 __u64 unit_ns, __u64 *out);

/* Count, exact average and percentiles in units of unit_ns. */
int hist_ns_summary(const __u64 *slots, int nr, __u64 sum_ns, __u64 unit_ns,
		    struct hist_summary *s);

/* The rows (hist_print()) and the summary line (hist_print_summary()) of a histogram:
 * what funclat, runqlat and biolat print.  unit names unit_ns ("usecs"). */
int hist_ns_print(FILE *f, const __u64 *slots, int nr, __u64 sum_ns, const struct hist_layout *l,
		  __u64 unit_ns, const char *unit);

/* One line: "count 1234  avg 153.2 usecs  p50 128  p90 412  p99 980  p99.9 1900 usecs (p within
 * 6.25%)".  Averages and percentiles of an empty histogram print as "-"; a percentile in an
 * open last slot prints as ">=LO".  Returns 0 or -errno. */
int hist_print_summary(FILE *f, const struct hist_summary *s, const char *unit);
#endif
