/* The user side of bpf/schedtp.bpf.h, shared by runqlat and sched: which program flavour to load,
 * the sched_switch prototype, PID filters and their targets. */
#ifndef BPFPROF_SCHEDTP_H
#define BPFPROF_SCHEDTP_H
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

#define SCHEDTP_MAX_IDS 1024 /* entries of the tgids / pids filter maps */

/* -p / -t targets. */
struct schedtp_targets {
	__u32 pids[SCHEDTP_MAX_IDS], tids[SCHEDTP_MAX_IDS];
	int nr_pids, nr_tids;
};

/* Parses "-p 1,2" (threads false) or "-t 3" (threads true) into t, checking that each exists.
 * Returns 0, or -EINVAL / -ESRCH with a message printed. */
int schedtp_parse_ids(struct schedtp_targets *t, const char *arg, bool threads);

/* True when the fast flavour can be used: tp_btf on sched_switch, sched_wakeup and
 * sched_wakeup_new, and task storage maps (5.11+).  Otherwise the raw_tp programs keep their
 * timestamps in hash maps keyed by TID.  force_raw picks the latter regardless (--raw-tp).
 * -v says which and why. */
bool schedtp_use_btf(bool force_raw);

/* True when this kernel's sched_switch passes prev_state as a 4th argument (5.18+), read from
 * the prototype of btf_trace_sched_switch in the kernel's BTF. */
bool schedtp_switch_has_prev_state(void);

/* Keeps the n programs of one flavour: the btf ones when use_btf, the raw ones otherwise. */
void schedtp_pick(struct bpf_program **btf_progs, struct bpf_program **raw_progs, int n,
		  bool use_btf);

/* Turns a task storage map into a one-entry hash map, for kernels without task storage: the
 * programs that use it as task storage are not loaded there, but the map is still created. */
int schedtp_disable_task_storage(struct bpf_map *map);

/* Fills the tgids / pids filter maps. Returns 0 or -errno (message printed). */
int schedtp_fill_filters(const struct schedtp_targets *t, struct bpf_map *tgids,
			 struct bpf_map *pids);

/* True when targets were given and none of them exists any more. */
bool schedtp_targets_gone(const struct schedtp_targets *t);

struct schedtp_attach {
	struct bpf_program *prog;
	struct bpf_link **link; /* where the skeleton keeps it, so that destroy detaches it */
};

/* Attaches a[0..n) in that order.  Callers put sched_switch first, so that no task is seen woken
 * whose switch-in is then missed (which would leave a stale enqueue time behind).  Programs not
 * loaded are skipped.  Returns 0 or -errno (message printed). */
int schedtp_attach_in_order(const struct schedtp_attach *a, int n);
/* Runs a task iterator program once over every task (what = its purpose, for errors).
 * Returns 0 or -errno (message printed). */
int schedtp_run_task_iter(struct bpf_program *prog, const char *what);
#endif
