/* Kernel stacks walked in BPF from the kernel's own ORC tables (bpf/kstack.bpf.h): where the kernel's
 * tables are, which user space reads from /proc/kallsyms (user/unwind/kstack.c), and what the
 * walker counts. */
#ifndef BPFPROF_KSTACK_H
#define BPFPROF_KSTACK_H

/* The running kernel's ORC tables and the code its fast lookup covers. */
struct kstack_cfg {
	__u64 text_start, text_end; /* _stext, _etext */
	__u64 orc_ip;               /* __start_orc_unwind_ip: code addresses, sorted, as s32 offsets */
	__u64 orc;                  /* __start_orc_unwind: the struct orc_entry of each */
	__u64 ret_hooks[2];         /* return_to_handler, arch_rethook_trampoline: 0 when absent */
	__u32 orc_nr;               /* entries in each table */
	__u32 ready;                /* written last: the fields above hold */
};

/* The tracepoints a program walks from: each learns where its caller's return address lies. */
enum kstack_site {
	KSTACK_SITE_SWITCH, /* sched_switch */
	KSTACK_SITE_WAKING, /* sched_waking */
	KSTACK_SITES,
};

/* What the walker counts, per CPU. */
enum kstack_stat {
	KSTACK_WALKED,    /* stacks walked from the ORC tables */
	KSTACK_KERNEL,    /* stacks left to bpf_get_stack(): before the tables are known or learned */
	KSTACK_LEFT,      /* walks that met code they leave to the kernel (modules, BPF, ftrace) */
	KSTACK_LEARNED,   /* calibrations whose walk matched bpf_get_stack() */
	KSTACK_UNLEARNED, /* calibrations that did not (after KSTACK_MAX_TRIES, none is tried) */
	KSTACK_CHECKED,   /* walks compared with bpf_get_stack() */
	KSTACK_DIFFERED,  /* of those, walks that differed: the walker then stops for the run */
	KSTACK_ORC_MISSES, /* ORC entries searched in the kernel's tables, not found cached */
	KSTACK_STATS,
};

/* The walker's per-CPU state (struct kstack_walk, bpf/kstack.bpf.h) begins with its counters. */
struct kstack_counts {
	__u64 n[KSTACK_STATS];
};

/* What each site learned: the return address into the program's caller is at ctx + off (0: not
 * learned) and is one of ret[] (bpf_trace_run<N>() calls the program from two places, with and
 * without kernel.bpf_stats_enabled). */
struct kstack_site_state {
	__s64 off;
	__u64 ret[4];
	__u32 tries;   /* calibrations that failed */
	__u32 stopped; /* a walk differed from bpf_get_stack(): the walker is off for the run */
};

/* Calibrations a site may try before it leaves every stack to bpf_get_stack(). */
#define KSTACK_MAX_TRIES 64
#endif
