// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out/difftable.h"

/* A frame name's totals in one profile: where it is on the stack (once per sample, however
 * deep it recurses), and where it is the leaf. */
struct side {
	__u64 *total, *self, sum;
	size_t *seen; /* the last sample that counted it, + 1 */
};

struct row {
	__u32 id;
	double before, after, self_before, self_after;
};

static int count_side(struct stack_names *names, struct side *sd, const struct stack_sample *s,
		      size_t n, size_t cap)
{
	char buf[512];

	for (size_t i = 0; i < n; i++) {
		for (__u32 j = 0; j < s[i].nr_frames; j++) {
			const char *name = stack_frame_name(stack_sample_frame(&s[i], j), false, buf,
							    sizeof(buf));
			int id = stack_names__intern(names, name, strlen(name));

			if (id < 0)
				return id;
			if ((size_t)id >= cap)
				return -E2BIG;
			if (sd->seen[id] != i + 1)
				sd->total[id] += s[i].value;
			sd->seen[id] = i + 1;
			if (j + 1 == s[i].nr_frames)
				sd->self[id] += s[i].value;
		}
		sd->sum += s[i].value;
	}
	return 0;
}

static int side_alloc(struct side *sd, size_t cap)
{
	sd->total = calloc(cap, sizeof(*sd->total));
	sd->self = calloc(cap, sizeof(*sd->self));
	sd->seen = calloc(cap, sizeof(*sd->seen));
	return sd->total && sd->self && sd->seen ? 0 : -ENOMEM;
}

static void side_free(struct side *sd)
{
	free(sd->total);
	free(sd->self);
	free(sd->seen);
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx = fabs(x->after - x->before), dy = fabs(y->after - y->before);
	double sx = fabs(x->self_after - x->self_before), sy = fabs(y->self_after - y->self_before);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	if (sx != sy)
		return sx < sy ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static double share(__u64 v, __u64 sum)
{
	return sum ? 100.0 * v / sum : 0;
}

int difftable_write(FILE *out, const struct stack_sample *before, size_t nr_before,
		    const struct stack_sample *after, size_t nr_after,
		    const struct difftable_opts *o)
{
	struct stack_names *names = stack_names__new();
	struct side b = {}, a = {};
	struct row *rows = NULL;
	size_t cap = 1, nr = 0;
	int err, limit = o->rows > 0 ? o->rows : 20;
	const char *unit = o->count_name ? o->count_name : "samples";

	/* every frame of both profiles is at most one name each */
	for (size_t i = 0; i < nr_before; i++)
		cap += before[i].nr_frames;
	for (size_t i = 0; i < nr_after; i++)
		cap += after[i].nr_frames;
	err = names ? 0 : -ENOMEM;
	err = err ?: side_alloc(&b, cap);
	err = err ?: side_alloc(&a, cap);
	err = err ?: count_side(names, &b, before, nr_before, cap);
	err = err ?: count_side(names, &a, after, nr_after, cap);
	rows = err ? NULL : calloc(stack_names__count(names) ?: 1, sizeof(*rows));
	if (err || !rows) {
		err = err ?: -ENOMEM;
		goto cleanup;
	}
	for (__u32 id = 0; id < stack_names__count(names); id++) {
		struct row r = { id, share(b.total[id], b.sum), share(a.total[id], a.sum),
				 share(b.self[id], b.sum), share(a.self[id], a.sum) };

		/* under 0.005 points: the same, as printed */
		if (fabs(r.after - r.before) >= 0.005 || fabs(r.self_after - r.self_before) >= 0.005)
			rows[nr++] = r;
	}
	qsort(rows, nr, sizeof(*rows), cmp_row);
	fprintf(out, "# Before: %llu %s (%s)\n# After:  %llu %s (%s)\n",
		(unsigned long long)b.sum, unit, o->before_name ? o->before_name : "before",
		(unsigned long long)a.sum, unit, o->after_name ? o->after_name : "after");
	fprintf(out, "# Shares of each profile's total; frames by the change of their total share, "
		"%zu of %zu changed%s\n#\n", nr < (size_t)limit ? nr : (size_t)limit, nr,
		nr > (size_t)limit ? " shown" : "");
	fprintf(out, "# %26s  %26s\n", "Total (with callees)", "Self");
	fprintf(out, "#  %7s  %7s  %8s  %7s  %7s  %8s  Frame\n", "Before", "After", "Change",
		"Before", "After", "Change");
	for (size_t i = 0; i < nr && i < (size_t)limit; i++)
		fprintf(out, "  %6.2f%%  %6.2f%%  %+7.2f%%  %6.2f%%  %6.2f%%  %+7.2f%%  %s\n",
			rows[i].before, rows[i].after, rows[i].after - rows[i].before,
			rows[i].self_before, rows[i].self_after,
			rows[i].self_after - rows[i].self_before,
			stack_names__str(names, rows[i].id));
	if (!nr)
		fputs("# no frame's share changed\n", out);
	err = stack_output_done(out);
cleanup:
	free(rows);
	side_free(&a);
	side_free(&b);
	stack_names__free(names);
	return err;
}
