// SPDX-License-Identifier: GPL-2.0
/* `-- COMMAND` as a target, as perf does it: the command is followed from its exec (nothing it
 * does before, held at bpfprof's gate, is counted), and so is everything it forks, through any
 * number of processes.  Bits of the host command's `tgids` bitmap (bpf/target.bpf.h; this
 * object reuses its fd) are set at fork and exec and cleared when a thread group's leader is
 * freed, so a PID reused by an unrelated process is not traced.  A separate object: its CO-RE reads need the
 * kernel's BTF, which a system-wide profile should not pay for. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "core_fixes.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the host's, reused */
	__type(key, __u32);
	__type(value, __u64);
} tgids SEC(".maps");

/* The command's PID, set once it is forked and held at the gate; 0 once it has exec'd. */
__u32 exec_tgid;
__u64 followed; /* processes followed, for -v */

/* Sets or clears a process's bit.  Only the fork that creates a PID sets its bit, and only the
 * death of that thread group clears it, so an atomic add of the bit's value (clang 14's default
 * BPF target has no atomic or/and) changes that bit alone. */
static __always_inline void set_followed(__u32 tgid, bool on)
{
	__u32 word = tgid / 64;
	__u64 bit = 1ULL << (tgid % 64), *w = bpf_map_lookup_elem(&tgids, &word);

	if (!w || !!(*w & bit) == on)
		return;
	__sync_fetch_and_add(w, on ? bit : -bit);
	if (on)
		__sync_fetch_and_add(&followed, 1);
}

static __always_inline bool is_followed(__u32 tgid)
{
	__u32 word = tgid / 64;
	__u64 *w = bpf_map_lookup_elem(&tgids, &word);

	return w && (*w & (1ULL << (tgid % 64)));
}

static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);

	/* new threads share the tgid: nothing to add */
	if (ptgid != ctgid && is_followed(ptgid))
		set_followed(ctgid, true);
}

/* Not at sched_process_exit: the host's own programs on that tracepoint may run after this one
 * and must still see the process as followed.  A group leader is freed last, once reaped (its
 * PID was released one RCU grace period earlier, and a PID comes round again only after the
 * whole PID space).  group_leader, not pid == tgid: before 5.7 an exec by another thread left
 * the old leader with pid == tgid while the process lived on. */
static __always_inline void on_free(struct task_struct *p)
{
	if (BPF_CORE_READ(p, group_leader) == p)
		set_followed(BPF_CORE_READ(p, tgid), false);
}

/* runs in the exec'ing task, once the new program is in place */
static __always_inline void on_exec(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (exec_tgid && tgid == exec_tgid) {
		set_followed(tgid, true);
		exec_tgid = 0;
	}
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(free_btf, struct task_struct *p)
{
	on_free(p);
	return 0;
}

SEC("raw_tp/sched_process_free")
int BPF_PROG(free_raw, struct task_struct *p)
{
	on_free(p);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf)
{
	on_exec();
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw)
{
	on_exec();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
