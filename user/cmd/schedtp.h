/* The user side of bpf/schedtp.bpf.h, shared by runqlat and sched: which program flavour to load,
 * the sched_switch prototype, and attaching in the order that loses no wait. */
#ifndef BPFPROF_SCHEDTP_H
#define BPFPROF_SCHEDTP_H
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

/* True when the fast flavour can be used: tp_btf on sched_switch, sched_wakeup and
 * sched_wakeup_new, and task storage maps (5.11+).  Otherwise the raw_tp programs keep their
 * timestamps in hash maps keyed by TID.  force_raw picks the latter regardless (--raw-tp).
 * -v says which and why. */
bool schedtp_use_btf(bool force_raw);

/* True when waits are read from the kernel's run-queue accounting at sched_switch alone
 * (feat_sched_info(): bpf/schedtp.bpf.h's targ_sched_info), false when the wakeup programs time
 * them; veto (a reason, or NULL) keeps the wakeup programs.  -v says which and why. */
bool schedtp_use_sched_info(const char *veto);

/* True when this kernel's sched_switch passes prev_state as a 4th argument (5.18+), read from
 * the prototype of btf_trace_sched_switch in the kernel's BTF. */
bool schedtp_switch_has_prev_state(void);

/* The programs of SCHEDTP_PROGRAMS (bpf/schedtp.bpf.h), sched_switch first. */
#define SCHEDTP_NR_PROGS 3

struct schedtp_links {
	struct bpf_link *links[SCHEDTP_NR_PROGS];
};

/* Configures obj for the flavour chosen by schedtp_use_btf(): keeps its programs (found by name;
 * sched_switch alone with sched_info, schedtp_use_sched_info()), loads the prefill task iterator
 * only with task storage, and shrinks the per-task map the flavour does not use: `hash` to one
 * entry with task storage, else `storage` (a task storage map) turned into a one-entry hash,
 * since kernels without task storage cannot create it, and `hash` sized to hash_entries.
 * Returns 0 or -errno (message printed). */
int schedtp_configure(struct bpf_object *obj, bool use_btf, bool sched_info,
		      struct bpf_map *storage, struct bpf_map *hash, __u32 hash_entries,
		      struct bpf_program *prefill);

/* After load (and the target filters): gives the tasks of interest their storage (the prefill
 * task iterator, when the flavour loaded it), then attaches the programs, sched_switch first:
 * attached after the wakeup programs, it could miss the switch-in of a task seen woken and leave
 * a stale enqueue time behind.  Returns 0 or -errno (message printed); what was attached stays
 * in *l for schedtp_detach(). */
int schedtp_start(struct bpf_object *obj, struct bpf_program *prefill, struct schedtp_links *l);

/* Detaches (NULL-safe, idempotent): the counts stop here. */
void schedtp_detach(struct schedtp_links *l);

/* Runs a task iterator program once over every task (what = its purpose, for errors).
 * Returns 0 or -errno (message printed). */
int schedtp_run_task_iter(struct bpf_program *prog, const char *what);
#endif
