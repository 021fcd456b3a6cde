/* bpfprof runqlat: what the BPF side (bpf/runqlat.bpf.c) and the loader (user/cmd/runqlat.c) share. */
#ifndef BPFPROF_RUNQLAT_H
#define BPFPROF_RUNQLAT_H
#include "histogram.h"

/* Delays are counted in log-linear slots, 8 per power of two (12.5% wide at most), so the
 * percentiles are estimated from fine buckets; the printed histogram folds them into BCC's log2
 * rows.  Values of 2^36 units and more (19 hours in usecs) share the last slot. */
#define RUNQLAT_SUB_SHIFT 3
#define RUNQLAT_MAX_LOG2 36
#define RUNQLAT_SLOTS (((RUNQLAT_MAX_LOG2) - RUNQLAT_SUB_SHIFT + 1) << RUNQLAT_SUB_SHIFT)

#define RUNQLAT_COMM_LEN 16

/* What one histogram covers: everything, or one per process, thread or PID namespace. */
enum runqlat_key {
	RUNQLAT_BY_NONE,
	RUNQLAT_BY_TGID,  /* -P */
	RUNQLAT_BY_PID,   /* -L */
	RUNQLAT_BY_PIDNS, /* --pidnss: inode number of the task's own PID namespace */
};

struct runqlat_hist {
	__u64 slots[RUNQLAT_SLOTS]; /* delay in the unit (usecs, or msecs with -m) */
	__u64 sum_ns;               /* exact total delay */
	char comm[RUNQLAT_COMM_LEN]; /* -P: the process's; -L: the thread's; --pidnss: first seen */
};

/* Events the BPF side could not count. */
enum runqlat_lost {
	RUNQLAT_LOST_HISTS_FULL,  /* -P/-L/--pidnss: no room for another histogram */
	RUNQLAT_LOST_START,       /* could not remember when a task was enqueued */
	RUNQLAT_LOST_PREFILL,     /* tasks left without storage at the start (not delays) */
	RUNQLAT_LOST_REASONS,
};
#endif
