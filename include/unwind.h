/* In-kernel user-stack unwinding from .eh_frame / .debug_frame (x86-64): the tables user space
 * builds (user/unwind/unwinder.c, user/unwind/cfi.c) and the BPF unwinder (bpf/unwind.bpf.h) reads. */
#ifndef BPFPROF_UNWIND_H
#define BPFPROF_UNWIND_H

/* --unwind: how user stacks are walked. */
enum unwind_method {
	UNWIND_FP,   /* the kernel's frame-pointer walk (bpf_get_stack) */
	UNWIND_EH,   /* call-frame tables only: code without a (loaded) table ends the stack */
	UNWIND_AUTO, /* call-frame tables where the code has them, frame pointers elsewhere */
};

/* How a row finds the caller's stack pointer, the CFA (canonical frame address). */
enum unw_cfa {
	UNW_CFA_NONE,        /* no CFI covers this code (a gap between FDEs) */
	UNW_CFA_SP,          /* CFA = SP + 8 * off */
	UNW_CFA_FP,          /* CFA = FP + 8 * off */
	UNW_CFA_PLT,         /* CFA = SP + 8 + ((PC & 15) >= off ? 8 : 0): the x86-64 PLT stub expression */
	UNW_CFA_DEREF_FP,    /* CFA = *(FP + 8 * off): GCC's stack-realignment (DRAP) expression */
	UNW_CFA_END,         /* return address undefined: the outermost frame (_start, clone) */
	UNW_CFA_UNSUPPORTED, /* a rule the BPF unwinder does not evaluate: the walk stops there */
	UNW_CFA_SIGNAL,      /* a signal trampoline (libc's __restore_rt, a CIE with the 'S'
			      * augmentation): the interrupted registers are in the ucontext at SP */
	UNW_CFA_SP_RA_RDI,   /* CFA = SP + 8 * off, the return address in RDI: glibc's __vfork,
			      * which pops it there across the syscall (the child returns on the
			      * parent's stack).  Only where the sample was taken, whose RDI the
			      * walk has; a caller's RDI is lost */
};

/* Where the caller's frame pointer (RBP) is. */
enum unw_fp_rule {
	UNW_FP_SAME,      /* unchanged: this code did not touch it */
	UNW_FP_SAVED,     /* saved at CFA + 8 * fp_off */
	UNW_FP_UNDEFINED, /* clobbered: the caller's value is lost */
};

#define UNW_ROW_TYPE(cfa, fp) ((cfa) | (fp) << 4)
#define UNW_ROW_CFA(type)     ((type) & 0xf)
#define UNW_ROW_FP(type)      ((type) >> 4)

/* One row of a file's unwind table: the rules for [pc, next row's pc).  The return address is
 * always at CFA - 8 on x86-64; rows where CFI says otherwise are UNW_CFA_UNSUPPORTED.  8 bytes, so
 * libc's ~30k rows take ~240 KB. */
struct unw_row {
	__u32 pc;      /* file offset of the first instruction the row describes */
	__s16 cfa_off; /* see enum unw_cfa */
	__u8 type;     /* UNW_ROW_TYPE(enum unw_cfa, enum unw_fp_rule) */
	__s8 fp_off;   /* UNW_FP_SAVED: the caller's FP is at CFA + 8 * fp_off */
};

/* Largest table of one file, in rows: bounds the BPF binary search to UNWIND_ROW_SEARCH steps. */
#define UNWIND_MAX_TABLE_ROWS (1u << 22)
#define UNWIND_ROW_SEARCH     23 /* ceil(log2(UNWIND_MAX_TABLE_ROWS + 1)) */
/* Distinct files (tables) known in a run. */
#define UNWIND_MAX_TABLES 8192

/* A file's rows are rows[first .. first + count) of the `unwind_rows` array; count 0: not loaded. */
#define UNW_LOC(first, count) ((__u64)(first) | (__u64)(count) << 32)
#define UNW_LOC_FIRST(loc)    ((__u32)(loc))
#define UNW_LOC_COUNT(loc)    ((__u32)((loc) >> 32))

enum unw_table_state {
	UNW_TABLE_EMPTY,  /* not loaded (never, or evicted): the first sample asks for it */
	UNW_TABLE_LOADED, /* loc is valid */
	UNW_TABLE_NO_CFI, /* the file has no usable CFI (stripped, corrupt, unreadable, too large) */
};

struct unw_table {
	__u64 loc;       /* UNW_LOC(first, count): one word, so readers never see half an update */
	__u64 last_used; /* bpf_ktime_get_ns() of the last sample that used it: eviction order */
	__u32 state;     /* enum unw_table_state */
	__u32 requested; /* a load request is on its way to user space */
};

/* An executable mapping of a process.  table is UNW_NO_TABLE for code with no file (JIT), and
 * UNW_TABLE_ASKED for a file user space has not named yet (the walk asked for it). */
#define UNW_NO_TABLE ((__u32)-1)
#define UNW_TABLE_ASKED ((__u32)-2)
struct unw_mapping {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;       /* file offset = pc - bias */
	__u32 table;      /* index in the `unwind_tables` array */
	__u32 pad;
};

/* Executable mappings of a process, sorted by start; the BPF search reads all UNWIND_MAX_MAPPINGS
 * entries, so those past nr start (and end) at ~0, and one always does (at most
 * UNWIND_MAX_MAPPINGS - 1 mappings). */
#define UNWIND_MAX_MAPPINGS 256
struct unw_proc {
	__u32 nr;
	__u32 gen;        /* user space's count of the lists it stored, when it stored this one */
	__u64 refresh_ns; /* when BPF last asked for a fresh snapshot (a PC outside every mapping) */
	struct unw_mapping maps[UNWIND_MAX_MAPPINGS];
};

/* A mapped file as the kernel knows it (the `unwind_files` key): the device of its inode's
 * superblock, as major << 32 | minor, and the inode number. */
struct unw_file_key {
	__u64 dev;
	__u64 ino;
};

/* The key (dev and ino alike) of the [vdso], which has no file: the walks give it the mapping
 * at the address the kernel keeps as the process's vdso, and user space registers the table of
 * this kernel's vdso image, the same in every process, under it before sampling starts.  No
 * device has this number. */
#define UNW_VDSO_KEY ((__u64)-1)

/* Its table, or UNW_TABLE_ASKED since asked_ns. */
struct unw_file_ref {
	__u32 table;
	__u32 pad;
	__u64 asked_ns;
};

/* The mappings a walk found in the kernel (bpf_find_vma()) for a process user space has not
 * loaded, kept per process (`unwind_kmaps`): a timer sample may search the kernel once, so a
 * stack across several files is completed over a process's first samples; and user space
 * symbolizes from them a process that exited before it could read /proc/PID/maps. */
#define UNWIND_KMAPS 16
struct unw_kmap {
	__u64 start, end, pgoff; /* pgoff in pages */
	struct unw_file_key file; /* ino 0: anonymous code */
};
struct unw_kmaps {
	__u32 nr; /* entries written, ever: the newest replaces the oldest when full */
	__u32 pad;
	struct unw_kmap maps[UNWIND_KMAPS];
};

/* Offsets of the kernel struct fields the walks through the kernel's mappings and the programs
 * that find mappings ahead of the first sample read (`unwind_kfields`, in the object's .bss),
 * from the kernel's BTF.  Streaming it takes milliseconds, so user space writes them after load,
 * before attach, and the object loads meanwhile: no setting fixed before load depends on them. */
struct unw_kfields {
	__u32 ok;      /* the walk's fields were found: the kernel's mappings can be searched */
	__u32 prefill; /* and those of the exec, mmap() and fork programs */
	__u32 vma_start, vma_end, vma_pgoff, vma_file, file_inode, inode_ino, inode_sb, sb_dev;
	__u32 vma_flags, task_mm, mm_start_code, task_pid, task_tgid;
	/* the vdso's address in the mm (mm_struct.context.vdso, x86): 0 when not found, and a walk
	 * through the kernel's mappings then ends at the vdso */
	__u32 mm_vdso;
};

/* BPF -> user space requests, on the `unwind_events` ring buffer. */
enum unw_event_type {
	UNW_EV_LOAD_TABLE,   /* build and load table `table` (a file `tgid` maps) */
	UNW_EV_REFRESH_PROC, /* `tgid` runs code outside its known mappings (dlopen) */
	UNW_EV_FILE,         /* a process whose mappings are not loaded yet runs code at `addr` in
			      * file `file`, which has no table id: name it, and load its table */
};
struct unw_event {
	__u32 type;
	__u32 tgid;
	__u32 table;
	__u32 pad;
	__u64 addr;
	struct unw_file_key file;
};

/* x86-64 signal delivery (arch/x86/kernel/signal_64.c): the handler returns into the restorer
 * with SP at the struct ucontext of the rt_sigframe; its uc_mcontext (after uc_flags, uc_link and
 * the 24-byte stack_t) holds struct sigcontext, whose rbp, ..., rsp, rip are these offsets from
 * SP.  A fixed user ABI. */
#define UNW_SIGFRAME_RBP 120 /* 40 + 8 * 10: r8..r15, rdi, rsi come first */
#define UNW_SIGFRAME_RSP 160 /* then rbx, rdx, rax, rcx */
#define UNW_SIGFRAME_RIP 168

/* Counters in the BPF object's `unwind_stats` array. */
enum unw_stat {
	UNW_STAT_STACKS,       /* user stacks walked with the tables */
	UNW_STAT_NO_PROC,      /* process mappings not known yet: auto walks frame pointers, eh
				* keeps the leaf */
	UNW_STAT_NO_REGS,      /* stacks walked by frame pointers: no user registers (a sample in
				* the kernel, on a kernel without bpf_task_pt_regs) */
	UNW_STAT_FRAMES_EH,    /* frames unwound from a table row */
	UNW_STAT_FRAMES_FP,    /* frames unwound by frame pointer: code without CFI (auto) */
	UNW_STAT_FRAMES_PENDING, /* frames unwound by frame pointer: their table was still loading (auto) */
	UNW_STAT_END_OK,       /* walks that reached the outermost frame */
	UNW_STAT_END_NO_CFI,   /* --unwind eh: stopped at code without CFI */
	UNW_STAT_END_PENDING,  /* --unwind eh: stopped at code whose table was still loading */
	UNW_STAT_END_UNSUPPORTED, /* stopped at a CFI rule the unwinder does not evaluate */
	UNW_STAT_END_READ,     /* stopped: the stack could not be read */
	UNW_STAT_END_BAD_FRAME, /* stopped: the computed frame does not lie above the current one */
	UNW_STAT_END_UNMAPPED, /* stopped: a PC outside every known mapping */
	UNW_STAT_END_MAX_DEPTH, /* stopped at --max-stack */
	UNW_STAT_REQ_LOST,     /* load requests lost (ring buffer full); retried later */
	UNW_STAT_FRAMES_SIGNAL, /* signal frames unwound into the interrupted code */
	UNW_STAT_EARLY,        /* stacks of processes whose mappings were not loaded yet, walked with
				* the kernel's own (bpf_find_vma) */
	UNW_STAT_END_VMA_BUSY, /* stopped: a second search of the kernel's mappings in one timer
				* sample (the first one's lock is still held) */
	UNW_STAT_SYSCALL,      /* stacks of tasks inside execve() or exit_group(), whose memory
				* the kernel replaces or releases: the walk made at the syscall's
				* entry (struct unw_sysstack) */
	UNW_STAT_END_EXITED,   /* stopped: the process exits, its memory released (an exit the
				* syscall's entry did not see: a fatal signal) */
	UNW_STAT_NR,
};

/* The walk in progress and the counters, per CPU (the `walks` map): no atomics per frame. */
#define UNWIND_MRU 8
#define UNWIND_WIN 2048 /* bytes of the user stack read at once (a power of two) */
struct unw_mru {
	__u32 tgid, gen; /* the process and the version of its list the mapping is from */
	struct unw_mapping map;
};

struct unw_walk {
	__u64 ip, sp, bp;
	__u64 now;
	__u32 tgid;
	__u32 nr;               /* frames recorded in stack_scratch */
	__u32 exact_ip;         /* ip is where a signal interrupted the code, not a return address */
	__u64 rdi;              /* the sampled frame's RDI (UNW_CFA_SP_RA_RDI) */
	struct unw_mapping map; /* the mapping of the last frame: the next is often in it too */
	__u64 stats[UNW_STAT_NR];
	__u32 proc_known;       /* the walk's process had a mapping list: user space knows it */
	__u32 map_listed;       /* map came from that list (not from the kernel's mappings) */
	__u32 gen;              /* that list's version (unw_proc gen) */
	__u32 mru_next;
	/* The mappings the last walks found in their processes' lists: stacks cross the same few
	 * files switch after switch (a program, libc), and two processes that take turns on a CPU
	 * keep theirs. */
	struct unw_mru mru[UNWIND_MRU];
	/* The walked stack read in one piece (bpf/unwind.bpf.h: unwind_read()): win_len bytes from
	 * win_base; 0 at each walk's start. */
	__u64 win_base;
	__u32 win_len, win_pad;
	__u8 win[UNWIND_WIN + 16];
	__u64 stats_saved[UNW_STAT_NR]; /* a walk at a syscall's entry counts nothing */
};

/* The user stack of a thread as it entered execve() or exit_group() (the `unwind_sysstacks`
 * map, by thread id).  Until the syscall returns, the registers it saved stay the same and a
 * sample in the kernel walks from them, but exec replaces the memory they point into (from
 * exec_mmap() to start_thread(), most of an exec) and exit releases it (exit_mm(), before the
 * pages are freed): those samples take this walk, found by the same syscall, ip and sp. */
#define UNWIND_SYSSTACK_DEPTH 128 /* frames kept; deeper stacks (--max-stack) are walked */
struct unw_sysstack {
	__u64 ip, sp;
	__u32 nr_syscall;
	__u32 len; /* bytes of ips */
	__u64 ips[UNWIND_SYSSTACK_DEPTH];
};
#endif
