/* bpfprof count: count events in the kernel, like perf stat -e, for any event spec. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "count.h"
#include "count.skel.h"
#include "out/outfile.h"
#include "core/follow.h"
#include "probe/probe.h"

static struct count_env {
	pid_t pid;
	double duration;
	__u64 interval_ms;
	bool per_process;
	__u64 top;
	char **specs;
	int nr_specs;
	char **command;
} env;

static const char usage[] =
"Usage: bpfprof count [options] SPEC... [-- COMMAND [ARGS...]]\n"
"Count events in the kernel, like perf stat -e: one line per event with its count and rate.\n"
"\n"
"SPEC:  t:CAT:NAME, CAT:NAME   tracepoint; globs welcome: 'syscalls:sys_enter_*', 'block:*'\n"
"       sys:NAME               a syscall's entries (syscalls:sys_enter_NAME)\n"
"       FUNC, k:FUNC           kernel function (fentry, else kprobe)\n"
"       u:PATH:FUNC, LIB:FUNC  user function (uprobe), e.g. c:malloc\n"
"\n"
"  -p, --pid PID            only this process\n"
"  -d, --duration SECONDS   stop after SECONDS (default: Ctrl-C, or when COMMAND exits)\n"
"  -I, --interval MS        print the counts of every MS milliseconds\n"
"  -P, --per-process        also break the counts down per process\n"
"      --top N              with -P: the N busiest (process, event) pairs (default 10)\n"
"  -v, --verbose            print libbpf messages and what was chosen\n"
"  -h, --help               this help\n";

enum { OPT_TOP = 256 };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'I' },
	{ "per-process", no_argument, NULL, 'P' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static int parse_args(int argc, char **argv)
{
	int dashdash, opt;

	env.top = 10;
	dashdash = split_command(argc, argv, &env.command);
	if (dashdash < 0)
		return dashdash;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(dashdash, argv, ":p:d:I:Pvh", long_opts, NULL)) != -1) {
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
		case 'I':
			if (parse_u64(optarg, 10, 3600 * 1000, &env.interval_ms)) {
				p_err("invalid interval '%s' (milliseconds, at least 10)", optarg);
				return -EINVAL;
			}
			break;
		case 'P':
			env.per_process = true;
			break;
		case OPT_TOP:
			if (parse_u64(optarg, 1, 1000000, &env.top)) {
				p_err("invalid --top '%s' (expected a number >= 1)", optarg);
				return -EINVAL;
			}
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
		p_err("no event to count (e.g. bpfprof count 'syscalls:sys_enter_*')");
		return -EINVAL;
	}
	if (env.command && env.pid) {
		p_err("-p and a COMMAND exclude each other");
		return -EINVAL;
	}
	return 0;
}

/* Totals per event, summed over CPUs. */
static int read_counts(struct count_bpf *skel, int nr, __u64 *out)
{
	int ncpu = nr_cpus_possible(), err = 0;
	__u64 *percpu = calloc(ncpu, sizeof(*percpu));

	if (!percpu)
		return -ENOMEM;
	for (__u32 i = 0; i < (__u32)nr && !err; i++) {
		err = bpf_map__lookup_elem(skel->maps.counts, &i, 4, percpu, ncpu * sizeof(*percpu), 0);
		out[i] = 0;
		for (int c = 0; !err && c < ncpu; c++)
			out[i] += percpu[c];
	}
	free(percpu);
	return err;
}

static const __u64 *sort_counts;

static int by_count(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (sort_counts[x] != sort_counts[y])
		return sort_counts[x] > sort_counts[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* An event named exactly is always shown; one of many glob matches only when it fired. */
static bool from_glob(const struct probe_events *evs, int i)
{
	const char *s = env.specs[evs->ev[i].spec];

	return strpbrk(s, "*?[") != NULL;
}

static int print_totals(const struct probe_events *evs, const __u64 *counts, double elapsed)
{
	int *order = malloc(evs->nr * sizeof(*order)), silent = 0;

	if (!order)
		return -ENOMEM;
	for (int i = 0; i < evs->nr; i++)
		order[i] = i;
	sort_counts = counts;
	qsort(order, evs->nr, sizeof(*order), by_count);
	printf("%15s %14s  %s\n", "count", "rate/s", "event");
	for (int k = 0; k < evs->nr; k++) {
		int i = order[k];

		if (!counts[i] && from_glob(evs, i)) {
			silent++;
			continue;
		}
		printf("%15llu %14.1f  %s\n", (unsigned long long)counts[i],
		       elapsed > 0 ? counts[i] / elapsed : 0.0, evs->ev[i].name);
	}
	if (silent)
		printf("(%d more matched event%s had no hits)\n", silent, silent == 1 ? "" : "s");
	printf("\n%15.3f seconds\n", elapsed);
	free(order);
	return 0;
}

struct proc_row {
	struct count_proc_key key;
	struct count_proc_val val;
};

static int by_proc_count(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->val.count != y->val.count)
		return x->val.count > y->val.count ? -1 : 1;
	return x->key.tgid < y->key.tgid ? -1 : x->key.tgid > y->key.tgid;
}

static int print_per_process(struct count_bpf *skel, const struct probe_events *evs)
{
	int fd = bpf_map__fd(skel->maps.proc_counts), err = 0;
	struct count_proc_key key, next, *prev = NULL;
	struct proc_row *rows = NULL;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (n == cap) {
			struct proc_row *r;

			cap = cap ? cap * 2 : 256;
			r = realloc(rows, cap * sizeof(*r));
			if (!r) {
				err = -ENOMEM;
				goto cleanup;
			}
			rows = r;
		}
		rows[n].key = next;
		if (!bpf_map_lookup_elem(fd, &next, &rows[n].val) && next.idx < (__u32)evs->nr)
			n++;
		key = next;
		prev = &key;
	}
	qsort(rows, n, sizeof(*rows), by_proc_count);
	printf("\nper process (top %llu of %zu):\n%8s  %-16s %15s  %s\n", (unsigned long long)env.top,
	       n, "PID", "COMM", "count", "event");
	for (size_t i = 0; i < n && i < env.top; i++)
		printf("%8u  %-16.16s %15llu  %s\n", rows[i].key.tgid, rows[i].val.comm,
		       (unsigned long long)rows[i].val.count, evs->ev[rows[i].key.idx].name);
	if (skel->bss->lost_procs)
		fprintf(stderr, "bpfprof: %llu events not broken down per process (table full)\n",
			(unsigned long long)skel->bss->lost_procs);
cleanup:
	free(rows);
	return err;
}

/* perf stat -I style: the counts of the last interval, one line per event that fired. */
static void print_interval(const struct probe_events *evs, const __u64 *now, __u64 *prev,
			   double t)
{
	bool any = false;

	for (int i = 0; i < evs->nr; i++) {
		__u64 d = now[i] - prev[i];

		if (d || !from_glob(evs, i)) {
			printf("%12.3f %15llu  %s\n", t, (unsigned long long)d, evs->ev[i].name);
			any = true;
		}
		prev[i] = now[i];
	}
	if (!any)
		printf("%12.3f %15s  (no events)\n", t, "0");
	fflush(stdout);
}

static int configure(struct count_bpf *skel, const struct probe_events *evs,
		     const struct probe_progs *progs)
{
	/* filters are read-only globals, fixed before load */
	skel->rodata->filter_tgid = env.pid || env.command;
	skel->rodata->targ_per_process = env.per_process;
	bpf_map__set_max_entries(skel->maps.counts, evs->nr);
	if (!env.per_process)
		bpf_map__set_max_entries(skel->maps.proc_counts, 1);
	return probe_prepare(progs, evs);
}

int cmd_count(int argc, char **argv)
{
	struct probe_events evs = {};
	struct probe_links links = {};
	struct count_bpf *skel = NULL;
	struct follow_bpf *follow = NULL;
	struct child child = { .pid = -1 };
	struct probe_progs progs;
	__u64 *counts = NULL, *prev = NULL, start, deadline, next, t_attach;
	double elapsed;
	bool bad_usage = false;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();

	err = probe_resolve_specs(env.specs, env.nr_specs, env.pid, &evs);
	if (err) {
		bad_usage = err == -EINVAL;
		goto cleanup;
	}
	counts = calloc(evs.nr, sizeof(*counts));
	prev = calloc(evs.nr, sizeof(*prev));
	skel = count_bpf__open();
	if (!counts || !prev || !skel) {
		err = skel ? -ENOMEM : -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	progs = (struct probe_progs){
		.uentry = skel->progs.uprobe_hit, .kentry = skel->progs.kprobe_hit,
		.fentry = skel->progs.fentry_hit, .tp = skel->progs.tp_hit,
		.raw_tp = skel->progs.raw_tp_hit,
		.sys_enter = skel->progs.sys_enter_hit, .sys_exit = skel->progs.sys_exit_hit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
	};
	err = configure(skel, &evs, &progs);
	if (err)
		goto cleanup;
	if (env.command) {
		err = child_start(&child, env.command);
		if (err)
			goto cleanup;
	}
	err = count_bpf__load(skel);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	err = probe_filter_start(skel->maps.tgids, env.command ? child.pid : env.pid,
				 env.command != NULL, &follow);
	if (err)
		goto cleanup;
	t_attach = now_ns();
	err = probe_attach(&progs, &evs, env.pid, &links);
	if (err)
		goto cleanup;
	fprintf(stderr, "Counting %d event%s (attached in %.0f ms)%s\n", evs.nr,
		evs.nr == 1 ? "" : "s", (now_ns() - t_attach) / 1e6,
		env.command || env.duration ? "" : "... Hit Ctrl-C to end.");

	start = now_ns();
	if (env.command) {
		err = child_release(&child, env.command[0]);
		if (err)
			goto cleanup;
	}
	deadline = env.duration ? start + (__u64)(env.duration * 1e9) : 0;
	next = env.interval_ms ? start + env.interval_ms * 1000000ULL : 0;
	while (!exiting) {
		__u64 now = now_ns();

		if (deadline && now >= deadline)
			break;
		if (next && now >= next) {
			err = read_counts(skel, evs.nr, counts);
			if (err)
				break;
			print_interval(&evs, counts, prev, (now - start) / 1e9);
			next += env.interval_ms * 1000000ULL;
		}
		if (env.command && child_poll(&child))
			break;
		if (env.pid && !process_exists(env.pid)) {
			p_info("pid %d has exited", env.pid);
			break;
		}
		usleep(next && next - now < 10000000ULL ? (next - now) / 1000 + 1 : 10000);
	}
	elapsed = (now_ns() - start) / 1e9;
	err = err ?: read_counts(skel, evs.nr, counts);
	if (err) {
		p_err("cannot read the counts: %s", strerror(-err));
		goto cleanup;
	}
	if (env.interval_ms) {
		print_interval(&evs, counts, prev, elapsed);
		printf("\n");
	}
	err = print_totals(&evs, counts, elapsed);
	if (!err && env.per_process)
		err = print_per_process(skel, &evs);
	err = err ?: stream_flush_check(stdout);
	if (err)
		p_err("cannot write the output: %s", strerror(-err));
cleanup:
	/* detaching per-event tracepoints waits for the kernel: the output is already out */
	probe_links_destroy(&links);
	follow_stop(follow);
	count_bpf__destroy(skel);
	if (env.command)
		child_stop(&child);
	probe_events_free(&evs);
	free(counts);
	free(prev);
	return bad_usage ? 2 : err ? 1 : 0;
}
