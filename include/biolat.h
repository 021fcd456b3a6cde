/* bpfprof biolat: shared between bpf/biolat.bpf.c and user/cmd/biolat.c. */
#ifndef BPFPROF_BIOLAT_H
#define BPFPROF_BIOLAT_H
#include "histogram.h"

/* --linear rows (a way of printing: the kernel keeps nanosecond slots, include/histogram.h). */
#define BIOLAT_LINEAR_SLOTS_DEFAULT 100
#define BIOLAT_LINEAR_SLOTS_MAX 1000

/* A histogram value in the `hists` maps: the sum of the latencies in ns, then the count of each
 * of the kernel's nanosecond slots, whatever rows (log2, --loglin, --linear) are printed. */
#define BIOLAT_VAL_SUM 0
#define BIOLAT_VAL_SLOT0 1
#define BIOLAT_VALUE_SIZE ((1 + HIST_NS_SLOTS) * 8)
/* Without -D and -F, a copy of the one histogram in the `hist1` array: a (count, sum of the
 * latencies in ns) pair a slot, so that counting an I/O writes one cache line. */
#define BIOLAT_PAIR_COUNT 0
#define BIOLAT_PAIR_SUM 1
#define BIOLAT_HIST1_VALUE_SIZE (HIST_NS_SLOTS * 16)

/* What histograms are split by: dev with -D, cmd_flags with -F, 0 otherwise. */
struct biolat_key {
	__u32 dev;       /* the kernel's dev_t of the whole disk: major << 20 | first_minor */
	__u32 cmd_flags; /* struct request's cmd_flags: operation in the low bits, flags above */
};

#define BIOLAT_MINORBITS 20

/* A request in the `slots` table or the `start` map (key: its address). */
enum biolat_rq_state {
	RQ_FREE,     /* completed, merged away, or filtered out */
	RQ_QUEUED,   /* inserted (-Q, or a target filter), not issued yet */
	RQ_ISSUED,   /* timed, waiting for completion */
	RQ_REQUEUED, /* sent back by the driver: will be inserted and issued again */
};

struct biolat_start {
	__u64 ts;        /* issue time, or insert time with -Q */
	__u32 dev;
	__u32 cmd_flags;
	__u32 wanted;    /* the submitter passed the target filters (-p, -t, --cgroup, -u/-k) */
	__u32 state;     /* enum biolat_rq_state */
};

/* A slot of the in-flight table: the request's key (0: free) and its entry. */
struct biolat_slot {
	__u64 rq;
	struct biolat_start v;
};

/* One completed request, for --events. */
struct biolat_event {
	__u64 ts_ns;  /* bpf_ktime_get_ns() at completion */
	__u64 lat_ns; /* issue (or insert, -Q) to completion */
};

/* Why a completed request is missing from the output; indexes the `lost` counters. */
enum biolat_lost {
	BIOLAT_LOST_START_FULL,   /* the in-flight request map was full at insert/issue */
	BIOLAT_LOST_HISTS_FULL,   /* no room for a new histogram (-D/-F key) */
	BIOLAT_LOST_EVENTS,       /* the --events ring buffer was full */
	BIOLAT_LOST_NO_COMPLETION, /* issued, and its address issued again with no completion seen */
	BIOLAT_LOST_UNSTAMPED,    /* not stamped by the kernel, completed before the issue program
				   * was attached for such requests */
	BIOLAT_LOST_REASONS,
};

#endif
