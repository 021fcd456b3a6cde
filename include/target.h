/* The target model shared by every command's BPF object (bpf/target.bpf.h) and the runner
 * (user/core/targets.c): which processes, threads, CPUs, cgroup and kinds of thread are traced. */
#ifndef BPFPROF_TARGET_H
#define BPFPROF_TARGET_H

enum target_threads {
	TARGET_THREADS_ALL,
	TARGET_THREADS_USER,   /* -u: no kernel threads */
	TARGET_THREADS_KERNEL, /* -k: kernel threads only */
};

/* The read-only `target` global of every object, fixed before load.  The bitmaps it refers to
 * (tgids, pids, cpus) hold bit id % 64 of word id / 64. */
struct target_cfg {
	__u8 filter_tgid;     /* tgids: -p, or -- COMMAND followed through fork and exec */
	__u8 filter_pid;      /* pids: -t */
	__u8 filter_cpu;      /* cpus: -C */
	__u8 filter_cgroup;   /* --cgroup: the task is in the cgroup (cgroup_filter, cgroup_id) or
			       * below it */
	__u32 threads;        /* enum target_threads */
	__u32 task_flags_off; /* offsetof(struct task_struct, flags), from the kernel's BTF, for
			       * -u/-k in objects that stay free of CO-RE (profile, count, funclat) */
	__u32 pad;
	__u64 cgroup_id;      /* the cgroup's id (its directory's file handle) */
};

/* Ancestors a task's cgroup is compared with when it is not the current task. */
#define TARGET_CGROUP_MAX_LEVELS 32

#define TARGET_PF_KTHREAD 0x00200000 /* PF_KTHREAD, include/linux/sched.h */
#endif
