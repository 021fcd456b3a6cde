/* bpfprof stat: shared between bpf/stat.bpf.c and user/cmd/stat.c. */
#ifndef BPFPROF_STAT_H
#define BPFPROF_STAT_H
#include "events.h"

#define STAT_COMM_LEN 16
#define STAT_MAX_CLOCKS 2 /* task-clock, cpu-clock */

/* -P and --by-comm: counts per (process, command name, event).  The idle tasks all have pid 0:
 * cpu tells them apart (their names, swapper/N, do too). */
struct stat_proc_key {
	__u32 tgid;
	__u32 idx;
	__u32 cpu; /* the idle task's CPU; 0 for every other task */
	__u32 pad;
	char comm[STAT_COMM_LEN];
};
#endif
