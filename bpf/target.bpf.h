/* The target model's kernel side, one for every command: -p/-t as bitmaps (an array lookup the
 * verifier inlines: a few instructions on the hottest paths, and no cap on how many processes
 * `-- COMMAND` may fork), -C, --cgroup and -u/-k.  user/core/targets.c configures and fills it;
 * user/core/follow.c adds what a traced command forks to `tgids`.  Every check is compiled away
 * when its filter is off (`target` is read-only after load). */
#ifndef BPFPROF_TARGET_BPF_H
#define BPFPROF_TARGET_BPF_H
#include "target.h"

const volatile struct target_cfg target = {};

/* Sized by the runner: PID bitmaps to kernel.pid_max, the CPU bitmap to the possible CPUs; one
 * word when their filter is off. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpus SEC(".maps");

/* --cgroup: the cgroup's directory fd, for bpf_current_task_under_cgroup(), which checks
 * ancestry in the kernel: right inside cgroup namespaces, and callable from tracing programs
 * since 4.9. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

static __always_inline bool target_bit(void *bitmap, __u32 id)
{
	__u32 word = id / 64;
	__u64 *w = bpf_map_lookup_elem(bitmap, &word);

	return w && (*w & (1ULL << (id % 64)));
}

/* -p (or -- COMMAND) and -t: these processes and these threads. */
static __always_inline bool target_ids_wanted(__u32 tgid, __u32 pid)
{
	if (!target.filter_tgid && !target.filter_pid)
		return true;
	return (target.filter_tgid && target_bit(&tgids, tgid)) ||
	       (target.filter_pid && target_bit(&pids, pid));
}

/* -C, for the CPU this program runs on. */
static __always_inline bool target_cpu_wanted(void)
{
	return !target.filter_cpu || target_bit(&cpus, bpf_get_smp_processor_id());
}

/* -u / -k, given whether the thread is a kernel thread. */
static __always_inline bool target_kind_wanted(bool kthread)
{
	if (target.threads == TARGET_THREADS_USER)
		return !kthread;
	if (target.threads == TARGET_THREADS_KERNEL)
		return kthread;
	return true;
}

/* Whether the current task is a kernel thread: task_struct::flags at the offset user space read
 * from BTF, so that objects without CO-RE can filter too.  Only read when -u/-k asks. */
static __always_inline bool target_current_kthread(void)
{
	__u32 flags = 0;

	bpf_probe_read_kernel(&flags, sizeof(flags),
			      (void *)bpf_get_current_task() + target.task_flags_off);
	return flags & TARGET_PF_KTHREAD;
}

/* --cgroup for the current task: one helper call, no CO-RE. */
static __always_inline bool target_current_cgroup_wanted(void)
{
	return !target.filter_cgroup || bpf_current_task_under_cgroup(&cgroup_filter, 0) == 1;
}

/* True when tasks are filtered at all (by anything but -C). */
static __always_inline bool target_filters_tasks(void)
{
	return target.filter_tgid || target.filter_pid || target.filter_cgroup ||
	       target.threads != TARGET_THREADS_ALL;
}

/* Every filter, for the task running this program. */
static __always_inline bool target_current_wanted(__u32 tgid, __u32 pid)
{
	if (!target_ids_wanted(tgid, pid) || !target_cpu_wanted() || !target_current_cgroup_wanted())
		return false;
	return target.threads == TARGET_THREADS_ALL || target_kind_wanted(target_current_kthread());
}

#ifdef BPFPROF_CORE_FIXES_BPF_H
/* Every filter but -C, for a task that may not be the current one (a wakee, a task switched
 * in).  Needs core_fixes.bpf.h (CO-RE), included before this header; btf as for TASK_READ. */
static __always_inline bool target_task_wanted(struct task_struct *t, bool btf)
{
	if (!target_ids_wanted(TASK_READ(btf, t, tgid), TASK_READ(btf, t, pid)))
		return false;
	if (target.filter_cgroup && !task_in_cgroup(t, target.cgroup_id))
		return false;
	return target.threads == TARGET_THREADS_ALL ||
	       target_kind_wanted(TASK_READ(btf, t, flags) & TARGET_PF_KTHREAD);
}
#endif
#endif
