// SPDX-License-Identifier: GPL-2.0
/* bpfprof top's pure parts: the table (fold, Self/Children, decay, modes, --sort grouping,
 * zoom), its layout (columns, truncation to the window, the cursor), the key decoder and the
 * view's state machine. */
#include <errno.h>
#include "test.h"
#include "cmd/topui.h"
#include "out/toptable.h"

/* macros: static arrays are initialised from them (clang takes no const object there) */
#define F_MAIN { .name = "main", .module = "/usr/bin/app" }
#define F_WORK { .name = "work", .module = "/usr/bin/app" }
#define F_HOT { .name = "hot", .module = "/usr/bin/app" }
#define F_MEMCPY { .name = "memcpy", .module = "/usr/lib/libc.so.6" }
#define F_SYSCALL { .name = "do_syscall_64", .module = "[kernel.kallsyms]", .kernel = true }

static struct stack_sample sample(const char *comm, __u32 pid, const struct frame *f, __u32 n,
				  __u64 value)
{
	struct stack_sample s = { .pid = pid, .tid = pid, .value = value, .nr_frames = n,
				  .frames = (struct frame *)f };

	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	return s;
}

/* app (pid 10): main -> work -> hot x 60, main -> work -> memcpy x 20, main -> work ->
 * do_syscall_64 x 10; cc (pid 20): main -> hot x 10. */
static void fill(struct stack_sample *s)
{
	static const struct frame a[] = { F_MAIN, F_WORK, F_HOT };
	static const struct frame b[] = { F_MAIN, F_WORK, F_MEMCPY };
	static const struct frame c[] = { F_MAIN, F_WORK, F_SYSCALL };
	static const struct frame d[] = { F_MAIN, F_HOT };

	s[0] = sample("app", 10, a, 3, 60);
	s[1] = sample("app", 10, b, 3, 20);
	s[2] = sample("app", 10, c, 3, 10);
	s[3] = sample("cc", 20, d, 2, 10);
}

static struct top_table *table(const char *sort_keys, struct top_sort *sort)
{
	CHECK_INT(top_sort_parse(sort_keys, sort), 0);
	return top_table__new(sort);
}

static const struct top_row *find(const struct top_row *rows, size_t n, const char *sym)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].sym && !strcmp(rows[i].sym, sym))
			return &rows[i];
	return NULL;
}

static void test_sort_keys(void)
{
	struct top_sort s;

	CHECK_INT(top_sort_parse("dso,sym", &s), 0);
	CHECK_INT(s.nr, 2);
	CHECK_INT(s.keys[0], TOP_KEY_DSO);
	CHECK_INT(top_sort_parse("comm,pid,dso,sym", &s), 0);
	CHECK_INT(s.nr, 4);
	CHECK_INT(top_sort_parse("sym,sym", &s), -EINVAL);
	CHECK_INT(top_sort_parse("symbol", &s), -EINVAL);
	CHECK_INT(top_sort_parse("", &s), -EINVAL);
	CHECK_INT(top_sort_parse(",", &s), -EINVAL);
}

static void test_self_and_children(void)
{
	struct top_sort sort;
	struct top_table *t = table("dso,sym", &sort);
	struct stack_sample s[4];
	struct top_period_stats st;
	struct top_row *rows;
	const struct top_row *r;
	size_t n;
	double total;

	fill(s);
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 4, &st), 0);
	CHECK_INT(st.samples, 100);
	CHECK_INT(st.kernel_samples, 10);
	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	CHECK_INT(total, 100);
	CHECK_INT(n, 5);
	/* main and work hold every sample (work: app's 90); hot is the hottest Self */
	CHECK_STR(rows[0].sym, "main");
	CHECK_INT(rows[0].children, 100);
	CHECK_INT(rows[0].self, 0);
	CHECK_STR(rows[0].dso, "app");
	r = find(rows, n, "hot");
	CHECK(r && r->self == 70 && r->children == 70);
	r = find(rows, n, "do_syscall_64");
	CHECK(r && r->kernel && !strcmp(r->dso, "[kernel.kallsyms]"));
	free(rows);
	/* by Self: hot first, functions that are never innermost left out */
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK_STR(rows[0].sym, "hot");
	CHECK_INT(n, 3);
	free(rows);
	/* only the first rows in order: the same first rows, and every row still there */
	for (size_t first = 1; first <= 4; first++) {
		struct top_row *all, *some;
		size_t n_all, n_some;

		CHECK_INT(top_table__rows(t, NULL, true, 0, &all, &n_all, &total), 0);
		CHECK_INT(top_table__rows_first(t, NULL, true, 0, first, &some, &n_some, &total), 0);
		CHECK_INT(n_some, n_all);
		for (size_t i = 0; i < first; i++)
			CHECK_STR(some[i].sym, all[i].sym);
		for (size_t i = 0; i < n_all; i++)
			CHECK(find(some, n_some, all[i].sym) != NULL);
		free(all);
		free(some);
	}
	/* --percent-limit 15: memcpy (20%) stays, do_syscall_64 (10%) goes */
	CHECK_INT(top_table__rows(t, NULL, false, 15, &rows, &n, &total), 0);
	CHECK_INT(n, 2);
	free(rows);
	top_table__free(t);
}

/* A recursive stack counts once in Children, however deep. */
static void test_recursion_counts_once(void)
{
	static const struct frame rec[] = { F_MAIN, F_WORK, F_WORK, F_WORK };
	struct stack_sample s = sample("app", 1, rec, 4, 5);
	struct top_sort sort;
	struct top_table *t = table("sym", &sort);
	struct top_period_stats st;
	struct top_row *rows;
	size_t n;
	double total;

	CHECK_INT(top_table__refresh(t, TOP_ACCUMULATE, &s, 1, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	CHECK(find(rows, n, "work") && find(rows, n, "work")->children == 5);
	CHECK(find(rows, n, "work")->self == 5);
	free(rows);
	top_table__free(t);
}

static void test_modes(void)
{
	struct top_sort sort;
	struct top_table *t = table("sym", &sort);
	struct stack_sample s[4];
	struct top_period_stats st;
	struct top_row *rows;
	size_t n;
	double total;

	fill(s);
	CHECK_INT(top_table__refresh(t, TOP_ACCUMULATE, s, 4, &st), 0);
	CHECK_INT(top_table__refresh(t, TOP_ACCUMULATE, s, 4, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK_INT(total, 200);
	free(rows);
	/* decaying: the old 200 weigh 7/8 (175), then this period's 100 */
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 4, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK(find(rows, n, "hot")->self == 140 * 7.0 / 8 + 70);
	free(rows);
	/* decay drops what reaches zero */
	for (int i = 0; i < 60; i++)
		CHECK_INT(top_table__refresh(t, TOP_DECAY, NULL, 0, &st), 0);
	CHECK_INT(top_table__entries(t), 0);
	/* per refresh: only the last period */
	CHECK_INT(top_table__refresh(t, TOP_ACCUMULATE, s, 4, &st), 0);
	CHECK_INT(top_table__refresh(t, TOP_PER_REFRESH, s, 1, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK_INT(total, 60);
	free(rows);
	top_table__clear(t);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK(!rows && !n && !total);
	top_table__free(t);
}

static void test_grouping_and_zoom(void)
{
	struct top_sort sort;
	struct top_table *t = table("comm,dso", &sort);
	struct stack_sample s[4];
	struct top_period_stats st;
	struct top_row *rows;
	struct top_zoom z = { .pid = 20 };
	size_t n;
	double total;

	fill(s);
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 4, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	/* (app, app) 60, (app, libc) 20, (cc, app) 10, (app, kernel) 10 */
	CHECK_INT(n, 4);
	CHECK_STR(rows[0].comm, "app");
	CHECK_STR(rows[0].dso, "app");
	CHECK(rows[0].sym == NULL);
	CHECK_INT(rows[0].self, 60);
	/* a file's several frames in one stack: once in Children */
	free(rows);
	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	CHECK_INT(rows[0].children, 90);
	CHECK_INT(rows[0].main_pid, 10);
	free(rows);
	CHECK_INT(top_table__rows(t, &z, true, 0, &rows, &n, &total), 0);
	CHECK_INT(total, 10);
	CHECK_INT(n, 1);
	CHECK_STR(rows[0].comm, "cc");
	free(rows);
	memset(&z, 0, sizeof(z));
	strcpy(z.comm, "app");
	CHECK_INT(top_table__rows(t, &z, true, 0, &rows, &n, &total), 0);
	CHECK_INT(total, 90);
	free(rows);
	top_table__free(t);
	/* --sort pid: a row per process */
	t = table("pid,sym", &sort);
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 4, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	CHECK_INT(n, 4); /* hot in 10 and in 20, memcpy, do_syscall_64 */
	CHECK_INT(rows[0].pid, 10);
	free(rows);
	top_table__free(t);
}

/* Samples of a drained period name their frames by id in one table (the fold looks them up by
 * id); entries that fade leave their slots to new ones, and the rows are what a table built
 * afresh from the surviving counts gives. */
static void test_frame_ids_and_fading(void)
{
	static const struct frame table_[] = { F_MAIN, F_WORK, F_HOT, F_MEMCPY };
	static const __u32 ids_a[] = { 0, 1, 2 }, ids_b[] = { 0, 1, 3 }, ids_c[] = { 0, 2 };
	struct stack_sample s[3] = {
		{ .comm = "app", .pid = 1, .value = 1, .nr_frames = 3, .frame_ids = ids_a },
		{ .comm = "app", .pid = 2, .value = 4, .nr_frames = 3, .frame_ids = ids_b },
		{ .comm = "cc", .pid = 3, .value = 2, .nr_frames = 2, .frame_ids = ids_c },
	};
	struct top_sort sort;
	struct top_table *t = table("dso,sym", &sort);
	struct top_period_stats st;
	struct top_row *rows;
	const struct top_row *r;
	size_t n;
	double total, left;

	for (int i = 0; i < 3; i++)
		s[i].frame_table = table_;
	/* pid 1's 1 sample fades after 6 refreshes (7/8^6 < 1/2), pid 2's 4 stay */
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 2, &st), 0);
	CHECK_INT(top_table__entries(t), 6);
	for (int i = 0; i < 6; i++)
		CHECK_INT(top_table__refresh(t, TOP_DECAY, NULL, 0, &st), 0);
	CHECK_INT(top_table__entries(t), 3);
	/* cc's new entries take the faded slots (main and hot are new: another process) */
	CHECK_INT(top_table__refresh(t, TOP_DECAY, &s[2], 1, &st), 0);
	CHECK_INT(top_table__entries(t), 5);
	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	left = 4 * 7.0 / 8 * 7 / 8 * 7 / 8 * 7 / 8 * 7 / 8 * 7 / 8 * 7 / 8;
	CHECK(total == left + 2);
	CHECK_INT(n, 4);
	CHECK_STR(rows[0].sym, "main");
	CHECK(rows[0].children == left + 2);
	r = find(rows, n, "hot");
	CHECK(r && r->self == 2 && r->children == 2 && r->main_pid == 3);
	r = find(rows, n, "memcpy");
	CHECK(r && r->self == left && r->main_pid == 2);
	free(rows);
	/* pid 1's old counts are not back: its function starts afresh */
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 1, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, false, 0, &rows, &n, &total), 0);
	r = find(rows, n, "hot");
	CHECK(r && r->self == 2 * 7.0 / 8 + 1);
	free(rows);
	top_table__free(t);
}

/* Unresolved frames and samples without frames get names, not NULL. */
static void test_unresolved(void)
{
	static const struct frame u[] = { { .module = "/usr/bin/cc1" },
					  { .module = "/usr/lib/x.so", .addr = 0x1234,
					    .offset = 0x234 } };
	struct stack_sample s[2] = { sample("cc1", 3, u, 2, 4), sample("k", 0, NULL, 0, 1) };
	struct top_sort sort;
	struct top_table *t = table("dso,sym", &sort);
	struct top_period_stats st;
	struct top_row *rows;
	size_t n;
	double total;

	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 2, &st), 0);
	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	CHECK(find(rows, n, "[cc1]") != NULL);
	CHECK(find(rows, n, "x.so+0x234") != NULL);
	CHECK(find(rows, n, "[unknown]") != NULL);
	free(rows);
	top_table__free(t);
}

static char *render(struct top_table *t, const struct top_sort *sort, int width, int max_rows,
		    int selected)
{
	struct stack_buf b = {};
	struct top_row *rows;
	size_t n;
	double total;
	struct top_layout l = { .sort = sort, .children = true, .width = width,
				.max_rows = max_rows, .selected = selected, .narrow = width > 0 };

	CHECK_INT(top_table__rows(t, NULL, true, 0, &rows, &n, &total), 0);
	CHECK_INT(top_render_rows(&b, rows, n, total, &l), 0);
	free(rows);
	return b.s;
}

static int max_line(const char *s)
{
	int max = 0, len = 0;

	for (; *s; s++) {
		len = *s == '\n' ? 0 : len + 1;
		max = len > max ? len : max;
	}
	return max;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_layout(void)
{
	struct top_sort sort;
	struct top_table *t = table("comm,dso,sym", &sort);
	struct stack_sample s[4];
	struct top_period_stats st;
	char *text;

	fill(s);
	CHECK_INT(top_table__refresh(t, TOP_DECAY, s, 4, &st), 0);
	text = render(t, &sort, 0, 0, -1);
	CHECK(strstr(text, "  Children      Self  Command  Shared Object      Symbol\n") != NULL);
	CHECK(strstr(text, "    90.00%     0.00%  app      app                [.] main\n") != NULL);
	CHECK(strstr(text, "[k] do_syscall_64") != NULL);
	CHECK_INT(lines(text), 1 + 7); /* main and hot of cc apart */
	free(text);
	/* a 40-column window: every line cut, rows limited to what fits */
	text = render(t, &sort, 40, 3, -1);
	CHECK_INT(max_line(text), 40);
	CHECK_INT(lines(text), 1 + 3);
	free(text);
	/* the cursor's row in reverse video, padded to the width */
	text = render(t, &sort, 60, 3, 1);
	CHECK(strstr(text, "\x1b[7m") != NULL);
	CHECK(strstr(text, "\x1b[0m\n") != NULL);
	free(text);
	top_table__free(t);
}

static void test_status(void)
{
	struct top_zoom z = { .pid = 42 };
	struct top_status st = { .event = "cpu-clock", .freq = 99, .seconds = 2,
				 .period = { .samples = 396, .kernel_samples = 99 }, .lost = 1,
				 .lost_total = 3, .target = "all, 2 CPUs", .zoom = &z,
				 .own_cpu = true, .cpu_ms = 4, .cpu_ms_per_s = 2 };
	struct stack_buf b = {};

	CHECK_INT(top_render_status(&b, &st, 0), 0);
	CHECK(strstr(b.s, "198.0 samples/s") != NULL);
	CHECK(strstr(b.s, "kernel: 25.0%") != NULL);
	CHECK(strstr(b.s, "lost: 1/3") != NULL);
	CHECK(strstr(b.s, "[cpu-clock at 99 Hz]") != NULL);
	CHECK(strstr(b.s, "zoom: pid 42") != NULL);
	CHECK(strstr(b.s, "own CPU: 4.0 ms this refresh, 2.00 ms/s") != NULL);
	CHECK_INT(lines(b.s), 3);
	stack_buf_free(&b);
	st.freq = 0;
	st.event = "sched:sched_switch";
	CHECK_INT(top_render_status(&b, &st, 50), 0);
	CHECK_INT(max_line(b.s), 50);
	stack_buf_free(&b);
}

static int feed(struct top_keyreader *k, const char *bytes)
{
	int key = 0;

	for (; *bytes; bytes++) {
		int got = top_keyreader_feed(k, (unsigned char)*bytes);

		key = got ? got : key;
	}
	return key;
}

static void test_keyreader(void)
{
	struct top_keyreader k = {};

	CHECK_INT(feed(&k, "q"), 'q');
	CHECK_INT(feed(&k, "\x1b[A"), TOPK_UP);
	CHECK_INT(feed(&k, "\x1b[B"), TOPK_DOWN);
	CHECK_INT(feed(&k, "\x1bOA"), TOPK_UP);
	CHECK_INT(feed(&k, "\x1b[5~"), TOPK_PGUP);
	CHECK_INT(feed(&k, "\x1b[6~"), TOPK_PGDN);
	CHECK_INT(feed(&k, "\x1b[H"), TOPK_HOME);
	CHECK_INT(feed(&k, "\x1b[4~"), TOPK_END);
	/* unknown sequences are swallowed whole */
	CHECK_INT(feed(&k, "\x1b[1;5C"), 0);
	CHECK_INT(feed(&k, "c"), 'c');
	/* Escape alone: known once no more bytes wait */
	CHECK_INT(feed(&k, "\x1b"), 0);
	CHECK_INT(top_keyreader_flush(&k), TOPK_ESC);
	CHECK_INT(top_keyreader_flush(&k), 0);
	/* a sequence split across reads */
	CHECK_INT(feed(&k, "\x1b["), 0);
	CHECK_INT(feed(&k, "B"), TOPK_DOWN);
}

static void test_ui_keys(void)
{
	struct top_ui ui = { .children = true };
	struct top_ui_ctx ctx = { .nr_rows = 10, .page = 4, .selected_pid = 77,
				  .selected_comm = "app" };

	CHECK_INT(top_ui_key(&ui, 'q', &ctx), TOP_ACT_QUIT);
	CHECK_INT(top_ui_key(&ui, 3, &ctx), TOP_ACT_QUIT);
	CHECK_INT(top_ui_key(&ui, ' ', &ctx), TOP_ACT_REDRAW);
	CHECK(ui.paused);
	CHECK_INT(top_ui_key(&ui, 'p', &ctx), TOP_ACT_REDRAW);
	CHECK(!ui.paused);
	top_ui_key(&ui, 'c', &ctx);
	CHECK(!ui.children);
	CHECK_INT(top_ui_key(&ui, 'z', &ctx), TOP_ACT_RESET | TOP_ACT_REDRAW);
	CHECK_INT(ui.mode, TOP_DECAY);
	top_ui_key(&ui, 'a', &ctx);
	CHECK_INT(ui.mode, TOP_ACCUMULATE);
	top_ui_key(&ui, 'a', &ctx);
	CHECK_INT(ui.mode, TOP_PER_REFRESH);
	top_ui_key(&ui, 'a', &ctx);
	CHECK_INT(ui.mode, TOP_DECAY);
	/* the cursor stays within the rows, and the screen follows it */
	for (int i = 0; i < 6; i++)
		top_ui_key(&ui, TOPK_DOWN, &ctx);
	CHECK_INT(ui.selected, 6);
	CHECK_INT(ui.first, 3);
	top_ui_key(&ui, TOPK_END, &ctx);
	CHECK_INT(ui.selected, 9);
	top_ui_key(&ui, TOPK_DOWN, &ctx);
	CHECK_INT(ui.selected, 9);
	top_ui_key(&ui, 'g', &ctx);
	CHECK_INT(ui.selected, 0);
	CHECK_INT(ui.first, 0);
	top_ui_key(&ui, 'k', &ctx);
	CHECK_INT(ui.selected, 0);
	/* P: into the row's process, P again: out */
	CHECK_INT(top_ui_key(&ui, 'P', &ctx), TOP_ACT_REDRAW);
	CHECK_INT(ui.zoom.pid, 77);
	top_ui_key(&ui, 'P', &ctx);
	CHECK_INT(ui.zoom.pid, 0);
	/* pid 0 (idle, kernel threads): by name */
	ctx.selected_pid = 0;
	top_ui_key(&ui, 'P', &ctx);
	CHECK_STR(ui.zoom.comm, "app");
	CHECK_INT(top_ui_key(&ui, TOPK_ESC, &ctx), TOP_ACT_REDRAW);
	CHECK_STR(ui.zoom.comm, "");
	CHECK_INT(top_ui_key(&ui, TOPK_ESC, &ctx), TOP_ACT_NONE);
	/* help: any key closes it, q still quits */
	top_ui_key(&ui, '?', &ctx);
	CHECK(ui.help);
	top_ui_key(&ui, 'c', &ctx);
	CHECK(!ui.help);
	CHECK(!ui.children);
	top_ui_key(&ui, 'h', &ctx);
	CHECK_INT(top_ui_key(&ui, 'q', &ctx), TOP_ACT_QUIT);
}

static void type(struct top_ui *ui, const struct top_ui_ctx *ctx, const char *s)
{
	for (; *s; s++)
		top_ui_key(ui, (unsigned char)*s, ctx);
}

static void test_ui_prompt(void)
{
	struct top_ui ui = {};
	struct top_ui_ctx ctx = { .nr_rows = 3, .page = 10 };

	top_ui_key(&ui, '/', &ctx);
	CHECK(ui.prompting);
	/* q is a letter of a name while typing */
	type(&ui, &ctx, "1234q");
	CHECK_INT(top_ui_key(&ui, 127, &ctx), TOP_ACT_REDRAW);
	CHECK_STR(ui.prompt, "1234");
	top_ui_key(&ui, '\r', &ctx);
	CHECK(!ui.prompting);
	CHECK_INT(ui.zoom.pid, 1234);
	top_ui_key(&ui, '/', &ctx);
	type(&ui, &ctx, "hotcold\r");
	CHECK_INT(ui.zoom.pid, 0);
	CHECK_STR(ui.zoom.comm, "hotcold");
	/* Esc cancels and keeps the zoom; an empty line zooms out */
	top_ui_key(&ui, '/', &ctx);
	type(&ui, &ctx, "x");
	top_ui_key(&ui, TOPK_ESC, &ctx);
	CHECK(!ui.prompting);
	CHECK_STR(ui.zoom.comm, "hotcold");
	top_ui_key(&ui, '/', &ctx);
	top_ui_key(&ui, '\r', &ctx);
	CHECK_STR(ui.zoom.comm, "");
	/* longer than a command name: cut, not overrun */
	top_ui_key(&ui, '/', &ctx);
	type(&ui, &ctx, "a-very-long-command-name\r");
	CHECK_INT(strlen(ui.zoom.comm), 15);
	/* Ctrl-C quits even while typing */
	top_ui_key(&ui, '/', &ctx);
	CHECK_INT(top_ui_key(&ui, 3, &ctx), TOP_ACT_QUIT);
}

int main(void)
{
	RUN(test_sort_keys);
	RUN(test_self_and_children);
	RUN(test_recursion_counts_once);
	RUN(test_modes);
	RUN(test_grouping_and_zoom);
	RUN(test_frame_ids_and_fading);
	RUN(test_unresolved);
	RUN(test_layout);
	RUN(test_status);
	RUN(test_keyreader);
	RUN(test_ui_keys);
	RUN(test_ui_prompt);
	TESTS_DONE();
}
