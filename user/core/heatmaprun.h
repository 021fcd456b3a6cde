/* The heat map option group and a latency heat map aggregated in the kernel
 * (bpf/heatmap.bpf.h) over one run: sizing the BPF map and its time columns before load, then
 * reading it and writing the SVG / TSV files (opened by the runner before tracing starts). */
#ifndef BPFPROF_HEATMAPRUN_H
#define BPFPROF_HEATMAPRUN_H
#include <stdbool.h>
#include <bpf/libbpf.h>
#include "core/options.h"
#include "histogram.h"

struct heatmap_run {
	struct output svg;      /* --heatmap FILE.svg */
	struct output tsv;      /* --heatmap-data FILE */
	double interval_s;      /* --heatmap-interval; 0 = chosen from the run's length */
	struct heatmap_cfg cfg; /* what the BPF side was given; start_ns updated by _start() */
	bool started;           /* heatmap_run_start() set column 0 at attach */
};

/* What the heat map options fill; reset by heatmap_opts_reset(). */
extern struct heatmap_run heatmap_opts;
extern const struct opt heatmap_opts_table[];

void heatmap_opts_reset(struct heatmap_run *hr);
/* After parsing: --heatmap-interval without a heat map, and a run of known length that needs
 * more columns than a heat map has.  0 or -EINVAL (printed). */
int heatmap_opts_check(struct heatmap_run *hr);

/* True when a heat map was asked for. */
bool heatmap_run_enabled(const struct heatmap_run *hr);

/* The default column width for a run of duration_s seconds (0 when unknown): about 100 columns,
 * a 1-2-5 multiple of 10 ms, and 1 s for runs of unknown length. */
double heatmap_run_default_interval(double duration_s);

/* Before load: fills hr->cfg (columns from now to duration_s, plus slack for loading; every
 * column HEATMAP_MAX_COLS allows when the length is unknown), copies it to the program's
 * read-only targ_heatmap_cfg / targ_heatmap, and sizes `heat` (one cell when disabled). */
int heatmap_run_configure(struct heatmap_run *hr, struct bpf_map *heat, volatile bool *targ_on,
			  volatile struct heatmap_cfg *targ_cfg, double duration_s);

/* Just before attaching: column 0 starts now rather than at heatmap_run_configure() (before the
 * load), so the columns are the traced run's.  start_ns is the program's heatmap_start_ns
 * (bpf/heatmap.bpf.h), writable after load. */
void heatmap_run_start(struct heatmap_run *hr, volatile __u64 *start_ns);

/* When the heat map's last column ends (CLOCK_MONOTONIC ns): a run of unknown length ends there.
 * 0 without a heat map, or for a run of known length (its columns cover it). */
__u64 heatmap_run_full_at(const struct heatmap_run *hr);

/* Columns to write for a run ending at end_ns: those the run covered (a partly covered last one
 * included, at least one), plus any later column that got values (the BPF side counts until
 * it is detached), at most cfg->cols.  cells is the map's content, HEATMAP_ROWS per column. */
__u32 heatmap_run_cols(const struct heatmap_cfg *cfg, const __u64 *cells, __u64 end_ns);

/* After the run: reads `heat` up to end_ns and writes the requested files; one that cannot be
 * written is given up (runner_output_failed) and the others still written.  unit labels the
 * latency axis ("usecs").  Returns 0, or -errno when the map cannot be read (message printed). */
int heatmap_run_write(struct heatmap_run *hr, struct bpf_map *heat, __u64 end_ns,
		      const char *unit, const char *title);
#endif
