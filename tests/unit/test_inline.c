/* Inlined frames and source lines through the pure parts: the aggregation (lines tell frames
 * apart, the leaf's address kept), the report (inlined rows with their lines, --srcline), folded
 * (--inline, _[i], :LINE), and pprof (one location per inline chain, its lines innermost first)
 * read back into the same frames. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "in/profile_in.h"
#include "out/folded.h"
#include "out/pprof.h"
#include "out/report.h"
#include "sym/stackagg.h"
#include "test.h"

#define PROG "/usr/bin/prog"
/* main -> work (compiled) -> mix (inlined into work at line 32), the leaf at line `line` */
#define WORK(addr_, line_) { .name = "work", .module = PROG, .addr = (addr_), .offset = (addr_), \
			     .srcfile = "/src/prog.c", .line = (line_) }
#define MIX(addr_, line_) { .name = "mix", .module = PROG, .addr = (addr_), .offset = (addr_), \
			    .srcfile = "/src/prog.c", .line = (line_), .inlined = true }

static struct frame f1[] = { { .name = "main", .module = PROG, .addr = 0x1000, .offset = 0x1000,
			       .srcfile = "/src/prog.c", .line = 78 },
			     WORK(0x1200, 32), MIX(0x1200, 18) };
static struct frame f2[] = { { .name = "main", .module = PROG, .addr = 0x1000, .offset = 0x1000,
			       .srcfile = "/src/prog.c", .line = 78 },
			     WORK(0x1210, 32), MIX(0x1210, 19) };
static struct frame f3[] = { { .name = "main", .module = PROG, .addr = 0x1000, .offset = 0x1000,
			       .srcfile = "/src/prog.c", .line = 78 },
			     WORK(0x1220, 32), MIX(0x1220, 19) };

static struct stack_sample samples[] = {
	{ .comm = "prog", .pid = 1, .tid = 1, .value = 6, .nr_frames = 3, .frames = f1 },
	{ .comm = "prog", .pid = 1, .tid = 1, .value = 4, .nr_frames = 3, .frames = f2 },
	{ .comm = "prog", .pid = 1, .tid = 1, .value = 2, .nr_frames = 3, .frames = f3 },
};

static char *written(int (*fn)(FILE *, const void *), const void *arg)
{
	FILE *f = tmpfile();
	char *s;

	if (!f)
		return NULL;
	fn(f, arg);
	s = test_slurp(f);
	fclose(f);
	return s;
}

static int write_report(FILE *f, const void *o)
{
	return stack_agg_report_write(f, NULL, samples, 3, o);
}

static int write_folded(FILE *f, const void *o)
{
	return folded_write(f, samples, 3, o);
}

static void test_report_inlined_rows(void)
{
	struct report_opts o = { .children = false, .sort = REPORT_SORT_SYM };
	char *s = written(write_report, &o);

	CHECK(s && strstr(s, "[.] mix (inlined)  prog.c:18-19\n"));
	/* a compiled function's row is as before: its symbol says where it is */
	CHECK(s && !strstr(s, "work  prog.c"));
	free(s);
	o.srcline = true;
	s = written(write_report, &o);
	CHECK(s && strstr(s, "[.] mix (inlined) prog.c:18\n"));
	CHECK(s && strstr(s, "[.] mix (inlined) prog.c:19\n"));
	free(s);
}

static void test_folded_inline_srcline(void)
{
	struct folded_opts o = {};
	char *s = written(write_folded, &o);

	CHECK_STR(s, "prog;main;work 12\n");
	free(s);
	o.inline_frames = true;
	o.srcline = true;
	o.annotate_kernel = true;
	s = written(write_folded, &o);
	CHECK_STR(s, "prog;main:78;work:32;mix_[i]:18 6\nprog;main:78;work:32;mix_[i]:19 6\n");
	free(s);
}

/* The aggregation: frames at other lines are other frames; with the leaf's addresses kept, the
 * leaf and the frame it is inlined into keep their own. */
static void test_agg_lines_and_leaf_addrs(void)
{
	struct stack_agg *a = stack_agg__new(false);
	const struct stack_sample *out;
	size_t n = 0;

	for (int i = 0; i < 3; i++)
		CHECK_INT(stack_agg__add(a, &samples[i]), 0);
	out = stack_agg__samples(a, &n);
	CHECK_INT(n, 2); /* lines 18 and 19 */
	stack_agg__free(a);

	a = stack_agg__new(false);
	stack_agg__keep_leaf_addrs(a);
	for (int i = 0; i < 3; i++)
		CHECK_INT(stack_agg__add(a, &samples[i]), 0);
	out = stack_agg__samples(a, &n);
	CHECK_INT(n, 3);
	for (size_t i = 0; out && i < n; i++) {
		const struct frame *w = stack_sample_frame(&out[i], 1), *m = stack_sample_frame(&out[i], 2);

		CHECK(w->addr == m->addr);
		CHECK(m->inlined && !w->inlined);
	}
	stack_agg__free(a);
}

static struct stack_sample bare[3]; /* samples[], the compiled functions' lines left out */

static int write_report_bare(FILE *f, const void *o)
{
	return stack_agg_report_write(f, NULL, bare, 3, o);
}

static int write_folded_bare(FILE *f, const void *o)
{
	return folded_write(f, bare, 3, o);
}

/* Whether the writers one and other write the same with options o. */
static bool same_output(int (*one)(FILE *, const void *), int (*other)(FILE *, const void *),
			const void *o)
{
	char *x = written(one, o), *y = written(other, o);
	bool same = x && y && !strcmp(x, y);

	free(x);
	free(y);
	return same;
}

/* Without --srcline (nor a pprof), the resolver gives only inlined frames their lines: the
 * compiled functions' frames without theirs make the same report and folded stacks. */
static void test_lines_of_inlined_only(void)
{
	static struct frame g[3][3];
	struct report_opts ro = { .children = true, .sort = REPORT_SORT_SYM };
	struct folded_opts fo = { .inline_frames = true, .annotate_kernel = true };

	for (int i = 0; i < 3; i++) {
		memcpy(g[i], samples[i].frames, sizeof(g[i]));
		for (int j = 0; j < 3; j++)
			if (!g[i][j].inlined) {
				g[i][j].srcfile = NULL;
				g[i][j].line = 0;
			}
		bare[i] = samples[i];
		bare[i].frames = g[i];
	}
	CHECK(same_output(write_report, write_report_bare, &ro));
	CHECK(same_output(write_folded, write_folded_bare, &fo));
}

/* pprof: work and mix are one location with two lines; read back, two frames again. */
static void test_pprof_round_trip(void)
{
	struct pprof_meta m;
	struct profile_in *in = profile_in__new();
	const struct stack_sample *back;
	void *buf = NULL;
	size_t size = 0, n = 0;
	bool seen18 = false;

	pprof_meta_counted(&m, "cpu", "nanoseconds", 10000000);
	CHECK_INT(pprof_encode(samples, 3, &m, &buf, &size), 0);
	CHECK_INT(profile_in__read_mem(in, buf, size, "inline"), 0);
	back = profile_in__samples(in, &n);
	CHECK(n >= 2);
	for (size_t i = 0; back && i < n; i++) {
		const struct frame *w, *x;

		CHECK_INT(back[i].nr_frames, 3);
		if (back[i].nr_frames != 3)
			continue;
		w = stack_sample_frame(&back[i], 1);
		x = stack_sample_frame(&back[i], 2);
		CHECK_STR(w->name, "work");
		CHECK(!w->inlined && w->line == 32);
		CHECK_STR(x->name, "mix");
		CHECK(x->inlined);
		CHECK_STR(x->srcfile, "/src/prog.c");
		seen18 |= x->line == 18 && back[i].value == 6;
	}
	CHECK(seen18);
	free(buf);
	profile_in__free(in);
}

int main(void)
{
	RUN(test_report_inlined_rows);
	RUN(test_folded_inline_srcline);
	RUN(test_agg_lines_and_leaf_addrs);
	RUN(test_lines_of_inlined_only);
	RUN(test_pprof_round_trip);
	TESTS_DONE();
}
