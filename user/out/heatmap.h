/* Latency heat maps, in the spirit of Brendan Gregg's trace2heatmap.pl: time on x, latency on y
 * (low at the bottom), colour by count.  Input is a plain cols x rows matrix of counts whose rows
 * are log-linear slots (include/histogram.h); nothing here touches BPF. */
#ifndef BPFPROF_HEATMAP_H
#define BPFPROF_HEATMAP_H
#include <stdio.h>
#include <linux/types.h>
#include "histogram.h"

struct heatmap_data {
	const __u64 *counts;   /* counts[col * row_stride + row] */
	__u32 cols;            /* every column is drawn, empty or not */
	__u32 rows;            /* row r holds hist_loglin_slot() == r; when rows is below
				* HIST_LOGLIN_SLOTS(sub_shift) the top row also holds everything above */
	__u32 row_stride;      /* 0 means rows; HEATMAP_ROWS for a copy of the BPF map */
	__u32 sub_shift;       /* log-linear layout of the rows */
	__u64 interval_ns;     /* column width */
	__u64 start_offset_ns; /* time of column 0, from the start of the run */
	const char *unit;      /* latency unit label: "usecs", "nsecs"; NULL = "value" */
};

enum heatmap_scale {
	HEATMAP_SCALE_LINEAR, /* colour proportional to count / max count, like trace2heatmap.pl */
	HEATMAP_SCALE_SQRT,   /* lifts sparse cells when a few cells dominate */
	HEATMAP_SCALE_LOG,    /* log(1 + count) / log(1 + max): for counts spanning decades */
};

struct heatmap_svg_opts {
	const char *title;    /* NULL = "Latency Heat Map"; XML-escaped on output */
	const char *subtitle; /* or NULL */
	int width;            /* whole image in pixels; 0 = 1200 */
	int row_height;       /* pixels per latency row; 0 = chosen from the number of rows */
	enum heatmap_scale scale;
};

/* Writes a complete, script-free SVG document: a white plot area where each non-empty cell is a
 * <rect> inside <g id="cells">, coloured from light yellow to dark red by count relative to the
 * busiest cell, with a <title> tooltip "TIME-TIME s, LAT-LAT UNIT: COUNT"; time and latency axes
 * with ticks, a title and a legend giving the max count and scale.  Empty rows above the highest
 * non-empty one are left out; every column is kept.  opts may be NULL.  Returns 0 or -errno
 * (-EINVAL for an inconsistent matrix, a write error included). */
int heatmap_write_svg(FILE *f, const struct heatmap_data *d, const struct heatmap_svg_opts *opts);

/* Writes the matrix as tab-separated text: a header "time_s" then the lower bound of every row
 * (in the unit), then one line per column: its start time in seconds (exact, as many decimals as
 * the interval needs) and its counts.  Returns 0 or -errno. */
int heatmap_write_tsv(FILE *f, const struct heatmap_data *d);
#endif
