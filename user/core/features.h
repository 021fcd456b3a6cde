/* What this kernel can do, probed once per run: every command's configuration reads these
 * answers, so a probe and the code that relies on it cannot disagree.  Each answer is computed
 * on first use and kept; the kernel's BTF is parsed at most once per run, and not at all by a
 * run that needs none of it (a default profile).  features_release() frees the BTF once the
 * objects are configured: it takes several MB. */
#ifndef BPFPROF_FEATURES_H
#define BPFPROF_FEATURES_H
#include <stdbool.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* The kernel's BTF (/sys/kernel/btf/vmlinux), or NULL without it. */
const struct btf *feat_btf(void);

/* A tp_btf program can attach to raw tracepoint `tp` (e.g. "sched_switch"): the kernel's BTF
 * has btf_trace_<tp> and loads a BPF_TRACE_RAW_TP program for it.  BPFPROF_FORCE_RAW_TP=1 in the
 * environment makes it false, so that tests run the raw_tp fallbacks on kernels with tp_btf. */
bool feat_tp_btf(const char *tp);

/* The kernel has tracepoint `tp` (its btf_trace_<tp> prototype is in BTF). */
bool feat_tp_exists(const char *tp);

/* Arguments tracepoint `tp` passes (from its BTF prototype), e.g. 4 for sched_switch since 5.18
 * (prev_state); -ENOENT without BTF or prototype. */
int feat_tp_nr_args(const char *tp);

/* Position of tracepoint `tp`'s first argument that points to `struct struct_name`, read from
 * the prototype btf_trace_<tp>: prototypes change (5.11 dropped the request_queue argument of
 * block_rq_*).  -ENOENT when the typedef or argument is missing, -EINVAL for a typedef that is not
 * a tracepoint prototype.  Pure: tests give it their own BTF. */
int btf_tp_arg_index(const struct btf *btf, const char *tp, const char *struct_name);
/* The same on the kernel's BTF. */
int feat_tp_arg_index(const char *tp, const char *struct_name);

/* Task storage maps (5.11+). */
bool feat_task_storage(void);
/* Task iterators (SEC("iter/task"), 5.8): the kernel's BTF has their context type. */
bool feat_task_iter(void);

/* bpf_task_pt_regs() (5.15+): the user registers of a task in a tracepoint.  False with
 * BPFPROF_NO_TASK_PT_REGS=1 in the environment, for tests of older kernels' paths. */
bool feat_task_pt_regs(void);

/* bpf_loop() (5.17+): a loop's body verified once, not once per round.  False with
 * BPFPROF_NO_BPF_LOOP=1 in the environment, for tests of older kernels' paths. */
bool feat_bpf_loop(void);

/* Hash maps without preallocation are usable from perf_event (NMI) programs (6.1+, the BPF memory
 * allocator); before, such programs must preallocate every element. */
bool feat_nmi_alloc(void);

/* fentry programs load (BPF trampolines; some kernels and lockdown policies refuse them).
 * *why gets a one-line reason when false. */
bool feat_fentry(const char **why);

/* kprobes can be created (CONFIG_KPROBES and the kprobe PMU).  *why as above. */
bool feat_kprobes(const char **why);

/* Raw tracepoints take an attach cookie (6.10+). */
bool feat_raw_tp_cookie(void);

/* The kernel keeps its own run-queue accounting where a sched_switch program reads it: each
 * task's sched_info (CONFIG_SCHED_INFO: last_queued, run_delay, pcount) as 5.14 and later keep
 * it (always collected, pcount counting the runs that end a wait) and collected here (our own
 * /proc/self/schedstat counts runs), and the run queue's clock reachable from a task
 * (CONFIG_FAIR_GROUP_SCHED).  False with BPFPROF_NO_SCHED_INFO=1 in the environment, for tests
 * of the other kernels' path.  *why gets a one-line reason when false. */
bool feat_sched_info(const char **why);

/* Whether block requests carry the kernel's issue time that biolat reads at completion
 * (rq->io_start_time_ns under RQF_STATS, bpf/core_fixes.bpf.h's request_issue_stamp()).  False
 * with BPFPROF_NO_RQ_STAMP=1 in the environment, for tests of the issue program's path.  *why
 * gets a one-line reason when false. */
bool feat_rq_issue_stamp(const char **why);

/* offsetof(struct task_struct, flags), or a negative errno without BTF. */
int feat_task_flags_offset(void);

/* Keeps exactly one of two programs for tracepoint `tp`: the tp_btf one where the kernel has
 * it, the raw_tp one otherwise (-v says which).  Either may be NULL (nothing to choose). */
void feat_pick_tp(struct bpf_program *btf_prog, struct bpf_program *raw_prog, const char *tp);

/* Frees the BTF; answers already computed stay, a later question parses it again. */
void features_release(void);
#endif
