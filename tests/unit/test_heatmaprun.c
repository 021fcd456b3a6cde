// SPDX-License-Identifier: GPL-2.0
/* The heat map run helpers that need no BPF: which columns a run wrote, and output files that
 * are opened before the run and left behind by no failure. */
#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>
#include "test.h"
#include "core/heatmaprun.h"

#define SEC 1000000000ULL

static char tmpdir[] = "/tmp/test_heatmaprun.XXXXXX";

static int dir_entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

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

static void test_open_early_and_abort(void)
{
	struct heatmap_run hr = {};
	char svg[300], tsv[300], bad[300];

	snprintf(svg, sizeof(svg), "%s/h.svg", tmpdir);
	snprintf(tsv, sizeof(tsv), "%s/h.tsv", tmpdir);
	snprintf(bad, sizeof(bad), "%s/no-such-dir/h.tsv", tmpdir);

	/* opened before the run: temporary files only, no final name yet */
	hr.svg_path = svg;
	hr.tsv_path = tsv;
	CHECK_INT(heatmap_run_open(&hr), 0);
	CHECK(hr.svg.f && hr.tsv.f);
	CHECK(access(svg, F_OK) != 0);
	CHECK_INT(dir_entries(tmpdir), 2);
	/* a run that fails leaves nothing */
	heatmap_run_abort(&hr);
	CHECK_INT(dir_entries(tmpdir), 0);
	heatmap_run_abort(&hr);

	/* one unwritable path: an error before the run, and the other file is not left either */
	hr.tsv_path = bad;
	printf("    (the next line is the expected error)\n");
	CHECK_INT(heatmap_run_open(&hr), -ENOENT);
	CHECK(!hr.svg.f && !hr.tsv.f);
	CHECK_INT(dir_entries(tmpdir), 0);

	/* nothing asked for: nothing opened */
	memset(&hr, 0, sizeof(hr));
	CHECK_INT(heatmap_run_open(&hr), 0);
	CHECK(!heatmap_run_enabled(&hr));
}

static void test_start_moves_column_zero(void)
{
	struct heatmap_run hr = { .svg_path = "x.svg" };
	volatile __u64 bss_start = 0;

	hr.cfg.start_ns = 1;
	heatmap_run_start(&hr, &bss_start);
	CHECK(hr.started);
	CHECK(hr.cfg.start_ns > 1);
	CHECK(bss_start == hr.cfg.start_ns);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_cols_follow_the_run);
	RUN(test_open_early_and_abort);
	RUN(test_start_moves_column_zero);
	rmdir(tmpdir);
	TESTS_DONE();
}
