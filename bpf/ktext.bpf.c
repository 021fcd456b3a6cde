// SPDX-License-Identifier: GPL-2.0
/* Kernel text for annotate where /proc/kcore is missing (VMs, kernels built without
 * CONFIG_PROC_KCORE): user space sets `addr` and `len`, runs the program once with
 * BPF_PROG_TEST_RUN and reads `buf` and `ret` from its global data.  Never attached: a raw
 * tracepoint program with no tracepoint is only test-run (raw_tp test runs: v5.10, "bpf: Enable
 * BPF_PROG_TEST_RUN for raw_tracepoint"; older kernels fail the read with one line). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ktext.h"

__u64 addr;
__u32 len;
long ret;
__u8 buf[KTEXT_CHUNK];

SEC("raw_tp")
int read_text(void *ctx)
{
	__u32 n = len;

	if (!n || n > KTEXT_CHUNK) {
		ret = -22; /* EINVAL */
		return 0;
	}
	/* a fault (an unmapped page, a lockdown) is the helper's error, not a crash */
	ret = bpf_probe_read_kernel(buf, n, (void *)addr);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
