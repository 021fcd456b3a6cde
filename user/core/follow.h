/* `-- COMMAND` as the target: bpf/follow.bpf.c adds the command at its exec, and what it forks,
 * to the tgids bitmap of the command's object (bpf/target.bpf.h). */
#ifndef BPFPROF_FOLLOW_H
#define BPFPROF_FOLLOW_H
#include <sys/types.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

struct follow_bpf;

/* Loads and attaches the follower on `tgids`, the loaded bitmap of the host object.  0 or -errno
 * (message printed). */
int follow_start(struct bpf_map *tgids, struct follow_bpf **out);
/* The next exec of process pid (the held command) makes it a target. */
void follow_arm(struct follow_bpf *f, pid_t pid);
/* Processes followed so far. */
__u64 follow_count(const struct follow_bpf *f);
/* Detaches and frees; NULL is fine. */
void follow_stop(struct follow_bpf *f);
#endif
