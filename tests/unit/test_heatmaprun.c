// SPDX-License-Identifier: GPL-2.0
/* The heat map run helpers that need no BPF: which columns a run wrote, and column zero moved
 * to the attach.  (Its files are the runner's: test_options.c.) */
#include <errno.h>
#include "test.h"
#include "core/heatmaprun.h"

#define SEC 1000000000ULL

static void test_cols_follow_the_run(void)
{
	static __u64 cells[10 * HEATMAP_ROWS];
	struct heatmap_cfg cfg = { .start_ns = 100 * SEC, .interval_ns = SEC / 2, .cols = 10 };

	/* a 3 s run of 0.5 s columns: 6, not 7 (the end is not the start of a new column) */
	CHECK_INT(heatmap_run_cols(&cfg, cells, 103 * SEC), 6);
	/* a partly covered last column counts */
	CHECK_INT(heatmap_run_cols(&cfg, cells, 103 * SEC + 1), 7);
	/* at least one column, even for an empty or clock-skewed run */
	CHECK_INT(heatmap_run_cols(&cfg, cells, 100 * SEC), 1);
	CHECK_INT(heatmap_run_cols(&cfg, cells, 50 * SEC), 1);
	/* never more than the map has */
	CHECK_INT(heatmap_run_cols(&cfg, cells, 200 * SEC), 10);
	/* values counted after the end (before the programs were detached) keep their column */
	cells[8 * HEATMAP_ROWS + 3] = 1;
	CHECK_INT(heatmap_run_cols(&cfg, cells, 103 * SEC), 9);
	cells[8 * HEATMAP_ROWS + 3] = 0;
	cells[9 * HEATMAP_ROWS + HEATMAP_ROWS - 1] = 2;
	CHECK_INT(heatmap_run_cols(&cfg, cells, 101 * SEC), 10);
}

static void test_start_moves_column_zero(void)
{
	struct heatmap_run hr = { .svg = { .path = "x.svg" } };
	volatile __u64 bss_start = 0;

	hr.cfg.start_ns = 1;
	heatmap_run_start(&hr, &bss_start);
	CHECK(hr.started);
	CHECK(hr.cfg.start_ns > 1);
	CHECK(bss_start == hr.cfg.start_ns);
}

int main(void)
{
	RUN(test_cols_follow_the_run);
	RUN(test_start_moves_column_zero);
	TESTS_DONE();
}
