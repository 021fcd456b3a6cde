// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "core/child.h"
#include "core/common.h"
#include "core/progload.h"
#include "core/features.h"
#include "core/follow.h"
#include "core/heatmaprun.h"
#include "core/period.h"
#include "core/runner.h"
#include "core/stackrun.h"
#include "sym/syms.h"

/* How often the run loop wakes without an event: ticks, child and target checks. */
#define TICK_NS 100000000ULL
/* How long ring-buffer events gather after a wake-up before the next poll (wait_for()). */
#define RB_GATHER_NS 10000000ULL
#define INTERVAL_MIN_S 0.01

struct run_opts run_opts;

static volatile sig_atomic_t child_signalled;
/* the first error of an output given up (runner_output_failed): the run's exit status */
static int output_err;
/* where the report goes (runner_set_report_output()), NULL for stdout; whether it failed */
static struct output *report_output;
static bool report_failed;

/* -e A,B (and, for POS_EVENTS, each argument): appended one by one, as perf splits -e. */
static int opt_event(const char *arg)
{
	for (const char *p = arg; *p; p += *p == ',') {
		size_t len = strcspn(p, ",");
		char **grown, *ev;

		if (!len)
			continue;
		grown = realloc(run_opts.events, (run_opts.nr_events + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		run_opts.events = grown;
		ev = strndup(p, len);
		if (!ev)
			return -ENOMEM;
		run_opts.events[run_opts.nr_events++] = ev;
		p += len;
	}
	return 0;
}

/* A DURATION that is not one.  perf's subcommand words ("perf sched latency") get what to
 * type here: one command per job, no subcommands. */
static void duration_error(const char *cmd, const char *arg)
{
	static const struct { const char *cmd, *word, *hint; } words[] = {
		{ "sched", "latency", "bpfprof sched prints perf sched latency's table: no subcommand" },
		{ "sched", "lat", "bpfprof sched prints perf sched latency's table: no subcommand" },
		{ "sched", "timehist", "perf sched timehist is bpfprof sched --timehist" },
		{ "sched", "record", "bpfprof sched counts in the kernel as it runs: nothing is "
				     "recorded to replay (perf sched latency's table, or --timehist)" },
	};
	double d;

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (cmd && !strcmp(cmd, words[i].cmd) && !strcmp(arg, words[i].word)) {
			p_err("'%s' is not a duration: %s", arg, words[i].hint);
			return;
		}
	if (parse_seconds(arg, &d) == -ERANGE && strtod(arg, NULL) > 0)
		p_err("invalid duration '%s' (seconds, at most a year: %.0f)", arg, 365.0 * 24 * 3600);
	else
		p_err("invalid duration '%s' (expected seconds > 0)", arg);
}

/* -d: BCC's biolatency spells its disk option -d; in bpfprof's grammar -d is the duration
 * everywhere, so a disk name here gets a pointer to --disk. */
static int opt_duration(const char *arg)
{
	char path[PATH_MAX];

	if (!parse_seconds(arg, &run_opts.duration))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/block/%s", arg);
	if (!strchr(arg, '/') && !access(path, F_OK))
		p_err("invalid duration '%s' (expected seconds > 0; -d is the duration in every "
		      "command: biolat's disk is --disk %s)", arg, arg);
	else
		duration_error(NULL, arg);
	return -EINVAL;
}

static const struct opt event_table[] = {
	{ 'e', "event", "EVENT[,EVENT...]", "what to trace; repeatable (EVENT: see below)", OPT_FN,
	  .fn = opt_event, .needs = CAP_EVENTS },
	{},
};

static const struct opt run_table[] = {
	{ 'd', "duration", "SEC", "stop after SEC seconds (as a DURATION argument does)",
	  OPT_FN, .fn = opt_duration },
	{ 'i', "interval", "SEC", "report every SEC seconds",
	  OPT_SECONDS, &run_opts.interval, .what = "interval", .needs = CAP_INTERVALS },
	{ 'I', "interval-print", "MS", "report every MS milliseconds (perf stat's -I)", OPT_U64,
	  &run_opts.interval_ms, .min = 10, .max = 3600000, .what = "interval",
	  .hint = "milliseconds, at least 10", .needs = CAP_INTERVALS },
	{ 'T', "timestamp", NULL, "print the time before each report", OPT_FLAG, &run_opts.timestamp,
	  .needs = CAP_INTERVALS },
	{ 'o', "output", "FILE", "write the output to FILE (whole, or not at all)", OPT_OUTPUT,
	  &run_opts.out },
	{},
};

static bool no_debuginfod;

static const struct opt general_table[] = {
	{ 0, "no-debuginfod", NULL, "never ask debuginfod (DEBUGINFOD_URLS) for debug info",
	  OPT_FLAG, &no_debuginfod, .needs = CAP_SYMBOLS },
	{ 'v', "verbose", NULL, "print libbpf messages, the choices made, each BPF\n"
	  "program's cost per run and, where the maps are drained,\n"
	  "the memory held, part by part, every 30 drains, and the\n"
	  "RSS before the outputs and the peak with them", OPT_FLAG, &verbose },
	{ 'h', "help", NULL, "this help", OPT_FLAG, NULL },
	{},
};

int runner_option_groups(const struct command *cmd, struct opt_group *groups, int max)
{
	const struct opt_group all[] = {
		{ "Options", cmd->opts },
		{ "Sampling", cmd->sampling_opts },
		{ "Targets", target_opts },
		{ "Events", event_table },
		{ "Stacks", stack_opts_table },
		{ "Stack output", stack_output_opts_table },
		{ "Heat map", heatmap_opts_table },
		{ "Continuous profiling", period_opts_table },
		{ "Run and output", run_table },
		{ "General", general_table },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && n < max; i++)
		if (all[i].opts)
			groups[n++] = all[i];
	return n;
}

void runner_reset_options(void)
{
	for (int i = 0; i < run_opts.nr_events; i++)
		free(run_opts.events[i]);
	free(run_opts.events);
	memset(&run_opts, 0, sizeof(run_opts));
	targets_reset(&targets);
	stack_opts_reset(&stack_opts);
	period_opts_reset();
	heatmap_opts_reset(&heatmap_opts);
	verbose = false;
	no_debuginfod = false;
}

static const char *positional_usage(const struct command *cmd)
{
	switch (cmd->positional) {
	case POS_INTERVAL:
		return "[INTERVAL [COUNT]]";
	case POS_EVENTS:
		return cmd->no_events ? "EVENT... [DURATION]" : "[EVENT...] [DURATION]";
	case POS_SYMBOL_DURATION:
		return "[SYMBOL] [DURATION]";
	default:
		return "[DURATION]";
	}
}

/* name: as typed, the command's name or its alias */
static void usage_line(const struct command *cmd, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "Usage: bpfprof %s [options] %s [-- COMMAND [ARGS...]]", name,
		 positional_usage(cmd));
}

static void print_help(const struct command *cmd, const char *name)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	int n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);
	char line[256];

	usage_line(cmd, name, line, sizeof(line));
	printf("%s\n%s\n", line, cmd->description);
	opts_print_help(stdout, groups, n, cmd->caps);
	if (cmd->notes)
		printf("\n%s", cmd->notes);
	printf("\n%s%s%s",
	       cmd->positional == POS_INTERVAL ?
	       "INTERVAL [COUNT]: a report every INTERVAL seconds, COUNT times; without them, one\n"
	       "report at the end.  " : "DURATION: seconds.  ",
	       "The run lasts until Ctrl-C (what was collected is still written),\n"
	       "DURATION, COMMAND's exit, or the exit of every -p/-t target.\n"
	       "-- COMMAND: run COMMAND and trace it, from its exec, and everything it forks;\n"
	       "with -a, -p, -t, -C or --cgroup it only bounds the run, as in perf.  Still\n"
	       "running when the run ends, it gets SIGTERM, then SIGKILL 2 s later (at once on\n"
	       "a second Ctrl-C).",
	       cmd->positional != POS_DURATION && cmd->positional != POS_INTERVAL ?
	       "\n" :
	       "  As in perf, '--' may be left out when COMMAND is a program (a path, or\n"
	       "a name in PATH) and not a number: the arguments after it are COMMAND's.\n");
}

/* The positional arguments, by the command's grammar.  0 or -EINVAL (printed). */
static int take_positional(const struct command *cmd, char **pos, int n)
{
	int i = 0;

	if (cmd->positional == POS_EVENTS) {
		/* a trailing number is the DURATION: no event spec is a bare number */
		double d;

		if (n && !parse_seconds(pos[n - 1], &d) && run_opts.duration) {
			p_err("DURATION given twice ('%s' and -d)", pos[n - 1]);
			return -EINVAL;
		}
		if (n && !parse_seconds(pos[n - 1], &d))
			run_opts.duration = d, n--;
		for (; i < n; i++)
			if (opt_event(pos[i]))
				return -ENOMEM;
		return 0;
	}
	if (cmd->positional == POS_SYMBOL_DURATION && n > 0) {
		/* no symbol begins with a digit: such a word is the DURATION, and it comes last */
		bool last_is_duration = isdigit((unsigned char)pos[n - 1][0]) || pos[n - 1][0] == '.';

		if (n > 1 + last_is_duration || (n == 2 && isdigit((unsigned char)pos[0][0]))) {
			p_err("unexpected argument '%s' (SYMBOL then DURATION; a command goes after "
			      "'--')", pos[n - 1]);
			return -EINVAL;
		}
		if (n > last_is_duration)
			run_opts.symbol = pos[0];
		if (!last_is_duration)
			return 0;
		pos += n - 1;
		n = 1;
	}
	if (cmd->positional == POS_INTERVAL && n > 0) {
		if (run_opts.interval) {
			p_err("INTERVAL given twice ('%s' and -i)", pos[0]);
			return -EINVAL;
		}
		if (parse_seconds(pos[0], &run_opts.interval) || run_opts.interval < INTERVAL_MIN_S) {
			p_err("invalid interval '%s' (seconds, at least %g)", pos[0], INTERVAL_MIN_S);
			return -EINVAL;
		}
		i++;
		if (n > 1 && parse_u64(pos[1], 1, UINT32_MAX, &run_opts.count)) {
			p_err("invalid count '%s' (expected a whole number, at least 1)", pos[1]);
			return -EINVAL;
		}
		i += n > 1;
	} else if ((cmd->positional == POS_DURATION || cmd->positional == POS_SYMBOL_DURATION) &&
		   n > 0) {
		if (run_opts.duration) {
			p_err("DURATION given twice ('%s' and -d)", pos[0]);
			return -EINVAL;
		}
		if (parse_seconds(pos[0], &run_opts.duration)) {
			duration_error(cmd->name, pos[0]);
			return -EINVAL;
		}
		i++;
	}
	if (i < n) {
		p_err("unexpected argument '%s' (a command goes after '--')", pos[i]);
		return -EINVAL;
	}
	return 0;
}

/* Checks across the run options.  0 or -EINVAL (printed). */
static int check_run(const struct command *cmd)
{
	if (run_opts.interval_ms) {
		if (run_opts.interval) {
			p_err("an interval is given twice (-I and -i or INTERVAL)");
			return -EINVAL;
		}
		run_opts.interval = run_opts.interval_ms / 1000.0;
	}
	if (run_opts.interval && run_opts.interval < INTERVAL_MIN_S) {
		p_err("invalid interval '%g' (seconds, at least %g)", run_opts.interval, INTERVAL_MIN_S);
		return -EINVAL;
	}
	if (run_opts.timestamp && !run_opts.interval) {
		p_err("-T needs -i INTERVAL (or -I, or INTERVAL): it stamps each interval's report");
		return -EINVAL;
	}
	if (cmd->positional == POS_EVENTS && !run_opts.nr_events && cmd->no_events) {
		p_err("%s", cmd->no_events);
		return -EINVAL;
	}
	return 0;
}

/* perf's "perf record -a -g sleep 5": without "--", a positional argument that is no number
 * but a program (a path, or a name found in PATH) begins the command.  Commands whose
 * positionals are words (event specs, a symbol) keep "--": a bare word there names a kernel
 * function or a symbol. */
static bool begins_command(const char *arg)
{
	char path[PATH_MAX];
	double seconds;

	return parse_seconds(arg, &seconds) && !child_program_path(arg, path, sizeof(path));
}

/* A parse starts without the output paths of an earlier one (the commands' own outputs are
 * not in run_opts), unless that output is open: -r's runs share it. */
static void forget_output(const struct opt *o, void *ctx)
{
	struct output *out = o->dest;

	if (o->type == OPT_OUTPUT && !out->of.f)
		out->path = NULL;
}

int runner_parse(const struct command *cmd, int argc, char **argv)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	struct opt_args args;
	char line[256];
	int n, err;

	runner_reset_options();
	n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);
	opts_for_each(groups, n, cmd->caps, forget_output, NULL);
	usage_line(cmd, argv[0], line, sizeof(line));
	err = opts_parse_cmd(argc, argv, groups, n, cmd->caps, line,
			     cmd->positional == POS_DURATION || cmd->positional == POS_INTERVAL ?
			     begins_command : NULL, &args);
	if (err == 1) {
		print_help(cmd, argv[0]);
		return 1;
	}
	err = err ?: take_positional(cmd, args.pos, args.nr_pos);
	err = err ?: check_run(cmd);
	err = err ?: targets_resolve(&targets, args.command);
	syms_set_debuginfod(!no_debuginfod);
	err = err ?: (cmd->caps & CAP_STACKS ? stack_opts_check(&stack_opts) : 0);
	err = err ?: (cmd->caps & CAP_HEATMAP ? heatmap_opts_check(&heatmap_opts) : 0);
	err = err ?: (cmd->caps & CAP_PERIODS ? period_opts_check() : 0);
	err = err ?: outputs_distinct(groups, n, cmd->caps);
	return err ? -EINVAL : 0;
}

double runner_planned_seconds(void)
{
	if (run_opts.duration)
		return run_opts.duration;
	return run_opts.interval * run_opts.count;
}

double runner_elapsed(const struct runner *r)
{
	__u64 end = r->end_ns ?: now_ns();

	return r->start_ns && end > r->start_ns ? (end - r->start_ns) / 1e9 : 0;
}

static int add_ringbuf(struct ring_buffer **rb, struct bpf_map *map, ring_buffer_sample_fn fn,
		       void *ctx)
{
	int err = 0;

	if (!*rb) {
		*rb = ring_buffer__new(bpf_map__fd(map), fn, ctx, NULL);
		err = *rb ? 0 : -errno;
	} else if (ring_buffer__add(*rb, bpf_map__fd(map), fn, ctx)) {
		err = -errno;
	}
	if (err)
		p_err("cannot create the ring buffer: %s", strerror(-err));
	return err;
}

int runner_add_ringbuf(struct runner *r, struct bpf_map *map, ring_buffer_sample_fn fn, void *ctx)
{
	return add_ringbuf(&r->rb, map, fn, ctx);
}

int runner_add_ringbuf_ticks(struct runner *r, struct bpf_map *map, ring_buffer_sample_fn fn,
			     void *ctx)
{
	return add_ringbuf(&r->rb_ticks, map, fn, ctx);
}

/* epoll data of the rings' own epoll fd in wake_epfd; the other fds carry their number */
#define WAKE_RINGS (-1)

int runner_wake_on(struct runner *r, int fd, __u32 events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	if (!r->wake_epfd) {
		struct epoll_event rings = { .events = EPOLLIN, .data.fd = WAKE_RINGS };
		int epfd = epoll_create1(EPOLL_CLOEXEC);

		if (epfd < 0)
			return -errno;
		/* the rings' epoll fd is readable while any ring holds data: one wait for both */
		if (r->rb && !r->lazy_rings && epoll_ctl(epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &rings)) {
			close(epfd);
			return -errno;
		}
		r->wake_epfd = epfd;
	}
	return epoll_ctl(r->wake_epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int runner_resolve_events(struct probe_events *evs)
{
	return probe_resolve_specs(run_opts.events, run_opts.nr_events,
				   targets.nr_pids ? targets.pids[0] : 0, evs);
}

int runner_attach_events(struct runner *r, const struct probe_progs *p,
			 const struct probe_events *evs)
{
	return probe_attach(p, evs, targets.pids, targets.nr_pids, &r->links);
}

/* ---- signals ---- */

static void on_signal(int sig)
{
	/* a second Ctrl-C: COMMAND gets no more grace (child_stop) */
	exiting = exiting ? 2 : 1;
}

static void on_child(int sig)
{
	child_signalled = 1;
}

/* SIGINT/SIGTERM end the run; SIGCHLD wakes it when COMMAND exits.  The run loop's epoll_wait
 * and nanosleep return EINTR whatever SA_RESTART says; SA_RESTART keeps a write to a slow pipe
 * from failing with it. */
static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	/* a closed output pipe is reported as a write error, not a silent death */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- output files ---- */

struct outputs_ctx {
	int err;
	const struct opt *seen[16]; /* outputs given so far, for a path given twice */
	int nr_seen;
};

/* Two outputs into one regular file: the second rename would silently replace the first. */
static void distinct_output(const struct opt *o, void *ctx)
{
	struct outputs_ctx *oc = ctx;
	const char *path = o->type == OPT_OUTPUT ? ((struct output *)o->dest)->path : NULL;
	char a[64], b[64];
	struct stat st;

	if (!path || oc->err || (!stat(path, &st) && !S_ISREG(st.st_mode)))
		return; /* /dev/null, a pipe: written through, nothing replaced */
	for (int i = 0; i < oc->nr_seen; i++)
		if (!strcmp(((struct output *)oc->seen[i]->dest)->path, path)) {
			p_err("%s and %s both write %s: give each its own file",
			      opt_name(oc->seen[i], a, sizeof(a)), opt_name(o, b, sizeof(b)), path);
			oc->err = -EINVAL;
			return;
		}
	if (oc->nr_seen < (int)(sizeof(oc->seen) / sizeof(oc->seen[0])))
		oc->seen[oc->nr_seen++] = o;
}

int outputs_distinct(const struct opt_group *groups, int n, unsigned int caps)
{
	struct outputs_ctx oc = {};

	opts_for_each(groups, n, caps, distinct_output, &oc);
	return oc.err;
}

static void open_output(const struct opt *o, void *ctx)
{
	struct outputs_ctx *oc = ctx;
	struct output *out = o->dest;

	if (o->type != OPT_OUTPUT || !out->path || out->of.f || oc->err)
		return;
	if (!outfile_open(out->path, &out->of)) {
		oc->err = -errno;
		p_err("cannot write %s: %s", out->path, strerror(errno));
	}
}

static void abort_output(const struct opt *o, void *ctx)
{
	if (o->type == OPT_OUTPUT)
		outfile_abort(&((struct output *)o->dest)->of);
}

static void commit_output(const struct opt *o, void *ctx)
{
	struct outputs_ctx *oc = ctx;
	struct output *out = o->dest;
	int err;

	if (o->type != OPT_OUTPUT || !out->of.f)
		return;
	err = outfile_commit(&out->of);
	if (err) {
		p_err("cannot write %s: %s", out->path, strerror(-err));
		oc->err = oc->err ?: err;
	}
}

void runner_output_failed(struct output *out, int err)
{
	p_err("cannot write %s: %s", out->path, strerror(-err));
	outfile_abort(&out->of);
	output_err = output_err ?: err;
}

void runner_set_report_output(struct output *out)
{
	report_output = out;
	report_failed = false;
}

void runner_report_failed(int err)
{
	/* once: stdout's error flag fails the last flush again */
	if (report_failed)
		return;
	report_failed = true;
	if (report_output && report_output->of.f) {
		runner_output_failed(report_output, err);
		return;
	}
	if (err != -EPIPE)
		p_err("cannot write the output: %s", strerror(-err));
	output_err = output_err ?: err;
}

int runner_output_error(void)
{
	return output_err;
}

/* Every output file of the command's options, opened before tracing starts so that a path
 * that cannot be written fails at once.  0 or -errno (printed; nothing left behind). */
int outputs_open(const struct opt_group *groups, int n, unsigned int caps)
{
	struct outputs_ctx oc = {};

	opts_for_each(groups, n, caps, open_output, &oc);
	if (oc.err)
		opts_for_each(groups, n, caps, abort_output, NULL);
	return oc.err;
}

int outputs_commit(const struct opt_group *groups, int n, unsigned int caps)
{
	struct outputs_ctx oc = {};

	opts_for_each(groups, n, caps, commit_output, &oc);
	return oc.err;
}

void outputs_abort(const struct opt_group *groups, int n, unsigned int caps)
{
	opts_for_each(groups, n, caps, abort_output, NULL);
}

int runner_open_outputs(const struct command *cmd)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	int n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);

	return outputs_open(groups, n, cmd->caps);
}

static int commit_outputs(const struct command *cmd)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	int n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);

	return outputs_commit(groups, n, cmd->caps);
}

void runner_abort_outputs(const struct command *cmd)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	int n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);

	outputs_abort(groups, n, cmd->caps);
}

/* ---- setup ---- */

/* When bpfprof started (runner_main()): -v says how long the start took, and where it went. */
static __u64 launch_ns;

enum phase { PH_OPENED, PH_LOADED, PH_ATTACHED, PH_READY, PH_DETACHED, PH_COLLECTED,
	     PH_REPORTED, PH_WRITTEN, PH_COUNT };
static __u64 phase_ns[PH_COUNT];

static void mark(enum phase p)
{
	phase_ns[p] = now_ns();
}

/* ms from phase a to phase b (0 for a phase not reached) */
static double phase_ms(enum phase a, enum phase b)
{
	return phase_ns[a] && phase_ns[b] > phase_ns[a] ? (phase_ns[b] - phase_ns[a]) / 1e6 : 0;
}

/* "Not permitted" is final: reloading another configuration cannot help, and blaming a feature
 * for it would mislead.  Anything else may be a kernel that lacks what was asked for. */
static bool not_permitted(int err)
{
	return err == -EPERM;
}

static int open_skeleton(struct runner *r)
{
	const struct command *cmd = r->cmd;
	int err;

	r->skel = cmd->skel->open();
	if (!r->skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		return err;
	}
	r->obj = cmd->skel->obj(r->skel);
	cmd->skel->target(r->skel, &r->target);
	err = targets_configure(&targets, &r->target);
	return err ?: (cmd->configure ? cmd->configure(r) : 0);
}

/* The object embedded in the binary is read by libbpf at open and load only: its pages (up to a
 * megabyte) leave the RSS once it is loaded.  Read again, they would come back from the file, as
 * any page of the binary does. */
static void drop_object_pages(const struct skel_ops *ops)
{
	size_t size = 0, page = sysconf(_SC_PAGESIZE);
	uintptr_t p = (uintptr_t)(ops->elf ? ops->elf(&size) : NULL);
	uintptr_t start = (p + page - 1) & ~(page - 1), end = (p + size) & ~(page - 1);

	if (p && end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

/* Open, configure and load, with one fallback policy: a command may change its configuration
 * once when the load fails for another reason than permissions. */
static int load(struct runner *r)
{
	int err = open_skeleton(r);

	if (err)
		return err;
	mark(PH_OPENED);
	progload_begin();
	err = progload_finish(r->cmd->skel->load(r->skel));
	if (err && !not_permitted(err) && r->cmd->fallback && r->cmd->fallback(r, err)) {
		r->cmd->skel->destroy(r->skel);
		r->skel = NULL;
		err = open_skeleton(r);
		if (err)
			return err; /* explained */
		progload_begin();
		err = progload_finish(r->cmd->skel->load(r->skel));
	}
	if (err)
		explain_bpf_error("cannot load the BPF programs", err);
	else
		drop_object_pages(r->cmd->skel);
	mark(PH_LOADED);
	return err;
}

int runner_attach_skeleton(struct runner *r)
{
	int err = r->cmd->skel->attach(r->skel);

	if (err)
		explain_bpf_error("cannot attach the BPF programs", err);
	return err;
}

static int attach(struct runner *r)
{
	r->start_ns = now_ns();
	return r->cmd->attach ? r->cmd->attach(r) : runner_attach_skeleton(r);
}

/* On stdout, as BCC's tools print it; with the output, when a command sends it to stderr. */
static int print_banner(const struct runner *r)
{
	FILE *f = r->out == stderr ? stderr : stdout;

	if (!r->cmd->banner)
		return 0;
	fprintf(f, "%s\n", r->cmd->banner);
	return fflush(f) == EOF ? -errno : 0;
}

/* COMMAND, held at its gate; as the target, the follower adds it at its exec. */
static int fork_command(struct runner *r)
{
	int err;

	if (!targets.command)
		return 0;
	err = child_start(&r->child, targets.command);
	if (!err && r->follow)
		follow_arm(r->follow, r->child.pid);
	return err;
}

/* ---- the run ---- */

static void print_timestamp(FILE *out)
{
	char buf[32];
	time_t t = time(NULL);

	strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&t));
	fprintf(out, "\n%s", buf);
}

static int report(struct runner *r, bool last)
{
	int err;

	if (run_opts.timestamp)
		print_timestamp(r->out);
	err = r->cmd->report(r, last);
	/* what the command left in the buffer (its last lines) fails here, on a full disk */
	if (!err && fflush(r->out) == EOF) {
		err = -errno;
		runner_report_failed(err);
	}
	r->reports++;
	return err;
}

/* Polls the rings and the runner_wake_on() fds for up to ms: the ring records read, or <= 0.
 * A fd that hung up or failed is told once (r->woken) and then left out: the command's tick
 * sees why, and the loop does not spin on it. */
static int wait_events(struct runner *r, int ms)
{
	struct epoll_event ev[4];
	bool rings = false;
	int n;

	if (!r->wake_epfd)
		return ring_buffer__poll(r->rb, ms);
	n = epoll_wait(r->wake_epfd, ev, 4, ms);
	/* a signal (a terminal resized) is looked at by the tick, now */
	if (n < 0 && errno == EINTR)
		r->woken = true;
	for (int i = 0; i < n; i++) {
		if (ev[i].data.fd == WAKE_RINGS) {
			rings = true;
			continue;
		}
		r->woken = true;
		if (ev[i].events & (EPOLLERR | EPOLLHUP))
			epoll_ctl(r->wake_epfd, EPOLL_CTL_DEL, ev[i].data.fd, NULL);
	}
	return rings ? ring_buffer__consume(r->rb) : 0;
}

static void wait_for(struct runner *r, __u64 until)
{
	__u64 now = now_ns();
	struct timespec ts;

	if (until <= now)
		return;
	if (r->wake_epfd || (r->rb && !r->lazy_rings)) {
		if (wait_events(r, (until - now + 999999) / 1000000) <= 0 || r->woken)
			return;
		r->ring_activity = true;
		/* Events came: the next ones gather for a moment before the loop polls again.
		 * Woken for each, the run loop woke 440 times a second under process churn (a
		 * process's first sample, its exit, a table request each), a context switch and
		 * an epoll_wait apiece.  A signal (Ctrl-C, COMMAND's exit) cuts the pause short. */
		now = now_ns();
		if (until <= now)
			return;
		ts.tv_sec = 0;
		ts.tv_nsec = until - now < RB_GATHER_NS ? until - now : RB_GATHER_NS;
		nanosleep(&ts, NULL);
		return;
	}
	ts.tv_sec = (until - now) / 1000000000ULL;
	ts.tv_nsec = (until - now) % 1000000000ULL;
	nanosleep(&ts, NULL); /* a signal cuts it short: the loop checks why */
}

static __u64 earliest(__u64 a, __u64 b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* Runs until DURATION, COUNT intervals, Ctrl-C, COMMAND's exit, every -p/-t target gone, or the
 * command's tick ends it; reports every interval but the last (printed after detach).  Sets
 * r->end_ns to the end of the traced run. */
static int run_loop(struct runner *r)
{
	__u64 interval_ns = run_opts.interval * 1e9;
	__u64 deadline = run_opts.duration ? r->start_ns + (__u64)(run_opts.duration * 1e9) : 0;
	__u64 next = interval_ns ? r->start_ns + interval_ns : 0;
	__u64 last_tick = r->start_ns, next_tick, now;
	__u64 every_ns = period_opts.every * 1e9;
	__u64 next_period = every_ns ? r->start_ns + every_ns : 0;
	__u64 heatmap_full = heatmap_run_full_at(&heatmap_opts);
	bool with_child = targets.command != NULL;
	int err;

	for (;;) {
		now = now_ns();
		/* 100 ms while the rings bring something (a new process to read, an exit) unless they
		 * can wait, or where the command keeps it; its idle tick otherwise */
		next_tick = last_tick + (r->idle_tick_ns > TICK_NS &&
					 (!r->ring_activity || r->lazy_rings) ? r->idle_tick_ns : TICK_NS);
		if (r->woken)
			next_tick = now;
		if (exiting)
			break;
		if (deadline && now >= deadline) {
			now = deadline;
			break;
		}
		if (heatmap_full && now >= heatmap_full) {
			p_err("the heat map is full (%u columns of %g s): ending the run",
			      heatmap_opts.cfg.cols, heatmap_opts.cfg.interval_ns / 1e9);
			now = heatmap_full;
			break;
		}
		if (next && now >= next) {
			if (run_opts.count && r->reports + 1 >= run_opts.count) {
				now = next;
				break;
			}
			err = report(r, false);
			if (err)
				return err;
			next += interval_ns;
		}
		if (next_period && now >= next_period) {
			err = r->cmd->period ? r->cmd->period(r) : 0;
			if (err)
				return err;
			/* boundaries stay on the grid; one missed (a stopped machine) is skipped */
			while (next_period <= now)
				next_period += every_ns;
		}
		if (with_child && (child_signalled || now >= next_tick)) {
			child_signalled = 0;
			if (child_poll(&r->child))
				break;
		}
		if (now >= next_tick) {
			int records = 0, n;

			last_tick = now;
			r->woken = false;
			/* records submitted without a wakeup (a process's exit) are read here, and
			 * the rings that wait for the tick */
			if (r->rb)
				records = ring_buffer__consume(r->rb);
			if (r->rb_ticks && (n = ring_buffer__consume(r->rb_ticks)) > 0)
				records = records > 0 ? records + n : n;
			r->ring_activity = records > 0;
			if (targets_gone(&targets)) {
				p_info("every target has exited");
				break;
			}
			err = r->cmd->tick ? r->cmd->tick(r) : 0;
			if (err < 0)
				return err;
			if (err > 0) {
				if (r->end_ns)
					return 0;
				break;
			}
		}
		wait_for(r, earliest(earliest(earliest(deadline, heatmap_full), earliest(next, next_tick)),
				     next_period));
	}
	r->end_ns = now;
	return 0;
}

static void *destroy_late_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

static void join_late_detach(struct runner *r)
{
	for (int i = 0; i < RUNNER_LATE_LINKS; i++)
		if (r->late_threads[i])
			pthread_join(r->late_threads[i], NULL);
	memset(r->late_threads, 0, sizeof(r->late_threads));
	memset(r->late_links, 0, sizeof(r->late_links));
	r->late_started = false;
}

void runner_detach_later(struct runner *r, struct bpf_link **link)
{
	/* the threads runner_detach_early() started destroy only the links they found: they are
	 * over, or nearly, by the command's detach; the links left after them get threads of their
	 * own */
	if (r->late_started)
		join_late_detach(r);
	for (int i = 0; *link && i < RUNNER_LATE_LINKS; i++) {
		if (!r->late_links[i]) {
			r->late_links[i] = *link;
			*link = NULL;
		}
	}
	bpf_link__destroy(*link);
	*link = NULL;
}

/* After the command's detach: the links it left for later go, each on a thread of its own:
 * a tracepoint's release waits out an RCU tasks grace period (60-80 ms here), which threads
 * released together wait out once, where one thread waited for each in turn. */
static void start_late_detach(struct runner *r)
{
	if (r->late_started)
		return; /* runner_detach_early() started them, with every late link there is */
	for (int i = 0; i < RUNNER_LATE_LINKS; i++) {
		if (!r->late_links[i])
			continue;
		if (pthread_create(&r->late_threads[i], NULL, destroy_late_link, r->late_links[i])) {
			r->late_threads[i] = 0;
			bpf_link__destroy(r->late_links[i]); /* no thread: here, then */
		}
		r->late_started = true;
	}
}

void runner_detach_early(struct runner *r, struct bpf_link **link)
{
	if (r->late_started)
		return;
	runner_detach_later(r, link);
	start_late_detach(r);
}

static void detach(struct runner *r)
{
	if (r->cmd->detach)
		r->cmd->detach(r);
	else if (r->skel)
		r->cmd->skel->detach(r->skel);
	probe_links_destroy(&r->links);
	follow_stop(r->follow);
	r->follow = NULL;
	start_late_detach(r);
}

__u64 runner_missed_runs(const struct runner *r)
{
	struct bpf_program *prog;
	__u64 misses = 0;

	if (!r->obj)
		return 0;
	bpf_object__for_each_program(prog, r->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			misses += info.recursion_misses;
	}
	return misses;
}

/* -v: the kernel's BPF run-time statistics, on while this fd is open (every program on the
 * machine pays two clock reads a run meanwhile: only with -v). */
static int stats_fd = -1;

static void enable_bpf_stats(void)
{
	if (verbose && stats_fd < 0) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			p_info("no BPF run-time statistics: %s", strerror(errno));
	}
}

/* -v: what each program cost per run, from the statistics enabled at attach. */
static void report_bpf_cost(const struct runner *r)
{
	struct bpf_program *prog;
	char line[1024];
	int n = 0;

	if (!verbose || stats_fd < 0 || !r->obj)
		return;
	bpf_object__for_each_program(prog, r->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt ||
		    n < 0 || (size_t)n >= sizeof(line))
			continue;
		n += snprintf(line + n, sizeof(line) - n, "%s%s %llu runs, %llu ns/run", n ? "; " : "",
			      bpf_program__name(prog), (unsigned long long)info.run_cnt,
			      (unsigned long long)(info.run_time_ns / info.run_cnt));
	}
	if (n > 0)
		p_info("BPF cost: %s", line);
}

/* The loss no map can count: runs the kernel skipped, said once for every command. */
static void report_missed_runs(const struct runner *r)
{
	__u64 missed = runner_missed_runs(r);

	if (missed)
		fprintf(stderr, "bpfprof: %llu event hits not seen: the kernel skipped the BPF program "
			"because one was already running on that CPU (nested runs)\n",
			(unsigned long long)missed);
}

/* What the run found, once counting has stopped. */
static int finish(struct runner *r)
{
	int err = 0, periods_err;

	if (r->rb)
		ring_buffer__consume(r->rb);
	if (r->rb_ticks)
		ring_buffer__consume(r->rb_ticks);
	if (r->cmd->collect)
		err = r->cmd->collect(r);
	mark(PH_COLLECTED);
	if (!err && r->cmd->report)
		err = report(r, true);
	mark(PH_REPORTED);
	if (!err && r->cmd->write)
		err = r->cmd->write(r);
	mark(PH_WRITTEN);
	/* the last period's upload gets its grace time; what was sent and dropped is told */
	periods_err = period_close(err);
	if (!err)
		err = commit_outputs(r->cmd);
	if (!err && r->out == stdout && (err = stream_flush_check(stdout)))
		runner_report_failed(err);
	report_missed_runs(r);
	report_bpf_cost(r);
	p_info("finish: %.1f ms to detach, %.1f ms to collect, %.1f ms to report, %.1f ms to write",
	       phase_ms(PH_READY, PH_DETACHED) ? (phase_ns[PH_DETACHED] - r->end_ns) / 1e6 : 0,
	       phase_ms(PH_DETACHED, PH_COLLECTED), phase_ms(PH_COLLECTED, PH_REPORTED),
	       phase_ms(PH_REPORTED, PH_WRITTEN));
	/* an output given up on: the others were written, the run still failed */
	return err ?: periods_err ?: output_err;
}

/* The command's `started` hook starts worker threads (unwinder, symbol prefetch): they are born
 * with these signals blocked, so that the main thread's run loop is the one woken. */
static int start_command(struct runner *r)
{
	sigset_t run_signals, old;
	int err;

	if (!r->cmd->started)
		return 0;
	sigemptyset(&run_signals);
	sigaddset(&run_signals, SIGINT);
	sigaddset(&run_signals, SIGTERM);
	sigaddset(&run_signals, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &run_signals, &old);
	err = r->cmd->started(r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static int setup(struct runner *r)
{
	bool bpf = !r->cmd->uses_bpf || r->cmd->uses_bpf(r);
	int err;

	err = bpf ? load(r) : 0;
	err = err ?: (bpf ? targets_fill(&targets, &r->target) : 0);
	if (!err && bpf && targets.follow)
		err = follow_start(r->target.tgids, &r->follow);
	err = err ?: (r->cmd->prepare ? r->cmd->prepare(r) : 0);
	if (!err && bpf)
		enable_bpf_stats();
	err = err ?: attach(r);
	mark(PH_ATTACHED);
	/* every question is answered: the BTF's megabytes go before the run */
	features_release();
	err = err ?: fork_command(r);
	err = err ?: start_command(r);
	mark(PH_READY);
	if (!err) {
		p_info("started: attached %.1f ms after launch, ready (tables of the targets loaded) "
		       "at %.1f ms", (r->start_ns - launch_ns) / 1e6, (now_ns() - launch_ns) / 1e6);
		p_info("start: %.1f ms to open and configure, %.1f ms to load (verifier, maps), "
		       "%.1f ms to fill and attach, %.1f ms to start", phase_ns[PH_OPENED] ?
		       (phase_ns[PH_OPENED] - launch_ns) / 1e6 : 0, phase_ms(PH_OPENED, PH_LOADED),
		       phase_ms(PH_LOADED, PH_ATTACHED), phase_ms(PH_ATTACHED, PH_READY));
	}
	/* Ctrl-C during setup: COMMAND stays at its gate, where teardown kills it */
	if (!err && targets.command && !exiting)
		err = child_release(&r->child, targets.command[0]);
	return err ?: print_banner(r);
}

static void teardown(struct runner *r)
{
	__u64 t0 = now_ns(), join_ns;

	/* a command still held at its gate dies there: it must not run untraced */
	child_stop(&r->child);
	/* files not committed go, before the command's teardown forgets its own */
	runner_abort_outputs(r->cmd);
	period_close(true);
	/* the command's workers use the skeleton's maps: they stop first */
	if (r->cmd->teardown)
		r->cmd->teardown(r);
	if (r->wake_epfd)
		close(r->wake_epfd);
	ring_buffer__free(r->rb);
	ring_buffer__free(r->rb_ticks);
	probe_links_destroy(&r->links);
	follow_stop(r->follow);
	join_ns = now_ns();
	join_late_detach(r);
	join_ns = now_ns() - join_ns;
	if (r->skel)
		r->cmd->skel->destroy(r->skel);
	if (stats_fd >= 0)
		close(stats_fd);
	stats_fd = -1;
	features_release();
	if (r->start_ns)
		p_info("exit: %.1f ms to tear down, %.1f of them waiting for the links detached late",
		       (now_ns() - t0) / 1e6, join_ns / 1e6);
}

/* The traced COMMAND's exit status, which perf stat and perf record pass on (scripts test it);
 * 0 when there was none or a signal ended it (ours, at the end of the run, or the user's). */
static int command_status(const struct child *c)
{
	return c->pid > 0 && c->exited && WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 0;
}

/* One pass of the lifecycle; *runs is set after the first parse.  Returns bpfprof's own failure
 * (1, or 2 for usage); *status is COMMAND's exit status. */
static int run_once(const struct command *cmd, int argc, char **argv, unsigned run,
		    unsigned *runs, int *status)
{
	struct runner r = { .cmd = cmd, .child = { .pid = -1, .gate_fd = -1, .err_fd = -1 },
			    .run = run };
	int err;

	if (cmd->main)
		return cmd->main(argc, argv);
	output_err = 0;
	err = runner_parse(cmd, argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	if (!run && cmd->runs)
		*runs = cmd->runs();
	r.runs = *runs;
	/* before anything looks for events or files: without privileges that is what fails first */
	if (check_bpf_privileges())
		return 1;
	err = cmd->check ? cmd->check(&r) : 0;
	if (err)
		return err == -EINVAL ? 2 : 1;
	libbpf_set_print(libbpf_print_fn);
	install_signals();
	err = targets.command ? child_check(targets.command) : 0;
	err = err ?: runner_open_outputs(cmd);
	/* --pprof-dir and --push, tried before tracing as -o is */
	err = err ?: (period_opts.every ? period_open(cmd->name) : 0);
	if (err)
		goto cleanup;
	r.out = run_opts.out.of.f ?: cmd->stderr_beside_command && targets.command ? stderr : stdout;
	runner_set_report_output(run_opts.out.of.f ? &run_opts.out : NULL);
	err = setup(&r);
	err = err ?: run_loop(&r);
	if (r.start_ns) {
		detach(&r);
		mark(PH_DETACHED);
	}
	/* the traced run is over: COMMAND ends now, not once the report is written */
	child_stop(&r.child);
	if (!err)
		err = finish(&r);
cleanup:
	teardown(&r);
	*status = command_status(&r.child);
	return err ? 1 : 0;
}

int runner_main(const struct command *cmd, int argc, char **argv)
{
	unsigned runs = 1;
	int rc = 0, status = 0;

	launch_ns = now_ns();
	/* Peak RSS is a target (a system-wide profile within ~16 MB), and glibc's defaults are a
	 * server's: the mmap threshold rises to the largest block freed (a symbol table's few MB),
	 * after which such blocks come from the heap and their pages stay there; and each thread
	 * keeps its own arena of free memory.  Fixed here: big blocks go back to the system when
	 * freed, and one arena serves the few threads (1-2 MB less at the peak of profile -a). */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	mallopt(M_ARENA_MAX, 1);
	for (unsigned run = 0; run < runs && !rc && !exiting; run++) {
		/* the parser packs the positional arguments at the front of the array it is given:
		 * each of -r's runs parses a fresh copy of the command line */
		char **args = calloc(argc + 1, sizeof(*args));

		if (!args) {
			p_err("out of memory");
			return 1;
		}
		memcpy(args, argv, argc * sizeof(*args));
		rc = run_once(cmd, argc, args, run, &runs, &status);
		free(args);
	}
	return rc ?: status;
}
