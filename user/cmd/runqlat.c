// SPDX-License-Identifier: GPL-2.0
/* bpfprof runqlat: run-queue latency histograms, aggregated in the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "cmd/schedtp.h"
#include "core/common.h"
#include "core/features.h"
#include "core/hashtab.h"
#include "core/heatmaprun.h"
#include "core/runner.h"
#include "out/hist.h"
#include "runqlat.h"
#include "runqlat.skel.h"

RUNNER_SKELETON(runqlat);

/* The cumulative counts of one histogram at the previous report: the BPF maps are never cleared
 * (clearing races with the programs and loses counts), reports print the difference. */
struct snapshot {
	__u64 slots[HIST_NS_SLOTS];
	__u64 sum_ns;
};

static struct runqlat_env {
	bool ms, per_process, per_thread, per_pidns, force_raw;
	enum runqlat_key key;
	__u64 max_entries;
	struct schedtp_links links;
	struct snapshot prev;  /* the single histogram's last report */
	struct hashtab prevs;  /* key -> struct snapshot, with -P, -L, --pidnss */
	__u64 bytes_read;      /* from BPF maps, for -v and the benchmark */
} env;

static const struct opt runqlat_opts[] = {
	{ 'm', "milliseconds", NULL, "millisecond histograms (default microseconds)", OPT_FLAG,
	  &env.ms },
	{ 'P', "pids", NULL, "one histogram per process", OPT_FLAG, &env.per_process },
	{ 'L', "tids", NULL, "one histogram per thread", OPT_FLAG, &env.per_thread },
	{ 0, "pidnss", NULL, "one histogram per PID namespace", OPT_FLAG, &env.per_pidns },
	{ 0, "max-entries", "N", "histograms kept with -P, -L or --pidnss (default 10240)",
	  OPT_U64, &env.max_entries, 1, 1 << 20 },
	{ 0, "raw-tp", NULL, "use the raw_tp programs and hash maps even where\n"
	  "tp_btf and task storage work (for comparison)", OPT_FLAG, &env.force_raw },
	{},
};

struct keyed_hist {
	__u32 key;
	char comm[RUNQLAT_COMM_LEN];
	struct snapshot delta;
};

static const char *unit(void)
{
	return env.ms ? "msecs" : "usecs";
}

/* cur minus prev into delta; prev becomes cur.  Returns the number of delays in delta. */
static __u64 take_delta(const struct snapshot *cur, struct snapshot *prev, struct snapshot *delta)
{
	__u64 n = 0;

	for (int i = 0; i < HIST_NS_SLOTS; i++) {
		delta->slots[i] = cur->slots[i] - prev->slots[i];
		n += delta->slots[i];
	}
	delta->sum_ns = cur->sum_ns - prev->sum_ns;
	*prev = *cur;
	return n;
}

/* BCC's log2 rows of the unit, and the summary, from the kernel's nanosecond slots. */
static int print_hist(FILE *out, const struct snapshot *h)
{
	struct hist_layout l = { .kind = HIST_LOG2 };

	return hist_ns_print(out, h->slots, HIST_NS_SLOTS, h->sum_ns, &l,
			     env.ms ? 1000000 : 1000, unit());
}

static int report_single(FILE *out, struct runqlat_bpf *skel, struct snapshot *prev)
{
	int ncpu = nr_cpus_possible(), err;
	struct runqlat_hist *percpu;
	struct snapshot cur = {}, delta;
	__u32 key = 0;

	percpu = calloc(ncpu, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.hist), &key, percpu);
	if (err) {
		err = -errno;
		goto cleanup;
	}
	env.bytes_read += ncpu * sizeof(*percpu);
	for (int c = 0; c < ncpu; c++) {
		for (int i = 0; i < HIST_NS_SLOTS; i++)
			cur.slots[i] += percpu[c].slots[i];
		cur.sum_ns += percpu[c].sum_ns;
	}
	take_delta(&cur, prev, &delta);
	fprintf(out, "\n");
	err = print_hist(out, &delta);
cleanup:
	free(percpu);
	return err;
}

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed_hist *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static const char *key_name(void)
{
	switch (env.key) {
	case RUNQLAT_BY_TGID:
		return "pid";
	case RUNQLAT_BY_PID:
		return "tid";
	default:
		return "pidns";
	}
}

/* Reads every histogram of `hists`, prints those that changed since the last report, in key
 * order.  prevs holds the previous counts per key. */
static int report_keyed(FILE *out, struct runqlat_bpf *skel, struct hashtab *prevs)
{
	int fd = bpf_map__fd(skel->maps.hists), err = 0;
	struct keyed_hist *rows = NULL;
	size_t nr = 0, cap = 0;
	struct runqlat_hist h;
	struct snapshot *prev, cur;
	__u32 key, next, *keyp = NULL;

	while (bpf_map_get_next_key(fd, keyp, &next) == 0) {
		key = next;
		keyp = &key;
		if (bpf_map_lookup_elem(fd, &key, &h))
			continue; /* removed meanwhile */
		env.bytes_read += sizeof(key) + sizeof(h);
		prev = hashtab_get(prevs, key, 0);
		if (!prev) {
			prev = calloc(1, sizeof(*prev));
			if (!prev || hashtab_put(prevs, key, 0, prev)) {
				free(prev);
				err = -ENOMEM;
				goto cleanup;
			}
		}
		memcpy(cur.slots, h.slots, sizeof(cur.slots));
		cur.sum_ns = h.sum_ns;
		if (ARRAY_GROW(rows, cap, nr + 1)) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (!take_delta(&cur, prev, &rows[nr].delta))
			continue;
		rows[nr].key = key;
		memcpy(rows[nr].comm, h.comm, sizeof(h.comm));
		rows[nr].comm[RUNQLAT_COMM_LEN - 1] = '\0';
		nr++;
	}
	if (nr) /* no row, no array: qsort may not be given NULL */
		qsort(rows, nr, sizeof(*rows), cmp_keyed);
	for (size_t i = 0; i < nr && !err; i++) {
		fprintf(out, "\n%s = %u %s\n", key_name(), rows[i].key, rows[i].comm);
		err = print_hist(out, &rows[i].delta);
	}
cleanup:
	free(rows);
	return err;
}

static int runqlat_check(struct runner *r)
{
	if (env.per_process + env.per_thread + env.per_pidns > 1) {
		p_err("-P, -L and --pidnss exclude each other");
		return -EINVAL;
	}
	env.key = env.per_process ? RUNQLAT_BY_TGID : env.per_thread ? RUNQLAT_BY_PID :
		  env.per_pidns ? RUNQLAT_BY_PIDNS : RUNQLAT_BY_NONE;
	if (!env.max_entries)
		env.max_entries = 10240;
	return 0;
}

static int runqlat_configure(struct runner *r)
{
	struct runqlat_bpf *skel = r->skel;
	bool use_btf = schedtp_use_btf(env.force_raw);
	int err;

	/* unit and keys are read-only globals, fixed before load */
	skel->rodata->targ_prev_state_arg = schedtp_switch_has_prev_state();
	skel->rodata->targ_key = env.key;
	skel->rodata->targ_ms = env.ms;
	skel->rodata->targ_sched_info = schedtp_use_sched_info(NULL);
	/* tp_btf + task storage where the kernel has both, raw_tp + hash otherwise */
	err = schedtp_configure(skel->obj, use_btf, skel->rodata->targ_sched_info, skel->maps.start,
				skel->maps.start_hash, bpf_map__max_entries(skel->maps.start_hash),
				skel->progs.prefill);
	/* the raw flavour's waits need their baselines too, where the kernel has task iterators */
	err = err ?: bpf_program__set_autoload(skel->progs.prefill_hash,
					       !use_btf && skel->rodata->targ_sched_info &&
					       feat_task_iter());
	if (err)
		return err;
	err = bpf_map__set_max_entries(skel->maps.hists,
				       env.key == RUNQLAT_BY_NONE ? 1 : env.max_entries);
	err = err ?: heatmap_run_configure(&heatmap_opts, skel->maps.heat,
					   &skel->rodata->targ_heatmap,
					   &skel->rodata->targ_heatmap_cfg, runner_planned_seconds());
	if (err)
		p_err("cannot configure the BPF maps: %s", strerror(-err));
	return err;
}

/* task storage first, then the tracepoints, sched_switch first */
static int runqlat_attach(struct runner *r)
{
	struct runqlat_bpf *skel = r->skel;

	int err = 0;

	heatmap_run_start(&heatmap_opts, &skel->bss->heatmap_start_ns);
	if (bpf_program__autoload(skel->progs.prefill_hash))
		err = schedtp_run_task_iter(skel->progs.prefill_hash, "seeds the waits' baselines");
	return err ?: schedtp_start(skel->obj, skel->progs.prefill, &env.links);
}

static void runqlat_detach(struct runner *r)
{
	schedtp_detach(&env.links);
}

static int runqlat_report(struct runner *r, bool last)
{
	int err;

	if (env.key == RUNQLAT_BY_NONE)
		err = report_single(r->out, r->skel, &env.prev);
	else
		err = report_keyed(r->out, r->skel, &env.prevs);
	if (err)
		runner_report_failed(err);
	return err;
}

static int runqlat_write(struct runner *r)
{
	struct runqlat_bpf *skel = r->skel;
	const __u64 *lost = (const __u64 *)skel->bss->lost;

	if (lost[RUNQLAT_LOST_HISTS_FULL] || lost[RUNQLAT_LOST_START])
		p_err("delays not counted: %llu (histogram table full, raise --max-entries), "
		      "%llu (no per-task state: allocation failed or table full)",
		      (unsigned long long)lost[RUNQLAT_LOST_HISTS_FULL],
		      (unsigned long long)lost[RUNQLAT_LOST_START]);
	/* switch-ins the kernel made without a sched_switch event (some do), or while the task
	 * was not traced (a cgroup it left) */
	if (lost[RUNQLAT_LOST_UNSEEN])
		p_err("delays not counted: %llu (%.3f ms in all) ended at switches no sched_switch "
		      "event showed", (unsigned long long)lost[RUNQLAT_LOST_UNSEEN],
		      skel->bss->unseen_ns / 1e6);
	p_info("%llu tasks without storage after the prefill",
	       (unsigned long long)lost[RUNQLAT_LOST_PREFILL]);
	p_info("read %llu bytes of histograms from BPF maps", (unsigned long long)env.bytes_read);
	return heatmap_run_write(&heatmap_opts, skel->maps.heat, r->end_ns, unit(),
				 "Run Queue Latency Heat Map");
}

static void free_snapshot(void *p)
{
	free(p);
}

static void runqlat_teardown(struct runner *r)
{
	schedtp_detach(&env.links);
	hashtab_clear(&env.prevs, free_snapshot);
	memset(&env, 0, sizeof(env));
}

const struct command runqlat_cmd = {
	.name = "runqlat",
	.summary = "run-queue latency histograms (BCC runqlat, in-kernel)",
	.description =
		"Summarize run-queue latency as histograms counted in the kernel: the time from a task\n"
		"becoming runnable (woken, or preempted while still runnable) until it runs on a CPU.",
	.caps = CAP_THREAD_KIND | CAP_INTERVALS | CAP_HEATMAP,
	.positional = POS_INTERVAL,
	.opts = runqlat_opts,
	.skel = &runqlat_skel,
	.check = runqlat_check,
	.configure = runqlat_configure,
	.attach = runqlat_attach,
	.banner = "Tracing run queue latency... Hit Ctrl-C to end.",
	.detach = runqlat_detach,
	.report = runqlat_report,
	.write = runqlat_write,
	.teardown = runqlat_teardown,
};
