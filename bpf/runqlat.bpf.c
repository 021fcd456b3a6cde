// SPDX-License-Identifier: GPL-2.0
/* Run-queue latency: the time from a task becoming runnable (woken, or preempted while still
 * runnable) until it runs on a CPU, counted into histograms in the kernel.
 *
 * Two ways to time a wait, chosen by the loader: the kernel's own accounting (targ_sched_info:
 * sched_switch alone reads when the task switched in was queued, schedtp.bpf.h), or a clock read
 * by the wakeup programs and at sched_switch.  Two flavours of the programs: tp_btf ones that
 * keep each task's state in task storage (a pointer away from the task_struct the tracepoint
 * hands over: no hash lookup on the hot path), and raw_tp ones that keep it in a hash keyed by
 * TID for kernels without tp_btf or task storage. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "errno.bpf.h"
#include "runqlat.h"
#include "schedtp.bpf.h"
#include "heatmap.bpf.h"

const volatile __u32 targ_key = RUNQLAT_BY_NONE;
const volatile bool targ_ms = false;

struct rq_start {
	__u64 ts;             /* wakeup programs: runnable since, or 0 */
	struct sched_wait w;  /* targ_sched_info */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rq_start);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct rq_start);
} start_hash SEC(".maps");

/* The single histogram: one copy per CPU, so no atomics. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct runqlat_hist);
} hist SEC(".maps");

/* -P / -L / --pidnss: a histogram per key, shared by the CPUs.  Allocated on first use: at 2 KiB
 * each, preallocating the table would pin megabytes for nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct runqlat_hist);
} hists SEC(".maps");

__u64 lost[RUNQLAT_LOST_REASONS];
/* the waits of RUNQLAT_LOST_UNSEEN, in all */
__u64 unseen_ns;
/* Copied into `hists` for a new key; never written. */
struct runqlat_hist zero_hist;

static __always_inline void count_lost(enum runqlat_lost why)
{
	if (why < RUNQLAT_LOST_REASONS)
		__sync_fetch_and_add(&lost[why], 1);
}

static __always_inline __u32 hist_key(struct task_struct *t, bool btf)
{
	switch (targ_key) {
	case RUNQLAT_BY_TGID:
		return task_tgid(t, btf);
	case RUNQLAT_BY_PID:
		return task_pid(t, btf);
	default:
		return task_pidns_inum(t);
	}
}

static __always_inline struct runqlat_hist *new_hist(struct task_struct *t, __u32 key)
{
	struct runqlat_hist *h;
	int err;

	err = bpf_map_update_elem(&hists, &key, &zero_hist, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_lost(RUNQLAT_LOST_HISTS_FULL);
		return NULL;
	}
	h = bpf_map_lookup_elem(&hists, &key);
	if (h && !err) {
		/* -P names the process after its main thread, as ps does */
		if (targ_key == RUNQLAT_BY_TGID)
			BPF_CORE_READ_STR_INTO(&h->comm, t, group_leader, comm);
		else
			BPF_CORE_READ_STR_INTO(&h->comm, t, comm);
	}
	return h;
}

static __always_inline void record(struct task_struct *t, __u64 delta_ns, __u64 now, bool btf)
{
	__u64 slot = hist_ns_slot(delta_ns);
	struct runqlat_hist *h;
	__u32 key = 0;

	if (targ_key == RUNQLAT_BY_NONE) {
		h = bpf_map_lookup_elem(&hist, &key);
		if (!h)
			return;
		h->slots[slot]++;
		h->sum_ns += delta_ns;
	} else {
		key = hist_key(t, btf);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h)
			h = new_hist(t, key);
		if (!h)
			return;
		__sync_fetch_and_add(&h->slots[slot], 1);
		__sync_fetch_and_add(&h->sum_ns, delta_ns);
	}
	if (targ_heatmap)
		heatmap_add(now, targ_ms ? delta_ns / 1000000 : delta_ns / 1000);
}

/* sched_wakeup / sched_wakeup_new: p is on a run queue from now, unless it already was (then the
 * earlier time stands, as in the kernel's own run_delay) or is on a CPU. */
static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	struct rq_start *s, v = {};
	__u32 pid;
	int err;

	if (!wanted(p, btf) || task_on_cpu(p, btf))
		return 0;
	if (btf) {
		s = bpf_task_storage_get(&start, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s) {
			count_lost(RUNQLAT_LOST_START);
			return 0;
		}
		if (!s->ts)
			s->ts = bpf_ktime_get_ns();
		return 0;
	}
	pid = task_pid(p, btf);
	v.ts = bpf_ktime_get_ns();
	err = bpf_map_update_elem(&start_hash, &pid, &v, BPF_NOEXIST);
	if (err && err != -EEXIST)
		count_lost(RUNQLAT_LOST_START);
	return 0;
}

/* Ends the wait of a task being switched in: returns since when it waited, or 0. */
static __always_inline __u64 take_start(struct task_struct *t, bool btf)
{
	struct rq_start *s;
	__u32 pid;
	__u64 ts;

	if (btf) {
		s = bpf_task_storage_get(&start, t, 0, 0);
		if (!s)
			return 0;
		ts = s->ts;
		s->ts = 0;
		return ts;
	}
	pid = task_pid(t, btf);
	s = bpf_map_lookup_elem(&start_hash, &pid);
	if (!s)
		return 0;
	ts = s->ts;
	bpf_map_delete_elem(&start_hash, &pid);
	return ts;
}

/* A preempted task waits from now (it was running: no earlier time to keep). */
static __always_inline void set_start(struct task_struct *t, __u64 now, bool btf)
{
	struct rq_start *s, v = { .ts = now };
	__u32 pid;

	if (btf) {
		s = bpf_task_storage_get(&start, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s)
			s->ts = now;
		else
			count_lost(RUNQLAT_LOST_START);
		return;
	}
	pid = task_pid(t, btf);
	if (bpf_map_update_elem(&start_hash, &pid, &v, BPF_ANY))
		count_lost(RUNQLAT_LOST_START);
}

/* A task's state for targ_sched_info, created on first use (zeroed: see sched_wait_end()). */
static __always_inline struct sched_wait *wait_state(struct task_struct *t, bool btf)
{
	struct rq_start *s, zero = {};
	__u32 pid;
	int err;

	if (btf) {
		s = bpf_task_storage_get(&start, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		return s ? &s->w : NULL;
	}
	pid = task_pid(t, btf);
	s = bpf_map_lookup_elem(&start_hash, &pid);
	if (s)
		return &s->w;
	err = bpf_map_update_elem(&start_hash, &pid, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return NULL;
	s = bpf_map_lookup_elem(&start_hash, &pid);
	return s ? &s->w : NULL;
}

/* sched_switch with targ_sched_info: the wait of next, if it was queued, ends; prev's, if it
 * stays runnable, is stamped by the kernel right after.  The raw flavour's hash forgets a task
 * at its last switch-out (task storage goes with the task). */
static __always_inline int switch_sched_info(unsigned long long *ctx, struct task_struct *prev,
					     struct task_struct *next, bool btf)
{
	struct sched_wait *w;
	__u64 lq, now, d, missed, missed_ns;
	__u32 pid;

	if (!btf && (sched_prev_state(ctx, prev) & TASK_DEAD) && wanted(prev, btf)) {
		pid = task_pid(prev, btf);
		bpf_map_delete_elem(&start_hash, &pid);
	}
	if (!wanted(next, btf) || !(lq = task_last_queued(next, btf)))
		return 0;
	now = task_rq_clock(next, btf);
	w = wait_state(next, btf);
	if (!w) {
		count_lost(RUNQLAT_LOST_START);
		return 0;
	}
	d = sched_wait_end(next, lq, now, w, &missed, &missed_ns, btf);
	if (missed) {
		__sync_fetch_and_add(&lost[RUNQLAT_LOST_UNSEEN], missed);
		__sync_fetch_and_add(&unseen_ns, missed_ns);
	}
	/* the heat map's columns are CLOCK_MONOTONIC's, the clock's only reader here */
	record(next, d, targ_heatmap ? bpf_ktime_get_ns() : 0, btf);
	return 0;
}

/* sched_switch: a prev still TASK_RUNNING was preempted and waits from now; next's wait ends.
 * The clock, the costliest part here, is read only when one of them needs it. */
static __always_inline int on_switch(unsigned long long *ctx, struct task_struct *prev,
				     struct task_struct *next, bool btf)
{
	bool enqueue_prev;
	__u64 ts, now;

	if (targ_sched_info)
		return switch_sched_info(ctx, prev, next, btf);
	enqueue_prev = sched_prev_state(ctx, prev) == TASK_RUNNING && wanted(prev, btf);
	ts = wanted(next, btf) ? take_start(next, btf) : 0;
	if (!enqueue_prev && !ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (enqueue_prev)
		set_start(prev, now, btf);
	if (ts && now > ts)
		record(next, now - ts, now, btf);
	return 0;
}

SCHEDTP_PROGRAMS(on_switch, on_wakeup)

/* Run by user space before attaching: gives every task of interest its storage now, in process
 * context.  Created on the hot path instead, a burst of first wakeups (a signal waking every
 * thread of a process, with interrupts off) can outrun the allocator's per-CPU cache, whose
 * refill waits for interrupts to be enabled, and those enqueue times would be lost. */
SEC("iter/task")
int prefill(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct rq_start *s;

	if (!t || !wanted(t, true))
		return 0;
	s = bpf_task_storage_get(&start, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		count_lost(RUNQLAT_LOST_PREFILL);
	else if (targ_sched_info)
		sched_wait_seed(t, &s->w);
	return 0;
}

/* The same for the raw_tp flavour's hash, with sched_info: each task's run_delay and pcount now,
 * the baseline of its first wait seen.  Without it that wait's part before a move to another CPU
 * was lost (the totals fell short of schedstat's by a few ms, the unpinned thread's first wait
 * after the start: 1 run in 15 here). */
SEC("iter/task")
int prefill_hash(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct rq_start v = {};
	__u32 pid;

	if (!t || !targ_sched_info || !wanted(t, true))
		return 0;
	sched_wait_seed(t, &v.w);
	pid = task_pid(t, true);
	if (bpf_map_update_elem(&start_hash, &pid, &v, BPF_NOEXIST))
		count_lost(RUNQLAT_LOST_PREFILL);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
