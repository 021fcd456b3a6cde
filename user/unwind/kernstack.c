// SPDX-License-Identifier: GPL-2.0
/* User side of the BPF kernel-stack walker: the kernel's ORC tables by their linker symbols, and
 * the counters of its per-CPU state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "sym/syms.h"
#include "unwind/kernstack.h"

int kstack_cfg_fill(struct kstack_cfg *cfg, const struct ksyms *ks)
{
	__u64 start = ksyms__addr(ks, "_stext"), end = ksyms__addr(ks, "_etext");
	__u64 ip = ksyms__data_addr(ks, "__start_orc_unwind_ip");
	__u64 ip_end = ksyms__data_addr(ks, "__stop_orc_unwind_ip");
	__u64 orc = ksyms__data_addr(ks, "__start_orc_unwind");

	/* 4-byte entries, each with its 6-byte struct orc_entry right after the ip table */
	if (!start || end <= start || !ip || ip_end <= ip || (ip_end - ip) % 4 || orc < ip_end ||
	    (ip_end - ip) / 4 > 0x7fffffff)
		return -ENOENT;
	cfg->text_start = start;
	cfg->text_end = end;
	cfg->orc_ip = ip;
	cfg->orc = orc;
	cfg->orc_nr = (ip_end - ip) / 4;
	/* ftrace's function graph and kretprobes replace return addresses on the stack */
	cfg->ret_hooks[0] = ksyms__addr(ks, "return_to_handler");
	cfg->ret_hooks[1] = ksyms__addr(ks, "arch_rethook_trampoline") ?:
			    ksyms__addr(ks, "__kretprobe_trampoline");
	__atomic_store_n(&cfg->ready, 1, __ATOMIC_RELEASE);
	return 0;
}

int kstack_counts_read(int walks_fd, size_t value_size, struct kstack_counts *out)
{
	int ncpus = libbpf_num_possible_cpus(), err = 0;
	size_t stride = (value_size + 7) / 8 * 8;
	__u32 zero = 0;
	char *vals;

	memset(out, 0, sizeof(*out));
	if (ncpus <= 0 || value_size < sizeof(*out))
		return -EINVAL;
	vals = calloc(ncpus, stride);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(walks_fd, &zero, vals)) {
		err = -errno;
		goto cleanup;
	}
	for (int cpu = 0; cpu < ncpus; cpu++) {
		const struct kstack_counts *c = (const void *)(vals + cpu * stride);

		for (int i = 0; i < KSTACK_STATS; i++)
			out->n[i] += c->n[i];
	}
cleanup:
	free(vals);
	return err;
}

void kstack_counts_line(const struct kstack_counts *c, char *buf, size_t size)
{
	const __u64 *n = c->n;

	buf[0] = '\0';
	if (!n[KSTACK_WALKED] && !n[KSTACK_LEFT] && !n[KSTACK_UNLEARNED])
		return;
	snprintf(buf, size, "kernel stacks: %llu walked from the kernel's ORC tables, %llu by "
		 "bpf_get_stack() (%llu left to it by a walk; %llu calibrations matched, %llu did "
		 "not); %llu walks compared with bpf_get_stack(), %llu differed; %llu ORC entries "
		 "searched", (unsigned long long)n[KSTACK_WALKED], (unsigned long long)n[KSTACK_KERNEL],
		 (unsigned long long)n[KSTACK_LEFT], (unsigned long long)n[KSTACK_LEARNED],
		 (unsigned long long)n[KSTACK_UNLEARNED], (unsigned long long)n[KSTACK_CHECKED],
		 (unsigned long long)n[KSTACK_DIFFERED], (unsigned long long)n[KSTACK_ORC_MISSES]);
}
