// SPDX-License-Identifier: GPL-2.0
/* bpfprof top: perf top, aggregated in the kernel.  It is profile's run (cmd/profile.h: the same
 * BPF object, targets, events and draining) whose kernel maps are handed over one period per
 * refresh (stack_run_take_period(): nothing lost, nothing counted twice), folded into the top
 * table (out/toptable.h) and shown full-screen (core/terminal.h, keys in cmd/topui.h) or as
 * plain-text refreshes. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "cmd/profile.h"
#include "cmd/topui.h"
#include "core/common.h"
#include "core/terminal.h"
#include "out/toptable.h"
#include "sym/stackagg.h"
#include "sym/stackcollect.h"
#include "profile.skel.h"

RUNNER_SKELETON(profile);

#define DELAY_DEFAULT_S 2.0
#define DELAY_MIN_S 0.1
#define STDIO_ROWS 40     /* rows a --stdio refresh prints when stdout is no terminal */
#define SCREEN_CHROME 2   /* screen lines besides the status: table header and key line */
/* Ticks while nothing happens (no new process, no key): the refresh's work is all a quiet
 * machine needs, and each wake-up costs as much (the runner's 100 ms otherwise). */
#define IDLE_TICK_NS 500000000ULL
/* malloc's thresholds for a live view (top_check()) */
#define TOP_MMAP_THRESHOLD (4 << 20)
#define TOP_TRIM_THRESHOLD (16 << 20)
#define IDLE_SLACK_NS 2000000ULL

static struct top_env {
	/* options */
	double delay;          /* -d */
	struct top_sort sort;  /* -s */
	bool zero;             /* -z */
	bool stdio;            /* --stdio */
	__u64 entries;         /* -E */
	/* the run */
	bool screen;           /* full-screen and keys, else plain-text refreshes */
	bool keys_wake;        /* keys typed wake the run loop: its ticks may be far apart */
	bool out_gone;         /* the output's reader left (| head): end, and write no more */
	struct top_table *table;
	struct top_ui ui;
	struct top_keyreader keys;
	struct stack_agg *all; /* --svg, --pprof: every period's samples, for the files at the end */
	struct stack_run *sr;  /* profile's (profile_state() costs syscalls: not at each tick) */
	const struct top_row *rows; /* the table's own (top_table__rows_view()) */
	size_t nr_rows;
	double total;          /* the rows' 100% */
	struct top_status status;
	char target[96];
	__u64 last_ns, next_ns; /* the last refresh, the next one due */
	__u64 lost_before;     /* samples lost by the last refresh */
	__u64 cpu_before_us;   /* our CPU time by the last refresh */
	__u64 refreshes;
} env;

static int opt_delay(const char *arg)
{
	if (parse_seconds(arg, &env.delay) || env.delay < DELAY_MIN_S) {
		p_err("invalid delay '%s' (seconds between refreshes, at least %g)", arg,
		      DELAY_MIN_S);
		return -EINVAL;
	}
	return 0;
}

static int opt_sort(const char *arg)
{
	if (top_sort_parse(arg, &env.sort)) {
		p_err("invalid sort keys '%s' (comm, pid, dso or sym, comma-separated, each once)",
		      arg);
		return -EINVAL;
	}
	return 0;
}

static const struct opt top_opts[] = {
	{ 'd', "delay", "SEC", "refresh every SEC seconds (default 2), as perf top's -d; the\n"
	  "run's length is --duration or DURATION", OPT_FN, .fn = opt_delay },
	{ 's', "sort", "KEYS", "rows by comm, pid, dso, sym: a comma list, in column order\n"
	  "(default dso,sym, as perf top)", OPT_FN, .fn = opt_sort },
	{ 'z', "zero", NULL, "each refresh counts only its own period (perf top -z);\n"
	  "default: counts decay by 7/8 each refresh, as perf top's", OPT_FLAG, &env.zero },
	{ 0, "stdio", NULL, "plain-text refreshes, even on a terminal (the default\n"
	  "when stdout is not one, or with -o)", OPT_FLAG, &env.stdio },
	{ 'E', "entries", "N", "rows a plain-text refresh shows (default: the terminal's\n"
	  "height, or 40)", OPT_U64, &env.entries, 1, 1000000 },
	{},
};

/* ---- the status line ---- */

static void append_ids(char *buf, size_t size, const char *what, const __u32 *ids, int n)
{
	size_t off = snprintf(buf, size, "%s ", what);

	for (int i = 0; i < n && off < size; i++)
		off += snprintf(buf + off, size - off, "%s%u", i ? "," : "", ids[i]);
}

/* What is profiled, for the status line: perf top's "(all, 2 CPUs)". */
static void describe_target(char *buf, size_t size)
{
	if (targets.nr_pids)
		append_ids(buf, size, "pid", targets.pids, targets.nr_pids);
	else if (targets.nr_tids)
		append_ids(buf, size, "tid", targets.tids, targets.nr_tids);
	else if (targets.cgroup)
		snprintf(buf, size, "cgroup %s", targets.cgroup);
	else if (targets.follow)
		snprintf(buf, size, "command %s", targets.command[0]);
	else if (targets.cpus)
		snprintf(buf, size, "%d selected CPUs", targets.nr_cpus);
	else
		snprintf(buf, size, "all, %ld CPUs", sysconf(_SC_NPROCESSORS_ONLN));
}

/* Our own CPU time so far (every thread: symbolizer, unwinder), microseconds. */
static __u64 own_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ULL + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* ---- showing ---- */

static int status_lines(void);
static int screen_page(void);

/* Rows a plain-text refresh prints: -E, else the terminal's height, else STDIO_ROWS. */
static int stdio_rows(FILE *out)
{
	int rows = STDIO_ROWS, cols;

	if (env.entries)
		return (int)env.entries;
	if (isatty(fileno(out))) {
		term_size(&rows, &cols);
		rows -= status_lines() + 1;
	}
	return rows;
}

/* The rows, those the view can show in order (the screen's page down to its cursor: keys have
 * moved it before the rows are made). */
static int build_rows(FILE *out)
{
	int first = env.screen ? (env.ui.first > env.ui.selected ? env.ui.first : env.ui.selected) +
				 screen_page() + 1 : stdio_rows(out);

	return top_table__rows_view(env.table, &env.ui.zoom, env.ui.children,
				    stack_opts.percent_limit, first > 0 ? first : 1, &env.rows,
				    &env.nr_rows, &env.total);
}

static struct top_layout layout(int width, int max_rows)
{
	return (struct top_layout){
		.sort = &env.sort,
		.children = !stack_opts.no_children || env.ui.children,
		.width = width,
		.max_rows = max_rows,
		.first = env.screen ? env.ui.first : 0,
		.selected = env.screen ? env.ui.selected : -1,
		.narrow = env.screen,
	};
}

static int status_lines(void)
{
	return 2 + env.status.own_cpu;
}

static int screen_page(void)
{
	int rows, cols;

	term_size(&rows, &cols);
	return rows - status_lines() - SCREEN_CHROME > 1 ? rows - status_lines() - SCREEN_CHROME : 1;
}

static size_t count_lines(const struct stack_buf *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->len; i++)
		n += b->s[i] == '\n';
	return n;
}

/* The key line at the bottom: the zoom prompt while one is typed. */
static int key_line(struct stack_buf *b)
{
	if (env.ui.prompting)
		return stack_buf_printf(b, "zoom into PID or command (Enter; empty: all; Esc: "
					"cancel): %s", env.ui.prompt);
	return stack_buf_printf(b, "h: help  q: quit  p: pause  c: %s  a: %s  z: zero  P, /: "
				"zoom", env.ui.children ? "sort by Self" : "sort by Children",
				top_mode_name((env.ui.mode + 1) % TOP_NR_MODES));
}

static int draw_screen(void)
{
	struct stack_buf b = {};
	int rows, cols, page = screen_page(), err;

	term_size(&rows, &cols);
	top_ui_clamp(&env.ui, env.nr_rows, page);
	err = top_render_status(&b, &env.status, cols);
	if (!err && env.ui.help) {
		err = stack_buf_add(&b, top_ui_help, strlen(top_ui_help));
	} else if (!err) {
		struct top_layout l = layout(cols, page);

		err = top_render_rows(&b, env.rows, env.nr_rows, env.total, &l);
		if (!err && !env.nr_rows)
			err = stack_buf_printf(&b, "  %s\n", env.refreshes ? "no samples" :
					       "waiting for the first refresh...");
	}
	while (!err && count_lines(&b) < (size_t)rows - 1)
		err = stack_buf_add(&b, "\n", 1);
	err = err ?: key_line(&b);
	err = err ?: term_draw(b.s, b.len);
	stack_buf_free(&b);
	return err;
}

static int print_refresh(FILE *out)
{
	struct stack_buf b = {};
	int rows, cols = 0, err;
	struct top_layout l;

	if (isatty(fileno(out)))
		term_size(&rows, &cols);
	l = layout(cols, stdio_rows(out));
	err = top_render_status(&b, &env.status, cols);
	err = err ?: top_render_rows(&b, env.rows, env.nr_rows, env.total, &l);
	if (!err && fprintf(out, "%s%s", env.refreshes > 1 ? "\n" : "", b.s) < 0)
		err = -errno;
	stack_buf_free(&b);
	if (!err && fflush(out) == EOF)
		err = -errno;
	if (err == -EPIPE) {
		/* nobody reads any more: the run ends as it would on q, without a word */
		env.out_gone = true;
		return 1;
	}
	if (err)
		runner_report_failed(err);
	return err;
}

/* A period's samples made final (event specs' BPF frames trimmed, once) and kept for the files
 * written at the end. */
static int keep_period(const struct profile_state *st, const struct stack_sample *s, size_t n)
{
	int err = 0;

	if (st->trim_bpf_frames)
		for (size_t i = 0; i < n; i++)
			stack_sample_trim_bpf((struct stack_sample *)&s[i]);
	for (size_t i = 0; env.all && i < n && !err; i++)
		err = stack_agg__add(env.all, &s[i]);
	if (err)
		p_err("cannot keep the samples for the files: %s", strerror(-err));
	return err;
}

/* One period's samples into the table, and on the screen or out; st read after the period's
 * end (its lost samples). */
static int show_period(struct runner *r, const struct profile_state *st,
		       const struct stack_sample *s, size_t n, __u64 now)
{
	__u64 cpu = own_cpu_us();
	double seconds = (now - env.last_ns) / 1e9;
	int err = keep_period(st, s, n);

	if (err)
		return err;
	err = top_table__refresh(env.table, env.ui.mode, s, n, &env.status.period);
	if (err) {
		p_err("cannot update the table: %s", strerror(-err));
		return err;
	}
	env.refreshes++;
	env.status.seconds = seconds;
	env.status.lost = st->lost - env.lost_before;
	env.status.lost_total = st->lost;
	env.status.mode = env.ui.mode;
	env.status.cpu_ms = (cpu - env.cpu_before_us) / 1000.0;
	env.status.cpu_ms_per_s = seconds > 0 ? env.status.cpu_ms / seconds : 0;
	env.lost_before = st->lost;
	env.cpu_before_us = cpu;
	env.last_ns = now;
	if (env.screen && env.ui.paused)
		return 0;
	err = build_rows(r->out);
	if (err) {
		p_err("cannot update the table: %s", strerror(-err));
		return err;
	}
	return env.screen ? draw_screen() : print_refresh(r->out);
}

/* A refresh: the period ends now and the next starts empty. */
static int refresh(struct runner *r)
{
	struct profile_state st;
	struct stack_agg *period;
	const struct stack_sample *s;
	size_t n = 0;
	int err;

	period = stack_run_take_period(env.sr);
	if (!period)
		return -errno;
	profile_state(r, &st);
	s = stack_agg__samples(period, &n);
	err = show_period(r, &st, s, n, now_ns());
	stack_agg__free(period);
	return err;
}

/* ---- keys ---- */

static int apply_key(int key)
{
	const struct top_row *sel = env.ui.selected < (int)env.nr_rows ?
				    &env.rows[env.ui.selected] : NULL;
	struct top_ui_ctx ctx = {
		.nr_rows = env.nr_rows,
		.page = screen_page(),
		.selected_pid = sel ? sel->main_pid : 0,
		.selected_comm = sel ? sel->main_comm : NULL,
	};
	int act = top_ui_key(&env.ui, key, &ctx);

	if (act & TOP_ACT_RESET)
		top_table__clear(env.table);
	env.status.paused = env.ui.paused;
	env.status.zoom = &env.ui.zoom;
	return act;
}

/* The keys typed since the last tick.  > 0 to quit. */
static int read_keys(void)
{
	unsigned char buf[64];
	int n, act = 0, err = 0;

	while ((n = term_read(buf, sizeof(buf))) > 0)
		for (int i = 0; i < n; i++)
			act |= apply_key(top_keyreader_feed(&env.keys, buf[i]));
	act |= apply_key(top_keyreader_flush(&env.keys));
	if (act & TOP_ACT_QUIT)
		return 1;
	if (term_resized())
		act |= TOP_ACT_REDRAW;
	if (act & TOP_ACT_REDRAW) {
		err = build_rows(stdout);
		err = err ?: draw_screen();
	}
	return err;
}

/* ---- the command's hooks ---- */

/* --max-stacks by default: room for eight refreshes' samples at most (the clocks and hardware
 * events sample at most HZ a CPU), 1024 to profile's 16384.  Draining walks every bucket of both
 * maps, full or not: at 99 Hz on 2 CPUs, 16384 keys (32768 stacks) made the walk most of a
 * refresh's cost.  More samples than that (an event spec, a burst) drain the maps early, as
 * profile's do once a quarter full. */
static void size_maps(const struct profile_state *st)
{
	int cpus = targets.cpus ? targets.nr_cpus : (int)sysconf(_SC_NPROCESSORS_ONLN);
	double want = 8.0 * st->freq * (cpus > 0 ? cpus : 1) * env.delay;
	__u64 n = 1024;

	/* event specs count every hit; more than one event samples each at HZ */
	if (!stack_opts.max_stacks_auto || !st->freq || strchr(st->event, ','))
		return;
	while (n < want && n < stack_opts.max_stacks)
		n *= 2;
	stack_opts.max_stacks = n;
}

static int top_check(struct runner *r)
{
	struct profile_state st;
	int err;

	if (!env.delay)
		env.delay = DELAY_DEFAULT_S;
	if (!env.sort.nr)
		top_sort_parse("dso,sym", &env.sort);
	/* frame pointers, as perf top -g: building unwind tables for every new program costs a live
	 * view more CPU than it should spend (--unwind auto for code without frame pointers) */
	if (!stack_opts.unwind_given)
		stack_opts.unwind = UNWIND_FP;
	/* functions, as perf top shows them: no inlined frames, so no DWARF read at a refresh */
	stack_opts.no_inline = true;
	err = profile_check(r);
	if (err)
		return err;
	profile_state(r, &st);
	env.sr = st.sr;
	size_maps(&st);
	/* samples keep their process, for 'P' and --sort pid */
	st.sr->by_tid = true;
	/* the kernel's maps are read at each refresh, not in between as well (twice the reads for
	 * nothing): only where a refresh is late, or the maps fill up */
	st.sr->drain_every_ns = 2 * env.delay * 1e9;
	st.sr->trim_on_interval = true;
	/* a refresh's large blocks (the period's aggregation, new programs' symbol tables) from
	 * the heap, whose free memory the next refresh reuses, not mapped afresh and faulted in at
	 * each one; and the heap's top kept between the trims (the runner's settings give big
	 * blocks back at once: a one-shot profile's peak) */
	mallopt(M_MMAP_THRESHOLD, TOP_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, TOP_TRIM_THRESHOLD);
	env.table = top_table__new(&env.sort);
	if (stack_files_wanted())
		env.all = stack_agg__new(true);
	if (!env.table || (stack_files_wanted() && !env.all)) {
		p_err("cannot set up the table: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	env.screen = !env.stdio && !run_opts.out.path && isatty(STDOUT_FILENO);
	env.ui.children = !stack_opts.no_children;
	env.ui.mode = env.zero ? TOP_PER_REFRESH : TOP_DECAY;
	describe_target(env.target, sizeof(env.target));
	env.status = (struct top_status){
		.event = st.event, .freq = st.freq, .target = env.target, .mode = env.ui.mode,
		.zoom = &env.ui.zoom, .own_cpu = verbose,
	};
	return 0;
}

static int top_started(struct runner *r)
{
	int err = profile_started(r);

	if (err)
		return err;
	env.last_ns = now_ns();
	env.next_ns = env.last_ns + (__u64)(env.delay * 1e9);
	env.cpu_before_us = own_cpu_us();
	/* processes seen and gone are read at the ticks (each wake-up for them cost as much as
	 * reading them: 30 a second under a compiler loop), but the unwinder's table requests
	 * as they come */
	r->lazy_rings = !env.sr->unwinder;
	if (!env.screen) {
		/* a pipe whose reader left (| head) ends the run at once, not at the next refresh
		 * (a file cannot be polled, and has no reader to lose) */
		runner_wake_on(r, fileno(r->out), 0);
		return 0;
	}
	err = term_enter(isatty(STDIN_FILENO) ? STDIN_FILENO : -1, STDOUT_FILENO);
	if (err) {
		p_err("cannot set up the terminal: %s", strerror(-err));
		return err;
	}
	env.keys_wake = isatty(STDIN_FILENO) && !runner_wake_on(r, STDIN_FILENO, EPOLLIN);
	return draw_screen();
}

/* Whether plain text's reader is gone: a pipe's read end closed (POLLERR), a terminal hung
 * up.  A file says neither. */
static bool output_gone(FILE *out)
{
	struct pollfd p = { .fd = fileno(out) };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

static int top_tick(struct runner *r)
{
	__u64 now;
	int err = profile_tick(r);

	if (!err && env.screen)
		err = read_keys();
	if (!err && !env.screen && output_gone(r->out)) {
		env.out_gone = true;
		return 1;
	}
	now = now_ns();
	if (!err && now >= env.next_ns) {
		/* a late tick does not bunch the refreshes that follow */
		env.next_ns += (__u64)(env.delay * 1e9);
		if (env.next_ns <= now)
			env.next_ns = now + (__u64)(env.delay * 1e9);
		err = refresh(r);
	}
	if (err)
		return err;
	/* the next tick: soon while processes come and go, or where keys are read only at ticks;
	 * else at most IDLE_TICK_NS on, and not past the refresh (the runner counts from the
	 * tick's start: SLACK keeps it from waking a moment early) */
	r->idle_tick_ns = 0;
	if (!env.screen || env.keys_wake) {
		__u64 idle = env.next_ns - now + IDLE_SLACK_NS;

		idle = idle < IDLE_TICK_NS ? idle : IDLE_TICK_NS;
		r->idle_tick_ns = idle < env.sr->quiet_ns ? idle : env.sr->quiet_ns;
	}
	return 0;
}

/* The screen goes first: whatever is said from here on is said on the user's terminal. */
static void top_detach(struct runner *r)
{
	term_leave();
	profile_detach(r);
}

/* The whole run's --svg and --pprof, as profile writes them. */
static void write_files(struct runner *r)
{
	struct profile_texts texts;
	struct stack_outputs o;
	struct stack_tree t;

	profile_outputs(r, &texts, &o);
	stack_agg__tree(env.all, &t);
	stack_files_write(&o, NULL, 0, &t);
}

/* Plain text: the last period too, when it is long enough to say something (Ctrl-C, DURATION
 * or the target's end cut it short); perf top prints nothing more either.  The files have it
 * all. */
static int top_write(struct runner *r)
{
	struct profile_state st;
	__u64 end = r->end_ns ?: now_ns();
	int err;

	profile_state(r, &st);
	err = stack_run_samples(st.sr);
	if (err)
		return err;
	if (!env.screen && !env.out_gone &&
	    (!env.refreshes || (end - env.last_ns) / 1e9 >= env.delay / 2))
		err = show_period(r, &st, st.sr->samples, st.sr->nr_samples, end);
	else
		err = keep_period(&st, st.sr->samples, st.sr->nr_samples);
	/* > 0: the reader left as the last refresh went out; the files are still written */
	err = err > 0 ? 0 : err;
	if (!err && env.all)
		write_files(r);
	return err;
}

static void top_teardown(struct runner *r)
{
	term_leave();
	top_table__free(env.table);
	stack_agg__free(env.all);
	profile_teardown(r);
	memset(&env, 0, sizeof(env));
}

const struct command top_cmd = {
	.name = "top",
	.summary = "the hottest functions, live (perf top, counted in the kernel)",
	.description =
		"Sample on-CPU stacks as profile does, and show the hottest functions (Self and\n"
		"Children, user and kernel) every -d SEC: full-screen with keys on a terminal, plain\n"
		"text otherwise.  The kernel's counts are drained each refresh: nothing is lost\n"
		"between refreshes or counted twice.",
	.notes =
		PROFILE_EVENT_NOTES
		"\n"
		"Keys: q or Ctrl-C quit; space or p pause; c sort by Children / Self; a counts\n"
		"decaying (perf top's default: 7/8 a refresh) / accumulating / per refresh (-z);\n"
		"z zero the counts; Up/Down (j/k) move; P zoom into the process of the row (again:\n"
		"all); / zoom into a PID or command typed; h or ? help.  The header says samples per\n"
		"second, the share taken in the kernel, samples lost (this refresh/all) and, with\n"
		"-v, bpfprof's own CPU time per refresh and per second.  User stacks are walked by\n"
		"frame pointers unless --unwind says otherwise (as perf top -g does).  --max-stacks\n"
		"defaults to room for eight refreshes' samples at -F HZ (1024 to 16384).\n",
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_STACKS | CAP_STACK_FILES | CAP_EVENTS,
	.positional = POS_DURATION,
	.opts = top_opts,
	.sampling_opts = profile_sampling_opts,
	.skel = &profile_skel,
	.check = top_check,
	.configure = profile_configure,
	.fallback = stack_run_fallback,
	.attach = profile_attach,
	.started = top_started,
	.tick = top_tick,
	.detach = top_detach,
	.collect = profile_collect,
	.write = top_write,
	.teardown = top_teardown,
};
