// SPDX-License-Identifier: GPL-2.0
/* Function latency: entry time per thread and function (a small stack, so recursion nests
 * correctly), latency into a histogram per function at return.  The same two bodies serve
 * uprobes, kprobes, fentry/fexit and the raw syscall tracepoints (sys:NAME). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "funclat.h"
#include "events.bpf.h"
#include "fields.bpf.h"
#include "target.bpf.h"
#include "heatmap.bpf.h"

const volatile __u64 targ_unit_ns = 1000; /* the heat map's unit: -n 1, 1000, -m 1000000 */
const volatile bool targ_filter = false;  /* --filter: each function's table in field_tabs */
const volatile bool targ_by = false;      /* --by: a histogram per key (fields_row()) */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct funclat_start_key);
	__type(value, struct funclat_start);
} start SEC(".maps");

/* A shared array with atomic adds: a per-CPU copy of ~4 KiB per function per CPU would cost
 * more memory than the contention it saves next to a uprobe's own cost. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* one per function, set by the loader */
	__type(key, __u32);
	__type(value, struct funclat_hist);
} hists SEC(".maps");

__u64 lost[FUNCLAT_LOST_REASONS];

/* A call that fails --filter gets no entry time: its return finds none and is not timed.
 * --by's key is the entry's (the arguments are gone at the return). */
static __always_inline int on_entry(int idx, const struct field_ctx *fc)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct funclat_start_key key = { .tid = (__u32)id, .idx = idx };
	struct funclat_start *s;
	int row = idx;
	__u32 d;

	if (idx < 0 || !target_current_wanted(id >> 32, (__u32)id))
		return 0;
	if (targ_filter || (targ_by && !targ_by_fixed)) {
		__u32 k = idx;
		const struct field_table *t = bpf_map_lookup_elem(&field_tabs, &k);

		if (!t || (targ_filter && !filter_pass(t, fc)))
			return 0;
		if (targ_by)
			row = fields_row(t, fc, idx);
	} else if (targ_by) {
		row = fields_row(NULL, fc, idx);
	}
	if (row < 0)
		return 0;
	s = bpf_map_lookup_elem(&start, &key);
	if (!s) {
		static const struct funclat_start zero;

		bpf_map_update_elem(&start, &key, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&start, &key);
		if (!s) {
			__sync_fetch_and_add(&lost[FUNCLAT_LOST_START_FULL], 1);
			return 0;
		}
	}
	d = s->depth;
	if (d < FUNCLAT_MAX_DEPTH) {
		s->ts[d & (FUNCLAT_MAX_DEPTH - 1)] = bpf_ktime_get_ns();
		s->row[d & (FUNCLAT_MAX_DEPTH - 1)] = row;
	} else
		__sync_fetch_and_add(&lost[FUNCLAT_LOST_DEPTH], 1);
	s->depth = d + 1;
	return 0;
}

static __always_inline void record(__u32 idx, __u64 delta_ns, __u64 now)
{
	struct funclat_hist *h = bpf_map_lookup_elem(&hists, &idx);

	if (!h)
		return;
	__sync_fetch_and_add(&h->slots[hist_ns_slot(delta_ns)], 1);
	__sync_fetch_and_add(&h->sum_ns, delta_ns);
	if (targ_heatmap)
		heatmap_add(now, delta_ns / targ_unit_ns);
}

static __always_inline int on_exit(int idx)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct funclat_start_key key = { .tid = (__u32)id, .idx = idx };
	struct funclat_start *s;
	__u32 d;

	if (idx < 0)
		return 0;
	s = bpf_map_lookup_elem(&start, &key);
	/* depth 0: a return whose call began before tracing did */
	if (!s || !s->depth)
		return 0;
	d = --s->depth;
	if (d >= FUNCLAT_MAX_DEPTH)
		return 0;
	now = bpf_ktime_get_ns();
	record(s->row[d & (FUNCLAT_MAX_DEPTH - 1)], now - s->ts[d & (FUNCLAT_MAX_DEPTH - 1)], now);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(uentry)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return on_entry(bpf_get_attach_cookie(ctx), &fc);
}

SEC("uretprobe")
int BPF_KRETPROBE(uexit)
{
	return on_exit(bpf_get_attach_cookie(ctx));
}

SEC("kprobe")
int BPF_KPROBE(kentry)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return on_entry(bpf_get_attach_cookie(ctx), &fc);
}

SEC("kretprobe")
int BPF_KRETPROBE(kexit)
{
	return on_exit(bpf_get_attach_cookie(ctx));
}

SEC("fentry")
int BPF_PROG(fentry_entry)
{
	struct field_ctx fc = { .args_from = ARGS_READY };

	for (int i = 0; (targ_filter || targ_by) && i < 6; i++)
		bpf_get_func_arg(ctx, i, &fc.args[i]);
	return on_entry(func_event(ctx), &fc);
}

SEC("fexit")
int BPF_PROG(fexit_exit)
{
	return on_exit(func_event(ctx));
}

SEC("raw_tp")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	struct field_ctx fc = { .regs = regs, .args_from = ARGS_SYSCALL_REGS };

	if (compat_syscall(regs))
		return 0;
	return on_entry(sys_event(&sys_enter_idx, nr), &fc);
}

SEC("raw_tp")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	if (compat_syscall(regs))
		return 0;
	return on_exit(sys_event(&sys_exit_idx, exit_syscall_nr(regs)));
}

char LICENSE[] SEC("license") = "GPL";
