// SPDX-License-Identifier: GPL-2.0
/* Attaching resolved events to a command's programs: fentry (cloned per function) or kprobes,
 * uprobes, raw tracepoints with cookies or perf tracepoint events, and the raw sys_enter /
 * sys_exit programs that serve every syscall tracepoint through a number map. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include "core/grow.h"
#include "core/common.h"
#include "core/features.h"
#include "probe/probe.h"

/* ---- attaching --------------------------------------------------------------------------- */

enum kfunc_mode { KFUNC_NONE, KFUNC_FENTRY, KFUNC_KPROBE };

/* BPF_RAW_TRACEPOINT_OPEN with the cookie field the installed uapi header may not have yet. */
static int raw_tp_open_cookie(int prog_fd, const char *name, __u64 cookie)
{
	struct {
		__u64 name;
		__u32 prog_fd;
		__u32 pad;
		__u64 cookie;
	} attr = { .name = (__u64)(unsigned long)name, .prog_fd = prog_fd, .cookie = cookie };
	union bpf_attr u;
	int fd;

	memset(&u, 0, sizeof(u));
	memcpy(&u, &attr, sizeof(attr));
	fd = syscall(__NR_bpf, BPF_RAW_TRACEPOINT_OPEN, &u, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static bool use_raw_tp;

static enum kfunc_mode kfunc_mode;

static void set_autoload(struct bpf_program *prog, bool on)
{
	if (prog)
		bpf_program__set_autoload(prog, on);
}

int probe_prepare(const struct probe_progs *p, const struct probe_events *evs)
{
	const struct probe_event *first_k = NULL;
	bool uf = false, tp = false, sys_in = false, sys_out = false, all_btf = true;
	bool uf_ret = false, kf_ret = false;
	const char *why_f = NULL, *why_k = NULL;
	int err;

	for (int i = 0; i < evs->nr; i++) {
		const struct probe_event *e = &evs->ev[i];

		if (e->ret && (p->want_exit || !(e->kind == PROBE_UFUNC ? p->uexit : p->kexit))) {
			p_err("'%s': this command does not take FUNC%%return (%s)", e->name,
			      p->want_exit ? "it times each call from its entry to its return" :
			      "it has no return probes");
			return -EINVAL;
		}
		switch (e->kind) {
		case PROBE_KFUNC:
			first_k = first_k ?: e;
			all_btf &= e->btf_id > 0;
			kf_ret |= e->ret;
			break;
		case PROBE_UFUNC:
			uf |= !e->ret;
			uf_ret |= e->ret;
			break;
		case PROBE_TP:
			if (e->sys_nr < 0)
				tp = true;
			else if (e->sys_exit)
				sys_out = true;
			else
				sys_in = true;
			break;
		case PROBE_SYSCALL:
			sys_in = true;
			sys_out |= p->want_exit || p->want_sys_exit;
			break;
		}
	}
	kfunc_mode = KFUNC_NONE;
	if (first_k) {
		/* fentry: no int3, no return trampoline, BTF-typed; kprobes where it is refused */
		if (feat_fentry(&why_f) && all_btf && p->fentry)
			kfunc_mode = KFUNC_FENTRY;
		else if (feat_kprobes(&why_k) && p->kentry)
			kfunc_mode = KFUNC_KPROBE;
		if (kfunc_mode == KFUNC_NONE) {
			p_err("cannot trace kernel function '%s': %s, and %s", first_k->name,
			      why_f ?: "a function has no BTF for fentry",
			      why_k ?: "this command has no kprobe program");
			return -EOPNOTSUPP;
		}
		p_info("kernel functions: using %s", kfunc_mode == KFUNC_FENTRY ? "fentry/fexit" :
			"kprobes (fentry unavailable)");
	}
	set_autoload(p->fentry, kfunc_mode == KFUNC_FENTRY);
	set_autoload(p->fexit, kfunc_mode == KFUNC_FENTRY && (p->want_exit || kf_ret));
	set_autoload(p->kentry, kfunc_mode == KFUNC_KPROBE);
	set_autoload(p->kexit, kfunc_mode == KFUNC_KPROBE && (p->want_exit || kf_ret));
	set_autoload(p->uentry, uf);
	set_autoload(p->uexit, (uf && p->want_exit) || uf_ret);
	use_raw_tp = tp && p->raw_tp && !p->records && feat_raw_tp_cookie();
	if (tp)
		p_info("tracepoints: %s", use_raw_tp ? "raw tracepoints with cookies" :
		       p->records ? "perf tracepoint events (their records' fields are read)" :
		       "perf tracepoint events (no raw tracepoint cookies on this kernel)");
	/* perf events stay loaded for tracepoints that are no raw tracepoint of the same name */
	set_autoload(p->tp, tp);
	set_autoload(p->raw_tp, use_raw_tp);
	set_autoload(p->sys_enter, sys_in);
	set_autoload(p->sys_exit, sys_out);
	if (kfunc_mode == KFUNC_FENTRY) {
		/* loaded against the first function; probe_attach() clones it for the others */
		err = bpf_program__set_attach_target(p->fentry, 0, first_k->name);
		if (!err && (p->want_exit || kf_ret) && p->fexit)
			err = bpf_program__set_attach_target(p->fexit, 0, first_k->name);
		if (!err && p->func_ips)
			/* the function's address and, with IBT, past its ENDBR */
			err = bpf_map__set_max_entries(p->func_ips, 2 * evs->nr);
		if (err) {
			p_err("cannot prepare fentry for '%s': %s", first_k->name, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int links_add(struct probe_links *l, struct bpf_link *link)
{
	if (ARRAY_GROW(l->links, l->cap, (size_t)l->nr + 1)) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	l->links[l->nr++] = link;
	return 0;
}

static int fds_add(struct probe_links *l, int fd)
{
	if (ARRAY_GROW(l->fds, l->cap_fds, (size_t)l->nr_fds + 1)) {
		close(fd);
		return -ENOMEM;
	}
	l->fds[l->nr_fds++] = fd;
	return 0;
}

/* A copy of a loaded fentry/fexit program for another kernel function: same instructions (maps
 * already resolved), another attach BTF id.  What retsnoop does to trace many functions. */
static int attach_fentry_clone(struct bpf_program *prog, const struct probe_event *e,
			       struct probe_links *l)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = bpf_program__expected_attach_type(prog),
		    .attach_btf_id = e->btf_id);
	int fd, link_fd, err;

	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, bpf_program__name(prog), "GPL",
			   bpf_program__insns(prog), bpf_program__insn_cnt(prog), &opts);
	if (fd < 0)
		return -errno;
	err = fds_add(l, fd);
	if (err)
		return err;
	link_fd = bpf_raw_tracepoint_open(NULL, fd);
	if (link_fd < 0)
		return -errno;
	return fds_add(l, link_fd);
}

static int attach_kfunc(const struct probe_progs *p, const struct probe_event *e, int idx,
			bool first, struct probe_links *l)
{
	int err = 0;

	if (kfunc_mode == KFUNC_FENTRY) {
		__u64 ip = e->offset, ip_endbr = e->offset + 4;
		__u32 v = idx;

		if (p->func_ips) {
			err = bpf_map__update_elem(p->func_ips, &ip, 8, &v, 4, BPF_ANY);
			err = err ?: bpf_map__update_elem(p->func_ips, &ip_endbr, 8, &v, 4, BPF_NOEXIST);
			if (err == -EEXIST)
				err = 0;
			if (err)
				return err;
		}
		if (e->ret) {
			/* FUNC%return: the fexit program alone, loaded against the first function */
			struct bpf_link *link = first ? bpf_program__attach_trace(p->fexit) : NULL;

			if (first)
				return link ? links_add(l, link) : -errno;
			return attach_fentry_clone(p->fexit, e, l);
		}
		if (first) {
			struct bpf_link *link = bpf_program__attach_trace(p->fentry);

			err = link ? links_add(l, link) : -errno;
			if (!err && p->want_exit) {
				link = bpf_program__attach_trace(p->fexit);
				err = link ? links_add(l, link) : -errno;
			}
			return err;
		}
		err = attach_fentry_clone(p->fentry, e, l);
		if (!err && p->want_exit)
			err = attach_fentry_clone(p->fexit, e, l);
		return err;
	}
	{
		LIBBPF_OPTS(bpf_kprobe_opts, opts, .bpf_cookie = idx, .retprobe = e->ret);
		struct bpf_link *link = bpf_program__attach_kprobe_opts(e->ret ? p->kexit : p->kentry,
									e->name, &opts);

		err = link ? links_add(l, link) : -errno;
		if (!err && p->want_exit) {
			opts.retprobe = true;
			link = bpf_program__attach_kprobe_opts(p->kexit, e->name, &opts);
			err = link ? links_add(l, link) : -errno;
		}
	}
	return err;
}

static int attach_uprobe(const struct probe_progs *p, const struct probe_event *e, int idx,
			 pid_t pid, struct probe_links *l)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = idx, .retprobe = e->ret);
	struct bpf_link *link;
	int err;

	link = bpf_program__attach_uprobe_opts(e->ret ? p->uexit : p->uentry, pid, e->path,
					       e->offset, &opts);
	err = link ? links_add(l, link) : -errno;
	if (!err && p->want_exit) {
		opts.retprobe = true;
		link = bpf_program__attach_uprobe_opts(p->uexit, pid, e->path, e->offset, &opts);
		err = link ? links_add(l, link) : -errno;
	}
	return err;
}

/* A uprobe traps in every process that runs the function: with -p, only those processes take
 * the trap (one uprobe each); otherwise every process does and the BPF filter decides. */
static int attach_ufunc(const struct probe_progs *p, const struct probe_event *e, int idx,
			const __u32 *pids, int nr_pids, struct probe_links *l)
{
	int err = 0;

	if (!nr_pids)
		return attach_uprobe(p, e, idx, -1, l);
	for (int i = 0; i < nr_pids && !err; i++)
		err = attach_uprobe(p, e, idx, pids[i], l);
	return err;
}

static int attach_tp(const struct probe_progs *p, const struct probe_event *e, int idx,
		     struct probe_links *l)
{
	const char *tp_name = strchr(e->name, ':') + 1;
	LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = idx);
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.config = e->tp_id,
		.sample_period = 1,
		.wakeup_events = 1,
	};
	struct bpf_link *link;
	int fd, err;

	if (use_raw_tp) {
		fd = raw_tp_open_cookie(bpf_program__fd(p->raw_tp), tp_name, idx);
		if (fd >= 0)
			return fds_add(l, fd);
		/* an event whose tracepoint has another name: the perf event below */
		p_info("%s: no raw tracepoint '%s' (%s), using a perf event", e->name, tp_name,
		       strerror(-fd));
	}
	/* a BPF program on a tracepoint event runs on every CPU, whatever CPU it was opened on */
	fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	link = bpf_program__attach_perf_event_opts(p->tp, fd, &opts);
	if (!link) {
		err = -errno;
		close(fd);
		return err;
	}
	/* the link owns the perf event fd from here on */
	return links_add(l, link);
}

static const char *kind_name(enum probe_kind kind)
{
	switch (kind) {
	case PROBE_KFUNC:
		return kfunc_mode == KFUNC_FENTRY ? "fentry" : "kprobe";
	case PROBE_UFUNC:
		return "uprobe";
	case PROBE_TP:
		return "tracepoint";
	case PROBE_SYSCALL:
		return "syscall";
	}
	return "event";
}

int probe_attach(const struct probe_progs *p, const struct probe_events *evs, const __u32 *pids,
		 int nr_pids, struct probe_links *l)
{
	bool raw_in = false, raw_out = false, first_k = true;
	int err = 0, nr_raw = 0, nr_fallback = 0, nr_skipped = 0;
	const struct probe_event *skipped = NULL;
	int skipped_err = 0;
	__u64 t0 = now_ns();

	for (int i = 0; i < evs->nr && !err; i++) {
		const struct probe_event *e = &evs->ev[i];
		__u32 nr = e->sys_nr, v = i + 1;

		switch (e->kind) {
		case PROBE_KFUNC:
			err = attach_kfunc(p, e, i, first_k, l);
			first_k = false;
			break;
		case PROBE_UFUNC:
			err = attach_ufunc(p, e, i, pids, nr_pids, l);
			break;
		case PROBE_TP:
			if (e->sys_nr < 0) {
				/* a syscall missing from the build's table still works, one event
				 * at a time */
				nr_fallback += !strncmp(e->name, "syscalls:", 9);
				err = attach_tp(p, e, i, l);
				/* a glob over categories meets events no tracer can attach to (ftrace's own) */
				if (err && e->from_glob) {
					skipped = skipped ?: e;
					skipped_err = skipped_err ?: err;
					nr_skipped++;
					err = 0;
				}
				break;
			}
			err = bpf_map__update_elem(e->sys_exit ? p->sys_exit_idx : p->sys_enter_idx,
						   &nr, 4, &v, 4, BPF_ANY);
			raw_in |= !e->sys_exit;
			raw_out |= e->sys_exit;
			nr_raw++;
			break;
		case PROBE_SYSCALL:
			err = bpf_map__update_elem(p->sys_enter_idx, &nr, 4, &v, 4, BPF_ANY);
			if (!err && (p->want_exit || p->want_sys_exit))
				err = bpf_map__update_elem(p->sys_exit_idx, &nr, 4, &v, 4, BPF_ANY);
			raw_in = true;
			raw_out |= p->want_exit || p->want_sys_exit;
			nr_raw++;
			break;
		}
		if (err) {
			if (e->kind == PROBE_UFUNC && err == -ENOENT)
				p_err("cannot attach a uprobe to '%s': %s (is the file still there?)",
				      e->name, strerror(-err));
			else
				explain_bpf_error(e->kind == PROBE_UFUNC ? "cannot attach a uprobe" :
						  e->kind == PROBE_TP ? "cannot attach to a tracepoint" :
						  "cannot attach to a kernel function", err);
			p_info("failed on %s %s", kind_name(e->kind), e->name);
		}
	}
	if (!err && raw_in) {
		struct bpf_link *link = bpf_program__attach_raw_tracepoint(p->sys_enter, "sys_enter");

		err = link ? links_add(l, link) : -errno;
	}
	if (!err && raw_out) {
		struct bpf_link *link = bpf_program__attach_raw_tracepoint(p->sys_exit, "sys_exit");

		err = link ? links_add(l, link) : -errno;
	}
	if (err && (raw_in || raw_out) && !l->nr)
		explain_bpf_error("cannot attach to the raw sys_enter/sys_exit tracepoints", err);
	if (!err && nr_skipped)
		fprintf(stderr, "bpfprof: %d matched tracepoint%s cannot be attached, left out (%s: %s)\n",
			nr_skipped, nr_skipped == 1 ? "" : "s", skipped->name, strerror(-skipped_err));
	if (!err && verbose) {
		p_info("attached %d events in %.1f ms (%d syscall events through raw sys_enter/sys_exit%s)",
		       evs->nr, (now_ns() - t0) / 1e6, nr_raw,
		       nr_fallback ? ", the rest one perf event each" : "");
		if (nr_fallback)
			p_info("%d syscall tracepoints are not in this build's syscall table: attached "
			       "one by one (slower to detach)", nr_fallback);
	}
	return err;
}

void probe_links_destroy(struct probe_links *l)
{
	for (int i = 0; i < l->nr; i++)
		bpf_link__destroy(l->links[i]);
	/* each fentry clone: its link, then its program */
	for (int i = l->nr_fds - 1; i >= 0; i--)
		close(l->fds[i]);
	free(l->links);
	free(l->fds);
	memset(l, 0, sizeof(*l));
}
