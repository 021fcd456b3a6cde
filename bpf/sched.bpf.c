// SPDX-License-Identifier: GPL-2.0
/* Per-task scheduler statistics, the table of `perf sched latency` computed in the kernel:
 * on-CPU time, switches, and run-queue delays (total, count, maximum and when it ended).
 *
 * The table reads on-CPU time from the kernel (se.sum_exec_runtime) and, where it keeps them,
 * the run-queue waits too (targ_sched_info, schedtp.bpf.h): sched_switch alone, no clock read
 * but for a new maximum delay.  --timehist, perf sched timehist's rows, times everything with
 * bpf_ktime_get_ns() and the wakeup programs, as perf's events are timed.
 *
 * Each task's working state and statistics live in task storage (tp_btf flavour) or in a hash
 * keyed by TID (raw_tp flavour, for kernels without tp_btf or task storage).  A task that exits
 * is copied into `stats` at its final switch-out; the live ones are copied by the task iterator
 * when user space reads the results. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "errno.bpf.h"
#include "schedlat.h"
#include "schedtp.bpf.h"

/* Which of `tasks` / `tasks_hash` the iterator reads: the flavour the loader chose. */
const volatile bool targ_task_storage = true;
/* --timehist (rows or summary): a run's time is switch-in to switch-out by bpf_ktime_get_ns(),
 * perf sched timehist's run time; the table's is the kernel's on-CPU time, perf sched latency's */
const volatile bool targ_run_wall = false;
/* --timehist: a row per switch-out of a wanted task; -w: per wakeup; -M: per migration */
const volatile bool targ_timehist = false;
const volatile bool targ_wakeups = false;
const volatile bool targ_migrations = false;
/* --timehist system-wide: each CPU's idle task too, as perf sched timehist shows <idle> (task
 * storage flavour only: the raw flavour keys tasks by TID, and every idle task is 0) */
const volatile bool targ_idle = false;
/* -I/--idle-hist: only the rows of switches from or to an idle task */
const volatile bool targ_idle_hist = false;

/* --timehist -s: each CPU's idle time */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} idle_ns SEC(".maps");
/* user space is woken once this much is waiting (it also reads every 100 ms): a wakeup per row
 * would add a context switch on the reader's CPU to every switch traced */
const volatile __u64 targ_wakeup_bytes = 1 << 20;

/* --timehist rows, finished in the kernel; sized by the loader (a page when unused) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rows SEC(".maps");

/* Per-task working state: task storage (or a hash keyed by TID where the kernel has none). */
struct sched_task {
	__u64 queued_ts; /* wakeup programs: runnable since, or 0 */
	__u64 oncpu_ts;  /* targ_run_wall: on a CPU since, or 0 */
	__u64 exec_base; /* otherwise: se.sum_exec_runtime at its last switch-out seen (or at the
			  * prefill), if exec_known */
	__u64 exec_known;
	struct sched_stats s;
	/* --timehist: the durations of the run in progress, fixed at its switch-in */
	__u64 offcpu_ts; /* switched out at, or 0 */
	__u64 wait_ns;   /* off the CPU before this run: switch-out to switch-in */
	__u64 delay_ns;  /* of which waiting on a run queue: wakeup (or preemption) to switch-in */
	struct sched_wait w; /* targ_sched_info */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sched_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct sched_task);
} tasks_hash SEC(".maps");

/* Preallocated: the exit copy happens in sched_switch, under the run-queue lock. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-tasks */
	__type(key, struct sched_key);
	__type(value, struct sched_row_raw);
} stats SEC(".maps");

__u64 lost[SCHED_LOST_REASONS];
/* waits the kernel counted at switches no sched_switch event showed (in the tasks' totals) */
__u64 unseen;

static __always_inline void count_lost(enum sched_lost why)
{
	if (why < SCHED_LOST_REASONS)
		__sync_fetch_and_add(&lost[why], 1);
}

static __always_inline struct sched_task *task_get(struct task_struct *t, bool btf)
{
	struct sched_task zero = {}, *st;
	__u32 pid;
	int err;

	if (btf) {
		st = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st)
			count_lost(SCHED_LOST_TASKS);
		return st;
	}
	pid = task_pid(t, btf);
	st = bpf_map_lookup_elem(&tasks_hash, &pid);
	if (st)
		return st;
	err = bpf_map_update_elem(&tasks_hash, &pid, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_lost(SCHED_LOST_TASKS);
		return NULL;
	}
	return bpf_map_lookup_elem(&tasks_hash, &pid);
}

/* Copies a task's statistics into `stats`, plus the runtime of a run still in progress. */
static __always_inline void save_row(struct task_struct *t, const struct sched_task *st,
				     __u64 running_ns)
{
	struct sched_row_raw row = {};
	struct sched_key key = {};

	key.pid = BPF_CORE_READ(t, pid);
	key.start_ns = BPF_CORE_READ(t, start_time);
	row.s = st->s;
	row.s.runtime_ns += running_ns;
	row.tgid = BPF_CORE_READ(t, tgid);
	row.pid = key.pid;
	row.ppid = BPF_CORE_READ(t, real_parent, tgid);
	row.dead = running_ns == (__u64)-1;
	if (row.dead)
		row.s.runtime_ns = st->s.runtime_ns;
	BPF_CORE_READ_STR_INTO(&row.comm, t, comm);
	if (bpf_map_update_elem(&stats, &key, &row, BPF_ANY))
		count_lost(SCHED_LOST_STATS_FULL);
}

/* A timehist row about current (the task switched out, the waker, the migrator), or NULL
 * (counted: the ring buffer is full). */
static __always_inline struct timehist_row *row_new(enum timehist_kind kind, __u64 now)
{
	struct timehist_row *row = bpf_ringbuf_reserve(&rows, sizeof(*row), 0);

	if (!row) {
		count_lost(SCHED_LOST_ROWS);
		return NULL;
	}
	__builtin_memset(row, 0, sizeof(*row));
	row->ts = now;
	row->kind = kind;
	row->cpu = bpf_get_smp_processor_id();
	return row;
}

static __always_inline void row_submit(struct timehist_row *row)
{
	bpf_ringbuf_submit(row, bpf_ringbuf_query(&rows, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes ?
				BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void row_task(struct task_struct *t, __u32 *pid, __u32 *tgid, char *comm)
{
	*pid = BPF_CORE_READ(t, pid);
	*tgid = BPF_CORE_READ(t, tgid);
	bpf_probe_read_kernel_str(comm, SCHED_COMM_LEN, &t->comm);
}

/* -w, -M: current on this CPU acts on p */
static __always_inline void emit_action(enum timehist_kind kind, struct task_struct *p,
					__u32 orig_cpu, __u32 dest_cpu)
{
	struct timehist_row *row = row_new(kind, bpf_ktime_get_ns());

	if (!row)
		return;
	row_task((struct task_struct *)bpf_get_current_task(), &row->pid, &row->tgid, row->comm);
	row_task(p, &row->other_pid, &row->other_tgid, row->other_comm);
	row->orig_cpu = orig_cpu;
	row->dest_cpu = dest_cpu;
	row_submit(row);
}

/* Same rule as runqlat (and the kernel's run_delay): queued from the first wakeup, not when
 * woken on a CPU. */
static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	struct sched_task *st;

	if (!wanted(p, btf))
		return 0;
	if (targ_wakeups)
		emit_action(TIMEHIST_WAKEUP, p, 0, 0);
	if (task_on_cpu(p, btf))
		return 0;
	st = task_get(p, btf);
	if (st && !st->queued_ts)
		st->queued_ts = bpf_ktime_get_ns();
	return 0;
}

/* The run of a task switched out: since its switch-in, now (targ_run_wall), or the on-CPU time
 * the kernel counted since its last switch-out seen (se.sum_exec_runtime, brought up to date by
 * __schedule() before the tracepoint: with the runs of switch-ins no event showed). */
static __always_inline __u64 run_ended(struct task_struct *t, struct sched_task *st, __u64 now,
				       bool btf)
{
	__u64 run = 0, exec;

	if (targ_run_wall) {
		if (st->oncpu_ts && now > st->oncpu_ts)
			run = now - st->oncpu_ts;
		st->oncpu_ts = 0;
		return run;
	}
	exec = TASK_READ(btf, t, se.sum_exec_runtime);
	if (st->exec_known && exec > st->exec_base)
		run = exec - st->exec_base;
	st->exec_base = exec;
	st->exec_known = 1;
	return run;
}

/* The wait that ends as next switches in, into *d; false when it did not wait on a run queue.
 * lq: with sched_info, next's sched_info.last_queued.  The waits of switch-ins no sched_switch
 * event showed go to the task's totals (not to its maximum). */
static __always_inline bool wait_ended(struct task_struct *next, struct sched_task *st, __u64 lq,
				       __u64 now, __u64 *d, bool btf)
{
	__u64 missed, missed_ns;

	if (targ_sched_info) {
		if (!lq)
			return false;
		*d = sched_wait_end(next, lq, task_rq_clock(next, btf), &st->w, &missed,
				    &missed_ns, btf);
		if (missed) {
			st->s.delays += missed;
			st->s.delay_ns += missed_ns;
			__sync_fetch_and_add(&unseen, missed);
		}
		return true;
	}
	lq = st->queued_ts;
	st->queued_ts = 0;
	if (!lq || now <= lq)
		return false;
	*d = now - lq;
	return true;
}

static __always_inline int on_switch(unsigned long long *ctx, struct task_struct *prev,
				     struct task_struct *next, bool btf)
{
	bool want_prev = wanted(prev, btf), want_next = wanted(next, btf);
	bool idle_prev = targ_idle && btf && !task_pid(prev, btf);
	bool idle_next = targ_idle && btf && !task_pid(next, btf);
	struct timehist_row *row;
	struct sched_task *st;
	__u32 state, pid, zero = 0;
	__u64 now = 0, d, run, q, *idle, lq;

	want_prev |= idle_prev;
	want_next |= idle_next;
	if (!want_prev && !want_next)
		return 0;
	/* the clock, the costliest part here, where something is timed by it */
	if (targ_run_wall || !targ_sched_info)
		now = bpf_ktime_get_ns();
	if (want_prev && (st = task_get(prev, btf))) {
		run = run_ended(prev, st, now, btf);
		st->s.runtime_ns += run;
		st->s.switches++;
		/* --timehist's summary: the runs one by one, and the CPUs' idle time */
		if (targ_run_wall) {
			st->offcpu_ts = now;
			q = run >> SCHED_SUMSQ_SHIFT;
			st->s.run_sumsq += q * q;
			if (run > st->s.max_run_ns)
				st->s.max_run_ns = run;
			if (run < st->s.min_run_ns || st->s.switches == 1)
				st->s.min_run_ns = run;
		}
		if (idle_prev && (idle = bpf_map_lookup_elem(&idle_ns, &zero)))
			*idle += run;
		state = sched_prev_state(ctx, prev);
		/* the row is finished here: only it crosses to user space */
		if (targ_timehist && (!targ_idle_hist || idle_prev || idle_next) &&
		    (row = row_new(TIMEHIST_SWITCH, now))) {
			row_task(prev, &row->pid, &row->tgid, row->comm);
			row->wait_ns = st->wait_ns;
			row->delay_ns = st->delay_ns;
			row->run_ns = run;
			row->state = state;
			row_submit(row);
		}
		st->wait_ns = st->delay_ns = 0;
		if (state == TASK_RUNNING) {
			/* an idle task is never queued: its rows have no scheduling delay (with
			 * sched_info, the kernel stamps a preempted task itself) */
			if (!targ_sched_info)
				st->queued_ts = idle_prev ? 0 : now;
		} else if (state & TASK_DEAD) {
			/* its last switch: keep the statistics of a task that exits */
			save_row(prev, st, (__u64)-1);
			if (!btf) {
				pid = task_pid(prev, btf);
				bpf_map_delete_elem(&tasks_hash, &pid);
			}
		}
	}
	if (!want_next)
		return 0;
	/* with sched_info, the table has nothing to note for a task that did not wait */
	lq = targ_sched_info ? task_last_queued(next, btf) : 0;
	if (targ_sched_info && !lq && !targ_run_wall)
		return 0;
	if ((st = task_get(next, btf))) {
		/* a task first seen switching in: its on-CPU time counts from here (raw_tp) */
		if (!targ_run_wall && !st->exec_known)
			run_ended(next, st, now, btf);
		if (targ_run_wall)
			st->wait_ns = st->offcpu_ts && now > st->offcpu_ts ? now - st->offcpu_ts : 0;
		st->delay_ns = 0;
		if (wait_ended(next, st, lq, now, &d, btf)) {
			st->delay_ns = d;
			st->s.delay_ns += d;
			st->s.delays++;
			/* the first too: by a clock not refreshed since its wakeup, a wait can be 0 */
			if (d > st->s.max_delay_ns || !st->s.max_delay_at) {
				st->s.max_delay_ns = d;
				st->s.max_delay_at = now ?: bpf_ktime_get_ns();
			}
		}
		if (targ_run_wall)
			st->oncpu_ts = now;
	}
	return 0;
}

SCHEDTP_PROGRAMS(on_switch, on_wakeup)

/* -M: loaded only when asked; raw_tp everywhere, migrations are rare */
SEC("raw_tp/sched_migrate_task")
int BPF_PROG(migrate_raw, struct task_struct *p, int dest_cpu)
{
	if (targ_migrations && wanted(p, false))
		emit_action(TIMEHIST_MIGRATE, p, task_cpu_of(p), dest_cpu);
	return 0;
}

/* Run by user space before attaching: every task of interest gets its storage in process
 * context, not on the hot path where a burst of first events (a signal waking all threads of a
 * process, with interrupts off) can outrun the allocator's per-CPU cache and lose events. */
SEC("iter/task")
int prefill(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct sched_task *st;

	if (!t || !wanted(t, true))
		return 0;
	st = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count_lost(SCHED_LOST_PREFILL);
		return 0;
	}
	/* on-CPU time counted from here, for the tasks running now too */
	if (!targ_run_wall)
		run_ended(t, st, 0, true);
	return 0;
}

/* Run by user space at the end: copies every live task's statistics into `stats`. */
SEC("iter/task")
int dump_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct sched_task *st;
	__u64 running = 0, now;
	__u32 pid;

	if (!t)
		return 0;
	if (targ_task_storage) {
		st = bpf_task_storage_get(&tasks, t, 0, 0);
	} else {
		pid = t->pid;
		st = bpf_map_lookup_elem(&tasks_hash, &pid);
	}
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	/* the run in progress: to now, or to the kernel's last update of its on-CPU time */
	if (targ_run_wall ? st->oncpu_ts && task_on_cpu(t, true) : st->exec_known)
		running = run_ended(t, st, now, true);
	save_row(t, st, running);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
