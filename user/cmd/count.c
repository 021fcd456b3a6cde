// SPDX-License-Identifier: GPL-2.0
/* bpfprof count: count events in the kernel, like perf stat -e, for any event spec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/runner.h"
#include "count.h"
#include "count.skel.h"

RUNNER_SKELETON(count);

static struct count_env {
	bool per_process;
	__u64 top;
	struct probe_events evs;
	__u64 *counts, *prev; /* per event: now, and at the last interval */
	__u64 t_attach;
} env;

static const struct opt count_opts[] = {
	{ 'P', "per-process", NULL, "also break the counts down per process", OPT_FLAG,
	  &env.per_process },
	{ 0, "top", "N", "with -P: the N busiest (process, event) pairs (default 10)", OPT_U64,
	  &env.top, 1, 1000000 },
	{},
};

static int count_check(struct runner *r)
{
	int err;

	if (!env.top)
		env.top = 10;
	err = runner_resolve_events(&env.evs);
	if (err)
		return err;
	env.counts = calloc(env.evs.nr, sizeof(*env.counts));
	env.prev = calloc(env.evs.nr, sizeof(*env.prev));
	return env.counts && env.prev ? 0 : -ENOMEM;
}

static struct probe_progs count_progs(struct count_bpf *skel)
{
	struct probe_progs p = {
		.uentry = skel->progs.uprobe_hit, .kentry = skel->progs.kprobe_hit,
		.fentry = skel->progs.fentry_hit, .tp = skel->progs.tp_hit,
		.raw_tp = skel->progs.raw_tp_hit,
		.sys_enter = skel->progs.sys_enter_hit, .sys_exit = skel->progs.sys_exit_hit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
	};
	return p;
}

static int count_configure(struct runner *r)
{
	struct count_bpf *skel = r->skel;
	struct probe_progs p = count_progs(skel);

	/* settings are read-only globals, fixed before load */
	skel->rodata->targ_per_process = env.per_process;
	bpf_map__set_max_entries(skel->maps.counts, env.evs.nr);
	if (!env.per_process)
		bpf_map__set_max_entries(skel->maps.proc_counts, 1);
	return probe_prepare(&p, &env.evs);
}

static int count_attach(struct runner *r)
{
	struct probe_progs p = count_progs(r->skel);

	env.t_attach = now_ns();
	return runner_attach_events(r, &p, &env.evs);
}

static int count_started(struct runner *r)
{
	fprintf(stderr, "Counting %d event%s (attached in %.0f ms)%s\n", env.evs.nr,
		env.evs.nr == 1 ? "" : "s", (now_ns() - env.t_attach) / 1e6,
		targets.command || run_opts.duration ? "" : "... Hit Ctrl-C to end.");
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
	if (err)
		p_err("cannot read the counts: %s", strerror(-err));
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
	return evs->ev[i].from_glob || strpbrk(run_opts.events[evs->ev[i].spec], "*?[");
}

static int print_totals(FILE *out, const struct probe_events *evs, const __u64 *counts,
			double elapsed)
{
	int *order = malloc(evs->nr * sizeof(*order)), silent = 0;

	if (!order)
		return -ENOMEM;
	for (int i = 0; i < evs->nr; i++)
		order[i] = i;
	sort_counts = counts;
	qsort(order, evs->nr, sizeof(*order), by_count);
	fprintf(out, "%15s %14s  %s\n", "count", "rate/s", "event");
	for (int k = 0; k < evs->nr; k++) {
		int i = order[k];

		if (!counts[i] && from_glob(evs, i)) {
			silent++;
			continue;
		}
		fprintf(out, "%15llu %14.1f  %s\n", (unsigned long long)counts[i],
			elapsed > 0 ? counts[i] / elapsed : 0.0, evs->ev[i].name);
	}
	if (silent)
		fprintf(out, "(%d more matched event%s had no hits)\n", silent, silent == 1 ? "" : "s");
	fprintf(out, "\n%15.3f seconds\n", elapsed);
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

static int print_per_process(FILE *out, struct count_bpf *skel, const struct probe_events *evs)
{
	int fd = bpf_map__fd(skel->maps.proc_counts), err = 0;
	struct count_proc_key key, next, *prev = NULL;
	struct proc_row *rows = NULL;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (n == cap) {
			struct proc_row *grown;

			cap = cap ? cap * 2 : 256;
			grown = realloc(rows, cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			rows = grown;
		}
		rows[n].key = next;
		if (!bpf_map_lookup_elem(fd, &next, &rows[n].val) && next.idx < (__u32)evs->nr)
			n++;
		key = next;
		prev = &key;
	}
	if (n) /* no row, no array: qsort may not be given NULL */
		qsort(rows, n, sizeof(*rows), by_proc_count);
	fprintf(out, "\nper process (top %llu of %zu):\n%8s  %-16s %15s  %s\n",
		(unsigned long long)env.top, n, "PID", "COMM", "count", "event");
	for (size_t i = 0; i < n && i < env.top; i++)
		fprintf(out, "%8u  %-16.16s %15llu  %s\n", rows[i].key.tgid, rows[i].val.comm,
			(unsigned long long)rows[i].val.count, evs->ev[rows[i].key.idx].name);
	if (skel->bss->lost_procs)
		fprintf(stderr, "bpfprof: %llu events not broken down per process (table full)\n",
			(unsigned long long)skel->bss->lost_procs);
cleanup:
	free(rows);
	return err;
}

/* perf stat -I style: the counts of the last interval, one line per event that fired. */
static void print_interval(FILE *out, const struct probe_events *evs, double t)
{
	bool any = false;

	for (int i = 0; i < evs->nr; i++) {
		__u64 d = env.counts[i] - env.prev[i];

		if (d || !from_glob(evs, i)) {
			fprintf(out, "%12.3f %15llu  %s\n", t, (unsigned long long)d, evs->ev[i].name);
			any = true;
		}
		env.prev[i] = env.counts[i];
	}
	if (!any)
		fprintf(out, "%12.3f %15s  (no events)\n", t, "0");
}

/* Each interval's counts; at the end the last interval's, then the totals. */
static int count_report(struct runner *r, bool last)
{
	double elapsed = runner_elapsed(r);
	int err = read_counts(r->skel, env.evs.nr, env.counts);

	if (err)
		return err;
	if (run_opts.interval)
		print_interval(r->out, &env.evs, elapsed);
	if (!last)
		return 0;
	if (run_opts.interval)
		fprintf(r->out, "\n");
	err = print_totals(r->out, &env.evs, env.counts, elapsed);
	if (!err && env.per_process)
		err = print_per_process(r->out, r->skel, &env.evs);
	return err;
}

static void count_teardown(struct runner *r)
{
	probe_events_free(&env.evs);
	free(env.counts);
	free(env.prev);
	memset(&env, 0, sizeof(env));
}

const struct command count_cmd = {
	.name = "count",
	.summary = "count events (tracepoints, functions) in the kernel",
	.description = "Count events in the kernel, like perf stat -e: one line per event with its count\n"
		       "and rate.",
	.notes =
		"EVENT:  t:CAT:NAME, CAT:NAME   tracepoint; globs: 'syscalls:sys_enter_*', 'block:*'\n"
		"        sys:NAME               a syscall's entries (syscalls:sys_enter_NAME)\n"
		"        FUNC, k:FUNC           kernel function (fentry, else kprobe)\n"
		"        u:PATH:FUNC, LIB:FUNC  user function (uprobe), e.g. c:malloc\n"
		"EVENTs are given with -e or as arguments, several at once or comma-separated.\n",
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_INTERVALS | CAP_EVENTS,
	.positional = POS_EVENTS,
	.no_events = "no event to count (e.g. bpfprof count 'syscalls:sys_enter_*')",
	.opts = count_opts,
	.skel = &count_skel,
	.check = count_check,
	.configure = count_configure,
	.attach = count_attach,
	.started = count_started,
	.report = count_report,
	.teardown = count_teardown,
};
