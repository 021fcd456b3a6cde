/* bpfprof funclat: latency histograms of functions (user and kernel) and syscalls, many at
 * once, aggregated in the kernel. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "funclat.h"
#include "funclat.skel.h"
#include "core/heatmaprun.h"
#include "out/hist.h"
#include "out/outfile.h"
#include "core/follow.h"
#include "probe/probe.h"

static struct funclat_env {
	pid_t pid;
	double duration, interval;
	bool timestamp, loglin;
	__u64 unit_ns;
	const char *unit;
	struct heatmap_run heatmap;
	char **specs;
	int nr_specs;
	char **command;
} env;

static const char usage[] =
"Usage: bpfprof funclat [options] SPEC... [-- COMMAND [ARGS...]]\n"
"Latency histograms of functions and syscalls, one per function, counted in the kernel.\n"
"\n"
"SPEC:  FUNC, k:FUNC          kernel function (fentry/fexit, else kprobes)\n"
"       u:PATH:FUNC, PATH:FUNC user function in a binary or library (uprobes)\n"
"       LIB:FUNC               library by name, e.g. c:malloc (through -p's maps, else ld.so cache)\n"
"       sys:NAME               syscall, e.g. sys:read (sys_enter/sys_exit)\n"
"       FUNC may be a glob: u:libc:str* times every match\n"
"\n"
"  -p, --pid PID            only this process\n"
"  -d, --duration SECONDS   stop after SECONDS (default: Ctrl-C, or when COMMAND exits)\n"
"  -i, --interval SECONDS   print the histograms of every SECONDS\n"
"  -T, --timestamp          with -i: print the time of each interval\n"
"  -n, --nanoseconds        histograms in nanoseconds\n"
"  -u, --microseconds       histograms in microseconds (default)\n"
"  -m, --milliseconds       histograms in milliseconds\n"
"  -L, --log-linear         8 buckets per power of two instead of 1\n"
"      --heatmap FILE       latency heat map SVG (all functions together)\n"
"      --heatmap-data FILE  the heat map's counts as TSV\n"
"  -v, --verbose            print libbpf messages and what was chosen\n"
"  -h, --help               this help\n";

enum { OPT_HEATMAP = 256, OPT_HEATMAP_DATA };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "nanoseconds", no_argument, NULL, 'n' },
	{ "microseconds", no_argument, NULL, 'u' },
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "log-linear", no_argument, NULL, 'L' },
	{ "heatmap", required_argument, NULL, OPT_HEATMAP },
	{ "heatmap-data", required_argument, NULL, OPT_HEATMAP_DATA },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static int parse_args(int argc, char **argv)
{
	int dashdash, opt;

	env.unit_ns = 1000;
	env.unit = "usecs";
	dashdash = split_command(argc, argv, &env.command);
	if (dashdash < 0)
		return dashdash;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(dashdash, argv, ":p:d:i:TnumLvh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pid(optarg, &env.pid))
				return -EINVAL;
			break;
		case 'd':
			if (parse_seconds(optarg, &env.duration)) {
				p_err("invalid duration '%s' (expected seconds > 0)", optarg);
				return -EINVAL;
			}
			break;
		case 'i':
			if (parse_seconds(optarg, &env.interval)) {
				p_err("invalid interval '%s' (expected seconds > 0)", optarg);
				return -EINVAL;
			}
			break;
		case 'T':
			env.timestamp = true;
			break;
		case 'n':
			env.unit_ns = 1, env.unit = "nsecs";
			break;
		case 'u':
			env.unit_ns = 1000, env.unit = "usecs";
			break;
		case 'm':
			env.unit_ns = 1000000, env.unit = "msecs";
			break;
		case 'L':
			env.loglin = true;
			break;
		case OPT_HEATMAP:
			env.heatmap.svg_path = optarg;
			break;
		case OPT_HEATMAP_DATA:
			env.heatmap.tsv_path = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			return getopt_error(opt, argv, usage);
		}
	}
	env.specs = &argv[optind];
	env.nr_specs = dashdash - optind;
	if (!env.nr_specs) {
		p_err("no function to time (e.g. bpfprof funclat c:malloc)");
		return -EINVAL;
	}
	if (env.command && env.pid) {
		p_err("-p and a COMMAND exclude each other");
		return -EINVAL;
	}
	if (env.timestamp && !env.interval) {
		p_err("-T needs -i INTERVAL");
		return -EINVAL;
	}
	return 0;
}

/* funclat times calls that return: a tracepoint has no duration. */
static int check_kinds(const struct probe_events *evs)
{
	for (int i = 0; i < evs->nr; i++) {
		if (evs->ev[i].kind != PROBE_TP)
			continue;
		p_err("'%s' is a tracepoint, which has no duration: funclat times functions "
		      "(sys:NAME times a syscall; 'bpfprof count' counts tracepoints)",
		      env.specs[evs->ev[i].spec]);
		return -EINVAL;
	}
	if (evs->nr > FUNCLAT_MAX_FUNCS) {
		p_err("%d functions match: funclat times at most %d at once", evs->nr,
		      FUNCLAT_MAX_FUNCS);
		return -E2BIG;
	}
	return 0;
}

static struct hist_layout layout(void)
{
	struct hist_layout l = { .kind = env.loglin ? HIST_LOGLIN : HIST_LOG2,
				 .sub_shift = FUNCLAT_SUB_SHIFT_MAX };
	return l;
}

static int hist_slots(void)
{
	return env.loglin ? FUNCLAT_SLOTS : HIST_LOG2_SLOTS;
}

/* Prints every function called since the last call (prev, one per event, holds what was printed
 * before: the kernel's counts are never reset, so no call made while reading is lost). */
static int print_hists(struct funclat_bpf *skel, const struct probe_events *evs,
		       struct funclat_hist *prev)
{
	struct hist_layout l = layout();
	struct funclat_hist *h = malloc(sizeof(*h));
	int err = h ? 0 : -ENOMEM, shown = 0;

	for (__u32 i = 0; !err && i < (__u32)evs->nr; i++) {
		struct hist_summary s;
		__u64 count = 0;

		err = bpf_map__lookup_elem(skel->maps.hists, &i, 4, h, sizeof(*h), 0);
		if (err)
			break;
		h->sum_ns -= prev[i].sum_ns;
		prev[i].sum_ns += h->sum_ns;
		for (unsigned int k = 0; k < FUNCLAT_SLOTS; k++) {
			h->slots[k] -= prev[i].slots[k];
			prev[i].slots[k] += h->slots[k];
			count += h->slots[k];
		}
		if (!count)
			continue;
		printf("\n%s\n", evs->ev[i].name);
		err = hist_print(stdout, h->slots, hist_slots(), &l, env.unit);
		err = err ?: hist_summary(h->slots, hist_slots(), &l, h->sum_ns / env.unit_ns, &s);
		/* the sum is exact in ns: the average is too */
		if (!err) {
			s.avg = (double)h->sum_ns / env.unit_ns / count;
			err = hist_print_summary(stdout, &s, env.unit);
		}
		shown++;
	}
	if (!err && !shown)
		printf("\n(no calls)\n");
	free(h);
	return err;
}

static void print_lost(struct funclat_bpf *skel)
{
	__u64 deep = skel->bss->lost[FUNCLAT_LOST_DEPTH], full = skel->bss->lost[FUNCLAT_LOST_START_FULL];

	if (deep || full)
		fprintf(stderr, "bpfprof: calls not timed: %llu nested deeper than %d, %llu with the "
			"start table full\n", (unsigned long long)deep, FUNCLAT_MAX_DEPTH,
			(unsigned long long)full);
}

static int configure(struct funclat_bpf *skel, const struct probe_events *evs,
		     const struct probe_progs *progs)
{
	/* units, bucket layout and filters are read-only globals, fixed before load */
	skel->rodata->targ_unit_ns = env.unit_ns;
	skel->rodata->targ_loglin = env.loglin;
	skel->rodata->targ_sub_shift = FUNCLAT_SUB_SHIFT_MAX;
	skel->rodata->filter_tgid = env.pid || env.command;
	bpf_map__set_max_entries(skel->maps.hists, evs->nr);
	return heatmap_run_configure(&env.heatmap, skel->maps.heat, &skel->rodata->targ_heatmap,
				     &skel->rodata->targ_heatmap_cfg, env.duration) ?:
	       probe_prepare(progs, evs);
}

static void print_interval_header(void)
{
	char buf[32];
	time_t t = time(NULL);

	if (env.timestamp) {
		strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&t));
		printf("\n%s", buf);
	}
}

int cmd_funclat(int argc, char **argv)
{
	struct probe_events evs = {};
	struct probe_links links = {};
	struct funclat_hist *prev = NULL;
	struct funclat_bpf *skel = NULL;
	struct follow_bpf *follow = NULL;
	struct child child = { .pid = -1 };
	struct probe_progs progs;
	__u64 start, deadline, next;
	bool bad_usage = false;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();

	err = probe_resolve_specs(env.specs, env.nr_specs, env.pid, &evs);
	err = err ?: check_kinds(&evs);
	if (err) {
		bad_usage = err == -EINVAL;
		goto cleanup;
	}
	prev = calloc(evs.nr, sizeof(*prev));
	if (!prev) {
		err = -ENOMEM;
		goto cleanup;
	}
	skel = funclat_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	progs = (struct probe_progs){
		.uentry = skel->progs.uentry, .uexit = skel->progs.uexit,
		.kentry = skel->progs.kentry, .kexit = skel->progs.kexit,
		.fentry = skel->progs.fentry_entry, .fexit = skel->progs.fexit_exit,
		.sys_enter = skel->progs.sys_enter, .sys_exit = skel->progs.sys_exit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
		.want_exit = true,
	};
	err = configure(skel, &evs, &progs);
	if (err)
		goto cleanup;
	if (env.command) {
		err = child_start(&child, env.command);
		if (err)
			goto cleanup;
	}
	err = funclat_bpf__load(skel);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	err = probe_filter_start(skel->maps.tgids, env.command ? child.pid : env.pid,
				 env.command != NULL, &follow);
	err = err ?: probe_attach(&progs, &evs, env.pid, &links);
	if (err)
		goto cleanup;
	fprintf(stderr, "Timing %d function%s%s\n", evs.nr, evs.nr == 1 ? "" : "s",
		env.command || env.duration ? "" : "... Hit Ctrl-C to end.");

	start = now_ns();
	if (env.command) {
		err = child_release(&child, env.command[0]);
		if (err)
			goto cleanup;
	}
	deadline = env.duration ? start + (__u64)(env.duration * 1e9) : 0;
	next = env.interval ? start + (__u64)(env.interval * 1e9) : 0;
	while (!exiting) {
		__u64 now = now_ns();

		if (deadline && now >= deadline)
			break;
		if (next && now >= next) {
			print_interval_header();
			err = print_hists(skel, &evs, prev);
			if (err || fflush(stdout))
				break;
			next += (__u64)(env.interval * 1e9);
		}
		if (env.command && child_poll(&child))
			break;
		if (env.pid && !process_exists(env.pid)) {
			p_info("pid %d has exited", env.pid);
			break;
		}
		usleep(20000);
	}
	/* stop timing first so the output describes exactly the run */
	probe_links_destroy(&links);
	if (!err) {
		if (env.interval)
			print_interval_header();
		err = print_hists(skel, &evs, prev);
	}
	print_lost(skel);
	if (!err && heatmap_run_enabled(&env.heatmap)) {
		/* prints its own message */
		err = heatmap_run_write(&env.heatmap, skel->maps.heat, now_ns(), env.unit,
					"Function Latency Heat Map");
		if (err)
			goto cleanup;
	}
	if (!err)
		err = stream_flush_check(stdout);
	if (err && err != -ENOMEM)
		p_err("cannot write the output: %s", strerror(-err));
cleanup:
	probe_links_destroy(&links);
	follow_stop(follow);
	funclat_bpf__destroy(skel);
	if (env.command)
		child_stop(&child);
	probe_events_free(&evs);
	free(prev);
	return bad_usage ? 2 : err ? 1 : 0;
}
