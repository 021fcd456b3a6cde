// SPDX-License-Identifier: GPL-2.0
/* bpfprof funclat: latency histograms of functions (user and kernel) and syscalls, many at
 * once, aggregated in the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/heatmaprun.h"
#include "core/runner.h"
#include "funclat.h"
#include "probe/fields.h"
#include "funclat.skel.h"
#include "out/hist.h"
#include "sym/syms.h"

RUNNER_SKELETON(funclat);

static struct funclat_env {
	bool nsecs, usecs, msecs, loglin;
	__u64 unit_ns;
	const char *unit;
	struct probe_events evs;
	struct funclat_hist *prev; /* per function: the counts at the last report */
	const char *filter;        /* --filter EXPR on the entry's fields */
	const char *by;            /* --by FIELD[,FIELD...]: a histogram per key */
	struct event_fields ef;
	__u32 nr_rows;             /* histograms: one per function, or per --by key */
} env;

static const struct opt funclat_opts[] = {
	{ 'n', "nanoseconds", NULL, "histograms in nanoseconds", OPT_FLAG, &env.nsecs },
	{ 0, "microseconds", NULL, "histograms in microseconds (the default; -u is now the\n"
	  "targets' user threads only)", OPT_FLAG, &env.usecs },
	{ 'm', "milliseconds", NULL, "histograms in milliseconds", OPT_FLAG, &env.msecs },
	{ 'L', "log-linear", NULL, "8 buckets per power of two instead of 1", OPT_FLAG, &env.loglin },
	{ 0, "filter", "EXPR", "time only the calls EXPR holds for at their entry, decided in\n"
	  "the kernel (e.g. 'arg0 > 4096', 'filename ~ \"/etc/*\"' on sys:openat)", OPT_STR,
	  &env.filter },
	{ 0, "by", "FIELD[,FIELD...]", "a histogram per value of the entry's fields, keyed in the\n"
	  "kernel (e.g. --by arg0, --by comm, --by filename on sys:openat)", OPT_STR, &env.by },
	{},
};

/* funclat times calls that return: a tracepoint has no duration. */
static int check_kinds(const struct probe_events *evs)
{
	for (int i = 0; i < evs->nr; i++) {
		if (evs->ev[i].ret) {
			p_err("'%s': funclat times each call from its entry to its return; give the "
			      "function without %%return", evs->ev[i].name);
			return -EINVAL;
		}
		if (evs->ev[i].kind != PROBE_TP)
			continue;
		p_err("'%s' is a tracepoint, which has no duration: funclat times functions "
		      "(sys:NAME times a syscall; 'bpfprof count' counts tracepoints)",
		      run_opts.events[evs->ev[i].spec]);
		return -EINVAL;
	}
	if (evs->nr > FUNCLAT_MAX_FUNCS) {
		p_err("%d functions match: funclat times at most %d at once", evs->nr,
		      FUNCLAT_MAX_FUNCS);
		return -E2BIG;
	}
	return 0;
}

static int funclat_check(struct runner *r)
{
	int err;

	if (env.nsecs + env.usecs + env.msecs > 1) {
		p_err("-n, --microseconds and -m exclude each other");
		return -EINVAL;
	}
	env.unit_ns = env.nsecs ? 1 : env.msecs ? 1000000 : 1000;
	env.unit = env.nsecs ? "nsecs" : env.msecs ? "msecs" : "usecs";
	if (env.by && strstr(env.by, "retval")) {
		p_err("--by %s: funclat keys each call at its entry, before there is a return value "
		      "(bpfprof stat 'FUNC%%return' --by retval counts return values)", env.by);
		return -EINVAL;
	}
	err = runner_resolve_events(&env.evs);
	err = err ?: check_kinds(&env.evs);
	err = err ?: (env.filter || env.by ?
		      event_fields_build(&env.evs, env.by, env.filter, &env.ef) : 0);
	if (err)
		return err;
	env.nr_rows = env.by ? FUNCLAT_MAX_ROWS : env.evs.nr;
	env.prev = calloc(env.nr_rows, sizeof(*env.prev));
	return env.prev ? 0 : -ENOMEM;
}

static struct probe_progs funclat_progs(struct funclat_bpf *skel)
{
	struct probe_progs p = {
		.uentry = skel->progs.uentry, .uexit = skel->progs.uexit,
		.kentry = skel->progs.kentry, .kexit = skel->progs.kexit,
		.fentry = skel->progs.fentry_entry, .fexit = skel->progs.fexit_exit,
		.sys_enter = skel->progs.sys_enter, .sys_exit = skel->progs.sys_exit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
		.want_exit = true,
	};
	return p;
}

static int funclat_configure(struct runner *r)
{
	struct funclat_bpf *skel = r->skel;
	struct probe_progs p = funclat_progs(skel);

	/* units and bucket layout are read-only globals, fixed before load */
	skel->rodata->targ_unit_ns = env.unit_ns;
	skel->rodata->targ_filter = env.filter != NULL;
	skel->rodata->targ_by = env.by != NULL;
	bpf_map__set_max_entries(skel->maps.hists, env.nr_rows);
	return event_fields_configure(&env.ef, EVENT_FIELDS_RODATA(skel), FUNCLAT_MAX_ROWS) ?:
	       heatmap_run_configure(&heatmap_opts, skel->maps.heat, &skel->rodata->targ_heatmap,
				     &skel->rodata->targ_heatmap_cfg, runner_planned_seconds()) ?:
	       probe_prepare(&p, &env.evs);
}

static int funclat_attach(struct runner *r)
{
	struct funclat_bpf *skel = r->skel;
	struct probe_progs p = funclat_progs(skel);

	heatmap_run_start(&heatmap_opts, &skel->bss->heatmap_start_ns);
	return (env.filter || env.by ? event_fields_fill(&env.ef, skel->maps.field_tabs) : 0) ?:
	       runner_attach_events(r, &p, &env.evs);
}

static int funclat_started(struct runner *r)
{
	fprintf(stderr, "Timing %d function%s%s\n", env.evs.nr, env.evs.nr == 1 ? "" : "s",
		targets.command || run_opts.duration ? "" : "... Hit Ctrl-C to end.");
	return 0;
}

/* Rows to print: BCC's log2 of the unit, or -L's 8 per power of two. */
static struct hist_layout layout(void)
{
	struct hist_layout l = { .kind = env.loglin ? HIST_LOGLIN : HIST_LOG2,
				 .sub_shift = HIST_LOGLIN_SHIFT_DEFAULT };
	return l;
}

/* One row's histogram since the last report into h (the kernel's counts are never reset, so
 * no call made while reading is lost); its calls. */
static __u64 take_row(struct funclat_bpf *skel, __u32 i, struct funclat_hist *h, int *err)
{
	struct funclat_hist *prev = &env.prev[i];
	__u64 count = 0;

	*err = bpf_map__lookup_elem(skel->maps.hists, &i, 4, h, sizeof(*h), 0);
	if (*err)
		return 0;
	h->sum_ns -= prev->sum_ns;
	prev->sum_ns += h->sum_ns;
	for (unsigned int k = 0; k < HIST_NS_SLOTS; k++) {
		h->slots[k] -= prev->slots[k];
		prev->slots[k] += h->slots[k];
		count += h->slots[k];
	}
	return count;
}

struct by_row {
	__u32 row;
	__u64 count;
	struct funclat_hist h;
};

static int busiest_first(const void *a, const void *b)
{
	const struct by_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* --by: a histogram per key ("FUNC arg0=7"), the busiest first. */
static int report_by(struct runner *r, const struct hist_layout *l, int *shown)
{
	struct funclat_bpf *skel = r->skel;
	__u32 nr = skel->bss->field_rows_next < env.nr_rows ? skel->bss->field_rows_next
							     : env.nr_rows;
	struct by_row *rows = calloc(nr ?: 1, sizeof(*rows));
	struct field_namer nm;
	const char **keys = NULL;
	char *store = NULL, label[512];
	int err = rows ? 0 : -ENOMEM, n = 0;

	field_namer_open(&nm, &env.ef);

	for (__u32 i = 0; !err && i < nr; i++) {
		rows[n].row = i;
		rows[n].count = take_row(skel, i, &rows[n].h, &err);
		n += rows[n].count > 0;
	}
	err = err ?: event_fields_read_rows(&env.ef, skel->maps.field_rows, nr, &keys, &store);
	if (!err)
		qsort(rows, n, sizeof(*rows), busiest_first);
	for (int i = 0; !err && i < n; i++) {
		const char *key = keys[rows[i].row];

		if (!key)
			continue;
		fprintf(r->out, "\n%s\n", event_fields_label(&env.ef, &env.evs, key, true,
							       field_namer_name, &nm, label,
							       sizeof(label)));
		err = hist_ns_print(r->out, rows[i].h.slots, HIST_NS_SLOTS, rows[i].h.sum_ns, l,
				    env.unit_ns, env.unit);
		(*shown)++;
	}
	if (!err && skel->bss->field_rows_lost)
		fprintf(stderr, "bpfprof: %llu calls not timed: more than %d keys of --by %s\n",
			(unsigned long long)skel->bss->field_rows_lost, FUNCLAT_MAX_ROWS, env.by);
	field_namer_close(&nm);
	free(keys);
	free(store);
	free(rows);
	return err;
}

/* Every function called since the last report. */
static int funclat_report(struct runner *r, bool last)
{
	struct funclat_bpf *skel = r->skel;
	struct hist_layout l = layout();
	struct funclat_hist *h = malloc(sizeof(*h));
	int err = h ? 0 : -ENOMEM, shown = 0;

	if (!err && env.by)
		err = report_by(r, &l, &shown);
	for (__u32 i = 0; !err && !env.by && i < (__u32)env.evs.nr; i++) {
		if (!take_row(skel, i, h, &err))
			continue;
		fprintf(r->out, "\n%s\n", env.evs.ev[i].name);
		err = hist_ns_print(r->out, h->slots, HIST_NS_SLOTS, h->sum_ns, &l, env.unit_ns,
				    env.unit);
		shown++;
	}
	if (!err && !shown)
		fprintf(r->out, "\n(no calls)\n");
	if (err)
		runner_report_failed(err);
	free(h);
	return err;
}

static int funclat_write(struct runner *r)
{
	struct funclat_bpf *skel = r->skel;
	__u64 deep = skel->bss->lost[FUNCLAT_LOST_DEPTH];
	__u64 full = skel->bss->lost[FUNCLAT_LOST_START_FULL];

	if (deep || full)
		fprintf(stderr, "bpfprof: calls not timed: %llu nested deeper than %d, %llu with the "
			"start table full\n", (unsigned long long)deep, FUNCLAT_MAX_DEPTH,
			(unsigned long long)full);
	return heatmap_run_write(&heatmap_opts, skel->maps.heat, r->end_ns, env.unit,
				 "Function Latency Heat Map");
}

static void funclat_teardown(struct runner *r)
{
	probe_events_free(&env.evs);
	event_fields_free(&env.ef);
	free(env.prev);
	memset(&env, 0, sizeof(env));
}

const struct command funclat_cmd = {
	.name = "funclat",
	.summary = "latency histograms of functions and syscalls",
	.description = "Latency histograms of functions and syscalls, one per function, counted in the\n"
		       "kernel.",
	.notes =
		"EVENT:  FUNC, k:FUNC          kernel function (fentry/fexit, else kprobes)\n"
		"        u:PATH:FUNC, PATH:FUNC user function in a binary or library (uprobes)\n"
		"        LIB:FUNC               library by name, e.g. c:malloc (through -p's maps, else\n"
		"                               the ld.so cache)\n"
		"        sys:NAME               syscall, e.g. sys:read (sys_enter/sys_exit)\n"
		"        FUNC may be a glob: u:libc:str* times every match.  EVENTs are given with -e\n"
		"        or as arguments, several at once or comma-separated.\n"
		"FIELD:  a function's arg0..arg5, or its parameters' names from its DWARF or the\n"
		"        kernel's BTF (casts as perf probe's: arg1:string, arg0:u32), a syscall's\n"
		"        arguments by name, comm, pid, tid, cpu, cgroup.\n",
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_INTERVALS | CAP_HEATMAP | CAP_EVENTS,
	.positional = POS_EVENTS,
	.no_events = "no function to time (e.g. bpfprof funclat c:malloc)",
	.opts = funclat_opts,
	.skel = &funclat_skel,
	.check = funclat_check,
	.configure = funclat_configure,
	.attach = funclat_attach,
	.started = funclat_started,
	.report = funclat_report,
	.write = funclat_write,
	.teardown = funclat_teardown,
};
