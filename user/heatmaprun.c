// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "common.h"
#include "heatmap.h"
#include "heatmaprun.h"
#include "outfile.h"

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

static int write_one(const char *path, const struct heatmap_data *d, bool svg, const char *title,
		     const char *subtitle)
{
	struct heatmap_svg_opts o = { .title = title, .subtitle = subtitle,
				      .scale = HEATMAP_SCALE_SQRT };
	struct outfile of;
	FILE *f;
	int err;

	f = outfile_open(path, &of);
	if (!f) {
		err = -errno;
		p_err("cannot write %s: %s", path, strerror(errno));
		return err;
	}
	err = svg ? heatmap_write_svg(f, d, &o) : heatmap_write_tsv(f, d);
	err = err ?: outfile_commit(&of);
	if (err) {
		outfile_abort(&of);
		p_err("cannot write %s: %s", path, strerror(-err));
	}
	return err;
}

int heatmap_run_write(const struct heatmap_run *hr, struct bpf_map *heat, __u64 end_ns,
		      const char *unit, const char *title)
{
	size_t len = (size_t)bpf_map__max_entries(heat) * sizeof(__u64), page = getpagesize();
	struct heatmap_data d = {};
	char subtitle[128];
	__u64 used;
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
	/* the columns the run reached, the last one partly */
	used = end_ns > hr->cfg.start_ns ? (end_ns - hr->cfg.start_ns) / hr->cfg.interval_ns + 1 : 1;
	d.counts = mem;
	d.cols = used < hr->cfg.cols ? used : hr->cfg.cols;
	d.rows = hr->cfg.rows;
	d.row_stride = HEATMAP_ROWS;
	d.sub_shift = hr->cfg.sub_shift;
	d.interval_ns = hr->cfg.interval_ns;
	d.unit = unit;
	snprintf(subtitle, sizeof(subtitle), "%g s columns, time from the start of bpfprof",
		 hr->cfg.interval_ns / 1e9);
	if (hr->svg_path)
		err = write_one(hr->svg_path, &d, true, title, subtitle);
	if (!err && hr->tsv_path)
		err = write_one(hr->tsv_path, &d, false, title, subtitle);
	munmap(mem, len);
	return err;
}
