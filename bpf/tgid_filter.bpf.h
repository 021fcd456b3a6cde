/* The process filter of -p PID and -- COMMAND, which follows the processes the command forks
 * (as perf stat and perf record do). */
#ifndef BPFPROF_TGID_FILTER_BPF_H
#define BPFPROF_TGID_FILTER_BPF_H

const volatile bool filter_tgid = false;
const volatile bool targ_follow_forks = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

static __always_inline bool tgid_wanted(__u32 tgid)
{
	return !filter_tgid || bpf_map_lookup_elem(&tgids, &tgid);
}

static __always_inline void tgid_follow_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (!targ_follow_forks || ptgid == ctgid)
		return;
	if (bpf_map_lookup_elem(&tgids, &ptgid))
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	tgid_follow_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	tgid_follow_fork(parent, child);
	return 0;
}
#endif
