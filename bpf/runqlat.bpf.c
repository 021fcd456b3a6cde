// SPDX-License-Identifier: GPL-2.0
/* Run-queue latency: the time from a task becoming runnable (woken, or preempted while still
 * runnable) until it runs on a CPU, counted into histograms in the kernel.
 *
 * Two flavours of the same three programs, chosen by the loader: tp_btf programs that keep each
 * task's enqueue time in task storage (a pointer away from the task_struct the tracepoint hands
 * over: no hash lookup on the hot path), and raw_tp programs that keep it in a hash keyed by TID
 * for kernels without tp_btf or task storage. */
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
	__u64 ts; /* runnable since, or 0 */
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
	__type(value, __u64);
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
	struct rq_start *s;
	__u32 pid;
	__u64 ts;
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
	ts = bpf_ktime_get_ns();
	err = bpf_map_update_elem(&start_hash, &pid, &ts, BPF_NOEXIST);
	if (err && err != -EEXIST)
		count_lost(RUNQLAT_LOST_START);
	return 0;
}

/* Ends the wait of a task being switched in: returns since when it waited, or 0. */
static __always_inline __u64 take_start(struct task_struct *t, bool btf)
{
	struct rq_start *s;
	__u64 ts, *tsp;
	__u32 pid;

	if (btf) {
		s = bpf_task_storage_get(&start, t, 0, 0);
		if (!s)
			return 0;
		ts = s->ts;
		s->ts = 0;
		return ts;
	}
	pid = task_pid(t, btf);
	tsp = bpf_map_lookup_elem(&start_hash, &pid);
	if (!tsp)
		return 0;
	ts = *tsp;
	bpf_map_delete_elem(&start_hash, &pid);
	return ts;
}

/* A preempted task waits from now (it was running: no earlier time to keep). */
static __always_inline void set_start(struct task_struct *t, __u64 now, bool btf)
{
	struct rq_start *s;
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
	if (bpf_map_update_elem(&start_hash, &pid, &now, BPF_ANY))
		count_lost(RUNQLAT_LOST_START);
}

/* sched_switch: a prev still TASK_RUNNING was preempted and waits from now; next's wait ends.
 * The clock, the costliest part here, is read only when one of them needs it. */
static __always_inline int on_switch(unsigned long long *ctx, struct task_struct *prev,
				     struct task_struct *next, bool btf)
{
	bool enqueue_prev = sched_prev_state(ctx, prev) == TASK_RUNNING && wanted(prev, btf);
	__u64 ts = wanted(next, btf) ? take_start(next, btf) : 0, now;

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

	if (t && wanted(t, true) && !bpf_task_storage_get(&start, t, 0,
							   BPF_LOCAL_STORAGE_GET_F_CREATE))
		count_lost(RUNQLAT_LOST_PREFILL);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
