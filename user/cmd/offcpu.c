// SPDX-License-Identifier: GPL-2.0
/* bpfprof offcpu: time threads spend blocked, by the stack where they blocked (and, with --waker,
 * by who woke them), summed in the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/features.h"
#include "core/period.h"
#include "core/runner.h"
#include "core/stackrun.h"
#include "kstack.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "unwind/kernstack.h"

RUNNER_SKELETON(offcpu);

static int opt_state(const char *arg);

/* The run's bounds, and what the end-of-run walk added to the counts. */
struct run_bounds {
	__u64 start, end;
	int counts_fd;
	__u64 added, dropped;
};

/* Where the stacks of threads still blocked are kept across a drain (keep_pending_stacks()). */
struct keep_ctx {
	struct offcpu_bpf *skel;
	int stacks_fd;
	__u32 gen;
	void *buf;     /* one stored stack */
	__u64 copied, missing;
};

static struct offcpu_env {
	__u32 states;
	__u64 min_us, max_us;
	bool max_set;
	bool waker;
	/* per-thread records in task storage (tp_btf); false: the raw_tp fallback with a hash map,
	 * where blocks that began before the run cannot be found */
	bool use_task_storage;
	struct stack_run sr;
	struct run_bounds bounds;
	struct keep_ctx keep;
} env;

static const struct opt offcpu_opts[] = {
	{ 0, "state", "STATE", "which waits count: S (interruptible sleep), D\n"
	  "(uninterruptible, mostly disk I/O), R (preempted, waiting for\n"
	  "a CPU); letters combine (SD); 'any': every state.  Default:\n"
	  "every blocked state (not R)", OPT_FN, .fn = opt_state },
	{ 'm', "min-block-time", "US", "count only blocks of at least US microseconds", OPT_U64,
	  &env.min_us, 0, UINT64_MAX / 1000, .what = "-m", .hint = "expected microseconds" },
	{ 'M', "max-block-time", "US", "count only blocks of at most US microseconds", OPT_U64,
	  &env.max_us, 1, UINT64_MAX / 1000, .what = "-M",
	  .hint = "expected microseconds, at least 1" },
	{ 0, "waker", NULL, "also record who woke each thread (waker comm and stacks)", OPT_FLAG,
	  &env.waker },
	{},
};

/* "S", "D", "R", combinations ("SD"), or "any". */
static int opt_state(const char *arg)
{
	__u32 mask = 0;

	if (!strcmp(arg, "any")) {
		env.states = OFFCPU_STATE_ANY;
		return 0;
	}
	for (const char *s = arg; *s && mask != ~0U; s++) {
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
			mask = ~0U; /* not a state letter */
		}
	}
	if (!mask || mask == ~0U) {
		p_err("invalid --state '%s' (expected S, D, R, a combination such as SD, or any)", arg);
		return -EINVAL;
	}
	env.states = mask;
	return 0;
}

/* Runs the task iterator once (iter_phase chooses what it does); calls fn for each record it
 * writes out.  The iterator is attached for the walk only: it must outlive the detach of the
 * tracing programs, which the end-of-run walk follows. */
static int run_iterator(struct offcpu_bpf *skel, __u32 phase,
			int (*fn)(const struct offcpu_rec *rec, void *ctx), void *ctx)
{
	struct bpf_link *link;
	struct offcpu_rec rec;
	size_t got = 0;
	ssize_t n;
	int fd = -1, err = 0;

	skel->bss->iter_phase = phase;
	link = bpf_program__attach_iter(skel->progs.walk_tasks, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	if (fd < 0) {
		err = -errno;
		p_err("cannot run the task iterator: %s", strerror(-err));
		bpf_link__destroy(link);
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
	bpf_link__destroy(link);
	if (err)
		p_err("cannot read the task iterator: %s", strerror(-err));
	return err;
}


/* Stack id under generation gen, its frames copied there from the other one where they are not
 * there yet: what bpf/stacks.bpf.h's stack_in_gen() does for a block that ends. */
static __u64 stack_in_gen(struct keep_ctx *k, __u64 id, __u32 gen)
{
	__u64 want = (id & ~1ULL) | (gen & 1), other = want ^ 1;

	if (!id || !bpf_map_lookup_elem(k->stacks_fd, &want, k->buf))
		return id ? want : 0;
	if (bpf_map_lookup_elem(k->stacks_fd, &other, k->buf)) {
		k->missing++;
	} else if (!bpf_map_update_elem(k->stacks_fd, &want, k->buf, BPF_NOEXIST)) {
		/* counted as the BPF side's inserts are: how full the map is decides the drains */
		__atomic_fetch_add(&k->skel->bss->stacks_stored, 1, __ATOMIC_RELAXED);
		k->copied++;
	}
	return want;
}

/* The key's stacks under generation gen. */
static void key_to_gen(struct keep_ctx *k, struct offcpu_key *key, __u32 gen)
{
	key->base.user_stack = stack_in_gen(k, key->base.user_stack, gen);
	key->base.kern_stack = stack_in_gen(k, key->base.kern_stack, gen);
	key->waker_user_stack = stack_in_gen(k, key->waker_user_stack, gen);
	key->waker_kern_stack = stack_in_gen(k, key->waker_kern_stack, gen);
	key->base.gen = gen & 1;
}

static int keep_pending(const struct offcpu_rec *rec, void *ctx)
{
	struct keep_ctx *k = ctx;
	struct offcpu_key key = rec->key;

	if (rec->ts)
		key_to_gen(k, &key, k->gen);
	return 0;
}

/* After a flip, before the old generation's stacks are deleted: a thread blocked since before
 * the flip is counted at its switch-in, with the stacks of its switch-out, which must outlive
 * the drain.  Every record open now was written before the flip (programs are waited out) or
 * names stacks of the new generation already. */
static int keep_pending_stacks(void *ctx, __u32 gen)
{
	struct keep_ctx *k = ctx;
	__u32 pid, *prev = NULL;
	struct offcpu_rec rec;
	int fd;

	k->gen = gen;
	if (env.use_task_storage)
		return run_iterator(k->skel, 1, keep_pending, k);
	fd = bpf_map__fd(k->skel->maps.pid_recs);
	while (bpf_map_get_next_key(fd, prev, &pid) == 0) {
		prev = &pid;
		if (!bpf_map_lookup_elem(fd, &pid, &rec))
			keep_pending(&rec, k);
	}
	return 0;
}

/* A thread still blocked at the end: its block is counted up to the end of the run, in the
 * generation the last drains read. */
static int add_pending(const struct offcpu_rec *rec, void *ctx)
{
	struct run_bounds *rb = ctx;
	__u64 delta = offcpu_clip(rec->ts, 0, rb->start, rb->end, env.min_us * 1000,
				  env.max_us * 1000);
	struct offcpu_key key = rec->key;
	__u64 val = 0;

	if (!rec->ts || !delta)
		return 0;
	key_to_gen(&env.keep, &key, env.keep.skel->bss->drain_gen);
	bpf_map_lookup_elem(rb->counts_fd, &key, &val);
	val += delta;
	if (bpf_map_update_elem(rb->counts_fd, &key, &val, BPF_ANY))
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

	/* ns, as the kernel counts (the report rounds to microseconds: in_microseconds()) */
	err = stack_sample_fill(r, stacks_fd, &key->base, value, out);
	out->nr_frames = stack_frames_trim_bpf(out->frames, out->nr_frames);
	if (!err && (key->flags & OFFCPU_BEFORE_RUN) && !stack_opts.kernel_only) {
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

/* The drained samples (ns) in microseconds, rounded, for the report, folded stacks and flame
 * graph; entries that round to 0 us are left out: a folded line "stack 0" helps nobody.  A
 * shallow copy (the frames stay the aggregation's); NULL on ENOMEM. */
static struct stack_sample *in_microseconds(const struct stack_sample *s, size_t n, size_t *kept)
{
	struct stack_sample *us = malloc((n ?: 1) * sizeof(*us));

	*kept = 0;
	for (size_t i = 0; us && i < n; i++) {
		us[*kept] = s[i];
		us[*kept].value = (s[i].value + 500) / 1000;
		*kept += us[*kept].value != 0;
	}
	return us;
}

/* Blocks lost in the kernel and at the end-of-run walk: their total, and the detail in buf. */
static __u64 count_lost(struct offcpu_bpf *skel, const struct run_bounds *b, char *buf,
			size_t size)
{
	__u64 lost[LOST_REASONS], recs_lost = skel->bss->recs_lost;

	memcpy(lost, (const void *)skel->bss->lost, sizeof(lost));
	lost[LOST_COUNTS_FULL] += b->dropped;
	snprintf(buf, size, "stack capture failed %llu, stack table full %llu, hash collisions %llu, "
		 "count table full %llu, thread records unavailable %llu",
		 (unsigned long long)lost[LOST_STACK_ERR], (unsigned long long)lost[LOST_STACKS_FULL],
		 (unsigned long long)lost[LOST_STACK_COLLIDED],
		 (unsigned long long)lost[LOST_COUNTS_FULL], (unsigned long long)recs_lost);
	return lost[LOST_STACK_ERR] + lost[LOST_STACKS_FULL] + lost[LOST_STACK_COLLIDED] +
	       lost[LOST_COUNTS_FULL] + recs_lost;
}

/* The report or folded stacks to stdout or -o, and the SVG. */
static int offcpu_write(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	struct run_bounds *b = &env.bounds;
	/* a period's, with --every (the run's end is only known at its end) */
	double elapsed = period_opts.every ? stack_run_seconds(&env.sr, r) : (b->end - b->start) / 1e9;
	char lost_detail[256];
	__u64 nr_lost = count_lost(skel, b, lost_detail, sizeof(lost_detail));
	char subtitle[160], note[1024], unwound[512];
	struct stack_run view = env.sr;
	int err;
	struct stack_outputs o = stack_outputs_from_opts("Off-CPU Time Flame Graph", REPORT_TIME_US);

	o.flamegraph.subtitle = subtitle;
	o.flamegraph.count_name = "us";
	o.flamegraph.palette = PALETTE_COOL;
	o.header.event = "sched_switch (off-CPU)";
	o.header.duration_s = elapsed;
	o.header.lost = nr_lost;
	o.header.lost_detail = nr_lost ? lost_detail : NULL;
	o.header.extra = note;
	o.lost_what = "blocks";
	snprintf(subtitle, sizeof(subtitle), "off-CPU time, %.1f s%s", elapsed,
		 nr_lost ? ", blocks lost" : "");
	snprintf(note, sizeof(note), "Off-CPU time in ms; %s; threads still blocked at the end "
		 "counted up to the end%s",
		 env.use_task_storage ? "blocks in progress at the start counted from the start "
				    "([blocked before start]: user stack unknown)" :
				    "blocks in progress at the start not counted (no task storage)",
		 env.waker ? "; second level: woken by COMM" : "");
	unwind_summary_line(env.sr.unwinder, stack_opts.folded, unwound, sizeof(unwound));
	/* the header has one free line: the unwinder's goes on the next */
	if (unwound[0])
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "\n# %s", unwound);
	/* the samples' values are microseconds (in_microseconds()) */
	o.pprof.values[0] = (struct pprof_value){ "offcpu", "nanoseconds", 1000, PPROF_ANY_EVENT };
	o.pprof.nr_values = 1;
	stack_pprof_meta(&o, r, subtitle);
	o.pprof.duration_nanos = b->end - b->start;
	err = stack_run_samples(&env.sr);
	if (err)
		return err;
	view.samples = in_microseconds(env.sr.samples, env.sr.nr_samples, &view.nr_samples);
	if (!view.samples) {
		p_err("cannot write the output: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	err = stack_outputs_write(r->out, &o, &view);
	free(view.samples);
	return err;
}


static int offcpu_check(struct runner *r)
{
	if (!env.states)
		env.states = OFFCPU_STATE_BLOCKED;
	if (env.max_us && env.min_us > env.max_us) {
		p_err("-m %llu is greater than -M %llu: no block could be counted",
		      (unsigned long long)env.min_us, (unsigned long long)env.max_us);
		return -EINVAL;
	}
	return stack_run_init(&env.sr);
}

static int offcpu_configure(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	/* (preempt, prev, next, prev_state) since 5.18; prev_state is read from prev before */
	bool has_prev_state = feat_tp_nr_args("sched_switch") >= 4;
	bool storage = feat_tp_btf("sched_switch") && feat_task_storage();

	/* filters, bounds and stack choices are read-only globals, fixed before load */
	skel->rodata->targ_states = env.states;
	skel->rodata->targ_min_ns = env.min_us * 1000;
	skel->rodata->targ_max_ns = env.max_us * 1000;
	skel->rodata->targ_user_stacks = !stack_opts.kernel_only;
	skel->rodata->targ_kern_stacks = !stack_opts.user_only;
	skel->rodata->targ_prev_state_arg = has_prev_state;
	/* kernel stacks walked in BPF where the programs are tp_btf (typed task pointers); tests
	 * compare every walk with bpf_get_stack() (BPFPROF_KSTACK_CHECK) or turn it off */
	skel->rodata->targ_kstack = storage && !stack_opts.user_only &&
				    !getenv("BPFPROF_NO_KSTACK_WALK");
	if (getenv("BPFPROF_KSTACK_CHECK"))
		skel->rodata->targ_kstack_check_every = 1;
	/* the maps are drained during the run: exits tell when a process's symbols can go */
	skel->rodata->targ_exit_events = true;
	/* target and waker, user and kernel: room for four stacks per key */
	/* a block's stacks are copied from the generation a drain deletes (stack_in_gen()) */
	STACK_MAPS_CONFIGURE(skel, env.waker ? 4 : 2, true);
	stack_run_adopt_early(skel->maps.unwind_rows, false);
	UNWIND_CONFIGURE(skel, stack_opts.unwind, stack_opts.unwind_mem_mb);

	env.use_task_storage = storage;
	p_info("sched_switch: %s; prev_state %s", storage ?
	       "tp_btf, per-thread records in task storage" :
	       "raw_tp, per-thread records in a hash map (no tp_btf or task storage here)",
	       has_prev_state ? "from the tracepoint" : "read from the task");
	bpf_program__set_autoload(skel->progs.switch_btf, storage);
	bpf_program__set_autoload(skel->progs.switch_raw, !storage);
	bpf_program__set_autoload(skel->progs.waking_btf, env.waker && storage);
	bpf_program__set_autoload(skel->progs.waking_raw, env.waker && !storage);
	bpf_program__set_autoload(skel->progs.walk_tasks, storage);
	/* run on demand (run_iterator), before and after the run */
	bpf_program__set_autoattach(skel->progs.walk_tasks, false);
	if (storage)
		bpf_map__set_max_entries(skel->maps.pid_recs, 1);
	else
		bpf_map__set_autocreate(skel->maps.recs, false);
	return 0;
}

static int offcpu_attach(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	int err;

	env.bounds.start = r->start_ns;
	/* blocks are clipped to [run start, run end]: the start is before the first switch-out
	 * the probes can see */
	skel->bss->run_start = r->start_ns;
	STACK_MAPS_WARM(skel);
	STACK_RUN_KFIELDS(skel);
	err = runner_attach_skeleton(r);
	if (err)
		return err;
	unwind_attach_syscalls(skel->progs.unwind_syscall, &skel->links.unwind_syscall);
	/* threads blocked before the probes were attached: counted from the start */
	return env.use_task_storage ? run_iterator(skel, 0, NULL, NULL) : 0;
}

static int offcpu_started(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	struct unwind_bpf ub = UNWIND_BPF_MAPS(skel);
	int err;

	env.keep.skel = skel;
	env.keep.stacks_fd = bpf_map__fd(skel->maps.stacks);
	env.keep.buf = malloc(bpf_map__value_size(skel->maps.stacks));
	if (!env.keep.buf) {
		p_err("cannot set up draining: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	err = STACK_RUN_DRAIN(&env.sr, skel);
	if (err)
		return err;
	if (skel->rodata->targ_kstack)
		env.sr.kstack = &skel->bss->kstack_cfg;
	stack_run_drain_keys(&env.sr, fill_offcpu, NULL, keep_pending_stacks, &env.keep);
	return stack_run_start(&env.sr, r, &ub, skel->maps.proc_events);
}

static int offcpu_tick(struct runner *r)
{
	return stack_run_tick(&env.sr);
}

/* The switch and wakeup programs go first, and what they counted ends then: the others' links
 * (exec, exit, fork, mmap) take their time going, and threads still blocked at the end would be
 * charged it.  The mmap() tracepoint's (tens of ms of RCU grace periods) goes on a thread. */
static void offcpu_detach(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	struct bpf_link **counting[] = { &skel->links.switch_btf, &skel->links.switch_raw,
					 &skel->links.waking_btf, &skel->links.waking_raw };

	for (size_t i = 0; i < sizeof(counting) / sizeof(counting[0]); i++) {
		bpf_link__destroy(*counting[i]);
		*counting[i] = NULL;
	}
	env.bounds.end = now_ns();
	runner_detach_later(r, &skel->links.unwind_mmap);
	offcpu_bpf__detach(skel);
}

/* -v: how kernel stacks were taken. */
static void report_kstack(struct offcpu_bpf *skel)
{
	struct kstack_counts c;
	char line[512];

	if (!skel->rodata->targ_kstack ||
	    kstack_counts_read(bpf_map__fd(skel->maps.kstack_walks),
			       bpf_map__value_size(skel->maps.kstack_walks), &c))
		return;
	kstack_counts_line(&c, line, sizeof(line));
	if (line[0])
		p_info("%s", line);
}

static int offcpu_collect(struct runner *r)
{
	struct offcpu_bpf *skel = r->skel;
	struct run_bounds *b = &env.bounds;
	int err;

	b->counts_fd = bpf_map__fd(skel->maps.counts);
	/* threads still blocked: counted up to the end */
	if (env.use_task_storage)
		err = run_iterator(skel, 1, add_pending, b);
	else
		err = add_pending_from_hash(bpf_map__fd(skel->maps.pid_recs), b);
	if (err)
		return err;
	p_info("%llu threads still blocked at the end, counted up to the end; stacks of blocked "
	       "threads kept across drains %llu times (%llu gone)", (unsigned long long)b->added,
	       (unsigned long long)env.keep.copied, (unsigned long long)env.keep.missing);
	report_kstack(skel);
	/* the last drains: everything counted since the one before, and the blocks just added */
	return stack_run_finish(&env.sr);
}

static int offcpu_period(struct runner *r)
{
	return stack_run_period(&env.sr, r, offcpu_write);
}

static void offcpu_teardown(struct runner *r)
{
	stack_run_free(&env.sr);
	free(env.keep.buf);
	memset(&env, 0, sizeof(env));
}

const struct command offcpu_cmd = {
	.name = "offcpu",
	.summary = "off-CPU time by blocking stack, with wakers (report, folded, flame graph)",
	.description =
		"Time threads spend blocked (off-CPU), by the user and kernel stack where they\n"
		"blocked, summed in the kernel.",
	.caps = CAP_SYMBOLS | CAP_THREAD_KIND | CAP_STACKS | CAP_STACK_OUTPUTS | CAP_STACK_FILES |
		CAP_PERIODS,
	.positional = POS_DURATION,
	.opts = offcpu_opts,
	.skel = &offcpu_skel,
	.check = offcpu_check,
	.configure = offcpu_configure,
	.fallback = stack_run_fallback,
	.attach = offcpu_attach,
	.started = offcpu_started,
	.tick = offcpu_tick,
	.period = offcpu_period,
	.detach = offcpu_detach,
	.collect = offcpu_collect,
	.write = offcpu_write,
	.teardown = offcpu_teardown,
};
