/* Stack capture into bpfprof's own storage: bpf_get_stack() into a per-CPU buffer, hashed,
 * stored once per distinct stack.  Shared by profile, offcpu and every stack-collecting program. */
#ifndef BPFPROF_STACKS_BPF_H
#define BPFPROF_STACKS_BPF_H
#include "stacks.h"

/* Settings, fixed before load. */
const volatile __u32 targ_max_stack = STACK_DEPTH_DEFAULT;
/* bpf_loop() exists (5.17): loops the verifier would walk round by round are its callbacks,
 * checked once (a helper the verifier never reaches, where this is false, is not checked) */
const volatile bool targ_loop = false;
/* Slots - 1 of a stored stack (a power of two minus one, above targ_max_stack): the value size
 * the loader gave `stacks`.  Read-only data is a known constant to the verifier, so masking with
 * it proves an index inside that size. */
const volatile __u32 targ_stack_mask = STACK_DEPTH_DEFAULT;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_trace);
} stack_scratch SEC(".maps");

/* Key and value by size, not BTF type: the loader shrinks the value to --max-stack's slots,
 * which the kernel refuses as not the type's size (EINVAL after preallocating the whole map,
 * then libbpf's retry without BTF: 5-8 ms of every start). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-stacks, set by the loader */
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct stack_trace));
} stacks SEC(".maps");

/* Processes user space knows: 1 when it has captured their mappings (or been asked to), 0 after
 * an exec until it is asked again, SEEN_EXITED once its leader exited (told to user space).
 * Kept across exec so that the exit is still told.  Sized by the loader for the CPUs. */
#define SEEN_EXITED 2
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} seen_procs SEC(".maps");

#define PROC_EVENTS_BYTES (256 * 1024)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROC_EVENTS_BYTES);
} proc_events SEC(".maps");

__u64 lost[LOST_REASONS];

/* Draining (include/stacks.h): the generation programs write (the low bit of a count user space
 * adds one to at every flip); and how many keys were ever inserted, which with what user space
 * deleted gives how full the maps are. */
__u32 drain_gen;
__u64 stacks_stored, counts_stored;
/* Where the maps are drained: exits of processes seen are told to user space. */
const volatile bool targ_exit_events = false;
/* Samples are kept apart by the task's cgroup v2 (sample_key.cgroup): pprof's cgroup label. */
const volatile bool targ_cgroup_key = false;

/* The drain count this program run writes under, read once: user space adds one at every
 * flip, and its low bit is the generation, which the run's stacks and its count go to.  Kept in
 * the per-CPU scratch buffer for store_stack().  A record that outlives the run (offcpu's, from
 * switch-out to switch-in) keeps the count to tell whether a flip came in between. */
static __always_inline __u32 drain_seq_begin(void)
{
	__u32 zero = 0, seq = *(volatile __u32 *)&drain_gen;
	struct stack_trace *st = bpf_map_lookup_elem(&stack_scratch, &zero);

	if (st)
		st->gen = seq & 1;
	return seq;
}

/* The generation this program run writes (drain_seq_begin()'s low bit). */
static __always_inline __u32 drain_gen_begin(void)
{
	return drain_seq_begin() & 1;
}

static __always_inline void count_lost(enum lost_reason why)
{
	if (why < LOST_REASONS)
		__sync_fetch_and_add(&lost[why], 1);
}

struct stack_hash_loop {
	struct stack_trace *st;
	__u64 h;
};

/* One round of stack_hash(): frames 2i and 2i + 1. */
static long stack_hash_round(__u64 i, void *data)
{
	struct stack_hash_loop *l = data;
	__u64 j = (i * 2) & (MAX_STACK_DEPTH - 1); /* even, and j + 1 within ips[] */

	l->h = (((l->h ^ l->st->ips[j]) * 0x100000001b3ULL) ^ l->st->ips[j + 1]) * 0x100000001b3ULL;
	return 0;
}

/* FNV-1a over the nr frames in stack_scratch, 64-bit words, with a final avalanche; never
 * returns 0, which means "no stack".  Global, so verified once, not at each of a program's
 * stack captures (three in profile's).  Its rounds are bpf_loop()'s where the kernel has it
 * (targ_loop), a body the verifier checks once; else a loop bounded by --max-stack, a constant
 * to the verifier, which walks it once per round it could make: 64 rounds of two frames by
 * default, 870 of do_sample's 9,200 instructions verified.  No capture holds more frames.  An
 * odd count hashes a zero after its last frame (the scratch buffer has a spare slot). */
__noinline __u64 stack_hash(__u32 nr)
{
	__u64 h = 0xcbf29ce484222325ULL ^ nr, max = targ_max_stack;
	struct stack_hash_loop l;
	struct stack_trace *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return 1;
	st->ips[nr & MAX_STACK_DEPTH] = 0;
	if (targ_loop) {
		l.st = st;
		l.h = h;
		bpf_loop(((nr < max ? nr : max) + 1) / 2, stack_hash_round, &l, 0);
		h = l.h;
	} else {
		for (__u64 i = 0; i < max && i < MAX_STACK_DEPTH; i += 2) {
			if (i >= nr)
				break;
			h = (((h ^ st->ips[i]) * 0x100000001b3ULL) ^ st->ips[i + 1]) * 0x100000001b3ULL;
		}
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/* Stores the len bytes of frames bpf_get_stack() / bpf_get_task_stack() put in st->ips (st is
 * stack_scratch's, which every caller fills). */
static __always_inline int store_stack(struct stack_trace *st, long len, __u64 *id)
{
	struct stack_trace *old;
	__u32 nr, last;
	long err;

	if (len < 0) {
		count_lost(LOST_STACK_ERR);
		return (int)len;
	}
	nr = len / sizeof(__u64);
	*id = 0;
	if (nr == 0)
		return 0;
	/* The mask proves the index in bounds of a stored stack to the verifier. */
	last = (nr - 1) & targ_stack_mask;
	st->nr = nr;
	/* the low bit is the generation (drain_gen_begin(); 0 where nothing drains) */
	*id = (stack_hash(nr) & ~1ULL) | (st->gen & 1);
	if (!*id)
		*id = 2;

	old = bpf_map_lookup_elem(&stacks, id);
	if (old) {
		/* Full comparison would cost as much as the hash; length and both ends catch a
		 * collision with near certainty. */
		if (old->nr != nr || old->ips[0] != st->ips[0] || old->ips[last] != st->ips[last]) {
			count_lost(LOST_STACK_COLLIDED);
			return -EEXIST;
		}
		return 0;
	}
	err = bpf_map_update_elem(&stacks, id, st, BPF_NOEXIST);
	if (!err)
		__sync_fetch_and_add(&stacks_stored, 1);
	if (err && !bpf_map_lookup_elem(&stacks, id)) {
		/* deep stacks' map is not preallocated: an allocation in NMI can fail too */
		count_lost(err == -E2BIG ? LOST_STACKS_FULL : LOST_STACK_ERR);
		return err;
	}
	return 0;
}

/* Captures the current user (BPF_F_USER_STACK) or kernel stack and stores it in `stacks`;
 * *id gets its key, or 0 for an empty stack.  Returns 0 or a negative errno (loss counted). */
static __always_inline int capture_stack(void *ctx, __u64 flags, __u64 *id)
{
	struct stack_trace *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return -ENOENT;
	return store_stack(st, bpf_get_stack(ctx, st->ips, targ_max_stack * sizeof(__u64), flags), id);
}

#if defined(__TARGET_ARCH_x86)
/* The user stack of the current task, from a tracepoint in task context (tp_btf or iterator
 * programs: bpf_get_current_task_btf() and bpf_task_pt_regs(), 5.15+), walked here rather than
 * by bpf_get_stack(): the same frame-pointer walk as the kernel's perf_callchain_user() (first
 * the saved user ip, then a {next frame, return address} pair per frame), with one more rule:
 * a frame must lie above the previous one (and above the user sp) and be 8-byte aligned, as
 * every real frame on the thread's stack does.  The kernel instead follows any address until a
 * read faults, and code built without frame pointers (Debian's libc) leaves garbage in %rbp:
 * that costs a page fault on about every other context switch, and records return addresses
 * read from wherever the garbage pointed.  Stopping there gives the same frames up to that
 * point, without the garbage tail.  32-bit tasks go to bpf_get_stack().
 * Returns 0 or a negative errno (loss counted), like capture_stack(). */
static __always_inline int capture_user_stack_fp(void *ctx, __u64 *id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct { __u64 next, ret; } frame;
	__u64 fp, lower;
	struct stack_trace *st;
	__u32 zero = 0, i, n = 1;

	if ((regs->cs & 0xffff) != 0x33 /* __USER_CS: 64-bit user mode */)
		return capture_stack(ctx, BPF_F_USER_STACK, id);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return -ENOENT;
	st->ips[0] = regs->ip;
	fp = regs->bp;
	lower = regs->sp;
	for (i = 1; i < MAX_STACK_DEPTH; i++) {
		if (i >= targ_max_stack || fp < lower || (fp & 7))
			break;
		if (bpf_probe_read_user(&frame, sizeof(frame), (void *)fp))
			break;
		st->ips[i] = frame.ret;
		n = i + 1;
		lower = fp + sizeof(frame);
		fp = frame.next;
	}
	return store_stack(st, n * sizeof(__u64), id);
}
#endif

/* Same for the kernel stack of a task that is not running (bpf_get_task_stack(), 5.9+): where a
 * blocked thread sleeps.  Only tracing programs (iterators, tp_btf) hold such task pointers. */
static __always_inline int capture_task_stack(struct task_struct *task, __u64 *id)
{
	struct stack_trace *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return -ENOENT;
	return store_stack(st, bpf_get_task_stack(task, st->ips, targ_max_stack * sizeof(__u64), 0),
			   id);
}

/* Asks user space, once per process (and again after exec), to capture its mappings. */
static __always_inline void note_process(__u32 tgid)
{
	struct proc_seen_event *e;
	__u8 one = 1, *seen;

	seen = bpf_map_lookup_elem(&seen_procs, &tgid);
	if (seen && *seen)
		return;
	/* two CPUs may both ask: a second snapshot is harmless */
	if (seen)
		*seen = 1;
	else if (bpf_map_update_elem(&seen_procs, &tgid, &one, BPF_NOEXIST))
		return;
	e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);
	if (!e) {
		/* Try again at the next sample. */
		seen = bpf_map_lookup_elem(&seen_procs, &tgid);
		if (seen)
			*seen = 0;
		count_lost(LOST_NOTIFY);
		return;
	}
	e->tgid = tgid;
	e->exited = 0;
	e->time = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
}

/* Process tgid has exited: a pid that comes back is another process, which note_process() will
 * announce afresh.  Tells user space if it knew the process (targ_exit_events). */
static __always_inline void note_process_exit(__u32 tgid)
{
	struct proc_seen_event *e;
	__u8 *seen;

	if (!targ_exit_events) {
		/* its pid may come back as another process: announced afresh then */
		bpf_map_delete_elem(&seen_procs, &tgid);
		return;
	}
	/* The leader's exit: other threads may run on a little (exit_group) and take samples;
	 * SEEN_EXITED keeps them from announcing the dying process again.  A new process under the
	 * pid announces itself at its exec (forget_exec); one that only forked is snapshotted by
	 * user space at its first sample. */
	seen = bpf_map_lookup_elem(&seen_procs, &tgid);
	if (!seen || *seen == SEEN_EXITED)
		return;
	*seen = SEEN_EXITED;
	/* lost, the process's symbols stay until the run ends: memory, not samples */
	e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);
	if (!e)
		return;
	e->tgid = tgid;
	e->exited = 1;
	e->time = bpf_ktime_get_ns();
	/* No wakeup: user space reads the ring at its next tick (it holds 16k exits); waking it
	 * costs a self-IPI per exit, ~6 us of the exit in a VM.  Woken when a quarter full. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&proc_events, BPF_RB_AVAIL_DATA) >=
				      PROC_EVENTS_BYTES / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Stack id under generation gen (bpf/stacks.bpf.h: the low bit), for a sample counted in a later
 * generation than the one its stack was stored in (offcpu: stored at the switch-out, counted at
 * the switch-in): the frames are copied from the other generation when they are not there yet,
 * so that the drain that reads the count finds its stack.  0 stays 0. */
static __always_inline __u64 stack_in_gen(__u64 id, __u32 gen)
{
	__u64 want = (id & ~1ULL) | (gen & 1), other = want ^ 1;
	struct stack_trace *st;

	if (!id || bpf_map_lookup_elem(&stacks, &want))
		return id ? want : 0;
	st = bpf_map_lookup_elem(&stacks, &other);
	if (st && !bpf_map_update_elem(&stacks, &want, st, BPF_NOEXIST))
		__sync_fetch_and_add(&stacks_stored, 1);
	return want;
}

/* Adds delta to the counter under key (a struct sample_key, or a larger key that begins with
 * one); counts the loss when the map is full. */
static __always_inline void add_to_counts(void *counts, const void *key, __u64 delta)
{
	__u64 *val = bpf_map_lookup_elem(counts, key);

	if (!val) {
		if (!bpf_map_update_elem(counts, key, &(__u64){ 0 }, BPF_NOEXIST))
			__sync_fetch_and_add(&counts_stored, 1);
		val = bpf_map_lookup_elem(counts, key);
		if (!val) {
			count_lost(LOST_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(val, delta);
}
#endif
