// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "out/heatmap.h"
#include "out/outfile.h"

#define NSEC_PER_SEC 1000000000ULL

/* Layout in pixels: room on the left for latency labels, below for time labels and legend. */
#define SVG_WIDTH_DEFAULT 1200
#define SVG_WIDTH_MIN 600
#define MARGIN_LEFT 100
#define MARGIN_RIGHT 20
#define MARGIN_TOP 60
#define MARGIN_BOTTOM 90
#define PLOT_HEIGHT_TARGET 480.0
#define ROW_HEIGHT_MIN 3.0
#define ROW_HEIGHT_MAX 24.0
#define PLOT_HEIGHT_MIN 120.0 /* a map with few rows still has room for its axis title */
#define LABEL_GAP_MIN 12.0 /* pixels between latency labels, so they never overlap */
#define TICKS_TARGET 10
#define LEGEND_SWATCHES 10
#define FONT "font-family=\"Verdana, sans-serif\""

struct rgb {
	double r, g, b;
};

/* ColorBrewer YlOrRd: light yellow for the rarest cells through orange to dark red. */
static const struct rgb ramp[] = {
	{ 255, 255, 178 }, { 254, 204, 92 }, { 253, 141, 60 }, { 240, 59, 32 }, { 189, 0, 38 },
};
#define RAMP_STOPS (sizeof(ramp) / sizeof(ramp[0]))

static __u32 row_stride(const struct heatmap_data *d)
{
	return d->row_stride ? d->row_stride : d->rows;
}

static __u64 cell(const struct heatmap_data *d, __u32 col, __u32 row)
{
	return d->counts[(size_t)col * row_stride(d) + row];
}

static int check_data(const struct heatmap_data *d)
{
	if (!d || !d->counts || !d->cols || !d->rows || !d->interval_ns)
		return -EINVAL;
	if (d->sub_shift > HIST_LOGLIN_SHIFT_MAX || d->rows > HIST_LOGLIN_SLOTS(d->sub_shift))
		return -EINVAL;
	if (row_stride(d) < d->rows)
		return -EINVAL;
	return 0;
}

static const char *unit_label(const struct heatmap_data *d)
{
	return d->unit ? d->unit : "value";
}

/* Value range of a row; *open when it is the clamped top row that also holds everything above. */
static void row_bounds(const struct heatmap_data *d, __u32 row, __u64 *lo, __u64 *hi, bool *open)
{
	hist_loglin_bounds(row, d->sub_shift, lo, hi);
	*open = row == d->rows - 1 && d->rows < HIST_LOGLIN_SLOTS(d->sub_shift);
}

/* Decimals that print every column start exactly: 9 minus the trailing decimal zeros shared by
 * the interval and the start offset (1 s -> 0, 10 ms -> 2). */
static int time_decimals(const struct heatmap_data *d)
{
	__u64 interval = d->interval_ns, offset = d->start_offset_ns;
	int zeros = 0;

	while (zeros < 9 && interval % 10 == 0 && offset % 10 == 0) {
		interval /= 10;
		offset /= 10;
		zeros++;
	}
	return 9 - zeros;
}

static const char *fmt_time(__u64 ns, int decimals, char *buf, size_t size)
{
	__u64 frac = ns % NSEC_PER_SEC;
	int i;

	if (!decimals) {
		snprintf(buf, size, "%llu", (unsigned long long)(ns / NSEC_PER_SEC));
		return buf;
	}
	for (i = decimals; i < 9; i++)
		frac /= 10;
	snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(ns / NSEC_PER_SEC), decimals,
		 (unsigned long long)frac);
	return buf;
}

static __u64 col_start_ns(const struct heatmap_data *d, __u32 col)
{
	return d->start_offset_ns + (__u64)col * d->interval_ns;
}

int heatmap_write_tsv(FILE *f, const struct heatmap_data *d)
{
	char tbuf[32];
	__u64 lo, hi;
	int err, decimals;
	__u32 c, r;
	bool open;

	err = check_data(d);
	if (err)
		return err;
	decimals = time_decimals(d);
	fputs("time_s", f);
	for (r = 0; r < d->rows; r++) {
		row_bounds(d, r, &lo, &hi, &open);
		fprintf(f, "\t%llu", (unsigned long long)lo);
	}
	fputc('\n', f);
	for (c = 0; c < d->cols; c++) {
		fputs(fmt_time(col_start_ns(d, c), decimals, tbuf, sizeof(tbuf)), f);
		for (r = 0; r < d->rows; r++)
			fprintf(f, "\t%llu", (unsigned long long)cell(d, c, r));
		fputc('\n', f);
	}
	return stream_flush_check(f);
}

/* Text content and attribute values: the title and unit come from the command line. */
static void xml_puts(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			/* control characters other than tab and newline are not allowed in XML 1.0 */
			fputc((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? ' ' : *s, f);
		}
	}
}

/* Position of count on the colour ramp, in (0, 1]. */
static double scale_pos(__u64 count, __u64 max, enum heatmap_scale scale)
{
	double c = (double)count, m = (double)max;

	switch (scale) {
	case HEATMAP_SCALE_SQRT:
		return sqrt(c / m);
	case HEATMAP_SCALE_LOG:
		return log1p(c) / log1p(m);
	case HEATMAP_SCALE_LINEAR:
		break;
	}
	return c / m;
}

static const char *scale_name(enum heatmap_scale scale)
{
	switch (scale) {
	case HEATMAP_SCALE_SQRT:
		return "square-root";
	case HEATMAP_SCALE_LOG:
		return "logarithmic";
	case HEATMAP_SCALE_LINEAR:
		break;
	}
	return "linear";
}

static void ramp_color(double t, char buf[8])
{
	double pos, frac;
	struct rgb c;
	size_t i;

	if (t < 0)
		t = 0;
	if (t > 1)
		t = 1;
	pos = t * (RAMP_STOPS - 1);
	i = (size_t)pos;
	if (i >= RAMP_STOPS - 1)
		i = RAMP_STOPS - 2;
	frac = pos - (double)i;
	c.r = ramp[i].r + (ramp[i + 1].r - ramp[i].r) * frac;
	c.g = ramp[i].g + (ramp[i + 1].g - ramp[i].g) * frac;
	c.b = ramp[i].b + (ramp[i + 1].b - ramp[i].b) * frac;
	snprintf(buf, 8, "#%02x%02x%02x", (unsigned int)lround(c.r), (unsigned int)lround(c.g),
		 (unsigned int)lround(c.b));
}

struct svg_geom {
	int width, height;
	double left, top, plot_w, plot_h, col_w, row_h;
	__u32 top_row; /* highest row drawn */
	__u64 max;     /* busiest cell */
	int decimals;  /* of column start times */
};

static void svg_geometry(const struct heatmap_data *d, const struct heatmap_svg_opts *o,
			 struct svg_geom *g)
{
	__u32 c, r, shown;
	__u64 v;

	g->top_row = 0;
	g->max = 0;
	for (c = 0; c < d->cols; c++) {
		for (r = 0; r < d->rows; r++) {
			v = cell(d, c, r);
			if (!v)
				continue;
			if (r > g->top_row)
				g->top_row = r;
			if (v > g->max)
				g->max = v;
		}
	}
	shown = g->top_row + 1;
	g->width = o->width > 0 ? o->width : SVG_WIDTH_DEFAULT;
	if (g->width < SVG_WIDTH_MIN)
		g->width = SVG_WIDTH_MIN;
	g->row_h = o->row_height > 0 ? o->row_height : PLOT_HEIGHT_TARGET / shown;
	if (o->row_height <= 0 && g->row_h < ROW_HEIGHT_MIN)
		g->row_h = ROW_HEIGHT_MIN;
	if (o->row_height <= 0 && g->row_h > ROW_HEIGHT_MAX)
		g->row_h = ROW_HEIGHT_MAX;
	if (o->row_height <= 0 && g->row_h * shown < PLOT_HEIGHT_MIN)
		g->row_h = PLOT_HEIGHT_MIN / shown;
	g->left = MARGIN_LEFT;
	g->top = MARGIN_TOP;
	g->plot_w = g->width - MARGIN_LEFT - MARGIN_RIGHT;
	g->plot_h = g->row_h * shown;
	g->col_w = g->plot_w / d->cols;
	g->height = (int)ceil(g->top + g->plot_h + MARGIN_BOTTOM);
	g->decimals = time_decimals(d);
}

static void svg_header(FILE *f, const struct heatmap_svg_opts *o, const struct svg_geom *g)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\">\n",
		g->width, g->height, g->width, g->height);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", g->width,
		g->height);
	fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"17\" " FONT ">",
		g->width / 2.0);
	xml_puts(f, o->title ? o->title : "Latency Heat Map");
	fputs("</text>\n", f);
	if (o->subtitle) {
		fprintf(f, "<text x=\"%.1f\" y=\"44\" text-anchor=\"middle\" font-size=\"12\" "
			   "fill=\"#555555\" " FONT ">", g->width / 2.0);
		xml_puts(f, o->subtitle);
		fputs("</text>\n", f);
	}
	/* the plot area's own white is what an empty cell looks like */
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#ffffff\" "
		   "stroke=\"#999999\" stroke-width=\"1\"/>\n",
		g->left, g->top, g->plot_w, g->plot_h);
}

/* "2.5-2.6 s, 1024-1279 usecs: 57" */
static void svg_cell_title(FILE *f, const struct heatmap_data *d, const struct svg_geom *g,
			   __u32 c, __u32 r, __u64 count)
{
	char t0[32], t1[32];
	__u64 lo, hi;
	bool open;

	row_bounds(d, r, &lo, &hi, &open);
	fprintf(f, "<title>%s-%s s, ", fmt_time(col_start_ns(d, c), g->decimals, t0, sizeof(t0)),
		fmt_time(col_start_ns(d, c + 1), g->decimals, t1, sizeof(t1)));
	if (open)
		fprintf(f, "&gt;= %llu ", (unsigned long long)lo);
	else if (lo == hi)
		fprintf(f, "%llu ", (unsigned long long)lo);
	else
		fprintf(f, "%llu-%llu ", (unsigned long long)lo, (unsigned long long)hi);
	xml_puts(f, unit_label(d));
	fprintf(f, ": %llu</title>", (unsigned long long)count);
}

static void svg_cells(FILE *f, const struct heatmap_data *d, const struct heatmap_svg_opts *o,
		      const struct svg_geom *g)
{
	char color[8];
	__u32 c, r;
	__u64 v;

	fputs("<g id=\"cells\">\n", f);
	for (c = 0; c < d->cols; c++) {
		for (r = 0; r <= g->top_row; r++) {
			v = cell(d, c, r);
			if (!v)
				continue;
			ramp_color(scale_pos(v, g->max, o->scale), color);
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
				   "fill=\"%s\">",
				g->left + c * g->col_w, g->top + (g->top_row - r) * g->row_h,
				g->col_w, g->row_h, color);
			svg_cell_title(f, d, g, c, r, v);
			fputs("</rect>\n", f);
		}
	}
	fputs("</g>\n", f);
	if (!g->max)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\" "
			   "fill=\"#999999\" " FONT ">no samples</text>\n",
			g->left + g->plot_w / 2, g->top + g->plot_h / 2 + 5);
}

/* A 1-2-5 step giving about TICKS_TARGET ticks over span. */
static double nice_step(double span)
{
	double raw = span / TICKS_TARGET, mag, norm;

	if (!(raw > 0))
		return 1;
	mag = pow(10, floor(log10(raw)));
	norm = raw / mag;
	if (norm <= 1)
		return mag;
	if (norm <= 2)
		return 2 * mag;
	if (norm <= 5)
		return 5 * mag;
	return 10 * mag;
}

static void svg_time_axis(FILE *f, const struct heatmap_data *d, const struct svg_geom *g)
{
	double t0 = (double)d->start_offset_ns / NSEC_PER_SEC;
	double span = (double)d->cols * (double)d->interval_ns / NSEC_PER_SEC;
	double step = nice_step(span), bottom = g->top + g->plot_h, t, x;
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
	long long k;

	fputs("<g id=\"time_axis\" font-size=\"11\" " FONT ">\n", f);
	/* integer multiples of step, so labels do not drift with accumulated rounding */
	for (k = (long long)ceil(t0 / step - 1e-9); (t = (double)k * step) <= t0 + span + 1e-9; k++) {
		x = g->left + (t - t0) / span * g->plot_w;
		fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#666666\"/>"
			   "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.*f</text>\n",
			x, bottom, x, bottom + 5, x, bottom + 18, decimals, t);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">"
		   "Time (s)</text>\n</g>\n",
		g->left + g->plot_w / 2, bottom + 36);
}

/* Labels at the bottom edge of each row starting a power of two, skipping crowded ones. */
static void svg_latency_axis(FILE *f, const struct heatmap_data *d, const struct svg_geom *g)
{
	double y, last_y = 1e18;
	__u64 lo, hi;
	bool open;
	__u32 r;

	fputs("<g id=\"latency_axis\" font-size=\"11\" " FONT ">\n", f);
	for (r = 0; r <= g->top_row; r++) {
		row_bounds(d, r, &lo, &hi, &open);
		if (lo & (lo - 1))
			continue;
		y = g->top + (g->top_row - r + 1) * g->row_h;
		if (last_y - y < LABEL_GAP_MIN)
			continue;
		last_y = y;
		fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#666666\"/>"
			   "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%llu</text>\n",
			g->left - 5, y, g->left, y, g->left - 8, y + 4, (unsigned long long)lo);
	}
	fprintf(f, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
		   "transform=\"rotate(-90 16 %.1f)\">Latency (",
		g->top + g->plot_h / 2, g->top + g->plot_h / 2);
	xml_puts(f, unit_label(d));
	fputs(")</text>\n</g>\n", f);
}

static void svg_legend(FILE *f, const struct heatmap_svg_opts *o, const struct svg_geom *g)
{
	double y = g->top + g->plot_h + 58, x = g->width - MARGIN_RIGHT - 60 - LEGEND_SWATCHES * 16;
	char color[8];
	int i;

	fprintf(f, "<g id=\"legend\" font-size=\"11\" " FONT ">\n"
		   "<text x=\"%.1f\" y=\"%.1f\">count per cell, %s scale</text>\n",
		g->left, y + 10, scale_name(o->scale));
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1</text>\n", x - 4, y + 10);
	for (i = 0; i < LEGEND_SWATCHES; i++) {
		ramp_color((i + 1.0) / LEGEND_SWATCHES, color);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" fill=\"%s\"/>\n",
			x + i * 16, y, color);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">max %llu</text>\n</g>\n",
		x + LEGEND_SWATCHES * 16 + 4, y + 10, (unsigned long long)g->max);
}

int heatmap_write_svg(FILE *f, const struct heatmap_data *d, const struct heatmap_svg_opts *opts)
{
	struct heatmap_svg_opts defaults = {};
	struct svg_geom g;
	int err;

	err = check_data(d);
	if (err)
		return err;
	if (!opts)
		opts = &defaults;
	svg_geometry(d, opts, &g);
	svg_header(f, opts, &g);
	svg_cells(f, d, opts, &g);
	svg_time_axis(f, d, &g);
	svg_latency_axis(f, d, &g);
	svg_legend(f, opts, &g);
	fputs("</svg>\n", f);
	return stream_flush_check(f);
}
