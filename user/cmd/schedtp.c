// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "core/features.h"
#include "cmd/schedtp.h"

bool schedtp_use_btf(bool force_raw)
{
	static const char *const tps[] = { "sched_switch", "sched_wakeup", "sched_wakeup_new" };

	if (force_raw) {
		p_info("using raw_tp programs and hash maps (--raw-tp)");
		return false;
	}
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		if (!feat_tp_btf(tps[i])) {
			p_info("using raw_tp programs and hash maps: this kernel cannot attach tp_btf "
			       "to %s", tps[i]);
			return false;
		}
	}
	if (!feat_task_storage()) {
		p_info("using raw_tp programs and hash maps: this kernel has no task storage maps");
		return false;
	}
	p_info("using tp_btf programs and task storage");
	return true;
}

bool schedtp_use_sched_info(const char *veto)
{
	const char *why = veto;

	if (!veto && feat_sched_info(&why)) {
		p_info("waits read from the kernel's run-queue accounting (sched_info) at each switch: "
		       "no wakeup programs");
		return true;
	}
	p_info("waits timed by bpfprof at each wakeup and switch: %s", why);
	return false;
}

bool schedtp_switch_has_prev_state(void)
{
	/* (preempt, prev, next, prev_state) */
	bool ok = feat_tp_nr_args("sched_switch") >= 4;

	p_info("sched_switch %s prev_state", ok ? "passes" : "does not pass");
	return ok;
}

static const char *const prog_names[SCHEDTP_NR_PROGS] = { "switch", "wakeup", "wakeup_new" };

/* obj's program "NAME_btf" or "NAME_raw". */
static struct bpf_program *flavour_prog(struct bpf_object *obj, int i, bool btf)
{
	char name[32];

	snprintf(name, sizeof(name), "%s_%s", prog_names[i], btf ? "btf" : "raw");
	return bpf_object__find_program_by_name(obj, name);
}

/* The programs of the flavour, sched_switch alone with sched_info. */
static int schedtp_pick(struct bpf_object *obj, bool use_btf, bool sched_info)
{
	struct bpf_program *btf, *raw;
	bool used;

	for (int i = 0; i < SCHEDTP_NR_PROGS; i++) {
		btf = flavour_prog(obj, i, true);
		raw = flavour_prog(obj, i, false);
		if (!btf || !raw)
			return -ENOENT;
		used = i == 0 || !sched_info;
		bpf_program__set_autoload(btf, used && use_btf);
		bpf_program__set_autoload(raw, used && !use_btf);
	}
	return 0;
}

int schedtp_configure(struct bpf_object *obj, bool use_btf, bool sched_info,
		      struct bpf_map *storage, struct bpf_map *hash, __u32 hash_entries,
		      struct bpf_program *prefill)
{
	int err = schedtp_pick(obj, use_btf, sched_info);

	err = err ?: bpf_program__set_autoload(prefill, use_btf);
	if (use_btf) {
		err = err ?: bpf_map__set_max_entries(hash, 1);
	} else {
		err = err ?: bpf_map__set_type(storage, BPF_MAP_TYPE_HASH);
		err = err ?: bpf_map__set_map_flags(storage, 0);
		err = err ?: bpf_map__set_max_entries(storage, 1);
		err = err ?: bpf_map__set_max_entries(hash, hash_entries);
	}
	if (err)
		p_err("cannot configure the BPF object: %s", strerror(-err));
	return err;
}

static int schedtp_attach(struct bpf_object *obj, struct schedtp_links *l)
{
	struct bpf_program *prog;
	int err;

	for (int i = 0; i < SCHEDTP_NR_PROGS; i++) {
		prog = flavour_prog(obj, i, true);
		if (!prog || !bpf_program__autoload(prog))
			prog = flavour_prog(obj, i, false);
		/* the wakeup programs, not loaded when waits come from sched_info */
		if (i > 0 && prog && !bpf_program__autoload(prog))
			continue;
		l->links[i] = prog ? bpf_program__attach(prog) : NULL;
		if (!l->links[i]) {
			err = prog ? -errno : -ENOENT;
			explain_bpf_error("cannot attach the scheduler tracepoints", err);
			return err;
		}
	}
	return 0;
}

int schedtp_start(struct bpf_object *obj, struct bpf_program *prefill, struct schedtp_links *l)
{
	int err = 0;

	if (bpf_program__autoload(prefill))
		err = schedtp_run_task_iter(prefill, "prepares the task storage");
	return err ?: schedtp_attach(obj, l);
}

void schedtp_detach(struct schedtp_links *l)
{
	for (int i = 0; i < SCHEDTP_NR_PROGS; i++) {
		bpf_link__destroy(l->links[i]);
		l->links[i] = NULL;
	}
}

int schedtp_run_task_iter(struct bpf_program *prog, const char *what)
{
	struct bpf_link *link;
	char buf[256], msg[128];
	int fd, err = 0;
	ssize_t n;

	link = bpf_program__attach_iter(prog, NULL);
	if (!link) {
		err = -errno;
		snprintf(msg, sizeof(msg), "cannot create the task iterator that %s", what);
		explain_bpf_error(msg, err);
		return err;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	/* the program runs once per task as the (empty) output is read */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		err = -errno;
	close(fd);
fail:
	if (err)
		p_err("cannot run the task iterator that %s: %s", what, strerror(-err));
	bpf_link__destroy(link);
	return err;
}
