// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
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

int hist_print_log2(FILE *f, const __u64 *slots, int nr, const char *unit)
{
	struct hist_layout l = { .kind = HIST_LOG2 };

	return hist_print(f, slots, nr, &l, unit);
}

int hist_print_loglin(FILE *f, const __u64 *slots, int nr, __u32 sub_shift, const char *unit)
{
	struct hist_layout l = { .kind = HIST_LOGLIN, .sub_shift = sub_shift };

	return hist_print(f, slots, nr, &l, unit);
}

int hist_print_linear(FILE *f, const __u64 *slots, int nr, __u64 step, const char *unit)
{
	struct hist_layout l = { .kind = HIST_LINEAR, .step = step };

	return hist_print(f, slots, nr, &l, unit);
}

static __u64 total_count(const __u64 *slots, int nr)
{
	__u64 total = 0;
	int i;

	for (i = 0; i < nr; i++)
		total += slots[i];
	return total;
}

int hist_percentile(const __u64 *slots, int nr, const struct hist_layout *l, double q,
		    double *value, bool *open)
{
	int err, i, first, last;
	double rank, below = 0;
	__u64 max, lo, hi;
	bool is_open;

	err = hist_slot_bounds(l, 0, nr, &lo, &hi, &is_open);
	if (err)
		return err;
	if (!(q >= 0 && q <= 1))
		return -EINVAL;
	nonempty_range(slots, nr, &first, &last, &max);
	if (first < 0)
		return -ENODATA;
	rank = q * (double)total_count(slots, nr);
	/* the last non-empty slot takes whatever rank is left, rounding included */
	for (i = first; i < last; i++) {
		if (below + (double)slots[i] >= rank && slots[i])
			break;
		below += (double)slots[i];
	}
	err = hist_slot_bounds(l, i, nr, &lo, &hi, &is_open);
	if (err)
		return err;
	if (open)
		*open = is_open;
	if (is_open) {
		*value = (double)lo;
		return 0;
	}
	*value = (double)lo + (double)(hi - lo) * ((rank - below) / (double)slots[i]);
	if (*value > (double)hi)
		*value = (double)hi;
	if (*value < (double)lo)
		*value = (double)lo;
	return 0;
}

int hist_summary(const __u64 *slots, int nr, const struct hist_layout *l, __u64 sum,
		 struct hist_summary *s)
{
	__u64 lo, hi;
	bool open;
	int err, i;

	memset(s, 0, sizeof(*s));
	err = hist_slot_bounds(l, 0, nr, &lo, &hi, &open);
	if (err)
		return err;
	s->count = total_count(slots, nr);
	s->sum = sum;
	if (!s->count)
		return 0;
	s->avg = (double)sum / (double)s->count;
	for (i = 0; i < HIST_NR_PCT; i++) {
		err = hist_percentile(slots, nr, l, hist_pct_q[i], &s->pct[i], &s->pct_open[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Three significant-ish digits without trailing zeros: "1900", "412", "15.5", "5", "0.25". */
static const char *fmt_value(double v, char *buf, size_t size)
{
	int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
	char *end;

	snprintf(buf, size, "%.*f", decimals, v);
	if (!decimals)
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
	if (s->count)
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
	fprintf(f, " %s (estimated from buckets)\n", unit);
	return stream_flush_check(f);
}

int hist_loglin_to_log2(const __u64 *in, int nr_in, __u32 sub_shift, __u64 *out, int nr_out)
{
	__u64 lo, hi;
	int i, slot, span = 0;

	if (!in || !out || nr_in <= 0 || nr_out <= 0 || sub_shift > HIST_LOGLIN_SHIFT_MAX)
		return -EINVAL;
	if ((__u32)nr_in > HIST_LOGLIN_SLOTS(sub_shift))
		return -ERANGE;
	memset(out, 0, nr_out * sizeof(*out));
	for (i = 0; i < nr_in; i++) {
		if (hist_loglin_bounds(i, sub_shift, &lo, &hi))
			return -ERANGE;
		slot = (int)hist_log2_slot(lo);
		if (slot >= nr_out)
			slot = nr_out - 1;
		out[slot] += in[i];
		if (slot + 1 > span)
			span = slot + 1;
	}
	return span;
}
