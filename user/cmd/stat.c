// SPDX-License-Identifier: GPL-2.0
/* bpfprof stat (also `count`): perf stat's grammar and output.  perf's software and hardware
 * events are counted with perf_event_open (no BPF for a total: per thread with inherit for a
 * COMMAND, -p and -t, per CPU for -a and -C, per cgroup and CPU for --cgroup); tracepoints,
 * syscalls and functions through the event specs, counted in the kernel.  BPF also breaks the
 * counts down per process (-P) and per command name (--by-comm).  Each of -r N runs is one
 * pass of the runner's lifecycle; this file keeps their figures. */
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/runner.h"
#include "out/statfmt.h"
#include "probe/fields.h"
#include "probe/perfevent.h"
#include "sym/syms.h"
#include "stat.h"
#include "stat.skel.h"

RUNNER_SKELETON(stat);

#define CLOCK_TICK_NS 1000000ULL /* -P / --by-comm: a running task's time is given every 1 ms */

/* One row of the report: a perf event as spelt, or one event a spec resolved to. */
struct stat_ev {
	const char *name;
	bool is_perf;
	struct perfev pe;
	int idx;           /* the BPF side's index: the spec event's, or nr specs + perf ordinal */
	bool supported;    /* perf: the machine has it */
	bool from_glob;    /* a spec event among a glob's matches: shown only when it fired */
	int *fds;          /* perf: one counter per slot */
	struct perfev_value total, prev;    /* now, and at the last interval */
	struct perfev_value *cpu, *cpu_prev; /* per CPU (-A) */
};

/* --per-core / --per-socket: CPUs counted together, as perf stat names them */
struct stat_unit {
	int socket, die, core;
	int ncpus;            /* the selected CPUs in it */
	char name[32];        /* "S0-D0-C1", "S0" */
};

static struct stat_env {
	bool per_process, by_comm, per_cpu, per_core, per_socket;
	struct stat_unit *units;
	int nr_units;
	int *unit_of;         /* by CPU: its unit, -1 when not counted */
	struct perfev_value *unit_vals; /* [event][unit] of the reading being printed */
	const char *sep;
	const char *by, *filter;  /* --by FIELD[,FIELD...], --filter EXPR */
	struct event_fields ef;
	__u64 top, repeat;
	struct probe_events evs;
	struct stat_ev *ev;
	int nr_ev, nr_specs_ev;
	struct perfev_slot *slots;
	int nr_slots;
	int ncpu;             /* possible CPUs: the per-CPU arrays' size */
	struct bpf_link **links; /* perf_event programs (-P, --by-comm) */
	int nr_links;
	__u64 t0, t_attach;   /* the counters' start (the COMMAND's release), attach */
	__u64 t_end;          /* the counters' end (detach) */
	__u64 last_report;    /* the last interval's end */
	__u64 intervals;      /* printed */
	struct rusage ru0;    /* RUSAGE_CHILDREN at the start */
	FILE *out;
} env;

/* What -r N runs add up: lives across the runner's passes. */
static struct stat_acc {
	struct run_stats elapsed, user, sys;
	struct acc_row {
		struct run_stats count;
		double enabled, running; /* sums */
	} *rows;
	int nr_rows, runs_done;
} acc;

static void acc_reset(void)
{
	free(acc.rows);
	memset(&acc, 0, sizeof(acc));
}

static int opt_sep(const char *arg)
{
	if (!*arg) {
		p_err("-x needs a separator (e.g. -x , for CSV)");
		return -EINVAL;
	}
	env.sep = arg;
	return 0;
}

static const struct opt stat_opts[] = {
	{ 'A', "per-cpu", NULL, "a row per CPU for every event (system-wide counting)",
	  OPT_FLAG, &env.per_cpu },
	{ 0, "per-core", NULL, "a row per physical core for every event, its CPUs added up\n"
	  "(system-wide counting)", OPT_FLAG, &env.per_core },
	{ 0, "per-socket", NULL, "a row per processor socket, as --per-core", OPT_FLAG,
	  &env.per_socket },
	{ 'P', "per-process", NULL, "also break the counts down per process (BPF)", OPT_FLAG,
	  &env.per_process },
	{ 0, "by-comm", NULL, "also break the counts down per command name (BPF); each CPU's\n"
	  "idle task is its own row, swapper/N", OPT_FLAG, &env.by_comm },
	{ 0, "by", "FIELD[,FIELD...]", "count per value of the events' fields, in the kernel\n"
	  "(e.g. --by filename, --by function, --by arg0,comm)", OPT_STR, &env.by },
	{ 0, "filter", "EXPR", "count only the events EXPR holds for, decided in the kernel\n"
	  "(e.g. 'arg0 == 9 && comm ~ \"work*\"')", OPT_STR, &env.filter },
	{ 0, "top", "N", "with -P / --by-comm / --by: the N busiest rows of each event (default 10)",
	  OPT_U64, &env.top, 1, 1000000 },
	{ 'x', "field-separator", "SEP", "perf stat's -x: fields separated by SEP (e.g. CSV), no\n"
	  "header", OPT_FN, .fn = opt_sep },
	{ 'r', "repeat", "N", "run COMMAND N times: mean and +- error of the mean", OPT_U64,
	  &env.repeat, 1, 100000, .what = "repeat count", .hint = "a whole number, at least 1" },
	{},
};

static bool breakdown(void)
{
	return env.per_process || env.by_comm;
}

/* perf stat's default set: the clock, the scheduler and fault counters, then the hardware's */
static char *default_events[] = { "task-clock", "context-switches", "cpu-migrations",
				  "page-faults", "cycles", "instructions", "branches",
				  "branch-misses" };

static bool system_wide(void)
{
	return !targets.follow && !targets.nr_pids && !targets.nr_tids && !targets.cgroup;
}

/* A bare name close to a perf event's: the user meant that event, not a kernel function. */
static int check_near_perf_name(const char *name)
{
	size_t nr;
	const struct perfev_desc *t = perfev_table(&nr);
	const char *names[64];
	char near[256];
	size_t n = 0;

	if (strchr(name, ':') || strpbrk(name, "*?["))
		return 0;
	for (size_t i = 0; i < nr && n + 2 <= 64; i++) {
		names[n++] = t[i].name;
		if (t[i].alias)
			names[n++] = t[i].alias;
	}
	if (!probe_near_matches(name, names, n, 3, near, sizeof(near)) || strchr(name, '_'))
		return 0;
	p_err("unknown event '%s'; did you mean: %s", name, near);
	return -EINVAL;
}

/* perf stat's habit, `stat ls`: a bare word that is a program in PATH was meant as the COMMAND. */
static int check_program_name(const char *name)
{
	const char *path = getenv("PATH");
	char file[4096];

	if (strpbrk(name, ":/*?[") || !path)
		return 0;
	for (const char *p = path; *p; p += *p == ':') {
		size_t len = strcspn(p, ":");

		snprintf(file, sizeof(file), "%.*s/%s", (int)len, p, name);
		p += len;
		if (len && !access(file, X_OK)) {
			p_err("'%s' is a program, not an event: a command goes after '--' (bpfprof stat "
			      "-- %s); k:%s is the kernel function", name, name, name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Splits the events into perf's (counted with perf_event_open) and specs (resolved here). */
static int sort_events(char **names, int n)
{
	char **specs = calloc(n, sizeof(*specs));
	int nr_specs = 0, err = 0, perf_ord = 0, spec_ord = 0;

	if (!specs)
		return -ENOMEM;
	for (int i = 0; i < n && !err; i++) {
		struct perfev pe;
		int rc = perfev_parse(names[i], &pe);

		if (rc == -EINVAL) {
			p_err("event '%s': unknown modifier (perf's :u or :k)", names[i]);
			err = -EINVAL;
		} else if (rc == -ENOENT) {
			err = check_program_name(names[i]) ?: check_near_perf_name(names[i]);
			specs[nr_specs++] = names[i];
		}
	}
	if (!err && nr_specs)
		err = probe_resolve_specs(specs, nr_specs, targets.nr_pids ? targets.pids[0] : 0,
					  &env.evs);
	free(specs);
	if (err)
		return err;
	env.ev = calloc(n + env.evs.nr, sizeof(*env.ev));
	if (!env.ev)
		return -ENOMEM;
	/* rows in the order given; a spec's matches where the spec was */
	for (int i = 0; i < n; i++) {
		struct stat_ev *e;

		if (!perfev_parse(names[i], &(struct perfev){})) {
			e = &env.ev[env.nr_ev++];
			perfev_parse(names[i], &e->pe);
			e->name = names[i];
			e->is_perf = true;
			e->idx = env.evs.nr + perf_ord++;
			continue;
		}
		for (int k = 0; k < env.evs.nr; k++) {
			if (env.evs.ev[k].spec != spec_ord)
				continue;
			e = &env.ev[env.nr_ev++];
			e->name = env.evs.ev[k].name;
			e->idx = k;
			e->supported = true;
			e->from_glob = env.evs.ev[k].from_glob || strpbrk(names[i], "*?[");
		}
		spec_ord++;
	}
	env.nr_specs_ev = env.evs.nr;
	return 0;
}

static bool cpu_selected(int c);

/* A CPU's topology number (physical_package_id, die_id, core_id); 0 where sysfs has none
 * (die_id came with 5.6), as perf reads it. */
static int topology_id(int cpu, const char *what)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, what);
	return (int)read_sysfs_long(path);
}

/* The units of --per-core / --per-socket, in the order of their first CPU. */
static int find_units(void)
{
	env.units = calloc(env.ncpu, sizeof(*env.units));
	env.unit_of = calloc(env.ncpu, sizeof(*env.unit_of));
	if (!env.units || !env.unit_of)
		return -ENOMEM;
	for (int c = 0; c < env.ncpu; c++) {
		struct stat_unit u = { .socket = topology_id(c, "physical_package_id") };
		int k;

		env.unit_of[c] = -1;
		if (!cpu_selected(c))
			continue;
		if (env.per_core) {
			u.die = topology_id(c, "die_id");
			u.core = topology_id(c, "core_id");
		}
		for (k = 0; k < env.nr_units; k++)
			if (env.units[k].socket == u.socket && env.units[k].die == u.die &&
			    env.units[k].core == u.core)
				break;
		if (k == env.nr_units) {
			if (env.per_core)
				snprintf(u.name, sizeof(u.name), "S%d-D%d-C%d", u.socket, u.die, u.core);
			else
				snprintf(u.name, sizeof(u.name), "S%d", u.socket);
			env.units[env.nr_units++] = u;
		}
		env.units[k].ncpus++;
		env.unit_of[c] = k;
	}
	return 0;
}

/* --by / --filter: every event has fields to give (perf's counters have none), and has the
 * ones named. */
static int check_fields(void)
{
	for (int i = 0; i < env.nr_ev; i++) {
		if (!env.ev[i].is_perf)
			continue;
		p_err("%s %s: event '%s' is counted by perf and has no fields (fields are "
		      "tracepoints', syscalls' and functions')", env.by ? "--by" : "--filter",
		      env.by ?: env.filter, env.ev[i].name);
		return -EINVAL;
	}
	if (breakdown() && env.by) {
		p_err("--by does not combine with -P / --by-comm: add pid or comm to its fields "
		      "(--by %s,comm)", env.by);
		return -EINVAL;
	}
	return event_fields_build(&env.evs, env.by, env.filter, &env.ef);
}

static int stat_check(struct runner *r)
{
	bool has_perf = false;
	int err;

	/* perf's thousands grouping follows the locale, as perf's does */
	setlocale(LC_NUMERIC, "");
	if (!r->run)
		acc_reset();
	if (!env.top)
		env.top = 10;
	if (!env.repeat)
		env.repeat = 1;
	if (env.repeat > 1 && !targets.command && !run_opts.duration) {
		p_err("-r %llu repeats a COMMAND (or a DURATION): give one",
		      (unsigned long long)env.repeat);
		return -EINVAL;
	}
	if (env.per_cpu + env.per_core + env.per_socket > 1) {
		p_err("-A, --per-core and --per-socket are ways to split the counts: give one");
		return -EINVAL;
	}
	if ((env.per_cpu || env.per_core || env.per_socket) && !system_wide()) {
		p_err("%s counts per %s: it needs system-wide counting (-a, -C or no target), as in "
		      "perf stat", env.per_cpu ? "-A/--per-cpu" : env.per_core ? "--per-core" :
		      "--per-socket", env.per_cpu ? "CPU" : env.per_core ? "core" : "socket");
		return -EINVAL;
	}
	env.ncpu = nr_cpus_possible();
	if (env.ncpu <= 0)
		return -EINVAL;
	err = (env.per_core || env.per_socket) ? find_units() : 0;
	if (err)
		return err;
	err = run_opts.nr_events ? sort_events(run_opts.events, run_opts.nr_events)
				 : sort_events(default_events, sizeof(default_events) /
							       sizeof(default_events[0]));
	for (int i = 0; !err && i < env.nr_ev; i++)
		has_perf |= env.ev[i].is_perf;
	if (!err && (env.by || env.filter))
		err = check_fields();
	if (!err && has_perf && (targets.user_only || targets.kernel_only)) {
		p_err("-u/-k select threads for BPF-counted events; perf's counters take :u or :k "
		      "(e.g. cycles:u)");
		return -EINVAL;
	}
	/* the default set shows the CPU's clock when counting CPUs, as perf does */
	if (!err && !run_opts.nr_events && system_wide())
		env.ev[0].name = "cpu-clock", perfev_parse("cpu-clock", &env.ev[0].pe);
	for (int i = 0; !err && i < env.nr_ev; i++) {
		env.ev[i].cpu = calloc(env.ncpu, sizeof(*env.ev[i].cpu));
		env.ev[i].cpu_prev = calloc(env.ncpu, sizeof(*env.ev[i].cpu_prev));
		if (!env.ev[i].cpu || !env.ev[i].cpu_prev)
			err = -ENOMEM;
	}
	return err;
}

static struct probe_progs stat_progs(struct stat_bpf *skel)
{
	struct probe_progs p = {
		.uentry = skel->progs.uprobe_hit, .kentry = skel->progs.kprobe_hit,
		.uexit = skel->progs.uretprobe_hit, .kexit = skel->progs.kretprobe_hit,
		.fentry = skel->progs.fentry_hit, .fexit = skel->progs.fexit_hit,
		.tp = skel->progs.tp_hit,
		.raw_tp = skel->progs.raw_tp_hit,
		.sys_enter = skel->progs.sys_enter_hit, .sys_exit = skel->progs.sys_exit_hit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
		.records = env.ef.records,
	};
	return p;
}

static int stat_configure(struct runner *r)
{
	struct stat_bpf *skel = r->skel;
	struct probe_progs p = stat_progs(skel);
	int clocks = 0, err;

	/* settings are read-only globals, fixed before load */
	skel->rodata->targ_per_process = breakdown();
	for (int i = 0; breakdown() && i < env.nr_ev; i++)
		if (env.ev[i].is_perf && env.ev[i].pe.desc->clock && clocks < STAT_MAX_CLOCKS)
			skel->rodata->targ_clock_idx[clocks++] = env.ev[i].idx;
	bpf_map__set_max_entries(skel->maps.counts, env.nr_ev ?: 1);
	if (!breakdown())
		bpf_map__set_max_entries(skel->maps.proc_counts, 1);
	bpf_program__set_autoload(skel->progs.perf_hit, breakdown());
	bpf_program__set_autoload(skel->progs.clock_tick, clocks > 0);
	bpf_program__set_autoload(skel->progs.clock_switch, clocks > 0);
	bpf_program__set_autoload(skel->progs.clock_exec, clocks > 0);
	bpf_program__set_autoload(skel->progs.clock_exit, clocks > 0);
	skel->rodata->targ_from_exec = targets.follow;
	skel->rodata->targ_cpu_counters = system_wide() || targets.cgroup;
	/* --by / --filter: a field table per event, and the key's size the fields need */
	skel->rodata->targ_fields = env.by || env.filter;
	skel->rodata->targ_by = env.ef.nr_by > 0;
	skel->rodata->targ_filter = env.filter != NULL;
	skel->rodata->targ_key_words = env.ef.key_size / 8;
	err = event_fields_configure(&env.ef, EVENT_FIELDS_RODATA(skel), 0);
	if (err)
		return err;
	if (env.ef.nr_by) {
		bpf_map__set_key_size(skel->maps.field_counts, env.ef.key_size);
	} else {
		bpf_map__set_max_entries(skel->maps.field_counts, 1);
		bpf_map__set_max_entries(skel->maps.field_cache, 1);
	}
	return probe_prepare(&p, &env.evs);
}

/* BPF counts the event specs and the breakdowns; perf's events alone need none (perf stat's
 * cost: no BTF to parse, no program to load). */
static bool stat_uses_bpf(const struct runner *r)
{
	return env.evs.nr || breakdown();
}

static int stat_attach(struct runner *r)
{
	struct probe_progs p;

	env.t_attach = now_ns();
	if (!r->skel)
		return 0;
	p = stat_progs(r->skel);
	return (env.by || env.filter ?
		event_fields_fill(&env.ef, ((struct stat_bpf *)r->skel)->maps.field_tabs) : 0) ?:
	       runner_attach_events(r, &p, &env.evs);
}

/* ---- perf counters ---- */

static int add_slot(int pid, int cpu)
{
	struct perfev_slot *grown = realloc(env.slots, (env.nr_slots + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	env.slots = grown;
	env.slots[env.nr_slots++] = (struct perfev_slot){ pid, cpu };
	return 0;
}

static bool cpu_selected(int c)
{
	return cpu_online(c) && (!targets.cpus || targets.cpus[c]);
}

/* Every thread of pid, on each selected CPU (or on any, cpu -1). */
static int add_task_slots(int pid, bool threads_of_process)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	if (!threads_of_process) {
		for (int c = 0; targets.cpus && c < env.ncpu && !err; c++)
			if (cpu_selected(c))
				err = add_slot(pid, c);
		return targets.cpus ? err : add_slot(pid, -1);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0; /* gone: nothing to count */
	while (!err && (d = readdir(dir)))
		if (d->d_name[0] != '.')
			err = add_task_slots(atoi(d->d_name), false);
	closedir(dir);
	return err;
}

/* Where the counters go: perf stat's choices, from the target. */
static int make_slots(struct runner *r, unsigned *flags)
{
	int err = 0;

	*flags = 0;
	if (targets.follow) {
		*flags = PERFEV_INHERIT | PERFEV_ENABLE_ON_EXEC;
		return add_task_slots(r->child.pid, false);
	}
	if (targets.nr_pids || targets.nr_tids) {
		*flags = PERFEV_INHERIT;
		for (int i = 0; i < targets.nr_pids && !err; i++)
			err = add_task_slots(targets.pids[i], true);
		for (int i = 0; i < targets.nr_tids && !err; i++)
			err = add_task_slots(targets.tids[i], false);
		return err;
	}
	if (targets.cgroup)
		*flags = PERFEV_CGROUP;
	for (int c = 0; c < env.ncpu && !err; c++)
		if (cpu_selected(c))
			err = add_slot(targets.cgroup ? targets.cgroup_fd : -1, c);
	return err;
}

static int open_counters(struct stat_ev *e, unsigned flags)
{
	int opened = 0;

	e->fds = malloc(env.nr_slots * sizeof(*e->fds));
	if (!e->fds)
		return -ENOMEM;
	/* An unsupported event stops at its first slot: the others must read as unopened. */
	for (int s = 0; s < env.nr_slots; s++)
		e->fds[s] = -1;
	for (int s = 0; s < env.nr_slots; s++) {
		int fd = perfev_open_counter(&e->pe, &env.slots[s], flags);

		e->fds[s] = fd < 0 ? -1 : fd;
		if (fd >= 0) {
			opened++;
			continue;
		}
		if (perfev_unsupported(fd)) {
			p_info("%s: not supported here (%s)", e->name, strerror(-fd));
			break;
		}
		if (fd != -ESRCH) { /* a thread gone since it was listed is no error */
			p_err("cannot count %s: %s", e->name, strerror(-fd));
			return fd;
		}
	}
	e->supported = opened > 0;
	return 0;
}

/* -P / --by-comm: the BPF side sees each software event's overflows on every CPU (the target
 * filter picks the tasks), and the clocks through sched_switch and a 1 ms timer. */
static int attach_link(struct bpf_program *prog, int fd, int cookie)
{
	LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = cookie);
	struct bpf_link **grown = realloc(env.links, (env.nr_links + 1) * sizeof(*grown));
	struct bpf_link *link;
	int err;

	if (!grown) {
		close(fd);
		return -ENOMEM;
	}
	env.links = grown;
	link = fd >= 0 ? bpf_program__attach_perf_event_opts(prog, fd, &opts)
		       : bpf_program__attach(prog);
	if (!link) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		p_err("cannot attach the per-process counting: %s", strerror(-err));
		return err;
	}
	env.links[env.nr_links++] = link;
	return 0;
}

/* Gives every selected CPU's time since its last accounting to the task on it now, by running
 * the switch program on that CPU (BPF_F_TEST_RUN_ON_CPU, an IPI: "current" is whoever runs
 * there, the idle task on an idle CPU).  At the start it sets each CPU's clock, at the end it
 * accounts the tail: a tickless idle CPU may see no switch and no tick for the whole run, and
 * its time must still reach its swapper/N row to add up to the cpu-clock total. */
static void account_clocks_everywhere(struct stat_bpf *skel)
{
	int prog = bpf_program__fd(skel->progs.clock_switch);

	if (prog < 0)
		return;
	for (int c = 0; c < env.ncpu; c++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = c);

		if (cpu_selected(c))
			bpf_prog_test_run_opts(prog, &opts);
	}
}

static int attach_breakdown(struct stat_bpf *skel)
{
	struct perfev tick;
	bool clocks = false;
	int err = 0;

	for (int i = 0; i < env.nr_ev && !err; i++) {
		struct stat_ev *e = &env.ev[i];

		if (!e->is_perf || !e->supported || e->pe.desc->type != PERF_TYPE_SOFTWARE)
			continue;
		if (e->pe.desc->clock) {
			clocks = true;
			continue;
		}
		for (int c = 0; c < env.ncpu && !err; c++) {
			int fd = cpu_selected(c) ? perfev_open_sampler(&e->pe, c, 1) : 0;

			if (fd < 0) {
				p_err("cannot count %s per process on CPU %d: %s", e->name, c,
				      strerror(-fd));
				return fd;
			}
			if (cpu_selected(c))
				err = attach_link(skel->progs.perf_hit, fd, e->idx);
		}
	}
	if (!clocks || err)
		return err;
	account_clocks_everywhere(skel);
	err = attach_link(skel->progs.clock_switch, -1, 0);
	err = err ?: attach_link(skel->progs.clock_exec, -1, 0);
	err = err ?: attach_link(skel->progs.clock_exit, -1, 0);
	perfev_parse("cpu-clock", &tick);
	for (int c = 0; c < env.ncpu && !err; c++) {
		int fd = cpu_selected(c) ? perfev_open_sampler(&tick, c, CLOCK_TICK_NS) : 0;

		if (fd < 0) {
			p_err("cannot start the per-process clock on CPU %d: %s", c, strerror(-fd));
			return fd;
		}
		if (cpu_selected(c))
			err = attach_link(skel->progs.clock_tick, fd, 0);
	}
	return err;
}

static const char *target_text(char *buf, size_t size)
{
	size_t off = 0;

	if (targets.follow) {
		off += snprintf(buf, size, "'");
		for (char **a = targets.command; *a && off < size; a++)
			off += snprintf(buf + off, size - off, "%s%s", a == targets.command ? "" : " ",
					*a);
		if (off < size)
			snprintf(buf + off, size - off, "'");
	} else if (targets.nr_pids || targets.nr_tids) {
		off += snprintf(buf, size, "%s id '", targets.nr_pids ? "process" : "thread");
		for (int i = 0; i < (targets.nr_pids ?: targets.nr_tids) && off < size; i++)
			off += snprintf(buf + off, size - off, "%s%u", i ? "," : "",
					targets.nr_pids ? targets.pids[i] : targets.tids[i]);
		if (off < size)
			snprintf(buf + off, size - off, "'");
	} else if (targets.cgroup) {
		snprintf(buf, size, "cgroup '%s'", targets.cgroup);
	} else if (targets.cpus) {
		off += snprintf(buf, size, "'CPU(s) ");
		for (int c = 0; c < env.ncpu && off < size; c++)
			if (targets.cpus[c])
				off += snprintf(buf + off, size - off, "%s%d", off > 8 ? "," : "", c);
		if (off < size)
			snprintf(buf + off, size - off, "'");
	} else {
		snprintf(buf, size, "'system wide'");
	}
	return buf;
}

/* The counters open once the COMMAND is forked (held before its exec, which enables them). */
static int stat_started(struct runner *r)
{
	unsigned flags;
	int err;

	env.out = r->out;
	/* the elapsed time is the counters': from here (a COMMAND's from its release) */
	env.t0 = now_ns();
	err = make_slots(r, &flags);
	for (int i = 0; i < env.nr_ev && !err; i++)
		if (env.ev[i].is_perf)
			err = open_counters(&env.ev[i], flags);
	if (!err && breakdown()) {
		((struct stat_bpf *)r->skel)->bss->command_tgid = targets.follow ? r->child.pid : 0;
		err = attach_breakdown(r->skel);
	}
	if (err)
		return err;
	getrusage(RUSAGE_CHILDREN, &env.ru0);
	if (targets.follow)
		env.t0 = now_ns();
	env.last_report = now_ns();
	/* with a COMMAND its output and the counts are all there is to see, as with perf */
	if (targets.command)
		p_info("counting %d event%s (attached in %.0f ms)", env.nr_ev,
		       env.nr_ev == 1 ? "" : "s", (now_ns() - env.t_attach) / 1e6);
	else
		fprintf(stderr, "Counting %d event%s (attached in %.0f ms)%s\n", env.nr_ev,
			env.nr_ev == 1 ? "" : "s", (now_ns() - env.t_attach) / 1e6,
			run_opts.duration ? "" : "... Hit Ctrl-C to end.");
	return 0;
}

static void stat_detach(struct runner *r)
{
	/* counting stops here: the counters are read after the COMMAND is reaped */
	env.t_end = now_ns();
	for (int i = 0; i < env.nr_ev; i++)
		for (int s = 0; env.ev[i].fds && s < env.nr_slots; s++)
			if (env.ev[i].fds[s] >= 0)
				ioctl(env.ev[i].fds[s], PERF_EVENT_IOC_DISABLE, 0);
	if (r->skel && env.nr_links)
		account_clocks_everywhere(r->skel);
	for (int i = 0; i < env.nr_links; i++)
		bpf_link__destroy(env.links[i]);
	env.nr_links = 0;
	if (r->skel)
		stat_bpf__detach(r->skel);
}

/* ---- reading ---- */

static void add_value(struct perfev_value *to, const struct perfev_value *v)
{
	to->count += v->count;
	to->enabled += v->enabled;
	to->running += v->running;
}

static int read_perf(struct stat_ev *e)
{
	memset(&e->total, 0, sizeof(e->total));
	memset(e->cpu, 0, env.ncpu * sizeof(*e->cpu));
	for (int s = 0; s < env.nr_slots && e->fds; s++) {
		struct perfev_value v;
		int err;

		if (e->fds[s] < 0)
			continue;
		err = perfev_read(e->fds[s], &v);
		if (err) {
			p_err("cannot read the %s counter: %s", e->name, strerror(-err));
			return err;
		}
		add_value(&e->total, &v);
		if (env.slots[s].cpu >= 0)
			add_value(&e->cpu[env.slots[s].cpu], &v);
	}
	return 0;
}

/* The spec events' per-CPU counters: totals, and each CPU's. */
static int read_bpf(struct stat_bpf *skel, __u64 elapsed_ns)
{
	__u64 *percpu = calloc(env.ncpu, sizeof(*percpu));
	int err = 0;

	if (!percpu)
		return -ENOMEM;
	for (int i = 0; i < env.nr_ev && !err; i++) {
		struct stat_ev *e = &env.ev[i];
		__u32 key = e->idx;

		if (e->is_perf)
			continue;
		err = bpf_map__lookup_elem(skel->maps.counts, &key, 4, percpu,
					   env.ncpu * sizeof(*percpu), 0);
		e->total = (struct perfev_value){ 0, elapsed_ns, elapsed_ns };
		for (int c = 0; !err && c < env.ncpu; c++) {
			e->total.count += percpu[c];
			e->cpu[c] = (struct perfev_value){ percpu[c], elapsed_ns, elapsed_ns };
		}
	}
	free(percpu);
	if (err)
		p_err("cannot read the counts: %s", strerror(-err));
	return err;
}

static int read_all(struct runner *r)
{
	int err = r->skel ? read_bpf(r->skel, (env.t_end ?: now_ns()) - env.t0) : 0;

	for (int i = 0; i < env.nr_ev && !err; i++)
		if (env.ev[i].is_perf)
			err = read_perf(&env.ev[i]);
	return err;
}

/* ---- figures ---- */

/* What perf's derived figures divide by, from one set of readings (a run, an interval, a CPU). */
struct figures {
	double clock_ns, cycles, branches, cache_refs, elapsed_ns;
};

static bool is_hw(const struct stat_ev *e, __u64 config)
{
	return e->is_perf && e->pe.desc->type == PERF_TYPE_HARDWARE && e->pe.desc->config == config;
}

static void metric_for(const struct stat_ev *e, double v, const struct figures *f,
		       struct stat_metric *m)
{
	memset(m, 0, sizeof(*m));
	if (e->is_perf && e->pe.desc->clock) {
		if (f->elapsed_ns)
			*m = (struct stat_metric){ "%8.3f", v / f->elapsed_ns, "CPUs utilized" };
	} else if (is_hw(e, PERF_COUNT_HW_INSTRUCTIONS)) {
		if (f->cycles)
			*m = (struct stat_metric){ "%7.2f ", v / f->cycles, "insn per cycle" };
	} else if (is_hw(e, PERF_COUNT_HW_CPU_CYCLES)) {
		if (f->clock_ns)
			*m = (struct stat_metric){ "%8.3f", v / f->clock_ns, "GHz" };
	} else if (is_hw(e, PERF_COUNT_HW_BRANCH_MISSES)) {
		if (f->branches)
			*m = (struct stat_metric){ "%7.2f%%", 100 * v / f->branches,
						   "of all branches" };
	} else if (is_hw(e, PERF_COUNT_HW_CACHE_MISSES)) {
		if (f->cache_refs)
			*m = (struct stat_metric){ "%8.3f %%", 100 * v / f->cache_refs,
						   "of all cache refs" };
	} else if (f->clock_ns) {
		stat_rate_metric(1e9 * v / f->clock_ns, m);
	}
}

/* value(i) gives each row's count for this set of readings. */
static void gather_figures(double (*value)(int i, void *ctx), void *ctx, double elapsed_ns,
			   struct figures *f)
{
	memset(f, 0, sizeof(*f));
	f->elapsed_ns = elapsed_ns;
	for (int i = 0; i < env.nr_ev; i++) {
		struct stat_ev *e = &env.ev[i];
		double v = value(i, ctx);

		if (!e->is_perf || !e->supported)
			continue;
		if (e->pe.desc->clock && !f->clock_ns)
			f->clock_ns = v;
		if (is_hw(e, PERF_COUNT_HW_CPU_CYCLES))
			f->cycles = v;
		if (is_hw(e, PERF_COUNT_HW_BRANCH_INSTRUCTIONS))
			f->branches = v;
		if (is_hw(e, PERF_COUNT_HW_CACHE_REFERENCES))
			f->cache_refs = v;
	}
}

/* One row from a reading (a delta for intervals). */
static void fill_row(const struct stat_ev *e, const struct perfev_value *v,
		     const struct figures *f, struct stat_row *row)
{
	double count = perfev_scaled(v);
	bool clock = e->is_perf && e->pe.desc->clock;

	row->name = e->name;
	row->clock = clock;
	row->state = !e->supported ? STAT_NOT_SUPPORTED :
		     e->is_perf && !v->running ? STAT_NOT_COUNTED : STAT_COUNTED;
	row->value = clock ? count / 1e6 : count;
	row->run_ns = v->running;
	row->run_pct = v->enabled ? 100.0 * v->running / v->enabled : 100;
	if (!e->supported)
		row->run_pct = 100;
	if (row->state == STAT_COUNTED)
		metric_for(e, count, f, &row->metric);
}

struct reading {
	const struct perfev_value *(*get)(const struct stat_ev *e, int cpu);
	int cpu;
};

static double reading_value(int i, void *ctx)
{
	struct reading *rd = ctx;

	return perfev_scaled(rd->get(&env.ev[i], rd->cpu));
}

static const struct perfev_value *cpu_of(const struct stat_ev *e, int cpu)
{
	return &e->cpu[cpu];
}

/* A glob's match that never fired is left out (and counted); an event named exactly never. */
static bool shown(const struct stat_ev *e, const struct perfev_value *v)
{
	return !e->from_glob || v->count;
}

/* One row of event i from reading rd, with the figures f of the same reading. */
static void print_one(const char *time, int i, struct reading *rd, const struct figures *f,
		      bool with_runs)
{
	struct stat_ev *e = &env.ev[i];
	struct stat_row row = { .time = time };
	char prefix[32];

	fill_row(e, rd->get(e, rd->cpu), f, &row);
	if (env.per_cpu) {
		snprintf(prefix, sizeof(prefix), "CPU%d", rd->cpu);
		row.prefix = prefix;
	} else if (env.nr_units) {
		row.prefix = env.units[rd->cpu].name;
		row.prefix_cpus = env.units[rd->cpu].ncpus;
	}
	if (with_runs && env.repeat > 1) {
		row.noise = true;
		row.noise_pct = run_stats_noise_pct(&acc.rows[i].count);
	}
	stat_print_row(env.out, env.sep, &row);
}

static const struct perfev_value *unit_of_reading(const struct stat_ev *e, int unit)
{
	return &env.unit_vals[(e - env.ev) * env.nr_units + unit];
}

/* --per-core / --per-socket: each unit's values, its CPUs' readings (by get) added up. */
static int sum_units(const struct perfev_value *(*get)(const struct stat_ev *, int))
{
	if (!env.unit_vals)
		env.unit_vals = calloc((size_t)env.nr_ev * env.nr_units, sizeof(*env.unit_vals));
	if (!env.unit_vals)
		return -ENOMEM;
	memset(env.unit_vals, 0, (size_t)env.nr_ev * env.nr_units * sizeof(*env.unit_vals));
	for (int i = 0; i < env.nr_ev; i++)
		for (int c = 0; c < env.ncpu; c++)
			if (env.unit_of[c] >= 0)
				add_value(&env.unit_vals[i * env.nr_units + env.unit_of[c]],
					  get(&env.ev[i], c));
	return 0;
}

/* Every row of a reading, in the order given; with -A each event's CPUs in turn, and with
 * --per-core/--per-socket each unit's events in turn, as perf.  Returns how many glob matches
 * were left out for never firing. */
static int print_reading(const char *time, const struct perfev_value *(*get)(const struct stat_ev *, int),
			 double elapsed_ns, bool with_runs)
{
	bool per_unit = env.nr_units > 0, split = env.per_cpu || per_unit;
	int ncols = env.per_cpu ? env.ncpu : per_unit ? env.nr_units : 1, silent = 0;
	struct figures *f = calloc(ncols, sizeof(*f));
	struct reading *rd = calloc(ncols, sizeof(*rd));
	const struct stat_ev *total = NULL;

	if (!f || !rd || (per_unit && sum_units(get))) {
		free(f);
		free(rd);
		return -ENOMEM;
	}
	if (per_unit)
		get = unit_of_reading;
	for (int c = 0; c < ncols; c++) {
		rd[c] = (struct reading){ get, c };
		gather_figures(reading_value, &rd[c], elapsed_ns, &f[c]);
	}
	for (int i = 0; i < env.nr_ev; i++) {
		total = &env.ev[i];
		if (!shown(total, split ? &total->total : get(total, 0)))
			silent++;
	}
	for (int a = 0; a < (per_unit ? ncols : env.nr_ev); a++) {
		for (int b = 0; b < (per_unit ? env.nr_ev : ncols); b++) {
			int i = per_unit ? b : a, c = per_unit ? a : b;

			if (!shown(&env.ev[i], split ? &env.ev[i].total : get(&env.ev[i], 0)))
				continue;
			if (!env.per_cpu || cpu_selected(c))
				print_one(time, i, &rd[c], &f[c], with_runs);
		}
	}
	free(f);
	free(rd);
	return silent;
}

/* ---- intervals ---- */

static void delta(struct perfev_value *d, const struct perfev_value *now,
		  struct perfev_value *prev)
{
	d->count = now->count - prev->count;
	d->enabled = now->enabled - prev->enabled;
	d->running = now->running - prev->running;
	*prev = *now;
}

/* Each row's reading becomes its delta since the last interval (the totals are kept). */
static struct perfev_value *interval_totals, *interval_cpus;

static const struct perfev_value *interval_total_of(const struct stat_ev *e, int cpu)
{
	return &interval_totals[e - env.ev];
}

static const struct perfev_value *interval_cpu_of(const struct stat_ev *e, int cpu)
{
	return &interval_cpus[(e - env.ev) * env.ncpu + cpu];
}

static int print_interval(struct runner *r, __u64 now)
{
	char stamp[32];
	int err = 0;

	interval_totals = calloc(env.nr_ev, sizeof(*interval_totals));
	interval_cpus = calloc((size_t)env.nr_ev * env.ncpu, sizeof(*interval_cpus));
	if (!interval_totals || !interval_cpus) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < env.nr_ev; i++) {
		struct stat_ev *e = &env.ev[i];

		delta(&interval_totals[i], &e->total, &e->prev);
		for (int c = 0; c < env.ncpu; c++)
			delta(&interval_cpus[i * env.ncpu + c], &e->cpu[c], &e->cpu_prev[c]);
		/* BPF counts run all the time: the interval is their running time */
		if (!e->is_perf) {
			interval_totals[i].enabled = interval_totals[i].running = now - env.last_report;
			for (int c = 0; c < env.ncpu; c++)
				interval_cpus[i * env.ncpu + c].enabled =
				interval_cpus[i * env.ncpu + c].running = now - env.last_report;
		}
	}
	/* perf prints the column heading every 25 intervals */
	if (!env.sep && env.intervals++ % 25 == 0)
		stat_print_interval_heading(env.out, env.per_cpu ? "CPU" : env.per_core ? "core" :
					    env.per_socket ? "socket" : NULL);
	/* stamped on the run loop's clock, whose intervals start at attach: 0.5, 1.0... */
	stat_time_stamp(now - r->start_ns, stamp, sizeof(stamp));
	print_reading(stamp, env.per_cpu || env.nr_units ? interval_cpu_of : interval_total_of,
		      now - env.last_report, false);
	env.last_report = now;
cleanup:
	free(interval_totals);
	free(interval_cpus);
	interval_totals = interval_cpus = NULL;
	return err;
}

/* ---- -P and --by-comm ---- */

/* One (process or command, event) row of the breakdown. */
struct proc_row {
	struct stat_proc_key key;
	__u64 count;
	__u64 procs; /* --by-comm: how many processes had that name */
};

static int read_proc_counts(struct stat_bpf *skel, struct proc_row **rows, size_t *nr)
{
	int fd = bpf_map__fd(skel->maps.proc_counts);
	struct stat_proc_key key, next, *prev = NULL;
	size_t cap = 0;

	*rows = NULL;
	*nr = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (ARRAY_GROW(*rows, cap, *nr + 1))
			return -ENOMEM;
		(*rows)[*nr] = (struct proc_row){ .key = next, .procs = 1 };
		if (!bpf_map_lookup_elem(fd, &next, &(*rows)[*nr].count) &&
		    next.idx < (__u32)(env.nr_specs_ev + env.nr_ev))
			(*nr)++;
		key = next;
		prev = &key;
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->key.idx != y->key.idx)
		return x->key.idx < y->key.idx ? -1 : 1;
	if (env.by_comm) {
		int c = strncmp(x->key.comm, y->key.comm, STAT_COMM_LEN);

		if (c)
			return c;
	}
	if (x->key.tgid != y->key.tgid)
		return x->key.tgid < y->key.tgid ? -1 : 1;
	if (x->key.cpu != y->key.cpu)
		return x->key.cpu < y->key.cpu ? -1 : 1;
	/* -P: a process's names, busiest first (the one it is shown under) */
	return x->count != y->count ? (x->count > y->count ? -1 : 1) : 0;
}

static bool same_group(const struct proc_row *a, const struct proc_row *b)
{
	if (a->key.idx != b->key.idx)
		return false;
	if (env.by_comm)
		return !strncmp(a->key.comm, b->key.comm, STAT_COMM_LEN);
	return a->key.tgid == b->key.tgid && a->key.cpu == b->key.cpu;
}

/* What a full breakdown table left out, on stderr. */
static void warn_table_full(__u64 lost, const char *what, const struct bpf_map *map)
{
	if (lost)
		fprintf(stderr, "bpfprof: %llu %s (the table of %u rows is full)\n",
			(unsigned long long)lost, what, bpf_map__max_entries(map));
}

/* Rows folded per process (-P: named by the name it had most of the time) or per command
 * name (--by-comm: counting the processes folded in).  Returns the new number of rows. */
static size_t fold_rows(struct proc_row *rows, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(rows, n, sizeof(*rows), by_key);
	for (size_t i = 0; i < n; i++) {
		struct proc_row *last = out ? &rows[out - 1] : NULL;

		if (last && same_group(last, &rows[i])) {
			/* a new process under that name (rows are in tgid order within a name) */
			if (env.by_comm && (rows[i].key.tgid != last->key.tgid ||
					    rows[i].key.cpu != last->key.cpu)) {
				last->procs++;
				last->key.tgid = rows[i].key.tgid;
				last->key.cpu = rows[i].key.cpu;
			}
			last->count += rows[i].count;
			continue;
		}
		rows[out++] = rows[i];
	}
	return out;
}

static int by_event_then_count(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->key.idx != y->key.idx)
		return x->key.idx < y->key.idx ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strncmp(x->key.comm, y->key.comm, STAT_COMM_LEN);
}

static const struct stat_ev *ev_of_idx(__u32 idx)
{
	for (int i = 0; i < env.nr_ev; i++)
		if ((__u32)env.ev[i].idx == idx)
			return &env.ev[i];
	return NULL;
}

static void print_proc_row(const struct proc_row *p, const struct stat_ev *e, __u64 run_ns)
{
	struct stat_row row = { .state = STAT_COUNTED, .name = e->name, .run_ns = run_ns,
				.run_pct = 100 };
	bool clock = e->is_perf && e->pe.desc->clock;
	char prefix[48];

	if (env.by_comm)
		snprintf(prefix, sizeof(prefix), env.sep ? "%.16s" : "%16.16s", p->key.comm);
	else
		snprintf(prefix, sizeof(prefix), env.sep ? "%.16s-%u" : "%16.16s-%-8u", p->key.comm,
			 p->key.tgid);
	row.prefix = prefix;
	row.clock = clock;
	row.value = clock ? p->count / 1e6 : p->count;
	if (env.by_comm)
		row.metric = (struct stat_metric){ "%8.0f", p->procs,
						   "" };
	if (env.by_comm)
		snprintf(row.metric.unit, sizeof(row.metric.unit), "%s",
			 p->procs == 1 ? "process" : "processes");
	stat_print_row(env.out, env.sep, &row);
}

static int print_breakdown(struct stat_bpf *skel, __u64 run_ns)
{
	struct proc_row *rows;
	size_t n, first = 0;
	int err = read_proc_counts(skel, &rows, &n);

	if (err)
		goto cleanup;
	n = fold_rows(rows, n);
	if (n)
		qsort(rows, n, sizeof(*rows), by_event_then_count);
	if (!env.sep)
		fprintf(env.out, "\n %s (the %llu busiest of each event):\n\n",
			env.by_comm ? "By command name" : "By process", (unsigned long long)env.top);
	for (size_t i = 0; i < n; i++) {
		const struct stat_ev *e = ev_of_idx(rows[i].key.idx);

		if (i && rows[i].key.idx != rows[i - 1].key.idx)
			first = i;
		if (e && i - first < env.top)
			print_proc_row(&rows[i], e, run_ns);
	}
	warn_table_full(skel->bss->lost_procs, "event hits not broken down", skel->maps.proc_counts);
cleanup:
	free(rows);
	return err;
}

/* ---- --by ---- */

struct field_row {
	const char *key; /* in the rows' key buffer */
	__u64 count;
};

static __u32 row_idx(const struct field_row *r)
{
	__u64 idx;

	memcpy(&idx, r->key, 8);
	return idx;
}

static int by_event_then_busiest(const void *a, const void *b)
{
	const struct field_row *x = a, *y = b;
	__u32 ix = row_idx(x), iy = row_idx(y);

	if (ix != iy)
		return ix < iy ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return memcmp(x->key, y->key, env.ef.key_size);
}

/* One row of --by: the count, then each field's value (aligned, or -x's fields). */
static void print_field_row(const struct field_row *r, const char *event, struct field_namer *nm)
{
	char cols[FIELDS_MAX][FIELD_STR_LEN * 2];

	event_fields_key_text(&env.ef, r->key, field_namer_name, nm, cols);
	if (env.sep)
		fprintf(env.out, "%llu%s%s", (unsigned long long)r->count, env.sep, event);
	else
		fprintf(env.out, "%18llu ", (unsigned long long)r->count);
	for (int k = 0; k < env.ef.nr_by; k++)
		fprintf(env.out, "%s%-*s", env.sep ?: " ",
			!env.sep && k + 1 < env.ef.nr_by ? 20 : 0, cols[k]);
	fprintf(env.out, "\n");
}

struct field_rows {
	char *keys;
	struct field_row *rows;
	size_t n, cap;
};

/* Room for one more row; its key at keys + n * key_size.  0 or -ENOMEM. */
static int field_rows_grow(struct field_rows *fr)
{
	size_t ksz = env.ef.key_size;
	char *k2;
	struct field_row *r2;

	if (fr->n < fr->cap)
		return 0;
	fr->cap = fr->cap ? 2 * fr->cap : 256;
	k2 = realloc(fr->keys, fr->cap * ksz);
	if (!k2)
		return -ENOMEM;
	fr->keys = k2;
	r2 = realloc(fr->rows, fr->cap * sizeof(*r2));
	if (!r2)
		return -ENOMEM;
	fr->rows = r2;
	return 0;
}

static int by_key_bytes(const void *a, const void *b)
{
	return memcmp(((const struct field_row *)a)->key, ((const struct field_row *)b)->key,
		      env.ef.key_size);
}

/* Every row of the shared table and of each CPU's cache (field_cache_slot), the same key's
 * counts added up. */
static int read_field_rows(struct stat_bpf *skel, struct field_rows *fr)
{
	int fd = bpf_map__fd(skel->maps.field_counts), cache = bpf_map__fd(skel->maps.field_cache);
	size_t ksz = env.ef.key_size, out = 0;
	struct field_cache_slot *slots = calloc(env.ncpu, sizeof(*slots));
	int err = slots ? 0 : -ENOMEM;

	while (!err && !(err = field_rows_grow(fr))) {
		char *prev = fr->n ? fr->keys + (fr->n - 1) * ksz : NULL;

		if (bpf_map_get_next_key(fd, prev, fr->keys + fr->n * ksz))
			break;
		fr->n += !bpf_map_lookup_elem(fd, fr->keys + fr->n * ksz, &fr->rows[fr->n].count);
	}
	for (__u32 i = 0; !err && i < FIELD_CACHE_SLOTS; i++) {
		if (bpf_map_lookup_elem(cache, &i, slots))
			break;
		for (int c = 0; !err && c < env.ncpu; c++) {
			if (!slots[c].count || (err = field_rows_grow(fr)))
				continue;
			memcpy(fr->keys + fr->n * ksz, slots[c].key, ksz);
			fr->rows[fr->n++].count = slots[c].count;
		}
	}
	free(slots);
	if (err)
		return err;
	for (size_t i = 0; i < fr->n; i++)
		fr->rows[i].key = fr->keys + i * ksz;
	if (fr->n)
		qsort(fr->rows, fr->n, sizeof(*fr->rows), by_key_bytes);
	for (size_t i = 0; i < fr->n; i++) {
		if (out && !memcmp(fr->rows[out - 1].key, fr->rows[i].key, ksz))
			fr->rows[out - 1].count += fr->rows[i].count;
		else
			fr->rows[out++] = fr->rows[i];
	}
	fr->n = out;
	return 0;
}

/* The counts per field values, each event's busiest first. */
static int print_by(struct stat_bpf *skel)
{
	struct field_rows fr = {};
	struct field_namer nm = {};
	struct field_row *rows;
	size_t n;
	int err = read_field_rows(skel, &fr);

	if (err)
		goto cleanup;
	field_namer_open(&nm, &env.ef);
	rows = fr.rows;
	n = fr.n;
	if (n)
		qsort(rows, n, sizeof(*rows), by_event_then_busiest);
	for (int e = 0; e < env.nr_ev; e++) {
		const struct stat_ev *ev = &env.ev[e];
		size_t first = 0, nr = 0, shown;
		char heading[512];
		size_t off = 0;

		while (first < n && row_idx(&rows[first]) < (__u32)ev->idx)
			first++;
		while (first + nr < n && row_idx(&rows[first + nr]) == (__u32)ev->idx)
			nr++;
		if (!nr && ev->from_glob)
			continue;
		shown = nr < env.top ? nr : env.top;
		if (!env.sep) {
			fprintf(env.out, "\n %s by %s (%s%zu of %zu):\n\n", ev->name, env.by,
				shown < nr ? "the busiest " : "", shown, nr);
			off = snprintf(heading, sizeof(heading), "%18s ", "count");
			for (int k = 0; k < env.ef.nr_by && off < sizeof(heading); k++)
				off += snprintf(heading + off, sizeof(heading) - off, " %-*s",
						k + 1 < env.ef.nr_by ? 20 : 0, env.ef.by_names[k]);
			fprintf(env.out, "%s\n", heading);
		}
		for (size_t i = 0; i < shown; i++)
			print_field_row(&rows[first + i], ev->name, &nm);
	}
	warn_table_full(skel->bss->lost_fields, "events not counted by field",
			skel->maps.field_counts);
cleanup:
	field_namer_close(&nm);
	free(fr.keys);
	free(fr.rows);
	return err;
}

/* ---- the report ---- */

static double seconds_of(const struct timeval *tv)
{
	return tv->tv_sec + tv->tv_usec / 1e6;
}

/* This run's figures into the -r accumulation.  0 or -ENOMEM. */
static int add_run(__u64 elapsed_ns)
{
	struct rusage ru;

	if (!acc.rows) {
		acc.rows = calloc(env.nr_ev, sizeof(*acc.rows));
		if (!acc.rows)
			return -ENOMEM;
		acc.nr_rows = env.nr_ev;
	}
	for (int i = 0; i < env.nr_ev && i < acc.nr_rows; i++) {
		run_stats_add(&acc.rows[i].count, perfev_scaled(&env.ev[i].total));
		acc.rows[i].enabled += env.ev[i].total.enabled;
		acc.rows[i].running += env.ev[i].total.running;
	}
	run_stats_add(&acc.elapsed, elapsed_ns / 1e9);
	if (!getrusage(RUSAGE_CHILDREN, &ru)) {
		run_stats_add(&acc.user, seconds_of(&ru.ru_utime) - seconds_of(&env.ru0.ru_utime));
		run_stats_add(&acc.sys, seconds_of(&ru.ru_stime) - seconds_of(&env.ru0.ru_stime));
	}
	acc.runs_done++;
	return 0;
}

/* The runs' means (with one run, its reading). */
static const struct perfev_value *mean_of(const struct stat_ev *e, int cpu)
{
	static struct perfev_value v;
	const struct acc_row *a = &acc.rows[e - env.ev];

	v.count = a->count.mean + 0.5;
	v.enabled = a->enabled / acc.runs_done + 0.5;
	v.running = a->running / acc.runs_done + 0.5;
	return &v;
}

static int print_totals(__u64 elapsed_ns)
{
	char what[512];
	int silent;
	bool command = targets.follow;

	if (!env.sep)
		stat_print_header(env.out, target_text(what, sizeof(what)), acc.runs_done);
	silent = env.per_cpu || env.nr_units ? print_reading(NULL, cpu_of, elapsed_ns, false)
			     : print_reading(NULL, mean_of, acc.elapsed.mean * 1e9, true);
	if (silent && !env.sep)
		fprintf(env.out, "(%d more matched event%s had no hits)\n", silent,
			silent == 1 ? "" : "s");
	if (!env.sep)
		stat_print_footer(env.out, &acc.elapsed, command ? acc.user.mean : -1,
				  command ? acc.sys.mean : -1);
	return 0;
}

/* The counts out now, or one line saying where they could not go (a full disk, a closed pipe). */
static int flush_out(void)
{
	int err = stream_flush_check(env.out);

	if (err)
		runner_report_failed(err);
	return err;
}

/* Each interval's counts; at the end (of the last of -r runs) the totals, as perf stat. */
static int stat_report(struct runner *r, bool last)
{
	__u64 now = last ? env.t_end : now_ns();
	int err = read_all(r);

	if (err)
		return err;
	if (!last || run_opts.interval) {
		err = print_interval(r, now);
		if (err || !last)
			return err ?: flush_out();
	}
	err = add_run(now - env.t0);
	if (err)
		return err;
	if (acc.runs_done < (int)env.repeat && !exiting)
		return 0; /* the next run */
	if (!run_opts.interval)
		err = print_totals(now - env.t0);
	if (!err && breakdown())
		err = print_breakdown(r->skel, now - env.t0);
	if (!err && env.ef.nr_by && r->skel)
		err = print_by(r->skel);
	return err ?: flush_out();
}

static unsigned stat_runs(void)
{
	return env.repeat ?: 1;
}

static void stat_teardown(struct runner *r)
{
	for (int i = 0; i < env.nr_links; i++)
		bpf_link__destroy(env.links[i]);
	for (int i = 0; i < env.nr_ev; i++) {
		for (int s = 0; env.ev[i].fds && s < env.nr_slots; s++)
			if (env.ev[i].fds[s] >= 0)
				close(env.ev[i].fds[s]);
		free(env.ev[i].fds);
		free(env.ev[i].cpu);
		free(env.ev[i].cpu_prev);
	}
	/* -r: the runs so far are kept in acc and in the rows' statistics, carried over here */
	probe_events_free(&env.evs);
	event_fields_free(&env.ef);
	free(env.ev);
	free(env.slots);
	free(env.links);
	free(env.units);
	free(env.unit_of);
	free(env.unit_vals);
	memset(&env, 0, sizeof(env));
}

const struct command stat_cmd = {
	.name = "stat",
	.alias = "count",
	.summary = "count events, like perf stat: counters, tracepoints, functions",
	.description =
		"Count events like perf stat, with its output: perf's software and hardware events\n"
		"through perf_event counters (no BPF needed for a total), and tracepoints, syscalls\n"
		"and functions counted in the kernel.  Without events, perf stat's default set.\n"
		"Results go to stderr when a COMMAND runs, to stdout otherwise (or -o FILE).",
	.notes =
		"EVENT:  task-clock, cpu-clock, context-switches (cs), cpu-migrations (migrations),\n"
		"        page-faults (faults), minor-faults, major-faults, alignment-faults,\n"
		"        emulation-faults, cgroup-switches: software events;  cycles, instructions,\n"
		"        branches, branch-misses, cache-references, cache-misses, bus-cycles,\n"
		"        ref-cycles, stalled-cycles-*: hardware (<not supported> without a PMU);\n"
		"        NAME:u / NAME:k count user / kernel mode only\n"
		"        t:CAT:NAME, CAT:NAME   tracepoint; globs: 'syscalls:sys_enter_*', 'block:*'\n"
		"        sys:NAME               a syscall's entries (syscalls:sys_enter_NAME)\n"
		"        FUNC, k:FUNC           kernel function (fentry, else kprobe)\n"
		"        u:PATH:FUNC, LIB:FUNC  user function (uprobe), e.g. c:malloc\n"
		"        FUNC%return            a function's return (k:FUNC%return, u:PATH:FUNC%return)\n"
		"FIELD:  a tracepoint's format fields (filename, function...), a syscall's arguments by\n"
		"        name, a function's arg0..arg5 (and its parameters' names from its DWARF or\n"
		"        the kernel's BTF), retval on FUNC%return; comm, pid, tid, cpu, cgroup on\n"
		"        every event; casts :string, :u8..:u64, :s8..:s64, :x8..:x64\n"
		"EXPR:   perf's filter syntax: == != < <= > >= & on numbers, == != ~ (globs \"a*\",\n"
		"        \"*a\", \"*a*\") on strings, && || ! ( ); run in the kernel before counting\n"
		"EVENTs are given with -e or as arguments, several at once or comma-separated.\n"
		"Figures as perf prints them: CPUs utilized, rates per second of task-clock,\n"
		"insn per cycle.  -r N: means, and the error of the mean as ( +- x.xx% ).\n",
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_INTERVALS | CAP_EVENTS,
	.positional = POS_EVENTS,
	.stderr_beside_command = true, /* as perf stat */
	.opts = stat_opts,
	.skel = &stat_skel,
	.check = stat_check,
	.uses_bpf = stat_uses_bpf,
	.configure = stat_configure,
	.attach = stat_attach,
	.started = stat_started,
	.report = stat_report,
	.detach = stat_detach,
	.runs = stat_runs,
	.teardown = stat_teardown,
};
