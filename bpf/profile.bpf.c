// SPDX-License-Identifier: GPL-2.0
/* On-CPU stack sampling: one program per cpu-clock (or other) perf event, counting samples per
 * (process, thread, comm, user stack, kernel stack) in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "errno.bpf.h"
#include "events.bpf.h"
#include "profile.h"
#include "stacks.bpf.h"
#include "target.bpf.h"
#include "unwind.bpf.h"

const volatile bool targ_include_idle = false;
const volatile bool targ_user_stacks = true;
const volatile bool targ_kern_stacks = true;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-stacks, set by the loader */
	__type(key, struct sample_key);
	__type(value, __u64);
} counts SEC(".maps");

__u64 samples_seen;

static __always_inline bool wanted(__u32 tgid, __u32 pid)
{
	if (pid == 0 && !targ_include_idle)
		return false;
	return target_current_wanted(tgid, pid);
}

/* One sample of the current task's stacks: a perf event's tick, or an event's hit (-e SPEC).
 * ctx_regs: the context starts with the interrupted registers (perf_event, kprobe, uprobe). */
static __always_inline int take_sample(void *ctx, bool kern_stack, bool ctx_regs)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_key key = {};
	__u32 tgid = id >> 32, pid = id;
	__u64 ustack = 0, kstack = 0;

	if (!wanted(tgid, pid))
		return 0;
	__sync_fetch_and_add(&samples_seen, 1);

	/* Kernel threads have no user stack; asking would only cost a failed walk. */
	if (targ_user_stacks && tgid != 0) {
		if (unwind_ctx_user_stack(ctx, ctx_regs, tgid, &ustack))
			return 0;
	}
	if (targ_kern_stacks && kern_stack) {
		if (capture_stack(ctx, 0, &kstack))
			return 0;
	}
	key.tgid = tgid;
	key.pid = pid;
	key.user_stack = ustack;
	key.kern_stack = kstack;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	add_to_counts(&counts, &key, 1);
	if (tgid)
		note_process(tgid);
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	return take_sample(ctx, true, true);
}

/* -e SPEC: every hit of a tracepoint, user or kernel function is a sample (user/probe/attach.c
 * attaches these instead of the perf events). */
SEC("tracepoint")
int event_tp(void *ctx)
{
	return take_sample(ctx, true, false);
}

SEC("raw_tp")
int event_raw_tp(void *ctx)
{
	return take_sample(ctx, true, false);
}

SEC("uprobe")
int event_uprobe(struct pt_regs *ctx)
{
	/* the kernel stack would only be the breakpoint trap's */
	return take_sample(ctx, false, true);
}

SEC("kprobe")
int event_kprobe(struct pt_regs *ctx)
{
	return take_sample(ctx, true, true);
}

SEC("fentry")
int BPF_PROG(event_fentry)
{
	return take_sample(ctx, true, false);
}

SEC("raw_tp")
int BPF_PROG(event_sys_enter, struct pt_regs *regs, long nr)
{
	if (sys_event(&sys_enter_idx, nr) < 0 || compat_syscall(regs))
		return 0;
	return take_sample(ctx, true, false);
}

SEC("raw_tp")
int BPF_PROG(event_sys_exit, struct pt_regs *regs, long ret)
{
	if (sys_event(&sys_exit_idx, exit_syscall_nr(regs)) < 0 || compat_syscall(regs))
		return 0;
	return take_sample(ctx, true, false);
}

char LICENSE[] SEC("license") = "GPL";
