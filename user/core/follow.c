#include <errno.h>
#include "core/common.h"
#include "core/follow.h"
#include "follow.skel.h"
#include "probe/probe.h"

int follow_start(struct bpf_map *tgids, struct follow_bpf **out)
{
	struct follow_bpf *skel;
	int err;

	*out = NULL;
	skel = follow_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the fork follower", err);
		return err;
	}
	/* The follower writes straight into the caller's filter map. */
	err = bpf_map__reuse_fd(skel->maps.tgids, bpf_map__fd(tgids));
	probe_pick_tp(skel->progs.fork_btf, skel->progs.fork_raw, "sched_process_fork");
	err = err ?: follow_bpf__load(skel);
	err = err ?: follow_bpf__attach(skel);
	if (err) {
		explain_bpf_error("cannot load the fork follower", err);
		follow_bpf__destroy(skel);
		return err;
	}
	*out = skel;
	return 0;
}

void follow_stop(struct follow_bpf *f)
{
	follow_bpf__destroy(f);
}
