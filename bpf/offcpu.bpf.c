// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time by stack: at a thread's switch-out record when and where (stacks) it blocked; at
 * its switch-in add the time it was away to that (process, thread, comm, stacks[, waker]) key,
 * summed in the kernel.  Every filter runs before any stack is captured.
 *
 * Per-thread records live in BPF task storage (one pointer away from the task, no hash lookup, no
 * lock, no delete per switch) where sched_switch can be attached as tp_btf, which gives typed task
 * pointers; otherwise (raw_tp) in a hash map keyed by thread id.  An iterator over every task
 * finds the threads already blocked when the run starts and those still blocked when it ends. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "core_fixes.bpf.h"
#include "errno.bpf.h"
#include "offcpu.h"
#include "stacks.bpf.h"
#include "kstack.bpf.h"
#include "target.bpf.h"
#include "unwind.bpf.h"

/* Settings, fixed before load. */
const volatile __u32 targ_states = OFFCPU_STATE_BLOCKED;
const volatile __u64 targ_min_ns = 0;
const volatile __u64 targ_max_ns = 0; /* 0: no bound */
const volatile bool targ_user_stacks = true;
const volatile bool targ_kern_stacks = true;
/* sched_switch passes prev_state (core_fixes.bpf.h: switch_prev_state()) */
const volatile bool targ_prev_state_arg = true;

/* Set by user space before attaching: blocks are clipped to the run. */
__u64 run_start;
/* 0: the iterator records threads already blocked; 1: it dumps the records still open. */
__u32 iter_phase;
/* Blocks not recorded because no per-thread record could be made (map full, no memory). */
__u64 recs_lost;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-stacks, set by the loader */
	__type(key, struct offcpu_key);
	__type(value, __u64); /* ns */
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_rec);
} recs SEC(".maps");

/* The record the start-of-run iterator builds before publishing it whole. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_rec);
} seed SEC(".maps");

/* raw_tp fallback only (the loader shrinks it otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct offcpu_rec);
} pid_recs SEC(".maps");

static __always_inline struct offcpu_rec *rec_lookup(struct task_struct *t, __u32 pid, bool btf)
{
	if (btf)
		return bpf_task_storage_get(&recs, t, 0, 0);
	return bpf_map_lookup_elem(&pid_recs, &pid);
}

/* The cheap checks (pid, state, target bits) before anything costly; then the cgroup (current:
 * at a switch-out t is the task switching) and the thread kind.  *kthread is read only when
 * -u/-k or user stacks need it. */
static __always_inline bool wanted(__u32 tgid, __u32 pid, __u32 state_class,
				   struct task_struct *t, bool btf, bool is_current, bool *kthread)
{
	if (pid == 0 || !(targ_states & state_class) || !target_ids_wanted(tgid, pid))
		return false;
	if (target.filter_cgroup &&
	    !(is_current ? target_current_cgroup_wanted() : task_in_cgroup(t, target.cgroup_id)))
		return false;
	*kthread = (targ_user_stacks || target.threads != TARGET_THREADS_ALL) &&
		   (TASK_READ(btf, t, flags) & OFFCPU_PF_KTHREAD);
	return target_kind_wanted(*kthread);
}

static __always_inline int capture_user_stack(void *ctx, __u32 tgid, __u64 now, __u64 *id,
					      bool btf)
{
	/* --unwind eh/auto: from the task's saved user registers, by the call-frame tables */
	if (targ_unwind != UNWIND_FP)
		return unwind_current_user_stack(ctx, tgid, now, id);
#if defined(__TARGET_ARCH_x86)
	/* its walk starts from bpf_task_pt_regs(): 5.15+, while tp_btf and task storage are 5.11+ */
	if (btf && targ_unwind_task_regs)
		return capture_user_stack_fp(ctx, id);
#endif
	return capture_stack(ctx, BPF_F_USER_STACK, id);
}

/* The clock is read once per switch, and only when a block starts (switch_out(), before its
 * stacks) or ends. */
static __always_inline __u64 switch_time(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u32 state_class,
				       __u64 *now, bool btf)
{
	__u32 tgid = TASK_READ(btf, prev, tgid), pid = TASK_READ(btf, prev, pid);
	__u64 ustack = 0, kstack = 0;
	struct offcpu_rec *r, tmp;
	bool kthread;
	__u32 seq;

	if (!wanted(tgid, pid, state_class, prev, btf, true, &kthread))
		return;
	seq = drain_seq_begin();
	if (btf) {
		r = bpf_task_storage_get(&recs, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!r) {
			__sync_fetch_and_add(&recs_lost, 1);
			return;
		}
	} else {
		r = &tmp;
	}
	/* the block starts now (and the thread switching in stops waiting at the same instant) */
	*now = bpf_ktime_get_ns();
	/* Kernel threads have no user stack; asking would only cost a failed walk. */
	if (targ_user_stacks && !kthread && capture_user_stack(ctx, tgid, *now, &ustack, btf))
		return;
	if (targ_kern_stacks && (btf ? capture_kernel_stack(ctx, KSTACK_SITE_SWITCH, &kstack) :
					capture_stack(ctx, 0, &kstack)))
		return;
	r->key.base.tgid = tgid;
	r->key.base.pid = pid;
	r->key.base.user_stack = ustack;
	r->key.base.kern_stack = kstack;
	/* prev is still the current task at sched_switch */
	r->key.base.cgroup = targ_cgroup_key ? bpf_get_current_cgroup_id() : 0;
	bpf_get_current_comm(r->key.base.comm, sizeof(r->key.base.comm));
	r->key.waker_user_stack = 0;
	r->key.waker_kern_stack = 0;
	r->key.waker_tgid = 0;
	r->key.flags = 0;
	__builtin_memset(r->key.waker_comm, 0, sizeof(r->key.waker_comm));
	r->ts = *now;
	r->seq = seq;
	if (!btf && bpf_map_update_elem(&pid_recs, &pid, r, BPF_ANY)) {
		__sync_fetch_and_add(&recs_lost, 1);
		return;
	}
	if (ustack && !unwind_proc_known())
		note_process(tgid);
}

/* The block is counted in the generation current now; its stacks were stored in the one of its
 * switch-out (and wake-up), which user space may have flipped and drained since: where a flip
 * came in between, they follow the count (stack_in_gen(); user space keeps them for threads
 * still blocked at each drain: user/cmd/offcpu.c keep_pending_stacks()). */
static __always_inline void key_to_gen(struct offcpu_key *k, __u32 rec_seq)
{
	__u32 seq = drain_seq_begin();

	if (seq != rec_seq) {
		k->base.user_stack = stack_in_gen(k->base.user_stack, seq);
		k->base.kern_stack = stack_in_gen(k->base.kern_stack, seq);
		k->waker_user_stack = stack_in_gen(k->waker_user_stack, seq);
		k->waker_kern_stack = stack_in_gen(k->waker_kern_stack, seq);
	}
	k->base.gen = seq & 1;
}

static __always_inline void switch_in(struct task_struct *next, __u64 *now, bool btf)
{
	__u32 pid = TASK_READ(btf, next, pid);
	struct offcpu_rec *r;
	__u64 delta;

	/* With -p/-t, most threads are not targets: two bit tests are cheaper than the lookup. */
	if ((target.filter_tgid || target.filter_pid) &&
	    !target_ids_wanted(TASK_READ(btf, next, tgid), pid))
		return;
	r = rec_lookup(next, pid, btf);
	if (!r || !r->ts)
		return;
	delta = offcpu_clip(r->ts, switch_time(now), run_start, 0, targ_min_ns, targ_max_ns);
	if (delta) {
		key_to_gen(&r->key, r->seq);
		add_to_counts(&counts, &r->key, delta);
	}
	if (btf)
		r->ts = 0;
	else
		bpf_map_delete_elem(&pid_recs, &pid);
}

static __always_inline void on_switch(__u64 *ctx, bool btf)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
	__u64 now = 0;
	__u32 state;

	state = switch_prev_state(ctx, prev, targ_prev_state_arg);
	switch_out(ctx, prev, offcpu_state_class((bool)ctx[0], state), &now, btf);
	switch_in(next, &now, btf);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf)
{
	on_switch(ctx, true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw)
{
	on_switch(ctx, false);
	return 0;
}

/* sched_waking, unlike sched_wakeup, always runs in the waker's context (sched_wakeup may run on
 * the wakee's CPU from the wake list), so `current` is the waker. */
static __always_inline void on_waking(void *ctx, struct task_struct *p, bool btf)
{
	__u32 pid = btf ? 0 : BPF_CORE_READ(p, pid);
	struct offcpu_rec *r = rec_lookup(p, pid, btf);
	__u64 ustack = 0, kstack = 0, id;
	struct task_struct *cur;

	if (!r || !r->ts || (r->key.flags & OFFCPU_WAKER_SEEN))
		return;
	/* From an interrupt, current is only the interrupted task: user space sees the interrupt
	 * entry in the kernel stack and shows the interrupt, not that task, as the waker. */
	id = bpf_get_current_pid_tgid();
	cur = (void *)bpf_get_current_task();
	/* stored in the generation current now: a flip since the switch-out moves them all at the
	 * switch-in (key_to_gen()) */
	drain_seq_begin();
	if (targ_user_stacks && !(BPF_CORE_READ(cur, flags) & OFFCPU_PF_KTHREAD))
		capture_user_stack(ctx, id >> 32, 0, &ustack, btf);
	if (targ_kern_stacks && btf)
		capture_kernel_stack(ctx, KSTACK_SITE_WAKING, &kstack);
	else if (targ_kern_stacks)
		capture_stack(ctx, 0, &kstack);
	r->key.waker_user_stack = ustack;
	r->key.waker_kern_stack = kstack;
	r->key.waker_tgid = id >> 32;
	bpf_get_current_comm(r->key.waker_comm, sizeof(r->key.waker_comm));
	/* a block that began before the run stays marked so */
	r->key.flags |= OFFCPU_WAKER_SEEN;
	if (ustack && !unwind_proc_known())
		note_process(id >> 32);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(waking_btf, struct task_struct *p)
{
	on_waking(ctx, p, true);
	return 0;
}

SEC("raw_tp/sched_waking")
int BPF_PROG(waking_raw, struct task_struct *p)
{
	on_waking(ctx, p, false);
	return 0;
}

/* Threads blocked before the run started: counted from the start, with the kernel stack where
 * they sleep (bpf_get_task_stack); their user stack cannot be read from another task here. */
static __always_inline void seed_blocked(struct task_struct *t)
{
	__u32 tgid = t->tgid, pid = t->pid, class, zero = 0, seq;
	struct offcpu_rec *r;
	bool kthread;
	__u64 kstack = 0;

	/* on_rq: still runnable (about to sleep, or preempted): not blocked. */
	if (t->on_rq)
		return;
	class = offcpu_state_class(0, task_state(t));
	if (class == OFFCPU_STATE_R || !wanted(tgid, pid, class, t, true, false, &kthread))
		return;
	/* A record means the thread switched out since the probes were attached. */
	if (bpf_task_storage_get(&recs, t, 0, 0))
		return;
	r = bpf_map_lookup_elem(&seed, &zero);
	if (!r)
		return;
	seq = drain_seq_begin();
	if (targ_kern_stacks && capture_task_stack(t, &kstack))
		return;
	__builtin_memset(r, 0, sizeof(*r));
	r->seq = seq;
	r->key.base.tgid = tgid;
	r->key.base.pid = pid;
	r->key.base.kern_stack = kstack;
	if (targ_cgroup_key)
		r->key.base.cgroup = task_cgroup_id(t);
	bpf_probe_read_kernel_str(r->key.base.comm, sizeof(r->key.base.comm), t->comm);
	r->key.flags = OFFCPU_BEFORE_RUN;
	r->ts = run_start;
	/* Created whole, start time included: a record created empty and filled after would let
	 * the thread switch in meanwhile (no start time: nothing counted) and then carry a start
	 * time while it runs, charging it the whole run.  A thread that switched out meanwhile
	 * made its own record, which F_CREATE returns untouched. */
	if (!bpf_task_storage_get(&recs, t, r, BPF_LOCAL_STORAGE_GET_F_CREATE))
		__sync_fetch_and_add(&recs_lost, 1);
}

SEC("iter/task")
int walk_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct offcpu_rec *r;

	if (!t)
		return 0;
	if (iter_phase == 0) {
		seed_blocked(t);
		return 0;
	}
	r = bpf_task_storage_get(&recs, t, 0, 0);
	if (r && r->ts)
		bpf_seq_write(ctx->meta->seq, r, sizeof(*r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

/* after the sampling programs: see there */
#include "unwind_progs.bpf.h"
