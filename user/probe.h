/* Kernel feature probes and the choice between program types (tp_btf vs raw_tp, ...). */
#ifndef BPFPROF_PROBE_H
#define BPFPROF_PROBE_H
#include <stdbool.h>
#include <bpf/libbpf.h>

/* True when a tp_btf program can attach to raw tracepoint `name` (e.g. "sched_switch"): the
 * kernel has BTF with btf_trace_<name> and loads a BPF_TRACE_RAW_TP tracing program for it.
 * Results are cached per name.  BPFPROF_FORCE_RAW_TP=1 in the environment makes it false, so that
 * tests can run the raw_tp fallbacks on kernels that have tp_btf. */
bool probe_tp_btf(const char *name);

/* Number of arguments raw tracepoint `name` passes (from its btf_trace_<name> prototype in the
 * kernel's BTF), e.g. to know whether sched_switch has prev_state (5.18+).  -ENOENT without BTF. */
int probe_tp_nr_args(const char *name);

/* True when fentry programs load on this kernel (BPF trampolines: some kernels or lockdown
 * policies refuse them).  *why gets a one-line reason when false. */
bool probe_fentry(const char **why);

/* True when kprobes can be created (CONFIG_KPROBES and the kprobe PMU). */
bool probe_kprobes(const char **why);

/* Keeps exactly one of two programs for tracepoint `tp`: the tp_btf one where the kernel has
 * it, the raw_tp one otherwise.  `-v` says which.  Either may be NULL (nothing to choose). */
void probe_pick_tp(struct bpf_program *btf_prog, struct bpf_program *raw_prog, const char *tp);
#endif
