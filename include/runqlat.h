/* bpfprof runqlat: what the BPF side (bpf/runqlat.bpf.c) and the loader (user/cmd/runqlat.c) share. */
#ifndef BPFPROF_RUNQLAT_H
#define BPFPROF_RUNQLAT_H
#include "histogram.h"

#define RUNQLAT_COMM_LEN 16

/* What one histogram covers: everything, or one per process, thread or PID namespace. */
enum runqlat_key {
	RUNQLAT_BY_NONE,
	RUNQLAT_BY_TGID,  /* -P */
	RUNQLAT_BY_PID,   /* -L */
	RUNQLAT_BY_PIDNS, /* --pidnss: inode number of the task's own PID namespace */
};

/* Delays in the kernel's nanosecond slots (include/histogram.h), whatever the unit printed:
 * the rows fold them into BCC's log2 rows of usecs or msecs. */
struct runqlat_hist {
	__u64 slots[HIST_NS_SLOTS];
	__u64 sum_ns;               /* exact total delay */
	char comm[RUNQLAT_COMM_LEN]; /* -P: the process's; -L: the thread's; --pidnss: first seen */
};

/* Events the BPF side could not count. */
enum runqlat_lost {
	RUNQLAT_LOST_HISTS_FULL,  /* -P/-L/--pidnss: no room for another histogram */
	RUNQLAT_LOST_START,       /* no per-task state (enqueue time, or run_delay so far) */
	RUNQLAT_LOST_PREFILL,     /* tasks left without storage at the start (not delays) */
	RUNQLAT_LOST_UNSEEN,      /* waits the kernel counted (sched_info) at switches not seen */
	RUNQLAT_LOST_REASONS,
};
#endif
