/* Helpers shared by every command: messages, number and list parsing, processes and CPUs. */
#ifndef BPFPROF_COMMON_H
#define BPFPROF_COMMON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <signal.h>
#include <sys/types.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

extern bool verbose;              /* -v: libbpf messages and choices made */
extern volatile sig_atomic_t exiting; /* SIGINT / SIGTERM: 1, and 2 once asked again */

/* "bpfprof: " + message + newline on stderr. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only with -v. */
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Strict number parsing: the whole string, no sign where unsigned, within [min, max].
 * Return 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* A percentage from 0 to 100, fractional allowed. */
int parse_percent(const char *s, double *out);
/* Seconds, fractional allowed ("0.5"), > 0. */
int parse_seconds(const char *s, double *out);
/* "-1", "-0.5": what getopt takes for an unknown option, but the user meant a number. */
bool is_negative_number(const char *s);
/* "1,2,3": each > 0; at most max entries.  Returns the count or -EINVAL / -E2BIG. */
int parse_id_list(const char *s, __u32 *ids, int max);
/* "0,2-3": sets cpus[i] for each listed CPU; -ERANGE for a CPU >= nr_cpus. */
int parse_cpu_list(const char *s, bool *cpus, int nr_cpus);

/* Whether a process known to be one still exists (a thread's id passes too). */
bool process_exists(__u32 pid);
/* pid has exited: gone, or a zombie its parent has not reaped (its threads all gone) */
bool process_exited(__u32 pid);
bool thread_exists(__u32 tid);
/* The process (thread group) a thread belongs to, from /proc/TID/status: 0 or -errno. */
int thread_group_of(__u32 tid, __u32 *tgid);
/* Number of possible CPUs (libbpf's view), and whether CPU n is online. */
int nr_cpus_possible(void);
bool cpu_online(int cpu);
/* The number a sysfs (or procfs) file holds; 0 when it is missing, unreadable or negative. */
long read_sysfs_long(const char *path);

/* libbpf's log callback: warnings always, debug only with -v. */
int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args);
/* The kernel loads tracing programs for CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN, which root
 * has): without them every command would fail, each at some other step and with a message that
 * blames what failed there (a tracepoint not found, a feature missing).  0, or -EPERM after one
 * line naming the missing privilege. */
int check_bpf_privileges(void);
/* The same question without a message: NULL when loading is allowed, else what this process
 * lacks ("neither", "no CAP_BPF", "no CAP_PERFMON"). */
const char *bpf_privileges_missing(void);
/* One line explaining a failed BPF load/attach (missing privileges, no BTF...). */
void explain_bpf_error(const char *what, int err);

/* This boot's id (/proc/sys/kernel/random/boot_id: [0-9a-f-] only) into buf, for what is kept in
 * the cache for a boot: 0, or -ENOENT. */
int boot_id(char *buf, size_t size);

/* Monotonic time in ns. */
__u64 now_ns(void);
#endif
