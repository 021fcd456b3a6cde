/* Helpers shared by every subcommand: errors, number and list parsing, signals, child commands. */
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
extern volatile sig_atomic_t exiting; /* set by SIGINT / SIGTERM */

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
/* -p / -t argument: a PID (or, with threads, TID) list whose every entry must exist; prints the
 * error.  Returns 0 with *nr set, or -EINVAL / -ESRCH. */
int parse_task_ids(const char *arg, __u32 *ids, int max, bool threads, int *nr);
/* "0,2-3": sets cpus[i] for each listed CPU; -ERANGE for a CPU >= nr_cpus. */
int parse_cpu_list(const char *s, bool *cpus, int nr_cpus);

bool process_exists(__u32 pid);
bool thread_exists(__u32 tid);
/* Number of possible CPUs (libbpf's view), and whether CPU n is online. */
int nr_cpus_possible(void);
bool cpu_online(int cpu);

/* SIGINT/SIGTERM set `exiting`; installed without SA_RESTART so blocking calls return. */
void install_signal_handlers(void);

/* A command started stopped before exec: the caller adds its pid to the BPF filters, then
 * releases it, so not one of its instructions runs untraced. */
struct child {
	pid_t pid;
	int gate_fd;   /* write end: closing it lets the child exec */
	int err_fd;    /* read end: the child writes errno here if exec fails (CLOEXEC otherwise) */
	int status;
	bool exited;
};
/* Forks the child, held before exec.  0, or -errno with the message printed. */
int child_start(struct child *c, char **argv);
/* Lets the child exec; returns 0, or -errno when exec failed (message printed). */
int child_release(struct child *c, const char *name);
/* Non-blocking: true once the child has exited (status saved). */
bool child_poll(struct child *c);
/* Ends the child if still running (SIGTERM) and reaps it. */
void child_stop(struct child *c);

/* libbpf's log callback: warnings always, debug only with -v. */
int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args);
/* One line explaining a failed BPF load/attach (missing privileges, no BTF...). */
void explain_bpf_error(const char *what, int err);

/* Splits a command line at "--": returns the index of "--" (argc when there is none) and points
 * *command after it; -EINVAL (message printed) when nothing follows "--". */
int split_command(int argc, char **argv, char ***command);
/* The message for what getopt_long (with a leading ':' in its optstring, opterr = 0) returned as
 * ':' (missing argument) or '?' (unknown option), then the usage on stderr.  A negative number
 * where an option was expected is reported as a bad DURATION.  Returns -EINVAL. */
int getopt_error(int opt, char **argv, const char *usage);
/* -p PID of an existing process; prints why not and returns -EINVAL / -ESRCH. */
int parse_pid(const char *arg, pid_t *pid);

/* Monotonic time in ns. */
__u64 now_ns(void);
#endif
