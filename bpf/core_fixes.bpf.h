/* Kernel differences, handled in one place: each shim names the kernel change it follows.
 * Everything here is CO-RE: include it only from objects that already pay for the kernel's BTF
 * (libbpf parses it at load as soon as an object has one CO-RE relocation); unused inline
 * functions emit no relocation.  The unwinder's kernel fields (bpf/unwind.bpf.h: unwind_kfields,
 * the vma, file, mm and x86 mm_context_t.vdso it reads) are not here: user space finds their
 * offsets by streaming the BTF (user/core/btffields.c), so that profile's object has no CO-RE
 * relocation, and says there what a kernel without one of them gets. */
#ifndef BPFPROF_CORE_FIXES_BPF_H
#define BPFPROF_CORE_FIXES_BPF_H
#include <bpf/bpf_core_read.h>
#include "target.h"

/* tp_btf and iterator programs hold typed task pointers the verifier lets them follow with plain
 * loads; raw_tp programs read through bpf_probe_read_kernel() (BPF_CORE_READ).  `btf` is a
 * constant at every use, so one side compiles away. */
#define TASK_READ(btf, t, field) ((btf) ? (t)->field : BPF_CORE_READ(t, field))

/* 5.14, commit 2f064a59a11f ("sched: Change task_struct::state"): `volatile long state` became
 * `unsigned int __state`. */
struct task_struct___pre514 {
	volatile long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* 5.16, commit bcf9033e5449 ("sched: move CPU field back into thread_info if
 * THREAD_INFO_IN_TASK"): the task's CPU moved from task_struct::cpu to thread_info.cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu_of(struct task_struct *t)
{
	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)t, cpu);
}

/* 5.18, commit fa2c3254d7cf ("sched/tracing: Don't re-read p->state when emitting sched_switch
 * event") gave sched_switch a 4th argument, prev_state; before, the state is read from prev.
 * `has_arg` comes from the tracepoint's prototype in the kernel's BTF (user/core/features.c) and
 * is a load-time constant: older kernels never see ctx[3] read, which would fail to attach. */
static __always_inline __u32 switch_prev_state(unsigned long long *ctx, struct task_struct *prev,
					       bool has_arg)
{
	if (has_arg)
		return (__u32)ctx[3];
	return task_state(prev);
}

/* The kernel's own run-queue accounting (CONFIG_SCHED_INFO, kernel/sched/stats.h): enqueueing a
 * task stamps sched_info.last_queued with its run queue's clock unless already stamped (a wakeup;
 * a task preempted while runnable is stamped as it departs, after the sched_switch tracepoint),
 * and sched_info_arrive(), called from prepare_task_switch() right after the tracepoint with the
 * run-queue lock still held, adds rq->clock - last_queued to sched_info.run_delay.  A queued task
 * moved to another CPU has its wait so far added to run_delay by sched_info_dequeue() and is
 * stamped again on arrival there.  Collected whenever CONFIG_SCHED_INFO=y since 5.14, commit
 * c5895d3f06cb ("sched: Simplify sched_info_on()"); before it, a kernel without CONFIG_SCHEDSTATS
 * collected it only with delay accounting on, and pcount counted every switch-in (see
 * sched_wait_end()): user space takes this path on 5.14 and later kernels that collect it
 * (feat_sched_info(), user/core/features.c).
 *
 * When t was queued (its run queue's clock), or 0 when it is not waiting for a CPU. */
static __always_inline __u64 task_last_queued(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->sched_info))
		return 0;
	return TASK_READ(btf, t, sched_info.last_queued);
}

/* The clock of the run queue of t's CPU, rq->clock: at sched_switch, for the task switched in,
 * the value sched_info_arrive() reads (__schedule() updated it before picking).  A task's
 * se.cfs_rq is its group's cfs_rq on its CPU, whose rq is that CPU's (set_task_rq()); both
 * pointers exist with CONFIG_FAIR_GROUP_SCHED, which distributions enable (the cgroup cpu
 * controller).  The per-CPU `runqueues` would need its address in kallsyms (CONFIG_KALLSYMS_ALL,
 * which many kernels, this one too, lack).  0 without the pointers. */
static __always_inline __u64 task_rq_clock(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, rq))
		return 0;
	if (btf)
		return t->se.cfs_rq->rq->clock;
	return BPF_CORE_READ(t, se.cfs_rq, rq, clock);
}

/* 5.17, commit f3fa33acca9f ("block: remove the ->rq_disk field in struct request"): the disk
 * is rq->q->disk since. */
struct request___pre517 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* The request's disk; btf: rq is a tp_btf argument, followed with plain loads. */
static __always_inline struct gendisk *request_disk(struct request *rq, bool btf)
{
	struct request___pre517 *old = (void *)rq;

	if (btf)
		return bpf_core_field_exists(old->rq_disk) ? old->rq_disk : rq->q->disk;
	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return BPF_CORE_READ(rq, q, disk);
}

/* The kernel's own issue time of rq, or 0 when it did not take one.  blk_mq_start_request()
 * stamps rq->io_start_time_ns and sets RQF_STATS right after the block_rq_issue tracepoint when
 * the queue keeps statistics (QUEUE_FLAG_STATS: wbt, blk-iolatency, kyber) and rq is no
 * passthrough request; a new request's rq_flags start at 0, and a requeued one is stamped again
 * at its next issue.  The stamp is blk_time_get_ns(): since 6.9, commit da4c8c3d0975 ("block:
 * cache current nsec time in struct blk_plug"), within a plug the first clock read of the plug
 * (its requests' allocation, say) until the task sleeps, so it can precede the issue by the time
 * the plug was held.  io_start_time_ns is a field of every request since 4.18, commit
 * 522a777566f5 ("block: consolidate struct request timestamp fields"); the RQF_STATS bit is
 * readable through CO-RE since 6.15, commit "block: Name the RQF flags enum" (before, a #define
 * or an anonymous enum value): older kernels get 0 here, and biolat its issue program. */
static __always_inline __u64 request_issue_stamp(struct request *rq)
{
	if (!bpf_core_enum_value_exists(enum rqf_flags, __RQF_STATS) ||
	    !bpf_core_field_exists(rq->io_start_time_ns))
		return 0;
	if (!(rq->rq_flags & (1U << bpf_core_enum_value(enum rqf_flags, __RQF_STATS))))
		return 0;
	return rq->io_start_time_ns;
}

/* Whether the disk's statistics (/sys/block/D/stat) count rq when it ends: blk_account_io_start()
 * sets RQF_IO_STAT on every request of a queue with iostats on but passthrough ones.  A bit of
 * enum rqf_flags as request_issue_stamp()'s RQF_STATS (6.15); true where it cannot be read. */
static __always_inline bool request_io_stat(struct request *rq)
{
	if (!bpf_core_enum_value_exists(enum rqf_flags, __RQF_IO_STAT))
		return true;
	return rq->rq_flags & (1U << bpf_core_enum_value(enum rqf_flags, __RQF_IO_STAT));
}

/* The task's own PID namespace, task_active_pid_ns(): thread_pid->numbers[thread_pid->level].ns.
 * thread_pid exists since 4.19, commit 2c4704756cab ("pids: Move the pgrp and session pid
 * pointers from task_struct to signal_struct"); 0 before.  Not nsproxy->pid_ns_for_children,
 * which is the namespace of the task's future children and differs after unshare(CLONE_NEWPID). */
static __always_inline __u32 task_pidns_inum(struct task_struct *t)
{
	struct pid *pid;
	struct upid upid;
	unsigned int level;

	if (!bpf_core_field_exists(t->thread_pid))
		return 0;
	pid = BPF_CORE_READ(t, thread_pid);
	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (bpf_core_read(&upid, sizeof(upid), &pid->numbers[level]))
		return 0;
	return BPF_CORE_READ(upid.ns, ns.inum);
}

/* The id of task t's cgroup v2 (its kernfs node's, as bpf_get_current_cgroup_id() gives the
 * current task's), for a task that may not be the current one.  5.5, commit 67c0496e87d1
 * ("kernfs: convert kernfs_node->id from union kernfs_node_id to u64"): before it the id is a
 * union whose 64-bit member is what the helper returned, read the same way. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* 6.1, commit 7f203bc89eb6 ("cgroup: Replace cgroup->ancestor_ids[] with ->ancestors[]"):
 * before it a cgroup kept its ancestors' ids, since it keeps pointers to them. */
struct cgroup___pre61 {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* Whether task t's cgroup v2 is cgroup `id` or below it, for a task that may not be the current
 * one (bpf_current_task_under_cgroup() covers that).  Ids are global, so no level (which a
 * cgroup namespace hides from user space) is needed: the ancestors are compared, deepest first,
 * up to TARGET_CGROUP_MAX_LEVELS.  Kernfs ids are 64-bit since 5.5.  One loop per layout: in a
 * shared loop clang merges the two reads, and the relocation of the layout the kernel lacks
 * would be reachable. */
static __always_inline bool task_in_cgroup(struct task_struct *t, __u64 id)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp), *anc;
	struct cgroup___pre61 *old = (void *)cg;
	int level = cg ? BPF_CORE_READ(cg, level) : -1;
	__u64 anc_id;

	if (bpf_core_field_exists(cg->ancestors)) {
		for (int i = 0; i < TARGET_CGROUP_MAX_LEVELS && level - i >= 0; i++) {
			anc = NULL;
			bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level - i]);
			if (anc && BPF_CORE_READ(anc, kn, id) == id)
				return true;
		}
		return false;
	}
	for (int i = 0; i < TARGET_CGROUP_MAX_LEVELS && level - i >= 0; i++) {
		anc_id = 0;
		bpf_core_read(&anc_id, sizeof(anc_id), &old->ancestor_ids[level - i]);
		if (anc_id == id)
			return true;
	}
	return false;
}
#endif
