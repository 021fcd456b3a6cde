/* The process filter of -p PID and -- COMMAND; user/follow.c adds what the command forks (as
 * perf stat and perf record do) to the same map. */
#ifndef BPFPROF_TGID_FILTER_BPF_H
#define BPFPROF_TGID_FILTER_BPF_H
#include "follow.h"

const volatile bool filter_tgid = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FOLLOW_MAX_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

static __always_inline bool tgid_wanted(__u32 tgid)
{
	return !filter_tgid || bpf_map_lookup_elem(&tgids, &tgid);
}
#endif
