// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "out/hist.h"
#include "out/outfile.h"

/* BCC's layout: 40 stars, or 20 when the bounds need 20 digits; lines stay under 80 columns. */
#define STARS_MAX 40
#define LINE_MAX_COLS 79
#define COUNT_MIN_WIDTH 8
/* Bounds up to 10 digits print in 10 columns; larger ones (slot 33 up, in log2) in 20. */
#define NARROW_BOUND_MAX 9999999999ULL

const double hist_pct_q[HIST_NR_PCT] = { 0.5, 0.9, 0.99, 0.999 };
static const char *const pct_names[HIST_NR_PCT] = { "p50", "p90", "p99", "p99.9" };

static int log2_bounds(int slot, int nr, __u64 *lo, __u64 *hi, bool *open)
{
	if (nr > HIST_LOG2_SLOTS)
		return -ERANGE;
	*lo = slot ? 1ULL << slot : 0;
	*hi = slot == HIST_LOG2_SLOTS - 1 ? UINT64_MAX : (2ULL << slot) - 1;
	*open = slot == nr - 1 && nr < HIST_LOG2_SLOTS;
	return 0;
}

static int loglin_bounds(__u32 sub_shift, int slot, int nr, __u64 *lo, __u64 *hi, bool *open)
{
	__u32 full;

	if (sub_shift > HIST_LOGLIN_SHIFT_MAX)
		return -ERANGE;
	full = HIST_LOGLIN_SLOTS(sub_shift);
	if ((__u32)nr > full)
		return -ERANGE;
	*open = slot == nr - 1 && (__u32)nr < full;
	return hist_loglin_bounds(slot, sub_shift, lo, hi);
}

static int linear_bounds(__u64 step, int slot, int nr, __u64 *lo, __u64 *hi, bool *open)
{
	if (!step)
		step = 1;
	/* bounds past 2^64 cannot come from hist_linear_slot() */
	if (slot && step > UINT64_MAX / (__u64)slot)
		return -ERANGE;
	*lo = (__u64)slot * step;
	if (*lo > UINT64_MAX - (step - 1))
		return -ERANGE;
	*hi = *lo + (step - 1);
	*open = slot == nr - 1;
	return 0;
}

int hist_slot_bounds(const struct hist_layout *l, int slot, int nr, __u64 *lo, __u64 *hi,
		     bool *open)
{
	if (!l || nr <= 0 || slot < 0 || slot >= nr)
		return -EINVAL;
	switch (l->kind) {
	case HIST_LOG2:
		return log2_bounds(slot, nr, lo, hi, open);
	case HIST_LOGLIN:
		return loglin_bounds(l->sub_shift, slot, nr, lo, hi, open);
	case HIST_LINEAR:
		return linear_bounds(l->step, slot, nr, lo, hi, open);
	}
	return -EINVAL;
}

int hist_layout_slots(const struct hist_layout *l)
{
	switch (l->kind) {
	case HIST_LOG2:
		return HIST_LOG2_SLOTS;
	case HIST_LOGLIN:
		return l->sub_shift <= HIST_LOGLIN_SHIFT_MAX ? (int)HIST_LOGLIN_SLOTS(l->sub_shift) : -ERANGE;
	case HIST_LINEAR:
		return l->nr ? (int)l->nr : -EINVAL;
	}
	return -EINVAL;
}

static int digits(__u64 v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* Index range of the non-empty slots and the largest count; *first is -1 when all are empty. */
static void nonempty_range(const __u64 *slots, int nr, int *first, int *last, __u64 *max)
{
	int i;

	*first = *last = -1;
	*max = 0;
	for (i = 0; i < nr; i++) {
		if (!slots[i])
			continue;
		if (*first < 0)
			*first = i;
		*last = i;
		if (slots[i] > *max)
			*max = slots[i];
	}
}

struct print_cols {
	int bound; /* width of each of "lo" and "hi" */
	int count;
	int stars;
};

/* Column widths for slots first..last, chosen as BCC does and then kept under 80 columns. */
static int print_cols(const struct hist_layout *l, int first, int last, int nr, __u64 max,
		      struct print_cols *c)
{
	__u64 lo, hi;
	bool open;
	int err, i;

	c->bound = 10;
	for (i = first; i <= last; i++) {
		err = hist_slot_bounds(l, i, nr, &lo, &hi, &open);
		if (err)
			return err;
		if ((open ? lo : hi) > NARROW_BOUND_MAX)
			c->bound = 20;
	}
	c->count = digits(max) > COUNT_MIN_WIDTH ? digits(max) : COUNT_MIN_WIDTH;
	c->stars = c->bound == 10 ? STARS_MAX : STARS_MAX / 2;
	/* "lo -> hi : count |stars|" */
	if (2 * c->bound + 4 + 3 + c->count + 2 + c->stars + 1 > LINE_MAX_COLS)
		c->stars = LINE_MAX_COLS - (2 * c->bound + 4 + 3 + c->count + 2 + 1);
	return 0;
}

static void print_row(FILE *f, const struct print_cols *c, __u64 lo, __u64 hi, bool open,
		      __u64 val, __u64 max)
{
	char hibuf[24], bar[STARS_MAX + 1];
	int n;

	if (open)
		snprintf(hibuf, sizeof(hibuf), "inf");
	else
		snprintf(hibuf, sizeof(hibuf), "%llu", (unsigned long long)hi);
	/* 128-bit so that huge counts cannot overflow the product */
	n = (int)((unsigned __int128)val * c->stars / max);
	memset(bar, '*', n);
	memset(bar + n, ' ', c->stars - n);
	bar[c->stars] = '\0';
	fprintf(f, "%*llu -> %-*s : %-*llu |%s|\n", c->bound, (unsigned long long)lo, c->bound, hibuf,
		c->count, (unsigned long long)val, bar);
}

int hist_print(FILE *f, const __u64 *slots, int nr, const struct hist_layout *l, const char *unit)
{
	int first, last, err, i;
	struct print_cols c;
	__u64 max, lo, hi;
	bool open;

	/* validates the layout even when there is nothing to print */
	err = hist_slot_bounds(l, 0, nr, &lo, &hi, &open);
	if (err)
		return err;
	nonempty_range(slots, nr, &first, &last, &max);
	if (first < 0)
		return 0;
	err = print_cols(l, first, last, nr, max, &c);
	if (err)
		return err;
	fprintf(f, "%*s%-*s : count    distribution\n", c.bound == 10 ? 5 : 15, "",
		c.bound == 10 ? 19 : 29, unit ? unit : "value");
	for (i = first; i <= last; i++) {
		hist_slot_bounds(l, i, nr, &lo, &hi, &open);
		print_row(f, &c, lo, hi, open, slots[i], max);
	}
	return stream_flush_check(f);
}

static __u64 total_count(const __u64 *slots, int nr)
{
	__u64 total = 0;
	int i;

	for (i = 0; i < nr; i++)
		total += slots[i];
	return total;
}

/* Three significant-ish digits without trailing zeros: "1900", "412", "15.5", "5", "0.25",
 * "0.00123" (a sub-unit latency keeps its digits: milliseconds of a microsecond call). */
static const char *fmt_value(double v, char *buf, size_t size)
{
	int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
	char *end;

	if (v > 0 && v < 1)
		snprintf(buf, size, "%.3g", v);
	else
		snprintf(buf, size, "%.*f", decimals, v);
	if (!decimals || strchr(buf, 'e') || !strchr(buf, '.'))
		return buf;
	end = buf + strlen(buf) - 1;
	while (*end == '0')
		*end-- = '\0';
	if (*end == '.')
		*end = '\0';
	return buf;
}

int hist_print_summary(FILE *f, const struct hist_summary *s, const char *unit)
{
	char buf[64];
	int i;

	if (!unit)
		unit = "value";
	fprintf(f, "count %llu  avg ", (unsigned long long)s->count);
	if (s->count && s->avg > 0 && s->avg < 1)
		fprintf(f, "%.3g %s", s->avg, unit);
	else if (s->count)
		fprintf(f, "%.1f %s", s->avg, unit);
	else
		fprintf(f, "- %s", unit);
	for (i = 0; i < HIST_NR_PCT; i++) {
		fprintf(f, "  %s ", pct_names[i]);
		if (!s->count)
			fputs("-", f);
		else
			fprintf(f, "%s%s", s->pct_open[i] ? ">=" : "",
				fmt_value(s->pct[i], buf, sizeof(buf)));
	}
	fprintf(f, " %s (p within 6.25%%)\n", unit);
	return stream_flush_check(f);
}


/* ---- nanosecond histograms ---- */

/* Where a slot's values are taken to lie: [lo + a * w, lo + b * w], w = hi - lo. */
struct ns_model {
	double a, b;
};

/* Bounds of ns slot i; the last slot of the kernel's array is open, taken as its lower bound. */
static void ns_bounds(int i, int nr, double *lo, double *w, bool *open)
{
	__u64 l = 0, h = 0;

	hist_loglin_bounds(i, HIST_NS_SUB_SHIFT, &l, &h);
	*open = i == nr - 1;
	*lo = l;
	*w = *open ? 0 : (double)(h - l);
}

/* The part (a, b) of every slot that gives the histogram the mean sum_ns / count: with f the
 * fraction of the widths that the exact sum puts above the slots' lower bounds, [0, 2f] when
 * f <= 1/2 and [2f - 1, 1] above: both have mean f. */
static struct ns_model ns_model(const __u64 *slots, int nr, __u64 sum_ns)
{
	double base = 0, width = 0, lo, w, f;
	struct ns_model m;
	bool open;

	for (int i = 0; i < nr; i++) {
		if (!slots[i])
			continue;
		ns_bounds(i, nr, &lo, &w, &open);
		base += (double)slots[i] * lo;
		width += (double)slots[i] * w;
	}
	f = width > 0 ? ((double)sum_ns - base) / width : 0.5;
	if (!(f >= 0))
		f = 0;
	if (f > 1)
		f = 1;
	m.a = f <= 0.5 ? 0 : 2 * f - 1;
	m.b = f <= 0.5 ? 2 * f : 1;
	return m;
}

int hist_ns_percentile(const __u64 *slots, int nr, __u64 sum_ns, double q, double *ns, bool *open)
{
	struct ns_model m;
	__u64 count, below = 0;
	double rank, lo, w, t;

	if (!slots || nr <= 0 || nr > HIST_NS_SLOTS || !(q > 0 && q <= 1) || !ns)
		return -EINVAL;
	count = total_count(slots, nr);
	if (!count)
		return -ENODATA;
	m = ns_model(slots, nr, sum_ns);
	rank = q * (double)count;
	for (int i = 0; i < nr; i++) {
		bool is_open;

		if (!slots[i] || (double)(below + slots[i]) < rank) {
			below += slots[i];
			continue;
		}
		ns_bounds(i, nr, &lo, &w, &is_open);
		t = (rank - (double)below) / (double)slots[i];
		*ns = lo + w * (m.a + (m.b - m.a) * t);
		if (open)
			*open = is_open;
		return 0;
	}
	return -ENODATA; /* not reached: rank <= count */
}

/* Adds a share of a slot's count to the rows it overlaps: its part [x0, x1] of ns, in rows of
 * layout l in units of unit_ns. */
static int spread(double x0, double x1, double count, const struct hist_layout *l, __u64 unit_ns,
		  double *rows, int nr)
{
	__u64 v0 = (__u64)(x0 / unit_ns), v1 = (__u64)(x1 / unit_ns), lo, hi;
	int r0, r1, err;
	bool open;

	r0 = (int)(l->kind == HIST_LOG2 ? hist_log2_slot(v0) : l->kind == HIST_LOGLIN ?
		   hist_loglin_slot(v0, l->sub_shift) : hist_linear_slot(v0, l->step, nr));
	r1 = (int)(l->kind == HIST_LOG2 ? hist_log2_slot(v1) : l->kind == HIST_LOGLIN ?
		   hist_loglin_slot(v1, l->sub_shift) : hist_linear_slot(v1, l->step, nr));
	if (r0 >= nr)
		r0 = nr - 1;
	if (r1 >= nr)
		r1 = nr - 1;
	if (r0 == r1 || x1 <= x0) {
		rows[r0] += count;
		return 0;
	}
	for (int r = r0; r <= r1; r++) {
		double from, to;

		err = hist_slot_bounds(l, r, nr, &lo, &hi, &open);
		if (err)
			return err;
		/* the row holds the values that print as lo..hi units: [lo, hi + 1) * unit_ns */
		from = (double)lo * unit_ns;
		to = open || r == r1 ? x1 : ((double)hi + 1) * unit_ns;
		if (r == r0)
			from = x0;
		if (to > from)
			rows[r] += count * (to - from) / (x1 - x0);
	}
	return 0;
}

/* Rounds rows to integers that add up to total: floors, then one more for the largest
 * remainders (ties to the lower row). */
static void round_rows(const double *rows, int nr, __u64 total, __u64 *out)
{
	__u64 sum = 0;

	for (int i = 0; i < nr; i++) {
		out[i] = (__u64)rows[i];
		sum += out[i];
	}
	while (sum < total) {
		int best = -1;
		double best_rem = -1;

		for (int i = 0; i < nr; i++) {
			double rem = rows[i] - (double)out[i];

			if (rem > best_rem + 1e-9) {
				best = i;
				best_rem = rem;
			}
		}
		if (best < 0)
			break;
		out[best]++;
		sum++;
	}
}

int hist_ns_rows(const __u64 *slots, int nr, __u64 sum_ns, const struct hist_layout *l,
		 __u64 unit_ns, __u64 *out)
{
	int nr_rows = l ? hist_layout_slots(l) : -EINVAL, err = 0;
	struct ns_model m;
	double *rows, lo, w;
	bool open;

	if (nr_rows < 0)
		return nr_rows;
	if (!slots || nr <= 0 || nr > HIST_NS_SLOTS || !unit_ns || !out)
		return -EINVAL;
	rows = calloc(nr_rows, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	m = ns_model(slots, nr, sum_ns);
	for (int i = 0; i < nr && !err; i++) {
		if (!slots[i])
			continue;
		ns_bounds(i, nr, &lo, &w, &open);
		err = spread(lo + w * m.a, lo + w * m.b, (double)slots[i], l, unit_ns, rows, nr_rows);
	}
	if (!err)
		round_rows(rows, nr_rows, total_count(slots, nr), out);
	free(rows);
	return err;
}

int hist_ns_summary(const __u64 *slots, int nr, __u64 sum_ns, __u64 unit_ns,
		    struct hist_summary *s)
{
	int err;

	memset(s, 0, sizeof(*s));
	if (!slots || nr <= 0 || nr > HIST_NS_SLOTS || !unit_ns)
		return -EINVAL;
	s->count = total_count(slots, nr);
	s->sum = sum_ns / unit_ns;
	if (!s->count)
		return 0;
	s->avg = (double)sum_ns / unit_ns / s->count;
	for (int i = 0; i < HIST_NR_PCT; i++) {
		err = hist_ns_percentile(slots, nr, sum_ns, hist_pct_q[i], &s->pct[i], &s->pct_open[i]);
		if (err)
			return err;
		s->pct[i] /= unit_ns;
	}
	return 0;
}

int hist_ns_print(FILE *f, const __u64 *slots, int nr, __u64 sum_ns, const struct hist_layout *l,
		  __u64 unit_ns, const char *unit)
{
	int nr_rows = hist_layout_slots(l), err;
	struct hist_summary s;
	__u64 *rows;

	if (nr_rows < 0)
		return nr_rows;
	rows = calloc(nr_rows, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	err = hist_ns_rows(slots, nr, sum_ns, l, unit_ns, rows);
	err = err ?: hist_print(f, rows, nr_rows, l, unit);
	err = err ?: hist_ns_summary(slots, nr, sum_ns, unit_ns, &s);
	err = err ?: hist_print_summary(f, &s, unit);
	free(rows);
	return err;
}
