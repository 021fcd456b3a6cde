/* bpfprof offcpu: shared between bpf/offcpu.bpf.c and user/cmd/offcpu.c.
 *
 * BPF side: include "vmlinux.h" first.  The clipping rule is a loop-free static inline used by
 * both sides, so the kernel's per-block accounting and user space's end-of-run accounting agree
 * and the rule is unit-tested without root. */
#ifndef BPFPROF_OFFCPU_H
#define BPFPROF_OFFCPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "stacks.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Task states as the scheduler stores them (task_struct::__state); S and D have been 1 and 2
 * forever, TASK_NOLOAD 0x400 since 4.14 (TASK_IDLE = D | NOLOAD, shown as "I" by ps). */
#define OFFCPU_TASK_INTERRUPTIBLE   0x0001
#define OFFCPU_TASK_UNINTERRUPTIBLE 0x0002
#define OFFCPU_TASK_DEAD            0x0080
#define OFFCPU_TASK_NOLOAD          0x0400
#define OFFCPU_PF_KTHREAD           0x00200000

/* --state: which switch-outs start an off-CPU block (bit mask). */
#define OFFCPU_STATE_S     0x1 /* interruptible sleep: futex, poll, pipe, nanosleep... */
#define OFFCPU_STATE_D     0x2 /* uninterruptible sleep (not TASK_IDLE): mostly disk I/O */
#define OFFCPU_STATE_OTHER 0x4 /* other blocked states: idle kernel threads, stopped, traced */
#define OFFCPU_STATE_R     0x8 /* preempted while runnable: waiting for a CPU, not for an event */
/* Default: every blocked state; preemption only with --state R or any. */
#define OFFCPU_STATE_BLOCKED (OFFCPU_STATE_S | OFFCPU_STATE_D | OFFCPU_STATE_OTHER)
#define OFFCPU_STATE_ANY     (OFFCPU_STATE_BLOCKED | OFFCPU_STATE_R)

/* Classifies a switch-out into one OFFCPU_STATE_* bit; 0 for a task that is exiting (its last
 * switch-out is no wait).  preempt: the scheduler took the CPU away (the task stays runnable even
 * when its state says it was about to sleep). */
static __always_inline __u32 offcpu_state_class(int preempt, __u32 state)
{
	if (preempt || state == 0)
		return OFFCPU_STATE_R;
	if (state & OFFCPU_TASK_DEAD)
		return 0;
	if (state & OFFCPU_TASK_INTERRUPTIBLE)
		return OFFCPU_STATE_S;
	if ((state & OFFCPU_TASK_UNINTERRUPTIBLE) && !(state & OFFCPU_TASK_NOLOAD))
		return OFFCPU_STATE_D;
	return OFFCPU_STATE_OTHER;
}

/* What off-CPU time is aggregated by: the blocked thread and its stacks (base), and with --waker
 * the thread that woke it (its process, comm and stacks; zero when not recorded). */
struct offcpu_key {
	struct sample_key base;
	__u64 waker_user_stack;
	__u64 waker_kern_stack;
	__u32 waker_tgid;
	__u32 flags; /* OFFCPU_WAKER_*, OFFCPU_BEFORE_RUN */
	char waker_comm[TASK_COMM_LEN];
};

#define OFFCPU_WAKER_SEEN 0x1 /* a wake-up was recorded for this block */
#define OFFCPU_BEFORE_RUN 0x2 /* blocked since before the run: counted from its start, user
			       * stack unknown */

/* Per-thread record of the block in progress: written at switch-out, consumed at switch-in.  The
 * end-of-run iterator hands user space one per thread still blocked. */
struct offcpu_rec {
	__u64 ts; /* switch-out time (ns, CLOCK_MONOTONIC); 0 when the thread is not blocked */
	struct offcpu_key key;
	__u32 seq; /* the drain count at the switch-out (bpf/stacks.bpf.h: drain_seq_begin()) */
	__u32 unused;
};

/* Off-CPU time to count, in ns, for a block from `start` to `end` (end 0: still blocked when the
 * run ended) within the run [run_start, run_end] (run_end 0: the run goes on).  The block is
 * clipped to the run, so one thread's total can never exceed the run's wall time; -m/-M
 * (min_ns, max_ns; max 0 = none) judge the block by its clipped length, the part the run saw.
 * Returns 0 when nothing is to be counted. */
static __always_inline __u64 offcpu_clip(__u64 start, __u64 end, __u64 run_start, __u64 run_end,
					 __u64 min_ns, __u64 max_ns)
{
	__u64 len;

	if (end == 0 || (run_end && end > run_end))
		end = run_end;
	if (start < run_start)
		start = run_start;
	if (end <= start)
		return 0;
	len = end - start;
	if (len < min_ns || (max_ns && len > max_ns))
		return 0;
	return len;
}
#endif
