/* Kernel feature probes and the choice between program types (tp_btf vs raw_tp, ...). */
#ifndef BPFPROF_PROBE_H
#define BPFPROF_PROBE_H
#include <stdbool.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* The running kernel's BTF (/sys/kernel/btf/vmlinux), loaded once; NULL when it has none. */
struct btf *probe_vmlinux_btf(void);

/* Position (0-based, among the arguments a tp_btf/raw_tp program sees in ctx[]) of the first
 * argument of tracepoint `tp` that is a pointer to `struct struct_name`, read from the
 * prototype of BTF typedef btf_trace_<tp>.  Tracepoint prototypes change between kernels (5.11
 * dropped the request_queue argument of the block_rq_* tracepoints): this finds the argument
 * wherever it is.  Returns the index, -ENOENT when the typedef or argument is missing, -EINVAL
 * for a typedef that is not a tracepoint prototype. */
int btf_tp_arg_index(const struct btf *btf, const char *tp, const char *struct_name);

/* True when a tp_btf program can attach to raw tracepoint `name` (e.g. "sched_switch"): the
 * kernel has BTF with btf_trace_<name> and loads a BPF_TRACE_RAW_TP tracing program for it.
 * Results are cached per name. */
bool probe_tp_btf(const char *name);

/* True when fentry programs load on this kernel (BPF trampolines: some kernels or lockdown
 * policies refuse them).  *why gets a one-line reason when false. */
bool probe_fentry(const char **why);

/* True when kprobes can be created (CONFIG_KPROBES and the kprobe PMU). */
bool probe_kprobes(const char **why);

/* Keeps exactly one of two programs for tracepoint `tp`: the tp_btf one where the kernel has
 * it, the raw_tp one otherwise (or when the environment has BPFPROF_FORCE_RAW_TP=1, for
 * tests).  `-v` says which.  Either may be NULL (nothing to choose). */
void probe_pick_tp(struct bpf_program *btf_prog, struct bpf_program *raw_prog, const char *tp);
#endif
