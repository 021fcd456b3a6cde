/* Kernel stacks of the current task at a tracepoint, walked here from the kernel's own ORC tables
 * (x86-64) instead of by bpf_get_stack(), which costs ~2 us a stack on this VM: the kernel's walk
 * first steps through its own frames and the BPF program's (perf_callchain_kernel(), the
 * helper, the program: ~6 of ~17 steps), and each step is a dozen calls through the return
 * thunks of the retbleed/SRSO mitigations.  This walk is the kernel's unwind_next_frame()
 * (arch/x86/kernel/unwind_orc.c) step for step, over a copy of the stack read in one piece, with
 * the ORC entries it needs cached per CPU; it stores the same addresses bpf_get_stack() stores
 * after the BPF program's own frames, which user space drops from either (stack_frames_trim_bpf).
 *
 * Where it starts: a tracepoint program is called by bpf_trace_run<N>(), whose `args` array is
 * the program's ctx, at a fixed distance from the slot holding the return address into
 * bpf_trace_run<N>() that the call to the program pushed, just above the saved frame pointer
 * the JIT's prologue pushes (the frame the kernel's walk reads with its frame-pointer fallback).
 * That distance is learned, not assumed: the first stacks of each site are taken by
 * bpf_get_stack(); its first kernel-text frame is searched for below ctx, and the walk from
 * there must give exactly bpf_get_stack()'s frames.  A slot holding an address never seen
 * there, code outside the kernel's text (modules, BPF trampolines, ftrace: the kernel has its
 * own lookups for those), a frame the kernel would recover through a return hook, any read off
 * the task's stack: that stack goes to bpf_get_stack().  One walk in targ_kstack_check_every is
 * compared with bpf_get_stack() too; a difference stops the walker for the run (counted).
 *
 * Users: include after stacks.bpf.h and core_fixes.bpf.h; call capture_kernel_stack() from a
 * tp_btf program (it needs bpf_get_current_task_btf() and bpf_task_pt_regs(), 5.15+). */
#ifndef BPFPROF_KSTACK_BPF_H
#define BPFPROF_KSTACK_BPF_H
#include "kstack.h"
#include "stacks.bpf.h"

#if defined(__TARGET_ARCH_x86)

/* Settings, fixed before load.  targ_kstack: the loader lets the walker run (x86-64, tp_btf). */
const volatile bool targ_kstack = false;
const volatile __u32 targ_kstack_check_every = 1024;

/* Set by user space once it has read /proc/kallsyms (the run has started by then: until, every
 * stack is bpf_get_stack()'s). */
struct kstack_cfg kstack_cfg;

struct kstack_site_state kstack_sites[KSTACK_SITES];

/* A site's state; constant indexes only (a global function's argument has no bounds to the
 * verifier). */
static __always_inline struct kstack_site_state *kstack_site(__u32 site)
{
	return site == KSTACK_SITE_WAKING ? &kstack_sites[KSTACK_SITE_WAKING] :
					    &kstack_sites[KSTACK_SITE_SWITCH];
}

/* arch/x86/include/asm/orc_types.h (stable since 6.4, the layout with `signal`) */
#define KSTACK_REG_UNDEFINED    0
#define KSTACK_REG_PREV_SP      1
#define KSTACK_REG_DX           2
#define KSTACK_REG_DI           3
#define KSTACK_REG_BP           4
#define KSTACK_REG_SP           5
#define KSTACK_REG_R10          6
#define KSTACK_REG_R13          7
#define KSTACK_REG_BP_INDIRECT  8
#define KSTACK_REG_SP_INDIRECT  9
#define KSTACK_TYPE_UNDEFINED    0
#define KSTACK_TYPE_END_OF_STACK 1
#define KSTACK_TYPE_CALL         2
#define KSTACK_TYPE_REGS         3
#define KSTACK_TYPE_REGS_PARTIAL 4

/* struct pt_regs (x86-64 ABI): offsets of the fields the walk reads */
#define KSTACK_REGS_BP    32
#define KSTACK_REGS_R13   16
#define KSTACK_REGS_R10   56
#define KSTACK_REGS_DX    96
#define KSTACK_REGS_DI    112
#define KSTACK_REGS_IP    128
#define KSTACK_REGS_CS    136
#define KSTACK_REGS_SP    152
#define KSTACK_REGS_SIZE  168
#define KSTACK_IRET_SIZE  40 /* ip, cs, flags, sp, ss */
/* Addresses below it are user space: the kernel's walk ends there (not kernel text). */
#define KSTACK_KERNEL_HALF 0xffff800000000000ULL

/* The stack is read in windows of this size (a walk of a syscall's stack: one). */
#define KSTACK_WIN 2048
/* THREAD_SIZE is 16 KB on x86-64, 32 KB with KASAN: bounds further apart are not one stack. */
#define KSTACK_MAX_SIZE 65536

enum { KSTACK_ON, KSTACK_END, KSTACK_LEAVE };

struct kstack_walk {
	struct kstack_counts counts; /* first: user space reads them (include/kstack.h) */
	__u64 ip, sp, bp;
	__u64 regs, prev_regs; /* pt_regs met on the stack (addresses); 0: none */
	__u64 lo, hi;          /* the task's stack */
	__u64 base;            /* of the window */
	__u64 launder;         /* pointers become numbers through it */
	__u32 len;             /* bytes in the window */
	__u32 nr;              /* frames stored */
	__u32 first;           /* bpf_get_stack()'s first kernel-text frame, when compared */
	__u32 until_check;
	__u8 full_regs, signal;
	__u8 pad[6];
	__u8 buf[KSTACK_WIN + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kstack_walk);
} kstack_walks SEC(".maps");

/* bpf_get_stack()'s frames, to compare a walk with. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_trace);
} kstack_check SEC(".maps");

/* ORC entries found, by the address looked up: the kernel's text does not change under a run. */
#define KSTACK_ORC_CACHE 4096
struct kstack_orc {
	__u64 tag; /* the address looked up; 0: empty */
	__s16 sp_off, bp_off;
	__u8 sp_reg, bp_reg, type, signal;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KSTACK_ORC_CACHE);
	__type(key, __u32);
	__type(value, struct kstack_orc);
} kstack_orcs SEC(".maps");

static __always_inline bool kstack_in_text(__u64 ip)
{
	return ip >= kstack_cfg.text_start && ip < kstack_cfg.text_end;
}

/* Reads the window from addr on (up to the top of the stack).  Off the task's stack: the kernel's
 * walk would look for another stack there, which this one leaves to it.  0 or -1.  Global: the
 * walk's reads each branch to it, and it is verified once. */
__noinline int kstack_fill(__u64 addr)
{
	__u64 base = addr & ~7ULL, len;
	struct kstack_walk *w;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	if (!w || base < w->lo || base + 8 > w->hi)
		return -1;
	len = w->hi - base;
	if (len > KSTACK_WIN)
		len = KSTACK_WIN;
	barrier_var(len);
	if (len > KSTACK_WIN || bpf_probe_read_kernel(w->buf, len, (void *)base))
		return -1;
	w->base = base;
	w->len = len;
	return 0;
}

/* The 8 bytes of the stack at addr. */
static __always_inline int kstack_read(struct kstack_walk *w, __u64 addr, __u64 *val)
{
	__u64 off = addr - w->base;

	if (addr < w->base || off + 8 > w->len) {
		if (kstack_fill(addr))
			return -1;
		off = addr - w->base;
		if (off + 8 > w->len)
			return -1;
	}
	*val = *(__u64 *)&w->buf[off & (KSTACK_WIN - 1)];
	return 0;
}

/* A register saved in the pt_regs met last (get_reg()): 0, 1 when the kernel has none to give,
 * -1 when it cannot be read here. */
static __always_inline int kstack_reg(struct kstack_walk *w, __u32 off, __u64 *val)
{
	if (!w->regs)
		return 1;
	if (w->full_regs)
		return kstack_read(w, w->regs + off, val);
	if (w->prev_regs)
		return kstack_read(w, w->prev_regs + off, val);
	return 1;
}

struct kstack_search {
	__u64 ip;
	__u32 first, last;
	int found;
};

/* One halving of __orc_find()'s binary search: the rightmost entry at or below ip. */
static long kstack_halve(__u64 i, void *data)
{
	struct kstack_search *s = data;
	__u32 mid = s->first + (s->last - s->first) / 2;
	__u64 at = kstack_cfg.orc_ip + (__u64)mid * 4;
	int off;

	if (s->first > s->last || bpf_probe_read_kernel(&off, sizeof(off), (void *)at))
		return 1;
	if (at + (__s64)off <= s->ip) {
		s->found = mid;
		s->first = mid + 1;
	} else {
		if (mid == 0)
			return 1;
		s->last = mid - 1;
	}
	return 0;
}

/* Index of the kernel's ORC entry for ip, __orc_find() over the whole table (the kernel's fast
 * lookup narrows the same search to a block first); -1 when none. */
static __always_inline int kstack_orc_search(__u64 ip)
{
	struct kstack_search s = { .ip = ip, .last = kstack_cfg.orc_nr - 1, .found = -1 };

	if (!kstack_cfg.orc_nr || kstack_cfg.orc_nr > 0x7fffffff)
		return -1;
	bpf_loop(32, kstack_halve, &s, 0);
	return s.found;
}

/* The ORC entry for the code at ip, from the cache or the kernel's tables.  0, or -1 (left). */
static __always_inline int kstack_orc(struct kstack_walk *w, __u64 ip, struct kstack_orc *out)
{
	__u32 slot = (ip * 0x9e3779b97f4a7c15ULL) >> 52; /* 12 bits: KSTACK_ORC_CACHE */
	struct kstack_orc *c = bpf_map_lookup_elem(&kstack_orcs, &slot);
	struct orc_entry e;
	__u8 raw[16] = {};
	int idx;

	if (c && c->tag == ip) {
		*out = *c;
		return 0;
	}
	if (!kstack_in_text(ip))
		return -1;
	w->counts.n[KSTACK_ORC_MISSES]++;
	idx = kstack_orc_search(ip);
	if (idx < 0 || bpf_core_type_size(struct orc_entry) > sizeof(raw) ||
	    bpf_probe_read_kernel(raw, bpf_core_type_size(struct orc_entry),
				  (void *)(kstack_cfg.orc +
					   (__u64)idx * bpf_core_type_size(struct orc_entry))))
		return -1;
	__builtin_memcpy(&e, raw, sizeof(e));
	out->tag = ip;
	out->sp_off = BPF_CORE_READ_BITFIELD(&e, sp_offset);
	out->bp_off = BPF_CORE_READ_BITFIELD(&e, bp_offset);
	out->sp_reg = BPF_CORE_READ_BITFIELD(&e, sp_reg);
	out->bp_reg = BPF_CORE_READ_BITFIELD(&e, bp_reg);
	out->type = BPF_CORE_READ_BITFIELD(&e, type);
	out->signal = BPF_CORE_READ_BITFIELD(&e, signal);
	if (c)
		*c = *out;
	return 0;
}

/* A return address the kernel's walk would replace by the one a return hook saved
 * (unwind_recover_ret_addr(): the function graph tracer, kretprobes). */
static __always_inline bool kstack_hooked(__u64 ip)
{
	return ip && (ip == kstack_cfg.ret_hooks[0] || ip == kstack_cfg.ret_hooks[1]);
}

/* Stores the current frame, as perf_callchain_kernel()'s loop does, and moves to the caller as
 * unwind_next_frame() does.  KSTACK_ON, KSTACK_END (the kernel's walk ends there too) or
 * KSTACK_LEAVE.  Global: verified once, whatever the number of frames. */
__noinline int kstack_step(__u32 depth)
{
	__u64 sp, ip, tmp, prev_sp, cs;
	struct kstack_walk *w;
	struct stack_trace *st;
	struct kstack_orc orc;
	bool indirect = false;
	__u32 zero = 0;
	int r;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w || !st)
		return KSTACK_LEAVE;
	/* unwind_get_return_address(): an address outside kernel text ends the stack (a user
	 * address: the syscall's entry was the last frame); kernel code outside the core text
	 * has lookups of its own in the kernel */
	if (!kstack_in_text(w->ip))
		return w->ip < KSTACK_KERNEL_HALF ? KSTACK_END : KSTACK_LEAVE;
	st->ips[depth & MAX_STACK_DEPTH] = w->ip;
	w->nr = depth + 1;
	if (w->nr >= targ_max_stack)
		return KSTACK_END;

	if (w->regs) {
		if (kstack_read(w, w->regs + KSTACK_REGS_CS, &cs))
			return KSTACK_LEAVE;
		if (cs & 3) /* user_mode() */
			return KSTACK_END;
	}
	/* the call instruction's entry, not the next one's (a call to a noreturn function) */
	if (kstack_orc(w, w->signal ? w->ip : w->ip - 1, &orc))
		return KSTACK_LEAVE;
	if (orc.type == KSTACK_TYPE_UNDEFINED || orc.type == KSTACK_TYPE_END_OF_STACK)
		return KSTACK_END;
	w->signal = orc.signal;

	switch (orc.sp_reg) {
	case KSTACK_REG_SP:
		sp = w->sp + orc.sp_off;
		break;
	case KSTACK_REG_BP:
		sp = w->bp + orc.sp_off;
		break;
	case KSTACK_REG_SP_INDIRECT:
		sp = w->sp;
		indirect = true;
		break;
	case KSTACK_REG_BP_INDIRECT:
		sp = w->bp + orc.sp_off;
		indirect = true;
		break;
	case KSTACK_REG_R10:
	case KSTACK_REG_R13:
	case KSTACK_REG_DI:
	case KSTACK_REG_DX:
		r = kstack_reg(w, orc.sp_reg == KSTACK_REG_R10 ? KSTACK_REGS_R10 :
				  orc.sp_reg == KSTACK_REG_R13 ? KSTACK_REGS_R13 :
				  orc.sp_reg == KSTACK_REG_DI ? KSTACK_REGS_DI : KSTACK_REGS_DX, &sp);
		if (r)
			return r < 0 ? KSTACK_LEAVE : KSTACK_END;
		break;
	default:
		return KSTACK_END;
	}
	if (indirect) {
		if (kstack_read(w, sp, &sp))
			return KSTACK_LEAVE;
		if (orc.sp_reg == KSTACK_REG_SP_INDIRECT)
			sp += orc.sp_off;
	}

	prev_sp = w->sp;
	switch (orc.type) {
	case KSTACK_TYPE_CALL:
		if (kstack_read(w, sp - 8, &ip) || kstack_hooked(ip))
			return KSTACK_LEAVE;
		w->ip = ip;
		w->sp = sp;
		w->regs = 0;
		w->prev_regs = 0;
		break;
	case KSTACK_TYPE_REGS:
		/* the whole pt_regs on the stack (stack_access_ok()) */
		if (sp < w->lo || sp + KSTACK_REGS_SIZE > w->hi ||
		    kstack_read(w, sp + KSTACK_REGS_IP, &ip) ||
		    kstack_read(w, sp + KSTACK_REGS_SP, &tmp) || kstack_hooked(ip))
			return KSTACK_LEAVE;
		w->ip = ip;
		w->sp = tmp;
		w->regs = sp;
		w->prev_regs = 0;
		w->full_regs = 1;
		break;
	case KSTACK_TYPE_REGS_PARTIAL:
		/* the iret frame (ip, cs, flags, sp, ss) at sp */
		if (sp < w->lo || sp + KSTACK_IRET_SIZE > w->hi || kstack_read(w, sp, &ip) ||
		    kstack_read(w, sp + KSTACK_REGS_SP - KSTACK_REGS_IP, &tmp) || kstack_hooked(ip))
			return KSTACK_LEAVE;
		w->ip = ip;
		w->sp = tmp;
		if (w->full_regs)
			w->prev_regs = w->regs;
		w->regs = sp - KSTACK_REGS_IP;
		w->full_regs = 0;
		break;
	default:
		return KSTACK_END;
	}

	switch (orc.bp_reg) {
	case KSTACK_REG_UNDEFINED:
		r = kstack_reg(w, KSTACK_REGS_BP, &tmp);
		if (r < 0)
			return KSTACK_LEAVE;
		if (r == 0)
			w->bp = tmp;
		break;
	case KSTACK_REG_PREV_SP:
		if (kstack_read(w, sp + orc.bp_off, &tmp))
			return KSTACK_LEAVE;
		w->bp = tmp;
		break;
	case KSTACK_REG_BP:
		if (kstack_read(w, w->bp + orc.bp_off, &tmp))
			return KSTACK_LEAVE;
		w->bp = tmp;
		break;
	default:
		return KSTACK_END;
	}
	/* "stack going in the wrong direction": bad ORC data */
	if (w->sp >= w->lo && w->sp + 8 <= w->hi && w->sp <= prev_sp)
		return KSTACK_END;
	return KSTACK_ON;
}

/* Walks from the state in kstack_walks: KSTACK_END (w->nr frames in stack_scratch) or
 * KSTACK_LEAVE.  Global, like kstack_step(). */
__noinline int kstack_walk(__u32 start)
{
	int r = KSTACK_END;

	/* start is always 0: read so that callers set the argument register */
	if (start)
		return KSTACK_LEAVE;
	for (__u32 i = 0; i < targ_max_stack && i < MAX_STACK_DEPTH; i++) {
		r = kstack_step(i);
		if (r != KSTACK_ON)
			break;
	}
	return r == KSTACK_ON ? KSTACK_END : r;
}

/* The walk's first state: the frame of the program's caller, as the kernel's frame-pointer
 * fallback leaves the program's frame: the return address at slot, the caller's frame pointer
 * just below (the JIT's push %rbp). */
static __always_inline int kstack_start(struct kstack_walk *w, __u64 slot, __u64 *ret)
{
	__u64 bp;

	w->len = 0;
	w->base = 0;
	w->regs = w->prev_regs = 0;
	w->full_regs = w->signal = 0;
	w->nr = 0;
	if (kstack_read(w, slot - 8, &bp) || kstack_read(w, slot, ret))
		return -1;
	w->ip = *ret;
	w->sp = slot + 8;
	w->bp = bp;
	return 0;
}

static __always_inline bool kstack_known_ret(const struct kstack_site_state *s, __u64 ret)
{
	return ret && (ret == s->ret[0] || ret == s->ret[1] || ret == s->ret[2] || ret == s->ret[3]);
}

struct kstack_cmp {
	__u32 k;      /* bpf_get_stack()'s frame the walk's first is compared with */
	__u32 differ;
};

static long kstack_cmp_frame(__u64 i, void *data)
{
	struct kstack_cmp *c = data;
	struct stack_trace *st, *ck;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	ck = bpf_map_lookup_elem(&kstack_check, &zero);
	if (!st || !ck || st->ips[i & MAX_STACK_DEPTH] != ck->ips[(i + c->k) & MAX_STACK_DEPTH]) {
		c->differ = 1;
		return 1;
	}
	return 0;
}

/* Whether the walk in stack_scratch (w->nr frames) is bpf_get_stack()'s in kstack_check (len bytes)
 * after the program's own frames: its frames from the first kernel-text one, all of them unless
 * bpf_get_stack() stopped at --max-stack (it spent frames on the program's).  Global; its loops
 * are bpf_loop()'s, which the verifier walks once, not once per frame. */
__noinline int kstack_same(long len)
{
	struct kstack_cmp c = {};
	struct stack_trace *ck;
	struct kstack_walk *w;
	__u32 zero = 0, n, want;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	ck = bpf_map_lookup_elem(&kstack_check, &zero);
	if (!w || !ck || len <= 0)
		return 0;
	n = len / sizeof(__u64);
	for (c.k = 0; c.k < 8 && c.k < n; c.k++)
		if (kstack_in_text(ck->ips[c.k & MAX_STACK_DEPTH]))
			break;
	if (c.k >= n || c.k == 8)
		return 0;
	want = n - c.k;
	if (n < targ_max_stack ? w->nr != want : w->nr < want)
		return 0;
	bpf_loop(want, kstack_cmp_frame, &c, 0);
	return !c.differ;
}

struct kstack_find {
	__u64 ctx, want, slot;
};

/* Looks at the i-th slot below ctx for the return address wanted. */
static long kstack_find_slot(__u64 i, void *data)
{
	struct kstack_find *f = data;
	struct kstack_walk *w;
	__u32 zero = 0;
	__u64 v, at = f->ctx - 8 * (i + 1);

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	if (!w || kstack_read(w, at, &v))
		return 1;
	if (v == f->want) {
		f->slot = at;
		return 1;
	}
	return 0;
}

/* Learns a site's slot from bpf_get_stack()'s frames in kstack_check (len bytes), ctx at ctx_addr:
 * where below ctx its first kernel-text frame lies, then a walk from there that must give the
 * same stack.  1 when learned (the walk is in stack_scratch), 0 otherwise.  Global. */
__noinline int kstack_learn(__u32 site, __u64 ctx_addr, long len)
{
	struct kstack_site_state *s;
	struct stack_trace *ck;
	struct kstack_walk *w;
	__u64 want, slot = 0, ret;
	__u32 zero = 0, n, k;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	ck = bpf_map_lookup_elem(&kstack_check, &zero);
	if (!w || !ck || site >= KSTACK_SITES || len <= 0)
		return 0;
	s = kstack_site(site);
	n = len / sizeof(__u64);
	for (k = 0; k < 8 && k < n; k++)
		if (kstack_in_text(ck->ips[k & MAX_STACK_DEPTH]))
			break;
	if (k >= n || k == 8)
		return 0;
	want = ck->ips[k & MAX_STACK_DEPTH];
	if (s->off) {
		slot = ctx_addr + s->off;
	} else {
		/* the call into the program is below ctx, within its caller's frame */
		struct kstack_find f = { .ctx = ctx_addr, .want = want };

		w->len = 0;
		w->base = 0;
		bpf_loop(64, kstack_find_slot, &f, 0);
		slot = f.slot;
	}
	if (!slot || kstack_start(w, slot, &ret) || ret != want || kstack_walk(0) != KSTACK_END ||
	    !kstack_same(len))
		return 0;
	for (int i = 0; i < 4; i++) {
		if (s->ret[i] == want || !s->ret[i]) {
			s->ret[i] = want;
			s->off = slot - ctx_addr;
			return 1;
		}
	}
	return 0;
}

enum { KSTACK_TRY_WALKED, KSTACK_TRY_CHECK, KSTACK_TRY_LEARN, KSTACK_TRY_KERNEL };

/* The walk of the current task's kernel stack from the slot site learned below ctx (at
 * ctx_addr): KSTACK_TRY_WALKED (the frames in stack_scratch), KSTACK_TRY_CHECK (walked, to be
 * compared with bpf_get_stack()), KSTACK_TRY_LEARN (no slot learned that holds a return address
 * seen before: calibrate) or KSTACK_TRY_KERNEL.  Global: the program has one path past it per
 * answer, not one per way through it. */
__noinline int kstack_try(__u32 site, __u64 ctx_addr)
{
	struct kstack_site_state *s = kstack_site(site);
	struct task_struct *task;
	struct kstack_walk *w;
	__u32 zero = 0;
	__u64 ret;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	if (!w)
		return KSTACK_TRY_KERNEL;
	if (s->stopped)
		goto kernel;
	/* pointers as numbers (a program with CAP_PERFMON may store them) */
	task = bpf_get_current_task_btf();
	w->launder = (__u64)bpf_task_pt_regs(task);
	w->hi = *(volatile __u64 *)&w->launder + KSTACK_REGS_SIZE;
	w->launder = (__u64)task->stack;
	w->lo = *(volatile __u64 *)&w->launder;
	/* A wake-up from an interrupt runs on the interrupt's stack; and the boot CPU's idle task
	 * has a task_pt_regs() far from its task->stack. */
	if (w->hi <= w->lo || w->hi - w->lo > KSTACK_MAX_SIZE || ctx_addr < w->lo ||
	    ctx_addr >= w->hi)
		goto kernel;
	if (s->off && !kstack_start(w, ctx_addr + s->off, &ret) && kstack_known_ret(s, ret)) {
		if (kstack_walk(0) != KSTACK_END) {
			w->counts.n[KSTACK_LEFT]++;
			goto kernel;
		}
		if (w->until_check) {
			w->until_check--;
			w->counts.n[KSTACK_WALKED]++;
			return KSTACK_TRY_WALKED;
		}
		w->until_check = targ_kstack_check_every - 1;
		w->counts.n[KSTACK_CHECKED]++;
		return KSTACK_TRY_CHECK;
	}
	if (s->tries < KSTACK_MAX_TRIES)
		return KSTACK_TRY_LEARN;
kernel:
	w->counts.n[KSTACK_KERNEL]++;
	return KSTACK_TRY_KERNEL;
}

/* After kstack_try()'s KSTACK_TRY_CHECK or KSTACK_TRY_LEARN (asked), with bpf_get_stack()'s
 * frames in kstack_check (len bytes): 1 when the walk in stack_scratch stands, 0 when the stack is
 * to be bpf_get_stack()'s (a check that differed stops the walker for the run).  Global. */
__noinline int kstack_judge(__u32 site, __u64 ctx_addr, long len, int asked)
{
	struct kstack_site_state *s = kstack_site(site);
	struct kstack_walk *w;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	if (!w)
		return 0;
	if (asked == KSTACK_TRY_CHECK) {
		if (kstack_same(len)) {
			w->counts.n[KSTACK_WALKED]++;
			return 1;
		}
		w->counts.n[KSTACK_DIFFERED]++;
		s->stopped = 1;
	} else if (kstack_learn(site, ctx_addr, len)) {
		w->counts.n[KSTACK_LEARNED]++;
		return 1;
	} else {
		__sync_fetch_and_add(&s->tries, 1);
		w->counts.n[KSTACK_UNLEARNED]++;
	}
	w->counts.n[KSTACK_KERNEL]++;
	return 0;
}

/* Captures the current task's kernel stack at tracepoint `site` into `stacks`, as
 * capture_stack(ctx, 0, id) does (and with the same frames after the program's own). */
static __always_inline int capture_kernel_stack(void *ctx, __u32 site, __u64 *id)
{
	struct stack_trace *st, *ck;
	struct kstack_walk *w;
	__u32 zero = 0;
	__u64 ctx_addr;
	int r;

	if (!targ_kstack || !bpf_core_field_exists(struct orc_entry, signal) ||
	    !*(volatile __u32 *)&kstack_cfg.ready)
		return capture_stack(ctx, 0, id);
	w = bpf_map_lookup_elem(&kstack_walks, &zero);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	ck = bpf_map_lookup_elem(&kstack_check, &zero);
	if (!w || !st || !ck)
		return capture_stack(ctx, 0, id);
	w->launder = (__u64)ctx;
	ctx_addr = *(volatile __u64 *)&w->launder;
	r = kstack_try(site, ctx_addr);
	if (r == KSTACK_TRY_CHECK || r == KSTACK_TRY_LEARN)
		r = kstack_judge(site, ctx_addr,
				 bpf_get_stack(ctx, ck->ips, targ_max_stack * sizeof(__u64), 0), r) ?
			    KSTACK_TRY_WALKED : KSTACK_TRY_KERNEL;
	if (r == KSTACK_TRY_WALKED)
		return store_stack(st, (w->nr & MAX_STACK_DEPTH) * sizeof(__u64), id);
	return capture_stack(ctx, 0, id);
}
#else
/* ORC is x86's: elsewhere the kernel's walk. */
const volatile bool targ_kstack = false;
const volatile __u32 targ_kstack_check_every = 1024;
struct kstack_cfg kstack_cfg;
struct kstack_site_state kstack_sites[KSTACK_SITES];

static __always_inline int capture_kernel_stack(void *ctx, __u32 site, __u64 *id)
{
	return capture_stack(ctx, 0, id);
}
#endif
#endif
