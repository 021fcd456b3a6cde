/* Scheduler tracepoints shared by runqlat and sched: PID filters, a task's state across kernel
 * versions, and the rules for when a task starts waiting on a run queue.
 *
 * Every helper takes `btf`, a compile-time constant: true in tp_btf programs, whose task pointers
 * the verifier trusts (fields are plain loads), false in raw_tp ones (fields are read with
 * bpf_probe_read_kernel through BPF_CORE_READ). */
#ifndef BPFPROF_SCHEDTP_BPF_H
#define BPFPROF_SCHEDTP_BPF_H
#include "core_fixes.bpf.h"
#include "target.bpf.h"

/* vmlinux.h has types, not macros (include/linux/sched.h). */
#define TASK_RUNNING 0x0000
#define TASK_DEAD 0x0080

/* sched_switch passes prev_state (core_fixes.bpf.h), read from the prototype by the loader */
const volatile bool targ_prev_state_arg = false;
/* Waits are the kernel's own (sched_info, core_fixes.bpf.h), read as each one ends at a
 * sched_switch: no wakeup programs, no clock read.  Otherwise the wakeup programs stamp them with
 * bpf_ktime_get_ns().  Chosen by the loader (user/cmd/schedtp.c). */
const volatile bool targ_sched_info = false;

/* With targ_sched_info: a task's sched_info at its last switch-in seen (pcount 0: none yet). */
struct sched_wait {
	__u64 run_delay; /* sched_info.run_delay after it */
	__u64 pcount;    /* sched_info.pcount after it */
};

/* With targ_sched_info, the wait that ends as next, queued since lq (!= 0), switches in at its
 * run queue's clock `now`: what sched_info_arrive() adds to run_delay right after, plus what a
 * move to another CPU during the wait added before (sched_info_dequeue()), known from w when the
 * kernel counted no run of next since its last switch-in seen (pcount counts the runs that
 * ended a wait since 5.14, commit 90a0ff4ec9c6 ("sched,stats: Further simplify sched_info")).
 * When it did count some, they are switch-ins no sched_switch event showed (some kernels make
 * them), or made while next was not traced (a cgroup it left): their number and their waits go
 * to *missed and *missed_ns, and the wait counts from its last move.  Updates w. */
static __always_inline __u64 sched_wait_end(struct task_struct *next, __u64 lq, __u64 now,
					    struct sched_wait *w, __u64 *missed, __u64 *missed_ns,
					    bool btf)
{
	__u64 rd, pc, before = 0;

	*missed = *missed_ns = 0;
	if (!bpf_core_field_exists(next->sched_info))
		return 0;
	rd = TASK_READ(btf, next, sched_info.run_delay);
	pc = TASK_READ(btf, next, sched_info.pcount);
	if (w->pcount && rd >= w->run_delay) {
		if (pc == w->pcount) {
			before = rd - w->run_delay;
		} else if (pc > w->pcount) {
			*missed = pc - w->pcount;
			*missed_ns = rd - w->run_delay;
		}
	}
	w->pcount = pc + 1;
	/* what run_delay becomes (the kernel subtracts without a check: its clock is monotonic) */
	w->run_delay = rd + (now - lq);
	return before + (now > lq ? now - lq : 0);
}

static __always_inline __u32 task_tgid(struct task_struct *t, bool btf)
{
	return TASK_READ(btf, t, tgid);
}

static __always_inline __u32 task_pid(struct task_struct *t, bool btf)
{
	return TASK_READ(btf, t, pid);
}

/* The filters come first, before any other work; the idle tasks (pid 0) never wait on a run
 * queue and are never reported. */
static __always_inline bool wanted(struct task_struct *t, bool btf)
{
	return task_pid(t, btf) && target_task_wanted(t, btf);
}

/* The state prev had when __schedule() decided to switch it out: TASK_RUNNING means it was
 * preempted (or yielded) and stays on the run queue. */
static __always_inline __u32 sched_prev_state(unsigned long long *ctx, struct task_struct *prev)
{
	return switch_prev_state(ctx, prev, targ_prev_state_arg);
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
/* The six programs of a scheduler tracer, named as user/cmd/schedtp.h expects: switch, wakeup and
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
