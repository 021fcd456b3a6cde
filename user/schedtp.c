// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "probe.h"
#include "schedtp.h"

int schedtp_parse_ids(struct schedtp_targets *t, const char *arg, bool threads)
{
	__u32 *ids = threads ? t->tids : t->pids;
	int *nr = threads ? &t->nr_tids : &t->nr_pids;
	int n = parse_id_list(arg, ids, SCHEDTP_MAX_IDS);

	if (n < 0) {
		p_err("invalid %s list '%s'", threads ? "TID" : "PID", arg);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (threads ? !thread_exists(ids[i]) : !process_exists(ids[i])) {
			p_err("%s %u does not exist", threads ? "thread" : "pid", ids[i]);
			return -ESRCH;
		}
	}
	*nr = n;
	return 0;
}

bool schedtp_use_btf(bool force_raw)
{
	static const char *const tps[] = { "sched_switch", "sched_wakeup", "sched_wakeup_new" };

	if (force_raw) {
		p_info("using raw_tp programs and hash maps (--raw-tp)");
		return false;
	}
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		if (!probe_tp_btf(tps[i])) {
			p_info("using raw_tp programs and hash maps: this kernel cannot attach tp_btf "
			       "to %s", tps[i]);
			return false;
		}
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) != 1) {
		p_info("using raw_tp programs and hash maps: this kernel has no task storage maps");
		return false;
	}
	p_info("using tp_btf programs and task storage");
	return true;
}

bool schedtp_switch_has_prev_state(void)
{
	const struct btf_type *t;
	struct btf *btf;
	int id;
	bool ok = false;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	/* typedef void (*btf_trace_sched_switch)(void *, bool, struct task_struct *,
	 *                                        struct task_struct *, unsigned int); */
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t))
		ok = btf_vlen(t) >= 5;
	btf__free(btf);
	p_info("sched_switch %s prev_state", ok ? "passes" : "does not pass");
	return ok;
}

void schedtp_pick(struct bpf_program **btf_progs, struct bpf_program **raw_progs, int n,
		  bool use_btf)
{
	for (int i = 0; i < n; i++) {
		bpf_program__set_autoload(btf_progs[i], use_btf);
		bpf_program__set_autoload(raw_progs[i], !use_btf);
	}
}

int schedtp_disable_task_storage(struct bpf_map *map)
{
	int err;

	err = bpf_map__set_type(map, BPF_MAP_TYPE_HASH);
	err = err ?: bpf_map__set_map_flags(map, 0);
	return err ?: bpf_map__set_max_entries(map, 1);
}

int schedtp_fill_filters(const struct schedtp_targets *t, struct bpf_map *tgids,
			 struct bpf_map *pids)
{
	__u8 one = 1;
	int err = 0;

	for (int i = 0; i < t->nr_pids && !err; i++)
		err = bpf_map__update_elem(tgids, &t->pids[i], 4, &one, 1, BPF_ANY);
	for (int i = 0; i < t->nr_tids && !err; i++)
		err = bpf_map__update_elem(pids, &t->tids[i], 4, &one, 1, BPF_ANY);
	if (err)
		p_err("cannot set the PID filters: %s", strerror(-err));
	return err;
}

bool schedtp_targets_gone(const struct schedtp_targets *t)
{
	int i;

	if (!t->nr_pids && !t->nr_tids)
		return false;
	for (i = 0; i < t->nr_pids; i++)
		if (process_exists(t->pids[i]))
			return false;
	for (i = 0; i < t->nr_tids; i++)
		if (thread_exists(t->tids[i]))
			return false;
	return true;
}

int schedtp_attach_in_order(const struct schedtp_attach *a, int n)
{
	int err;

	for (int i = 0; i < n; i++) {
		if (!bpf_program__autoload(a[i].prog))
			continue;
		*a[i].link = bpf_program__attach(a[i].prog);
		if (!*a[i].link) {
			err = -errno;
			explain_bpf_error("cannot attach the scheduler tracepoints", err);
			return err;
		}
	}
	return 0;
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
