// SPDX-License-Identifier: GPL-2.0
/* Adds the children of followed processes to the followed set, as perf record does for
 * `-- COMMAND`.  A separate object: its CO-RE reads need the kernel's BTF, which a system-wide
 * profile should not pay for.  The `tgids` map is the host command's filter map (reused fd). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "follow.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FOLLOW_MAX_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

static __always_inline void follow_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	/* New threads share the tgid: nothing to add. */
	if (ptgid == ctgid)
		return;
	if (bpf_map_lookup_elem(&tgids, &ptgid))
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(parent, child);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
