// SPDX-License-Identifier: GPL-2.0
/* bpfprof trace: one line per event, in time order, as perf script prints tracepoints and perf
 * trace prints syscalls (arguments, strings read in the kernel, return value, duration); -s for
 * perf trace's per-process syscall summary, aggregated in the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/runner.h"
#include "core/targets.h"
#include "out/tracefmt.h"
#include "probe/fields.h"
#include "sym/cgroups.h"
#include "sym/syms.h"
#include "trace.h"
#include "trace.skel.h"

RUNNER_SKELETON(trace);

/* What user space knows of each event index. */
struct trace_event {
	struct field_list fields;
	const char *sys;               /* syscalls: the name; NULL for tracepoints */
	int args[TRACE_ARGS];          /* syscalls: the argument fields, in order */
	int nr_args;
	bool func;                     /* a function's entry or return (perf probe's events) */
	struct field shown[TRACE_ARGS + 1]; /* functions: the fields printed, casts applied */
	int nr_shown;
	struct trace_ev_cfg cfg;
};

static struct trace_env {
	bool summary, stacks;
	const char *filter;
	const char *fields;            /* --fields: a function's fields to print, with casts */
	struct event_fields ef;
	__u64 buffer_mb;
	struct probe_events evs;
	struct trace_event *tev;
	struct field_namer names; /* kernel functions (fields, stacks) and cgroups by name */
	struct syms_cache *syms;
	__u64 first_ts;
	__u64 printed;
	int write_err;
	struct trace_sum_row *rows;
	size_t nr_rows;
	char **specs;                  /* the events as resolved: perf trace's spellings made sys: */
	int nr_specs;
} env;

static const struct opt trace_opts[] = {
	{ 's', "summary", NULL, "only a per-process summary of the syscalls (perf trace -s):\n"
	  "calls, errors, total/min/avg/max latency, aggregated in the kernel", OPT_FLAG,
	  &env.summary },
	{ 'g', NULL, NULL, "each event's kernel and user stacks (frame pointers)", OPT_FLAG,
	  &env.stacks },
	{ 0, "filter", "EXPR", "only the events EXPR holds for, decided in the kernel before\n"
	  "anything is copied (perf's syntax: 'filename ~ \"/etc/*\" && comm == ls';\n"
	  "syscalls: their arguments by name)", OPT_STR, &env.filter },
	{ 0, "fields", "FIELD[,FIELD...]", "functions: the fields each line shows, perf probe's\n"
	  "casts applied (e.g. arg0:s32,arg1:string, a parameter's\n"
	  "name from DWARF or BTF: name:string; retval:string on\n"
	  "FUNC%return); default every argument, or retval, in hex (x64)", OPT_STR, &env.fields },
	{ 0, "buffer-size", "MB", "ring buffer size (default 16); events that find it full\n"
	  "are counted and reported", OPT_U64, &env.buffer_mb, 1, 4096 },
	{},
};

static char *default_specs[] = { "sys:*" };

/* A function's fields to print: --fields, or every one (arg0..arg5, or retval) in hex as perf
 * probe's default type (x64) prints them; :string casts read in the kernel, TRACE_STRS at most. */
static int describe_func(const struct probe_event *e, struct trace_event *t)
{
	bool user = e->kind == PROBE_UFUNC;
	const char *p = env.fields;
	char name[FIELD_NAME_MAX + 16], why[256], names[512];
	int strs = 0;

	t->func = true;
	for (int i = 0; !p && i < t->fields.nr && t->nr_shown <= TRACE_ARGS; i++) {
		struct field *f = &t->fields.v[i];

		/* arg0..arg5 once: a parameter's name is another name of one of them */
		if ((f->src != FSRC_ARG && f->src != FSRC_RET) || f->alias)
			continue;
		t->shown[t->nr_shown] = *f;
		t->shown[t->nr_shown++].kind = FIELD_HEX;
	}
	while (p && *p) {
		size_t len = strcspn(p, ",");
		struct field *f = &t->shown[t->nr_shown];
		int err;

		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		p += len + (p[len] == ',');
		if (!len)
			continue;
		if (t->nr_shown > TRACE_ARGS) {
			p_err("--fields %s: at most %d fields", env.fields, TRACE_ARGS + 1);
			return -EINVAL;
		}
		err = fields_lookup(&t->fields, name, user, f, why, sizeof(why));
		if (err == -ENOENT) {
			p_err("%s has no field '%s'; its fields: %s%s", e->name, name,
			      fields_names(&t->fields, names, sizeof(names)),
			      fields_func_hint(e, name, why, sizeof(why)));
			return -EINVAL;
		}
		if (err) {
			p_err("--fields %s on %s: %s", name, e->name, why);
			return -EINVAL;
		}
		if (f->src != FSRC_ARG && f->src != FSRC_RET) {
			p_err("--fields %s: a function's lines show its arguments or return value "
			      "(comm, pid, tid and cpu are every line's)", name);
			return -EINVAL;
		}
		if (field_is_string(f)) {
			unsigned bit = f->src == FSRC_RET ? TRACE_ARGS : f->arg;

			if (!(t->cfg.str_mask & (1u << bit)) && ++strs > TRACE_STRS) {
				p_err("--fields %s: at most %d strings per event", env.fields,
				      TRACE_STRS);
				return -EINVAL;
			}
			t->cfg.str_mask |= 1u << bit;
		}
		t->nr_shown++;
	}
	return 0;
}

/* Each event's fields, and for syscalls which arguments are strings to read in the kernel. */
static int describe_event(const struct probe_event *e, struct trace_event *t)
{
	unsigned end = 0;
	bool dataloc = false;
	int err;

	if (e->kind == PROBE_TP && e->sys_nr >= 0) {
		p_err("'%s': trace syscalls as sys:NAME (perf trace's lines: arguments, return "
		      "value, duration)", run_opts.events ? run_opts.events[e->spec] : e->name);
		return -EINVAL;
	}
	if (env.summary && e->kind != PROBE_SYSCALL) {
		p_err("'%s': -s summarizes syscalls (sys:NAME), not tracepoints", e->name);
		return -EINVAL;
	}
	err = fields_of_event(e, &t->fields);
	if (err) {
		p_err("cannot read the format of %s: %s", e->name, strerror(-err));
		return err;
	}
	if (e->kind == PROBE_UFUNC || e->kind == PROBE_KFUNC)
		return describe_func(e, t);
	if (e->kind == PROBE_SYSCALL)
		t->sys = e->name + strlen("sys:");
	for (int i = 0; i < t->fields.nr; i++) {
		const struct field *f = &t->fields.v[i];

		if (f->in_record && f->offset + f->size > end)
			end = f->offset + f->size;
		dataloc |= f->kind == FIELD_DATALOC;
		if (t->sys && f->src == FSRC_ARG && t->nr_args < TRACE_ARGS) {
			if (f->kind == FIELD_USTR)
				t->cfg.str_mask |= 1u << f->arg;
			t->args[t->nr_args++] = i;
		}
	}
	/* the strings of __data_loc fields follow the fixed fields */
	if (!t->sys)
		t->cfg.raw_size = end + (dataloc ? 512 : 0) > TRACE_PAYLOAD_MAX ?
				  TRACE_PAYLOAD_MAX : end + (dataloc ? 512 : 0);
	return 0;
}

/* perf trace's spellings of a syscall: a bare name that is a syscall ("openat"; perf trace
 * tries syscalls first, and a kernel function of that name would be a syscall's too), and the
 * syscall tracepoints ("syscalls:sys_enter_openat", globs too), which perf trace prints with the
 * arguments decoded.  Both become sys:NAME, which prints that and the return value and duration.
 * The NAME such a spec names, or NULL for any other spec. */
static const char *perf_trace_syscall(const char *spec)
{
	static const char *const tps[] = { "syscalls:sys_enter_", "syscalls:sys_exit_" };

	if (!strchr(spec, ':') && probe_syscall_nr(spec) >= 0)
		return spec;
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++)
		if (!strncmp(spec, tps[i], strlen(tps[i])))
			return spec + strlen(tps[i]);
	return NULL;
}

static int respell_specs(char **specs, int n)
{
	env.specs = calloc(n, sizeof(*env.specs));
	if (!env.specs)
		return -ENOMEM;
	env.nr_specs = n;
	for (int i = 0; i < n; i++) {
		const char *sys = perf_trace_syscall(specs[i]);

		if (sys ? asprintf(&env.specs[i], "sys:%s", sys) < 0 :
			  !(env.specs[i] = strdup(specs[i]))) {
			env.specs[i] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static int trace_check(struct runner *r)
{
	char **specs = run_opts.events;
	int n = run_opts.nr_events, err;

	if (env.summary && env.stacks) {
		p_err("-s prints a summary only: -g has no events to show stacks of");
		return -EINVAL;
	}
	if (!n) {
		specs = default_specs;
		n = 1;
	}
	err = respell_specs(specs, n);
	err = err ?: probe_resolve_specs(env.specs, n, targets.nr_pids ? targets.pids[0] : 0,
					 &env.evs);
	if (err)
		return err;
	env.tev = calloc(env.evs.nr, sizeof(*env.tev));
	if (!env.tev)
		return -ENOMEM;
	for (int i = 0; i < env.evs.nr && !err; i++)
		err = describe_event(&env.evs.ev[i], &env.tev[i]);
	if (!err && env.filter)
		err = event_fields_build_at_exit(&env.evs, env.filter, &env.ef);
	return err == -EINVAL || err == -ENOENT || err == -E2BIG ? -EINVAL : err;
}

static struct probe_progs trace_progs(struct trace_bpf *skel)
{
	struct probe_progs p = {
		.tp = skel->progs.tp_event,
		.sys_enter = skel->progs.sys_enter, .sys_exit = skel->progs.sys_exit,
		.uentry = skel->progs.uentry, .uexit = skel->progs.uexit,
		.kentry = skel->progs.kentry, .kexit = skel->progs.kexit,
		.fentry = skel->progs.fentry_hit, .fexit = skel->progs.fexit_hit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
		.want_sys_exit = true,
	};
	return p;
}

static int trace_configure(struct runner *r)
{
	struct trace_bpf *skel = r->skel;
	struct probe_progs p = trace_progs(skel);
	int err;

	/* settings are read-only globals, fixed before load */
	skel->rodata->targ_summary = env.summary;
	skel->rodata->targ_stacks = env.stacks;
	skel->rodata->targ_wakeup_bytes = ((env.buffer_mb ?: 16) << 20) / 8;
	skel->rodata->targ_filter = env.filter != NULL;
	skel->rodata->targ_nr_exit = probe_syscall_nr("exit");
	skel->rodata->targ_nr_exit_group = probe_syscall_nr("exit_group");
	err = bpf_map__set_max_entries(skel->maps.evcfg, env.evs.nr);
	err = err ?: bpf_map__set_max_entries(skel->maps.field_tabs, env.evs.nr);
	err = err ?: bpf_map__set_max_entries(skel->maps.events,
					      env.summary ? 4096 : (env.buffer_mb ?: 16) << 20);
	if (!env.summary)
		err = err ?: bpf_map__set_max_entries(skel->maps.summary, 1);
	if (err) {
		p_err("cannot configure the BPF maps: %s", strerror(-err));
		return err;
	}
	return probe_prepare(&p, &env.evs);
}

/* The events' settings, before they are attached. */
static int trace_prepare(struct runner *r)
{
	struct trace_bpf *skel = r->skel;
	int err = 0;

	for (__u32 i = 0; i < (__u32)env.evs.nr && !err; i++) {
		err = bpf_map__update_elem(skel->maps.evcfg, &i, sizeof(i), &env.tev[i].cfg,
					   sizeof(env.tev[i].cfg), 0);
		if (!err && env.filter)
			err = bpf_map__update_elem(skel->maps.field_tabs, &i, sizeof(i),
						   &env.ef.tabs[i], sizeof(env.ef.tabs[i]), 0);
	}
	if (err)
		p_err("cannot fill the event settings: %s", strerror(-err));
	return err;
}

static const char *ksym_name(__u64 addr, char *buf, size_t size)
{
	static const struct field fn = { .kind = FIELD_KSYM };

	return field_namer_name(&fn, addr, buf, size, &env.names);
}

/* perf script -g's frames: "\t    ADDR sym+0xoff (module)", kernel first, then a blank line */
static void write_stacks(FILE *out, const struct trace_buf *b, size_t size)
{
	const __u64 *ips;
	char name[256];
	int n;

	if (size < sizeof(b->rec) + TRACE_PAYLOAD_MAX + 2 * TRACE_STACK_BYTES)
		return;
	ips = (const __u64 *)(b->data + TRACE_PAYLOAD_MAX);
	n = b->rec.kstack > 0 ? b->rec.kstack / 8 : 0;
	for (int i = 0; i < n && i < TRACE_STACK_DEPTH; i++) {
		const struct ksym *k = env.names.ksyms ? ksyms__find(env.names.ksyms, ips[i]) : NULL;

		fprintf(out, "\t%16llx %s (%s)\n", (unsigned long long)ips[i],
			ksym_name(ips[i], name, sizeof(name)) ?: "[unknown]",
			k && k->module ? k->module : "[kernel.kallsyms]");
	}
	ips = (const __u64 *)(b->data + TRACE_PAYLOAD_MAX + TRACE_STACK_BYTES);
	n = b->rec.ustack > 0 ? b->rec.ustack / 8 : 0;
	for (int i = 0; i < n && i < TRACE_STACK_DEPTH; i++) {
		struct user_sym us = {};

		if (env.syms)
			syms_cache__resolve(env.syms, b->rec.tgid, ips[i], &us);
		fprintf(out, "\t%16llx %s (%s)\n", (unsigned long long)ips[i],
			us.name ?: "[unknown]", us.module ?: "[unknown]");
	}
	fprintf(out, "\n");
}

static void write_syscall(FILE *out, const struct trace_buf *b)
{
	const struct trace_event *t = &env.tev[b->rec.idx];
	struct trace_arg args[TRACE_ARGS];
	char call[2048], ret[128], comm[TRACE_COMM_LEN + 1];
	int slot = 0;

	for (int i = 0; i < t->nr_args; i++) {
		const struct field *f = &t->fields.v[t->args[i]];
		struct trace_arg *a = &args[i];

		memset(a, 0, sizeof(*a));
		a->name = f->name;
		a->val = f->arg < TRACE_ARGS ? b->rec.args[f->arg] : 0;
		a->size = f->size ? f->size : 8;
		a->is_signed = f->is_signed;
		a->is_ptr = f->kind == FIELD_PTR || strchr(f->type, '*');
		a->is_str = f->kind == FIELD_USTR;
		if (a->is_str && slot < TRACE_STRS) {
			/* the kernel read the string arguments in order, one slot each */
			if (b->rec.str_len[slot] && b->rec.payload >= (__u32)(slot + 1) * TRACE_STR_MAX)
				a->str = (const char *)b->data + slot * TRACE_STR_MAX;
			slot++;
		}
	}
	trace_format_call(call, sizeof(call), t->sys, args, t->nr_args);
	trace_format_ret(ret, sizeof(ret), t->sys, b->rec.ret);
	snprintf(comm, sizeof(comm), "%.*s", TRACE_COMM_LEN, b->rec.comm);
	trace_write_syscall(out, (b->rec.ts - env.first_ts) / 1e6,
			    b->rec.dur_ns == TRACE_NO_RETURN ? -1 : b->rec.dur_ns / 1e6, comm,
			    b->rec.pid, call, ret);
}

/* perf script's line for a probe: "comm tid [cpu] secs: EVENT: arg0=0x7 arg1="str"". */
static void write_func(FILE *out, const struct trace_buf *b)
{
	const struct trace_event *t = &env.tev[b->rec.idx];
	char fields[2048], val[TRACE_STR_MAX + 64], comm[TRACE_COMM_LEN + 1];
	size_t off = 0;

	fields[0] = '\0';
	for (int i = 0; i < t->nr_shown && off < sizeof(fields); i++) {
		const struct field *f = &t->shown[i];
		unsigned bit = f->src == FSRC_RET ? TRACE_ARGS : f->arg;
		__u64 v = f->src == FSRC_RET ? (__u64)b->rec.ret : b->rec.args[bit % TRACE_ARGS];
		const char *str = NULL;

		if (field_is_string(f)) {
			/* the kernel read the strings in the order of their bits, one slot each */
			int slot = __builtin_popcount(t->cfg.str_mask & ((1u << bit) - 1));

			if (slot < TRACE_STRS && b->rec.str_len[slot] &&
			    b->rec.payload >= (__u32)(slot + 1) * TRACE_STR_MAX)
				str = (const char *)b->data + slot * TRACE_STR_MAX;
		}
		field_format_value(f, v, str, field_namer_name, &env.names, val, sizeof(val));
		off += snprintf(fields + off, sizeof(fields) - off, "%s%s=%s%s%s", i ? " " : "",
				f->name, str ? "\"" : "", field_is_string(f) && !str ? "(fault)" : val,
				str ? "\"" : "");
	}
	snprintf(comm, sizeof(comm), "%.*s", TRACE_COMM_LEN, b->rec.comm);
	trace_write_tp(out, comm, b->rec.pid, b->rec.cpu, b->rec.ts, env.evs.ev[b->rec.idx].name,
		       fields);
}

static void write_tp(FILE *out, const struct trace_buf *b)
{
	const struct trace_event *t = &env.tev[b->rec.idx];
	char fields[4096], comm[TRACE_COMM_LEN + 1];

	if (fields_format_record(&t->fields, b->data, b->rec.payload, field_namer_name, &env.names, fields,
				 sizeof(fields)) < 0)
		snprintf(fields, sizeof(fields), "(record of %u bytes not decoded)", b->rec.payload);
	snprintf(comm, sizeof(comm), "%.*s", TRACE_COMM_LEN, b->rec.comm);
	trace_write_tp(out, comm, b->rec.pid, b->rec.cpu, b->rec.ts, env.evs.ev[b->rec.idx].name,
		       fields);
}

/* One record from the ring buffer: its line now, in the order the CPUs committed them. */
static int on_event(void *ctx, void *data, size_t size)
{
	const struct trace_buf *b = data;
	struct runner *r = ctx;

	if (size < sizeof(b->rec) || b->rec.idx >= (__u32)env.evs.nr ||
	    size < sizeof(b->rec) + b->rec.payload)
		return 0;
	if (!env.first_ts)
		env.first_ts = b->rec.ts;
	if (env.tev[b->rec.idx].sys)
		write_syscall(r->out, b);
	else if (env.tev[b->rec.idx].func)
		write_func(r->out, b);
	else
		write_tp(r->out, b);
	if (env.stacks)
		write_stacks(r->out, b, size);
	env.printed++;
	/* a closed pipe or a full disk ends the run instead of losing lines silently */
	if (ferror(r->out)) {
		env.write_err = errno ? -errno : -EIO;
		return env.write_err;
	}
	return 0;
}

static int trace_attach(struct runner *r)
{
	struct trace_bpf *skel = r->skel;
	struct probe_progs p = trace_progs(skel);
	bool need_ksyms = env.stacks, need_cgroups = false;
	int err;

	for (int i = 0; i < env.evs.nr; i++)
		for (int j = 0; j < env.tev[i].fields.nr; j++) {
			need_ksyms |= env.tev[i].fields.v[j].kind == FIELD_KSYM;
			need_cgroups |= env.tev[i].fields.v[j].kind == FIELD_CGROUP;
		}
	/* names before the first line: kernel function fields, stacks and cgroups as printed */
	if (need_ksyms)
		env.names.ksyms = ksyms__load();
	if (need_cgroups)
		env.names.cgroups = cgroup_names__new();
	if (env.stacks)
		env.syms = syms_cache__new();
	err = runner_attach_events(r, &p, &env.evs);
	if (!err && !env.summary)
		err = runner_add_ringbuf(r, skel->maps.events, on_event, r);
	return err;
}

/* The records written since the last wakeup: the kernel wakes the reader only for a full
 * eighth of the buffer. */
static int trace_tick(struct runner *r)
{
	if (r->rb && !env.write_err)
		ring_buffer__consume(r->rb);
	/* the output is gone (a closed pipe, a full disk): the run ends, and says so */
	return env.write_err ? 1 : 0;
}

/* -s: the summary map as rows */
static int read_summary(struct trace_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.summary);
	struct trace_sum_key key, next, *keyp = NULL;
	struct trace_sum v;
	size_t cap = 0;

	while (bpf_map_get_next_key(fd, keyp, &next) == 0) {
		key = next;
		keyp = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || key.idx >= (__u32)env.evs.nr)
			continue;
		if (ARRAY_GROW(env.rows, cap, env.nr_rows + 1))
			return -ENOMEM;
		env.rows[env.nr_rows++] = (struct trace_sum_row){
			.tgid = key.tgid, .sys = env.tev[key.idx].sys, .calls = v.calls,
			.errors = v.errors, .total_ns = v.total_ns, .min_ns = v.min_ns,
			.max_ns = v.max_ns, .sumsq = v.sumsq,
		};
		snprintf(env.rows[env.nr_rows - 1].comm, sizeof(env.rows[0].comm), "%.*s",
			 TRACE_COMM_LEN, v.comm);
	}
	return 0;
}

static int trace_collect(struct runner *r)
{
	int err = env.write_err;

	if (!err && env.summary)
		err = read_summary(r->skel);
	if (err == -ENOMEM)
		p_err("cannot read the summary: %s", strerror(-err));
	else if (err)
		runner_report_failed(err);
	return err;
}

static int trace_write(struct runner *r)
{
	struct trace_bpf *skel = r->skel;
	const __u64 *lost = (const __u64 *)skel->bss->lost;
	int err = 0;

	if (env.summary) {
		err = trace_write_summary(r->out, env.rows, env.nr_rows, TRACE_SUMSQ_SHIFT);
		if (lost[TRACE_LOST_SUMMARY])
			p_err("%llu calls not counted: the summary table was full",
			      (unsigned long long)lost[TRACE_LOST_SUMMARY]);
	} else {
		fprintf(stderr, "bpfprof: %llu events printed, %llu dropped%s\n",
			(unsigned long long)env.printed, (unsigned long long)lost[TRACE_LOST_RINGBUF],
			lost[TRACE_LOST_RINGBUF] ? " (ring buffer full: raise --buffer-size)" : "");
	}
	if (lost[TRACE_LOST_INFLIGHT])
		p_err("%llu syscalls not traced: more threads were in a syscall at once than the "
		      "in-flight table holds", (unsigned long long)lost[TRACE_LOST_INFLIGHT]);
	return err;
}

static void trace_teardown(struct runner *r)
{
	for (int i = 0; env.tev && i < env.evs.nr; i++)
		field_list_free(&env.tev[i].fields);
	free(env.tev);
	event_fields_free(&env.ef);
	probe_events_free(&env.evs);
	field_namer_close(&env.names);
	if (env.syms)
		syms_cache__free(env.syms);
	free(env.rows);
	for (int i = 0; env.specs && i < env.nr_specs; i++)
		free(env.specs[i]);
	free(env.specs);
	memset(&env, 0, sizeof(env));
}

const struct command trace_cmd = {
	.name = "trace",
	.summary = "one line per event: tracepoints (perf script), syscalls (perf trace)",
	.description =
		"One line per event, in time order, through a ring buffer (drops are counted and\n"
		"shown).  Tracepoints as perf script prints them:\n"
		"  comm  tid [cpu] seconds: cat:name: field=value ...\n"
		"syscalls as perf trace prints them, string arguments read in the kernel at entry,\n"
		"the line sent at exit:\n"
		"  ms ( duration ms): comm/tid name(arg: value, ...) = return value\n"
		"functions as perf script prints perf probe's events (--fields picks and casts):\n"
		"  comm  tid [cpu] seconds: bin:func: arg0=0x7 arg1=\"str\"\n"
		"With no EVENT, every syscall (as perf trace).  --filter on a syscall is decided\n"
		"at its exit: its arguments and its ret.\n"
		"-s prints perf trace -s's per-process summary instead, counted in the kernel.\n"
		"Output goes to stderr when a COMMAND runs (as perf trace), to stdout otherwise\n"
		"(or -o FILE).",
	.notes =
		"EVENT:  CAT:NAME, t:CAT:NAME   tracepoint, e.g. sched:sched_switch (globs welcome)\n"
		"        sys:NAME               syscall, e.g. sys:openat, sys:'*'\n"
		"        u:PATH:FUNC, LIB:FUNC  user function: a line per call (arguments), or per\n"
		"                               return with FUNC%return (retval), as perf probe's\n"
		"        k:FUNC                 kernel function, the same (fentry/fexit or kprobes)\n"
		"        EVENTs are given with -e or as arguments, several at once or comma-separated.\n"
		"        Times are CLOCK_MONOTONIC seconds (tracepoints) and ms since the first\n"
		"        line (syscalls).\n",
	.caps = CAP_CPUS | CAP_THREAD_KIND | CAP_EVENTS | CAP_SYMBOLS,
	.positional = POS_EVENTS,
	.opts = trace_opts,
	.skel = &trace_skel,
	.check = trace_check,
	.configure = trace_configure,
	.prepare = trace_prepare,
	.attach = trace_attach,
	.banner = "Tracing... Hit Ctrl-C to end.",
	.stderr_beside_command = true, /* as perf trace */
	.tick = trace_tick,
	.collect = trace_collect,
	.write = trace_write,
	.teardown = trace_teardown,
};
