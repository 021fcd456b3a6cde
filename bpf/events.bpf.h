/* Which event fired, for the programs user/probe/attach.c attaches: uprobes, kprobes and perf
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

/* No CO-RE here: profile's object carries these programs and stays free of the kernel's BTF
 * (libbpf parses it at load as soon as an object has one CO-RE relocation).  struct pt_regs is
 * the user ABI's register layout on x86-64 and arm64, fixed at these offsets. */

/* Syscall tracepoints (syscalls:*) skip 32-bit compat syscalls, whose numbers mean other calls
 * (trace_get_syscall_nr() returns -1 for them); the raw tracepoints do not.  A 32-bit caller
 * runs with the 32-bit user code segment (__USER32_CS), as user_64bit_mode() checks. */
static __always_inline bool compat_syscall(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	unsigned long cs = 0;

	bpf_probe_read_kernel(&cs, sizeof(cs), (void *)regs + __builtin_offsetof(struct pt_regs, cs));
	return cs == 0x23; /* __USER32_CS */
#else
	return false;
#endif
}

/* The syscall number at sys_exit, as the kernel's syscall_get_nr() reads it. */
static __always_inline long exit_syscall_nr(struct pt_regs *regs)
{
	long nr = -1;

#if defined(__TARGET_ARCH_x86)
	bpf_probe_read_kernel(&nr, sizeof(nr), (void *)regs + __builtin_offsetof(struct pt_regs, orig_ax));
#elif defined(__TARGET_ARCH_arm64)
	int no = -1;

	bpf_probe_read_kernel(&no, sizeof(no), (void *)regs + __builtin_offsetof(struct pt_regs, syscallno));
	nr = no;
#endif
	return nr;
}
#endif
