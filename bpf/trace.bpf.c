// SPDX-License-Identifier: GPL-2.0
/* bpfprof trace's kernel side: one record per event through a ring buffer, in perf script's and
 * perf trace's terms.  Tracepoints (perf tracepoint programs, whose context is the raw record)
 * copy their record, which user space decodes with the tracepoint's format; syscalls (the raw
 * sys_enter / sys_exit tracepoints, one program for every syscall through a number map) keep
 * their arguments and strings at entry, read there while the caller's memory holds them, and are
 * sent whole at exit with their return value and duration.  With -s nothing is sent per event:
 * each process's syscall counts and latencies are aggregated here, as perf trace -s prints them. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "trace.h"
#include "events.bpf.h"
#include "target.bpf.h"
#include "fields.bpf.h"

/* libbpf before 1.4 has no sixth syscall argument (r9 on x86-64, x5 on arm64) */
#ifndef PT_REGS_PARM6_CORE_SYSCALL
#if defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6_CORE_SYSCALL(x) BPF_CORE_READ(x, r9)
#elif defined(__TARGET_ARCH_arm64)
#define PT_REGS_PARM6_CORE_SYSCALL(x) BPF_CORE_READ((struct user_pt_regs *)(x), regs[5])
#else
#define PT_REGS_PARM6_CORE_SYSCALL(x) 0
#endif
#endif

const volatile bool targ_summary = false; /* -s */
const volatile bool targ_stacks = false;  /* -g */
const volatile bool targ_filter = false;  /* --filter: each event's in field_tabs */
/* user space is woken once this much is waiting (it also reads every 100 ms): a wakeup per
 * record would cost a context switch on the reader's CPU per event */
const volatile __u64 targ_wakeup_bytes = 1 << 20;
/* the syscalls that never return (exit, exit_group): their line is sent at the entry */
const volatile long targ_nr_exit = -1, targ_nr_exit_group = -1;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* --buffer-size */
} events SEC(".maps");

/* a record is built here, then copied into the ring buffer at its real size */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trace_buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* one per event, set by the loader */
	__type(key, __u32);
	__type(value, struct trace_ev_cfg);
} evcfg SEC(".maps");

/* syscalls between entry and exit, by thread; -s keeps only the entry time */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct trace_inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct trace_sum_key);
	__type(value, struct trace_sum);
} summary SEC(".maps");

__u64 lost[TRACE_LOST_REASONS];

static __always_inline void count_lost(enum trace_lost why)
{
	if (why < TRACE_LOST_REASONS)
		__sync_fetch_and_add(&lost[why], 1);
}

/* --filter: whether the event idx passes its filter, decided before anything is copied */
static __always_inline bool filtered_out(__u32 idx, const struct field_ctx *fc)
{
	const struct field_table *t;

	if (!targ_filter)
		return false;
	t = bpf_map_lookup_elem(&field_tabs, &idx);
	return !t || !filter_pass(t, fc);
}

static __always_inline void rec_fill(struct trace_rec *rec, __u32 idx, __u64 id, __u64 ts)
{
	rec->ts = ts;
	rec->idx = idx;
	rec->pid = (__u32)id;
	rec->tgid = id >> 32;
	rec->cpu = bpf_get_smp_processor_id();
	rec->payload = 0;
	rec->kstack = rec->ustack = 0;
	rec->dur_ns = 0;
	rec->ret = 0;
	rec->str_len[0] = rec->str_len[1] = 0;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));
}

/* The scratch record with the current task's header filled, or NULL. */
static __always_inline struct trace_buf *rec_begin(__u32 idx, __u64 id, __u64 ts)
{
	__u32 zero = 0;
	struct trace_buf *b = bpf_map_lookup_elem(&scratch, &zero);

	if (b)
		rec_fill(&b->rec, idx, id, ts);
	return b;
}

static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Adds the stacks (-g) and sends the record: its header and payload, or all of it with stacks. */
static __always_inline void rec_send(void *ctx, struct trace_buf *b)
{
	__u64 size = sizeof(b->rec) + b->rec.payload;

	if (targ_stacks) {
		b->rec.kstack = bpf_get_stack(ctx, b->data + TRACE_PAYLOAD_MAX, TRACE_STACK_BYTES, 0);
		b->rec.ustack = bpf_get_stack(ctx, b->data + TRACE_PAYLOAD_MAX + TRACE_STACK_BYTES,
					      TRACE_STACK_BYTES, BPF_F_USER_STACK);
		size = sizeof(*b);
	}
	if (size > sizeof(*b))
		size = sizeof(*b);
	if (bpf_ringbuf_output(&events, b, size, wakeup_flag()))
		count_lost(TRACE_LOST_RINGBUF);
}

/* Without -g, a tracepoint's record goes straight into the ring buffer, in the smallest of a few
 * sizes that holds it (a reservation's size is a constant): no copy through the scratch buffer. */
#define TP_DIRECT(N)                                                                            \
	if (size <= (N)) {                                                                      \
		struct {                                                                        \
			struct trace_rec rec;                                                   \
			__u8 data[N];                                                           \
		} *d = bpf_ringbuf_reserve(&events, sizeof(*d), 0);                             \
		if (!d) {                                                                       \
			count_lost(TRACE_LOST_RINGBUF);                                         \
			return 0;                                                               \
		}                                                                               \
		__u64 n = size;                                                                 \
		rec_fill(&d->rec, idx, id, now);                                                \
		/* bounded in the register the call takes: clang would test a copy */          \
		asm volatile("if %[n] <= %[max] goto +1\n\t%[n] = %[max]"                      \
			     : [n] "+r"(n) : [max] "i"(N));                                     \
		if (!bpf_probe_read_kernel(d->data, n, ctx))                                    \
			d->rec.payload = n;                                                     \
		bpf_ringbuf_submit(d, wakeup_flag());                                           \
		return 0;                                                                       \
	}

SEC("tracepoint")
int tp_event(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 idx = bpf_get_attach_cookie(ctx);
	struct trace_ev_cfg *cfg;
	struct trace_buf *b;
	__u32 size;

	struct field_ctx fc = { .rec = ctx };

	__u64 now;

	if (!target_current_wanted(id >> 32, (__u32)id) || filtered_out(idx, &fc))
		return 0;
	cfg = bpf_map_lookup_elem(&evcfg, &idx);
	if (!cfg)
		return 0;
	now = bpf_ktime_get_ns();
	size = cfg->raw_size;
	if (size > TRACE_PAYLOAD_MAX)
		size = TRACE_PAYLOAD_MAX;
	if (!targ_stacks) {
		TP_DIRECT(64)
		TP_DIRECT(128)
		TP_DIRECT(256)
		TP_DIRECT(512)
		TP_DIRECT(TRACE_PAYLOAD_MAX)
	}
	b = rec_begin(idx, id, now);
	if (!b)
		return 0;
	/* the record sits in the per-CPU perf trace buffer: bytes past its end are readable */
	if (size && !bpf_probe_read_kernel(b->data, size, ctx))
		b->rec.payload = size;
	rec_send(ctx, b);
	return 0;
}

/* The strings the entry could not read (their page not yet faulted in: this program cannot
 * fault), read at the exit, once the kernel's own copy of them (getname()) has brought the page
 * in.  Another thread may have changed them meanwhile, which strace's reading after the stop
 * shares. */
static __always_inline void reread_strs(struct trace_inflight *in, int idx)
{
	struct trace_ev_cfg *cfg = bpf_map_lookup_elem(&evcfg, &(__u32){ idx });
	__u32 slot = 0;
	int n;

	for (int i = 0; i < TRACE_ARGS && cfg; i++) {
		if (!(cfg->str_mask & (1u << i)) || slot >= TRACE_STRS)
			continue;
		if (in->str_len[slot] == TRACE_STR_RETRY) {
			n = bpf_probe_read_user_str(in->strs[slot], TRACE_STR_MAX,
						    (void *)in->args[i]);
			in->str_len[slot] = n > 0 ? n : 0;
		}
		slot++;
	}
}

/* -s: the call counted in its process's row */
static __always_inline void sum_add(__u32 tgid, __u32 idx, __u64 dur, long ret)
{
	struct trace_sum_key key = { .tgid = tgid, .idx = idx };
	struct trace_sum *s, zero = { .min_ns = ~0ULL };
	__u64 q = dur >> TRACE_SUMSQ_SHIFT;

	s = bpf_map_lookup_elem(&summary, &key);
	if (!s) {
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		bpf_map_update_elem(&summary, &key, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&summary, &key);
		if (!s) {
			count_lost(TRACE_LOST_SUMMARY);
			return;
		}
	}
	/* one thread of a process per CPU at a time updates: atomics for the sums, the extremes
	 * may race between two CPUs, as libbpf-tools' tables accept */
	__sync_fetch_and_add(&s->calls, 1);
	if (ret < 0)
		__sync_fetch_and_add(&s->errors, 1);
	__sync_fetch_and_add(&s->total_ns, dur);
	__sync_fetch_and_add(&s->sumsq, q * q);
	if (dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
}

/* The call of thread id at its end: its line (or its -s row) from what its entry saved, its
 * return value ret, or none (the syscall does not return: TRACE_NO_RETURN as its duration). */
static __always_inline int call_end(void *ctx, int idx, __u64 id, long ret, bool returns)
{
	__u64 now = bpf_ktime_get_ns();
	struct trace_inflight *in;
	struct trace_buf *b;
	__u32 tid = id;

	/* only calls seen entering (a wanted task, after attach) */
	in = bpf_map_lookup_elem(&inflight, &tid);
	if (!in)
		return 0;
	if (in->idx != (__u32)idx || now < in->ts)
		goto done;
	if (targ_filter) {
		/* the arguments as they were at entry, the return value, the pseudo fields */
		struct field_ctx fc = { .args_from = ARGS_READY, .ret = ret };

		__builtin_memcpy(fc.args, in->args, sizeof(fc.args));
		if (filtered_out(idx, &fc))
			goto done;
	}
	if (targ_summary) {
		sum_add(id >> 32, idx, now - in->ts, ret);
		goto done;
	}
	if (returns && (in->str_len[0] == TRACE_STR_RETRY || in->str_len[1] == TRACE_STR_RETRY))
		reread_strs(in, idx);
	b = rec_begin(idx, id, in->ts);
	if (!b)
		goto done;
	b->rec.dur_ns = returns ? now - in->ts : TRACE_NO_RETURN;
	b->rec.ret = ret;
	__builtin_memcpy(b->rec.args, in->args, sizeof(b->rec.args));
	b->rec.str_len[0] = in->str_len[0];
	b->rec.str_len[1] = in->str_len[1];
	if (in->str_len[0] || in->str_len[1]) {
		__builtin_memcpy(b->data, in->strs, sizeof(in->strs));
		b->rec.payload = sizeof(in->strs);
	}
	rec_send(ctx, b);
done:
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct trace_inflight *in;
	struct trace_ev_cfg *cfg;
	__u32 tid = id, zero = 0, slot = 0;
	struct trace_buf *b;
	int idx, n;

	if (compat_syscall(regs))
		return 0;
	idx = sys_event(&sys_enter_idx, nr);
	if (idx < 0 || !target_current_wanted(id >> 32, tid))
		return 0;
	/* the scratch buffer holds the entry while it is filled */
	b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b)
		return 0;
	in = (struct trace_inflight *)b->data;
	in->ts = bpf_ktime_get_ns();
	in->idx = idx;
	in->str_len[0] = in->str_len[1] = 0;
	if (!targ_summary || targ_filter) {
		in->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
		in->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
		in->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
		in->args[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
		in->args[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
		in->args[5] = PT_REGS_PARM6_CORE_SYSCALL(regs);
		cfg = bpf_map_lookup_elem(&evcfg, &(__u32){ idx });
		for (int i = 0; i < TRACE_ARGS && cfg && !targ_summary; i++) {
			if (!(cfg->str_mask & (1u << i)) || slot >= TRACE_STRS)
				continue;
			n = bpf_probe_read_user_str(in->strs[slot], TRACE_STR_MAX,
						    (void *)in->args[i]);
			in->str_len[slot] = n > 0 ? n : in->args[i] ? TRACE_STR_RETRY : 0;
			slot++;
		}
	}
	if (bpf_map_update_elem(&inflight, &tid, in, BPF_ANY)) {
		count_lost(TRACE_LOST_INFLIGHT);
		return 0;
	}
	/* no exit comes: the line now, as perf trace prints exit_group(...) = ? */
	if (nr == targ_nr_exit || nr == targ_nr_exit_group)
		call_end(ctx, idx, id, 0, false);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	int idx;

	if (compat_syscall(regs))
		return 0;
	idx = sys_event(&sys_exit_idx, exit_syscall_nr(regs));
	if (idx < 0)
		return 0;
	return call_end(ctx, idx, bpf_get_current_pid_tgid(), ret, true);
}

/* A function's entry (its arguments) or return (its value), as perf probe's events are: one
 * record each, sent at once, with the strings its :string casts ask for read here.  A user
 * function's pointers are the process's memory, a kernel function's the kernel's. */
static __always_inline int func_hit(void *ctx, int idx, struct field_ctx *fc, bool user)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct trace_ev_cfg *cfg;
	struct trace_buf *b;
	__u32 slot = 0;

	if (idx < 0 || !target_current_wanted(id >> 32, (__u32)id))
		return 0;
	if (fc->args_from == ARGS_FUNC_REGS)
		for (int i = 0; i < TRACE_ARGS; i++)
			fc->args[i] = reg_arg(fc, i);
	fc->args_from = fc->args_from == ARGS_NONE ? ARGS_NONE : ARGS_READY;
	if (filtered_out(idx, fc))
		return 0;
	cfg = bpf_map_lookup_elem(&evcfg, &(__u32){ idx });
	b = rec_begin(idx, id, bpf_ktime_get_ns());
	if (!b || !cfg)
		return 0;
	b->rec.ret = fc->ret;
	__builtin_memcpy(b->rec.args, fc->args, sizeof(b->rec.args));
	for (int i = 0; i <= TRACE_ARGS && cfg->str_mask; i++) {
		const void *p = (const void *)(i < TRACE_ARGS ? fc->args[i] : fc->ret);
		char *dst = (char *)b->data + (slot & (TRACE_STRS - 1)) * TRACE_STR_MAX;
		long n;

		if (!(cfg->str_mask & (1u << i)) || slot >= TRACE_STRS)
			continue;
		n = user ? bpf_probe_read_user_str(dst, TRACE_STR_MAX, p)
			 : bpf_probe_read_kernel_str(dst, TRACE_STR_MAX, p);
		b->rec.str_len[slot & (TRACE_STRS - 1)] = n > 0 ? n : 0;
		slot++;
	}
	if (slot)
		b->rec.payload = TRACE_STRS * TRACE_STR_MAX;
	rec_send(ctx, b);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(uentry)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return func_hit(ctx, bpf_get_attach_cookie(ctx), &fc, true);
}

SEC("uretprobe")
int BPF_KRETPROBE(uexit)
{
	struct field_ctx fc = { .ret = PT_REGS_RC(ctx) };

	return func_hit(ctx, bpf_get_attach_cookie(ctx), &fc, true);
}

SEC("kprobe")
int BPF_KPROBE(kentry)
{
	struct field_ctx fc = { .regs = ctx, .args_from = ARGS_FUNC_REGS };

	return func_hit(ctx, bpf_get_attach_cookie(ctx), &fc, false);
}

SEC("kretprobe")
int BPF_KRETPROBE(kexit)
{
	struct field_ctx fc = { .ret = PT_REGS_RC(ctx) };

	return func_hit(ctx, bpf_get_attach_cookie(ctx), &fc, false);
}

SEC("fentry")
int BPF_PROG(fentry_hit)
{
	struct field_ctx fc = { .args_from = ARGS_READY };

	for (int i = 0; i < TRACE_ARGS; i++)
		bpf_get_func_arg(ctx, i, &fc.args[i]);
	return func_hit(ctx, func_event(ctx), &fc, false);
}

SEC("fexit")
int BPF_PROG(fexit_hit)
{
	struct field_ctx fc = {};

	bpf_get_func_ret(ctx, &fc.ret);
	return func_hit(ctx, func_event(ctx), &fc, false);
}

char LICENSE[] SEC("license") = "GPL";
