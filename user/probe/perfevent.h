/* perf's software, hardware and hardware cache events by name (perf list's spellings and
 * aliases, with the :u / :k modifiers), and how to open them with perf_event_open(2): counted
 * by stat (no BPF is needed for a total), sampled by profile, listed (and tried) by list. */
#ifndef BPFPROF_PERFEVENT_H
#define BPFPROF_PERFEVENT_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct perfev_desc {
	const char *name;  /* perf's name: "context-switches" */
	const char *alias; /* perf's other name: "cs"; NULL when none */
	__u32 type;        /* PERF_TYPE_SOFTWARE / PERF_TYPE_HARDWARE */
	__u64 config;
	bool clock;        /* counts nanoseconds: shown in msec, the base of perf's rates */
};

/* One named event: what it is and how it was modified. */
struct perfev {
	const struct perfev_desc *desc;
	bool exclude_user, exclude_kernel; /* ":k", ":u" */
};

/* Parses "cycles", "cs", "cycles:u", "page-faults:k".  0, or -ENOENT when text is not a perf
 * event name (it may be an event spec), or -EINVAL for a perf event with an unknown modifier. */
int perfev_parse(const char *text, struct perfev *ev);

/* The software and hardware events, for help, near matches and list: *nr entries. */
const struct perfev_desc *perfev_table(size_t *nr);

/* The i-th hardware cache event perf knows (0 <= i, in perf's order: L1-dcache-loads,
 * L1-dcache-load-misses...): its name in buf and its PERF_TYPE_HW_CACHE config.  false past
 * the last one. */
bool perfev_cache_event(size_t i, char *buf, size_t size, __u64 *config);

/* The event perf calls `name` (or its alias), cache events included, without modifiers: its
 * type and config.  0, or -ENOENT. */
int perfev_lookup(const char *name, __u32 *type, __u64 *config);

/* Whether this machine can count the event, by opening it on the calling thread: 0, or the
 * negative errno of perf_event_open (-ENOENT / -EOPNOTSUPP: no such counter here, as without a
 * PMU; -EACCES: perf_event_paranoid refuses it). */
int perfev_probe(__u32 type, __u64 config);

/* Where counters are opened: one of a thread (cpu -1), of a CPU (pid -1), or of a cgroup on a
 * CPU (pid is the cgroup directory's fd). */
struct perfev_slot {
	int pid;
	int cpu;
};

enum perfev_open_flags {
	PERFEV_INHERIT = 1 << 0,        /* children and new threads are counted too */
	PERFEV_ENABLE_ON_EXEC = 1 << 1, /* held until the thread's exec (-- COMMAND) */
	PERFEV_CGROUP = 1 << 2,         /* slots are cgroup fds on CPUs */
};

/* Opens a counting event for ev on the slot.  Returns the fd, or -errno: -ESRCH when the thread
 * is gone; perfev_unsupported() tells the errors of a machine without the event. */
int perfev_open_counter(const struct perfev *ev, const struct perfev_slot *slot, unsigned flags);

/* Opens a sampling event of ev on a CPU (system wide) that overflows every `period` events,
 * for a BPF program to run on.  fd or -errno. */
int perfev_open_sampler(const struct perfev *ev, int cpu, __u64 period);

/* The same, sampling `freq` times a second (the kernel adjusts the period): profile's -F. */
int perfev_open_sampler_freq(const struct perfev *ev, int cpu, __u64 freq);

/* Whether an open error means the machine has no such event (no PMU, no such counter). */
bool perfev_unsupported(int err);

/* A counter's reading: its count and how long it was enabled and running (ns). */
struct perfev_value {
	__u64 count, enabled, running;
};

/* Reads a counter opened by perfev_open_counter().  0 or -errno. */
int perfev_read(int fd, struct perfev_value *v);

/* The count scaled to the time enabled, as perf does when counters were multiplexed. */
double perfev_scaled(const struct perfev_value *v);
#endif
