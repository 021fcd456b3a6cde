// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <math.h>
#include <string.h>
#include "out/statfmt.h"

/* perf's widths: the value column, the unit, the event name (shorter for a row without a
 * count), and the derived figure's field after the name. */
#define VALUE_WIDTH 18
#define UNIT_WIDTH 4
#define NAME_WIDTH 32
#define NAME_WIDTH_UNCOUNTED 25
#define METRIC_LEN 35

void run_stats_add(struct run_stats *s, double v)
{
	double delta;

	s->n++;
	delta = v - s->mean;
	s->mean += delta / s->n;
	s->m2 += delta * (v - s->mean);
}

double run_stats_stddev(const struct run_stats *s)
{
	if (s->n < 2)
		return 0;
	return sqrt(s->m2 / (s->n - 1) / s->n);
}

double run_stats_noise_pct(const struct run_stats *s)
{
	return s->mean ? 100.0 * run_stats_stddev(s) / s->mean : 0;
}

void stat_rate_metric(double per_sec, struct stat_metric *m)
{
	static const struct { double at; char unit; } units[] = { { 1e9, 'G' }, { 1e6, 'M' },
								 { 1e3, 'K' } };

	m->fmt = "%8.3f";
	m->value = per_sec;
	snprintf(m->unit, sizeof(m->unit), "/sec");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (per_sec > units[i].at) {
			m->value = per_sec / units[i].at;
			snprintf(m->unit, sizeof(m->unit), "%c/sec", units[i].unit);
			break;
		}
	}
}

const char *stat_time_stamp(__u64 ns, char *buf, size_t size)
{
	snprintf(buf, size, "%6llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
		 (unsigned long long)(ns % 1000000000ULL));
	return buf;
}

static const char *state_text(enum stat_row_state s)
{
	return s == STAT_NOT_SUPPORTED ? "<not supported>" : "<not counted>";
}

static void print_aligned(FILE *out, const struct stat_row *row)
{
	int n;

	if (row->time)
		fprintf(out, "%s ", row->time);
	if (row->prefix && row->prefix_cpus)
		fprintf(out, "%-15s %4d ", row->prefix, row->prefix_cpus);
	else if (row->prefix)
		fprintf(out, "%-10s ", row->prefix);
	if (row->state != STAT_COUNTED) {
		fprintf(out, "%*s %-*s %-*s%*s", VALUE_WIDTH, state_text(row->state), UNIT_WIDTH,
			row->clock ? "msec" : "", NAME_WIDTH_UNCOUNTED, row->name, METRIC_LEN, "");
	} else {
		fprintf(out, row->clock ? "%'*.2f" : "%'*.0f", VALUE_WIDTH, row->value);
		fprintf(out, " %-*s %-*s", UNIT_WIDTH, row->clock ? "msec" : "", NAME_WIDTH,
			row->name);
		if (row->metric.fmt) {
			n = fprintf(out, " # ");
			n += fprintf(out, row->metric.fmt, row->metric.value);
			fprintf(out, " %-*s", METRIC_LEN - n - 1 > 0 ? METRIC_LEN - n - 1 : 0,
				row->metric.unit);
		} else {
			fprintf(out, "%*s", METRIC_LEN, "");
		}
	}
	if (row->noise && row->noise_pct)
		fprintf(out, "  ( +-%6.2f%% )", row->noise_pct);
	if (row->state == STAT_COUNTED && row->run_pct < 100)
		fprintf(out, "  (%.2f%%)", row->run_pct);
	fputc('\n', out);
}

/* A derived figure's value in -x output: as formatted, without padding or trailing text. */
static void csv_metric_value(const struct stat_metric *m, char *buf, size_t size)
{
	char tmp[64], *v = tmp, *end;

	snprintf(tmp, sizeof(tmp), m->fmt, m->value);
	while (*v == ' ')
		v++;
	for (end = v; isdigit((unsigned char)*end) || *end == '.'; end++)
		;
	*end = 0;
	snprintf(buf, size, "%s", v);
}

static void print_separated(FILE *out, const char *sep, const struct stat_row *row)
{
	char metric[64] = "";

	if (row->time)
		fprintf(out, "%s%s", row->time, sep);
	if (row->prefix)
		fprintf(out, "%s%s", row->prefix, sep);
	if (row->prefix && row->prefix_cpus)
		fprintf(out, "%d%s", row->prefix_cpus, sep);
	if (row->state != STAT_COUNTED)
		fprintf(out, "%s", state_text(row->state));
	else
		fprintf(out, row->clock ? "%.2f" : "%.0f", row->value);
	fprintf(out, "%s%s%s%s", sep, row->clock ? "msec" : "", sep, row->name);
	if (row->noise)
		fprintf(out, "%s%.2f%%", sep, row->noise_pct);
	fprintf(out, "%s%llu%s%.2f", sep, (unsigned long long)row->run_ns, sep, row->run_pct);
	if (row->metric.fmt && row->state == STAT_COUNTED)
		csv_metric_value(&row->metric, metric, sizeof(metric));
	fprintf(out, "%s%s%s%s\n", sep, metric, sep,
		row->metric.fmt && row->state == STAT_COUNTED ? row->metric.unit : "");
}

void stat_print_row(FILE *out, const char *sep, const struct stat_row *row)
{
	if (sep)
		print_separated(out, sep, row);
	else
		print_aligned(out, row);
}

void stat_print_header(FILE *out, const char *what, int runs)
{
	fprintf(out, "\n Performance counter stats for %s", what);
	if (runs > 1)
		fprintf(out, " (%d runs)", runs);
	fprintf(out, ":\n\n");
}

/* Digits after the point: down to the error's first significant one (perf's get_precision). */
static int precision_of(double error)
{
	if (error > 1 || error <= 0)
		return 0;
	return (int)lround(ceil(-log10(error)));
}

void stat_print_footer(FILE *out, const struct run_stats *elapsed, double user_s, double sys_s)
{
	fprintf(out, "\n");
	if (elapsed->n <= 1) {
		fprintf(out, " %17.9f seconds time elapsed\n", elapsed->mean);
		if (user_s >= 0 && sys_s >= 0)
			/* perf ends this one with a blank line more */
			fprintf(out, "\n %17.9f seconds user\n %17.9f seconds sys\n\n", user_s,
				sys_s);
	} else {
		double sd = run_stats_stddev(elapsed);
		int prec = precision_of(sd) + 2;

		fprintf(out, " %17.*f +- %.*f seconds time elapsed", prec, elapsed->mean, prec, sd);
		if (run_stats_noise_pct(elapsed))
			fprintf(out, "  ( +-%6.2f%% )", run_stats_noise_pct(elapsed));
		fprintf(out, "\n");
	}
	fprintf(out, "\n");
}

void stat_print_interval_heading(FILE *out, const char *prefix_title)
{
	/* the counts column ends where the rows' values do: after the prefix's 11 characters */
	int width = prefix_title ? 11 + VALUE_WIDTH - (int)strlen(prefix_title) : VALUE_WIDTH;

	/* a unit's rows: its name in 16 characters and its CPUs in 4 ("core" then "cpus", as perf) */
	if (prefix_title && strcmp(prefix_title, "CPU")) {
		fprintf(out, "#           time %-15s %4s%*s unit events\n", prefix_title, "cpus",
			VALUE_WIDTH + 1, "counts");
		return;
	}

	fprintf(out, "#           time %s%*s unit events\n", prefix_title ?: "", width, "counts");
}
