/* The unwinder's programs (bpf/unwind.bpf.h): the walk at a syscall's entry, and what keeps the
 * walks' knowledge of processes current (exit, exec, mmap, fork).  Each object includes this after
 * its sampling programs: libbpf loads programs in the order of their sections, and the two big
 * ones, the sampling program and the walk at a syscall's entry, are verified on threads of their
 * own (user/core/progload.c) from the moment libbpf reaches them; placed first, their
 * verification, the longest step of the start, overlaps the small programs' loads rather than
 * waiting for them (a 1 s system-wide profile's start ~5 ms shorter). */
#ifndef BPFPROF_UNWIND_PROGS_BPF_H
#define BPFPROF_UNWIND_PROGS_BPF_H
#include "unwind.bpf.h"

/* The walk at a syscall's entry, attached by unwind_attach_syscalls() to the sys_enter raw
 * tracepoint, execve() and exit_group() told apart by number: the release of a syscall
 * tracepoint (syscalls/sys_enter_execve) waits out RCU tasks grace periods, 60-160 ms each and
 * largely serialized in the kernel, which a 1 s profile's end waited for (176 ms beyond its
 * second against 37); a raw tracepoint's waits for none.  It runs at every syscall's entry while
 * attached, and returns at once for the others.  It reads the row array, which in profile takes
 * the place of a one-row stand-in just before the first program that reads it loads
 * (user/core/stackrun.c, which also knows this section as UNWIND_SYSCALL_SEC). */
SEC("raw_tp/sys_enter")
int unwind_syscall(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 nr = unwind_raw_tp_arg(ctx, 1);

	if (nr != UNW_NR_EXECVE && nr != UNW_NR_EXIT_GROUP)
		return 0;
	return unwind_syscall_entry(ctx, nr);
}

/* A process's mappings die with it, and its pid may come back as another program.  Part of every
 * object that includes the unwinder (raw_tp: no kernel BTF needed). */
SEC("raw_tp/sched_process_exit")
int unwind_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	/* the thread group leader: its exit is the one that frees the pid.  Told first: a list
	 * user space wrote before the exit's time is the one deleted here, and needs no delete
	 * of its own (unwinder__forget_process()) */
	if ((__u32)id == id >> 32) {
		note_process_exit(id >> 32);
		unwind_forget_process(id >> 32);
	}
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int unwind_mmap(struct unwind_sys_exit *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 regs = 0;

	if (ctx->ret <= 0 || !unwind_prefill_wanted() || bpf_map_lookup_elem(&unwind_procs, &tgid))
		return 0;
	/* the arguments are still in the registers saved at the syscall's entry (rdx: prot, r10:
	 * flags): most mappings are data, not worth a search */
	if (targ_unwind_task_regs)
		regs = (__u64)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (regs && (!(unwind_read_kernel(regs + offsetof(struct unwind_regs, dx)) & UNW_PROT_EXEC) ||
		     unwind_read_kernel(regs + offsetof(struct unwind_regs, r10)) & UNW_MAP_ANONYMOUS))
		return 0;
	unwind_prefill(tgid, ctx->ret);
	return 0;
}

/* A forked process runs its parent's code until it execs (a shell's subshell never does): it
 * starts with its parent's mappings, as the kernel copies them, rather than wait for user space
 * to read them.  raw_tp: the child's pid and tgid at offsets from the kernel's BTF. */
SEC("raw_tp/sched_process_fork")
int unwind_fork(__u64 *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32, pid = 0, tgid = 0;
	__u64 child = ctx[1];
	struct unw_kmaps *km;
	struct unw_proc *proc;

	/* the parent a target: the child is one too (-- COMMAND follows it) */
	if (!unwind_prefill_wanted())
		return 0;
	bpf_probe_read_kernel(&pid, sizeof(pid), (void *)(child + unwind_kfields.task_pid));
	bpf_probe_read_kernel(&tgid, sizeof(tgid), (void *)(child + unwind_kfields.task_tgid));
	if (!pid || pid != tgid) /* a thread: its process's mappings are its own */
		return 0;
	proc = bpf_map_lookup_elem(&unwind_procs, &parent);
	if (proc) {
		bpf_map_update_elem(&unwind_procs, &pid, proc, BPF_ANY);
		return 0;
	}
	km = bpf_map_lookup_elem(&unwind_kmaps, &parent);
	if (km)
		bpf_map_update_elem(&unwind_kmaps, &pid, km, BPF_ANY);
	return 0;
}

/* After exec the mappings are new: have user space capture them again.  raw_tp, not tp_btf: the
 * program reads no arguments, and leaving BTF out spares profile's object from libbpf parsing
 * the kernel's BTF at load (several MB of peak RSS, and time). */
SEC("raw_tp/sched_process_exec")
int forget_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 *seen = bpf_map_lookup_elem(&seen_procs, &tgid);

	/* the list first: the announcement that follows (note_process) always comes after it is
	 * gone, so the list user space writes for it stays (user space does not write a list
	 * again that it believes the map holds unchanged) */
	unwind_forget_process(tgid);
	/* known still (its exit will be told), to be captured again */
	if (seen)
		*seen = 0;
	if (targ_find_vma)
		bpf_map_delete_elem(&unwind_kmaps, &tgid);
	if (unwind_prefill_wanted())
		unwind_prefill_exec(tgid);
	return 0;
}
#endif
