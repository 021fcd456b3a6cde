/* bpfprof count: shared between bpf/count.bpf.c and user/cmd/count.c. */
#ifndef BPFPROF_COUNT_H
#define BPFPROF_COUNT_H
#include "events.h"

#define COUNT_COMM_LEN 16

/* -P: counts per process and event. */
struct count_proc_key {
	__u32 tgid;
	__u32 idx;
};
struct count_proc_val {
	__u64 count;
	char comm[COUNT_COMM_LEN];
};
#endif
