/* Writers from plain stack data to text and SVG: folded stacks, the perf-style report, the flame
 * graph.  No BPF, no root. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "out/stack.h"
#include "out/folded.h"
#include "out/report.h"
#include "sym/stackagg.h"
#include "out/flamegraph.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define U(n) { .name = (n), .module = "/usr/bin/app" }
#define L(n) { .name = (n), .module = "/usr/lib/x86_64-linux-gnu/libc.so.6" }
#define K(n) { .name = (n), .module = "[kernel.kallsyms]", .kernel = true }

static struct stack_sample sample(const char *comm, __u32 pid, __u64 value, struct frame *f,
				  __u32 nr)
{
	struct stack_sample s = { .pid = pid, .tid = pid, .value = value, .nr_frames = nr,
				  .frames = f };

	strncpy(s.comm, comm, sizeof(s.comm) - 1);
	return s;
}

#define SAMPLE(comm, pid, value, frames) sample(comm, pid, value, frames, ARRAY_SIZE(frames))

static char *folded(const struct stack_sample *s, size_t n, bool annotate, bool with_tid)
{
	struct folded_opts o = { .annotate_kernel = annotate, .with_tid = with_tid };
	FILE *f = tmpfile();
	char *text;

	if (!f)
		return NULL;
	if (folded_write(f, s, n, &o)) {
		fclose(f);
		return NULL;
	}
	text = test_slurp(f);
	fclose(f);
	return text;
}

static char *report(const struct report_header *h, const struct stack_sample *s, size_t n,
		    const struct report_opts *o)
{
	FILE *f = tmpfile();
	char *text;

	if (!f)
		return NULL;
	if (stack_agg_report_write(f, h, s, n, o)) {
		fclose(f);
		return NULL;
	}
	text = test_slurp(f);
	fclose(f);
	return text;
}

static char *flamegraph(const struct stack_sample *s, size_t n, const struct flamegraph_opts *o)
{
	FILE *f = tmpfile();
	char *text;

	if (!f)
		return NULL;
	if (flamegraph_write(f, s, n, o)) {
		fclose(f);
		return NULL;
	}
	text = test_slurp(f);
	fclose(f);
	return text;
}

/* The line of text that starts with prefix, copied into buf (without its newline), or NULL. */
static const char *line_starting(const char *text, const char *prefix, char *buf, size_t size)
{
	const char *p = text;
	size_t len;

	while (p && *p) {
		const char *end = strchr(p, '\n');

		len = end ? (size_t)(end - p) : strlen(p);
		if (!strncmp(p, prefix, strlen(prefix)) && len < size) {
			memcpy(buf, p, len);
			buf[len] = '\0';
			return buf;
		}
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

static int count_substr(const char *text, const char *needle)
{
	int n = 0;

	for (text = strstr(text, needle); text; text = strstr(text + 1, needle))
		n++;
	return n;
}

/* ---- stack helpers ---- */

static void test_stack_helpers(void)
{
	struct frame k = K("schedule"), u = { .name = NULL, .module = "/lib/libc.so.6" };
	struct frame e = { .name = "" };
	struct stack_sample s[2] = { { .value = 3 }, { .value = 4 } };
	char buf[64];

	CHECK_STR(stack_module_short("/usr/lib/x86_64-linux-gnu/libc.so.6"), "libc.so.6");
	CHECK_STR(stack_module_short("[kernel.kallsyms]"), "[kernel.kallsyms]");
	CHECK_STR(stack_module_short("[JIT] tid 7"), "[JIT] tid 7");
	CHECK_STR(stack_module_short("app"), "app");
	CHECK_STR(stack_module_short(NULL), "[unknown]");
	CHECK_STR(stack_frame_name(&k, true, buf, sizeof(buf)), "schedule_[k]");
	CHECK_STR(stack_frame_name(&k, false, buf, sizeof(buf)), "schedule");
	/* unresolved in a known file: the file, as stackcollapse-perf.pl names it */
	CHECK_STR(stack_frame_name(&u, true, buf, sizeof(buf)), "[libc.so.6]");
	CHECK_STR(stack_frame_name(&e, true, buf, sizeof(buf)), "[unknown]");
	e.module = "[unknown]";
	CHECK_STR(stack_frame_name(&e, false, buf, sizeof(buf)), "[unknown]");
	e.module = "[vdso]";
	CHECK_STR(stack_frame_name(&e, false, buf, sizeof(buf)), "[vdso]");
	CHECK_INT(stack_samples_total(s, 2), 7);
	CHECK_INT(stack_samples_total(NULL, 0), 0);
}

static void test_stack_names(void)
{
	struct stack_names *t = stack_names__new();
	char name[32];
	int i, ok = 1;

	CHECK(t != NULL);
	if (!t)
		return;
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		ok &= stack_names__intern(t, name, strlen(name)) == i;
	}
	for (i = 0; i < 20000; i += 7) {
		snprintf(name, sizeof(name), "fn_%d", i);
		ok &= stack_names__intern(t, name, strlen(name)) == i;
	}
	CHECK(ok);
	CHECK_INT(stack_names__count(t), 20000);
	CHECK_STR(stack_names__str(t, 12345), "fn_12345");
	CHECK_INT(stack_names__intern(t, "fn_1x", 4), 1); /* only len bytes count */
	stack_names__free(t);
	stack_names__free(NULL);
}

/* ---- folded ---- */

static void test_folded_merge_sort(void)
{
	struct frame a[] = { U("main"), U("work") }, b[] = { U("main"), U("idle") };
	struct frame c[] = { U("main"), U("work") };
	struct stack_sample s[] = {
		SAMPLE("app", 10, 3, a),
		SAMPLE("zz", 11, 1, b),
		SAMPLE("app", 12, 2, b),
		SAMPLE("app", 13, 4, c), /* another pid, same comm and stack: merged */
		SAMPLE("app", 14, 0, c), /* nothing to count */
	};
	char *out = folded(s, ARRAY_SIZE(s), false, false);

	CHECK_STR(out, "app;main;idle 2\napp;main;work 7\nzz;main;idle 1\n");
	free(out);
	out = folded(s, 2, false, true);
	CHECK_STR(out, "app-10;main;work 3\nzz-11;main;idle 1\n");
	free(out);
	out = folded(s, 0, false, false);
	CHECK_STR(out, "");
	free(out);
}

/* Unresolved frames name their file ("[app]", "[kernel.kallsyms]"); "[unknown]" only where the
 * file is unknown too. */
static void test_folded_annotate_unknown(void)
{
	struct frame f[] = { U("main"), { .name = NULL, .module = "/usr/bin/app" }, K("vfs_read"),
			     { .module = "[kernel.kallsyms]", .kernel = true },
			     { .name = NULL, .module = "[unknown]" } };
	struct stack_sample s[] = { SAMPLE("app", 1, 5, f), sample("app", 1, 1, NULL, 0) };
	char *out = folded(s, ARRAY_SIZE(s), true, false);

	CHECK_STR(out, "app 1\napp;main;[app];vfs_read_[k];[kernel.kallsyms]_[k];[unknown] 5\n");
	free(out);
	out = folded(s, 1, false, false);
	CHECK_STR(out, "app;main;[app];vfs_read;[kernel.kallsyms];[unknown] 5\n");
	free(out);
}

static void test_folded_waker(void)
{
	struct frame f[] = { U("main"), U("read"), K("schedule") };
	/* outermost first, like frames: the waker's user stack, then its kernel stack */
	struct frame w[] = { U("wmain"), U("write"), K("pipe_write"), K("try_to_wake_up") };
	struct stack_sample s = SAMPLE("reader", 1, 42, f);
	char *out;

	strcpy(s.waker_comm, "writer");
	s.waker_frames = w;
	s.nr_waker_frames = ARRAY_SIZE(w);
	out = folded(&s, 1, true, false);
	CHECK_STR(out, "reader;main;read;schedule_[k];--;try_to_wake_up_[k];pipe_write_[k];"
		       "write;wmain;writer 42\n");
	free(out);
}

/* What flamegraph.pl and difffolded.pl do with a line: /^(.*)\s+?(\d+(?:\.\d*)?)$/ for the count,
 * and the same again on the stack for a differential second count. */
static bool ends_with_number(const char *s, size_t len, size_t *num_start)
{
	size_t p = len, q;

	while (p && s[p - 1] >= '0' && s[p - 1] <= '9')
		p--;
	if (p && s[p - 1] == '.') {
		q = p - 1;
		while (q && s[q - 1] >= '0' && s[q - 1] <= '9')
			q--;
		if (q == p - 1)
			return false;
		p = q;
	} else if (p == len) {
		return false;
	}
	if (!p || !strchr(" \t\r\f\v", s[p - 1]))
		return false;
	*num_start = p;
	return true;
}

static bool flamegraph_pl_accepts(const char *line, int want_frames)
{
	size_t len = strlen(line), num, frames = 1, i;

	if (!ends_with_number(line, len, &num))
		return false;
	/* a stack ending in " NUMBER" would be read as a differential: a wrong count */
	len = num - 1;
	if (ends_with_number(line, len, &num))
		return false;
	for (i = 0; i < len; i++)
		frames += line[i] == ';';
	return (int)frames == want_frames;
}

static void test_folded_escaping(void)
{
	struct frame f[] = { U("a;b"), U("line\nbreak"), U("operator() 2"), U("v 1.5"),
			     U("tab\t7"), U("ends.") };
	struct frame g[] = { U("x 12.") };
	struct stack_sample s[] = { SAMPLE("job 3", 1, 9, f), SAMPLE("app", 2, 1, g) };
	char *out = folded(s, ARRAY_SIZE(s), false, false), line[512];

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK_STR(out, "app;x_12. 1\n"
		       "job_3;a:b;line?break;operator()_2;v_1.5;tab?7;ends. 9\n");
	CHECK(line_starting(out, "job", line, sizeof(line)) && flamegraph_pl_accepts(line, 7));
	CHECK(line_starting(out, "app", line, sizeof(line)) && flamegraph_pl_accepts(line, 2));
	CHECK_INT(count_substr(out, "\n"), 2);
	free(out);
}

static void test_folded_write_error(void)
{
	struct frame f[] = { U("main") };
	struct stack_sample s = SAMPLE("app", 1, 1, f);
	struct folded_opts o = {};
	FILE *full = fopen("/dev/full", "w");

	if (!full)
		SKIP("no /dev/full to provoke a write error");
	CHECK(folded_write(full, &s, 1, &o) < 0);
	fclose(full);
}

/* ---- report ---- */

/* main;foo;bar x6, main;foo x2, main;baz x2 (10 samples): the tree and percentages are known. */
static struct frame t_a[] = { U("main"), U("foo"), U("bar") };
static struct frame t_b[] = { U("main"), U("foo") };
static struct frame t_c[] = { U("main"), U("baz") };

static void small_input(struct stack_sample s[3])
{
	s[0] = SAMPLE("app", 1, 6, t_a);
	s[1] = SAMPLE("app", 1, 2, t_b);
	s[2] = SAMPLE("app", 2, 2, t_c);
}

static void test_report_tree_exact(void)
{
	struct report_header h = { .event = "cpu-clock", .frequency = 99, .duration_s = 1.5,
				   .unwind = "fp" };
	struct report_opts o = { .children = true, .call_graph = true };
	struct stack_sample s[3];
	char *out;

	small_input(s);
	out = report(&h, s, 3, &o);
	CHECK_STR(out,
		  "# Samples: 10 of event 'cpu-clock'\n"
		  "# Event frequency: 99 Hz\n"
		  "# Lost samples: 0\n"
		  "# Duration: 1.50 s\n"
		  "# Call graph: fp\n"
		  "#\n"
		  "# Children      Self  Command  Shared Object  Symbol\n"
		  "# ........  ........  .......  .............  ........\n"
		  "#\n"
		  "   100.00%     0.00%  app      app            [.] main\n"
		  "            |\n"
		  "            ---main\n"
		  "               |\n"
		  "               |--80.00%--foo\n"
		  "               |          |\n"
		  "               |           --60.00%--bar\n"
		  "               |\n"
		  "                --20.00%--baz\n"
		  "\n"
		  "    80.00%    20.00%  app      app            [.] foo\n"
		  "            |\n"
		  "            ---foo\n"
		  "               |\n"
		  "                --60.00%--bar\n"
		  "\n"
		  "    60.00%    60.00%  app      app            [.] bar\n"
		  "            |\n"
		  "            ---bar\n"
		  "\n"
		  "    20.00%    20.00%  app      app            [.] baz\n"
		  "            |\n"
		  "            ---baz\n"
		  "\n");
	free(out);
}

static void test_report_no_children(void)
{
	struct report_opts o = { .children = false, .call_graph = true };
	struct stack_sample s[3];
	char *out;

	small_input(s);
	out = report(NULL, s, 3, &o);
	/* perf --no-children: Self only, entries that were sampled, trees towards the callers */
	CHECK_STR(out,
		  "# Samples: 10\n"
		  "# Lost samples: 0\n"
		  "#\n"
		  "# Overhead  Command  Shared Object  Symbol\n"
		  "# ........  .......  .............  .......\n"
		  "#\n"
		  "    60.00%  app      app            [.] bar\n"
		  "            |\n"
		  "            ---bar\n"
		  "               foo\n"
		  "               main\n"
		  "\n"
		  "    20.00%  app      app            [.] baz\n"
		  "            |\n"
		  "            ---baz\n"
		  "               main\n"
		  "\n"
		  "    20.00%  app      app            [.] foo\n"
		  "            |\n"
		  "            ---foo\n"
		  "               main\n"
		  "\n");
	free(out);
}

static void test_report_recursion_once(void)
{
	/* f recurses: each sample counts once in f's Children, and the tree starts at the
	 * outermost f, so the recursion shows below it */
	struct frame a[] = { U("main"), U("f"), U("f"), U("f"), U("leaf") };
	struct frame b[] = { U("main"), U("f") };
	struct frame c[] = { U("main"), U("f"), U("g"), U("f") };
	struct stack_sample s[] = { SAMPLE("rec", 1, 5, a), SAMPLE("rec", 1, 3, b),
				    SAMPLE("rec", 1, 2, c) };
	struct report_opts o = { .children = true, .call_graph = false };
	char *out = report(NULL, s, ARRAY_SIZE(s), &o);

	CHECK(out != NULL);
	if (!out)
		return;
	/* f ties main at 100% and sorts first by name; f is innermost in b and c: self 5 of 10 */
	CHECK(strstr(out, "#\n"
			  "   100.00%    50.00%  rec      app            [.] f\n"
			  "   100.00%     0.00%  rec      app            [.] main\n"
			  "    50.00%    50.00%  rec      app            [.] leaf\n"
			  "    20.00%     0.00%  rec      app            [.] g\n") != NULL);
	CHECK(!strstr(out, "---")); /* call_graph off */
	free(out);

	o.call_graph = true;
	out = report(NULL, s, ARRAY_SIZE(s), &o);
	CHECK(out && strstr(out,
			    "            ---f\n"
			    "               |\n"
			    "               |--50.00%--f\n"
			    "               |          f\n"
			    "               |          leaf\n"
			    "               |\n"
			    "                --20.00%--g\n"
			    "                          f\n"
			    "\n"));
	free(out);
}

static void test_report_sorting_and_ties(void)
{
	struct frame a[] = { U("main"), U("beta") }, b[] = { U("main"), U("alpha") };
	struct frame c[] = { U("main"), U("gamma") }, k[] = { K("worker_thread") };
	struct stack_sample s[] = { SAMPLE("app", 1, 2, a), SAMPLE("app", 1, 2, b),
				    SAMPLE("app", 1, 3, c), SAMPLE("kworker/0:1", 9, 1, k) };
	struct report_opts o = { .children = false };
	char *out = report(NULL, s, ARRAY_SIZE(s), &o);
	const char *g, *al, *be, *kw;

	CHECK(out != NULL);
	if (!out)
		return;
	g = strstr(out, "[.] gamma");
	al = strstr(out, "[.] alpha");
	be = strstr(out, "[.] beta");
	kw = strstr(out, "[k] worker_thread");
	CHECK(g && al && be && kw);
	CHECK(g < al && al < be && be < kw); /* by Self, then by name */
	CHECK(strstr(out, "    12.50%  kworker/0:1  [kernel.kallsyms]  [k] worker_thread\n") != NULL);
	CHECK(!strstr(out, "[.] main")); /* never innermost: no Self row */
	free(out);
}

static void test_report_percent_limit(void)
{
	struct frame a[] = { U("main"), U("big") }, b[] = { U("main"), U("small") };
	struct frame c[] = { U("main"), U("big"), U("tiny") };
	struct stack_sample s[] = { SAMPLE("app", 1, 90, a), SAMPLE("app", 1, 6, b),
				    SAMPLE("app", 1, 4, c) };
	struct report_opts o = { .children = true, .call_graph = true, .percent_limit = 5 };
	char *out = report(NULL, s, ARRAY_SIZE(s), &o);

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strstr(out, "[.] small\n") != NULL);   /* 6% */
	CHECK(!strstr(out, "[.] tiny\n"));           /* 4%: no row */
	CHECK(!strstr(out, "--tiny") && !strstr(out, " tiny\n")); /* nor a branch */
	CHECK(strstr(out, "            ---main\n"
			  "               |\n"
			  "               |--94.00%--big\n"
			  "               |\n"
			  "                --6.00%--small\n") != NULL);
	free(out);
	o.percent_limit = 0;
	out = report(NULL, s, ARRAY_SIZE(s), &o);
	CHECK(out && strstr(out, "--4.00%--tiny\n") && strstr(out, "[.] tiny\n"));
	free(out);
}

static void test_report_header_lost(void)
{
	struct report_header h = { .event = "cpu-clock", .lost = 7,
				   .lost_detail = "stack capture failed 3, stack table full 4",
				   .extra = "Target: pid 42" };
	struct report_opts o = { .children = true };
	struct stack_sample s[3];
	char *out, line[256];

	small_input(s);
	out = report(&h, s, 3, &o);
	CHECK(out != NULL);
	if (!out)
		return;
	CHECK_STR(line_starting(out, "# Lost", line, sizeof(line)),
		  "# Lost samples: 7 (stack capture failed 3, stack table full 4)");
	CHECK_STR(line_starting(out, "# Target", line, sizeof(line)), "# Target: pid 42");
	CHECK(!strstr(out, "# Event frequency")); /* frequency 0: not sampling at a rate */
	CHECK(!strstr(out, "# Call graph"));
	CHECK(!strstr(out, "# Duration"));
	free(out);
}

static void test_report_time_unit(void)
{
	struct frame a[] = { U("main"), K("schedule") }, b[] = { U("main"), U("spin") };
	struct stack_sample s[] = { SAMPLE("sleepy", 1, 1500000, a), SAMPLE("sleepy", 1, 500000, b) };
	struct report_header h = { .event = "sched_switch (off-CPU)" };
	struct report_opts o = { .children = true, .unit = REPORT_TIME_US };
	char *out = report(&h, s, ARRAY_SIZE(s), &o), line[256];

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK_STR(line_starting(out, "# Event", line, sizeof(line)),
		  "# Event: 'sched_switch (off-CPU)'");
	CHECK_STR(line_starting(out, "# Total", line, sizeof(line)),
		  "# Total off-CPU time: 2000.000 ms");
	CHECK(!strstr(out, "# Samples"));
	CHECK_STR(line_starting(out, "# Children", line, sizeof(line)),
		  "# Children      Self  Children(ms)      Self(ms)  Command  Shared Object      "
		  "Symbol");
	CHECK_STR(line_starting(out, "    75.00%", line, sizeof(line)),
		  "    75.00%    75.00%      1500.000      1500.000  sleepy   [kernel.kallsyms]  "
		  "[k] schedule");
	free(out);
}

static void test_report_unresolved(void)
{
	struct frame f[] = { U("main"), { .module = "/usr/lib/libc.so.6", .offset = 0x1234 },
			     { .module = "[unknown]", .offset = 0x99 }, { .name = NULL } };
	struct stack_sample s[] = { SAMPLE("app", 1, 1, f), sample("app", 1, 1, NULL, 0) };
	struct report_opts o = { .children = true };
	char *out = report(NULL, s, ARRAY_SIZE(s), &o);

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strstr(out, "  libc.so.6      [.] libc.so.6+0x1234\n") != NULL);
	/* both unknown frames and the sample without a stack are one "[unknown]" entry */
	CHECK(strstr(out, "   100.00%   100.00%  app      [unknown]      [.] [unknown]\n") != NULL);
	CHECK_INT(count_substr(out, "[.] [unknown]\n"), 1);
	free(out);
}

static void test_report_same_name_two_modules(void)
{
	struct frame a[] = { U("main"), U("init") }, b[] = { U("main"), L("init") };
	struct stack_sample s[] = { SAMPLE("app", 1, 3, a), SAMPLE("app", 1, 1, b) };
	struct report_opts o = { .children = false };
	char *out = report(NULL, s, ARRAY_SIZE(s), &o);

	/* one symbol name, two shared objects: two rows, as perf keys on the DSO */
	CHECK(out && strstr(out, "    75.00%  app      app            [.] init\n") &&
	      strstr(out, "    25.00%  app      libc.so.6      [.] init\n"));
	free(out);
}

static void test_report_waker(void)
{
	struct frame f[] = { U("main"), K("schedule") };
	struct frame w1[] = { U("wmain"), K("try_to_wake_up") }, w2[] = { K("irq"), K("wake") };
	struct stack_sample s[] = { SAMPLE("reader", 1, 3, f), SAMPLE("reader", 1, 1, f) };
	struct report_opts o = { .children = true, .call_graph = true };
	char *out;

	strcpy(s[0].waker_comm, "writer");
	s[0].waker_frames = w1;
	s[0].nr_waker_frames = 2;
	strcpy(s[1].waker_comm, "swapper/0");
	s[1].waker_frames = w2;
	s[1].nr_waker_frames = 2;
	out = report(NULL, s, ARRAY_SIZE(s), &o);
	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strstr(out, "            ---schedule\n"
			  "            |\n"
			  "            |--75.00%--woken by writer\n"
			  "            |          try_to_wake_up\n"
			  "            |          wmain\n"
			  "            |\n"
			  "             --25.00%--woken by swapper/0\n"
			  "                       wake\n"
			  "                       irq\n"
			  "\n") != NULL);
	/* waker frames are no rows of their own */
	CHECK(!strstr(out, "[k] try_to_wake_up") && !strstr(out, "[.] wmain"));
	free(out);
}

static void test_report_empty_and_error(void)
{
	struct report_opts o = { .children = true, .call_graph = true };
	struct stack_sample s[3];
	char *out = report(NULL, NULL, 0, &o);
	FILE *full;

	CHECK_STR(out, "# Samples: 0\n# Lost samples: 0\n#\n# No samples.\n");
	free(out);
	full = fopen("/dev/full", "w");
	if (!full)
		SKIP("no /dev/full to provoke a write error");
	small_input(s);
	CHECK(stack_agg_report_write(full, NULL, s, 3, &o) < 0);
	fclose(full);
}

/* ---- flame graph ---- */

/* A small XML checker: tags nest and close, attributes are quoted, text holds no raw '<' and
 * every '&' starts an entity.  Enough to catch what an SVG writer gets wrong. */
static bool entity_ok(const char *p)
{
	static const char *const ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ents); i++)
		if (!strncmp(p, ents[i], strlen(ents[i])))
			return true;
	return p[1] == '#';
}

static bool xml_well_formed(const char *x)
{
	const char *stack[64], *p = x, *end;
	size_t lens[64];
	int depth = 0, roots = 0;

	if (strncmp(p, "<?xml", 5))
		return false;
	while (*p) {
		if (*p == '&' && !entity_ok(p))
			return false;
		if (*p != '<') {
			p++;
			continue;
		}
		if (!strncmp(p, "<?", 2) || !strncmp(p, "<!--", 4) || !strncmp(p, "<![CDATA[", 9)) {
			end = strstr(p, p[1] == '?' ? "?>" : p[2] == '-' ? "-->" : "]]>");
			if (!end)
				return false;
			p = end + 2;
			continue;
		}
		if (p[1] == '/') {
			size_t len = strcspn(p + 2, ">");

			if (!depth || len != lens[depth - 1] || strncmp(p + 2, stack[depth - 1], len))
				return false;
			depth--;
			p += 2 + len + 1;
			continue;
		}
		/* an opening tag: name, then attributes with quoted values */
		{
			const char *name = p + 1, *q;
			size_t len = strcspn(name, " \t\n/>");

			if (!len)
				return false;
			for (q = name + len; *q && *q != '>'; q++) {
				if (*q == '<')
					return false;
				if (*q == '=') {
					if (q[1] != '"')
						return false;
					for (q += 2; *q && *q != '"'; q++)
						if (*q == '<' || (*q == '&' && !entity_ok(q)))
							return false;
					if (!*q)
						return false;
				}
			}
			if (!*q)
				return false;
			if (q[-1] != '/') {
				if (depth == 64)
					return false;
				roots += depth == 0;
				stack[depth] = name;
				lens[depth++] = len;
			} else {
				roots += depth == 0;
			}
			p = q + 1;
		}
	}
	return depth == 0 && roots == 1;
}

struct svg_frame {
	unsigned long long s, v;
	double x, width;
	int y;
	char title[256];
	char label[256];
};

/* The frames drawn, in document order.  Returns their count (at most max). */
static int svg_frames(const char *svg, struct svg_frame *f, int max)
{
	const char *p = svg;
	int n = 0;

	while ((p = strstr(p, "<g data-s=")) && n < max) {
		const char *t;

		if (sscanf(p, "<g data-s=\"%llu\" data-v=\"%llu\">", &f[n].s, &f[n].v) != 2)
			break;
		t = strstr(p, "<title>") + 7;
		snprintf(f[n].title, sizeof(f[n].title), "%.*s", (int)(strstr(t, "</title>") - t), t);
		t = strstr(p, "<rect ");
		if (sscanf(t, "<rect x=\"%lf\" y=\"%d\" width=\"%lf\"", &f[n].x, &f[n].y,
			   &f[n].width) != 3)
			break;
		t = strstr(t, "<text ");
		t = strchr(t, '>') + 1;
		snprintf(f[n].label, sizeof(f[n].label), "%.*s", (int)(strstr(t, "</text>") - t), t);
		n++;
		p++;
	}
	return n;
}

static const struct svg_frame *find_title(const struct svg_frame *f, int n, const char *prefix)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strncmp(f[i].title, prefix, strlen(prefix)))
			return &f[i];
	return NULL;
}

static bool have_xmllint(void)
{
	return system("xmllint --version >/dev/null 2>&1") == 0;
}

static bool xmllint_ok(const char *svg)
{
	char path[] = "/tmp/bpfprof-test-XXXXXX", cmd[128];
	FILE *f;
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return false;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return false;
	}
	fputs(svg, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = system(cmd);
	unlink(path);
	return rc == 0;
}

static struct frame fg_a[] = { U("main"), U("foo"), U("bar") };
static struct frame fg_b[] = { U("main"), U("foo") };
static struct frame fg_c[] = { U("main"), U("baz"), K("sys_read") };
static struct frame fg_e[] = { U("<&>\"'"), U("ok") };

static size_t fg_input(struct stack_sample *s)
{
	s[0] = SAMPLE("app", 1, 6, fg_a);
	s[1] = SAMPLE("app", 2, 2, fg_b);
	s[2] = SAMPLE("app", 1, 2, fg_c);
	s[3] = SAMPLE("a<b>&c", 3, 1, fg_e);
	s[4] = SAMPLE("app", 4, 3, fg_a); /* merges with s[0] */
	return 5;
}

static void test_flamegraph_structure(void)
{
	struct flamegraph_opts o = { .title = "CPU <&> \"graph\"", .subtitle = "sub & title",
				     .count_name = "samples", .annotate_kernel = true };
	struct stack_sample s[5];
	struct svg_frame f[64];
	const struct svg_frame *all, *main_, *foo, *bar, *baz;
	size_t n = fg_input(s);
	char *svg = flamegraph(s, n, &o);
	int nr, i, j;

	CHECK(svg != NULL);
	if (!svg)
		return;
	CHECK(xml_well_formed(svg));
	nr = svg_frames(svg, f, 64);
	/* all, app, main, foo, bar, baz, sys_read_[k], a<b>&c, <&>"', ok */
	CHECK_INT(nr, 10);
	CHECK_INT(count_substr(svg, "<g data-s="), 10);
	all = find_title(f, nr, "all (");
	CHECK(all && all->v == 14 && all->s == 0);
	CHECK(all && fabs(all->x - 10) < 1e-9 && fabs(all->width - 1180) < 1e-9);
	CHECK(all && !strcmp(all->title, "all (14 samples, 100.00%)"));
	main_ = find_title(f, nr, "main (13 samples,");
	foo = find_title(f, nr, "foo (11 samples, 78.57%)");
	bar = find_title(f, nr, "bar (9 samples, 64.29%)");
	baz = find_title(f, nr, "baz (2 samples");
	CHECK(main_ && foo && bar && baz);
	CHECK(find_title(f, nr, "sys_read_[k] (2 samples") != NULL);
	/* siblings alphabetically: "a<b>&c" before "app", "bar" inside "foo", "baz" before "foo" */
	CHECK(baz && foo && baz->x < foo->x);
	CHECK(find_title(f, nr, "a&lt;b&gt;&amp;c (1 samples") != NULL);
	CHECK(find_title(f, nr, "&lt;&amp;&gt;&quot;&apos; (1 samples") != NULL);
	CHECK(strstr(svg, "CPU &lt;&amp;&gt; &quot;graph&quot;") != NULL);
	CHECK(strstr(svg, "sub &amp; title") != NULL);
	/* children stay inside their parent and their widths add up to at most its width */
	for (i = 0; i < nr; i++) {
		double sum = 0;

		for (j = 0; j < nr; j++) {
			if (f[j].y != f[i].y - 16 || f[j].s < f[i].s || f[j].s >= f[i].s + f[i].v)
				continue;
			CHECK(f[j].x >= f[i].x - 1e-9);
			CHECK(f[j].x + f[j].width <= f[i].x + f[i].width + 1e-9);
			sum += f[j].width;
		}
		CHECK(sum <= f[i].width + 1e-6);
	}
	CHECK(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[") != NULL);
	CHECK(strstr(svg, "function zoom(") && strstr(svg, "function search(") &&
	      strstr(svg, "function unzoom(") && strstr(svg, "id=\"details\""));
	free(svg);
}

static void test_flamegraph_xmllint(void)
{
	struct flamegraph_opts o = { .title = "t<&>", .palette = PALETTE_COOL,
				     .count_name = "us" };
	struct frame bad[] = { U("bad\xff utf8 \xc3\x28 \x01 ctl"), U("\xe2\x82\xac euro") };
	struct stack_sample s[6];
	size_t n = fg_input(s);
	char *svg;

	if (!have_xmllint())
		SKIP("xmllint not installed (apt-get install libxml2-utils); checked by hand only");
	s[n++] = SAMPLE("app", 5, 1, bad);
	svg = flamegraph(s, n, &o);
	CHECK(svg && xmllint_ok(svg));
	CHECK(svg && strstr(svg, "\xe2\x82\xac euro") != NULL); /* valid UTF-8 kept */
	CHECK(svg && strstr(svg, "bad? utf8 ?( ? ctl") != NULL);
	free(svg);
	svg = flamegraph(NULL, 0, &o);
	CHECK(svg && xmllint_ok(svg));
	free(svg);
}

static void test_flamegraph_empty(void)
{
	struct flamegraph_opts o = { .title = "Off-CPU" };
	struct stack_sample zero = { .comm = "x", .value = 0 };
	char *svg = flamegraph(NULL, 0, &o);

	CHECK(svg && xml_well_formed(svg) && strstr(svg, "No samples"));
	CHECK(svg && count_substr(svg, "<g data-s=") == 0);
	free(svg);
	svg = flamegraph(&zero, 1, &o);
	CHECK(svg && xml_well_formed(svg) && strstr(svg, "No samples"));
	free(svg);
}

static void test_flamegraph_elide_and_labels(void)
{
	static const char long_name[] = "a_very_long_function_name_that_cannot_fit_in_a_small_box";
	struct frame big[] = { U("main"), U(long_name) }, tiny[] = { U("main"), U("tiny") };
	struct stack_sample s[] = { SAMPLE("app", 1, 100000, big), SAMPLE("app", 1, 5, tiny) };
	struct flamegraph_opts o = { .width = 300 };
	struct svg_frame f[16];
	const struct svg_frame *lf, *all;
	char *svg = flamegraph(s, ARRAY_SIZE(s), &o);
	int nr;

	CHECK(svg != NULL);
	if (!svg)
		return;
	nr = svg_frames(svg, f, 16);
	/* tiny is 280 * 5 / 100005 = 0.014 px wide: not drawn, its time still in main */
	CHECK_INT(nr, 4);
	CHECK(!strstr(svg, "tiny ("));
	CHECK(find_title(f, nr, "main (100,005 samples, 100.00%)") != NULL);
	all = find_title(f, nr, "all (");
	CHECK(all && fabs(all->width - 280) < 1e-9);
	lf = find_title(f, nr, long_name);
	CHECK(lf != NULL);
	if (lf) {
		size_t len = strlen(lf->label);

		CHECK(len >= 3 && len < strlen(long_name));
		CHECK(!strcmp(lf->label + len - 2, ".."));
		CHECK(!strncmp(lf->label, long_name, len - 2));
		CHECK((len + 0.0) * 7.08 <= lf->width); /* it fits */
	}
	free(svg);
}

static void test_flamegraph_waker_and_write_error(void)
{
	struct frame f[] = { U("main"), K("schedule") }, w[] = { U("wmain"), K("wake") };
	struct stack_sample s = SAMPLE("reader", 1, 4, f);
	struct flamegraph_opts o = { .palette = PALETTE_COOL };
	struct svg_frame fr[16];
	char *svg;
	FILE *full;
	int nr;

	strcpy(s.waker_comm, "writer");
	s.waker_frames = w;
	s.nr_waker_frames = 2;
	svg = flamegraph(&s, 1, &o);
	CHECK(svg != NULL);
	if (!svg)
		return;
	nr = svg_frames(svg, fr, 16);
	/* all, reader, main, schedule, --, wake, wmain, writer: one column, each above the last */
	CHECK_INT(nr, 8);
	CHECK(nr == 8 && !strncmp(fr[4].title, "-- (", 4) && !strncmp(fr[5].title, "wake (", 6) &&
	      !strncmp(fr[7].title, "writer (", 8) && fr[7].y == fr[0].y - 7 * 16);
	free(svg);
	full = fopen("/dev/full", "w");
	if (!full)
		SKIP("no /dev/full to provoke a write error");
	CHECK(flamegraph_write(full, &s, 1, &o) < 0);
	fclose(full);
}

/* 10,000 distinct stacks of depth 20: every writer copes, and the totals still add up.  (How
 * fast is checked by hand, never asserted.) */
static void test_large_input(void)
{
	enum { N = 10000, D = 20 };
	struct stack_sample *s = calloc(N, sizeof(*s));
	struct frame *frames = calloc((size_t)N * D, sizeof(*frames));
	char *names = calloc((size_t)N * D, 24), *svg = NULL, *text = NULL;
	struct flamegraph_opts go = { .annotate_kernel = true };
	struct report_opts ro = { .children = true, .call_graph = true, .percent_limit = 1 };
	struct svg_frame root;
	__u64 total = 0, even = 0;
	char want[128];
	int i, j;

	CHECK(s && frames && names);
	if (!s || !frames || !names)
		goto cleanup;
	for (i = 0; i < N; i++) {
		for (j = 0; j < D; j++) {
			char *name = names + ((size_t)i * D + j) * 24;

			/* shared near the root, distinct towards the leaves */
			snprintf(name, 24, "f%d_%d", j, j < 4 ? i % (j + 2) : i % (j * 500 + 7));
			frames[i * D + j] = (struct frame){ .name = name, .module = "/usr/bin/app",
							    .kernel = j >= 15 };
		}
		snprintf(names + ((size_t)i * D + D - 1) * 24, 24, "leaf%d", i);
		s[i] = sample(i % 2 ? "odd" : "even", i, 1 + i % 7, &frames[i * D], D);
		total += s[i].value;
		even += i % 2 ? 0 : s[i].value;
	}
	svg = flamegraph(s, N, &go);
	CHECK(svg && xml_well_formed(svg));
	CHECK(svg && svg_frames(svg, &root, 1) == 1 && root.v == total &&
	      fabs(root.width - 1180) < 1e-9);
	text = folded(s, N, true, false);
	CHECK(text && count_substr(text, "\n") == N);
	free(text);
	text = report(NULL, s, N, &ro);
	/* every even sample starts in f0_0 */
	snprintf(want, sizeof(want), "  %7.2f%%     0.00%%  even     app            [.] f0_0\n",
		 100.0 * even / total);
	CHECK(text && strstr(text, want) != NULL);
cleanup:
	free(text);
	free(svg);
	free(names);
	free(frames);
	free(s);
}

int main(void)
{
	RUN(test_stack_helpers);
	RUN(test_stack_names);
	RUN(test_folded_merge_sort);
	RUN(test_folded_annotate_unknown);
	RUN(test_folded_waker);
	RUN(test_folded_escaping);
	RUN(test_folded_write_error);
	RUN(test_report_tree_exact);
	RUN(test_report_no_children);
	RUN(test_report_recursion_once);
	RUN(test_report_sorting_and_ties);
	RUN(test_report_percent_limit);
	RUN(test_report_header_lost);
	RUN(test_report_time_unit);
	RUN(test_report_unresolved);
	RUN(test_report_same_name_two_modules);
	RUN(test_report_waker);
	RUN(test_report_empty_and_error);
	RUN(test_flamegraph_structure);
	RUN(test_flamegraph_xmllint);
	RUN(test_flamegraph_empty);
	RUN(test_flamegraph_elide_and_labels);
	RUN(test_flamegraph_waker_and_write_error);
	RUN(test_large_input);
	TESTS_DONE();
}
