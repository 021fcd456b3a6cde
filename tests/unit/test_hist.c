// SPDX-License-Identifier: GPL-2.0
/* Histogram slot layouts, text histograms, percentiles, heat maps and output files. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "histogram.h"
#include "out/hist.h"
#include "out/heatmap.h"
#include "out/outfile.h"

static char tmpdir[] = "/tmp/test_hist.XXXXXX";

static __u64 xorshift(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int count_substr(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

static int max_line_len(const char *s)
{
	int max = 0, len;
	const char *nl;

	for (; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (!nl)
			nl = s + strlen(s);
		len = (int)(nl - s);
		if (len > max)
			max = len;
		if (!*nl)
			break;
	}
	return max;
}

static bool starts_with(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* ---- slot layouts ---- */

static void test_log2_slot_edges(void)
{
	int k;

	CHECK_INT(hist_log2_slot(0), 0);
	CHECK_INT(hist_log2_slot(1), 0);
	CHECK_INT(hist_log2_slot(2), 1);
	CHECK_INT(hist_log2_slot(3), 1);
	CHECK_INT(hist_log2_slot(4), 2);
	for (k = 1; k < 64; k++) {
		CHECK_INT(hist_log2_slot((1ULL << k) - 1), k - 1);
		CHECK_INT(hist_log2_slot(1ULL << k), k);
		CHECK_INT(hist_log2_slot((1ULL << k) + 1), k == 1 ? 1 : k);
	}
	CHECK_INT(hist_log2_slot(UINT64_MAX), 63);
}

static void test_log2_bounds(void)
{
	struct hist_layout l = { .kind = HIST_LOG2 };
	__u64 lo, hi, s = 88172645463325252ULL, v;
	bool open;
	int i, slot;

	CHECK_INT(hist_slot_bounds(&l, 0, 64, &lo, &hi, &open), 0);
	CHECK(lo == 0 && hi == 1 && !open);
	CHECK_INT(hist_slot_bounds(&l, 2, 64, &lo, &hi, &open), 0);
	CHECK(lo == 4 && hi == 7);
	CHECK_INT(hist_slot_bounds(&l, 63, 64, &lo, &hi, &open), 0);
	CHECK(lo == 1ULL << 63 && hi == UINT64_MAX && !open);
	/* a shorter array: the BPF side clamps into its last slot */
	CHECK_INT(hist_slot_bounds(&l, 26, 27, &lo, &hi, &open), 0);
	CHECK(open);
	CHECK_INT(hist_slot_bounds(&l, 0, 65, &lo, &hi, &open), -ERANGE);
	CHECK_INT(hist_slot_bounds(&l, 64, 64, &lo, &hi, &open), -EINVAL);
	for (i = 0; i < 100000; i++) {
		v = xorshift(&s) >> (i % 64);
		slot = (int)hist_log2_slot(v);
		hist_slot_bounds(&l, slot, 64, &lo, &hi, &open);
		CHECK(lo <= v && v <= hi);
	}
}

/* Slots tile [0, 2^64) exactly: contiguous, non-empty, in order, ending at UINT64_MAX. */
static void test_loglin_bounds_contiguous(void)
{
	__u64 lo, hi, prev_hi = 0;
	__u32 s, slot, nr;

	for (s = 0; s <= HIST_LOGLIN_SHIFT_MAX; s++) {
		nr = HIST_LOGLIN_SLOTS(s);
		for (slot = 0; slot < nr; slot++) {
			if (hist_loglin_bounds(slot, s, &lo, &hi)) {
				CHECK(!"bounds failed");
				return;
			}
			CHECK(lo <= hi);
			if (slot == 0)
				CHECK(lo == 0);
			else
				CHECK(lo == prev_hi + 1);
			CHECK_INT(hist_loglin_slot(lo, s), slot);
			CHECK_INT(hist_loglin_slot(hi, s), slot);
			prev_hi = hi;
		}
		CHECK(prev_hi == UINT64_MAX);
		CHECK_INT(hist_loglin_bounds(nr, s, &lo, &hi), -ERANGE);
	}
	CHECK_INT(hist_loglin_bounds(0, HIST_LOGLIN_SHIFT_MAX + 1, &lo, &hi), -ERANGE);
	CHECK_INT(HIST_LOGLIN_SLOTS(3), 496);
}

static void test_loglin_slot_values(void)
{
	__u64 v, lo, hi, seed = 0x9E3779B97F4A7C15ULL;
	__u32 s, slot;
	int i, k;

	for (s = 0; s <= HIST_LOGLIN_SHIFT_MAX; s++) {
		for (v = 0; v < 70000; v++) {
			slot = hist_loglin_slot(v, s);
			CHECK(hist_loglin_bounds(slot, s, &lo, &hi) == 0 && lo <= v && v <= hi);
			/* exact below 2^s */
			if (v < (1ULL << s))
				CHECK(lo == v && hi == v);
		}
		for (k = 0; k < 64; k++) {
			for (i = -1; i <= 1; i++) {
				v = (1ULL << k) + i;
				slot = hist_loglin_slot(v, s);
				CHECK(slot < HIST_LOGLIN_SLOTS(s));
				CHECK(hist_loglin_bounds(slot, s, &lo, &hi) == 0 && lo <= v && v <= hi);
			}
		}
		for (i = 0; i < 200000; i++) {
			v = xorshift(&seed) >> (i % 64);
			slot = hist_loglin_slot(v, s);
			CHECK(hist_loglin_bounds(slot, s, &lo, &hi) == 0 && lo <= v && v <= hi);
			/* relative width of a slot is at most 1/2^s */
			CHECK(lo < (1ULL << s) || (hi - lo) <= (lo >> s));
		}
		CHECK_INT(hist_loglin_slot(UINT64_MAX, s), HIST_LOGLIN_SLOTS(s) - 1);
		CHECK_INT(hist_loglin_slot(0, s), 0);
	}
	/* the layout in numbers, 4 sub-buckets per power of two */
	CHECK_INT(hist_loglin_slot(3, 2), 3);
	CHECK_INT(hist_loglin_slot(4, 2), 4);
	CHECK_INT(hist_loglin_slot(8, 2), 8);
	CHECK_INT(hist_loglin_slot(9, 2), 8);
	CHECK_INT(hist_loglin_slot(10, 2), 9);
	CHECK_INT(hist_loglin_slot(1024, 2), 36);
	CHECK_INT(hist_loglin_slot(1279, 2), 36);
	CHECK_INT(hist_loglin_slot(1280, 2), 37);
	CHECK(hist_loglin_bounds(36, 2, &lo, &hi) == 0 && lo == 1024 && hi == 1279);
	/* shifts above the maximum are capped, not undefined */
	CHECK_INT(hist_loglin_slot(1000, 9), hist_loglin_slot(1000, HIST_LOGLIN_SHIFT_MAX));
}

static void test_linear_clamp(void)
{
	struct hist_layout l = { .kind = HIST_LINEAR, .step = 100 };
	__u64 lo, hi;
	bool open;

	CHECK_INT(hist_linear_slot(0, 10, 5), 0);
	CHECK_INT(hist_linear_slot(9, 10, 5), 0);
	CHECK_INT(hist_linear_slot(10, 10, 5), 1);
	CHECK_INT(hist_linear_slot(49, 10, 5), 4);
	CHECK_INT(hist_linear_slot(50, 10, 5), 4);
	CHECK_INT(hist_linear_slot(UINT64_MAX, 10, 5), 4);
	CHECK_INT(hist_linear_slot(3, 0, 5), 3);
	CHECK_INT(hist_linear_slot(7, 0, 5), 4);
	CHECK_INT(hist_linear_slot(7, 1, 0), 0);
	CHECK_INT(hist_slot_bounds(&l, 1, 5, &lo, &hi, &open), 0);
	CHECK(lo == 100 && hi == 199 && !open);
	CHECK_INT(hist_slot_bounds(&l, 4, 5, &lo, &hi, &open), 0);
	CHECK(lo == 400 && open);
	l.step = UINT64_MAX / 2;
	CHECK_INT(hist_slot_bounds(&l, 3, 5, &lo, &hi, &open), -ERANGE);
}

static void test_heatmap_cells(void)
{
	struct heatmap_cfg cfg = {
		.start_ns = 1000, .interval_ns = 10, .cols = 5, .rows = 10, .sub_shift = 2,
	};

	CHECK_INT(heatmap_col(&cfg, 0), 0);
	CHECK_INT(heatmap_col(&cfg, 1000), 0);
	CHECK_INT(heatmap_col(&cfg, 1009), 0);
	CHECK_INT(heatmap_col(&cfg, 1010), 1);
	CHECK_INT(heatmap_col(&cfg, 1049), 4);
	CHECK_INT(heatmap_col(&cfg, UINT64_MAX), 4);
	CHECK_INT(heatmap_row(&cfg, 3), 3);
	CHECK_INT(heatmap_row(&cfg, 9), 8);
	CHECK_INT(heatmap_row(&cfg, 1000000), 9);
	CHECK_INT(heatmap_index(2, 3), 2 * HEATMAP_ROWS + 3);
	CHECK_INT(heatmap_index(UINT32_MAX, UINT32_MAX), HEATMAP_CELLS - 1);
	cfg.cols = HEATMAP_MAX_COLS + 5;
	cfg.interval_ns = 0;
	CHECK_INT(heatmap_col(&cfg, 5000), 0);
	cfg.interval_ns = 1;
	CHECK_INT(heatmap_col(&cfg, UINT64_MAX), HEATMAP_MAX_COLS - 1);
}

/* ---- nanosecond histograms: the model behind rows and percentiles ---- */

/* Counts n values, each v ns, into the kernel's layout; *sum gets their exact sum. */
static void add_ns(__u64 *slots, __u64 *sum, __u64 v, __u64 n)
{
	slots[hist_ns_slot(v)] += n;
	*sum += v * n;
}

static bool within(double got, double want, double frac)
{
	return fabs(got - want) <= frac * fabs(want) + 1e-9;
}

/* Values all in one slot: p50 is the exact average, and every percentile stays in the slot. */
static void test_ns_one_slot(void)
{
	__u64 slots[HIST_NS_SLOTS] = {}, sum = 0, lo, hi;
	double v;
	bool open;

	add_ns(slots, &sum, 5100000, 20); /* a fixed 5.1 ms sleep, 20 times */
	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, 0.5, &v, &open), 0);
	CHECK(within(v, 5100000, 1e-9) && !open);
	hist_loglin_bounds(hist_ns_slot(5100000), HIST_NS_SUB_SHIFT, &lo, &hi);
	for (double q = 0.01; q <= 1; q += 0.07) {
		CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, q, &v, NULL), 0);
		CHECK(v >= lo && v <= hi);
	}
	/* an exact slot (below 16 ns) gives its value at every quantile */
	memset(slots, 0, sizeof(slots));
	sum = 0;
	add_ns(slots, &sum, 7, 42);
	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, 0.999, &v, NULL), 0);
	CHECK(within(v, 7, 0));
	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, 0, &v, NULL), -EINVAL);
	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, 1.5, &v, NULL), -EINVAL);
	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, NAN, &v, NULL), -EINVAL);
}

/* Uniform values over a wide range: every percentile within the 6.25% bound; the summary's
 * average exact in any unit. */
static void test_ns_bound(void)
{
	__u64 slots[HIST_NS_SLOTS] = {}, sum = 0;
	struct hist_summary s;
	double v;

	for (__u64 x = 1000; x < 1000000; x += 7)
		add_ns(slots, &sum, x, 1);
	for (int i = 0; i < HIST_NR_PCT; i++) {
		double want = 1000 + hist_pct_q[i] * (1000000 - 1000);

		CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, sum, hist_pct_q[i], &v, NULL), 0);
		if (!within(v, want, 0.0625))
			printf("    p%g: %.0f, want %.0f\n", hist_pct_q[i] * 100, v, want);
		CHECK(within(v, want, 0.0625));
	}
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, sum, 1000, &s), 0);
	CHECK(within(s.avg, (double)sum / s.count / 1000, 1e-12));
	CHECK(within(s.pct[0], 500.5, 0.0625));
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, sum, 1000000, &s), 0);
	CHECK(within(s.pct[0], 0.5005, 0.0625));
}

/* Two groups far apart: percentiles land in the right group, each within its slots. */
static void test_ns_bimodal_and_merge(void)
{
	__u64 a[HIST_NS_SLOTS] = {}, b[HIST_NS_SLOTS] = {}, sa = 0, sb = 0;
	double v;

	add_ns(a, &sa, 1000, 900);   /* ~1 us calls */
	add_ns(b, &sb, 5000000, 100); /* 5 ms calls, counted on another CPU */
	/* merged as per-CPU copies and intervals are: slot by slot, and the sums */
	for (int i = 0; i < HIST_NS_SLOTS; i++)
		a[i] += b[i];
	sa += sb;
	CHECK_INT(hist_ns_percentile(a, HIST_NS_SLOTS, sa, 0.5, &v, NULL), 0);
	CHECK(within(v, 1000, 0.0625));
	CHECK_INT(hist_ns_percentile(a, HIST_NS_SLOTS, sa, 0.95, &v, NULL), 0);
	CHECK(within(v, 5000000, 0.0625));
}

/* The last slot also holds everything above 2^44 ns: a percentile there is its lower bound
 * (31 x 2^39 ns), marked open. */
static void test_ns_open_slot(void)
{
	__u64 slots[HIST_NS_SLOTS] = {}, sum = 0, lo, hi;
	struct hist_summary s;
	char *out = NULL;
	size_t len;
	FILE *f;

	add_ns(slots, &sum, 10000000, 10);
	add_ns(slots, &sum, 1ULL << 50, 90);
	CHECK_INT(hist_ns_slot(1ULL << 50), HIST_NS_SLOTS - 1);
	hist_loglin_bounds(HIST_NS_SLOTS - 1, HIST_NS_SUB_SHIFT, &lo, &hi);
	CHECK_INT(lo, 31ULL << 39);
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, sum, 1000000, &s), 0);
	CHECK(s.pct_open[0] && within(s.pct[0], lo / 1e6, 1e-9));
	CHECK(!s.pct_open[0] || s.pct[0] < s.avg);
	f = open_memstream(&out, &len);
	CHECK_INT(hist_print_summary(f, &s, "msecs"), 0);
	fclose(f);
	CHECK(strstr(out, "p50 >=17042430"));
	free(out);
}

static void test_ns_empty(void)
{
	__u64 slots[HIST_NS_SLOTS] = {};
	struct hist_summary s;
	char *out = NULL;
	size_t len;
	double v;
	FILE *f;

	CHECK_INT(hist_ns_percentile(slots, HIST_NS_SLOTS, 0, 0.5, &v, NULL), -ENODATA);
	CHECK_INT(hist_ns_summary(slots, HIST_NS_SLOTS, 0, 1000, &s), 0);
	CHECK_INT(s.count, 0);
	f = open_memstream(&out, &len);
	CHECK_INT(hist_print_summary(f, &s, "usecs"), 0);
	fclose(f);
	CHECK_STR(out, "count 0  avg - usecs  p50 -  p90 -  p99 -  p99.9 - usecs (p within 6.25%)\n");
	free(out);
}

/* Rows in any unit and layout add up to the count, and agree with the percentiles: rows below
 * p50's row hold at most half the count. */
static void test_ns_rows(void)
{
	struct hist_layout log2 = { .kind = HIST_LOG2 }, loglin = { .kind = HIST_LOGLIN,
		.sub_shift = 3 }, linear = { .kind = HIST_LINEAR, .step = 100, .nr = 50 };
	const struct hist_layout *layouts[] = { &log2, &loglin, &linear };
	static __u64 slots[HIST_NS_SLOTS], rows[HIST_LOGLIN_SLOTS(3)];
	__u64 sum = 0, units[] = { 1, 1000, 1000000 };

	memset(slots, 0, sizeof(slots));
	for (__u64 x = 500; x < 3000000; x = x * 11 / 10)
		add_ns(slots, &sum, x, 3);
	add_ns(slots, &sum, 2000, 50); /* a row edge in usecs: 2000 ns starts "2 -> 3" */
	for (size_t k = 0; k < 3; k++) {
		for (size_t u = 0; u < 3; u++) {
			__u64 total = 0, count = 0;
			int nr = hist_layout_slots(layouts[k]);

			CHECK_INT(hist_ns_rows(slots, HIST_NS_SLOTS, sum, layouts[k], units[u], rows), 0);
			for (int i = 0; i < nr; i++)
				total += rows[i];
			for (int i = 0; i < HIST_NS_SLOTS; i++)
				count += slots[i];
			CHECK_INT(total, count);
		}
	}
	/* exact where slots nest in rows: 2048 ns and 3500 ns are all in "2 -> 3 usecs" */
	memset(slots, 0, sizeof(slots));
	sum = 0;
	add_ns(slots, &sum, 2048, 10);
	add_ns(slots, &sum, 3500, 5);
	CHECK_INT(hist_ns_rows(slots, HIST_NS_SLOTS, sum, &log2, 1000, rows), 0);
	CHECK_INT(rows[1], 15);
	/* rows finer than slots: each value stays in the rows its 128 ns slot covers */
	CHECK_INT(hist_ns_rows(slots, HIST_NS_SLOTS, sum, &linear, 1, rows), 0);
	CHECK_INT(rows[20] + rows[21], 10);
	CHECK_INT(rows[34] + rows[35], 5);
	CHECK_INT(hist_ns_rows(slots, HIST_NS_SLOTS, sum, &log2, 0, rows), -EINVAL);
}

/* ---- text histograms ---- */

/* BCC's log2 rows, as hist_print() prints them. */
static int print_log2(FILE *f, const __u64 *slots, int nr, const char *unit)
{
	struct hist_layout l = { .kind = HIST_LOG2 };

	return hist_print(f, slots, nr, &l, unit);
}

static char *print_to_string(int (*fn)(FILE *, const __u64 *, int, const char *),
			     const __u64 *slots, int nr, const char *unit, int *err)
{
	char *out = NULL;
	size_t len;
	FILE *f;

	f = open_memstream(&out, &len);
	*err = fn(f, slots, nr, unit);
	fclose(f);
	return out;
}

static void test_print_log2_exact(void)
{
	__u64 slots[HIST_LOG2_SLOTS] = {};
	char *out;
	int err;

	slots[1] = 3;
	slots[2] = 10;
	slots[4] = 5;
	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "usecs", &err);
	CHECK_INT(err, 0);
	CHECK_STR(out,
		  "     usecs               : count    distribution\n"
		  "         2 -> 3          : 3        |************                            |\n"
		  "         4 -> 7          : 10       |****************************************|\n"
		  "         8 -> 15         : 0        |                                        |\n"
		  "        16 -> 31         : 5        |********************                    |\n");
	free(out);

	/* slot 0 is "0 -> 1", as in BCC */
	memset(slots, 0, sizeof(slots));
	slots[0] = 1;
	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "nsecs", &err);
	CHECK_STR(out,
		  "     nsecs               : count    distribution\n"
		  "         0 -> 1          : 1        |****************************************|\n");
	free(out);
}

static void test_print_log2_wide(void)
{
	__u64 slots[HIST_LOG2_SLOTS] = {};
	char *out;
	int err;

	/* bounds past 10 digits switch to BCC's 20-digit columns and 20 stars */
	slots[33] = 2;
	slots[63] = 1;
	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "nsecs", &err);
	CHECK_INT(err, 0);
	CHECK(starts_with(out, "               nsecs                         : count    distribution\n"
			       "          8589934592 -> 17179869183          : 2        "
			       "|********************|\n"));
	CHECK(strstr(out, "9223372036854775808 -> 18446744073709551615 : 1        "
			  "|**********          |\n"));
	CHECK_INT(count_substr(out, "\n"), 32);
	CHECK(max_line_len(out) < 80);
	free(out);

	/* counts too wide for BCC's 8 columns shrink the bar, not the layout */
	slots[33] = UINT64_MAX;
	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "nsecs", &err);
	CHECK(max_line_len(out) < 80);
	free(out);
	memset(slots, 0, sizeof(slots));
	slots[3] = UINT64_MAX;
	slots[5] = 123456789012ULL;
	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "usecs", &err);
	CHECK(max_line_len(out) < 80);
	CHECK(strstr(out, "         8 -> 15         : 18446744073709551615 |*****************************|\n"));
	free(out);
}

static void test_print_loglin_linear(void)
{
	__u64 ll[HIST_LOGLIN_SLOTS(2)] = {}, lin[8] = {};
	char *out = NULL;
	size_t len;
	FILE *f;

	ll[3] = 1;
	ll[36] = 4;
	f = open_memstream(&out, &len);
	CHECK_INT(hist_print(f, ll, HIST_LOGLIN_SLOTS(2),
			     &(struct hist_layout){ .kind = HIST_LOGLIN, .sub_shift = 2 }, "usecs"), 0);
	fclose(f);
	CHECK(starts_with(out, "     usecs               : count    distribution\n"
			       "         3 -> 3          : 1        |**********                              |\n"
			       "         4 -> 4          : 0        |"));
	CHECK(strstr(out, "\n       768 -> 895        : 0        |"));
	CHECK(strstr(out, "\n      1024 -> 1279       : 4        "
			  "|****************************************|\n"));
	CHECK(max_line_len(out) < 80);
	free(out);

	out = NULL;
	lin[1] = 2;
	lin[7] = 1; /* the clamped last slot */
	f = open_memstream(&out, &len);
	CHECK_INT(hist_print(f, lin, 8, &(struct hist_layout){ .kind = HIST_LINEAR, .step = 100,
							       .nr = 8 }, "msecs"), 0);
	fclose(f);
	CHECK(starts_with(out, "     msecs               : count    distribution\n"
			       "       100 -> 199        : 2        |****************************************|\n"
			       "       200 -> 299        : 0        |                                        |\n"));
	CHECK(strstr(out, "\n       700 -> inf        : 1        |********************                    |\n"));
	free(out);
}

static void test_print_empty_and_errors(void)
{
	struct hist_layout bad = { .kind = HIST_LOGLIN, .sub_shift = 9 };
	__u64 slots[HIST_LOG2_SLOTS] = {};
	char *out;
	FILE *f;
	int err;

	out = print_to_string(print_log2, slots, HIST_LOG2_SLOTS, "usecs", &err);
	CHECK_INT(err, 0);
	CHECK_STR(out, "");
	free(out);
	CHECK_INT(hist_print(stdout, slots, 4, &bad, "x"), -ERANGE);
	CHECK_INT(print_log2(stdout, slots, 65, "x"), -ERANGE);
	CHECK_INT(print_log2(stdout, slots, 0, "x"), -EINVAL);

	/* a full disk is an error, not a histogram */
	f = fopen("/dev/full", "w");
	if (!f)
		SKIP("no /dev/full");
	slots[3] = 1;
	CHECK_INT(print_log2(f, slots, HIST_LOG2_SLOTS, "usecs"), -ENOSPC);
	fclose(f);
}

/* ---- heat maps ---- */

/* Tags balance, attributes are quoted, '&' starts a known entity: enough to catch what a writer
 * gets wrong.  xmllint, when installed, checks the rest. */
static bool xml_well_formed(const char *s)
{
	const char *stack[64], *p, *name;
	size_t depth = 0, n;

	for (p = s; *p; p++) {
		if (*p == '&') {
			if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4) &&
			    strncmp(p, "&quot;", 6) && strncmp(p, "&apos;", 6))
				return false;
			continue;
		}
		if (*p == '>')
			return false; /* escaped in text by our writer, never bare */
		if (*p != '<')
			continue;
		if (p[1] == '?') {
			p = strstr(p, "?>");
			if (!p)
				return false;
			p++;
			continue;
		}
		if (p[1] == '/') {
			name = p + 2;
			n = strcspn(name, ">");
			if (!depth || strncmp(stack[depth - 1], name, n) ||
			    strcspn(stack[depth - 1], " />") != n)
				return false;
			depth--;
			p = name + n;
			continue;
		}
		name = p + 1;
		for (p = name; *p && *p != '>'; p++) {
			if (*p == '<')
				return false;
			if (*p == '"') {
				p = strchr(p + 1, '"');
				if (!p)
					return false;
			}
		}
		if (!*p)
			return false;
		if (p[-1] != '/') {
			if (depth == 64)
				return false;
			stack[depth++] = name;
		}
	}
	return depth == 0;
}

static int xmllint(const char *path)
{
	char cmd[512];

	if (system("command -v xmllint >/dev/null 2>&1"))
		return -ENOENT;
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	return system(cmd) ? -EINVAL : 0;
}

static char *write_svg(const struct heatmap_data *d, const struct heatmap_svg_opts *o,
		       const char *name, int *err, int *lint)
{
	char path[256];
	char *out;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w+");
	if (!f) {
		*err = -errno;
		return NULL;
	}
	*err = heatmap_write_svg(f, d, o);
	out = test_slurp(f);
	fclose(f);
	*lint = xmllint(path);
	return out;
}

static void test_heatmap_svg(void)
{
	/* 5 columns x 8 rows (sub_shift 2: rows are values 0..7 exactly); row 6 and 7 empty */
	__u64 m[5][8] = {
		{ 0, 1, 0, 0, 0, 0, 0, 0 },
		{ 0, 0, 0, 0, 0, 0, 0, 0 },
		{ 2, 0, 9, 0, 0, 0, 0, 0 },
		{ 0, 0, 0, 3, 0, 1, 0, 0 },
		{ 0, 0, 0, 0, 0, 0, 0, 0 },
	};
	struct heatmap_data d = {
		.counts = &m[0][0], .cols = 5, .rows = 8, .sub_shift = 2,
		.interval_ns = 1000000000ULL, .start_offset_ns = 0, .unit = "usecs",
	};
	struct heatmap_svg_opts o = { .title = "biolat <sda> & \"friends\"", .subtitle = "it's" };
	char *out, *cells;
	int err, lint;

	out = write_svg(&d, &o, "h.svg", &err, &lint);
	CHECK_INT(err, 0);
	if (!out)
		return;
	CHECK(xml_well_formed(out));
	CHECK(lint == 0 || lint == -ENOENT);
	if (lint == -ENOENT)
		printf("    note: xmllint not installed, checked with the built-in parser only\n");
	cells = strstr(out, "<g id=\"cells\">");
	CHECK(cells);
	if (cells)
		CHECK_INT(count_substr(cells, "<rect") - count_substr(strstr(cells, "</g>"), "<rect"),
			  5);
	CHECK(strstr(out, "biolat &lt;sda&gt; &amp; &quot;friends&quot;"));
	CHECK(strstr(out, "it&apos;s"));
	CHECK(strstr(out, "<title>2-3 s, 2 usecs: 9</title>"));
	CHECK(strstr(out, "<title>3-4 s, 5 usecs: 1</title>"));
	CHECK(strstr(out, "max 9"));
	/* the busiest cell gets the darkest colour */
	CHECK(strstr(out, "fill=\"#bd0026\"><title>2-3 s, 2 usecs: 9"));
	/* rows 6 and 7 are trimmed: six rows of 24 px */
	CHECK(strstr(out, "height=\"144.00\""));
	free(out);

	/* the same through a BPF-map-shaped matrix with stride, bigger values, open top row */
	{
		static __u64 big[3 * HEATMAP_ROWS];
		struct heatmap_data b = {
			.counts = big, .cols = 3, .rows = 40, .row_stride = HEATMAP_ROWS,
			.sub_shift = 2, .interval_ns = 10000000, .start_offset_ns = 20000000,
			.unit = "usecs",
		};

		big[0 * HEATMAP_ROWS + 36] = 7;
		big[2 * HEATMAP_ROWS + 39] = 1;
		big[1 * HEATMAP_ROWS + 40] = 1000; /* past rows: must be ignored */
		o.scale = HEATMAP_SCALE_LOG;
		out = write_svg(&b, &o, "b.svg", &err, &lint);
		CHECK_INT(err, 0);
		CHECK(out && xml_well_formed(out));
		CHECK(lint == 0 || lint == -ENOENT);
		CHECK(out && strstr(out, "<title>0.02-0.03 s, 1024-1279 usecs: 7</title>"));
		CHECK(out && strstr(out, "<title>0.04-0.05 s, &gt;= 1792 usecs: 1</title>"));
		CHECK(out && strstr(out, "logarithmic scale"));
		free(out);
	}
}

static void test_heatmap_svg_empty(void)
{
	__u64 m[4 * 8] = {};
	struct heatmap_data d = {
		.counts = m, .cols = 4, .rows = 8, .sub_shift = 2, .interval_ns = 1000000000ULL,
	};
	char *out;
	int err, lint;

	out = write_svg(&d, NULL, "e.svg", &err, &lint);
	CHECK_INT(err, 0);
	CHECK(out && xml_well_formed(out));
	CHECK(lint == 0 || lint == -ENOENT);
	CHECK(out && strstr(out, "no samples"));
	CHECK(out && strstr(out, "<g id=\"cells\">\n</g>"));
	free(out);
	d.rows = HIST_LOGLIN_SLOTS(2) + 1;
	CHECK_INT(heatmap_write_svg(stdout, &d, NULL), -EINVAL);
	d.rows = 8;
	d.interval_ns = 0;
	CHECK_INT(heatmap_write_tsv(stdout, &d), -EINVAL);
}

static void test_heatmap_tsv(void)
{
	__u64 m[3][6] = {
		{ 1, 0, 0, 0, 0, 0 },
		{ 0, 2, 0, 0, 5, 0 },
		{ 0, 0, 0, 0, 0, 7 },
	};
	struct heatmap_data d = {
		.counts = &m[0][0], .cols = 3, .rows = 6, .sub_shift = 1,
		.interval_ns = 10000000, .unit = "usecs",
	};
	char *out = NULL;
	size_t len;
	FILE *f;

	f = open_memstream(&out, &len);
	CHECK_INT(heatmap_write_tsv(f, &d), 0);
	fclose(f);
	CHECK_STR(out, "time_s\t0\t1\t2\t3\t4\t6\n"
		       "0.00\t1\t0\t0\t0\t0\t0\n"
		       "0.01\t0\t2\t0\t0\t5\t0\n"
		       "0.02\t0\t0\t0\t0\t0\t7\n");
	free(out);

	out = NULL;
	d.interval_ns = 1000000000ULL;
	d.start_offset_ns = 5000000000ULL;
	d.cols = 2;
	d.rows = 2;
	d.row_stride = 6;
	f = open_memstream(&out, &len);
	CHECK_INT(heatmap_write_tsv(f, &d), 0);
	fclose(f);
	CHECK_STR(out, "time_s\t0\t1\n5\t1\t0\n6\t0\t2\n");
	free(out);
}

/* ---- output files ---- */

static int dir_entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_outfile_commit(void)
{
	char dir[300], path[320], buf[64] = {};
	struct outfile of;
	struct stat st;
	mode_t old;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/commit", tmpdir);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	old = umask(022);
	f = outfile_open(path, &of);
	umask(old);
	CHECK(f);
	if (!f)
		return;
	/* nothing under the final name until the commit */
	CHECK(access(path, F_OK) != 0);
	CHECK_INT(dir_entries(dir), 1);
	fputs("complete\n", f);
	CHECK_INT(outfile_commit(&of), 0);
	CHECK(of.f == NULL);
	outfile_abort(&of); /* no-op after commit */
	f = fopen(path, "r");
	CHECK(f && fgets(buf, sizeof(buf), f));
	if (f)
		fclose(f);
	CHECK_STR(buf, "complete\n");
	CHECK_INT(dir_entries(dir), 1);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);

	/* replacing an existing file */
	f = outfile_open(path, &of);
	CHECK(f);
	if (f) {
		fputs("second\n", f);
		CHECK_INT(outfile_commit(&of), 0);
	}
	CHECK(stat(path, &st) == 0 && st.st_size == 7);
	CHECK_INT(dir_entries(dir), 1);
}

static void test_outfile_abort(void)
{
	char dir[300], path[320];
	struct outfile of;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/abort", tmpdir);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	f = outfile_open(path, &of);
	CHECK(f);
	if (!f)
		return;
	fputs("partial", f);
	outfile_abort(&of);
	CHECK(access(path, F_OK) != 0);
	CHECK_INT(dir_entries(dir), 0);
	outfile_abort(&of); /* twice is fine */
}

static void test_outfile_errors(void)
{
	char dir[300], path[320];
	struct outfile of;
	FILE *f;

	f = outfile_open("/nonexistent-bpfprof-dir/out.svg", &of);
	CHECK(!f);
	CHECK_INT(errno, ENOENT);
	CHECK(of.f == NULL && of.path == NULL && of.tmp_path == NULL);

	snprintf(dir, sizeof(dir), "%s/ro", tmpdir);
	mkdir(dir, 0500);
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	if (geteuid() != 0) {
		f = outfile_open(path, &of);
		CHECK(!f);
		CHECK_INT(errno, EACCES);
	}
	CHECK_INT(dir_entries(dir), 0);

	/* a device is written in place, and a full one fails the commit */
	f = outfile_open("/dev/full", &of);
	if (!f)
		SKIP("cannot open /dev/full");
	CHECK(of.tmp_path == NULL);
	fputs("x", f);
	CHECK_INT(outfile_commit(&of), -ENOSPC);
	CHECK_INT(outfile_commit(&of), -EBADF);

	f = fopen("/dev/full", "w");
	if (f) {
		fputs("x", f);
		CHECK_INT(stream_flush_check(f), -ENOSPC);
		fclose(f);
	}
}

static void cleanup_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' && rm -rf '%s'", tmpdir, tmpdir);
	if (system(cmd))
		fprintf(stderr, "test_hist: could not remove %s\n", tmpdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("test_hist: mkdtemp");
		return 1;
	}
	RUN(test_log2_slot_edges);
	RUN(test_log2_bounds);
	RUN(test_loglin_bounds_contiguous);
	RUN(test_loglin_slot_values);
	RUN(test_linear_clamp);
	RUN(test_heatmap_cells);
	RUN(test_ns_one_slot);
	RUN(test_ns_bound);
	RUN(test_ns_bimodal_and_merge);
	RUN(test_ns_open_slot);
	RUN(test_ns_empty);
	RUN(test_ns_rows);
	RUN(test_print_log2_exact);
	RUN(test_print_log2_wide);
	RUN(test_print_loglin_linear);
	RUN(test_print_empty_and_errors);
	RUN(test_heatmap_svg);
	RUN(test_heatmap_svg_empty);
	RUN(test_heatmap_tsv);
	RUN(test_outfile_commit);
	RUN(test_outfile_abort);
	RUN(test_outfile_errors);
	cleanup_tmpdir();
	TESTS_DONE();
}
