/* User side of the BPF kernel-stack walker (bpf/kstack.bpf.h): where the kernel's ORC tables are,
 * and what the walker counted. */
#ifndef BPFPROF_KSTACK_USER_H
#define BPFPROF_KSTACK_USER_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "kstack.h"

struct ksyms;

/* Fills cfg from the kernel's symbols (its ORC tables, the code they cover, the return hooks a
 * walk leaves to the kernel) and sets cfg->ready last.  -ENOENT when the kernel has no ORC tables
 * (built with another unwinder): the BPF side keeps bpf_get_stack(). */
int kstack_cfg_fill(struct kstack_cfg *cfg, const struct ksyms *ks);

/* The walker's counters, summed over CPUs, from its per-CPU state map (value size value_size).
 * 0 or -errno. */
int kstack_counts_read(int walks_fd, size_t value_size, struct kstack_counts *out);

/* -v: one line of what the counters say, into buf; "" when nothing was walked nor left. */
void kstack_counts_line(const struct kstack_counts *c, char *buf, size_t size);
#endif
