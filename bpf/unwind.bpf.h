/* In-kernel user-stack unwinding from call-frame tables (x86-64).
 *
 * User space (user/unwind/unwinder.c) loads, per process, its executable mappings (`unwind_procs`) and,
 * per mapped file, a sorted table of rows built from .eh_frame/.debug_frame (`unwind_rows`,
 * partitioned by `unwind_tables`).  From a task's user registers the walk repeats: find the
 * mapping of the PC, binary-search its file's row, compute the CFA, read the return address
 * at CFA - 8 and the caller's frame pointer where the row says, move to the caller.  Code
 * without a table (JIT, stripped files, tables still loading) takes a frame-pointer step with
 * --unwind auto, and ends the stack with --unwind eh, which never guesses.
 *
 * Verifier budget: one frame is a global (separately verified) function, unwind_step(), so the
 * frame loop costs the verifier a few instructions per iteration on any kernel with global
 * functions (5.6+) and needs neither bpf_loop nor tail calls; where bpf_loop() exists (5.17)
 * the loop is its callback, verified once (targ_loop).
 *
 * Users: include after stacks.bpf.h; call unwind_ctx_user_stack() (perf_event, kprobe and uprobe
 * programs) or unwind_current_user_stack() (tracepoints, e.g. at sched_switch) instead of
 * capture_stack(BPF_F_USER_STACK); include unwind_progs.bpf.h after the sampling programs (the
 * unwinder's own: exec, exit, mmap, fork and the walk at a syscall's entry). */
#ifndef BPFPROF_UNWIND_BPF_H
#define BPFPROF_UNWIND_BPF_H
#include "errno.bpf.h"
#include "stacks.bpf.h"
#include "target.bpf.h"
#include "unwind.h"

/* Settings, fixed before load. */
const volatile __u32 targ_unwind = UNWIND_FP;
const volatile bool targ_unwind_task_regs = true; /* bpf_task_pt_regs() exists (5.15+) */
/* A process whose mapping list user space has not loaded yet (its first samples) is walked with
 * the kernel's mappings: bpf_find_vma() (5.17), and the offsets of the fields it needs
 * (unwind_kfields), which user space reads from the kernel's BTF (user/core/btffields.c) rather
 * than have libbpf load all of it for a CO-RE relocation.  Off (or the fields not found): such
 * stacks take the frame-pointer walk (auto). */
const volatile bool targ_find_vma = false;
/* Mappings found ahead of the first sample (targ_prefill): at exec, the program's text and its
 * interpreter's; at each mmap() of code, that code's (what ld.so maps next).  A timer sample may
 * search the kernel's mappings only once (below), so a stack across files, walked before user
 * space has read the process's list, stopped short at its second file; these searches run in
 * process context, where one mmap lock is released before the next is taken. */
const volatile bool targ_prefill = false;
/* Written by user space after load, before anything is attached (include/unwind.h). */
struct unw_kfields unwind_kfields;

/* The kernel's mappings can be searched: the helper exists and its fields were found. */
static __always_inline bool unwind_vma_on(void)
{
	return targ_find_vma && unwind_kfields.ok;
}

/* Rows of every loaded table; user space writes them through mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* --unwind-mem, set by the loader */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unw_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UNWIND_MAX_TABLES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unw_table);
} unwind_tables SEC(".maps");

/* Allocated as processes are seen, not up front: 8 KB each. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unw_proc);
} unwind_procs SEC(".maps");

/* Table ids by file, for walks through the kernel's mappings (targ_find_vma); user space adds
 * every file it gives an id, the walk marks the ones it asked about. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * UNWIND_MAX_TABLES);
	__type(key, struct unw_file_key);
	__type(value, struct unw_file_ref);
} unwind_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} unwind_events SEC(".maps");

/* struct unw_kmaps by process; LRU: user space reads an exited process's entry when it
 * symbolizes its samples, and deletes it when it forgets the process. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct unw_kmaps);
} unwind_kmaps SEC(".maps");

/* The walk in progress (struct unw_walk), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_walk);
} walks SEC(".maps");

/* Each thread's walk at its last execve() / exit_group() (struct unw_sysstack): threads inside
 * one at once, across the machine, are few. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct unw_sysstack);
} unwind_sysstacks SEC(".maps");

/* Rows recently found, per CPU: hot code returns to the same addresses sample after sample, and a
 * hit saves the binary search.  A row is a pure function of (file, offset), so entries stay right
 * when tables are evicted and reloaded (table ids are never reused for another file). */
#define UNWIND_ROW_CACHE 1024
struct unw_cached_row {
	__u64 tag; /* (table << 32 | offset) + 1; 0: empty */
	struct unw_row row;
};

/* One value per CPU holding every slot: a per-CPU array of 1024 entries made 1024 per-CPU
 * allocations at every start (0.6 ms). */
struct unw_row_cache {
	struct unw_cached_row slots[UNWIND_ROW_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_row_cache);
} unwind_row_cache SEC(".maps");

/* Ignore the table's last_used updates finer than this: they would bounce its cache line. */
#define UNWIND_TOUCH_NS 100000000ULL
/* At most one mapping refresh per process per second: garbage return addresses miss every time. */
#define UNWIND_REFRESH_NS 1000000000ULL
/* User-space addresses end below this on x86-64 (47-bit, or 56-bit with 5-level paging). */
#define UNWIND_USER_MAX 0x00ffffffffffffffULL

static __always_inline void unwind_count(struct unw_walk *s, enum unw_stat what)
{
	if (what < UNW_STAT_NR)
		s->stats[what]++;
}

static __always_inline int unwind_request(struct unw_walk *s, __u32 type, __u32 table)
{
	struct unw_event *e = bpf_ringbuf_reserve(&unwind_events, sizeof(*e), 0);

	if (!e) {
		unwind_count(s, UNW_STAT_REQ_LOST);
		return -ENOSPC;
	}
	e->type = type;
	e->tgid = s->tgid;
	e->table = table;
	e->pad = 0;
	e->addr = 0;
	e->file.dev = e->file.ino = 0;
	/* A refresh waits for user space's next look at the ring (100 ms at most; the walks have
	 * the kernel's mappings meanwhile): under process churn one a new process, each a
	 * wake-up.  A table is needed now; forced, since a refresh before it left the ring
	 * unread, when an unforced record wakes no one. */
	bpf_ringbuf_submit(e, type == UNW_EV_REFRESH_PROC ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A new process's entry in unwind_kmaps, a thread's in unwind_sysstacks: too large for the BPF
 * stack. */
static const struct unw_sysstack unwind_sysstack_empty;
static const struct unw_kmaps unwind_kmaps_empty;

/* What bpf_find_vma()'s callback found for the walk. */
struct unw_vma_found {
	__u64 start, end, pgoff, flags;
	struct unw_file_key file; /* ino 0: no file (anonymous code) */
};

#define UNW_VM_EXEC 0x4 /* include/linux/mm.h VM_EXEC */

static __always_inline __u64 unwind_read_kernel(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (void *)addr);
	return v;
}

/* 1 when a >= b (unsigned), 0 otherwise, with no branch: the borrow of a - b.  BPF has no
 * set-on-condition instruction, and a branch per halving of a search doubles the verifier's
 * paths: the index stays a constant on each, and the search's 8 halvings made 256 of them (a
 * third of profile's verification).  Computed, the index is one bounded unknown on one path. */
static __always_inline __u64 not_below(__u64 a, __u64 b)
{
	__u64 d = a - b, borrow = ((~a & b) | (~(a ^ b) & d)) >> 63;

	barrier_var(borrow);
	return borrow ^ 1;
}

/* 1 when x is 0, 0 otherwise, with no branch (see not_below()): -x hidden from clang, which
 * otherwise knows (x | -x) >> 63 for x != 0, and branches. */
static __always_inline __u64 is_zero(__u64 x)
{
	__u64 neg = -x;

	barrier_var(neg);
	return ((x | neg) >> 63) ^ 1;
}

static long unwind_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct unw_vma_found *f = data;
	__u64 vma_addr = (__u64)vma, file, inode, sb;
	__u32 dev = 0;

	f->start = unwind_read_kernel(vma_addr + unwind_kfields.vma_start);
	f->end = unwind_read_kernel(vma_addr + unwind_kfields.vma_end);
	f->pgoff = unwind_read_kernel(vma_addr + unwind_kfields.vma_pgoff);
	if (targ_prefill)
		f->flags = unwind_read_kernel(vma_addr + unwind_kfields.vma_flags);
	/* no branch on a missing file: a read at (NULL + offset) fails and leaves 0, so anonymous
	 * code gets inode 0 all the same, and the verifier walks this callback once per call */
	file = unwind_read_kernel(vma_addr + unwind_kfields.vma_file);
	inode = unwind_read_kernel(file + unwind_kfields.file_inode);
	f->file.ino = unwind_read_kernel(inode + unwind_kfields.inode_ino);
	sb = unwind_read_kernel(inode + unwind_kfields.inode_sb);
	bpf_probe_read_kernel(&dev, sizeof(dev), (void *)(sb + unwind_kfields.sb_dev));
	/* the kernel's dev_t: 12 bits of major above 20 of minor (include/linux/kdev_t.h) */
	f->file.dev = (__u64)(dev >> 20) << 32 | (dev & 0xfffff);
	return 0;
}

/* Gives the [vdso], which has no file, its key (UNW_VDSO_KEY) when f is the current process's,
 * by the address the kernel knows it by: x86's map_vdso() (arch/x86/entry/vdso/vma.c) sets
 * mm->context.vdso to the start of its text, and vdso_mremap() keeps it current.  A member of
 * x86's mm_context_t since its vdso, long before BTF; where the BTF lacks it (another
 * architecture) the offset is 0, and the [vdso] stays code without a table.  After the search,
 * not in its callback, which the verifier walks again at each call; and without a branch. */
static __always_inline void unwind_vdso_key(struct unw_vma_found *f)
{
	__u64 mm, vdso;

	mm = unwind_read_kernel((__u64)bpf_get_current_task() + unwind_kfields.task_mm);
	vdso = unwind_read_kernel(mm + unwind_kfields.mm_vdso);
	/* all ones for the vdso: its key, and its image starts the mapping */
	vdso = -(is_zero(f->file.ino) & is_zero(vdso ^ f->start) &
		 (is_zero(unwind_kfields.mm_vdso) ^ 1));
	f->file.dev |= vdso;
	f->file.ino |= vdso;
	f->pgoff &= ~vdso;
}

/* The table of a mapped file for the walk: its id, or UNW_TABLE_ASKED once user space is asked
 * to name it (at most once a second per file). */
static __always_inline __u32 unwind_ask_table(__u64 now, __u32 tgid,
					      const struct unw_file_key *file, __u64 pc, bool *lost)
{
	struct unw_file_ref *ref, asked = { .table = UNW_TABLE_ASKED };
	struct unw_event *e;

	if (!file->ino)
		return UNW_NO_TABLE;
	ref = bpf_map_lookup_elem(&unwind_files, file);
	if (ref && ref->table != UNW_TABLE_ASKED)
		return ref->table;
	if (ref && now - ref->asked_ns < UNWIND_REFRESH_NS)
		return UNW_TABLE_ASKED;
	asked.asked_ns = now;
	bpf_map_update_elem(&unwind_files, file, &asked, BPF_ANY);
	e = bpf_ringbuf_reserve(&unwind_events, sizeof(*e), 0);
	if (!e) {
		*lost = true;
		return UNW_TABLE_ASKED;
	}
	e->type = UNW_EV_FILE;
	e->tgid = tgid;
	e->table = 0;
	e->pad = 0;
	e->addr = pc;
	e->file = *file;
	/* forced: a refresh before it may have left the ring unread (unwind_request()) */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return UNW_TABLE_ASKED;
}

static __always_inline __u32 unwind_file_table(struct unw_walk *s, const struct unw_file_key *file,
					       __u64 pc)
{
	bool lost = false;
	__u32 table = unwind_ask_table(s->now, s->tgid, file, pc, &lost);

	if (lost)
		unwind_count(s, UNW_STAT_REQ_LOST);
	return table;
}

/* Process tgid's kernel-found mappings, created empty at first use; NULL if that fails. */
static __always_inline struct unw_kmaps *unwind_kmaps_get(__u32 tgid)
{
	struct unw_kmaps *km = bpf_map_lookup_elem(&unwind_kmaps, &tgid);

	if (km)
		return km;
	bpf_map_update_elem(&unwind_kmaps, &tgid, &unwind_kmaps_empty, BPF_NOEXIST);
	return bpf_map_lookup_elem(&unwind_kmaps, &tgid);
}

/* Keeps a mapping found in the kernel; when all UNWIND_KMAPS are taken, the oldest goes. */
static __always_inline void unwind_kmaps_add(struct unw_kmaps *km, const struct unw_vma_found *f)
{
	struct unw_kmap *slot = &km->maps[km->nr % UNWIND_KMAPS];

	slot->start = f->start;
	slot->end = f->end;
	slot->pgoff = f->pgoff;
	slot->file = f->file;
	km->nr++;
}

/* The slot of km holding pc, or UNWIND_KMAPS for none.  Every slot is looked at, without a
 * branch: a return from the loop made the verifier walk the rest of the lookup once per slot.
 * Slots not written yet are zero, and hold no pc. */
static __always_inline __u32 unwind_kmaps_find(const struct unw_kmaps *km, __u64 pc)
{
	__u64 hit = UNWIND_KMAPS, in;

#pragma unroll
	for (__u32 i = 0; i < UNWIND_KMAPS; i++) {
		in = not_below(pc, km->maps[i].start) & not_below(km->maps[i].end, pc + 1);
		hit ^= (hit ^ i) * in;
	}
	return hit;
}

/* The mapping of pc in a process user space has not loaded (or whose list lacks pc: an exec or
 * a dlopen since), from the mappings found in the kernel before, or by searching the kernel's
 * now; into the walk state.  Returns 0, 1 when no mapping holds pc, 2 when the kernel could not
 * be searched again in this sample (counted).  Global: verified once, not once for each way
 * unwind_find_mapping() comes to it. */
__noinline int unwind_vma_mapping(__u64 pc)
{
	struct unw_vma_found f = {};
	struct unw_kmaps *km;
	struct unw_kmap *k;
	struct unw_walk *s;
	__u32 zero = 0, hit;
	long err;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return 1;
	km = bpf_map_lookup_elem(&unwind_kmaps, &s->tgid);
	if (km) {
		hit = unwind_kmaps_find(km, pc);
		if (hit < UNWIND_KMAPS) {
			k = &km->maps[hit & (UNWIND_KMAPS - 1)];
			f.start = k->start;
			f.end = k->end;
			f.pgoff = k->pgoff;
			f.file = k->file;
			goto found;
		}
	}
	err = bpf_find_vma(bpf_get_current_task_btf(), pc, unwind_vma_cb, &f, 0);
	/* With interrupts off (timer samples, sched_switch) the mmap lock taken by one search is
	 * released later, from an irq_work: a second search in the same program finds it busy */
	if (err == -EBUSY)
		unwind_count(s, UNW_STAT_END_VMA_BUSY);
	if (err || f.end <= pc || f.start > pc)
		return err == -EBUSY ? 2 : 1;
	unwind_vdso_key(&f);
	km = km ?: unwind_kmaps_get(s->tgid);
	if (km)
		unwind_kmaps_add(km, &f);
found:
	s->map.start = f.start;
	s->map.end = f.end;
	s->map.bias = f.start - (f.pgoff << 12); /* x86-64 pages: the walk is x86-64 only */
	s->map.table = unwind_file_table(s, &f.file, pc);
	return 0;
}

/* Finds the mapping of the walked process holding pc (the last one starting at or below it, if
 * it ends above) and copies it to the walk state, where the next frames, often in the same file,
 * find it without a search.  Returns 0, or 1 when no mapping holds pc.  The search reads the
 * whole padded array (unused entries start at ~0) in a fixed number of branch-free halvings;
 * and as a global function it is verified once, apart from its callers. */
__noinline int unwind_find_mapping(__u64 pc)
{
	struct unw_proc *proc;
	struct unw_walk *s;
	__u32 zero = 0, idx = 0;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return 1;
	s->map_listed = 0;
	proc = bpf_map_lookup_elem(&unwind_procs, &s->tgid);
	if (proc) {
#pragma unroll
		for (__u32 step = UNWIND_MAX_MAPPINGS / 2; step; step /= 2)
			idx += step * not_below(pc, proc->maps[(idx + step - 1) &
							      (UNWIND_MAX_MAPPINGS - 1)].start);
		if (idx && pc < proc->maps[(idx - 1) & (UNWIND_MAX_MAPPINGS - 1)].end) {
			s->map = proc->maps[(idx - 1) & (UNWIND_MAX_MAPPINGS - 1)];
			s->map_listed = 1;
			return 0;
		}
		/* new code since the snapshot (dlopen), or a garbage return address */
		if (s->now - proc->refresh_ns >= UNWIND_REFRESH_NS) {
			proc->refresh_ns = s->now;
			unwind_request(s, UNW_EV_REFRESH_PROC, 0);
		}
	}
	/* not loaded yet; or, until the fresh list arrives, the kernel's own mappings (a list
	 * read in the middle of an exec or before a dlopen lacks libraries) */
	return unwind_vma_on() ? unwind_vma_mapping(pc) : 1;
}

/* Index in `unwind_rows` of the row describing file offset off in rows[first .. first + count)
 * (the search cfi_find() does), or -1.  Global, like unwind_find_mapping(). */
__noinline int unwind_find_row(__u32 first, __u32 count, __u64 off)
{
	/* 64-bit: no zero-extension at every step for the verifier to check */
	__u64 base = first, len = count, half;
	struct unw_row *r;
	__u32 idx;

	if (off > 0xffffffffULL || count == 0 || count > UNWIND_MAX_TABLE_ROWS)
		return -1;
	/* the lengths halve the same way whichever half is kept: the verifier's paths merge */
	for (__u64 i = 0; i < UNWIND_ROW_SEARCH; i++) {
		if (len <= 1)
			break;
		half = len >> 1;
		idx = base + half;
		r = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!r)
			return -1;
		/* base = idx where r->pc <= off, without a branch: one path for the verifier */
		base += half * not_below(off, r->pc);
		len -= half;
	}
	idx = base;
	r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r || r->pc > off)
		return -1;
	return idx;
}

/* Reads the window of the walked stack from addr on: up to UNWIND_WIN bytes, within addr's page
 * and the next (a stack's last page may be the next one's end).  0, or -1 when addr cannot be
 * read.  Global: each read of a step branches to it. */
__noinline int unwind_fill_window(__u64 addr)
{
	__u64 base = addr & ~7ULL, page_end = (base | 4095) + 1, len;
	struct unw_walk *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return -1;
	s->win_len = 0;
	len = page_end + 4096 - base;
	if (len > UNWIND_WIN)
		len = UNWIND_WIN;
	barrier_var(len);
	if (len > UNWIND_WIN)
		return -1;
	if (bpf_probe_read_user(s->win, len, (void *)base)) {
		/* the next page is not there (the stack's top), or addr's is not */
		if (len <= page_end - base)
			return -1;
		len = page_end - base;
		barrier_var(len);
		if (len > UNWIND_WIN || bpf_probe_read_user(s->win, len, (void *)base))
			return -1;
	}
	s->win_base = base;
	s->win_len = len;
	return 0;
}

/* size (8 or 16) bytes of the walked stack at addr, from the window: one copy of the stack for
 * the walk's reads, where each was a bpf_probe_read_user() of its own (~35 ns each).  A read the
 * window cannot hold fails as the read would have: its page is not mapped. */
static __always_inline int unwind_read(struct unw_walk *s, __u64 addr, void *dst, __u32 size)
{
	__u64 off = addr - s->win_base;

	if (addr < s->win_base || off + size > s->win_len) {
		if (unwind_fill_window(addr))
			return -1;
		off = addr - s->win_base;
		if (off + size > s->win_len)
			return -1;
	}
	__builtin_memcpy(dst, &s->win[off & (UNWIND_WIN - 1)], size);
	return 0;
}

/* Ends the walk where the stack could not be read: counted as an exit's when the process has no
 * memory left (exit_mm() cleared task->mm; the kernel still holds its registers), as `what`
 * (unreadable) otherwise.  Returns 1.  Global: each of a step's reads branches to it. */
__noinline int unwind_read_failed(__u64 what)
{
	struct unw_walk *s;
	__u32 zero = 0;
	__u64 mm = 1;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return 1;
	if (unwind_kfields.task_mm)
		mm = unwind_read_kernel((__u64)bpf_get_current_task() + unwind_kfields.task_mm);
	what = mm ? what : UNW_STAT_END_EXITED;
	if (what < UNW_STAT_NR)
		s->stats[what]++;
	return 1;
}

/* Moves to the caller through the frame pointer: [FP] = caller's FP, [FP + 8] = return address. */
static __always_inline int unwind_fp_step(struct unw_walk *s, enum unw_stat why)
{
	__u64 frame[2];

	if (s->bp == 0) {
		unwind_count(s, UNW_STAT_END_OK); /* _start and clone clear RBP: the chain's end */
		return 1;
	}
	if (s->bp < s->sp || s->bp > UNWIND_USER_MAX) {
		unwind_count(s, UNW_STAT_END_BAD_FRAME);
		return 1;
	}
	if (unwind_read(s, s->bp, frame, sizeof(frame)))
		return unwind_read_failed(UNW_STAT_END_READ);
	unwind_count(s, why);
	s->sp = s->bp + 16;
	s->bp = frame[0];
	s->ip = frame[1];
	if (s->ip == 0) {
		unwind_count(s, UNW_STAT_END_OK);
		return 1;
	}
	return 0;
}

/* Code without CFI: --unwind auto trusts its frame pointer, --unwind eh ends the stack there. */
static __always_inline int unwind_no_cfi(struct unw_walk *s)
{
	if (targ_unwind == UNWIND_AUTO)
		return unwind_fp_step(s, UNW_STAT_FRAMES_FP);
	unwind_count(s, UNW_STAT_END_NO_CFI);
	return 1;
}

/* Moves from a signal trampoline into the code the signal interrupted: the registers the kernel
 * saved in the signal frame.  That code may run on another stack (sigaltstack), so the frame
 * need not lie above this one; the walk's depth bound still ends any loop. */
static __always_inline int unwind_signal_step(struct unw_walk *s)
{
	__u64 regs[(UNW_SIGFRAME_RIP - UNW_SIGFRAME_RBP) / 8 + 1];

	if (bpf_probe_read_user(regs, sizeof(regs), (void *)(s->sp + UNW_SIGFRAME_RBP)))
		return unwind_read_failed(UNW_STAT_END_READ);
	unwind_count(s, UNW_STAT_FRAMES_SIGNAL);
	s->bp = regs[0];
	s->sp = regs[(UNW_SIGFRAME_RSP - UNW_SIGFRAME_RBP) / 8];
	s->ip = regs[(UNW_SIGFRAME_RIP - UNW_SIGFRAME_RBP) / 8];
	s->exact_ip = 1;
	if (s->ip == 0 || s->sp == 0 || s->sp > UNWIND_USER_MAX) {
		unwind_count(s, UNW_STAT_END_BAD_FRAME);
		return 1;
	}
	return 0;
}

/* Moves to the caller by a table row. */
static __always_inline int unwind_eh_step(struct unw_walk *s, const struct unw_row *row)
{
	__u64 cfa, ra, saved[2], bp = s->bp;
	__s64 off = (__s64)row->cfa_off * 8;

	switch (UNW_ROW_CFA(row->type)) {
	case UNW_CFA_SP:
		cfa = s->sp + off;
		break;
	case UNW_CFA_FP:
		cfa = s->bp + off;
		break;
	case UNW_CFA_PLT:
		cfa = s->sp + 8 + ((s->ip & 15) >= (__u64)row->cfa_off ? 8 : 0);
		break;
	case UNW_CFA_DEREF_FP:
		if (unwind_read(s, s->bp + off, &cfa, sizeof(cfa)))
			return unwind_read_failed(UNW_STAT_END_READ);
		break;
	case UNW_CFA_END:
		unwind_count(s, UNW_STAT_END_OK);
		return 1;
	case UNW_CFA_NONE:
		return unwind_no_cfi(s);
	case UNW_CFA_SIGNAL:
		return unwind_signal_step(s);
	case UNW_CFA_SP_RA_RDI:
		/* the return address popped into RDI, as it was where the sample was taken; the
		 * CFA may be SP itself, the caller's frame begins where this one's return
		 * address was */
		if (s->nr != 1 || s->sp + off > UNWIND_USER_MAX) {
			unwind_count(s, UNW_STAT_END_UNSUPPORTED);
			return 1;
		}
		cfa = s->sp + off;
		ra = s->rdi;
		goto moved;
	default:
		unwind_count(s, UNW_STAT_END_UNSUPPORTED);
		return 1;
	}
	/* The caller's frame lies above this one: anything else is a wrong rule or a corrupt stack. */
	if (cfa <= s->sp || cfa > UNWIND_USER_MAX) {
		unwind_count(s, UNW_STAT_END_BAD_FRAME);
		return 1;
	}
	switch (UNW_ROW_FP(row->type)) {
	case UNW_FP_SAVED:
		if (row->fp_off == -2) {
			/* the common push %rbp right after the call: one read for both */
			if (unwind_read(s, cfa - 16, saved, sizeof(saved)))
				return unwind_read_failed(UNW_STAT_END_READ);
			bp = saved[0];
			ra = saved[1];
			goto moved;
		}
		if (unwind_read(s, cfa + (__s64)row->fp_off * 8, &bp, sizeof(bp)))
			return unwind_read_failed(UNW_STAT_END_READ);
		break;
	case UNW_FP_UNDEFINED:
		bp = 0;
		break;
	default:
		break;
	}
	if (unwind_read(s, cfa - 8, &ra, sizeof(ra)))
		return unwind_read_failed(UNW_STAT_END_READ);
moved:
	unwind_count(s, UNW_STAT_FRAMES_EH);
	s->sp = cfa;
	s->bp = bp;
	s->ip = ra;
	if (ra == 0) {
		unwind_count(s, UNW_STAT_END_OK);
		return 1;
	}
	return 0;
}

/* The mapping of pc among those the last walks found in their processes' lists (entries of
 * another version of this process's list do not match), into the walk state; else searched in
 * the list, and kept.  0, or unwind_find_mapping()'s miss.  Global: a step has one path past
 * it. */
__noinline int unwind_mapping(__u64 pc)
{
	struct unw_walk *s;
	__u32 zero = 0;
	int missed;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return 1;
#pragma unroll
	for (int i = 0; i < UNWIND_MRU; i++) {
		if (s->mru[i].tgid == s->tgid && s->mru[i].gen == s->gen &&
		    s->mru[i].map.start <= pc && pc < s->mru[i].map.end) {
			s->map = s->mru[i].map;
			return 0;
		}
	}
	missed = unwind_find_mapping(pc);
	if (!missed && s->map_listed) {
		struct unw_mru *e = &s->mru[s->mru_next & (UNWIND_MRU - 1)];

		e->tgid = s->tgid;
		e->gen = s->gen;
		e->map = s->map;
		s->mru_next++;
	}
	return missed;
}

/* Records the current frame and moves to its caller.  Returns 0 to go on, 1 when the walk ended
 * (the reason counted).  Global, hence verified once, whatever the number of frames. */
__noinline long unwind_step(__u64 depth)
{
	__u32 zero = 0, first, count, idx, slot;
	struct unw_row_cache *cache;
	struct unw_cached_row *cached;
	struct unw_mapping *m;
	struct unw_walk *s;
	struct stack_trace *st;
	struct unw_table *t;
	struct unw_row *row, r;
	__u64 lookup, loc, off, tag;
	int i;

	s = bpf_map_lookup_elem(&walks, &zero);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s || !st)
		return 1;
	st->ips[depth & MAX_STACK_DEPTH] = s->ip;
	s->nr = depth + 1;
	if (s->nr >= targ_max_stack) {
		unwind_count(s, UNW_STAT_END_MAX_DEPTH);
		return 1;
	}
	/* a return address follows its call, which may be a function's last instruction; where a
	 * signal interrupted the code, ip is the instruction itself */
	lookup = depth && !s->exact_ip ? s->ip - 1 : s->ip;
	s->exact_ip = 0;

	m = &s->map;
	if (lookup < m->start || lookup >= m->end) {
		int missed = unwind_mapping(lookup);

		if (missed) {
			/* 2: the kernel's mappings could not be searched again (counted) */
			if (missed == 1)
				unwind_count(s, UNW_STAT_END_UNMAPPED);
			return 1;
		}
	}
	if (m->table == UNW_NO_TABLE)
		return unwind_no_cfi(s);
	if (m->table == UNW_TABLE_ASKED)
		goto pending;
	t = bpf_map_lookup_elem(&unwind_tables, &m->table);
	if (!t)
		return unwind_no_cfi(s);
	loc = *(volatile __u64 *)&t->loc;
	first = UNW_LOC_FIRST(loc);
	count = UNW_LOC_COUNT(loc);
	if (count == 0) {
		if (t->state == UNW_TABLE_NO_CFI)
			return unwind_no_cfi(s);
		/* the first sample in this file asks for its table; until it is loaded, auto uses
		 * the frame pointer and eh ends the stack */
		if (!t->requested) {
			t->requested = 1;
			if (unwind_request(s, UNW_EV_LOAD_TABLE, m->table))
				t->requested = 0;
		}
		goto pending;
	}
	if (s->now - t->last_used > UNWIND_TOUCH_NS)
		t->last_used = s->now;
	off = lookup - m->bias;
	tag = ((__u64)m->table << 32 | (__u32)off) + 1;
	slot = (tag * 0x9e3779b97f4a7c15ULL) >> 54; /* 10 bits: UNWIND_ROW_CACHE */
	cache = bpf_map_lookup_elem(&unwind_row_cache, &zero);
	cached = cache ? &cache->slots[slot & (UNWIND_ROW_CACHE - 1)] : NULL;
	/* the row copied, from the cache or the table, so that one step follows both: the
	 * verifier walks unwind_eh_step() once, not once per map the row came from */
	if (cached && cached->tag == tag && off <= 0xffffffffULL) {
		r = cached->row;
	} else {
		i = unwind_find_row(first, count, off);
		idx = i;
		row = i >= 0 ? bpf_map_lookup_elem(&unwind_rows, &idx) : NULL;
		if (!row)
			return unwind_no_cfi(s);
		r = *row;
		if (cached) {
			cached->row = r;
			cached->tag = tag;
		}
	}
	return unwind_eh_step(s, &r);
pending:
	if (targ_unwind == UNWIND_AUTO)
		return unwind_fp_step(s, UNW_STAT_FRAMES_PENDING);
	unwind_count(s, UNW_STAT_END_PENDING);
	return 1;
}

/* Processes user space has seen (seen_procs) but holds no mapping list for (it exited and its pid
 * came back, or it is a kernel thread): when the walk last asked for a fresh snapshot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} unwind_asked SEC(".maps");

static long unwind_walk_round(__u64 i, void *data)
{
	return unwind_step(i) ? 1 : 0; /* bpf_loop(): 1 ends the loop, and nothing else is allowed */
}

/* Steps from the registers in `walks` until the stack ends.  Global, like unwind_step(): the
 * program that calls it is verified with one path through it, not one per frame. */
__noinline int unwind_walk(__u32 start)
{
	/* start is always 0, and read only so that callers set the argument register: the
	 * verifier checks what a global function is passed */
	if (start)
		return 0;
	/* bounded by --max-stack, where unwind_step() ends every walk.  With bpf_loop() (5.17)
	 * the round is a callback the verifier checks once; without, it goes round the loop that
	 * many times (127 by default: 900 of do_sample's 9,200 instructions verified), not
	 * MAX_STACK_DEPTH's 1023; the bound read once and the counter 64-bit, a round is 5
	 * instructions for it to check, not 15 */
	__u64 max = targ_max_stack < MAX_STACK_DEPTH ? targ_max_stack : MAX_STACK_DEPTH;

	if (targ_loop) {
		bpf_loop(max, unwind_walk_round, NULL, 0);
		return 0;
	}
	for (__u64 i = 0; i < max; i++) {
		if (unwind_step(i))
			break;
	}
	return 0;
}

/* The process's mapping list; without one, asks user space (at most once a second) when
 * note_process() will not. */
static __always_inline struct unw_proc *unwind_proc_of(struct unw_walk *s, __u32 tgid)
{
	struct unw_proc *proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	__u64 now, *asked;
	__u8 *seen;

	if (proc)
		return proc;
	seen = bpf_map_lookup_elem(&seen_procs, &tgid);
	if (!seen || *seen != 1) /* not known yet (note_process asks), or exiting */
		return NULL;
	now = bpf_ktime_get_ns();
	asked = bpf_map_lookup_elem(&unwind_asked, &tgid);
	if (asked && now - *asked < UNWIND_REFRESH_NS)
		return NULL;
	bpf_map_update_elem(&unwind_asked, &tgid, &now, BPF_ANY);
	s->tgid = tgid;
	unwind_request(s, UNW_EV_REFRESH_PROC, 0);
	return NULL;
}

/* After exec or exit the mappings are gone: forget the list (note_process or the walk asks for
 * the next one).  Users call it from their exec hook. */
static __always_inline void unwind_forget_process(__u32 tgid)
{
	if (targ_unwind != UNWIND_FP)
		bpf_map_delete_elem(&unwind_procs, &tgid);
}

/* The syscalls whose samples take the walk made at their entry (x86-64 numbers: the walk is
 * x86-64 only). */
#define UNW_NR_EXECVE 59
#define UNW_NR_EXIT_GROUP 231

/* Into stack_scratch and the walk state, in place of a walk, the one made when the current thread
 * entered syscall nr with user ip and sp (unwind_syscall_entry()), if nr is one that keeps it
 * (orig_ax; ~0 for none).  1 when taken, 0 otherwise.  Global: verified once per program. */
__noinline int unwind_syscall_stack(__u64 ip, __u64 sp, __u64 nr)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid(), len;
	struct unw_sysstack *e;
	struct stack_trace *st;
	struct unw_walk *s;

	if (nr != UNW_NR_EXECVE && nr != UNW_NR_EXIT_GROUP)
		return 0;
	e = bpf_map_lookup_elem(&unwind_sysstacks, &pid);
	s = bpf_map_lookup_elem(&walks, &zero);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!e || !s || !st || e->ip != ip || e->sp != sp || e->nr_syscall != nr)
		return 0;
	len = e->len;
	/* apart: one range test of the two leaves the verifier no bound */
	if (len > sizeof(e->ips))
		return 0;
	barrier_var(len);
	if (len == 0 || bpf_probe_read_kernel(st->ips, len, e->ips))
		return 0;
	s->stats[UNW_STAT_SYSCALL]++;
	s->nr = len / sizeof(__u64);
	return 1;
}

/* Fills stack_scratch with the user stack of the current task (process tgid), walked from its
 * registers; a process not known yet gets the frame-pointer walk (auto) or just its leaf (eh).
 * Returns the length of the stack in bytes, or a negative errno, as bpf_get_stack() does. */
static __always_inline long unwind_fill(void *ctx, struct stack_trace *st, __u32 tgid, __u64 ip,
					__u64 sp, __u64 bp, __u64 rdi, __u64 sysnr, __u64 now)
{
	struct unw_proc *proc;
	struct unw_walk *s;
	__u32 zero = 0;
	bool known;
	long len;

	s = bpf_map_lookup_elem(&walks, &zero);
	if (!s)
		return -ENOENT;
	proc = ip ? unwind_proc_of(s, tgid) : NULL;
	known = proc != NULL;
	s->proc_known = known;
	/* 0 never matches a cached mapping: user space numbers lists from 1 */
	s->gen = proc ? proc->gen : 0;
	if (known || (ip && unwind_vma_on())) {
		s->ip = ip;
		s->sp = sp;
		s->bp = bp;
		s->rdi = rdi;
		s->tgid = tgid;
		s->nr = 0;
		s->exact_ip = 0;
		s->map.start = s->map.end = 0;
		s->win_len = 0;
		s->now = now ?: bpf_ktime_get_ns();
		s->stats[UNW_STAT_STACKS]++;
		if (!known)
			s->stats[UNW_STAT_EARLY]++;
		if (!unwind_syscall_stack(ip, sp, sysnr))
			unwind_walk(0);
		/* never above targ_max_stack: the mask bounds it for the verifier */
		return (s->nr & MAX_STACK_DEPTH) * sizeof(__u64);
	}
	/* saved registers without a user ip: a kernel thread, which has no user stack */
	if (!ip && targ_unwind_task_regs)
		return 0;
	/* no user registers (a sample in the kernel, on a kernel without bpf_task_pt_regs), or a
	 * process not known yet (its first samples): auto walks the frame pointers, eh keeps only
	 * the leaf rather than guess */
	s->stats[ip ? UNW_STAT_NO_PROC : UNW_STAT_NO_REGS]++;
	if (ip && targ_unwind == UNWIND_EH) {
		st->ips[0] = ip;
		return sizeof(__u64);
	}
	len = bpf_get_stack(ctx, st->ips, targ_max_stack * sizeof(__u64), BPF_F_USER_STACK);
	return targ_unwind == UNWIND_EH && len > (long)sizeof(__u64) ? sizeof(__u64) : len;
}

/* x86-64 pt_regs at fixed offsets: its layout is ABI (ptrace's user_regs_struct, perf's
 * bpf_user_pt_regs_t), and plain offsets keep CO-RE, and so the kernel's BTF, out of the loader. */
struct unwind_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs,
		flags, sp, ss;
};

/* The registers a walk starts from.  Each caller's loads are pinned in registers: one load
 * instruction may not serve two kinds of pointer (context, kernel), and the compiler would
 * merge the two callers' otherwise. */
static __always_inline void unwind_regs_load(const struct unwind_regs *r, __u64 *ip, __u64 *sp,
					     __u64 *bp, __u64 *rdi)
{
	__u64 i = r->ip, s = r->sp, b = r->bp, d = r->di;

	barrier_var(i);
	barrier_var(s);
	barrier_var(b);
	barrier_var(d);
	*ip = i;
	*sp = s;
	*bp = b;
	*rdi = d;
}

/* Walks the current task's user stack from the given user registers (NULL: the registers it
 * saved on entering the kernel) and stores it in `stacks`; *id gets its key.  now: the time, if
 * the caller has read it (0: read here).  Returns 0 or a negative errno (loss counted). */
static __always_inline int unwind_user_stack(void *ctx, __u32 tgid, struct unwind_regs *regs,
					     __u64 now, __u64 *id)
{
	__u64 ip = 0, sp = 0, bp = 0, rdi = 0, nr = ~0ULL;
	struct unwind_regs *task_regs;
	struct stack_trace *st;
	__u32 zero = 0;

	if (targ_unwind == UNWIND_FP)
		return capture_stack(ctx, BPF_F_USER_STACK, id);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return -ENOENT;
	if (regs) {
		unwind_regs_load(regs, &ip, &sp, &bp, &rdi);
	} else if (targ_unwind_task_regs) {
		/* typed (struct pt_regs): plain loads, which the verifier makes fault-safe */
		task_regs = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());
		unwind_regs_load(task_regs, &ip, &sp, &bp, &rdi);
		/* in the kernel: maybe inside a syscall that replaces or releases the memory */
		nr = task_regs->orig_ax;
	}
	return store_stack(st, unwind_fill(ctx, st, tgid, ip, sp, bp, rdi, nr, now), id);
}

/* The user stack of the current task from the registers it saved on entering the kernel
 * (syscall, interrupt, fault): for off-CPU stacks at sched_switch.  now as above. */
static __always_inline int unwind_current_user_stack(void *ctx, __u32 tgid, __u64 now, __u64 *id)
{
	return unwind_user_stack(ctx, tgid, NULL, now, id);
}

/* Whether the last walk's process had its mapping list loaded, which user space builds only for
 * the processes it knows: note_process() need not ask again. */
static __always_inline bool unwind_proc_known(void)
{
	struct unw_walk *s;
	__u32 zero = 0;

	if (targ_unwind == UNWIND_FP)
		return false;
	s = bpf_map_lookup_elem(&walks, &zero);
	return s && s->proc_known;
}

/* For programs whose context starts with the interrupted registers (ctx_regs: perf_event,
 * kprobe, uprobe): those registers when they are user mode, the task's saved user registers
 * when the kernel was interrupted; for other programs (tracepoints, fentry), always the saved
 * ones.  ctx_regs must be a constant. */
static __always_inline int unwind_ctx_user_stack(void *ctx, bool ctx_regs, __u32 tgid, __u64 *id)
{
	struct unwind_regs *regs = ctx;

	if (ctx_regs && (regs->cs & 3))
		return unwind_user_stack(ctx, tgid, regs, 0, id);
	return unwind_user_stack(ctx, tgid, NULL, 0, id);
}
/* The processes the run samples (-p, -t, COMMAND, --cgroup). */
static __always_inline bool unwind_target_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return target_ids_wanted(id >> 32, id) && target_current_cgroup_wanted();
}

/* The user stack as the current thread enters syscall nr, kept for the samples taken inside it
 * (unwind_syscall_stack()), when the memory it is in may be gone.  The walk counts nothing: its
 * stack is counted when a sample takes it. */
static __always_inline int unwind_syscall_entry(void *ctx, __u64 nr)
{
	__u64 id = bpf_get_current_pid_tgid(), ip = 0, sp = 0, bp = 0, rdi = 0;
	__u32 zero = 0, pid = id;
	struct unw_sysstack *e;
	struct stack_trace *st;
	struct unw_walk *s;
	long len;

	if (!targ_unwind_task_regs || !unwind_target_wanted())
		return 0;
	s = bpf_map_lookup_elem(&walks, &zero);
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s || !st)
		return 0;
	unwind_regs_load((void *)bpf_task_pt_regs(bpf_get_current_task_btf()), &ip, &sp, &bp, &rdi);
	__builtin_memcpy(s->stats_saved, s->stats, sizeof(s->stats));
	len = unwind_fill(ctx, st, id >> 32, ip, sp, bp, rdi, ~0ULL, 0);
	__builtin_memcpy(s->stats, s->stats_saved, sizeof(s->stats));
	e = bpf_map_lookup_elem(&unwind_sysstacks, &pid);
	if (!e) {
		bpf_map_update_elem(&unwind_sysstacks, &pid, &unwind_sysstack_empty, BPF_ANY);
		e = bpf_map_lookup_elem(&unwind_sysstacks, &pid);
		if (!e)
			return 0;
	}
	/* none (a walk that failed, or deeper than kept): an older one must not match */
	e->len = 0;
	if (len > (long)sizeof(e->ips))
		return 0;
	barrier_var(len);
	if (len <= 0 || bpf_probe_read_kernel(e->ips, len, st->ips))
		return 0;
	e->ip = ip;
	e->sp = sp;
	e->nr_syscall = nr;
	e->len = len;
	return 0;
}

/* Argument i of a raw tracepoint, read as the UAPI lays them out (struct bpf_raw_tracepoint_args
 * is __u64 args[0]) rather than through vmlinux.h's struct: its access would be a CO-RE
 * relocation, profile's only one, for which libbpf would parse the whole kernel BTF at every load
 * (5 MB, 10-17 ms of the start). */
static __always_inline __u64 unwind_raw_tp_arg(const struct bpf_raw_tracepoint_args *ctx, int i)
{
	return ((const __u64 *)ctx)[i];
}

/* The code mapping holding addr in the current process, kept with the mappings its walks find
 * (unwind_vma_mapping) and its file's table asked for now: ahead of the first sample, which
 * then needs no search of its own (targ_prefill).  Process context only: called from a timer
 * sample, the search would leave the mmap lock busy for the walk's own.  Global: verified once
 * per program, not at each call (exec makes two). */
__noinline int unwind_prefill(__u32 tgid, __u64 addr)
{
	struct unw_kmaps *km;
	struct unw_vma_found f = {};
	bool lost = false;

	if (!addr || addr >= UNWIND_USER_MAX)
		return 0;
	km = bpf_map_lookup_elem(&unwind_kmaps, &tgid);
	/* full: the program and the first libraries stay, and the walk searches for the rest */
	if (km && km->nr >= UNWIND_KMAPS)
		return 0;
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, unwind_vma_cb, &f, 0))
		return 0;
	unwind_vdso_key(&f);
	if (!(f.flags & UNW_VM_EXEC) || !f.file.ino)
		return 0;
	km = km ?: unwind_kmaps_get(tgid);
	if (!km || km->nr >= UNWIND_KMAPS)
		return 0;
	/* slots not written yet are zero, and f.start is not */
#pragma unroll
	for (int i = 0; i < UNWIND_KMAPS; i++)
		if (km->maps[i].start == f.start)
			return 0;
	unwind_kmaps_add(km, &f);
	unwind_ask_table(bpf_ktime_get_ns(), tgid, &f.file, addr, &lost);
	return 0;
}

/* The searches are for the processes the run samples (-p, -t, COMMAND, --cgroup): others'
 * tables are not built for them. */
static __always_inline bool unwind_prefill_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return targ_prefill && unwind_kfields.prefill && target_ids_wanted(id >> 32, id) &&
	       target_current_cgroup_wanted();
}

/* The new program's text, its vdso and the interpreter's entry (where the saved registers point
 * after exec; a static program's own entry), read at fixed offsets as unwind_vma_cb() reads. */
static __always_inline void unwind_prefill_exec(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 mm = unwind_read_kernel((__u64)task + unwind_kfields.task_mm);
	__u64 task_regs;

	if (mm)
		unwind_prefill(tgid, unwind_read_kernel(mm + unwind_kfields.mm_start_code));
	/* and the vdso (mapped by now: arch_setup_additional_pages()), whose search would
	 * otherwise take a first sample's one search of the kernel's mappings */
	if (mm && unwind_kfields.mm_vdso)
		unwind_prefill(tgid, unwind_read_kernel(mm + unwind_kfields.mm_vdso));
	task_regs = targ_unwind_task_regs ? (__u64)bpf_task_pt_regs(task) : 0;
	if (task_regs)
		unwind_prefill(tgid, unwind_read_kernel(task_regs +
							offsetof(struct unwind_regs, ip)));
}

/* Code mapped by a process user space has not loaded yet (ld.so mapping the libraries): its
 * mapping before the first sample needs it.  A tracepoint of the syscall's exit: the kernel has
 * no tracepoint of a new mapping, and this one fires in the process, with the mapping done. */
struct unwind_sys_exit {
	__u64 common;
	long nr;
	long ret;
};

#define UNW_PROT_EXEC 0x4	 /* include/uapi/asm-generic/mman-common.h */
#define UNW_MAP_ANONYMOUS 0x20

#endif
