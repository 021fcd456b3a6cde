/* bpfprof trace: what the BPF side (bpf/trace.bpf.c) and the loader (user/cmd/trace.c) share.
 * One record per event through the `events` ring buffer (perf script's / perf trace's lines),
 * or, with -s, per-process syscall statistics aggregated in the `summary` map. */
#ifndef BPFPROF_TRACE_H
#define BPFPROF_TRACE_H
#include "events.h"

#define TRACE_COMM_LEN 16
#define TRACE_ARGS 6
#define TRACE_STRS 2          /* string arguments a syscall record carries (rename: 2) */
#define TRACE_STR_MAX 256     /* each, with its NUL; longer ones are cut */
/* trace_inflight.str_len: the entry could not read the string (its page not in memory yet) */
#define TRACE_STR_RETRY 0xffff
#define TRACE_PAYLOAD_MAX 1024 /* tracepoint record bytes copied (fixed fields + strings) */
#define TRACE_STACK_DEPTH 127 /* frames of each stack with -g */
#define TRACE_STACK_BYTES (TRACE_STACK_DEPTH * 8)

/* Per event index, set by the loader. */
struct trace_ev_cfg {
	__u32 raw_size; /* tracepoint: bytes of its record to copy (at most TRACE_PAYLOAD_MAX) */
	__u32 str_mask; /* syscall, function: arguments read as strings (bit N: argument N; bit
			 * TRACE_ARGS: a function's return value), at most TRACE_STRS of them */
};

/* A record's fixed part; `data` follows: the payload (a tracepoint's raw record, or a syscall's
 * strings, TRACE_STR_MAX bytes a slot, in argument order), and with -g, at TRACE_PAYLOAD_MAX,
 * the kernel stack then the user stack (TRACE_STACK_BYTES each). */
#define TRACE_NO_RETURN (~0ULL)
struct trace_rec {
	__u64 ts;      /* bpf_ktime_get_ns(): the event, or a syscall's entry */
	__u64 dur_ns;  /* syscall: entry to exit, TRACE_NO_RETURN for a call that has none */
	__s64 ret;     /* syscall: return value */
	__u64 args[TRACE_ARGS];
	__u32 idx;     /* event index */
	__u32 pid;     /* thread */
	__u32 tgid;
	__u32 cpu;
	__u32 payload; /* bytes of payload */
	__s32 kstack;  /* bytes of kernel stack (bpf_get_stack: negative on error), -g */
	__s32 ustack;  /* bytes of user stack */
	__u16 str_len[TRACE_STRS]; /* syscall: each string's length with its NUL; 0: not read */
	char comm[TRACE_COMM_LEN];
};

struct trace_buf {
	struct trace_rec rec;
	__u8 data[TRACE_PAYLOAD_MAX + 2 * TRACE_STACK_BYTES];
};

/* A syscall between its entry and its exit, per thread. */
struct trace_inflight {
	__u64 ts;
	__u64 args[TRACE_ARGS];
	__u32 idx;
	__u16 str_len[TRACE_STRS];
	char strs[TRACE_STRS][TRACE_STR_MAX];
};

/* -s: per process and syscall, as perf trace -s prints them */
struct trace_sum_key {
	__u32 tgid;
	__u32 idx;
};

struct trace_sum {
	__u64 calls;
	__u64 errors;  /* returned a negative errno */
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 sumsq;   /* sum of (duration / 64 ns)^2: perf's stddev without overflow for calls
			* up to 275 s */
	char comm[TRACE_COMM_LEN];
};
#define TRACE_SUMSQ_SHIFT 6

enum trace_lost {
	TRACE_LOST_RINGBUF,  /* records dropped: ring buffer full */
	TRACE_LOST_INFLIGHT, /* syscalls not traced: the in-flight table was full */
	TRACE_LOST_SUMMARY,  /* -s: calls not counted: the summary table was full */
	TRACE_LOST_REASONS,
};
#endif
