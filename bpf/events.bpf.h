/* Which event fired, for the programs user/probe.c attaches: uprobes, kprobes and perf
 * tracepoints carry the event index as their attach cookie; fentry programs (cloned per function)
 * look their function's address up; the raw sys_enter / sys_exit programs look the syscall number
 * up, which is how one program serves every syscalls:sys_enter_* tracepoint. */
#ifndef BPFPROF_EVENTS_BPF_H
#define BPFPROF_EVENTS_BPF_H
#include "events.h"

/* Syscall NR -> event index + 1 (0: not traced). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SYS_NR_MAX);
	__type(key, __u32);
	__type(value, __u32);
} sys_enter_idx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SYS_NR_MAX);
	__type(key, __u32);
	__type(value, __u32);
} sys_exit_idx SEC(".maps");

/* Kernel function address -> event index, for fentry / fexit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u64);
	__type(value, __u32);
} func_ips SEC(".maps");

/* Event index of a syscall number in one of the sys_*_idx maps, or -1. */
static __always_inline int sys_event(void *map, long nr)
{
	__u32 key = nr, *idx;

	if (nr < 0 || nr >= SYS_NR_MAX)
		return -1;
	idx = bpf_map_lookup_elem(map, &key);
	return idx && *idx ? (int)(*idx - 1) : -1;
}

/* Event index of the fentry / fexit program that fired, from its function's address. */
static __always_inline int func_event(void *ctx)
{
	__u64 ip = bpf_get_func_ip(ctx);
	__u32 *idx = bpf_map_lookup_elem(&func_ips, &ip);

	return idx ? (int)*idx : -1;
}

/* Syscall tracepoints (syscalls:*) skip 32-bit compat syscalls, whose numbers mean other calls
 * (trace_get_syscall_nr() returns -1 for them); the raw tracepoints do not, so check here. */
static __always_inline bool compat_syscall(void)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread_info.status) & 0x0002; /* TS_COMPAT */
#else
	return false;
#endif
}

/* The syscall number at sys_exit, as the kernel's syscall_get_nr() reads it. */
static __always_inline long exit_syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#else
	return -1;
#endif
}
#endif
