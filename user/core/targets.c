// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include "core/common.h"
#include "core/features.h"
#include "core/targets.h"
#include "sym/cgroups.h"

#define MAX_IDS 65536

struct targets targets = { .cgroup_fd = -1 };

void targets_reset(struct targets *t)
{
	free(t->pids);
	free(t->tids);
	free(t->cpus);
	if (t->cgroup_fd >= 0)
		close(t->cgroup_fd);
	memset(t, 0, sizeof(*t));
	t->cgroup_fd = -1;
}

/* Appends "1,2,3" to *ids, each an existing thread, or an existing process (a thread's id
 * stands for its process).  0 or -EINVAL (printed). */
static int add_ids(const char *arg, __u32 **ids, int *nr, bool threads)
{
	int room = 1, n;
	__u32 *grown;

	for (const char *p = arg; *p; p++)
		room += *p == ',';
	if (*nr + room > MAX_IDS) {
		p_err("too many %ss (at most %d)", threads ? "TID" : "PID", MAX_IDS);
		return -EINVAL;
	}
	grown = realloc(*ids, (*nr + room) * sizeof(**ids));
	if (!grown)
		return -ENOMEM;
	*ids = grown;
	n = parse_id_list(arg, grown + *nr, room);
	if (n < 0) {
		p_err("invalid %s list '%s' (numbers > 0 separated by commas)", threads ? "TID" : "PID",
		      arg);
		return -EINVAL;
	}
	for (int i = *nr; i < *nr + n; i++) {
		__u32 tgid = grown[i];

		if (threads ? !thread_exists(grown[i]) : thread_group_of(grown[i], &tgid)) {
			p_err("%s %u does not exist", threads ? "thread" : "pid", grown[i]);
			return -EINVAL;
		}
		if (!threads && process_exited(tgid)) {
			p_err("pid %u has exited (a zombie, not yet reaped by its parent)", tgid);
			return -EINVAL;
		}
		/* /proc/TID exists for every thread; perf record -p TID takes the thread's process */
		if (tgid != grown[i]) {
			fprintf(stderr, "bpfprof: %u is a thread of process %u: tracing the whole process, "
				"as perf does (-t %u for that thread alone)\n", grown[i], tgid, grown[i]);
			grown[i] = tgid;
		}
	}
	*nr += n;
	return 0;
}

static int opt_pids(const char *arg)
{
	return add_ids(arg, &targets.pids, &targets.nr_pids, false);
}

static int opt_tids(const char *arg)
{
	return add_ids(arg, &targets.tids, &targets.nr_tids, true);
}

static int opt_cpus(const char *arg)
{
	int n = nr_cpus_possible(), err;

	if (n <= 0) {
		p_err("cannot count CPUs: %s", strerror(-n));
		return -EINVAL;
	}
	if (!targets.cpus) {
		targets.cpus = calloc(n, sizeof(bool));
		if (!targets.cpus)
			return -ENOMEM;
		targets.nr_cpus = n;
	}
	err = parse_cpu_list(arg, targets.cpus, n);
	if (err == -ERANGE) {
		p_err("CPU list '%s' names a CPU this machine does not have (CPUs 0-%d)", arg, n - 1);
		return err;
	}
	if (err) {
		p_err("invalid CPU list '%s' (expected e.g. 0,2-3)", arg);
		return err;
	}
	for (int c = 0; c < n; c++) {
		if (targets.cpus[c] && !cpu_online(c)) {
			p_err("CPU %d is offline", c);
			return -ENODEV;
		}
	}
	return 0;
}

const struct opt target_opts[] = {
	{ 'a', "all-cpus", NULL, "all processes, all CPUs (the default without -p, -t,\n"
	  "--cgroup or a COMMAND)", OPT_FLAG, &targets.all },
	{ 0, "all", NULL, "same as -a (offcpu's spelling, kept for compatibility)", OPT_FLAG,
	  &targets.all },
	{ 'p', "pid", "PID[,PID...]", "only these processes (repeatable); a thread's id means\n"
	  "its whole process, as in perf", OPT_FN, .fn = opt_pids },
	{ 't', "tid", "TID[,TID...]", "only these threads (repeatable)", OPT_FN, .fn = opt_tids },
	{ 'C', "cpu", "CPU-LIST", "only on these CPUs, e.g. 0,2-3", OPT_FN, .fn = opt_cpus,
	  .needs = CAP_CPUS },
	{ 'u', "user-threads-only", NULL, "user threads only (no kernel threads)", OPT_FLAG,
	  &targets.user_only, .needs = CAP_THREAD_KIND },
	{ 'k', "kernel-threads-only", NULL, "kernel threads only", OPT_FLAG, &targets.kernel_only,
	  .needs = CAP_THREAD_KIND },
	{ 'G', "cgroup", "PATH", "only tasks in this cgroup v2 directory or below it\n"
	  "(a path, or one relative to the cgroup2 mount)", OPT_STR, &targets.cgroup },
	{},
};

/* The cgroup id of a cgroup v2 directory, as the kernel's helpers see it: its file handle
 * (kernfs gives the cgroup's 64-bit id), else its inode number, which is the same on 64-bit
 * kernels. */
static __u64 cgroup_id(const char *path, const struct stat *st)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	int mount_id;

	if (!name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) && h.fh.handle_bytes == 8)
		return h.id;
	return st->st_ino;
}

/* --cgroup PATH: a directory of the cgroup v2 hierarchy, absolute or relative to its mount;
 * kept open for the BPF cgroup array, which checks ancestry in the kernel (no depth to compute
 * here, which a cgroup namespace would hide). */
static int resolve_cgroup(struct targets *t)
{
	char mnt[PATH_MAX], joined[PATH_MAX * 2], *real = NULL;
	struct statfs sfs;
	struct stat st;
	int err;

	err = cgroup2_mount(mnt, sizeof(mnt));
	if (err) {
		p_err("--cgroup: no cgroup v2 hierarchy is mounted (mount -t cgroup2 none DIR)");
		return -ENOENT;
	}
	if (t->cgroup[0] == '/' && !access(t->cgroup, F_OK))
		snprintf(joined, sizeof(joined), "%s", t->cgroup);
	else
		snprintf(joined, sizeof(joined), "%s/%s", mnt, t->cgroup);
	real = realpath(joined, NULL);
	if (!real || stat(real, &st) || !S_ISDIR(st.st_mode) || statfs(real, &sfs) ||
	    sfs.f_type != CGROUP2_SUPER_MAGIC) {
		p_err("--cgroup: '%s' is not a cgroup v2 directory (cgroup2 is mounted at %s)",
		      t->cgroup, mnt);
		free(real);
		return -ENOENT;
	}
	snprintf(t->cgroup_path, sizeof(t->cgroup_path), "%s", real);
	free(real);
	t->cgroup_id = cgroup_id(t->cgroup_path, &st);
	t->cgroup_fd = open(t->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->cgroup_fd < 0) {
		err = -errno;
		p_err("--cgroup: cannot open %s: %s", t->cgroup_path, strerror(-err));
		return err;
	}
	p_info("--cgroup %s: id %llu", t->cgroup_path, (unsigned long long)t->cgroup_id);
	return 0;
}

int targets_resolve(struct targets *t, char **command)
{
	if (t->user_only && t->kernel_only) {
		p_err("-u and -k exclude each other");
		return -EINVAL;
	}
	if (t->cgroup && resolve_cgroup(t))
		return -EINVAL;
	t->command = command;
	/* perf's meaning: a command given with a target only bounds the run */
	t->follow = command && !t->all && !t->nr_pids && !t->nr_tids && !t->cpus && !t->cgroup;
	return 0;
}

bool targets_by_id(const struct targets *t)
{
	return t->nr_pids || t->nr_tids || t->follow;
}

__u32 targets_pid_words(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	unsigned int max = 4194304; /* PID_MAX_LIMIT on 64-bit */

	if (f) {
		if (fscanf(f, "%u", &max) != 1 || max == 0 || max > 4194304)
			max = 4194304;
		fclose(f);
	}
	return (max + 63) / 64;
}

int targets_configure(const struct targets *t, const struct target_bpf *tb)
{
	struct target_cfg *cfg = tb->cfg;
	__u32 pid_words = targets_pid_words();
	int err, off;

	memset(cfg, 0, sizeof(*cfg));
	cfg->filter_tgid = t->nr_pids || t->follow;
	cfg->filter_pid = t->nr_tids > 0;
	cfg->filter_cpu = t->cpus != NULL;
	cfg->filter_cgroup = t->cgroup != NULL;
	cfg->cgroup_id = t->cgroup_id;
	cfg->threads = t->user_only ? TARGET_THREADS_USER :
		       t->kernel_only ? TARGET_THREADS_KERNEL : TARGET_THREADS_ALL;
	if (cfg->threads != TARGET_THREADS_ALL) {
		off = feat_task_flags_offset();
		if (off < 0) {
			p_err("-u/-k need the kernel's BTF (/sys/kernel/btf/vmlinux) to find task flags");
			return off;
		}
		cfg->task_flags_off = off;
	}
	err = bpf_map__set_max_entries(tb->tgids, cfg->filter_tgid ? pid_words : 1);
	err = err ?: bpf_map__set_max_entries(tb->pids, cfg->filter_pid ? pid_words : 1);
	err = err ?: bpf_map__set_max_entries(tb->cpus, t->cpus ? (t->nr_cpus + 63) / 64 : 1);
	if (err)
		p_err("cannot size the target maps: %s", strerror(-err));
	return err;
}

static int set_bits(struct bpf_map *map, const __u32 *ids, int n)
{
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		__u32 word = ids[i] / 64;
		__u64 bits = 0;

		err = bpf_map__lookup_elem(map, &word, 4, &bits, 8, 0);
		bits |= 1ULL << (ids[i] % 64);
		err = err ?: bpf_map__update_elem(map, &word, 4, &bits, 8, BPF_ANY);
	}
	return err;
}

int targets_fill(const struct targets *t, const struct target_bpf *tb)
{
	int err;

	err = set_bits(tb->tgids, t->pids, t->nr_pids);
	err = err ?: set_bits(tb->pids, t->tids, t->nr_tids);
	for (__u32 c = 0; c < (__u32)t->nr_cpus && t->cpus && !err; c++)
		if (t->cpus[c])
			err = set_bits(tb->cpus, &c, 1);
	if (!err && t->cgroup) {
		__u32 zero = 0, fd = t->cgroup_fd;

		err = bpf_map__update_elem(tb->cgroup, &zero, 4, &fd, 4, BPF_ANY);
	}
	if (err)
		p_err("cannot set the target filters: %s", strerror(-err));
	return err;
}

bool targets_gone(const struct targets *t)
{
	if (!t->nr_pids && !t->nr_tids)
		return false;
	for (int i = 0; i < t->nr_pids; i++)
		if (process_exists(t->pids[i]) && !process_exited(t->pids[i]))
			return false;
	for (int i = 0; i < t->nr_tids; i++)
		if (thread_exists(t->tids[i]))
			return false;
	return true;
}
