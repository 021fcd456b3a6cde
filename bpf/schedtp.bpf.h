/* Scheduler tracepoints shared by runqlat and sched: PID filters, a task's state across kernel
 * versions, and the rules for when a task starts waiting on a run queue.
 *
 * Every helper takes `btf`, a compile-time constant: true in tp_btf programs, whose task pointers
 * the verifier trusts (fields are plain loads), false in raw_tp ones (fields are read with
 * bpf_probe_read_kernel through BPF_CORE_READ). */
#ifndef BPFPROF_SCHEDTP_BPF_H
#define BPFPROF_SCHEDTP_BPF_H
#include <bpf/bpf_core_read.h>
#include "tgid_filter.bpf.h"

/* vmlinux.h has types, not macros (include/linux/sched.h). */
#define TASK_RUNNING 0x0000
#define TASK_DEAD 0x0080

const volatile bool filter_pid = false;
/* sched_switch's 4th argument prev_state, added in 5.18 by commit fa2c3254d7cf ("sched/tracing:
 * Don't re-read p->state when emitting sched_switch event"); the loader reads the tracepoint's
 * prototype from BTF.  Without it the task's state is read instead. */
const volatile bool targ_prev_state_arg = false;

/* -t TID,...; -p is tgid_filter.bpf.h's */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* Before 5.14 the field was `volatile long state`: commit 2f064a59a11f ("sched: Change
 * task_struct::state") renamed it to `unsigned int __state`. */
struct task_struct___pre514 {
	volatile long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline __u32 task_tgid(struct task_struct *t, bool btf)
{
	return btf ? t->tgid : BPF_CORE_READ(t, tgid);
}

static __always_inline __u32 task_pid(struct task_struct *t, bool btf)
{
	return btf ? t->pid : BPF_CORE_READ(t, pid);
}

/* The filters come first, before any other work; the idle tasks (pid 0) never wait on a run
 * queue and are never reported. */
static __always_inline bool wanted(struct task_struct *t, bool btf)
{
	__u32 pid = task_pid(t, btf);

	if (!pid)
		return false;
	if (filter_pid && !bpf_map_lookup_elem(&pids, &pid))
		return false;
	return !filter_tgid || tgid_wanted(task_tgid(t, btf));
}

/* The state prev had when __schedule() decided to switch it out: TASK_RUNNING means it was
 * preempted (or yielded) and stays on the run queue. */
static __always_inline __u32 switch_prev_state(unsigned long long *ctx, struct task_struct *prev)
{
	__u32 state;

	if (targ_prev_state_arg) {
		/* only reachable where the argument exists: the verifier prunes the other branch,
		 * so older kernels never see the access to ctx[3] */
		state = ctx[3];
		return state;
	}
	return task_state(prev);
}

/* A wakeup of a task that is on a CPU (woken between setting its sleep state and calling
 * schedule(): ttwu_runnable() only sets it back to TASK_RUNNING) does not put it on a run
 * queue, and neither the kernel's schedstat run_delay nor we count it as waiting. */
static __always_inline bool task_on_cpu(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->on_cpu))
		return false; /* uniprocessor kernels: only current is on the CPU, never woken */
	return btf ? t->on_cpu : BPF_CORE_READ(t, on_cpu);
}
/* The six programs of a scheduler tracer, named as user/schedtp.h expects: switch, wakeup and
 * wakeup_new in a tp_btf flavour (btf = true) and a raw_tp one (btf = false), each calling the
 * file's
 *   int on_switch(unsigned long long *ctx, struct task_struct *prev, struct task_struct *next,
 *                 bool btf);
 *   int on_wakeup(struct task_struct *p, bool btf);  */
#define SCHEDTP_PROGRAMS(on_switch, on_wakeup)                                                   \
	SEC("tp_btf/sched_switch")                                                              \
	int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev,                        \
		     struct task_struct *next)                                                  \
	{                                                                                       \
		return on_switch(ctx, prev, next, true);                                        \
	}                                                                                       \
	SEC("tp_btf/sched_wakeup")                                                              \
	int BPF_PROG(wakeup_btf, struct task_struct *p)                                         \
	{                                                                                       \
		return on_wakeup(p, true);                                                      \
	}                                                                                       \
	SEC("tp_btf/sched_wakeup_new")                                                          \
	int BPF_PROG(wakeup_new_btf, struct task_struct *p)                                     \
	{                                                                                       \
		return on_wakeup(p, true);                                                      \
	}                                                                                       \
	SEC("raw_tp/sched_switch")                                                              \
	int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev,                        \
		     struct task_struct *next)                                                  \
	{                                                                                       \
		return on_switch(ctx, prev, next, false);                                       \
	}                                                                                       \
	SEC("raw_tp/sched_wakeup")                                                              \
	int BPF_PROG(wakeup_raw, struct task_struct *p)                                         \
	{                                                                                       \
		return on_wakeup(p, false);                                                     \
	}                                                                                       \
	SEC("raw_tp/sched_wakeup_new")                                                          \
	int BPF_PROG(wakeup_new_raw, struct task_struct *p)                                     \
	{                                                                                       \
		return on_wakeup(p, false);                                                     \
	}
#endif
