// SPDX-License-Identifier: GPL-2.0
/* On-CPU stack sampling: one program per cpu-clock (or other) perf event, counting samples per
 * (process, thread, comm, user stack, kernel stack) in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "errno.bpf.h"
#include "events.bpf.h"
#include "fields.bpf.h"
#include "profile.h"
#include "stacks.bpf.h"
#include "target.bpf.h"
#include "unwind.bpf.h"

const volatile bool targ_include_idle = false;
/* the sampled perf events (by index, the attach cookie) that are clocks: bit i for event i */
const volatile __u64 targ_clock_events = 1;
/* Several sampling perf events: each link's attach cookie says which (5.15+). */
const volatile bool targ_sampling_cookies = false;
/* Event index of the first event spec: the sampling perf events come first. */
const volatile __u32 targ_spec_base = 0;
const volatile bool targ_user_stacks = true;
const volatile bool targ_kern_stacks = true;
const volatile bool targ_filter = false; /* -e SPEC --filter: each spec event's table in field_tabs */
/* -e SPEC --by: a sample's event is targ_by_base + its key's row (fields_row()), one report
 * section or folded root per key */
const volatile bool targ_by = false;
const volatile __u32 targ_by_base = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-stacks, set by the loader */
	__type(key, struct sample_key);
	__type(value, __u64);
} counts SEC(".maps");

__u64 samples_seen;

/* The idle task is left out of timer sampling only (--include-idle keeps it): a tracepoint or
 * function hit in the idle task (a timer expiring, work queued from an interrupt), or a
 * software event in it (a context switch out of idle), is an event like any other, counted. */
static __always_inline bool wanted(__u32 tgid, __u32 pid, bool timer)
{
	if (pid == 0 && timer && !targ_include_idle)
		return false;
	return target_current_wanted(tgid, pid);
}

/* Counts a sample of the current task under its stacks (user and kernel stack ids, 0 for none),
 * event and generation.  Global: the verifier walks it once, not once for each way the stack
 * captures before it can end (twelve in do_sample). */
__noinline int count_sample(__u64 ustack, __u64 kstack, __u32 event, __u32 gen)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_key key = {};
	__u32 tgid = id >> 32;

	key.gen = gen;
	key.tgid = tgid;
	key.pid = id;
	key.user_stack = ustack;
	key.kern_stack = kstack;
	key.event = event;
	if (targ_cgroup_key)
		key.cgroup = bpf_get_current_cgroup_id();
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	add_to_counts(&counts, &key, 1);
	if (tgid)
		note_process(tgid);
	return 0;
}

/* One sample of the current task's stacks: a perf event's overflow (timer: a clock's tick), or a hit of event
 * spec `event` (-e SPEC; a negative index: not one of ours).  ctx_regs: the context starts with
 * the interrupted registers (perf_event, kprobe, uprobe). */
static __always_inline int take_sample(void *ctx, bool kern_stack, bool ctx_regs, bool timer,
				       int event)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, pid = id, gen;
	__u64 ustack = 0, kstack = 0;

	if (event < 0 || !wanted(tgid, pid, timer))
		return 0;
	__sync_fetch_and_add(&samples_seen, 1);
	gen = drain_gen_begin();

	/* Kernel threads have no user stack; asking would only cost a failed walk. */
	if (targ_user_stacks && tgid != 0) {
		if (unwind_ctx_user_stack(ctx, ctx_regs, tgid, &ustack))
			return 0;
	}
	if (targ_kern_stacks && kern_stack) {
		if (capture_stack(ctx, 0, &kstack))
			return 0;
	}
	return count_sample(ustack, kstack, event, gen);
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	int event = targ_sampling_cookies ? (int)bpf_get_attach_cookie(ctx) : 0;

	return take_sample(ctx, true, true, event >= 0 && event < 64 && (targ_clock_events >> event) & 1, event);
}

/* --filter, before any stack is taken, then --by's key: the event the sample is counted as
 * (event is an event index, the specs' after the sampled perf events'), or -1 for none. */
static __always_inline int keyed(int event, const struct field_ctx *fc)
{
	const struct field_table *t = NULL;
	__u64 id;
	__u32 k;
	int row;

	if ((!targ_filter && !targ_by) || event < 0)
		return event;
	/* no rows made for the tasks left out */
	id = bpf_get_current_pid_tgid();
	if (targ_by && !target_current_wanted(id >> 32, (__u32)id))
		return -1;
	k = event - targ_spec_base;
	if (targ_filter || !targ_by_fixed) {
		t = bpf_map_lookup_elem(&field_tabs, &k);
		if (!t || (targ_filter && !filter_pass(t, fc)))
			return -1;
	}
	if (!targ_by)
		return event;
	row = fields_row(t, fc, k);
	return row < 0 ? -1 : (int)(targ_by_base + row);
}

/* The event index of a spec's hit, from its attach cookie (user/probe/attach.c). */
static __always_inline int spec_event(void *ctx)
{
	return targ_spec_base + (int)bpf_get_attach_cookie(ctx);
}

/* -e SPEC: every hit of a tracepoint, user or kernel function is a sample (user/probe/attach.c
 * attaches these instead of the perf events). */
SEC("tracepoint")
int event_tp(void *ctx)
{
	struct field_ctx fc = { .rec = ctx };
	int idx = spec_event(ctx);

	return take_sample(ctx, true, false, false, keyed(idx, &fc));
}

SEC("raw_tp")
int event_raw_tp(void *ctx)
{
	struct field_ctx fc = {};
	int idx = spec_event(ctx);

	return take_sample(ctx, true, false, false, keyed(idx, &fc));
}

SEC("uprobe")
int event_uprobe(struct pt_regs *ctx)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };
	int idx = spec_event(ctx);

	/* the kernel stack would only be the breakpoint trap's */
	return take_sample(ctx, false, true, false, keyed(idx, &fc));
}

SEC("kprobe")
int event_kprobe(struct pt_regs *ctx)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };
	int idx = spec_event(ctx);

	return take_sample(ctx, true, true, false, keyed(idx, &fc));
}

SEC("fentry")
int BPF_PROG(event_fentry)
{
	struct field_ctx fc = { .args_from = ARGS_READY };
	int idx = func_event(ctx);

	idx = idx < 0 ? idx : (int)targ_spec_base + idx;
	for (int i = 0; (targ_filter || targ_by) && i < 6; i++)
		bpf_get_func_arg(ctx, i, &fc.args[i]);
	return take_sample(ctx, true, false, false, keyed(idx, &fc));
}

SEC("raw_tp")
int BPF_PROG(event_sys_enter, struct pt_regs *regs, long nr)
{
	struct field_ctx fc = { .regs = regs, .args_from = ARGS_SYSCALL_REGS };
	int idx = sys_event(&sys_enter_idx, nr);

	if (idx < 0 || compat_syscall(regs))
		return 0;
	idx += targ_spec_base;
	return take_sample(ctx, true, false, false, keyed(idx, &fc));
}

SEC("raw_tp")
int BPF_PROG(event_sys_exit, struct pt_regs *regs, long ret)
{
	struct field_ctx fc = { .ret = ret };
	int idx = sys_event(&sys_exit_idx, exit_syscall_nr(regs));

	if (idx < 0 || compat_syscall(regs))
		return 0;
	idx += targ_spec_base;
	return take_sample(ctx, true, false, false, keyed(idx, &fc));
}

char LICENSE[] SEC("license") = "GPL";

/* after the sampling programs: see there */
#include "unwind_progs.bpf.h"
