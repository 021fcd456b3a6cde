/* bpfprof profile: on-CPU stack sampling, aggregated in the kernel. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "out/flamegraph.h"
#include "core/follow.h"
#include "out/folded.h"
#include "out/outfile.h"
#include "probe/probe.h"
#include "profile.h"
#include "profile.skel.h"
#include "out/report.h"
#include "sym/stackcollect.h"
#include "core/stackrun.h"
#include "sym/syms.h"
#include "unwind/unwinder.h"
#include "cmd/cmds.h"

#define MAX_IDS 1024

static struct profile_env {
	__u64 freq;
	__u32 pids[MAX_IDS], tids[MAX_IDS];
	int nr_pids, nr_tids;
	bool *cpus; /* NULL: all online CPUs */
	bool include_idle;
	const char *event;
	bool event_spec; /* -e SPEC: a tracepoint or function, every hit a sample */
	struct stack_opts so; /* the options every stack command shares */
} env;

struct event_desc {
	const char *name;
	__u32 type;
	__u64 config;
};

static const struct event_desc events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
};

static const char usage[] =
"Usage: bpfprof profile [options] [DURATION] [-- COMMAND [ARGS...]]\n"
"Sample on-CPU stacks at a fixed frequency, counted in the kernel.\n"
"Without DURATION (seconds) or COMMAND, runs until Ctrl-C.\n"
"\n"
"  -F, --freq HZ            sampling frequency (default 99)\n"
"  -e, --event EVENT        cpu-clock (default), task-clock, or a hardware event\n"
"                           (cycles, instructions, cache-misses, branch-misses);\n"
"                           or an event spec, every hit a sample: t:CAT:NAME,\n"
"                           CAT:NAME, sys:NAME, u:PATH:FUNC, LIB:FUNC, k:FUNC\n"
"  -a, --all-cpus           all CPUs, all processes (default without -p/-t/COMMAND)\n"
"  -p, --pid PID[,PID...]   only these processes\n"
"  -t, --tid TID[,TID...]   only these threads\n"
"  -C, --cpu LIST           only these CPUs, e.g. 0,2-3\n"
"  -U, --user-stacks-only   user stacks only\n"
"  -K, --kernel-stacks-only kernel stacks only\n"
"  -I, --include-idle       include the idle task (pid 0)\n"
"      --max-stack N        frames per stack (default and maximum 127)\n"
"      --max-stacks N       distinct stacks kept in the kernel (default 16384)\n"
UNWIND_USAGE
"  -f, --folded             folded stacks for flamegraph.pl instead of the report\n"
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

static const struct option long_opts[] = {
	{ "freq", required_argument, NULL, 'F' },
	{ "event", required_argument, NULL, 'e' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "include-idle", no_argument, NULL, 'I' },
	{ "help", no_argument, NULL, 'h' },
	STACK_LONG_OPTIONS,
	{},
};

static int max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	int rate = 0;

	if (f) {
		if (fscanf(f, "%d", &rate) != 1)
			rate = 0;
		fclose(f);
	}
	return rate;
}

static int parse_cpus(const char *arg)
{
	int n = nr_cpus_possible(), err;

	if (n <= 0) {
		p_err("cannot count CPUs: %s", strerror(-n));
		return -EINVAL;
	}
	env.cpus = calloc(n, sizeof(bool));
	if (!env.cpus)
		return -ENOMEM;
	err = parse_cpu_list(arg, env.cpus, n);
	if (err == -ERANGE) {
		p_err("CPU list '%s' names a CPU this machine does not have (CPUs 0-%d)", arg, n - 1);
		return err;
	}
	if (err) {
		p_err("invalid CPU list '%s' (expected e.g. 0,2-3)", arg);
		return err;
	}
	for (int c = 0; c < n; c++) {
		if (env.cpus[c] && !cpu_online(c)) {
			p_err("CPU %d is offline", c);
			return -ENODEV;
		}
	}
	return 0;
}

static const struct event_desc *find_event(const char *name)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (!strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

/* Splits argv at "--": options and DURATION before it, the command after it. */
static int parse_args(int argc, char **argv)
{
	int dashdash = argc, opt, err;

	env.freq = 99;
	env.event = "cpu-clock";
	dashdash = stack_opts_begin(&env.so, argc, argv);
	if (dashdash < 0)
		return dashdash;
	while ((opt = getopt_long(dashdash, argv, ":F:e:ap:t:C:UKIfo:vh", long_opts, NULL)) != -1) {
		err = stack_opts_parse(&env.so, opt, optarg);
		if (err < 0)
			return err;
		if (err > 0)
			continue;
		switch (opt) {
		case 'F':
			err = parse_u64(optarg, 1, 1000000, &env.freq);
			if (err) {
				p_err("invalid frequency '%s' (expected a whole number of Hz, at least 1)",
				      optarg);
				return -EINVAL;
			}
			break;
		case 'e':
			env.event = optarg;
			break;
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
		case 'C':
			if (parse_cpus(optarg))
				return -EINVAL;
			break;
		case 'I':
			env.include_idle = true;
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
	if (env.so.command && (env.nr_pids || env.nr_tids)) {
		p_err("-p/-t and a COMMAND exclude each other");
		return -EINVAL;
	}
	/* a bare name is a perf event; anything with a ':' an event spec (user/probe.h) */
	env.event_spec = !find_event(env.event) && strchr(env.event, ':');
	if (!find_event(env.event) && !env.event_spec) {
		p_err("unsupported event '%s' (supported: cpu-clock, task-clock, cycles, "
		      "instructions, cache-misses, branch-misses, or a spec such as "
		      "t:CAT:NAME, u:LIB:FUNC, k:FUNC, sys:NAME)", env.event);
		return -EINVAL;
	}
	if (env.freq > (__u64)INT_MAX || (max_sample_rate() > 0 && env.freq > (__u64)max_sample_rate())) {
		p_err("frequency %llu Hz is above kernel.perf_event_max_sample_rate (%d)",
		      (unsigned long long)env.freq, max_sample_rate());
		return -EINVAL;
	}
	return 0;
}

static int open_sample_event(const struct event_desc *ev, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = ev->type,
		.config = ev->config,
		.freq = 1,
		.sample_freq = env.freq,
	};
	int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

struct perf_links {
	struct bpf_link **links;
	int *fds;
	int nr;
};

/* One sampling event per selected online CPU, opened before the BPF object is loaded so that an
 * unsupported event is reported before any other work. */
static int open_sampling(const struct event_desc *ev, struct perf_links *pl)
{
	int ncpu = nr_cpus_possible(), err;

	pl->links = calloc(ncpu, sizeof(*pl->links));
	pl->fds = calloc(ncpu, sizeof(*pl->fds));
	if (!pl->links || !pl->fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd;

		if ((env.cpus && !env.cpus[cpu]) || !cpu_online(cpu))
			continue;
		fd = open_sample_event(ev, cpu);
		if (fd < 0) {
			err = fd;
			if (ev->type == PERF_TYPE_HARDWARE &&
			    (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL))
				p_err("event '%s' is not supported on this machine (no hardware PMU); "
				      "use -e cpu-clock", ev->name);
			else if (err == -EACCES || err == -EPERM)
				p_err("cannot open perf event '%s': %s (needs root or CAP_PERFMON)",
				      ev->name, strerror(-err));
			else
				p_err("cannot open perf event '%s' on CPU %d: %s", ev->name, cpu,
				      strerror(-err));
			return err;
		}
		pl->fds[pl->nr++] = fd;
	}
	return pl->nr ? 0 : -ENODEV;
}

static int attach_sampling(struct profile_bpf *skel, struct perf_links *pl)
{
	int err;

	for (int i = 0; i < pl->nr; i++) {
		pl->links[i] = bpf_program__attach_perf_event(skel->progs.do_sample, pl->fds[i]);
		if (!pl->links[i]) {
			err = -errno;
			explain_bpf_error("cannot attach to the perf event", err);
			return err;
		}
	}
	p_info("sampling %s at %llu Hz on %d CPUs", env.event, (unsigned long long)env.freq, pl->nr);
	return 0;
}

static void detach_sampling(struct perf_links *pl)
{
	for (int i = 0; i < pl->nr; i++) {
		bpf_link__destroy(pl->links[i]);
		close(pl->fds[i]);
	}
	pl->nr = 0;
	free(pl->links);
	free(pl->fds);
	pl->links = NULL;
	pl->fds = NULL;
}

static int fill_filters(struct profile_bpf *skel, const struct child *child)
{
	__u8 one = 1;
	int err = 0;

	for (int i = 0; i < env.nr_pids && !err; i++)
		err = bpf_map__update_elem(skel->maps.tgids, &env.pids[i], 4, &one, 1, BPF_ANY);
	for (int i = 0; i < env.nr_tids && !err; i++)
		err = bpf_map__update_elem(skel->maps.pids, &env.tids[i], 4, &one, 1, BPF_ANY);
	if (!err && child) {
		__u32 pid = child->pid;

		err = bpf_map__update_elem(skel->maps.tgids, &pid, 4, &one, 1, BPF_ANY);
	}
	return err;
}

static void format_lost(const __u64 *lost, char *buf, size_t size)
{
	snprintf(buf, size, "stack capture failed %llu, stack table full %llu, hash collisions %llu, "
		 "count table full %llu",
		 (unsigned long long)lost[LOST_STACK_ERR], (unsigned long long)lost[LOST_STACKS_FULL],
		 (unsigned long long)lost[LOST_STACK_COLLIDED],
		 (unsigned long long)lost[LOST_COUNTS_FULL]);
}

/* In-kernel unwinding (--unwind eh/auto): NULL with frame pointers. */
static struct unwinder *unwinder;

/* The report or folded stacks to stdout or -o, and the SVG. */
static int write_outputs(const struct stack_sample *samples, size_t n, const __u64 *lost,
			 double elapsed)
{
	__u64 nr_lost = lost[LOST_STACK_ERR] + lost[LOST_STACKS_FULL] +
			lost[LOST_STACK_COLLIDED] + lost[LOST_COUNTS_FULL];
	char detail[256], title[128], unwound[512];
	struct stack_outputs o = {
		.out_path = env.so.out_path,
		.svg_path = env.so.svg_path,
		.folded = env.so.folded,
		.folded_opts = { .annotate_kernel = env.so.annotate },
		.flamegraph = {
			.title = env.so.title ? env.so.title : "CPU Flame Graph",
			.subtitle = title,
			.count_name = "samples",
			.palette = PALETTE_HOT,
			.annotate_kernel = true,
		},
		.header = {
			.event = env.event,
			.frequency = env.event_spec ? 0 : env.freq,
			.duration_s = elapsed,
			.lost = nr_lost,
			.lost_detail = nr_lost ? detail : NULL,
			.unwind = env.so.kernel_only ? NULL : unwind_method_name(env.so.unwind),
			.extra = unwound,
		},
		.report = {
			.children = !env.so.no_children,
			.percent_limit = env.so.percent_limit,
			.unit = REPORT_SAMPLES,
			.call_graph = true,
			.call_graph_limit = env.so.call_graph_limit,
		},
		.lost_what = "samples",
	};

	format_lost(lost, detail, sizeof(detail));
	unwind_summary_line(unwinder, env.so.folded, unwound, sizeof(unwound));
	if (!unwound[0])
		o.header.extra = NULL;
	if (env.event_spec)
		snprintf(title, sizeof(title), "every hit of %s, %.1f s%s", env.event, elapsed,
			 nr_lost ? ", samples lost" : "");
	else
		snprintf(title, sizeof(title), "%s at %llu Hz, %.1f s%s", env.event,
			 (unsigned long long)env.freq, elapsed, nr_lost ? ", samples lost" : "");
	return stack_outputs_write(&o, samples, n);
}

static void configure(struct profile_bpf *skel)
{
	/* Filters and stack choices are read-only globals, fixed before load. */
	skel->rodata->filter_tgid = env.nr_pids || env.so.command;
	skel->rodata->filter_pid = env.nr_tids;
	skel->rodata->targ_include_idle = env.include_idle;
	skel->rodata->targ_user_stacks = !env.so.kernel_only;
	skel->rodata->targ_kern_stacks = !env.so.user_only;
	skel->rodata->targ_max_stack = env.so.max_stack;
	bpf_map__set_max_entries(skel->maps.counts, env.so.max_stacks);
	/* User and kernel stacks are stored apart: room for both of every sample key. */
	bpf_map__set_max_entries(skel->maps.stacks, env.so.max_stacks * 2);
	/* -K takes no user stacks: nothing to unwind */
	if (env.so.kernel_only)
		env.so.unwind = UNWIND_FP;
	UNWIND_CONFIGURE(skel, env.so.unwind, env.so.unwind_mem_mb);
}


/* ---- -e SPEC: the event programs replace the perf events ---- */

static struct probe_progs event_progs(struct profile_bpf *skel)
{
	struct probe_progs p = {
		.uentry = skel->progs.event_uprobe, .kentry = skel->progs.event_kprobe,
		.fentry = skel->progs.event_fentry, .tp = skel->progs.event_tp,
		.raw_tp = skel->progs.event_raw_tp,
		.sys_enter = skel->progs.event_sys_enter, .sys_exit = skel->progs.event_sys_exit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
	};
	return p;
}

/* perf's stacks for the same events end at the code that hit the event, so these do. */
static void trim_event_frames(struct stack_sample *samples, size_t n)
{
	for (size_t i = 0; i < n; i++)
		samples[i].nr_frames = stack_frames_trim_bpf(samples[i].frames, samples[i].nr_frames);
}

/* Keeps the event programs -e SPEC needs (none for a perf event); probe_attach() attaches them. */
static int configure_events(struct profile_bpf *skel, const struct probe_events *evs)
{
	struct probe_progs p = event_progs(skel);
	struct bpf_program *progs[] = { p.uentry, p.kentry, p.fentry, p.tp, p.raw_tp, p.sys_enter,
					p.sys_exit };

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		bpf_program__set_autoload(progs[i], false);
		bpf_program__set_autoattach(progs[i], false);
	}
	return env.event_spec ? probe_prepare(&p, evs) : 0;
}

/* --unwind auto on a kernel that refuses the unwinder (it needs BPF global functions, 5.6+):
 * load again with the frame-pointer walk. */
static int load_without_unwinding(struct profile_bpf **skel, const struct probe_events *evs,
				  int err)
{
	p_err("in-kernel unwinding does not load on this kernel (%s); using frame pointers",
	      strerror(-err));
	profile_bpf__destroy(*skel);
	env.so.unwind = UNWIND_FP;
	*skel = profile_bpf__open();
	if (!*skel)
		return -errno;
	configure(*skel);
	err = configure_events(*skel, evs);
	return err ?: profile_bpf__load(*skel);
}

int cmd_profile(int argc, char **argv)
{
	struct stack_resolver *resolver = NULL;
	struct stack_sample *samples = NULL;
	struct profile_bpf *skel = NULL;
	struct follow_bpf *follow = NULL;
	struct ring_buffer *rb = NULL;
	struct perf_links pl = {};
	struct probe_events evs = {};
	struct probe_links event_links = {};
	struct unwind_bpf ub;
	struct child child = { .pid = -1 };
	size_t nr_samples = 0;
	__u64 start, lost[LOST_REASONS];
	double elapsed;
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
	if (env.event_spec)
		err = probe_resolve_specs((char **)&env.event, 1, env.nr_pids == 1 ? env.pids[0] : 0,
					  &evs);
	else
		err = open_sampling(find_event(env.event), &pl);
	if (err)
		goto cleanup;
	if (env.so.command) {
		err = child_start(&child, env.so.command);
		if (err)
			goto cleanup;
	}

	skel = profile_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	configure(skel);
	err = configure_events(skel, &evs);
	if (err)
		goto cleanup;
	err = profile_bpf__load(skel);
	if (err && env.so.unwind == UNWIND_AUTO)
		err = load_without_unwinding(&skel, &evs, err);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	err = fill_filters(skel, env.so.command ? &child : NULL);
	if (err) {
		p_err("cannot set the PID filters: %s", strerror(-err));
		goto cleanup;
	}
	err = profile_bpf__attach(skel);
	if (err) {
		explain_bpf_error("cannot attach the BPF programs", err);
		goto cleanup;
	}
	if (env.so.command) {
		err = follow_start(skel->maps.tgids, &follow);
		if (err)
			goto cleanup;
	}
	if (env.event_spec) {
		struct probe_progs p = event_progs(skel);

		err = probe_attach(&p, &evs, env.nr_pids == 1 ? env.pids[0] : 0, &event_links);
	} else {
		err = attach_sampling(skel, &pl);
	}
	if (err)
		goto cleanup;
	ub = UNWIND_BPF_MAPS(skel);
	rb = unwind_start(&ub, bpf_map__fd(skel->maps.proc_events), stack_resolver__syms(resolver),
			  env.so.unwind, &unwinder);
	if (!rb) {
		err = -errno;
		goto cleanup;
	}

	start = now_ns();
	/* Kernel symbols load while the run goes on, not after it (skipped with -U). */
	if (!env.so.user_only)
		stack_resolver__prefetch(resolver);
	if (env.so.command) {
		err = child_release(&child, env.so.command[0]);
		if (err)
			goto cleanup;
	}
	stack_run_loop(rb, stack_resolver__syms(resolver), env.so.command ? &child : NULL, start,
		       env.so.duration, env.pids, env.nr_pids, env.tids, env.nr_tids);
	elapsed = (now_ns() - start) / 1e9;
	/* Stop sampling first so the report describes exactly the run. */
	detach_sampling(&pl);
	probe_links_destroy(&event_links);
	ring_buffer__consume(rb);

	memcpy(lost, (const void *)skel->bss->lost, sizeof(lost));
	p_info("%llu samples taken in the kernel", (unsigned long long)skel->bss->samples_seen);
	err = stacks_collect(resolver, bpf_map__fd(skel->maps.counts),
			     bpf_map__fd(skel->maps.stacks), &samples, &nr_samples);
	if (err) {
		p_err("cannot read the samples: %s", strerror(-err));
		goto cleanup;
	}
	if (env.event_spec)
		trim_event_frames(samples, nr_samples);
	err = write_outputs(samples, nr_samples, lost, elapsed);
	if (unwinder && verbose)
		unwinder__print_usage(unwinder, stderr);
cleanup:
	detach_sampling(&pl);
	probe_links_destroy(&event_links);
	probe_events_free(&evs);
	ring_buffer__free(rb);
	follow_stop(follow);
	profile_bpf__destroy(skel);
	if (env.so.command)
		child_stop(&child);
	stack_samples_free(samples, nr_samples);
	unwinder__free(unwinder);
	unwinder = NULL;
	stack_resolver__free(resolver);
	free(env.cpus);
	return err ? 1 : 0;
}
