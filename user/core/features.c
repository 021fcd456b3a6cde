// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "core/common.h"
#include "core/features.h"

/* An answer not computed yet. */
#define UNKNOWN 2

static struct {
	struct btf *btf;
	bool btf_tried;
	int task_storage, task_pt_regs, raw_tp_cookie, kprobes, fentry, nmi_alloc, sched_info, loop;
	int rq_stamp;
	const char *fentry_why, *sched_info_why, *rq_stamp_why;
	int task_flags_off; /* 0: not computed */
	struct {
		char name[64];
		bool ok;
	} tp_btf[32];
	int nr_tp_btf;
} feat = {
	.task_storage = UNKNOWN, .task_pt_regs = UNKNOWN, .raw_tp_cookie = UNKNOWN,
	.kprobes = UNKNOWN, .fentry = UNKNOWN, .nmi_alloc = UNKNOWN, .sched_info = UNKNOWN,
	.loop = UNKNOWN, .rq_stamp = UNKNOWN,
};

const struct btf *feat_btf(void)
{
	if (!feat.btf_tried) {
		__u64 t0 = now_ns();

		feat.btf_tried = true;
		feat.btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(feat.btf))
			feat.btf = NULL;
		p_info("kernel BTF %s in %.1f ms", feat.btf ? "parsed" : "unavailable",
		       (now_ns() - t0) / 1e6);
	}
	return feat.btf;
}

void features_release(void)
{
	btf__free(feat.btf);
	feat.btf = NULL;
	feat.btf_tried = false;
}

/* The function prototype of tracepoint `tp` (typedef void (*btf_trace_TP)(void *, ARGS...)). */
static const struct btf_type *tp_proto(const struct btf *btf, const char *tp)
{
	const struct btf_type *t;
	char name[96];
	int id;

	if (!btf)
		return NULL;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return NULL;
	t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) ? t : NULL;
}

bool feat_tp_exists(const char *tp)
{
	return tp_proto(feat_btf(), tp) != NULL;
}

int feat_tp_nr_args(const char *tp)
{
	const struct btf_type *t = tp_proto(feat_btf(), tp);

	/* the first parameter is the tracepoint's private data, not one of its arguments */
	return t && btf_vlen(t) >= 1 ? btf_vlen(t) - 1 : -ENOENT;
}

/* Loads "r0 = 0; exit" as a tracing program of the given attach type against a BTF id. */
static int load_trivial_tracing(enum bpf_attach_type type, int btf_id)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = type,
		    .attach_btf_id = btf_id);
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, 2, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

bool feat_tp_btf(const char *tp)
{
	const struct btf *btf;
	char name[96];
	int id, i;
	bool ok;

	/* tests force the raw_tp fallbacks with it on kernels that have tp_btf */
	if (getenv("BPFPROF_FORCE_RAW_TP"))
		return false;
	for (i = 0; i < feat.nr_tp_btf; i++)
		if (!strcmp(feat.tp_btf[i].name, tp))
			return feat.tp_btf[i].ok;
	btf = feat_btf();
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) : -ENOENT;
	ok = id > 0 && load_trivial_tracing(BPF_TRACE_RAW_TP, id) == 0;
	if (feat.nr_tp_btf < (int)(sizeof(feat.tp_btf) / sizeof(feat.tp_btf[0]))) {
		snprintf(feat.tp_btf[i].name, sizeof(feat.tp_btf[i].name), "%s", tp);
		feat.tp_btf[feat.nr_tp_btf++].ok = ok;
	}
	return ok;
}

void feat_pick_tp(struct bpf_program *btf_prog, struct bpf_program *raw_prog, const char *tp)
{
	bool use_btf;

	if (!btf_prog || !raw_prog)
		return;
	use_btf = feat_tp_btf(tp);
	bpf_program__set_autoload(btf_prog, use_btf);
	bpf_program__set_autoload(raw_prog, !use_btf);
	p_info("%s: using %s", tp, use_btf ? "tp_btf (BTF-typed arguments)" :
					     "raw_tp (this kernel cannot attach tp_btf here)");
}

bool feat_task_storage(void)
{
	if (feat.task_storage == UNKNOWN)
		feat.task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	return feat.task_storage;
}

bool feat_task_iter(void)
{
	const struct btf *btf = feat_btf();

	/* the task iterator's context type came with it (5.8) */
	return btf && btf__find_by_name_kind(btf, "bpf_iter__task", BTF_KIND_STRUCT) > 0;
}

bool feat_task_pt_regs(void)
{
	/* tests run the paths of 5.11-5.14 kernels with it */
	if (getenv("BPFPROF_NO_TASK_PT_REGS"))
		return false;
	if (feat.task_pt_regs == UNKNOWN)
		feat.task_pt_regs = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT,
							    BPF_FUNC_task_pt_regs, NULL) > 0;
	return feat.task_pt_regs;
}

bool feat_bpf_loop(void)
{
	/* tests run the paths of 5.6-5.16 kernels with it */
	if (getenv("BPFPROF_NO_BPF_LOOP"))
		return false;
	if (feat.loop == UNKNOWN)
		feat.loop = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) > 0;
	return feat.loop;
}

/* Loads a perf_event program that looks up a key in a hash map created with BPF_F_NO_PREALLOC:
 * before 6.1 (the BPF memory allocator) the verifier refuses it ("perf_event programs can only
 * use preallocated hash map"), as an element allocated in NMI could deadlock. */
static bool probe_nmi_alloc(void)
{
	struct bpf_insn insns[] = {
		/* *(u64 *)(r10 - 8) = 0; r2 = r10 - 8; r1 = the map; call map_lookup_elem */
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -8 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD },
		{},
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_map_create_opts, mopts, .map_flags = BPF_F_NO_PREALLOC);
	int map_fd, prog_fd;

	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, 8, 8, 1, &mopts);
	if (map_fd < 0)
		return false;
	insns[3].imm = map_fd;
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, NULL, "GPL", insns,
				sizeof(insns) / sizeof(insns[0]), NULL);
	close(map_fd);
	if (prog_fd < 0)
		return false;
	close(prog_fd);
	return true;
}

bool feat_nmi_alloc(void)
{
	if (feat.nmi_alloc == UNKNOWN)
		feat.nmi_alloc = probe_nmi_alloc();
	return feat.nmi_alloc;
}

bool feat_fentry(const char **why)
{
	const struct btf *btf;
	int id, err;

	if (feat.fentry == UNKNOWN) {
		btf = feat_btf();
		id = btf ? btf__find_by_name_kind(btf, "do_nanosleep", BTF_KIND_FUNC) : -ENOENT;
		err = id > 0 ? load_trivial_tracing(BPF_TRACE_FENTRY, id) : -ENOENT;
		feat.fentry = err == 0;
		if (id <= 0)
			feat.fentry_why = "kernel has no BTF for its functions";
		else if (err == -EPERM || err == -EACCES)
			feat.fentry_why = "the kernel refuses to load fentry programs (EPERM: BPF "
					  "trampolines disabled or locked down)";
		else if (err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */ || err == -EINVAL)
			feat.fentry_why = "the kernel does not support fentry (no BPF trampoline)";
		else if (err)
			feat.fentry_why = "fentry programs do not load here";
	}
	if (why)
		*why = feat.fentry_why;
	return feat.fentry;
}

bool feat_kprobes(const char **why)
{
	/* the kprobe PMU exists only with CONFIG_KPROBES; tracefs is not needed for it */
	if (feat.kprobes == UNKNOWN)
		feat.kprobes = !access("/sys/bus/event_source/devices/kprobe/type", R_OK);
	if (why)
		*why = feat.kprobes ? NULL : "the kernel has no kprobes (CONFIG_KPROBES is off)";
	return feat.kprobes;
}

bool feat_raw_tp_cookie(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_attach_cookie },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	if (feat.raw_tp_cookie == UNKNOWN) {
		fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, "GPL", insns, 3, NULL);
		feat.raw_tp_cookie = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return feat.raw_tp_cookie;
}

/* The bit offset of member `name` of the kernel's struct `st` (not of a nested anonymous one),
 * or -ENOENT. */
static long member_bit_offset(const char *st, const char *name)
{
	const struct btf_member *m;
	const struct btf_type *t;
	const struct btf *btf = feat_btf();
	int id = btf ? btf__find_by_name_kind(btf, st, BTF_KIND_STRUCT) : -ENOENT;

	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return btf_member_bit_offset(t, i);
	return -ENOENT;
}

int feat_task_flags_offset(void)
{
	long off;

	if (feat.task_flags_off)
		return feat.task_flags_off;
	off = member_bit_offset("task_struct", "flags");
	if (off < 0)
		return off;
	feat.task_flags_off = off / 8;
	return feat.task_flags_off;
}

/* Whether the kernel counted runs in our own sched_info: "0 0 0" (or no file) where it does not
 * collect it. */
static bool sched_info_collected(void)
{
	unsigned long long exec, delay, runs = 0;
	FILE *f = fopen("/proc/self/schedstat", "r");

	if (!f)
		return false;
	if (fscanf(f, "%llu %llu %llu", &exec, &delay, &runs) != 3)
		runs = 0;
	fclose(f);
	return runs > 0;
}

bool feat_sched_info(const char **why)
{
	static const char *const need[][3] = {
		{ "task_struct", "sched_info", "no CONFIG_SCHED_INFO" },
		{ "sched_info", "last_queued", "no sched_info.last_queued" },
		{ "sched_info", "run_delay", "no sched_info.run_delay" },
		{ "sched_info", "pcount", "no sched_info.pcount" },
		{ "sched_entity", "cfs_rq", "no CONFIG_FAIR_GROUP_SCHED (a task's run queue clock is "
		  "out of reach)" },
		{ "cfs_rq", "rq", "no cfs_rq.rq" },
		{ "rq", "clock", "no rq.clock" },
		/* before 5.14 pcount counts every switch-in, not only those that end a wait
		 * (90a0ff4ec9c6, "sched,stats: Further simplify sched_info"), which the BPF side
		 * relies on; 5.14 also renamed task_struct::state (2f064a59a11f) */
		{ "task_struct", "__state", "a kernel before 5.14" },
	};

	if (feat.sched_info == UNKNOWN) {
		feat.sched_info = true;
		/* tests run the wakeup programs with it on kernels that have sched_info */
		if (getenv("BPFPROF_NO_SCHED_INFO")) {
			feat.sched_info = false;
			feat.sched_info_why = "BPFPROF_NO_SCHED_INFO is set";
		} else if (!feat_btf()) {
			feat.sched_info = false;
			feat.sched_info_why = "no kernel BTF";
		}
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]) && feat.sched_info; i++) {
			if (member_bit_offset(need[i][0], need[i][1]) < 0) {
				feat.sched_info = false;
				feat.sched_info_why = need[i][2];
			}
		}
		/* whenever CONFIG_SCHED_INFO=y since 5.14 (c5895d3f06cb); checked all the same */
		if (feat.sched_info && !sched_info_collected()) {
			feat.sched_info = false;
			feat.sched_info_why = "the kernel does not collect sched_info";
		}
	}
	if (why)
		*why = feat.sched_info_why;
	return feat.sched_info;
}

/* Whether the kernel's enum `en` has the enumerator `name`. */
static bool enum_has(const char *en, const char *name)
{
	const struct btf *btf = feat_btf();
	int id = btf ? btf__find_by_name_kind(btf, en, BTF_KIND_ENUM) : -ENOENT;
	const struct btf_enum *e;
	const struct btf_type *t;

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++)
		if (!strcmp(btf__name_by_offset(btf, e->name_off), name))
			return true;
	return false;
}

bool feat_rq_issue_stamp(const char **why)
{
	if (feat.rq_stamp == UNKNOWN) {
		feat.rq_stamp = false;
		/* the tests time the same I/O both ways */
		if (getenv("BPFPROF_NO_RQ_STAMP"))
			feat.rq_stamp_why = "BPFPROF_NO_RQ_STAMP is set";
		else if (!feat_btf())
			feat.rq_stamp_why = "no kernel BTF";
		else if (member_bit_offset("request", "io_start_time_ns") < 0)
			feat.rq_stamp_why = "no request.io_start_time_ns (a kernel before 4.18)";
		/* named in 6.15 ("block: Name the RQF flags enum"): before, no CO-RE reaches it */
		else if (!enum_has("rqf_flags", "__RQF_STATS"))
			feat.rq_stamp_why = "no enum rqf_flags with __RQF_STATS (a kernel before 6.15)";
		else
			feat.rq_stamp = true;
	}
	if (why)
		*why = feat.rq_stamp_why;
	return feat.rq_stamp;
}

/* Follows typedefs and modifiers (const, volatile...) down to the type they name. */
static const struct btf_type *skip_mods(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t;
}

int btf_tp_arg_index(const struct btf *btf, const char *tp, const char *struct_name)
{
	const struct btf_type *t, *target;
	const struct btf_param *params;
	char type_name[96];
	int id, i, vlen;

	if (!btf)
		return -ENOENT;
	snprintf(type_name, sizeof(type_name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	/* typedef void (*btf_trace_<tp>)(void *__data, proto...) */
	t = btf__type_by_id(btf, id);
	t = t ? skip_mods(btf, t->type) : NULL;
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = skip_mods(btf, t->type);
	if (!t || !btf_is_func_proto(t))
		return -EINVAL;
	params = btf_params(t);
	vlen = btf_vlen(t);
	/* params[0] is the tracepoint's private __data pointer, not one of the program's args */
	for (i = 1; i < vlen; i++) {
		t = skip_mods(btf, params[i].type);
		if (!t || !btf_is_ptr(t))
			continue;
		target = skip_mods(btf, t->type);
		if (target && btf_is_struct(target) &&
		    !strcmp(btf__name_by_offset(btf, target->name_off), struct_name))
			return i - 1;
	}
	return -ENOENT;
}

int feat_tp_arg_index(const char *tp, const char *struct_name)
{
	return btf_tp_arg_index(feat_btf(), tp, struct_name);
}
