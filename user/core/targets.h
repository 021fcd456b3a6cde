/* The target model's user side, the same for every command: -a, -p PID[,PID...],
 * -t TID[,TID...], -C CPU-LIST, -u / -k, --cgroup PATH, and `-- COMMAND` with perf's meaning:
 * alone, the command is the target (followed from its exec through every fork); with -a, -p, -t,
 * -C or --cgroup it only bounds the run.  bpf/target.bpf.h is the kernel side. */
#ifndef BPFPROF_TARGETS_H
#define BPFPROF_TARGETS_H
#include <limits.h>
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "core/options.h"
#include "target.h"

struct targets {
	bool all;                   /* -a */
	__u32 *pids, *tids;         /* -p, -t: may be given several times */
	int nr_pids, nr_tids;
	bool *cpus;                 /* -C: one flag per possible CPU; NULL for all */
	int nr_cpus;
	bool user_only, kernel_only; /* -u, -k */
	const char *cgroup;         /* --cgroup as given */
	char cgroup_path[PATH_MAX]; /* resolved */
	__u64 cgroup_id;
	int cgroup_fd;              /* the directory, for the BPF cgroup array; -1 without */
	char **command;             /* after "--" */
	bool follow;                /* the command is the target */
};

/* What the options fill; reset by targets_reset(). */
extern struct targets targets;
/* The target options (-a -p -t -C -u -k --cgroup), for the runner's tables. */
extern const struct opt target_opts[];

void targets_reset(struct targets *t);

/* After parsing: checks the combination, resolves the cgroup and decides whether the command is
 * the target.  0 or -EINVAL (message printed). */
int targets_resolve(struct targets *t, char **command);

/* True when processes or threads are selected by id (-p, -t, or a followed command): what
 * commands that cost per selected process (uprobes per PID) look at. */
bool targets_by_id(const struct targets *t);

/* The target's BPF side in a command's object: its read-only `target` and its bitmaps. */
struct target_bpf {
	struct target_cfg *cfg; /* in the skeleton's rodata: written before load */
	struct bpf_map *tgids, *pids, *cpus, *cgroup;
};

/* Before load: the settings and the bitmaps' sizes (one word when unused).  0 or -errno
 * (message printed). */
int targets_configure(const struct targets *t, const struct target_bpf *tb);

/* After load: the -p, -t and -C bits, and the --cgroup directory.  0 or -errno (printed). */
int targets_fill(const struct targets *t, const struct target_bpf *tb);

/* True when -p/-t were given and every one of those processes and threads has exited. */
bool targets_gone(const struct targets *t);

/* Words of a PID bitmap covering kernel.pid_max. */
__u32 targets_pid_words(void);
#endif
