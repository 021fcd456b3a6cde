/* Cgroup v2 ids as paths: what a sample's cgroup label says (pprof).  On cgroup2 a cgroup's id,
 * as bpf_get_current_cgroup_id() gives it, is its directory's inode number (kernfs), so the
 * names are found by reading the hierarchy's directories under its mount. */
#ifndef BPFPROF_CGROUPS_H
#define BPFPROF_CGROUPS_H
#include <stddef.h>
#include <linux/types.h>

/* The cgroup2 mount point, from /proc/self/mountinfo ("... MOUNT ... - cgroup2 ...").  0,
 * -ENOENT when none is mounted, or -errno. */
int cgroup2_mount(char *out, size_t size);

struct cgroup_names;
/* NULL with errno set: ENOENT when no cgroup v2 hierarchy is mounted, or ENOMEM. */
struct cgroup_names *cgroup_names__new(void);
/* The path of cgroup `id` under the mount, as /proc/PID/cgroup writes it ("/" for the root,
 * "/system.slice/ssh.service"); the id in decimal where no directory has it (the cgroup is gone:
 * ids are never reused).  A miss reads the hierarchy again, at most once a second.  Valid until
 * the next call; NULL on ENOMEM. */
const char *cgroup_names__get(struct cgroup_names *c, __u64 id);
void cgroup_names__free(struct cgroup_names *c);
#endif
