/* Event programs attached by user/probe/attach.c (uprobes, kprobes, fentry, tracepoints, raw syscall
 * tracepoints): what the BPF side and the loader agree on to tell which event fired. */
#ifndef BPFPROF_EVENTS_H
#define BPFPROF_EVENTS_H

/* Syscall numbers index arrays of this size (x86-64 is below 500, arm64 below 500). */
#define SYS_NR_MAX 1024
/* Events per run: every match of every spec (all syscall tracepoints are about 720). */
#define EVENTS_MAX 8192
#endif
