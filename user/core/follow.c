// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include "core/common.h"
#include "core/features.h"
#include "core/follow.h"
#include "follow.skel.h"

int follow_start(struct bpf_map *tgids, struct follow_bpf **out)
{
	struct follow_bpf *skel;
	int err;

	*out = NULL;
	skel = follow_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the process follower", err);
		return err;
	}
	/* the follower writes straight into the host's bitmap */
	err = bpf_map__reuse_fd(skel->maps.tgids, bpf_map__fd(tgids));
	feat_pick_tp(skel->progs.fork_btf, skel->progs.fork_raw, "sched_process_fork");
	feat_pick_tp(skel->progs.free_btf, skel->progs.free_raw, "sched_process_free");
	feat_pick_tp(skel->progs.exec_btf, skel->progs.exec_raw, "sched_process_exec");
	err = err ?: follow_bpf__load(skel);
	err = err ?: follow_bpf__attach(skel);
	if (err) {
		explain_bpf_error("cannot load the process follower", err);
		follow_bpf__destroy(skel);
		return err;
	}
	*out = skel;
	return 0;
}

void follow_arm(struct follow_bpf *f, pid_t pid)
{
	f->bss->exec_tgid = pid;
}

__u64 follow_count(const struct follow_bpf *f)
{
	return f ? f->bss->followed : 0;
}

void follow_stop(struct follow_bpf *f)
{
	follow_bpf__destroy(f);
}
