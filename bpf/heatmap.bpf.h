/* In-kernel latency heat map: one count per (time column, latency row) cell, laid out as in
 * include/histogram.h.  Include after vmlinux.h and bpf_helpers.h; the loader sizes the map and
 * fills targ_heatmap_cfg (user/core/heatmaprun.h). */
#ifndef BPFPROF_HEATMAP_BPF_H
#define BPFPROF_HEATMAP_BPF_H
#include "histogram.h"

const volatile bool targ_heatmap = false;
const volatile struct heatmap_cfg targ_heatmap_cfg = {};
/* Time of column 0 when the loader sets it just before attaching (heatmap_run_start()), so that
 * the columns are the run's; 0 means targ_heatmap_cfg.start_ns. */
__u64 heatmap_start_ns;
/* Values that came after the last column: counted here, not piled into the last column. */
__u64 heatmap_late;

/* Shared by all CPUs (a per-CPU copy of 4 MiB each would be too big), hence the atomic add;
 * mmapable so that user space reads it without a syscall per cell.  The loader shrinks it to one
 * cell when no heat map was asked for. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HEATMAP_CELLS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} heat SEC(".maps");

/* Counts value v (in the heat map's unit) at time now_ns. */
static __always_inline void heatmap_add(__u64 now_ns, __u64 v)
{
	__u64 start = heatmap_start_ns, interval = targ_heatmap_cfg.interval_ns, col, *cell;
	__u32 idx;

	if (!targ_heatmap || !interval)
		return;
	if (!start)
		start = targ_heatmap_cfg.start_ns;
	col = now_ns > start ? (now_ns - start) / interval : 0;
	if (col >= targ_heatmap_cfg.cols) {
		__sync_fetch_and_add(&heatmap_late, 1);
		return;
	}
	idx = heatmap_index(col, heatmap_row(&targ_heatmap_cfg, v));
	cell = bpf_map_lookup_elem(&heat, &idx);
	if (cell)
		__sync_fetch_and_add(cell, 1);
}
#endif
