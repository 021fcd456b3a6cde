// SPDX-License-Identifier: GPL-2.0
/* bpfprof profile: on-CPU stack sampling, aggregated in the kernel. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/runner.h"
#include "core/stackrun.h"
#include "cmd/profile.h"
#include "probe/fields.h"
#include "probe/perfevent.h"
#include "profile.h"
#include "profile.skel.h"
#include "sym/syms.h"

RUNNER_SKELETON(profile);

/* --by keys apart: this many at most */
#define PROFILE_BY_ROWS 4096

/* Sampling perf events open on every selected CPU. */
struct sampling {
	struct bpf_link **links;
	int *fds;
	__u32 *events; /* which sampled event each fd counts */
	int nr;
};

struct profile_sampling profile_sampling;

/* A perf event to sample, and the name it was given on the command line (the report's). */
struct sampled_event {
	struct perfev ev;
	const char *name;
	__u64 period;  /* a sample every period events; 0: at profile_sampling.freq */
};

static struct profile_env {
	struct sampled_event *sampled; /* perf events to sample */
	int nr_sampled;
	char **specs;          /* event specs: every hit a sample */
	int nr_specs;
	char label[256];       /* the events, for the header */
	bool event_root;       /* --event-root */
	const char **names;    /* by event index: the sampled perf events, then the specs' events */
	int nr_names;
	struct probe_events evs;
	const char *filter;    /* --filter EXPR on the specs' fields */
	const char *by;        /* --by FIELD[,FIELD...]: the samples per key of the specs' fields */
	struct event_fields ef;
	char **row_names;      /* --by: each key's label, the names once the samples are read */
	struct sampling sampling;
	struct stack_run sr;
	__u64 lost[LOST_REASONS];
} env;

const struct opt profile_sampling_opts[] = {
	{ 'F', "freq", "HZ", "sampling frequency (default 99 for the clocks and hardware\n"
	  "events)", OPT_U64, &profile_sampling.freq, 1, 1000000, .what = "frequency",
	  .hint = "expected a whole number of Hz, at least 1" },
	{ 'c', "count", "N", "a sample every N events of a perf event (perf record -c);\n"
	  "software events other than the clocks default to every event", OPT_U64,
	  &profile_sampling.period, 1, (__u64)1 << 62, .what = "sample period",
	  .hint = "expected a whole number of events, at least 1" },
	{ 0, "include-idle", NULL, "include the idle task (pid 0) in timer sampling (event\n"
	  "specs count every hit, in any task)", OPT_FLAG, &profile_sampling.include_idle },
	{},
};

const struct opt profile_opts[] = {
	{ 0, "event-root", NULL, "with several events, each event as the root frame of the\n"
	  "folded stacks and the flame graph (the report has a section\n"
	  "per event)", OPT_FLAG, &env.event_root },
	{ 0, "filter", "EXPR", "with -e SPEC: sample only the hits EXPR holds for, decided in\n"
	  "the kernel before any stack is taken (e.g. 'arg0 > 4096')", OPT_STR, &env.filter },
	{ 0, "by", "FIELD[,FIELD...]", "with -e SPEC: the samples apart per value of the events'\n"
	  "fields, keyed in the kernel: a report section per key, busiest\n"
	  "first, and the key as the folded stacks' root frame (e.g. --by\n"
	  "filename on sched:sched_process_exec, --by arg0)", OPT_STR, &env.by },
	{ 'I', NULL, NULL, "-I is an interval in bpfprof's grammar (perf stat's -I MS) and profile "
	  "prints no intervals; the idle task is included with --include-idle", OPT_RETIRED },
	{},
};

static int max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	int rate = 0;

	if (f) {
		if (fscanf(f, "%d", &rate) != 1)
			rate = 0;
		fclose(f);
	}
	return rate;
}

/* -e: perf event names and event specs (anything with a ':').  -ENOENT (printed) for neither. */
static int sort_events(void)
{
	static char *dflt[] = { "cpu-clock" };
	char **ev = run_opts.nr_events ? run_opts.events : dflt;
	int n = run_opts.nr_events ? run_opts.nr_events : 1;
	size_t off = 0;

	env.specs = calloc(n, sizeof(*env.specs));
	env.sampled = calloc(n, sizeof(*env.sampled));
	if (!env.specs || !env.sampled)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct perfev pe;
		int rc = perfev_parse(ev[i], &pe);
		bool dup = false;

		/* a bad modifier ("cs:foo") may be a CAT:NAME spec: the spec parser judges it */
		if (rc && !strchr(ev[i], ':')) {
			p_err("unsupported event '%s' (supported: cpu-clock, task-clock, cycles, "
			      "instructions, cache-misses, branch-misses, perf's other software and "
			      "hardware events (bpfprof list sw hw), or a spec such as "
			      "t:CAT:NAME, u:LIB:FUNC, k:FUNC, sys:NAME)", ev[i]);
			/* not found, as an unknown spec is: exit 1 (2 is for the grammar) */
			return -ENOENT;
		}
		/* the same spelling once; "cycles" and "cpu-cycles" stay two events, as before */
		for (int k = 0; !rc && k < env.nr_sampled; k++)
			dup |= !strcmp(env.sampled[k].name, ev[i]);
		if (!rc && !dup)
			env.sampled[env.nr_sampled++] = (struct sampled_event){ pe, ev[i] };
		else if (rc)
			env.specs[env.nr_specs++] = ev[i];
		off += snprintf(env.label + off, off < sizeof(env.label) ? sizeof(env.label) - off : 0,
				"%s%s", i ? "," : "", ev[i]);
	}
	return 0;
}

static void explain_perf_event_error(const struct sampled_event *ev, int cpu, int err)
{
	if (ev->ev.desc->type == PERF_TYPE_HARDWARE &&
	    (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL))
		p_err("event '%s' is not supported on this machine (no hardware PMU); use -e "
		      "cpu-clock", ev->name);
	else if (err == -EACCES || err == -EPERM)
		p_err("cannot open perf event '%s': %s (needs root or CAP_PERFMON)", ev->name,
		      strerror(-err));
	else
		p_err("cannot open perf event '%s' on CPU %d: %s", ev->name, cpu, strerror(-err));
}

/* One sampling event per selected online CPU and perf event, opened before anything is loaded
 * so that an unsupported event is reported before any other work. */
static int open_sampling(struct sampling *s)
{
	int ncpu = nr_cpus_possible(), max = ncpu * env.nr_sampled;

	s->links = calloc(max, sizeof(*s->links));
	s->fds = calloc(max, sizeof(*s->fds));
	s->events = calloc(max, sizeof(*s->events));
	if (!s->links || !s->fds || !s->events)
		return -ENOMEM;
	for (int e = 0; e < env.nr_sampled; e++) {
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd;

			if ((targets.cpus && !targets.cpus[cpu]) || !cpu_online(cpu))
				continue;
			fd = env.sampled[e].period ?
			     perfev_open_sampler(&env.sampled[e].ev, cpu, env.sampled[e].period) :
			     perfev_open_sampler_freq(&env.sampled[e].ev, cpu, profile_sampling.freq);
			if (fd < 0) {
				explain_perf_event_error(&env.sampled[e], cpu, fd);
				return fd;
			}
			s->events[s->nr] = e;
			s->fds[s->nr++] = fd;
		}
	}
	return 0;
}

static void close_sampling(struct sampling *s)
{
	for (int i = 0; i < s->nr; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->fds[i]);
	}
	free(s->links);
	free(s->fds);
	free(s->events);
	memset(s, 0, sizeof(*s));
}

/* Event names by index, as the kernel keys samples: sampled perf events first, then every event
 * the specs resolved to (a glob's matches apart). */
static int name_events(void)
{
	env.nr_names = env.nr_sampled + env.evs.nr;
	env.names = calloc(env.nr_names ?: 1, sizeof(*env.names));
	if (!env.names)
		return -ENOMEM;
	for (int i = 0; i < env.nr_sampled; i++)
		env.names[i] = env.sampled[i].name;
	for (int i = 0; i < env.evs.nr; i++)
		env.names[env.nr_sampled + i] = env.evs.ev[i].name;
	return 0;
}

/* How each perf event is sampled: -c's period, else -F's frequency; neither given, the clocks
 * and hardware events at 99 Hz and the other software events at every event.  The kernel
 * adjusts a frequency's period only at its tick, which a software event such as page-faults
 * does not follow (perf record -F 99 -e page-faults -a: 11 samples of 23,886 faults); and
 * every event costs little where the counting is in the kernel. */
static void choose_sampling(void)
{
	for (int i = 0; i < env.nr_sampled; i++) {
		struct sampled_event *e = &env.sampled[i];
		bool every_event = e->ev.desc->type == PERF_TYPE_SOFTWARE && !e->ev.desc->clock;

		if (profile_sampling.period)
			e->period = profile_sampling.period;
		else if (!profile_sampling.freq_given && every_event)
			e->period = 1;
	}
}

/* The frequency the perf events are sampled at, 0 when each is sampled every N events. */
static __u64 sampled_freq(void)
{
	for (int i = 0; i < env.nr_sampled; i++)
		if (!env.sampled[i].period)
			return profile_sampling.freq;
	return 0;
}

/* The sampled events that are clocks, by index: the idle task is left out of their samples only
 * (a context switch or page fault in it is an event like any other). */
static __u64 clock_events(void)
{
	__u64 mask = 0;

	for (int i = 0; i < env.nr_sampled && i < 64; i++)
		if (env.sampled[i].ev.desc->clock)
			mask |= 1ULL << i;
	return mask;
}

int profile_check(struct runner *r)
{
	int rate = max_sample_rate(), err;

	profile_sampling.freq_given = profile_sampling.freq != 0;
	if (!profile_sampling.freq)
		profile_sampling.freq = 99;
	if (profile_sampling.freq > (__u64)INT_MAX ||
	    (rate > 0 && profile_sampling.freq > (__u64)rate)) {
		p_err("frequency %llu Hz is above kernel.perf_event_max_sample_rate (%d)",
		      (unsigned long long)profile_sampling.freq, rate);
		return -EINVAL;
	}
	err = sort_events();
	err = err ?: stack_run_init(&env.sr);
	if (!err && env.nr_specs)
		err = probe_resolve_specs(env.specs, env.nr_specs,
					  targets.nr_pids ? targets.pids[0] : 0, &env.evs);
	err = err ?: name_events();
	if (!err && (env.filter || env.by) && (env.nr_sampled || !env.nr_specs)) {
		p_err("%s %s: perf's sampled events have no fields (it applies to -e SPEC: "
		      "tracepoints, syscalls, functions)", env.filter ? "--filter" : "--by",
		      env.filter ?: env.by);
		err = -EINVAL;
	}
	if (!err && (env.filter || env.by))
		err = event_fields_build(&env.evs, env.by, env.filter, &env.ef);
	if (!err && env.nr_sampled) {
		choose_sampling();
		err = open_sampling(&env.sampling);
	}
	return err;
}

static struct probe_progs event_progs(struct profile_bpf *skel)
{
	struct probe_progs p = {
		.uentry = skel->progs.event_uprobe, .kentry = skel->progs.event_kprobe,
		.fentry = skel->progs.event_fentry, .tp = skel->progs.event_tp,
		.raw_tp = skel->progs.event_raw_tp,
		.sys_enter = skel->progs.event_sys_enter, .sys_exit = skel->progs.event_sys_exit,
		.func_ips = skel->maps.func_ips,
		.sys_enter_idx = skel->maps.sys_enter_idx, .sys_exit_idx = skel->maps.sys_exit_idx,
		.records = env.ef.records,
	};
	return p;
}

/* Keeps the event programs the specs need (none for perf events); probe_attach() attaches them. */
static int configure_events(struct profile_bpf *skel)
{
	struct probe_progs p = event_progs(skel);
	struct bpf_program *progs[] = { p.uentry, p.kentry, p.fentry, p.tp, p.raw_tp, p.sys_enter,
					p.sys_exit };

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		bpf_program__set_autoload(progs[i], false);
		bpf_program__set_autoattach(progs[i], false);
	}
	bpf_program__set_autoload(skel->progs.do_sample, env.nr_sampled > 0);
	skel->rodata->targ_filter = env.filter != NULL;
	skel->rodata->targ_by = env.by != NULL;
	skel->rodata->targ_by_base = env.nr_names;
	return event_fields_configure(&env.ef, EVENT_FIELDS_RODATA(skel), PROFILE_BY_ROWS) ?:
	       (env.nr_specs ? probe_prepare(&p, &env.evs) : 0);
}

int profile_configure(struct runner *r)
{
	struct profile_bpf *skel = r->skel;

	/* filters and stack choices are read-only globals, fixed before load */
	skel->rodata->targ_include_idle = profile_sampling.include_idle;
	skel->rodata->targ_clock_events = clock_events();
	skel->rodata->targ_sampling_cookies = env.nr_sampled > 1;
	skel->rodata->targ_spec_base = env.nr_sampled;
	skel->rodata->targ_user_stacks = !stack_opts.kernel_only;
	skel->rodata->targ_kern_stacks = !stack_opts.user_only;
	/* the maps are drained during the run: exits tell when a process's symbols can go */
	skel->rodata->targ_exit_events = true;
	/* user and kernel stacks are stored apart: room for both of every sample key */
	STACK_MAPS_CONFIGURE(skel, 2, false);
	/* event specs' programs read the rows too, and are none of perf_event's */
	stack_run_adopt_early(skel->maps.unwind_rows, env.nr_specs == 0);
	UNWIND_CONFIGURE(skel, stack_opts.unwind, stack_opts.unwind_mem_mb);
	return configure_events(skel);
}

static int attach_sampling(struct profile_bpf *skel, struct sampling *s)
{
	int err;

	for (int i = 0; i < s->nr; i++) {
		/* the cookie says which event a sample is of (5.15+): only needed for several */
		LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = s->events[i]);

		s->links[i] = bpf_program__attach_perf_event_opts(skel->progs.do_sample, s->fds[i],
								  env.nr_sampled > 1 ? &opts : NULL);
		if (!s->links[i]) {
			err = -errno;
			explain_bpf_error("cannot attach to the perf event", err);
			return err;
		}
	}
	for (int e = 0; s->nr && e < env.nr_sampled; e++) {
		if (env.sampled[e].period)
			p_info("sampling %s every %llu event%s on %d CPUs", env.sampled[e].name,
			       (unsigned long long)env.sampled[e].period,
			       env.sampled[e].period == 1 ? "" : "s", s->nr / env.nr_sampled);
		else
			p_info("sampling %s at %llu Hz on %d CPUs", env.sampled[e].name,
			       (unsigned long long)profile_sampling.freq, s->nr / env.nr_sampled);
	}
	return 0;
}

int profile_attach(struct runner *r)
{
	struct profile_bpf *skel = r->skel;
	struct probe_progs p = event_progs(skel);
	int err;

	STACK_MAPS_WARM(skel);
	STACK_RUN_KFIELDS(skel);
	err = runner_attach_skeleton(r);
	if (err)
		return err;
	unwind_attach_syscalls(skel->progs.unwind_syscall, &skel->links.unwind_syscall);
	if (env.filter || env.by)
		err = event_fields_fill(&env.ef, skel->maps.field_tabs);
	if (!err && env.nr_specs)
		err = probe_attach(&p, &env.evs, targets.pids, targets.nr_pids, &r->links);
	return err ?: attach_sampling(skel, &env.sampling);
}

int profile_started(struct runner *r)
{
	struct profile_bpf *skel = r->skel;
	struct unwind_bpf ub = UNWIND_BPF_MAPS(skel);

	return STACK_RUN_DRAIN(&env.sr, skel) ?: stack_run_start(&env.sr, r, &ub,
								 skel->maps.proc_events);
}

int profile_tick(struct runner *r)
{
	struct profile_bpf *skel = r->skel;

	/* The mmap program only prepares mappings for samples to come (the walk finds them in
	 * the kernel's list without it), and its release waits out RCU grace periods: near a
	 * planned end it starts, to be over by the report. */
	if (skel->links.unwind_mmap && stack_run_ending(&env.sr))
		runner_detach_early(r, &skel->links.unwind_mmap);
	return stack_run_tick(&env.sr);
}

/* Sampling stops first, so that the report describes exactly the run. */
void profile_detach(struct runner *r)
{
	struct profile_bpf *skel = r->skel;

	close_sampling(&env.sampling);
	/* Perf events were the only writers (no -e SPEC): closing one removes it from its CPU by a
	 * function call there that waits (perf_remove_from_context(), an IPI), which cannot run
	 * while that CPU is inside the overflow handler, hrtimer or NMI, that runs the program; so
	 * once closed, no run of it is under way and the last drain needs no grace period. */
	env.sr.stopped_in_sync = env.nr_specs == 0;
	/* it only prepares mappings, and its release waits out RCU grace periods */
	runner_detach_later(r, &skel->links.unwind_mmap);
	profile_bpf__detach(skel);
}

struct row_rank {
	__u32 row;
	__u64 samples;
};

static int busiest_first(const void *a, const void *b)
{
	const struct row_rank *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static void free_row_names(void)
{
	for (int i = 0; env.row_names && i < env.nr_names; i++)
		free(env.row_names[i]);
	free(env.row_names);
	env.row_names = NULL;
}

/* --by: the samples' events are the kernel's row numbers past the events' (targ_by_base); they
 * become the keys, busiest first, each named "EVENT FIELD=VALUE,..." for the report's sections
 * and the folded stacks' root frames. */
static int name_rows(struct profile_bpf *skel, struct stack_sample *samples, size_t n)
{
	__u32 base = skel->rodata->targ_by_base, nr = skel->bss->field_rows_next, *rank = NULL;
	struct field_namer nm;
	struct row_rank *rows;
	const char **keys = NULL;
	char *store = NULL, label[512], **names = NULL;
	int err = 0, used = 0;

	field_namer_open(&nm, &env.ef);

	nr = nr < PROFILE_BY_ROWS ? nr : PROFILE_BY_ROWS;
	rows = calloc(nr ?: 1, sizeof(*rows));
	rank = calloc(nr ?: 1, sizeof(*rank));
	if (!rows || !rank) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (__u32 i = 0; i < nr; i++)
		rows[i].row = i;
	for (size_t i = 0; i < n; i++)
		if (samples[i].event >= base && samples[i].event - base < nr)
			rows[samples[i].event - base].samples += samples[i].value;
	qsort(rows, nr, sizeof(*rows), busiest_first);
	while (used < (int)nr && rows[used].samples)
		used++;
	err = event_fields_read_rows(&env.ef, skel->maps.field_rows, nr, &keys, &store);
	names = calloc(used ?: 1, sizeof(*names));
	if (!err && !names)
		err = -ENOMEM;
	for (int i = 0; !err && i < used; i++) {
		const char *key = keys[rows[i].row];

		rank[rows[i].row] = i;
		names[i] = strdup(key ? event_fields_label(&env.ef, &env.evs, key, true,
							   field_namer_name, &nm, label,
							   sizeof(label)) : "?");
		if (!names[i])
			err = -ENOMEM;
	}
	if (err) {
		for (int i = 0; names && i < used; i++)
			free(names[i]);
		free(names);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		samples[i].event = samples[i].event >= base && samples[i].event - base < nr ?
				   rank[samples[i].event - base] : 0;
	/* the names a period before were the rows', or else the events' own array */
	if (env.row_names)
		free_row_names();
	else
		free(env.names);
	env.row_names = names;
	env.names = (const char **)names;
	env.nr_names = used;
	if (skel->bss->field_rows_lost)
		fprintf(stderr, "bpfprof: %llu hits not sampled: more than %d keys of --by %s\n",
			(unsigned long long)skel->bss->field_rows_lost, PROFILE_BY_ROWS, env.by);
cleanup:
	field_namer_close(&nm);
	free(keys);
	free(store);
	free(rows);
	free(rank);
	return err;
}

/* perf's stacks for the same events end at the code that hit the event, so these do. */
static void trim_event_frames(struct stack_sample *samples, size_t n)
{
	for (size_t i = 0; i < n; i++)
		stack_sample_trim_bpf(&samples[i]);
}

int profile_collect(struct runner *r)
{
	struct profile_bpf *skel = r->skel;
	int err;

	/* the last drain: everything counted since the one before */
	err = stack_run_finish(&env.sr);
	if (err)
		return err;
	memcpy(env.lost, (const void *)skel->bss->lost, sizeof(env.lost));
	p_info("%llu samples taken in the kernel", (unsigned long long)skel->bss->samples_seen);
	/* what changes the samples needs them as an array; the report reads the tree otherwise */
	err = env.nr_specs || env.by ? stack_run_samples(&env.sr) : 0;
	if (err)
		return err;
	if (env.nr_specs)
		trim_event_frames(env.sr.samples, env.sr.nr_samples);
	return env.by ? name_rows(skel, env.sr.samples, env.sr.nr_samples) : 0;
}

/* pprof's sample types: for a clock sampled at -F, samples and CPU time (a sample is 1/F s of
 * it, as perf's pprof converters count it); otherwise a count per event, named after it. */
static void pprof_values(struct pprof_meta *m)
{
	int n = env.nr_names;

	if (n == 1 && env.nr_sampled == 1 && env.sampled[0].ev.desc->clock) {
		pprof_meta_counted(m, "cpu", "nanoseconds", env.sampled[0].period ?:
				   1000000000ULL / profile_sampling.freq);
		return;
	}
	memset(m, 0, sizeof(*m));
	if (n > PPROF_MAX_VALUES) {
		/* a glob's many matches: one count for all of them */
		m->values[0] = (struct pprof_value){ "samples", "count", 1, PPROF_ANY_EVENT };
		m->nr_values = 1;
		return;
	}
	/* a sample every N events stands for N of them */
	for (int i = 0; i < n; i++)
		m->values[i] = (struct pprof_value){ env.names[i], "count",
						     i < env.nr_sampled ? env.sampled[i].period : 1,
						     n > 1 ? i : PPROF_ANY_EVENT };
	m->nr_values = n;
}

void profile_outputs(struct runner *r, struct profile_texts *t, struct stack_outputs *out)
{
	const __u64 *lost = env.lost;
	__u64 nr_lost = lost[LOST_STACK_ERR] + lost[LOST_STACKS_FULL] + lost[LOST_STACK_COLLIDED] +
			lost[LOST_COUNTS_FULL];
	double elapsed = stack_run_seconds(&env.sr, r);
	char *detail = t->detail, *title = t->title, *unwound = t->unwound;
	struct stack_outputs o = stack_outputs_from_opts("CPU Flame Graph", REPORT_SAMPLES);

	o.flamegraph.subtitle = title;
	o.flamegraph.count_name = "samples";
	o.flamegraph.palette = PALETTE_HOT;
	o.header.event = env.label;
	o.header.frequency = env.nr_specs ? 0 : sampled_freq();
	o.header.period = env.nr_specs || sampled_freq() ? 0 : env.sampled[0].period;
	o.header.duration_s = elapsed;
	o.header.lost = nr_lost;
	o.header.lost_detail = nr_lost ? detail : NULL;
	o.header.extra = unwound;
	o.event_names = env.names;
	o.nr_events = env.nr_names;
	if ((env.event_root && env.nr_names > 1) || (env.by && env.nr_names))
		o.folded_opts.event_root = o.flamegraph.event_root = env.names;
	/* --by with one key: the report's one section is that key's */
	if (env.by && env.nr_names == 1)
		o.header.event = env.names[0];
	if (clock_events() && !profile_sampling.include_idle)
		o.header.excluded = "the idle task from timer sampling (--include-idle keeps it)";
	snprintf(detail, sizeof(t->detail), "stack capture failed %llu, stack table full %llu, hash "
		 "collisions %llu, count table full %llu",
		 (unsigned long long)lost[LOST_STACK_ERR], (unsigned long long)lost[LOST_STACKS_FULL],
		 (unsigned long long)lost[LOST_STACK_COLLIDED],
		 (unsigned long long)lost[LOST_COUNTS_FULL]);
	unwind_summary_line(env.sr.unwinder, stack_opts.folded, unwound, sizeof(t->unwound));
	if (!unwound[0])
		o.header.extra = NULL;
	if (env.nr_specs || !sampled_freq())
		snprintf(title, sizeof(t->title), "every %s%s, %.1f s%s", env.nr_specs ? "hit of " : "",
			 env.label, elapsed, nr_lost ? ", samples lost" : "");
	else
		snprintf(title, sizeof(t->title), "%s at %llu Hz, %.1f s%s", env.label,
			 (unsigned long long)profile_sampling.freq, elapsed, nr_lost ? ", samples lost" : "");
	pprof_values(&o.pprof);
	stack_pprof_meta(&o, r, title);
	*out = o;
}

static int profile_write(struct runner *r)
{
	struct profile_texts texts;
	struct stack_outputs o;

	profile_outputs(r, &texts, &o);
	return stack_outputs_write(r->out, &o, &env.sr);
}

/* --every: a period's samples, written as the run's are (the losses so far in its header). */
static int profile_period_write(struct runner *r)
{
	struct profile_bpf *skel = r->skel;

	memcpy(env.lost, (const void *)skel->bss->lost, sizeof(env.lost));
	/* what changes the samples needs them as an array, as profile_collect() says */
	if ((env.nr_specs || env.by) && stack_run_samples(&env.sr))
		return -ENOMEM;
	if (env.nr_specs)
		trim_event_frames(env.sr.samples, env.sr.nr_samples);
	return (env.by ? name_rows(skel, env.sr.samples, env.sr.nr_samples) : 0) ?:
	       profile_write(r);
}

static int profile_period(struct runner *r)
{
	return stack_run_period(&env.sr, r, profile_period_write);
}

void profile_teardown(struct runner *r)
{
	stack_run_free(&env.sr);
	close_sampling(&env.sampling);
	probe_events_free(&env.evs);
	event_fields_free(&env.ef);
	free(env.specs);
	free(env.sampled);
	if (env.row_names)
		env.names = NULL; /* the same array */
	free_row_names();
	free(env.names);
	memset(&env, 0, sizeof(env));
	memset(&profile_sampling, 0, sizeof(profile_sampling));
}

void profile_state(struct runner *r, struct profile_state *out)
{
	const volatile __u64 *lost = r->skel ? ((struct profile_bpf *)r->skel)->bss->lost : NULL;

	*out = (struct profile_state){
		.sr = &env.sr,
		.event = env.label,
		.events = env.names,
		.nr_events = env.nr_names,
		.freq = env.nr_specs ? 0 : sampled_freq(),
		.lost = lost ? lost[LOST_STACK_ERR] + lost[LOST_STACKS_FULL] +
			       lost[LOST_STACK_COLLIDED] + lost[LOST_COUNTS_FULL] : 0,
		.trim_bpf_frames = env.nr_specs > 0,
	};
	if (r->skel)
		out->lost += runner_missed_runs(r);
}

const struct command profile_cmd = {
	.name = "profile",
	.summary = "sample on-CPU stacks (report, folded, flame graph)",
	.description =
		"Sample on-CPU stacks at a fixed frequency, counted in the kernel; or, with -e SPEC,\n"
		"take a sample at every hit of a tracepoint or function.",
	.notes = PROFILE_EVENT_NOTES,
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_STACKS | CAP_STACK_OUTPUTS |
		CAP_STACK_FILES | CAP_EVENTS | CAP_PERIODS,
	.positional = POS_DURATION,
	.opts = profile_opts,
	PROFILE_RUN_HOOKS,
	.check = profile_check,
	.period = profile_period,
	.write = profile_write,
	.teardown = profile_teardown,
};
