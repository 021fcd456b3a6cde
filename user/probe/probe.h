/* Event specs: what the user names (a tracepoint, a syscall, a kernel or user function, globs
 * welcome), resolved to attach points (resolve.c) and attached to a command's programs
 * (attach.c).  Feature probes are core/features.h. */
#ifndef BPFPROF_PROBE_H
#define BPFPROF_PROBE_H
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* ---- event specs: what the user names, turned into attached BPF programs ----
 *
 *   FUNC, k:FUNC              kernel function: fentry/fexit, else kprobe/kretprobe
 *   u:PATH:FUNC, PATH:FUNC    user function in a binary or library: uprobe/uretprobe
 *   LIB:FUNC                  LIB ("c", "libc", "libc.so.6") through -p's maps or the ld.so cache
 *   t:CAT:NAME, CAT:NAME      tracepoint; syscalls:sys_enter_* / sys_exit_* ride on the raw
 *                             sys_enter / sys_exit tracepoints with an in-kernel NR filter
 *   sys:NAME                  a syscall: sys_enter_NAME, paired with sys_exit_NAME for latency
 *   FUNC%return (k: and u:)   the function's return (kretprobe / uretprobe / fexit): retval
 * FUNC and NAME may be globs (fnmatch). */
enum probe_kind {
	PROBE_KFUNC,
	PROBE_UFUNC,
	PROBE_TP,
	PROBE_SYSCALL,
};

#define PROBE_NAME_MAX 256
#define PROBE_PATH_MAX 4096

struct probe_spec {
	const char *text;   /* as written */
	enum probe_kind kind;
	bool lib_or_tp;     /* "A:B" without prefix: a tracepoint when A is a tracepoint category,
			     * else LIB:FUNC (decided by probe_resolve) */
	char target[PROBE_PATH_MAX]; /* UFUNC: path or library; TP: category */
	char name[PROBE_NAME_MAX];   /* function, event or syscall name */
	bool ret;                    /* FUNC%return: the function's return */
};

/* Splits a spec into kind, target and name.  Returns 0, or -EINVAL with a one-line reason in
 * err (e.g. "unknown prefix 'q:' in 'q:a:b' (expected k:, u:, t: or sys:)"). */
int probe_spec_parse(const char *text, struct probe_spec *spec, char *err, size_t err_size);

/* One attach point.  Its index in struct probe_events is what the BPF side gets (attach cookie,
 * func_ips / sys_*_idx maps) and what user space reports it under. */
struct probe_event {
	enum probe_kind kind;
	char name[PROBE_NAME_MAX]; /* display: "vfs_read", "libc.so.6:malloc", "syscalls:sys_enter_read" */
	char *path;                /* UFUNC: the ELF file */
	__u64 offset;              /* UFUNC: file offset of the function (what uprobes take);
				    * KFUNC: its kallsyms address */
	__s32 btf_id;              /* KFUNC: vmlinux BTF id, 0 when none (module or no BTF) */
	__u32 tp_id;               /* TP: tracefs event id */
	__s32 sys_nr;              /* syscalls:sys_*_X and sys:X: syscall number, -1 if unknown */
	bool sys_exit;             /* TP: a syscalls:sys_exit_* event */
	bool from_glob;            /* one of a glob's matches: skipped, not fatal, if it cannot attach */
	bool ret;                  /* KFUNC / UFUNC: at the return (FUNC%return), display "...%return" */
	int spec;                  /* index of the spec it came from */
};

struct probe_events {
	struct probe_event *ev;
	int nr;
	size_t cap;
};

/* Appends the events a spec names (every match of a glob; a uprobe target once per file offset).
 * pid > 0 resolves libraries through /proc/PID/maps.  On failure prints one line naming what is
 * missing, with near matches, and returns a negative errno; else the number of events added. */
int probe_resolve(const struct probe_spec *spec, int spec_idx, pid_t pid, struct probe_events *evs);
void probe_events_free(struct probe_events *evs);

/* Parses and resolves every spec of argv[0..n) in order (event indexes follow); prints the first
 * failure.  Returns 0, -EINVAL for a malformed spec, or the resolution error. */
int probe_resolve_specs(char **specs, int n, pid_t pid, struct probe_events *evs);

/* The programs of one BPF object that probe_attach() may use; any may be NULL.  Cookies and the
 * maps give the BPF side the event index. */
struct probe_progs {
	struct bpf_program *uentry, *uexit;        /* uprobe / uretprobe, cookie = index */
	struct bpf_program *kentry, *kexit;        /* kprobe / kretprobe, cookie = index */
	struct bpf_program *fentry, *fexit;        /* fentry / fexit, index = func_ips[func ip] */
	struct bpf_program *tp;                    /* perf tracepoint, cookie = index */
	struct bpf_program *raw_tp;                /* raw tracepoint, cookie = index (kernel 6.10+):
						    * detaches without perf's ~40 ms wait per event */
	struct bpf_program *sys_enter, *sys_exit;  /* raw_tp sys_enter / sys_exit */
	struct bpf_map *func_ips;                  /* kernel function address -> index */
	struct bpf_map *sys_enter_idx, *sys_exit_idx; /* syscall NR -> index + 1 */
	bool want_exit; /* funclat: entry and exit of every function / syscall */
	bool want_sys_exit; /* trace: entry and exit of every syscall (functions as spelled) */
	bool records;   /* tracepoints' records are read (fields): perf tracepoint programs */
};

/* Before load: keeps only the programs the events need (autoload), picks fentry or kprobes for
 * kernel functions (-v says which) and sizes the maps.  Returns 0, or -EOPNOTSUPP after printing
 * why a kernel function cannot be traced here. */
int probe_prepare(const struct probe_progs *p, const struct probe_events *evs);

struct probe_links {
	struct bpf_link **links;
	int nr;
	size_t cap;
	int *fds; /* fentry programs cloned per function, and their links */
	int nr_fds;
	size_t cap_fds;
};

/* After load: fills the maps and attaches every event (uprobes to each of pids, or to every
 * process without any).  Prints what failed and returns a negative errno. */
int probe_attach(const struct probe_progs *p, const struct probe_events *evs, const __u32 *pids,
		 int nr_pids, struct probe_links *links);
void probe_links_destroy(struct probe_links *links);

/* ---- pieces of the above, exposed for the unit tests ---- */

/* Syscall number of a syscall by its tracepoint name ("read", "newstat"), from the build's
 * table; -1 when unknown. */
int probe_syscall_nr(const char *name);

/* Up to max candidates close to want (edit distance, or containing it), best first, as
 * "a, b, c" in buf; "" when none is close.  Returns the number listed. */
int probe_near_matches(const char *want, const char *const *cands, size_t n, int max, char *buf,
		       size_t size);

/* Whether a file name ("libc.so.6") is what a LIB argument ("c", "libc", "libc.so") names. */
bool probe_lib_matches(const char *lib, const char *file_name);

/* Looks LIB up in an ld.so.cache file ("glibc-ld.so.cache1.1" format) for this architecture:
 * path gets the library's path.  Returns 0, -ENOENT (not in the cache), or -errno / -EINVAL for
 * an unreadable or malformed cache.  When not found and names is not NULL, *names gets a malloc'd
 * array of the cache's library file names (for near matches) and *nr_names its length. */
int probe_ldcache_lookup(const char *cache, const char *lib, char *path, size_t size,
			 char ***names, size_t *nr_names);
/* The files the program exe maps as it starts (for tables wanted before its first sample): the
 * executable (a script's "#!" interpreter instead), its PT_INTERP and DT_NEEDED libraries,
 * recursively, where ld.so would find them; fn is called once for each.  Returns 0, the first
 * non-zero value fn returned, or a negative errno (exe unreadable, not ELF). */
int probe_program_files(const char *exe, int (*fn)(const char *path, void *ctx), void *ctx);
#endif
