/* Histogram and heatmap bucket layouts shared by the BPF programs (which fill the slots) and user
 * space (which prints them): both sides must agree on what a slot index means.
 *
 * Three layouts:
 *   log2     slot = floor(log2(v)), with 0 and 1 both in slot 0: BCC's convention, so slot i
 *            holds [2^i, 2^(i+1) - 1] and slot 0 holds [0, 1].
 *   log-lin  2^sub_shift sub-buckets per power of two; values below 2^sub_shift get exact slots
 *            (like HdrHistogram and bpftrace's hist(n, k)).  Relative error <= 1/2^sub_shift.
 *   linear   slot = v / step, the last slot holding everything above.
 *
 * BPF side: include "vmlinux.h" (and <bpf/bpf_helpers.h>) first.  Everything here is a bounded,
 * loop-free static inline so the verifier sees each call as straight-line code.  Slot functions
 * return __u64 and callers keep slots in __u64 variables: clang 14 (without -mcpu=v3) compares a
 * zero-extended copy of a __u32, and the verifier then never learns the clamped bound. */
#ifndef BPFPROF_HISTOGRAM_H
#define BPFPROF_HISTOGRAM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#ifndef __bpf__
#include <errno.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* ---- log2 ---------------------------------------------------------------------------------- */

/* Enough slots for any 64-bit value: slot 63 holds [2^63, 2^64 - 1]. */
#define HIST_LOG2_SLOTS 64

/* floor(log2(v)) with log2(0) = 0; branch-free halving, as in libbpf-tools' bits.bpf.h, so it
 * costs the same few instructions whatever v is. */
static __always_inline __u64 hist_log2(__u64 v)
{
	__u64 r, shift;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= v >> 1;
	return r;
}

/* Log2 slot of v, always < HIST_LOG2_SLOTS.  Callers with a smaller array clamp to their own size
 * (the last slot then holds everything above, and user space prints it as open-ended). */
static __always_inline __u64 hist_log2_slot(__u64 v)
{
	__u64 slot = hist_log2(v);

	/* Never true, but the verifier cannot prove it: keeps the index visibly bounded. */
	if (slot >= HIST_LOG2_SLOTS)
		slot = HIST_LOG2_SLOTS - 1;
	return slot;
}

/* ---- log-linear ---------------------------------------------------------------------------- */

/* Sub-buckets per power of two are 2^sub_shift; sub_shift is a load-time setting. */
#define HIST_LOGLIN_SHIFT_MAX 5
#define HIST_LOGLIN_SHIFT_DEFAULT 3

/* Slots needed to cover every 64-bit value: 2^s exact slots for [0, 2^s), then 2^s slots for each
 * power of two from 2^s to 2^63. */
#define HIST_LOGLIN_SLOTS(sub_shift) ((65U - (sub_shift)) << (sub_shift))
#define HIST_LOGLIN_MAX_SLOTS HIST_LOGLIN_SLOTS(HIST_LOGLIN_SHIFT_MAX)

/* Log-linear slot of v, < HIST_LOGLIN_SLOTS(sub_shift); sub_shift above HIST_LOGLIN_SHIFT_MAX is
 * treated as HIST_LOGLIN_SHIFT_MAX.  With e = floor(log2(v)) >= s, the slot is
 * (e - s + 1) * 2^s plus the s bits after v's leading one.  Callers indexing an array smaller
 * than HIST_LOGLIN_SLOTS(sub_shift) clamp to their own size. */
static __always_inline __u64 hist_loglin_slot(__u64 v, __u32 sub_shift)
{
	__u64 e, sub;

	if (sub_shift > HIST_LOGLIN_SHIFT_MAX)
		sub_shift = HIST_LOGLIN_SHIFT_MAX;
	if (v < (1ULL << sub_shift))
		return v;
	e = hist_log2(v);
	sub = (v >> (e - sub_shift)) & ((1ULL << sub_shift) - 1);
	return ((e - sub_shift + 1) << sub_shift) + sub;
}

#ifndef __bpf__
/* Inclusive value range [*lo, *hi] of a log-linear slot.  Returns 0, or -ERANGE when slot or
 * sub_shift is out of range. */
static inline int hist_loglin_bounds(__u32 slot, __u32 sub_shift, __u64 *lo, __u64 *hi)
{
	__u32 group, sub;

	if (sub_shift > HIST_LOGLIN_SHIFT_MAX || slot >= HIST_LOGLIN_SLOTS(sub_shift))
		return -ERANGE;
	if (slot < (1U << sub_shift)) {
		*lo = *hi = slot;
		return 0;
	}
	/* group g holds values whose leading one is at bit g + s, in buckets 2^g wide */
	group = (slot >> sub_shift) - 1;
	sub = slot & ((1U << sub_shift) - 1);
	*lo = ((1ULL << sub_shift) + sub) << group;
	*hi = *lo + ((1ULL << group) - 1);
	return 0;
}
#endif

/* ---- the kernel's latency histograms -------------------------------------------------------- */

/* Every latency histogram (funclat, runqlat, biolat) is kept in the kernel in nanoseconds,
 * log-linear with 16 sub-buckets per power of two, whatever unit and rows it is printed in: a
 * slot is at most 1/16 (6.25%) as wide as the values it holds.  Latencies of 2^44 ns (4.9 hours)
 * and more share the last slot, 656 slots in all (5.2 KiB of counts). */
#define HIST_NS_SUB_SHIFT 4
#define HIST_NS_MAX_LOG2 43
#define HIST_NS_SLOTS ((HIST_NS_MAX_LOG2 - HIST_NS_SUB_SHIFT + 2) << HIST_NS_SUB_SHIFT)

/* Slot of a latency of ns nanoseconds, < HIST_NS_SLOTS. */
static __always_inline __u64 hist_ns_slot(__u64 ns)
{
	__u64 slot = hist_loglin_slot(ns, HIST_NS_SUB_SHIFT);

	if (slot >= HIST_NS_SLOTS)
		slot = HIST_NS_SLOTS - 1;
	return slot;
}

/* ---- linear -------------------------------------------------------------------------------- */

/* v / step, clamped to nr_slots - 1 so the last slot holds everything above; step 0 counts as 1. */
static __always_inline __u64 hist_linear_slot(__u64 v, __u64 step, __u32 nr_slots)
{
	__u64 slot;

	if (!nr_slots)
		return 0;
	slot = step ? v / step : v;
	if (slot >= nr_slots)
		slot = nr_slots - 1;
	return slot;
}

/* ---- heatmap ------------------------------------------------------------------------------- */

/* Time columns: an hour at 1 s, or 40 s at 10 ms. */
#define HEATMAP_MAX_COLS 4096
/* Latency rows are log-linear slots; at sub_shift 2 (4 rows per power of two) 128 rows reach
 * 2^33 units (8.6 s in ns, 2.4 h in us) before the top row starts collecting everything above. */
#define HEATMAP_ROWS 128
#define HEATMAP_SUB_SHIFT_DEFAULT 2
/* Cells of the BPF array map (4 MiB of __u64): one shared array updated with
 * __sync_fetch_and_add, since a per-CPU copy of this size per CPU would be too big. */
#define HEATMAP_CELLS (HEATMAP_MAX_COLS * HEATMAP_ROWS)

/* Fixed at load time, typically `const volatile struct heatmap_cfg targ_heatmap`. */
struct heatmap_cfg {
	__u64 start_ns;    /* bpf_ktime_get_ns() time of column 0 */
	__u64 interval_ns; /* column width */
	__u32 cols;        /* <= HEATMAP_MAX_COLS */
	__u32 rows;        /* <= HEATMAP_ROWS */
	__u32 sub_shift;   /* row layout: hist_loglin_slot(v, sub_shift) */
	__u32 __pad;
};

/* Column of time now_ns: events before start go to column 0 and events after the last column
 * into the last one, so the loader sizes cols to cover the whole run.  The pointer is volatile
 * because the config lives in .rodata as a const volatile global. */
static __always_inline __u64 heatmap_col(const volatile struct heatmap_cfg *cfg, __u64 now_ns)
{
	__u64 start = cfg->start_ns, interval = cfg->interval_ns, cols = cfg->cols, col;

	if (now_ns <= start || !interval)
		return 0;
	col = (now_ns - start) / interval;
	if (cols > HEATMAP_MAX_COLS)
		cols = HEATMAP_MAX_COLS;
	if (col >= cols)
		col = cols ? cols - 1 : 0;
	return col;
}

/* Row of value v: its log-linear slot, the top row (cfg->rows - 1) holding everything above. */
static __always_inline __u64 heatmap_row(const volatile struct heatmap_cfg *cfg, __u64 v)
{
	__u64 row = hist_loglin_slot(v, cfg->sub_shift), rows = cfg->rows;

	if (rows > HEATMAP_ROWS)
		rows = HEATMAP_ROWS;
	if (row >= rows)
		row = rows ? rows - 1 : 0;
	return row;
}

/* Index of a cell in the map (its __u32 key): column-major with a fixed stride of HEATMAP_ROWS,
 * clamped so the verifier sees an index below HEATMAP_CELLS. */
static __always_inline __u64 heatmap_index(__u64 col, __u64 row)
{
	if (col >= HEATMAP_MAX_COLS)
		col = HEATMAP_MAX_COLS - 1;
	if (row >= HEATMAP_ROWS)
		row = HEATMAP_ROWS - 1;
	return col * HEATMAP_ROWS + row;
}

#endif
