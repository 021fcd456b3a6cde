/* The user-space side of draining: the aggregation by (command, symbolized stack), and the hash
 * table whose deletions let processes be forgotten. */
#include <errno.h>
#include <stdint.h>
#include "core/hashtab.h"
#include "out/flamegraph.h"
#include "out/folded.h"
#include "out/pprof.h"
#include "out/report.h"
#include "sym/stackagg.h"
#include "test.h"

static struct stack_sample sample(const char *comm, __u32 pid, struct frame *f, __u32 n,
				  __u64 value)
{
	struct stack_sample s = { .pid = pid, .tid = pid, .value = value, .frames = f,
				  .nr_frames = n };

	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	return s;
}

/* A fork storm of one program: every process's identical stack is one entry; other functions
 * and other commands stay apart. */
static void test_agg_merges_by_command_and_stack(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char main_name[] = "main", work[] = "work", other[] = "other", mod[] = "/usr/bin/ls";
	struct frame f1[] = { { .name = main_name, .module = mod, .addr = 0x1000 },
			      { .name = work, .module = mod, .addr = 0x2000 } };
	struct frame f2[] = { { .name = main_name, .module = mod, .addr = 0x1008 },
			      { .name = work, .module = mod, .addr = 0x2010 } };
	struct frame f3[] = { { .name = main_name, .module = mod },
			      { .name = other, .module = mod } };
	struct frame u1[] = { { .module = mod, .offset = 0x10 } }, u2[] = { { .module = mod,
									      .offset = 0x20 } };
	const struct stack_sample *out;
	size_t n;

	CHECK(a);
	for (__u32 pid = 100; pid < 400; pid++) {
		struct stack_sample s = sample("ls", pid, pid & 1 ? f1 : f2, 2, 1);

		CHECK_INT(stack_agg__add(a, &s), 0);
	}
	struct stack_sample s3 = sample("ls", 5, f3, 2, 7), s4 = sample("cc1", 6, f1, 2, 2);
	struct stack_sample s5 = sample("ls", 7, u1, 1, 1), s6 = sample("ls", 8, u2, 1, 1);
	struct stack_sample s7 = sample("ls", 9, u1, 1, 4);

	CHECK_INT(stack_agg__add(a, &s3), 0);
	CHECK_INT(stack_agg__add(a, &s4), 0);
	CHECK_INT(stack_agg__add(a, &s5), 0);
	CHECK_INT(stack_agg__add(a, &s6), 0);
	CHECK_INT(stack_agg__add(a, &s7), 0);
	/* the caller's strings may go: the aggregation holds its own */
	strcpy(main_name, "XXXX");
	strcpy(mod, "/gone/gone!");
	out = stack_agg__samples(a, &n);
	CHECK_INT(n, 4);
	CHECK_INT(out[0].value, 300);
	CHECK_STR(out[0].comm, "ls");
	CHECK_STR(stack_sample_frame(&out[0], 0)->name, "main");
	CHECK_STR(stack_sample_frame(&out[0], 1)->module, "/usr/bin/ls");
	CHECK(out[0].frames == NULL); /* ids into one table: no frame copied */
	CHECK_INT(out[1].value, 7);
	CHECK_STR(out[2].comm, "cc1");
	/* unresolved frames of a file are one frame, without an address: "[ls]" */
	CHECK_INT(out[3].value, 6);
	CHECK_INT(stack_sample_frame(&out[3], 0)->offset, 0);
	/* the writers read frames through the ids */
	{
		struct folded_opts fo = {};
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK_INT(folded_write(f, out, n, &fo), 0);
		fclose(f);
		CHECK(strstr(buf, "ls;main;work 300\n") != NULL);
		CHECK(strstr(buf, "cc1;main;work 2\n") != NULL);
		CHECK(strstr(buf, "ls;[ls] 6\n") != NULL);
		free(buf);
	}
	stack_agg__free(a);
}

static void test_agg_by_tid(void)
{
	struct stack_agg *a = stack_agg__new(true);
	struct frame f[] = { { .name = "f", .module = "m" } };
	struct stack_sample x = sample("t", 1, f, 1, 1), y = sample("t", 2, f, 1, 1);
	size_t n;

	CHECK_INT(stack_agg__add(a, &x), 0);
	CHECK_INT(stack_agg__add(a, &y), 0);
	CHECK_INT(stack_agg__add(a, &x), 0);
	stack_agg__samples(a, &n);
	CHECK_INT(n, 2);
	stack_agg__free(a);
}

/* Deletions against a plain array as the reference, with keys that collide in the table. */
/* The drain's memo path: frames given as ids of the aggregation's own table (from
 * stack_agg__frame_id()) make the same entries as the frames themselves. */
static void test_agg_own_ids(void)
{
	struct stack_agg *a = stack_agg__new(false), *b = stack_agg__new(false);
	char main_name[] = "main", work[] = "work", mod[] = "/usr/bin/cc1", k[] = "[kernel.kallsyms]";
	struct frame f[] = { { .name = main_name, .module = mod, .addr = 0x1000 },
			     { .name = work, .module = mod, .addr = 0x2000 },
			     { .module = mod, .offset = 0x30, .addr = 0x3030 },
			     { .name = work, .module = k, .kernel = true, .addr = 0xffff1000 } };
	const struct stack_sample *oa, *ob;
	size_t na, nb;
	__u32 ids[4];

	CHECK(a && b);
	for (int round = 0; round < 3; round++) {
		struct stack_sample s = sample(round == 2 ? "as" : "cc1", 10 + round, f, 4, 1 + round);

		/* a: frames; b: ids, looked up afresh each round as a new drain would */
		CHECK_INT(stack_agg__add(a, &s), 0);
		for (int i = 0; i < 4; i++) {
			long id = stack_agg__frame_id(b, &f[i]);

			CHECK(id >= 0);
			ids[i] = id;
		}
		s.frames = NULL;
		s.frame_ids = s.waker_frame_ids = ids;
		s.frame_table = stack_agg__frames(b);
		CHECK_INT(stack_agg__add_own(b, &s), 0);
	}
	oa = stack_agg__samples(a, &na);
	ob = stack_agg__samples(b, &nb);
	CHECK_INT(na, 2);
	CHECK_INT(nb, na);
	for (size_t i = 0; i < na && i < nb; i++) {
		CHECK_STR(oa[i].comm, ob[i].comm);
		CHECK_INT(oa[i].value, ob[i].value);
		CHECK_INT(oa[i].nr_frames, ob[i].nr_frames);
		for (__u32 j = 0; j < oa[i].nr_frames && j < ob[i].nr_frames; j++) {
			const struct frame *x = stack_sample_frame(&oa[i], j), *y = stack_sample_frame(&ob[i], j);

			CHECK(x->kernel == y->kernel && x->offset == y->offset && x->addr == y->addr);
			CHECK_STR(x->module, y->module);
			CHECK(x->name ? y->name && !strcmp(x->name, y->name) : !y->name);
		}
	}
	CHECK_INT(oa[0].value, 3); /* cc1: rounds 0 and 1 */
	CHECK(!stack_agg__exact_leaves(b));
	stack_agg__free(a);
	stack_agg__free(b);
}

/* Stacks as paths of one tree: a stack that is another's prefix, the same frames with and
 * without a waker (and the waker's frames apart from the sleeper's), a stack without frames,
 * each an entry of its own, in the order first seen, each read back whole; an add after the
 * samples were read goes on where they left off. */
static void test_agg_paths(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char m[] = "main", w[] = "work", x[] = "x", mod[] = "/bin/p";
	struct frame f[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
			     { .name = x, .module = mod } };
	struct stack_sample s1 = sample("p", 1, f, 3, 1), s2 = sample("p", 2, f, 2, 2),
			    s3 = sample("p", 3, f, 2, 4), s4 = sample("p", 4, NULL, 0, 8),
			    s5 = sample("p", 5, f, 1, 16);
	const struct stack_sample *out;
	struct stack_agg_stats st;
	size_t n;

	CHECK(a);
	/* s3: main;work, woken by q in main;work;x */
	s3.waker_frames = f;
	s3.nr_waker_frames = 3;
	strcpy(s3.waker_comm, "q");
	const struct stack_sample *adds[] = { &s1, &s2, &s3, &s4, &s1, &s5, &s2 };
	/* value, frames, waker frames of each entry after the first five adds, then all */
	const __u64 want[2][5][3] = { { { 2, 3, 0 }, { 2, 2, 0 }, { 4, 2, 3 }, { 8, 0, 0 } },
				      { { 2, 3, 0 }, { 4, 2, 0 }, { 4, 2, 3 }, { 8, 0, 0 },
					{ 16, 1, 0 } } };

	for (int round = 0, i = 0; round < 2; round++) {
		for (; i < (round ? 7 : 5); i++)
			CHECK_INT(stack_agg__add(a, adds[i]), 0);
		out = stack_agg__samples(a, &n);
		CHECK_INT(n, round ? 5 : 4);
		for (size_t k = 0; k < n; k++) {
			CHECK_INT(out[k].value, want[round][k][0]);
			CHECK_INT(out[k].nr_frames, want[round][k][1]);
			CHECK_INT(out[k].nr_waker_frames, want[round][k][2]);
		}
	}
	CHECK_STR(stack_sample_frame(&out[0], 2)->name, "x");
	CHECK_STR(out[2].waker_comm, "q");
	CHECK_STR(stack_sample_frame(&out[2], 1)->name, "work");
	CHECK_STR(stack_sample_waker_frame(&out[2], 0)->name, "main");
	CHECK_STR(stack_sample_waker_frame(&out[2], 2)->name, "x");
	CHECK_INT(out[3].pid, 4);
	stack_agg__stats(a, &st);
	/* a context node for "p" and one for "p" woken by "q", main;work;x under each, the mark */
	CHECK_INT(st.nodes, 2 + 3 + 1 + 2 + 3);
	CHECK_INT(st.ids, 3 + 2 + 5 + 0 + 1);
	stack_agg__free(a);
}

/* The report of a tree as it walks it (report_write_tree(): no stack copied out) against the
 * report of the same stacks as samples, for each kind of tree: recursion, an empty stack, a
 * waker, two events. */
static char *tree_report(const struct stack_tree *t, const struct stack_sample *s, size_t n,
			 int event, const struct report_opts *o)
{
	FILE *f = tmpfile();
	char *text = NULL;

	if (f && !(t ? report_write_tree(f, NULL, t, event, o) : stack_agg_report_write(f, NULL, s, n, o)))
		text = test_slurp(f);
	if (f)
		fclose(f);
	return text;
}

static void test_agg_tree_walk(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char m[] = "main", fn[] = "f", g[] = "g", leaf[] = "leaf", mod[] = "/bin/p";
	struct frame f[] = { { .name = m, .module = mod }, { .name = fn, .module = mod },
			     { .name = fn, .module = mod }, { .name = g, .module = mod },
			     { .name = leaf, .module = mod } };
	struct frame r[] = { { .name = m, .module = mod }, { .name = g, .module = mod },
			     { .name = fn, .module = mod } };
	struct stack_sample s[] = { sample("p", 1, f, 5, 5), sample("p", 2, f, 2, 3),
				    sample("p", 3, r, 3, 2), sample("p", 4, NULL, 0, 1),
				    sample("q", 5, f, 4, 7), sample("p", 6, r, 2, 4) };
	struct report_opts o = { .children = true, .call_graph = true };
	struct stack_tree t;
	size_t i, n = sizeof(s) / sizeof(s[0]);
	char *want, *got;

	CHECK(a);
	if (!a)
		return;
	s[5].waker_frames = f;
	s[5].nr_waker_frames = 3;
	strcpy(s[5].waker_comm, "w");
	s[4].event = 1;
	for (i = 0; i < n; i++)
		CHECK_INT(stack_agg__add(a, &s[i]), 0);
	stack_agg__tree(a, &t);
	/* nodes after their parents; each entry's path read upwards gives its sample's frames */
	CHECK_INT(t.nr_entries, n);
	for (i = 0; i < t.nr_nodes; i++)
		CHECK(t.nodes[i].parent == STACK_TREE_NONE || t.nodes[i].parent < i);
	for (i = 0; i < n; i++) {
		__u32 node = t.entries[i].node, k = s[i].nr_frames + s[i].nr_waker_frames +
						    (s[i].nr_waker_frames ? 1 : 0);

		CHECK_INT(t.entries[i].value, s[i].value);
		for (; t.nodes[node].parent != STACK_TREE_NONE; node = t.nodes[node].parent) {
			const struct frame *want_f;

			CHECK(k > 0);
			if (!k)
				break;
			k--;
			if (k == s[i].nr_frames) {
				CHECK(t.nodes[node].frame == STACK_TREE_WAKER);
				continue;
			}
			want_f = k < s[i].nr_frames ? &s[i].frames[k] :
			       &s[i].waker_frames[k - s[i].nr_frames - 1];
			CHECK_STR(t.frames[t.nodes[node].frame].name, want_f->name);
		}
		CHECK_INT(k, 0);
		CHECK_STR(t.ctxs[t.nodes[node].frame].comm, s[i].comm);
		CHECK_INT(t.ctxs[t.nodes[node].frame].event, s[i].event);
	}
	/* each kind of report: the tree's equals the samples' */
	for (int mode = 0; mode < 4; mode++) {
		o.children = mode != 1;
		o.percent_limit = mode == 2 ? 30 : 0;
		o.sort = mode == 3 ? REPORT_SORT_SYM : 0;
		want = tree_report(NULL, s, n, -1, &o);
		got = tree_report(&t, NULL, 0, -1, &o);
		CHECK(want && got);
		if (want && got)
			CHECK_STR(got, want);
		free(want);
		free(got);
	}
	/* folded stacks: the tree's, read one stack at a time, equal the samples' */
	for (int mode = 0; mode < 3; mode++) {
		static const char *const events[] = { "cpu", "faults" };
		struct folded_opts fo = { .annotate_kernel = mode == 1, .with_tid = mode == 2,
					  .event_root = mode == 1 ? events : NULL };
		FILE *x = tmpfile(), *y = tmpfile();

		CHECK(x && y);
		if (!x || !y)
			break;
		CHECK_INT(folded_write(x, s, n, &fo), 0);
		CHECK_INT(folded_write_tree(y, &t, &fo), 0);
		want = test_slurp(x);
		got = test_slurp(y);
		CHECK(want && got && strstr(got, "--;") && strstr(got, "main;f;f;g;leaf 5\n"));
		if (want && got)
			CHECK_STR(got, want);
		free(want);
		free(got);
		fclose(x);
		fclose(y);
	}
	/* the recursion below the outermost f; the empty stack; the waker; event 1 alone */
	o = (struct report_opts){ .children = true, .call_graph = true };
	got = tree_report(&t, NULL, 0, -1, &o);
	CHECK(got && strstr(got, "[.] f\n"
				 "            |\n"
				 "            ---f\n"
				 "               |\n"
				 "                --22.73%--f\n"
				 "                          g\n"
				 "                          leaf\n"));
	CHECK(got && strstr(got, "[.] [unknown]\n"));
	CHECK(got && strstr(got, "--18.18%--woken by w\n"));
	free(got);
	got = tree_report(&t, NULL, 0, 1, &o);
	CHECK(got && strstr(got, "# Samples: 7\n") && strstr(got, "q        p") &&
	      !strstr(got, "woken by") && !strstr(got, "[unknown]"));
	free(got);
	stack_agg__free(a);
}

/* At the bound on nodes, a new stack is kept under the longest path of it there is, its waker's
 * dropped, and counted; stacks already known still add where they are.  A frame no node could
 * hold is not added to the frame table (nor its strings): with ids of the table's own, it is
 * STACK_AGG_NO_FRAME, where the stack is cut the same way. */
static void test_agg_bound(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char m[] = "main", w[] = "work", x[] = "x", y[] = "y", mod[] = "/bin/p";
	struct frame f[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
			     { .name = x, .module = mod } };
	struct frame g[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
			     { .name = y, .module = mod } };
	struct stack_sample s1 = sample("p", 1, f, 3, 1), s2 = sample("p", 2, g, 3, 2),
			    s3 = sample("p", 3, f, 2, 4), s4 = sample("p", 4, f, 3, 8);
	const struct stack_sample *out;
	struct stack_agg_stats st;
	size_t n;

	CHECK(a);
	if (!a)
		return;
	/* the context node and main;work;x: four nodes */
	stack_agg__bound(a, 4);
	CHECK_INT(stack_agg__add(a, &s1), 0);
	CHECK_INT(stack_agg__add(a, &s2), 0); /* y needs a fifth: kept at main;work */
	CHECK_INT(stack_agg__add(a, &s3), 0);
	/* woken: another context node, and no room for its frames */
	s4.waker_frames = g;
	s4.nr_waker_frames = 3;
	strcpy(s4.waker_comm, "q");
	CHECK_INT(stack_agg__add(a, &s4), 0);
	CHECK_INT(stack_agg__frame_id(a, &g[2]), -ENOSPC);
	CHECK_INT(stack_agg__frame_id(a, &f[1]), 1);
	{
		/* main;work;<refused>: kept at main;work, as s2 */
		__u32 ids[] = { 0, 1, STACK_AGG_NO_FRAME };
		struct stack_sample own = { .nr_frames = 3, .frame_ids = ids, .value = 16,
					    .frame_table = stack_agg__frames(a) };

		strcpy(own.comm, "p");
		CHECK_INT(stack_agg__add_own(a, &own), 0);
	}
	out = stack_agg__samples(a, &n);
	stack_agg__stats(a, &st);
	CHECK_INT(st.frames, 3); /* main, work, x: y was met at the bound */
	CHECK_INT(st.nodes, 4 + 1); /* s4's other context: its own node, its frames none */
	CHECK_INT(st.cut_samples, 2 + 8 + 16);
	CHECK_INT(st.cut_adds, 3);
	CHECK_INT(st.max_nodes, 4);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_INT(out[0].value, 1);
		CHECK_INT(out[1].value, 2 + 4 + 16); /* s2 and own cut to main;work, s3's stack */
		CHECK_INT(out[1].nr_frames, 2);
		CHECK_STR(stack_sample_frame(&out[1], 1)->name, "work");
		CHECK_INT(out[2].value, 8);   /* s4: no room under its context */
		CHECK_INT(out[2].nr_frames + out[2].nr_waker_frames, 0);
	}
	CHECK_INT(stack_samples_total(out, n), 1 + 2 + 4 + 8 + 16);
	stack_agg__free(a);
}

static char *svg_of(const struct stack_tree *t, const struct stack_sample *s, size_t n,
		    const struct flamegraph_opts *o)
{
	FILE *f = tmpfile();
	char *text = NULL;

	if (f && !(t ? flamegraph_write_tree(f, t, o) : flamegraph_write(f, s, n, o)))
		text = test_slurp(f);
	if (f)
		fclose(f);
	return text;
}

/* The SVG and pprof writers read a tree's stacks one at a time where they are: what they write
 * is what they write of the samples the tree's entries are (stack_agg__samples()), on stacks
 * with shared prefixes, recursion, inlined frames, a waker, a second event, and paths cut by the
 * bound on nodes. */
static void test_agg_tree_writers(void)
{
	char m[] = "main", w[] = "work", leaf[] = "leaf", other[] = "other", rec[] = "rec";
	char inl[] = "inl", x[] = "x", dup[] = "dup", zzz[] = "zzz", aaa[] = "aaa";
	char wm[] = "wmain", wake[] = "wake", mod[] = "/bin/p", k[] = "[kernel.kallsyms]";
	struct frame f_leaf[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
				  { .name = leaf, .module = mod, .addr = 0x10 } };
	struct frame f_other[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
				   { .name = other, .module = mod } };
	struct frame f_rec[] = { { .name = m, .module = mod }, { .name = rec, .module = mod },
				 { .name = rec, .module = mod }, { .name = rec, .module = mod },
				 { .name = leaf, .module = mod } };
	struct frame f_inl[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
				 { .name = inl, .module = mod, .inlined = true, .line = 7 },
				 { .name = leaf, .module = mod, .inlined = true, .line = 9 } };
	/* the same name, inlined, in the kernel and in user space: one frame of the graph */
	struct frame f_kdup[] = { { .name = m, .module = mod }, { .name = x, .module = mod },
				  { .name = dup, .module = k, .kernel = true, .inlined = true },
				  { .name = zzz, .module = k, .kernel = true } };
	struct frame f_udup[] = { { .name = m, .module = mod }, { .name = x, .module = mod },
				  { .name = dup, .module = mod, .inlined = true },
				  { .name = aaa, .module = mod } };
	struct frame f_wake[] = { { .name = wm, .module = mod }, { .name = wake, .module = mod } };
	struct stack_sample s[] = { sample("p", 1, f_leaf, 3, 5), sample("p", 2, f_other, 3, 3),
				    sample("p", 3, f_rec, 5, 2), sample("p", 4, f_leaf, 2, 4),
				    sample("p", 5, f_inl, 4, 1), sample("p", 6, f_kdup, 4, 2),
				    sample("p", 7, f_udup, 4, 1), sample("q", 8, f_leaf, 3, 6),
				    sample("p", 9, f_leaf, 3, 7), sample("p", 10, f_rec, 4, 0) };
	static const char *const events[] = { "cpu", "faults" };
	struct flamegraph_opts fo[] = { { .title = "t" },
					{ .annotate_kernel = true, .event_root = events },
					{ .no_comm = true, .palette = PALETTE_COOL, .width = 300 } };
	size_t n = sizeof(s) / sizeof(s[0]);
	struct pprof_meta pm;
	char *want, *got;

	s[7].waker_frames = f_wake;
	s[7].nr_waker_frames = 2;
	strcpy(s[7].waker_comm, "w");
	s[8].event = 1;
	pprof_meta_counted(&pm, "cpu", "nanoseconds", 1000);
	pm.labels = PPROF_LABEL_PID | PPROF_LABEL_TID | PPROF_LABEL_COMM;
	/* unbounded; then bounds that cut the recursion, then the waker and more */
	for (size_t bound = 0; bound <= 16; bound += bound ? 4 : 8) {
		struct stack_agg *a = stack_agg__new(false);
		const struct stack_sample *out;
		struct stack_agg_stats st;
		struct stack_tree t;
		void *x_buf = NULL, *y_buf = NULL;
		size_t nr, x_size = 0, y_size = 0;

		CHECK(a);
		if (!a)
			return;
		stack_agg__bound(a, bound);
		for (size_t i = 0; i < n; i++)
			CHECK_INT(stack_agg__add(a, &s[i]), 0);
		stack_agg__stats(a, &st);
		CHECK(bound ? st.cut_samples > 0 : !st.cut_samples);
		stack_agg__tree(a, &t);
		out = stack_agg__samples(a, &nr);
		CHECK_INT(nr, t.nr_entries);
		for (size_t j = 0; j < sizeof(fo) / sizeof(fo[0]); j++) {
			want = svg_of(NULL, out, nr, &fo[j]);
			got = svg_of(&t, NULL, 0, &fo[j]);
			CHECK(want && got && strstr(got, "<title>main ("));
			if (want && got)
				CHECK_STR(got, want);
			if (!bound && !j) {
				/* flamegraph.pl's order and places: a frame's own samples before
				 * its children's, children by name */
				CHECK(got && strstr(got, "data-s=\"2\" data-v=\"20\"><title>work ("));
				CHECK(got && strstr(got, "data-s=\"6\" data-v=\"1\"><title>inl ("));
				CHECK(got && strstr(got, "data-s=\"7\" data-v=\"12\"><title>leaf ("));
				CHECK(got && strstr(got, "data-s=\"22\" data-v=\"3\"><title>dup ("));
				CHECK(got && strstr(got, "data-s=\"25\" data-v=\"6\"><title>q ("));
				CHECK(got && strstr(got, "<title>w (6 samples"));
			}
			free(want);
			free(got);
		}
		CHECK_INT(pprof_encode(out, nr, &pm, &x_buf, &x_size), 0);
		CHECK_INT(pprof_encode_tree(&t, &pm, &y_buf, &y_size), 0);
		CHECK(x_size > 0 && x_size == y_size && x_buf && y_buf &&
		      !memcmp(x_buf, y_buf, x_size));
		free(x_buf);
		free(y_buf);
		stack_agg__free(a);
	}
	/* a frame the first stack made a kernel frame, whose first stack in name order is a user
	 * space one: coloured as that one, whichever came first */
	want = svg_of(NULL, s, n, &fo[1]);
	{
		struct stack_sample t5 = s[5];

		s[5] = s[6];
		s[6] = t5;
	}
	got = svg_of(NULL, s, n, &fo[1]);
	CHECK(want && got && strstr(got, "<title>dup_[i] ("));
	if (want && got)
		CHECK_STR(got, want);
	free(want);
	free(got);
}

/* The report of a tree as a string. */
static char *report_of(const struct stack_tree *t)
{
	struct report_opts o = { .children = true, .call_graph = true };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (report_write_tree(f, NULL, t, -1, &o)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* Sealed, an aggregation reads as before (its report the same bytes) and takes nothing more. */
static void test_agg_seal(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char m[] = "main", w[] = "work", x[] = "x", mod[] = "/bin/p";
	struct frame f1[] = { { .name = m, .module = mod }, { .name = w, .module = mod } };
	struct frame f2[] = { { .name = m, .module = mod }, { .name = x, .module = mod } };
	struct stack_sample s[] = { sample("p", 1, f1, 2, 3), sample("p", 2, f2, 2, 1),
				    sample("q", 3, f1, 2, 2) };
	struct stack_tree t;
	char *want, *got;

	CHECK(a);
	if (!a)
		return;
	for (size_t i = 0; i < 3; i++)
		CHECK_INT(stack_agg__add(a, &s[i]), 0);
	stack_agg__tree(a, &t);
	want = report_of(&t);
	stack_agg__seal(a);
	stack_agg__tree(a, &t);
	got = report_of(&t);
	CHECK(want && got && strstr(got, "[.] work"));
	if (want && got)
		CHECK_STR(got, want);
	CHECK_INT(stack_agg__add(a, &s[0]), -EROFS);
	CHECK_INT(stack_agg__frame_id(a, &f1[0]), -EROFS);
	CHECK_INT(stack_agg__nr_nodes(a), t.nr_nodes);
	free(want);
	free(got);
	stack_agg__free(a);

	/* sums past 32 bits (the report's are 8 bytes a node then): offcpu's microseconds */
	a = stack_agg__new(false);
	CHECK(a);
	if (!a)
		return;
	s[0].value = 5000000000ULL;
	s[1].value = 1000000000ULL;
	for (size_t i = 0; i < 2; i++)
		CHECK_INT(stack_agg__add(a, &s[i]), 0);
	stack_agg__tree(a, &t);
	got = report_of(&t);
	CHECK(got && strstr(got, "# Samples: 6000000000"));
	CHECK(got && strstr(got, "    83.33%    83.33%  p        p              [.] work"));
	CHECK(got && strstr(got, "--83.33%--work"));
	free(got);
	stack_agg__free(a);
}

static void test_hashtab_del(void)
{
	enum { N = 2000 };
	static char present[N];
	struct hashtab h = {};
	unsigned int seed = 1;

	for (int round = 0; round < 20000; round++) {
		__u64 k;

		seed = seed * 1103515245 + 12345;
		k = (seed >> 8) % N;
		if (present[k]) {
			CHECK(hashtab_del(&h, k, 7) == (void *)(uintptr_t)(k + 1));
			present[k] = 0;
		} else {
			CHECK_INT(hashtab_put(&h, k, 7, (void *)(uintptr_t)(k + 1)), 0);
			present[k] = 1;
		}
	}
	for (__u64 k = 0; k < N; k++)
		CHECK(hashtab_get(&h, k, 7) == (present[k] ? (void *)(uintptr_t)(k + 1) : NULL));
	CHECK(hashtab_del(&h, N + 1, 7) == NULL);
	hashtab_clear(&h, NULL);
}

/* Reset empties a table and keeps its room (top's tables are filled again to about their size
 * each refresh); one that held far less than its room is freed. */
static void test_hashtab_reset(void)
{
	struct hashtab h = {};
	size_t cap;

	for (__u64 k = 0; k < 1000; k++)
		CHECK_INT(hashtab_put(&h, k, 1, (void *)(uintptr_t)(k + 1)), 0);
	cap = h.cap;
	hashtab_reset(&h);
	CHECK(h.len == 0 && h.cap == cap);
	for (__u64 k = 0; k < 1000; k++)
		CHECK(hashtab_get(&h, k, 1) == NULL);
	for (__u64 k = 0; k < 100; k++)
		CHECK_INT(hashtab_put(&h, k, 2, (void *)(uintptr_t)(k + 7)), 0);
	CHECK(h.cap == cap && hashtab_get(&h, 5, 2) == (void *)(uintptr_t)12);
	hashtab_reset(&h);
	CHECK(h.len == 0 && h.cap == 0 && h.slots == NULL);
	CHECK_INT(hashtab_put(&h, 1, 1, (void *)1), 0);
	CHECK(hashtab_get(&h, 1, 1) == (void *)1);
	hashtab_clear(&h, NULL);
}

/* A table at its load bound (half its slots used) replaces a key it holds where it is: the frame
 * memo, kept at 65,536 slots, doubled to 3 MB at the first update past its bound. */
static void test_hashtab_put_at_bound(void)
{
	struct hashtab h = {};
	size_t cap;

	for (__u64 k = 0; k < 32; k++)
		CHECK_INT(hashtab_put(&h, k, 0, (void *)(uintptr_t)(k + 1)), 0);
	cap = h.cap;
	CHECK_INT(cap, 64);
	CHECK_INT(hashtab_put(&h, 5, 0, (void *)99), 0);
	CHECK(h.cap == cap && h.len == 32 && hashtab_get(&h, 5, 0) == (void *)99);
	CHECK_INT(hashtab_put(&h, 32, 0, (void *)33), 0); /* a new key: it grows */
	CHECK(h.cap == 2 * cap && h.len == 33);
	for (__u64 k = 0; k <= 32; k++)
		CHECK(hashtab_get(&h, k, 0) == (void *)(uintptr_t)(k == 5 ? 99 : k + 1));
	hashtab_clear(&h, NULL);
}

/* The drain's memo keeps ids of one aggregation and tells the next one by its serial: an
 * aggregation allocated where a freed one was must not pass for it. */
static void test_agg_serial(void)
{
	struct stack_agg *a = stack_agg__new(false), *b;
	__u64 first = a ? stack_agg__serial(a) : 0;

	CHECK(a && first);
	stack_agg__free(a);
	b = stack_agg__new(false);
	CHECK(b && stack_agg__serial(b) != first);
	CHECK(b && stack_agg__nr_frames(b) == 0);
	stack_agg__free(b);
}

int main(void)
{
	RUN(test_agg_merges_by_command_and_stack);
	RUN(test_agg_serial);
	RUN(test_agg_by_tid);
	RUN(test_agg_own_ids);
	RUN(test_agg_paths);
	RUN(test_agg_tree_walk);
	RUN(test_agg_bound);
	RUN(test_agg_tree_writers);
	RUN(test_agg_seal);
	RUN(test_hashtab_del);
	RUN(test_hashtab_reset);
	RUN(test_hashtab_put_at_bound);
	TESTS_DONE();
}
