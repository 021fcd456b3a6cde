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
#include "out/outfile.h"

#define NSEC_PER_SEC 1000000000ULL
#define TARGET_COLS 100
#define MIN_INTERVAL_S 0.01
/* Columns for the time between computing the config and attaching (loading takes a while). */
#define SLACK_S 2.0

bool heatmap_run_enabled(const struct heatmap_run *hr)
{
	return hr->svg_path || hr->tsv_path;
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

static int open_one(const char *path, struct outfile *of)
{
	int err;

	if (!path || of->f)
		return 0;
	if (!outfile_open(path, of)) {
		err = -errno;
		p_err("cannot write %s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

int heatmap_run_open(struct heatmap_run *hr)
{
	int err = open_one(hr->svg_path, &hr->svg);

	err = err ?: open_one(hr->tsv_path, &hr->tsv);
	if (err)
		heatmap_run_abort(hr);
	return err;
}

void heatmap_run_abort(struct heatmap_run *hr)
{
	outfile_abort(&hr->svg);
	outfile_abort(&hr->tsv);
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

static int write_one(const char *path, struct outfile *of, const struct heatmap_data *d, bool svg,
		     const char *title, const char *subtitle)
{
	struct heatmap_svg_opts o = { .title = title, .subtitle = subtitle,
				      .scale = HEATMAP_SCALE_SQRT };
	int err = open_one(path, of);

	if (err)
		return err;
	err = svg ? heatmap_write_svg(of->f, d, &o) : heatmap_write_tsv(of->f, d);
	err = err ?: outfile_commit(of);
	if (err) {
		outfile_abort(of);
		p_err("cannot write %s: %s", path, strerror(-err));
	}
	return err;
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
	if (hr->svg_path)
		err = write_one(hr->svg_path, &hr->svg, &d, true, title, subtitle);
	if (!err && hr->tsv_path)
		err = write_one(hr->tsv_path, &hr->tsv, &d, false, title, subtitle);
	if (err)
		heatmap_run_abort(hr);
	munmap(mem, len);
	return err;
}
