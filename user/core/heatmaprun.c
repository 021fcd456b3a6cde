// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "core/common.h"
#include "out/heatmap.h"
#include "core/heatmaprun.h"
#include "core/runner.h"

#define NSEC_PER_SEC 1000000000ULL
#define TARGET_COLS 100
#define MIN_INTERVAL_S 0.01
/* Columns for the time between computing the config and attaching (loading takes a while). */
#define SLACK_S 2.0

struct heatmap_run heatmap_opts;

const struct opt heatmap_opts_table[] = {
	{ 0, "heatmap", "FILE.svg", "also write a latency heat map (time x latency, colour by\n"
	  "count)", OPT_OUTPUT, &heatmap_opts.svg, .needs = CAP_HEATMAP },
	{ 0, "heatmap-data", "FILE", "also write the heat map's counts as TSV (header: row lower\n"
	  "bounds)", OPT_OUTPUT, &heatmap_opts.tsv, .needs = CAP_HEATMAP },
	{ 0, "heatmap-interval", "S", "heat map column width in seconds, at least 0.01 (default:\n"
	  "about 100 columns over the run's length, else 1)", OPT_SECONDS,
	  &heatmap_opts.interval_s, .what = "--heatmap-interval",
	  .hint = "seconds, at least 0.01", .needs = CAP_HEATMAP },
	{},
};

void heatmap_opts_reset(struct heatmap_run *hr)
{
	memset(hr, 0, sizeof(*hr));
}

bool heatmap_run_enabled(const struct heatmap_run *hr)
{
	return hr->svg.path || hr->tsv.path;
}

int heatmap_opts_check(struct heatmap_run *hr)
{
	double run_s = runner_planned_seconds(), interval_s, cols;

	if (hr->interval_s && !heatmap_run_enabled(hr)) {
		p_err("--heatmap-interval needs --heatmap or --heatmap-data");
		return -EINVAL;
	}
	if (hr->interval_s && hr->interval_s < MIN_INTERVAL_S - 1e-12) {
		p_err("invalid --heatmap-interval '%g' (seconds, at least 0.01)", hr->interval_s);
		return -EINVAL;
	}
	if (!heatmap_run_enabled(hr) || !run_s)
		return 0;
	/* the columns must cover a run of known length: say so now rather than cut it */
	interval_s = hr->interval_s ?: heatmap_run_default_interval(run_s);
	cols = ceil(run_s / interval_s - 1e-9);
	if (cols > HEATMAP_MAX_COLS) {
		p_err("a %.2f s run needs %.0f heat map columns of %g s, more than the %d a heat "
		      "map has: use --heatmap-interval %.2f or more", run_s, cols, interval_s,
		      HEATMAP_MAX_COLS, ceil(run_s * 100 / HEATMAP_MAX_COLS) / 100);
		return -EINVAL;
	}
	return 0;
}

__u64 heatmap_run_full_at(const struct heatmap_run *hr)
{
	if (!heatmap_run_enabled(hr) || runner_planned_seconds() || !hr->cfg.interval_ns)
		return 0;
	return hr->cfg.start_ns + hr->cfg.cols * hr->cfg.interval_ns;
}

double heatmap_run_default_interval(double duration_s)
{
	double raw, mag, norm;

	if (duration_s <= 0)
		return 1.0;
	raw = duration_s / TARGET_COLS;
	if (raw <= MIN_INTERVAL_S)
		return MIN_INTERVAL_S;
	mag = pow(10, floor(log10(raw)));
	norm = raw / mag;
	return (norm < 2 ? 1 : norm < 5 ? 2 : 5) * mag;
}

int heatmap_run_configure(struct heatmap_run *hr, struct bpf_map *heat, volatile bool *targ_on,
			  volatile struct heatmap_cfg *targ_cfg, double duration_s)
{
	double cols;
	int err;

	memset(&hr->cfg, 0, sizeof(hr->cfg));
	*targ_on = heatmap_run_enabled(hr);
	if (!*targ_on)
		return bpf_map__set_max_entries(heat, 1);
	if (hr->interval_s <= 0)
		hr->interval_s = heatmap_run_default_interval(duration_s);
	hr->cfg.interval_ns = (__u64)llround(hr->interval_s * 1e9);
	if (!hr->cfg.interval_ns)
		hr->cfg.interval_ns = 1;
	cols = duration_s > 0 ? ceil((duration_s + SLACK_S) / hr->interval_s) : HEATMAP_MAX_COLS;
	hr->cfg.cols = cols > HEATMAP_MAX_COLS ? HEATMAP_MAX_COLS : (__u32)cols;
	hr->cfg.rows = HEATMAP_ROWS;
	hr->cfg.sub_shift = HEATMAP_SUB_SHIFT_DEFAULT;
	hr->cfg.start_ns = now_ns();
	/* heatmap_index() strides columns by HEATMAP_ROWS: only the columns in use need cells */
	err = bpf_map__set_max_entries(heat, hr->cfg.cols * HEATMAP_ROWS);
	if (err)
		return err;
	targ_cfg->start_ns = hr->cfg.start_ns;
	targ_cfg->interval_ns = hr->cfg.interval_ns;
	targ_cfg->cols = hr->cfg.cols;
	targ_cfg->rows = hr->cfg.rows;
	targ_cfg->sub_shift = hr->cfg.sub_shift;
	return 0;
}

void heatmap_run_start(struct heatmap_run *hr, volatile __u64 *start_ns)
{
	hr->cfg.start_ns = now_ns();
	*start_ns = hr->cfg.start_ns;
	hr->started = true;
}

__u32 heatmap_run_cols(const struct heatmap_cfg *cfg, const __u64 *cells, __u64 end_ns)
{
	__u64 run = end_ns > cfg->start_ns ? end_ns - cfg->start_ns : 0;
	__u64 cols = (run + cfg->interval_ns - 1) / cfg->interval_ns;
	__u32 c, r;

	if (!cols)
		cols = 1;
	if (cols > cfg->cols)
		cols = cfg->cols;
	for (c = cfg->cols; c > cols; c--)
		for (r = 0; r < HEATMAP_ROWS; r++)
			if (cells[(size_t)(c - 1) * HEATMAP_ROWS + r])
				return c;
	return cols;
}

/* Into the file the runner opened (and commits); one that fails costs only itself. */
static void write_one(struct output *out, const struct heatmap_data *d, bool svg,
		      const char *title, const char *subtitle)
{
	struct heatmap_svg_opts o = { .title = title, .subtitle = subtitle,
				      .scale = HEATMAP_SCALE_SQRT };
	int err;

	if (!out->of.f)
		return;
	err = svg ? heatmap_write_svg(out->of.f, d, &o) : heatmap_write_tsv(out->of.f, d);
	if (err)
		runner_output_failed(out, err);
}

int heatmap_run_write(struct heatmap_run *hr, struct bpf_map *heat, __u64 end_ns,
		      const char *unit, const char *title)
{
	size_t len = (size_t)bpf_map__max_entries(heat) * sizeof(__u64), page = getpagesize();
	struct heatmap_data d = {};
	char subtitle[160];
	__u64 total = 0;
	void *mem;
	int err = 0;

	if (!heatmap_run_enabled(hr))
		return 0;
	len = (len + page - 1) / page * page;
	mem = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(heat), 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		p_err("cannot read the heat map: %s", strerror(-err));
		return err;
	}
	d.counts = mem;
	d.cols = heatmap_run_cols(&hr->cfg, mem, end_ns);
	d.rows = hr->cfg.rows;
	d.row_stride = HEATMAP_ROWS;
	d.sub_shift = hr->cfg.sub_shift;
	d.interval_ns = hr->cfg.interval_ns;
	d.unit = unit;
	for (size_t i = 0; i < (size_t)d.cols * HEATMAP_ROWS; i++)
		total += d.counts[i];
	p_info("heat map: %u columns of %g s, %zu bytes read from the kernel", d.cols,
	       hr->cfg.interval_ns / 1e9, (size_t)d.cols * HEATMAP_ROWS * sizeof(__u64));
	snprintf(subtitle, sizeof(subtitle), "%llu in %u columns of %g s, time from the start of %s",
		 (unsigned long long)total, d.cols, hr->cfg.interval_ns / 1e9,
		 hr->started ? "tracing" : "bpfprof");
	write_one(&hr->svg, &d, true, title, subtitle);
	write_one(&hr->tsv, &d, false, title, subtitle);
	munmap(mem, len);
	return 0;
}
