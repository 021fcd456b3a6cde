/* bpfprof offcpu: time threads spend blocked, by the stack where they blocked (and, with --waker,
 * by who woke them), summed in the kernel. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "probe/probe.h"
#include "sym/stackcollect.h"
#include "core/stackrun.h"
#include "sym/syms.h"
#include "unwind/unwinder.h"
#include "cmd/cmds.h"

#define MAX_IDS 1024

static struct offcpu_env {
	__u32 pids[MAX_IDS], tids[MAX_IDS];
	int nr_pids, nr_tids;
	bool user_threads_only, kernel_threads_only;
	__u32 states;
	__u64 min_us, max_us;
	bool waker;
	struct stack_opts so; /* the options every stack command shares */
} env;

static const char usage[] =
"Usage: bpfprof offcpu [options] [DURATION] [-- COMMAND [ARGS...]]\n"
"Time threads spend blocked (off-CPU), by the user and kernel stack where they blocked,\n"
"summed in the kernel.  Without DURATION (seconds) or COMMAND, runs until Ctrl-C.\n"
"\n"
"  -a, --all                all processes (default without -p/-t/COMMAND)\n"
"  -p, --pid PID[,PID...]   only these processes\n"
"  -t, --tid TID[,TID...]   only these threads\n"
"  -u, --user-threads-only  user threads only (no kernel threads)\n"
"  -k, --kernel-threads-only kernel threads only\n"
"      --state STATE        which waits count: S (interruptible sleep), D (uninterruptible,\n"
"                           mostly disk I/O), R (preempted, waiting for a CPU), letters may be\n"
"                           combined (SD); 'any' = every state.  Default: every blocked state\n"
"                           (not R)\n"
"  -m, --min-block-time US  count only blocks of at least US microseconds\n"
"  -M, --max-block-time US  count only blocks of at most US microseconds\n"
"  -U, --user-stacks-only   user stacks only\n"
"  -K, --kernel-stacks-only kernel stacks only\n"
"      --max-stack N        frames per stack (default and maximum 127)\n"
"      --max-stacks N       distinct stacks kept in the kernel (default 16384)\n"
UNWIND_USAGE
"      --waker              also record who woke each thread (waker comm and stacks)\n"
"  -f, --folded             folded stacks (count = off-CPU microseconds) instead of the report\n"
"      --annotate           with -f: suffix kernel frames with _[k]\n"
"      --svg FILE           also write a flame graph SVG\n"
"      --title TEXT         flame graph title\n"
"  -o, --output FILE        write the report or folded stacks to FILE\n"
"      --no-children        report Self only, like perf report --no-children\n"
"      --percent-limit P    hide report entries below P percent\n"
"      --call-graph-limit P hide call-graph branches below P percent (default 0.5,\n"
"                           as perf's -g graph,0.5)\n"
"  -v, --verbose            print libbpf messages and what was chosen\n"
"  -h, --help               this help\n";

enum { OPT_STATE = 256, OPT_WAKER }; /* below the shared STACK_OPT_* values */

static const struct option long_opts[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "user-threads-only", no_argument, NULL, 'u' },
	{ "kernel-threads-only", no_argument, NULL, 'k' },
	{ "state", required_argument, NULL, OPT_STATE },
	{ "min-block-time", required_argument, NULL, 'm' },
	{ "max-block-time", required_argument, NULL, 'M' },
	{ "waker", no_argument, NULL, OPT_WAKER },
	{ "help", no_argument, NULL, 'h' },
	STACK_LONG_OPTIONS,
	{},
};

/* "S", "D", "R", combinations ("SD"), or "any".  Returns the OFFCPU_STATE_* mask or 0. */
static __u32 parse_state(const char *s)
{
	__u32 mask = 0;

	if (!strcmp(s, "any"))
		return OFFCPU_STATE_ANY;
	for (; *s; s++) {
		switch (*s) {
		case 'S': case 's':
			mask |= OFFCPU_STATE_S;
			break;
		case 'D': case 'd':
			mask |= OFFCPU_STATE_D;
			break;
		case 'R': case 'r':
			mask |= OFFCPU_STATE_R;
			break;
		default:
			return 0;
		}
	}
	return mask;
}

/* Splits argv at "--": options and DURATION before it, the command after it. */
static int parse_args(int argc, char **argv)
{
	int dashdash = argc, opt, err;
	bool max_set = false;

	env.states = OFFCPU_STATE_BLOCKED;
	dashdash = stack_opts_begin(&env.so, argc, argv);
	if (dashdash < 0)
		return dashdash;
	while ((opt = getopt_long(dashdash, argv, ":ap:t:ukm:M:UKfo:vh", long_opts, NULL)) != -1) {
		err = stack_opts_parse(&env.so, opt, optarg);
		if (err < 0)
			return err;
		if (err > 0)
			continue;
		switch (opt) {
		case 'a':
			break;
		case 'p':
			if (parse_task_ids(optarg, env.pids, MAX_IDS, false, &env.nr_pids))
				return -EINVAL;
			break;
		case 't':
			if (parse_task_ids(optarg, env.tids, MAX_IDS, true, &env.nr_tids))
				return -EINVAL;
			break;
		case 'u':
			env.user_threads_only = true;
			break;
		case 'k':
			env.kernel_threads_only = true;
			break;
		case OPT_STATE:
			env.states = parse_state(optarg);
			if (!env.states) {
				p_err("invalid --state '%s' (expected S, D, R, a combination such as SD, "
				      "or any)", optarg);
				return -EINVAL;
			}
			break;
		case 'm':
			if (parse_u64(optarg, 0, UINT64_MAX / 1000, &env.min_us)) {
				p_err("invalid -m '%s' (expected microseconds)", optarg);
				return -EINVAL;
			}
			break;
		case 'M':
			if (parse_u64(optarg, 1, UINT64_MAX / 1000, &env.max_us)) {
				p_err("invalid -M '%s' (expected microseconds, at least 1)", optarg);
				return -EINVAL;
			}
			max_set = true;
			break;
		case OPT_WAKER:
			env.waker = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			return getopt_error(opt, argv, usage);
		}
	}
	err = stack_opts_end(&env.so, dashdash, argv);
	if (err)
		return err;
	if (env.user_threads_only && env.kernel_threads_only) {
		p_err("-u and -k exclude each other");
		return -EINVAL;
	}
	if (env.so.command && (env.nr_pids || env.nr_tids)) {
		p_err("-p/-t and a COMMAND exclude each other");
		return -EINVAL;
	}
	if (max_set && env.min_us > env.max_us) {
		p_err("-m %llu is greater than -M %llu: no block could be counted",
		      (unsigned long long)env.min_us, (unsigned long long)env.max_us);
		return -EINVAL;
	}
	return 0;
}

/* Bitmap words for PIDs below kernel.pid_max. */
static __u32 pid_words(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	unsigned int max = 4194304; /* PID_MAX_LIMIT on 64-bit */

	if (f) {
		if (fscanf(f, "%u", &max) != 1 || max == 0 || max > 4194304)
			max = 4194304;
		fclose(f);
	}
	return (max + 63) / 64;
}

/* True when per-thread records live in task storage (tp_btf); false: the raw_tp fallback with
 * a hash map, where blocks that began before the run cannot be found. */
static bool use_task_storage;

static void configure(struct offcpu_bpf *skel)
{
	/* (preempt, prev, next, prev_state) since 5.18; prev_state is read from prev before. */
	bool has_prev_state = probe_tp_nr_args("sched_switch") >= 4;

	/* Filters, bounds and stack choices are read-only globals, fixed before load. */
	skel->rodata->filter_tgid = env.nr_pids || env.so.command;
	skel->rodata->filter_pid = env.nr_tids;
	skel->rodata->targ_user_threads = !env.kernel_threads_only;
	skel->rodata->targ_kernel_threads = !env.user_threads_only;
	skel->rodata->targ_states = env.states;
	skel->rodata->targ_min_ns = env.min_us * 1000;
	skel->rodata->targ_max_ns = env.max_us * 1000;
	skel->rodata->targ_user_stacks = !env.so.kernel_only;
	skel->rodata->targ_kern_stacks = !env.so.user_only;
	skel->rodata->targ_follow_forks = env.so.command != NULL;
	skel->rodata->targ_prev_state_arg = has_prev_state;
	skel->rodata->targ_max_stack = env.so.max_stack;
	bpf_map__set_max_entries(skel->maps.tgids, pid_words());
	bpf_map__set_max_entries(skel->maps.pids, pid_words());
	bpf_map__set_max_entries(skel->maps.counts, env.so.max_stacks);
	/* Target and waker, user and kernel: room for four stacks per key. */
	bpf_map__set_max_entries(skel->maps.stacks, env.so.max_stacks * (env.waker ? 4 : 2));
	/* -K takes no user stacks: nothing to unwind */
	if (env.so.kernel_only)
		env.so.unwind = UNWIND_FP;
	UNWIND_CONFIGURE(skel, env.so.unwind, env.so.unwind_mem_mb);

	use_task_storage = probe_tp_btf("sched_switch") &&
			   libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	p_info("sched_switch: %s; prev_state %s", use_task_storage ?
	       "tp_btf, per-thread records in task storage" :
	       "raw_tp, per-thread records in a hash map (no tp_btf or task storage here)",
	       has_prev_state ? "from the tracepoint" : "read from the task");
	bpf_program__set_autoload(skel->progs.switch_btf, use_task_storage);
	bpf_program__set_autoload(skel->progs.switch_raw, !use_task_storage);
	bpf_program__set_autoload(skel->progs.waking_btf, env.waker && use_task_storage);
	bpf_program__set_autoload(skel->progs.waking_raw, env.waker && !use_task_storage);
	bpf_program__set_autoload(skel->progs.walk_tasks, use_task_storage);
	if (use_task_storage)
		bpf_map__set_max_entries(skel->maps.pid_recs, 1);
	else
		bpf_map__set_autocreate(skel->maps.recs, false);
	probe_pick_tp(skel->progs.fork_btf, skel->progs.fork_raw, "sched_process_fork");
	if (!env.so.command) {
		bpf_program__set_autoload(skel->progs.fork_btf, false);
		bpf_program__set_autoload(skel->progs.fork_raw, false);
	}
}

static int set_bits(struct bpf_map *map, const __u32 *ids, int n)
{
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		__u32 word = ids[i] / 64;
		__u64 bits = 0;

		err = bpf_map__lookup_elem(map, &word, 4, &bits, 8, 0);
		bits |= 1ULL << (ids[i] % 64);
		err = err ?: bpf_map__update_elem(map, &word, 4, &bits, 8, BPF_ANY);
	}
	return err;
}

static int fill_filters(struct offcpu_bpf *skel, const struct child *child)
{
	__u32 pid = child ? child->pid : 0;
	int err;

	err = set_bits(skel->maps.tgids, env.pids, env.nr_pids);
	err = err ?: set_bits(skel->maps.pids, env.tids, env.nr_tids);
	if (!err && child)
		err = set_bits(skel->maps.tgids, &pid, 1);
	return err;
}

/* Runs the task iterator once (iter_phase chooses what it does); calls fn for each record it
 * writes out. */
static int run_iterator(struct offcpu_bpf *skel, __u32 phase,
			int (*fn)(const struct offcpu_rec *rec, void *ctx), void *ctx)
{
	struct offcpu_rec rec;
	size_t got = 0;
	ssize_t n;
	int fd, err = 0;

	skel->bss->iter_phase = phase;
	fd = bpf_iter_create(bpf_link__fd(skel->links.walk_tasks));
	if (fd < 0) {
		err = -errno;
		p_err("cannot run the task iterator: %s", strerror(-err));
		return err;
	}
	while ((n = read(fd, (char *)&rec + got, sizeof(rec) - got)) > 0) {
		got += n;
		if (got < sizeof(rec))
			continue;
		got = 0;
		err = fn ? fn(&rec, ctx) : 0;
		if (err)
			break;
	}
	if (n < 0 && !err)
		err = -errno;
	close(fd);
	if (err)
		p_err("cannot read the task iterator: %s", strerror(-err));
	return err;
}

struct run_bounds {
	__u64 start, end;
	int counts_fd;
	__u64 added, dropped;
};

/* A thread still blocked at the end: its block is counted up to the end of the run. */
static int add_pending(const struct offcpu_rec *rec, void *ctx)
{
	struct run_bounds *rb = ctx;
	__u64 delta = offcpu_clip(rec->ts, 0, rb->start, rb->end, env.min_us * 1000,
				  env.max_us * 1000);
	__u64 val = 0;

	if (!rec->ts || !delta)
		return 0;
	bpf_map_lookup_elem(rb->counts_fd, &rec->key, &val);
	val += delta;
	if (bpf_map_update_elem(rb->counts_fd, &rec->key, &val, BPF_ANY))
		rb->dropped++;
	else
		rb->added++;
	return 0;
}

static int add_pending_from_hash(int recs_fd, struct run_bounds *rb)
{
	__u32 pid, *prev = NULL;
	struct offcpu_rec rec;

	while (bpf_map_get_next_key(recs_fd, prev, &pid) == 0) {
		prev = &pid;
		if (!bpf_map_lookup_elem(recs_fd, &pid, &rec))
			add_pending(&rec, rb);
	}
	return 0;
}

static const struct frame before_run_frame = {
	.name = "[blocked before start]",
	.module = "[unknown]",
};

/* One counts entry: the blocked thread's stacks, then the waker's. */
static int fill_offcpu(struct stack_resolver *r, int stacks_fd, const void *k, __u64 value,
		       struct stack_sample *out, void *ctx)
{
	const struct offcpu_key *key = k;
	int err;

	/* ns in the kernel; microseconds from here on, rounded. */
	err = stack_sample_fill(r, stacks_fd, &key->base, (value + 500) / 1000, out);
	out->nr_frames = stack_frames_trim_bpf(out->frames, out->nr_frames);
	if (!err && (key->flags & OFFCPU_BEFORE_RUN) && !env.so.kernel_only) {
		/* The user stack of a thread blocked before the run is unknown: say so. */
		struct frame *f = calloc(out->nr_frames + 1, sizeof(*f));

		if (!f)
			return -ENOMEM;
		f[0] = before_run_frame;
		if (out->nr_frames)
			memcpy(f + 1, out->frames, out->nr_frames * sizeof(*f));
		free(out->frames);
		out->frames = f;
		out->nr_frames++;
	}
	if (!err && (key->flags & OFFCPU_WAKER_SEEN)) {
		snprintf(out->waker_comm, sizeof(out->waker_comm), "%s", key->waker_comm);
		err = stack_frames_fill(r, stacks_fd, key->waker_tgid, key->waker_user_stack,
					key->waker_kern_stack, &out->waker_frames,
					&out->nr_waker_frames);
		out->nr_waker_frames = stack_frames_trim_bpf(out->waker_frames,
							     out->nr_waker_frames);
		stack_waker_from_irq(out);
	}
	return err;
}

/* Drops entries that round to 0 us: a folded line "stack 0" helps nobody. */
static size_t drop_empty(struct stack_sample *s, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i].value) {
			s[kept++] = s[i];
		} else {
			free(s[i].frames);
			free(s[i].waker_frames);
		}
	}
	return kept;
}

static void format_lost(const __u64 *lost, __u64 recs_lost, char *buf, size_t size)
{
	snprintf(buf, size, "stack capture failed %llu, stack table full %llu, hash collisions %llu, "
		 "count table full %llu, thread records unavailable %llu",
		 (unsigned long long)lost[LOST_STACK_ERR], (unsigned long long)lost[LOST_STACKS_FULL],
		 (unsigned long long)lost[LOST_STACK_COLLIDED],
		 (unsigned long long)lost[LOST_COUNTS_FULL], (unsigned long long)recs_lost);
}

/* In-kernel unwinding (--unwind eh/auto): NULL with frame pointers. */
static struct unwinder *unwinder;

/* The report or folded stacks to stdout or -o, and the SVG. */
static int write_outputs(const struct stack_sample *samples, size_t n, __u64 nr_lost,
			 const char *lost_detail, double elapsed)
{
	char subtitle[160], note[1024], unwound[512];
	struct stack_outputs o = {
		.out_path = env.so.out_path,
		.svg_path = env.so.svg_path,
		.folded = env.so.folded,
		.folded_opts = { .annotate_kernel = env.so.annotate },
		.flamegraph = {
			.title = env.so.title ? env.so.title : "Off-CPU Time Flame Graph",
			.subtitle = subtitle,
			.count_name = "us",
			.palette = PALETTE_COOL,
			.annotate_kernel = true,
		},
		.header = {
			.event = "sched_switch (off-CPU)",
			.duration_s = elapsed,
			.lost = nr_lost,
			.lost_detail = nr_lost ? lost_detail : NULL,
			.unwind = env.so.kernel_only ? NULL : unwind_method_name(env.so.unwind),
			.extra = note,
		},
		.report = {
			.children = !env.so.no_children,
			.percent_limit = env.so.percent_limit,
			.unit = REPORT_TIME_US,
			.call_graph = true,
			.call_graph_limit = env.so.call_graph_limit,
		},
		.lost_what = "blocks",
	};

	snprintf(subtitle, sizeof(subtitle), "off-CPU time, %.1f s%s", elapsed,
		 nr_lost ? ", blocks lost" : "");
	snprintf(note, sizeof(note), "Off-CPU time in ms; %s; threads still blocked at the end "
		 "counted up to the end%s",
		 use_task_storage ? "blocks in progress at the start counted from the start "
				    "([blocked before start]: user stack unknown)" :
				    "blocks in progress at the start not counted (no task storage)",
		 env.waker ? "; second level: woken by COMM" : "");
	unwind_summary_line(unwinder, env.so.folded, unwound, sizeof(unwound));
	/* the header has one free line: the unwinder's goes on the next */
	if (unwound[0])
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "\n# %s", unwound);
	return stack_outputs_write(&o, samples, n);
}

/* Stops the accounting: what the kernel sums from here on is outside the run. */
static void detach_switch(struct offcpu_bpf *skel)
{
	struct bpf_link **links[] = { &skel->links.switch_btf, &skel->links.switch_raw,
				      &skel->links.waking_btf, &skel->links.waking_raw };

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		bpf_link__destroy(*links[i]);
		*links[i] = NULL;
	}
}

/* --unwind auto on a kernel that refuses the unwinder (it needs BPF global functions, 5.6+):
 * load again with the frame-pointer walk. */
static int load_without_unwinding(struct offcpu_bpf **skel, int err)
{
	p_err("in-kernel unwinding does not load on this kernel (%s); using frame pointers",
	      strerror(-err));
	offcpu_bpf__destroy(*skel);
	env.so.unwind = UNWIND_FP;
	*skel = offcpu_bpf__open();
	if (!*skel)
		return -errno;
	configure(*skel);
	return offcpu_bpf__load(*skel);
}

int cmd_offcpu(int argc, char **argv)
{
	struct stack_resolver *resolver = NULL;
	struct stack_sample *samples = NULL;
	struct offcpu_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct child child = { .pid = -1 };
	struct run_bounds bounds = {};
	struct unwind_bpf ub;
	size_t nr_samples = 0;
	__u64 lost[LOST_REASONS], nr_lost;
	char lost_detail[256];
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();

	resolver = stack_resolver__new();
	if (!resolver) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (env.so.command) {
		err = child_start(&child, env.so.command);
		if (err)
			goto cleanup;
	}

	skel = offcpu_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	configure(skel);
	err = offcpu_bpf__load(skel);
	if (err && env.so.unwind == UNWIND_AUTO)
		err = load_without_unwinding(&skel, err);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	err = fill_filters(skel, env.so.command ? &child : NULL);
	if (err) {
		p_err("cannot set the PID filters: %s", strerror(-err));
		goto cleanup;
	}
	/* Blocks are clipped to [run start, run end]: the start is before the first switch-out
	 * the probes can see. */
	bounds.start = now_ns();
	skel->bss->run_start = bounds.start;
	err = offcpu_bpf__attach(skel);
	if (err) {
		explain_bpf_error("cannot attach the BPF programs", err);
		goto cleanup;
	}
	/* Threads blocked before the probes were attached: counted from the start. */
	if (use_task_storage) {
		err = run_iterator(skel, 0, NULL, NULL);
		if (err)
			goto cleanup;
	}
	ub = UNWIND_BPF_MAPS(skel);
	rb = unwind_start(&ub, bpf_map__fd(skel->maps.proc_events), stack_resolver__syms(resolver),
			  env.so.unwind, &unwinder);
	if (!rb) {
		err = -errno;
		goto cleanup;
	}
	if (env.so.command) {
		err = child_release(&child, env.so.command[0]);
		if (err)
			goto cleanup;
	}
	stack_run_loop(rb, stack_resolver__syms(resolver), env.so.command ? &child : NULL,
		       bounds.start, env.so.duration, env.pids, env.nr_pids, env.tids, env.nr_tids);

	detach_switch(skel);
	bounds.end = now_ns();
	bounds.counts_fd = bpf_map__fd(skel->maps.counts);
	/* Threads still blocked: counted up to the end. */
	if (use_task_storage)
		err = run_iterator(skel, 1, add_pending, &bounds);
	else
		err = add_pending_from_hash(bpf_map__fd(skel->maps.pid_recs), &bounds);
	if (err)
		goto cleanup;
	ring_buffer__consume(rb);

	memcpy(lost, (const void *)skel->bss->lost, sizeof(lost));
	lost[LOST_COUNTS_FULL] += bounds.dropped;
	nr_lost = lost[LOST_STACK_ERR] + lost[LOST_STACKS_FULL] + lost[LOST_STACK_COLLIDED] +
		  lost[LOST_COUNTS_FULL] + skel->bss->recs_lost;
	format_lost(lost, skel->bss->recs_lost, lost_detail, sizeof(lost_detail));
	p_info("%llu threads still blocked at the end, counted up to the end",
	       (unsigned long long)bounds.added);
	err = stacks_collect_keys(resolver, bounds.counts_fd, bpf_map__fd(skel->maps.stacks),
				  sizeof(struct offcpu_key), fill_offcpu, NULL, &samples,
				  &nr_samples);
	if (err) {
		p_err("cannot read the off-CPU stacks: %s", strerror(-err));
		goto cleanup;
	}
	nr_samples = drop_empty(samples, nr_samples);
	err = write_outputs(samples, nr_samples, nr_lost, lost_detail,
			    (bounds.end - bounds.start) / 1e9);
	if (unwinder && verbose)
		unwinder__print_usage(unwinder, stderr);
cleanup:
	ring_buffer__free(rb);
	offcpu_bpf__destroy(skel);
	if (env.so.command)
		child_stop(&child);
	stack_samples_free(samples, nr_samples);
	unwinder__free(unwinder);
	unwinder = NULL;
	stack_resolver__free(resolver);
	return err ? 1 : 0;
}
