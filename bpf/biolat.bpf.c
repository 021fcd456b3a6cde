// SPDX-License-Identifier: GPL-2.0
/* Block I/O latency: time each request from issue (or insert, -Q) to completion, keyed by the
 * request pointer, and count it in the kernel in a latency histogram per (disk, flags), a heat
 * map cell per (time column, latency row), and optionally a ring-buffer event. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "biolat.h"
#include "core_fixes.bpf.h"

/* Settings, fixed before load.  Declared before heatmap.bpf.h's, and the variables the
 * completion reads before its other globals, so that what a stamped completion reads of them
 * lies in one cache line each (targ_heatmap and heatmap_start_ns included): a cold line costs
 * a completion tens of ns. */
const volatile bool targ_queued = false;      /* -Q: from insert, not issue */
const volatile bool targ_per_disk = false;    /* -D */
const volatile bool targ_per_flags = false;   /* -F */
const volatile bool filter_dev = false;       /* --disk */
const volatile __u32 targ_dev = 0;
/* ctx[] index of the struct request * argument: user space reads it from the tracepoints' BTF
 * prototypes, since 5.11 (a54895fa "block: remove the request_queue to argument request based
 * tracepoints") dropped the request_queue that came first in block_rq_insert/issue/merge. */
const volatile __u32 targ_rq_arg = 0;
const volatile __u32 targ_complete_rq_arg = 0;
const volatile __u64 targ_unit_ns = 1000;     /* the heat map's: usecs, or msecs with -m */
const volatile bool targ_events = false;
/* Completions read the kernel's own issue stamp (request_issue_stamp()) where it took one, and
 * the issue program is attached only once a request comes without (issue_on). */
const volatile bool targ_stamped = false;
/* Without -D and -F: the one histogram, hist1 below. */
const volatile bool targ_one_hist = false;
const volatile __u32 targ_ncpu = 1;
const volatile __u32 targ_slot_bits = 14;    /* set by the loader: log2 of the in-flight slots */

/* Set by user space once it attached the issue program in a stamped run: completions look for
 * the request's own entry first. */
__u32 issue_on;
/* hist1's generation the programs count in; user space flips it at each report. */
__u32 hist_gen;

#include "heatmap.bpf.h"
#include "target.bpf.h"

/* The operation in cmd_flags' low bits (REQ_OP_BITS, 8 since 4.10). */
#define REQ_OP_MASK 0xff

__u64 lost[BIOLAT_LOST_REASONS];
/* Stamped runs: the I/Os counted that the disks' statistics leave out (flushes, passthrough
 * requests, a queue's without iostats), for user space's count of the completions never seen
 * (biolat.c, unseen_stamped()). */
__u64 not_in_disk_stats;
/* Stamped runs: completions the disks' statistics count as writes and biolat does not: the end
 * of a bare preflush, a write with no data. */
__u64 only_in_disk_stats;

/* Requests in flight, in a direct-mapped table indexed by a hash of the request's address: an
 * array lookup the verifier inlines and one cache line, where a hash map's lookup, insert and
 * delete cost ~0.4 us per I/O here (cache misses on buckets and elements, the bucket lock).  A
 * request whose slot another request holds goes to the `start` hash map instead; `spilled`
 * counts the entries there, so that while it is 0 (nearly always) no lookup goes to the map.  A
 * request's events (insert, issue, complete) come in order, so its own spill is always seen. */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 14); /* 1 << targ_slot_bits, set by the loader */
	/* user space counts the unfinished requests at the end without a syscall per slot */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct biolat_slot);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set by the loader */
	__type(key, __u64);
	__type(value, struct biolat_start);
} start SEC(".maps");

__u64 spilled;

/* The histograms live in an inner map that user space swaps for an empty one at each interval:
 * the map-in-map update waits for running programs (synchronize_rcu), so the old map can then
 * be read whole, with no count lost or split between intervals.  Per-CPU, so the hot path has no
 * atomic instruction. */
struct hists_inner {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(struct biolat_key));
	__uint(value_size, BIOLAT_VALUE_SIZE);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct hists_inner);
} hists SEC(".maps");

/* Without -D and -F, the one histogram: a copy per CPU and generation in an array, found by
 * index (the CPU's number, an inlined per-CPU load), with no map or map-in-map pointer to load
 * (two cache misses fewer per I/O than a per-CPU array in an outer map), each slot's count
 * beside its sum (one line written, not two).  User space flips
 * hist_gen at each report and waits for the programs running (an update of gen_wait) before it
 * reads and clears the old generation, so no count is lost or split between reports. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2); /* 2 * targ_ncpu, set by the loader */
	/* read and cleared by user space without a syscall */
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, BIOLAT_HIST1_VALUE_SIZE);
} hist1 SEC(".maps");

/* Never read here: an update of a map-in-map returns once every program running has finished
 * (syscall.c, maybe_wait_bpf_programs(), since 4.20), the wait hist_gen's flip needs. */
struct gen_wait_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct gen_wait_inner);
} gen_wait SEC(".maps");

/* A zeroed histogram value to create new keys from (the stack is too small for one). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, BIOLAT_VALUE_SIZE);
} zero_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* set by the loader with --events */
} events SEC(".maps");

static __always_inline void count_lost(enum biolat_lost why)
{
	__sync_fetch_and_add(&lost[why], 1);
}

static __always_inline struct request *rq_arg(__u64 *ctx, __u32 idx)
{
	/* idx is a load-time constant: the verifier follows one branch only, so a kernel whose
	 * tracepoint has a single argument never sees ctx[1] read */
	if (idx == 1)
		return (struct request *)ctx[1];
	return (struct request *)ctx[0];
}

/* block_rq_complete's nr_bytes, which follows rq and error. */
static __always_inline __u32 complete_nr_bytes(__u64 *ctx)
{
	__u64 v;

	/* as in rq_arg(), but clang would read ctx[2 + idx], an offset the verifier refuses */
	if (targ_complete_rq_arg == 1) {
		v = ctx[3];
		barrier_var(v);
		return v;
	}
	v = ctx[2];
	barrier_var(v);
	return v;
}

/* The disk's dev_t.  btf: rq came from a tp_btf argument, a typed pointer the verifier lets us
 * follow with plain loads (made fault-safe), several times cheaper than the helper calls
 * BPF_CORE_READ makes, which raw_tp needs. */
static __always_inline __u32 rq_dev(struct request *rq, bool btf)
{
	struct gendisk *disk = request_disk(rq, btf);

	if (btf) {
		if (!disk)
			return 0;
		return ((__u32)disk->major << BIOLAT_MINORBITS) | (__u32)disk->first_minor;
	}
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << BIOLAT_MINORBITS) |
	       (__u32)BPF_CORE_READ(disk, first_minor);
}

/* Fills the key parts of *val from rq; false when -d excludes the request. */
static __always_inline bool describe(struct request *rq, struct biolat_start *val, bool btf)
{
	if (filter_dev || targ_per_disk) {
		val->dev = rq_dev(rq, btf);
		if (filter_dev && val->dev != targ_dev)
			return false;
	}
	if (targ_per_flags)
		val->cmd_flags = btf ? rq->cmd_flags : BPF_CORE_READ(rq, cmd_flags);
	return true;
}

/* The request's key, a number to hash, never 0: its address in raw_tp programs, where the
 * arguments are numbers; in tp_btf ones, where rq is a typed pointer the verifier allows no
 * arithmetic on but subtracting another pointer (for programs allowed to leak pointers, as
 * tracing ones are), its address minus a fixed one (`lost`'s). */
static __always_inline __u64 rq_key(struct request *rq, bool btf)
{
	__u64 a = (__u64)rq, b = (__u64)&lost[0];

	return btf ? a - b : a;
}

static __always_inline struct biolat_slot *slot_of(__u64 key)
{
	/* Fibonacci hashing: requests are struct-sized steps apart, and the top bits of the
	 * product mix all of the address's */
	__u32 idx = (key * 0x9E3779B97F4A7C15ULL) >> (64 - targ_slot_bits);

	return bpf_map_lookup_elem(&slots, &idx);
}

/* The request's entry, or NULL. */
static __always_inline struct biolat_start *find(__u64 key)
{
	struct biolat_slot *sl = slot_of(key);

	if (sl && sl->rq == key)
		return &sl->v;
	if (!spilled)
		return NULL;
	return bpf_map_lookup_elem(&start, &key);
}

/* Stores *val for rq: in place when the request's entry exists, else in its free slot or, when
 * another request holds the slot, in the map. */
static __always_inline void store(__u64 key, struct biolat_start *sv, struct biolat_start *val)
{
	struct biolat_slot *sl;

	if (!sv) {
		sl = slot_of(key);
		if (!sl || sl->rq || __sync_val_compare_and_swap(&sl->rq, 0, key) != 0) {
			if (bpf_map_update_elem(&start, &key, val, BPF_NOEXIST))
				count_lost(BIOLAT_LOST_START_FULL);
			else
				__sync_fetch_and_add(&spilled, 1);
			return;
		}
		sv = &sl->v;
	}
	sv->dev = val->dev;
	sv->cmd_flags = val->cmd_flags;
	sv->wanted = val->wanted;
	sv->ts = val->ts;
	sv->state = val->state;
}

/* Done with rq's entry: its slot is free for the next request hashed there. */
static __always_inline void release(__u64 key, struct biolat_start *sv)
{
	struct biolat_slot *sl = slot_of(key);

	if (sl && sl->rq == key) {
		sv->state = RQ_FREE;
		/* the entry is written before the slot can be claimed again */
		__sync_val_compare_and_swap(&sl->rq, key, 0);
		return;
	}
	if (!bpf_map_delete_elem(&start, &key))
		__sync_fetch_and_add(&spilled, -1);
}

/* Whether --disk keeps rq, a tp_btf argument. */
static __always_inline bool describe_ok(struct request *rq)
{
	struct biolat_start val = {};

	return describe(rq, &val, true);
}

/* Starts timing rq now, as *val says; when -d excludes it, forgets the entry its address had,
 * which must not time this I/O. */
static __always_inline void track(struct request *rq, __u64 key, struct biolat_start *sv,
				  struct biolat_start *val, bool btf)
{
	if (!describe(rq, val, btf)) {
		if (sv)
			release(key, sv);
		return;
	}
	val->ts = bpf_ktime_get_ns();
	store(key, sv, val);
}

/* Whether the task running this program passes the target filters. */
static __always_inline bool current_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return target_current_wanted(id >> 32, (__u32)id);
}

/* block_rq_insert (attached with -Q or a target filter): the request enters the I/O scheduler
 * or a dispatch list, still in the context of the task that submitted it. */
static __always_inline int on_insert(struct request *rq, bool btf)
{
	struct biolat_start *sv, val = { .state = RQ_QUEUED };
	__u64 key = rq_key(rq, btf);

	sv = find(key);
	/* a requeued request keeps its submitter and the time it was first queued */
	if (sv && sv->state == RQ_REQUEUED) {
		sv->state = RQ_QUEUED;
		return 0;
	}
	if (sv && sv->state == RQ_ISSUED)
		count_lost(BIOLAT_LOST_NO_COMPLETION);
	val.wanted = !target_filters_tasks() || current_wanted();
	track(rq, key, sv, &val, btf);
	return 0;
}

/* block_rq_issue: the driver gets the request.  A request that went through insert keeps the
 * submitter recorded there (dispatch may run in a kworker or another task); one issued directly
 * (no scheduler, blk_mq_try_issue_directly) is issued by its submitter, so current is right. */
static __always_inline int on_issue(struct request *rq, bool btf)
{
	/* tracked only when its submitter passes the filters: if it is requeued, its next issue
	 * must still count it */
	struct biolat_start *sv, val = { .state = RQ_ISSUED, .wanted = 1 };
	__u64 key = rq_key(rq, btf);

	sv = find(key);
	if (sv && (sv->state == RQ_QUEUED || sv->state == RQ_REQUEUED)) {
		if (!sv->wanted) {
			release(key, sv);
			return 0;
		}
		if (!targ_queued)
			sv->ts = bpf_ktime_get_ns();
		sv->state = RQ_ISSUED;
		return 0;
	}
	/* the previous request at this address was issued and never seen completing: a nested
	 * run the kernel skipped, or a kernel that runs no tracing program while certain tasks
	 * are current (this VM's skips PID 1's threads: a completion interrupting one is never
	 * seen, and no recursion miss is counted; README, biolat) */
	if (sv && sv->state == RQ_ISSUED)
		count_lost(BIOLAT_LOST_NO_COMPLETION);
	if (target_filters_tasks() && !current_wanted()) {
		if (sv)
			release(key, sv);
		return 0;
	}
	track(rq, key, sv, &val, btf);
	return 0;
}

/* block_rq_requeue: the driver could not take the request; it is issued again later (through
 * insert, when attached), and that issue is not a new I/O. */
static __always_inline int on_requeue(struct request *rq, bool btf)
{
	__u64 key = rq_key(rq, btf);
	struct biolat_start *sv = find(key);

	if (sv && sv->state == RQ_ISSUED)
		sv->state = RQ_REQUEUED;
	return 0;
}

/* block_rq_merge: rq is merged into another request and freed without completing; forget it,
 * or a later request at the same address, issued directly, would inherit its insert time. */
static __always_inline int on_merge(struct request *rq, bool btf)
{
	__u64 key = rq_key(rq, btf);
	struct biolat_start *sv = find(key);

	if (sv)
		release(key, sv);
	return 0;
}

static __always_inline void count_hist(struct biolat_key *key, __u64 lat_ns)
{
	__u32 zero = 0, idx;
	__u64 *v, slot;
	void *inner, *zv;

	if (targ_one_hist) {
		idx = (hist_gen & 1) * targ_ncpu + bpf_get_smp_processor_id();
		v = bpf_map_lookup_elem(&hist1, &idx);
		if (!v)
			return;
		/* this CPU's copy, and the kernel never nests a program inside itself on one CPU */
		v += 2 * hist_ns_slot(lat_ns);
		v[BIOLAT_PAIR_COUNT] += 1;
		v[BIOLAT_PAIR_SUM] += lat_ns;
		return;
	}
	inner = bpf_map_lookup_elem(&hists, &zero);
	if (!inner)
		return;
	v = bpf_map_lookup_elem(inner, key);
	if (!v) {
		zv = bpf_map_lookup_elem(&zero_hist, &zero);
		if (!zv)
			return;
		bpf_map_update_elem(inner, key, zv, BPF_NOEXIST);
		v = bpf_map_lookup_elem(inner, key);
		if (!v) {
			count_lost(BIOLAT_LOST_HISTS_FULL);
			return;
		}
	}
	slot = hist_ns_slot(lat_ns);
	/* per-CPU value, and the kernel never nests a program inside itself on one CPU */
	v[BIOLAT_VAL_SUM] += lat_ns;
	v[BIOLAT_VAL_SLOT0 + slot] += 1;
}

/* In a stamped run, counts rq apart when /sys/block/D/stat's reads, writes and discards leave
 * it out: flushes (counted apart, blk_account_io_flush()), passthrough requests and those of a
 * queue without iostats (no RQF_IO_STAT).  The kernel's request operations are enum req_op, as
 * readable as RQF_STATS.  A flush sequence's data write is counted here at its data and there
 * once, at the sequence's end (blk_account_io_done() skips it while RQF_FLUSH_SEQ is set). */
static __always_inline void count_disk_stats(struct request *rq, bool btf)
{
	__u32 op;

	if (!targ_stamped || !btf || !bpf_core_enum_value_exists(enum req_op, REQ_OP_FLUSH))
		return;
	op = rq->cmd_flags & REQ_OP_MASK;
	if (op == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH) ||
	    op == bpf_core_enum_value(enum req_op, REQ_OP_DRV_IN) ||
	    op == bpf_core_enum_value(enum req_op, REQ_OP_DRV_OUT) || !request_io_stat(rq))
		__sync_fetch_and_add(&not_in_disk_stats, 1);
}

/* Counts one completed I/O: lat_ns from its start to now. */
static __always_inline void count_io(struct biolat_key *hkey, __u64 now, __u64 lat_ns)
{
	struct biolat_event *e;

	count_hist(hkey, lat_ns);
	if (targ_heatmap)
		heatmap_add(now, lat_ns / targ_unit_ns);
	if (targ_events) {
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count_lost(BIOLAT_LOST_EVENTS);
			return;
		}
		e->ts_ns = now;
		e->lat_ns = lat_ns;
		/* user space drains on a timer: no wakeup per I/O */
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
}

/* A request the kernel stamped at issue (request_issue_stamp()): no entry of ours, the key read
 * from the request now.  Its flags are those it was issued with: only the flush machinery
 * changes them, before the issue of the data and after its completion, counted below. */
static __always_inline int complete_stamped(struct request *rq, __u64 issued, __u32 data_len)
{
	struct biolat_key hkey = {};
	struct biolat_start val = {};
	__u64 now, lat_ns;

	/* issued before the run started, as the requests with no entry in the other path */
	if (issued < heatmap_start_ns)
		return 0;
	if (!describe(rq, &val, true))
		return 0;
	now = bpf_ktime_get_ns();
	lat_ns = now > issued ? now - issued : 0;
	if (targ_per_disk)
		hkey.dev = val.dev;
	if (targ_per_flags)
		hkey.cmd_flags = val.cmd_flags;
	count_disk_stats(rq, true);
	count_io(&hkey, now, lat_ns);
	return 0;
}

/* block_rq_complete's other cases: a write with no bytes left, a stamped request once the issue
 * program is on, or one timed by it. */
static __always_inline int complete_rest(struct request *rq, __u32 data_len, bool btf)
{
	struct biolat_key hkey = {};
	struct biolat_start *sv;
	__u64 key = rq_key(rq, btf), now, lat_ns, issued = 0;

	/* A write that went through the flush machinery (a data write with a preflush or FUA the
	 * disk lacks) completes twice: its data, counted, then once its postflush is done
	 * (blk_flush_complete_seq(), REQ_FSEQ_DONE) with no bytes left.  Counted once, at the
	 * first, where the issue program's entry ends; the disk's statistics count it once too,
	 * at the second.  A bare preflush (fsync's, O_DSYNC's) completes once, with no bytes and
	 * never issued itself (state idle: its flush request was): no I/O here, a write there. */
	if (targ_stamped && btf && !data_len &&
	    (rq->cmd_flags & REQ_OP_MASK) == bpf_core_enum_value(enum req_op, REQ_OP_WRITE)) {
		if (rq->state == MQ_RQ_IDLE && request_io_stat(rq) && describe_ok(rq))
			__sync_fetch_and_add(&only_in_disk_stats, 1);
		return 0;
	}
	if (targ_stamped && btf) {
		issued = request_issue_stamp(rq);
		if (issued && !issue_on)
			return complete_stamped(rq, issued, data_len);
	}
	sv = find(key);
	if (!sv) {
		/* issued before the run started, or filtered out; or, in a stamped run, one the
		 * kernel did not stamp (a passthrough request, a queue without statistics) before
		 * the issue program was attached for it: counted lost, and user space attaches it
		 * on seeing the count.  A request never started (state idle: the end of a bare
		 * preflush, a failed dispatch) was no I/O.  One issued before the run started
		 * counts too: nothing tells when it was (a passthrough request's start_time_ns
		 * was seen seconds older than its issue), and counting it only attaches the
		 * issue program sooner. */
		if (issued)
			return complete_stamped(rq, issued, data_len);
		if (targ_stamped && btf && !issue_on && rq->state != MQ_RQ_IDLE) {
			if (describe_ok(rq))
				count_lost(BIOLAT_LOST_UNSTAMPED);
		}
		return 0;
	}
	if (sv->state != RQ_ISSUED) {
		/* ended without being issued (a failed dispatch), or completed already */
		if (sv->state != RQ_FREE)
			release(key, sv);
		return 0;
	}
	now = bpf_ktime_get_ns();
	lat_ns = now > sv->ts ? now - sv->ts : 0;
	if (targ_per_disk)
		hkey.dev = sv->dev;
	if (targ_per_flags)
		hkey.cmd_flags = sv->cmd_flags;
	release(key, sv);
	count_disk_stats(rq, btf);
	count_io(&hkey, now, lat_ns);
	return 0;
}

/* complete_rest() of a tp_btf program, apart from the common case (on_complete()), so that its
 * code stays out of the few cache lines that case runs through. */
static __noinline int complete_other(struct request *rq, __u32 data_len)
{
	return complete_rest(rq, data_len, true);
}

/* block_rq_complete(rq, error, nr_bytes): nr_bytes of rq's data are done.  A driver may complete
 * a request in parts (SCSI, MMC): each part is a hit, and the request is counted once, at the
 * part that ends it (nr_bytes covers what is left of it).  The common case of a stamped run
 * first: a request with data that the kernel stamped, before any issue program. */
static __always_inline int on_complete(__u64 *ctx, struct request *rq, bool btf)
{
	__u32 data_len = btf ? rq->__data_len : BPF_CORE_READ(rq, __data_len);
	__u64 issued;

	if (complete_nr_bytes(ctx) < data_len)
		return 0;
	if (targ_stamped && btf && data_len && !issue_on) {
		issued = request_issue_stamp(rq);
		if (issued)
			return complete_stamped(rq, issued, data_len);
	}
	return btf ? complete_other(rq, data_len) : complete_rest(rq, data_len, false);
}

/* One tp_btf program and its raw_tp fallback per tracepoint; the loader keeps one of the two.
 * The btf flag lets the tp_btf one read through typed pointers. */
#define BLOCK_RQ_PROGS(tp, name, handler, arg)				\
	SEC("tp_btf/" #tp)						\
	int name##_btf(__u64 *ctx)					\
	{								\
		return handler(rq_arg(ctx, arg), true);			\
	}								\
	SEC("raw_tp/" #tp)						\
	int name##_raw(__u64 *ctx)					\
	{								\
		return handler(rq_arg(ctx, arg), false);		\
	}
/* the same, for a handler that reads the tracepoint's other arguments too */
#define BLOCK_RQ_PROGS_CTX(tp, name, handler, arg)			\
	SEC("tp_btf/" #tp)						\
	int name##_btf(__u64 *ctx)					\
	{								\
		return handler(ctx, rq_arg(ctx, arg), true);		\
	}								\
	SEC("raw_tp/" #tp)						\
	int name##_raw(__u64 *ctx)					\
	{								\
		return handler(ctx, rq_arg(ctx, arg), false);		\
	}

BLOCK_RQ_PROGS(block_rq_insert, insert, on_insert, targ_rq_arg)
BLOCK_RQ_PROGS(block_rq_issue, issue, on_issue, targ_rq_arg)
BLOCK_RQ_PROGS(block_rq_requeue, requeue, on_requeue, targ_rq_arg)
BLOCK_RQ_PROGS(block_rq_merge, merge, on_merge, targ_rq_arg)
/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
BLOCK_RQ_PROGS_CTX(block_rq_complete, complete, on_complete, targ_complete_rq_arg)

char LICENSE[] SEC("license") = "GPL";
