// SPDX-License-Identifier: GPL-2.0
/* bpfprof stat's kernel side: event specs counted like perf stat -e (a per-CPU counter per
 * event), and with -P / --by-comm a count per process, command name and event, for the specs
 * and for perf's software events (perf_event programs on every overflow; the clocks from
 * sched_switch and a timer).  One body for every event source; the raw sys_enter / sys_exit
 * programs serve every syscalls:* tracepoint at once through a syscall-number map.  Plain
 * totals of perf events need none of this: user space counts them with perf_event_open. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "stat.h"
#include "core_fixes.bpf.h"
#include "events.bpf.h"
#include "fields.bpf.h"
#include "target.bpf.h"

const volatile bool targ_per_process = false; /* -P or --by-comm */
/* the event indexes of task-clock and cpu-clock, -1 when not counted per process */
const volatile int targ_clock_idx[STAT_MAX_CLOCKS] = { -1, -1 };
/* -- COMMAND: it is counted from its exec, as perf's enable_on_exec counts it */
const volatile bool targ_from_exec = false;
/* the totals are CPUs' counters (-a, -C, --cgroup), not tasks': they count dying tasks too */
const volatile bool targ_cpu_counters = false;
__u32 command_tgid;       /* set once it is forked */
bool command_exec_seen;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* one per event, set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stat_proc_key);
	__type(value, __u64);
} proc_counts SEC(".maps");

/* clocks per process: when this CPU's time was last given to a task */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} clock_since SEC(".maps");

__u64 lost_procs; /* -P: events whose process did not fit in proc_counts */

/* --by / --filter: each event's field table in field_tabs (no table: nothing is counted) */
const volatile bool targ_fields = false;
const volatile bool targ_by = false;
const volatile bool targ_filter = false;

/* --by: counts per (event, field values); the key's size is set by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(key_size, FIELDS_KEY_MAX);
	__uint(value_size, sizeof(__u64));
} field_counts SEC(".maps");

__u64 lost_fields; /* --by: events whose values did not fit in field_counts */
const volatile __u32 targ_key_words = 2; /* --by: the key's size in 8-byte words */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FIELD_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct field_cache_slot);
} field_cache SEC(".maps");

/* Adds n to the current task's row of event idx. */
static __always_inline void add_proc(int idx, __u32 tgid, __u64 n)
{
	struct stat_proc_key pk = { .tgid = tgid, .idx = idx };
	__u64 zero = 0, *pv;

	if (!tgid) /* every CPU's idle task is pid 0: one row each, as swapper/N */
		pk.cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(pk.comm, sizeof(pk.comm));
	pv = bpf_map_lookup_elem(&proc_counts, &pk);
	if (!pv) {
		bpf_map_update_elem(&proc_counts, &pk, &zero, BPF_NOEXIST);
		pv = bpf_map_lookup_elem(&proc_counts, &pk);
		if (!pv) {
			__sync_fetch_and_add(&lost_procs, n);
			return;
		}
	}
	__sync_fetch_and_add(pv, n);
}

/* Adds n to the row of key in the shared table. */
static __always_inline void add_row(void *key, __u64 n)
{
	__u64 *pv = bpf_map_lookup_elem(&field_counts, key);

	if (pv) {
		__sync_fetch_and_add(pv, n);
		return;
	}
	/* a new row; another CPU may have made it meanwhile */
	if (bpf_map_update_elem(&field_counts, key, &n, BPF_NOEXIST)) {
		pv = bpf_map_lookup_elem(&field_counts, key);
		if (pv)
			__sync_fetch_and_add(pv, n);
		else
			__sync_fetch_and_add(&lost_fields, n);
	}
}

/* add_fields()'s slow path, a subprogram of its own (not inlined): the row in the slot (if
 * any) goes to the shared table and key takes the slot, or, without a slot, key's one count
 * goes there.  Apart, the hot path (a hit in this CPU's cache) is a few cache lines of code,
 * which is most of what a sparse event costs. */
static __noinline void cache_miss(struct field_cache_slot *slot, const __u64 *key)
{
	__u32 n = targ_key_words;

	if (!key)
		return;
	if (!slot) {
		add_row((void *)key, 1);
		return;
	}
	if (slot->count)
		add_row(slot->key, slot->count);
	for (__u32 i = 0; i < FIELDS_KEY_MAX / 8 && i < n; i++)
		((__u64 *)slot->key)[i] = key[i];
	slot->count = 1;
}

/* Adds one to the row of the event's field values: in this CPU's cache when the row is there,
 * else the row there goes to the shared table and this one takes its place. */
static __always_inline void add_fields(const struct field_table *t, const struct field_ctx *fc,
				       __u32 idx)
{
	struct field_cache_slot *slot;
	__u64 kb[1 + FIELDS_MAX], *key, h = 0;
	__u32 i, n = targ_key_words, s;
	bool same = true;

	/* numbers only: the key on the stack, no scratch to look up */
	if (targ_by_fixed && targ_by_ints)
		key = fixed_key(fc, idx, (char *)kb, NULL);
	else
		key = fields_key(t, fc, idx);
	if (!key) {
		__sync_fetch_and_add(&lost_fields, 1);
		return;
	}
	for (i = 0; i < FIELDS_KEY_MAX / 8 && i < n; i++)
		h = (h ^ key[i]) * 0x9e3779b97f4a7c15ULL;
	s = h >> 56; /* FIELD_CACHE_SLOTS: 256 */
	slot = bpf_map_lookup_elem(&field_cache, &s);
	if (slot && slot->count) {
		for (i = 0; i < FIELDS_KEY_MAX / 8 && i < n; i++)
			same &= ((__u64 *)slot->key)[i] == key[i];
		if (same) {
			slot->count++;
			return;
		}
	}
	cache_miss(slot, key);
}

/* An event fired: its filter first (nothing is counted that fails it), then its counts. */
static __always_inline int hit_fields(int idx, const struct field_ctx *fc)
{
	__u64 id = bpf_get_current_pid_tgid(), *c;
	__u32 key = idx, tgid = id >> 32;
	const struct field_table *t = NULL;

	if (idx < 0 || !target_current_wanted(tgid, (__u32)id))
		return 0;
	if (targ_fields) {
		/* fixed --by fields and no filter: no table to look at */
		if (targ_filter || !targ_by_fixed) {
			t = bpf_map_lookup_elem(&field_tabs, &key);
			if (!t || !filter_pass(t, fc))
				return 0;
		}
	}
	c = bpf_map_lookup_elem(&counts, &key);
	if (c)
		*c += 1;
	if (targ_fields && targ_by)
		add_fields(t, fc, key);
	if (targ_per_process)
		add_proc(idx, tgid, 1);
	return 0;
}

static __always_inline int hit(int idx)
{
	struct field_ctx fc = {};

	return hit_fields(idx, &fc);
}

#define TASK_DEAD 0x0080 /* include/linux/sched.h */

/* A task's perf counters end in do_exit()'s perf_event_exit_task(), before its last switch: what
 * a dead task does after (the switch itself) is not in perf's totals, and not in its rows.  A
 * CPU's counters (-a, -C, --cgroup) count it all: there its time up to the switch is its own. */
static __always_inline bool current_dead(void)
{
	if (targ_cpu_counters)
		return false;
	return task_state((struct task_struct *)bpf_get_current_task()) & TASK_DEAD;
}

/* The time since this CPU's last accounting goes to the task on it now (the one switching out,
 * or the one a timer tick interrupts), for each clock counted per process. */
static __always_inline int account_clock(void)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid(), *since;
	__u32 zero = 0, tgid = id >> 32;

	since = bpf_map_lookup_elem(&clock_since, &zero);
	if (!since)
		return 0;
	if (*since && now > *since && target_current_wanted(tgid, (__u32)id) && !current_dead()) {
		for (int i = 0; i < STAT_MAX_CLOCKS; i++)
			if (targ_clock_idx[i] >= 0)
				add_proc(targ_clock_idx[i], tgid, now - *since);
	}
	*since = now;
	return 0;
}

/* a software event's every overflow (period 1), for -P / --by-comm */
SEC("perf_event")
int perf_hit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	int idx = bpf_get_attach_cookie(ctx);

	if (idx >= 0 && target_current_wanted(id >> 32, (__u32)id) && !current_dead())
		add_proc(idx, id >> 32, 1);
	return 0;
}

SEC("perf_event")
int clock_tick(void *ctx)
{
	return account_clock();
}

SEC("raw_tp/sched_switch")
int clock_switch(void *ctx)
{
	return account_clock();
}

/* An exiting task's time up to here is its own (its counters are read a little later) */
SEC("raw_tp/sched_process_exit")
int clock_exit(void *ctx)
{
	return account_clock();
}

/* A followed COMMAND's time before its exec (the fork's wait at the gate, the exec itself) is
 * nobody's: perf stat's counters start at the end of the exec too.  Its children's execs are
 * theirs, as under perf's inherited counters. */
SEC("raw_tp/sched_process_exec")
int clock_exec(void *ctx)
{
	__u64 *since;
	__u32 zero = 0;

	if (!targ_from_exec || command_exec_seen ||
	    bpf_get_current_pid_tgid() >> 32 != command_tgid)
		return account_clock();
	command_exec_seen = true;
	since = bpf_map_lookup_elem(&clock_since, &zero);
	if (since)
		*since = bpf_ktime_get_ns();
	return 0;
}

SEC("tracepoint")
int tp_hit(void *ctx)
{
	struct field_ctx fc = { .rec = ctx };

	return hit_fields(bpf_get_attach_cookie(ctx), &fc);
}

SEC("raw_tp")
int raw_tp_hit(void *ctx)
{
	return hit(bpf_get_attach_cookie(ctx));
}

SEC("uprobe")
int BPF_KPROBE(uprobe_hit)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return hit_fields(bpf_get_attach_cookie(ctx), &fc);
}

SEC("uretprobe")
int BPF_KRETPROBE(uretprobe_hit)
{
	struct field_ctx fc = { .ret = targ_fields ? PT_REGS_RC(ctx) : 0 };

	return hit_fields(bpf_get_attach_cookie(ctx), &fc);
}

SEC("kprobe")
int BPF_KPROBE(kprobe_hit)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return hit_fields(bpf_get_attach_cookie(ctx), &fc);
}

SEC("kretprobe")
int BPF_KRETPROBE(kretprobe_hit)
{
	struct field_ctx fc = { .ret = targ_fields ? PT_REGS_RC(ctx) : 0 };

	return hit_fields(bpf_get_attach_cookie(ctx), &fc);
}

SEC("fentry")
int BPF_PROG(fentry_hit)
{
	struct field_ctx fc = { .args_from = ARGS_READY };

	/* the arguments are the context's: read while it is at hand */
	for (int i = 0; targ_fields && i < 6; i++)
		bpf_get_func_arg(ctx, i, &fc.args[i]);
	return hit_fields(func_event(ctx), &fc);
}

SEC("fexit")
int BPF_PROG(fexit_hit)
{
	struct field_ctx fc = {};

	if (targ_fields)
		bpf_get_func_ret(ctx, &fc.ret);
	return hit_fields(func_event(ctx), &fc);
}

SEC("raw_tp")
int BPF_PROG(sys_enter_hit, struct pt_regs *regs, long nr)
{
	struct field_ctx fc = { .regs = regs, .args_from = ARGS_SYSCALL_REGS };

	if (compat_syscall(regs))
		return 0;
	return hit_fields(sys_event(&sys_enter_idx, nr), &fc);
}

SEC("raw_tp")
int BPF_PROG(sys_exit_hit, struct pt_regs *regs, long ret)
{
	struct field_ctx fc = { .ret = ret };

	if (compat_syscall(regs))
		return 0;
	return hit_fields(sys_event(&sys_exit_idx, exit_syscall_nr(regs)), &fc);
}

char LICENSE[] SEC("license") = "GPL";
