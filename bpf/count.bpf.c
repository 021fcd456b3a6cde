// SPDX-License-Identifier: GPL-2.0
/* Event counting in the kernel, like perf stat -e: a per-CPU counter per event, and with -P a
 * count per process and event.  One body for every event source; the raw sys_enter / sys_exit
 * programs serve every syscalls:* tracepoint at once through a syscall-number map. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "count.h"
#include "events.bpf.h"
#include "target.bpf.h"

const volatile bool targ_per_process = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* one per event, set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct count_proc_key);
	__type(value, struct count_proc_val);
} proc_counts SEC(".maps");

__u64 lost_procs; /* -P: events whose process did not fit in proc_counts */

static __always_inline int hit(int idx)
{
	__u64 id = bpf_get_current_pid_tgid(), *c;
	__u32 key = idx, tgid = id >> 32;

	if (idx < 0 || !target_current_wanted(tgid, (__u32)id))
		return 0;
	c = bpf_map_lookup_elem(&counts, &key);
	if (c)
		*c += 1;
	if (targ_per_process) {
		struct count_proc_key pk = { .tgid = tgid, .idx = idx };
		struct count_proc_val *pv = bpf_map_lookup_elem(&proc_counts, &pk);

		if (!pv) {
			struct count_proc_val nv = {};

			bpf_get_current_comm(nv.comm, sizeof(nv.comm));
			bpf_map_update_elem(&proc_counts, &pk, &nv, BPF_NOEXIST);
			pv = bpf_map_lookup_elem(&proc_counts, &pk);
			if (!pv) {
				__sync_fetch_and_add(&lost_procs, 1);
				return 0;
			}
		}
		__sync_fetch_and_add(&pv->count, 1);
	}
	return 0;
}

SEC("tracepoint")
int tp_hit(void *ctx)
{
	return hit(bpf_get_attach_cookie(ctx));
}

SEC("raw_tp")
int raw_tp_hit(void *ctx)
{
	return hit(bpf_get_attach_cookie(ctx));
}

SEC("uprobe")
int BPF_KPROBE(uprobe_hit)
{
	return hit(bpf_get_attach_cookie(ctx));
}

SEC("kprobe")
int BPF_KPROBE(kprobe_hit)
{
	return hit(bpf_get_attach_cookie(ctx));
}

SEC("fentry")
int BPF_PROG(fentry_hit)
{
	return hit(func_event(ctx));
}

SEC("raw_tp")
int BPF_PROG(sys_enter_hit, struct pt_regs *regs, long nr)
{
	if (compat_syscall(regs))
		return 0;
	return hit(sys_event(&sys_enter_idx, nr));
}

SEC("raw_tp")
int BPF_PROG(sys_exit_hit, struct pt_regs *regs, long ret)
{
	if (compat_syscall(regs))
		return 0;
	return hit(sys_event(&sys_exit_idx, exit_syscall_nr(regs)));
}

char LICENSE[] SEC("license") = "GPL";
