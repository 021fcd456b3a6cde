/* perf's symbolic event names (perf list's "Software event", "Hardware event" and "Hardware
 * cache event"), what they are to perf_event_open, and whether this machine can count them. */
#ifndef BPFPROF_PERF_EVENTS_H
#define BPFPROF_PERF_EVENTS_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct perf_event_name {
	const char *name;  /* perf's: "context-switches" */
	const char *alias; /* perf's other spelling ("cs"), or NULL */
	__u32 type;        /* PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE */
	__u64 config;
};

/* The software and hardware events, software first, each kind in perf list's order. */
extern const struct perf_event_name perf_event_names[];
extern const size_t nr_perf_event_names;

/* The i-th hardware cache event perf knows (0 <= i, in perf's order: L1-dcache-loads,
 * L1-dcache-load-misses...): its name in buf and its PERF_TYPE_HW_CACHE config.  false past
 * the last one. */
bool perf_cache_event(size_t i, char *buf, size_t size, __u64 *config);

/* The event perf calls `name` (or its alias), cache events included: its type and config.
 * 0, or -ENOENT. */
int perf_event_lookup(const char *name, __u32 *type, __u64 *config);

/* Whether this machine can count the event, by opening it on the calling thread: 0, or the
 * negative errno of perf_event_open (-ENOENT / -EOPNOTSUPP: no such counter here, as without a
 * PMU; -EACCES: perf_event_paranoid refuses it). */
int perf_event_probe(__u32 type, __u64 config);
#endif
