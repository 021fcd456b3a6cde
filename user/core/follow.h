/* `-- COMMAND` support: follow what the command forks into a command's tgid filter map. */
#ifndef BPFPROF_FOLLOW_USER_H
#define BPFPROF_FOLLOW_USER_H
#include <bpf/libbpf.h>

struct follow_bpf;

/* Loads and attaches the fork follower on `tgids` (a BPF_MAP_TYPE_HASH __u32 -> __u8 filter map
 * of the caller's object, already loaded).  0 or -errno (message printed). */
int follow_start(struct bpf_map *tgids, struct follow_bpf **out);
void follow_stop(struct follow_bpf *f);
#endif
