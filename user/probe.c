#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "common.h"
#include "probe.h"

struct btf *probe_vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (!btf)
			btf = NULL;
	}
	return btf;
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

#define MAX_CACHED 32
bool probe_tp_btf(const char *name)
{
	static struct { char name[64]; bool ok; } cache[MAX_CACHED];
	static int nr_cached;
	char type_name[96];
	struct btf *btf;
	int id, i;
	bool ok;

	for (i = 0; i < nr_cached; i++)
		if (!strcmp(cache[i].name, name))
			return cache[i].ok;
	btf = probe_vmlinux_btf();
	snprintf(type_name, sizeof(type_name), "btf_trace_%s", name);
	id = btf ? btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF) : -ENOENT;
	ok = id > 0 && load_trivial_tracing(BPF_TRACE_RAW_TP, id) == 0;
	if (nr_cached < MAX_CACHED) {
		snprintf(cache[nr_cached].name, sizeof(cache[nr_cached].name), "%s", name);
		cache[nr_cached++].ok = ok;
	}
	return ok;
}

bool probe_fentry(const char **why)
{
	static int result = 1; /* 1: not probed yet, 0: works, <0: -errno */
	static const char *reason;
	struct btf *btf;
	int id;

	if (result == 1) {
		btf = probe_vmlinux_btf();
		id = btf ? btf__find_by_name_kind(btf, "do_nanosleep", BTF_KIND_FUNC) : -ENOENT;
		if (id <= 0) {
			result = -ENOENT;
			reason = "kernel has no BTF for its functions";
		} else {
			result = load_trivial_tracing(BPF_TRACE_FENTRY, id);
			if (result == -EPERM || result == -EACCES)
				reason = "the kernel refuses to load fentry programs (EPERM: BPF "
					 "trampolines disabled or locked down)";
			else if (result == -EOPNOTSUPP || result == -524 /* ENOTSUPP */ || result == -EINVAL)
				reason = "the kernel does not support fentry (no BPF trampoline)";
			else if (result)
				reason = "fentry programs do not load here";
		}
	}
	if (why)
		*why = reason;
	return result == 0;
}

bool probe_kprobes(const char **why)
{
	static int result = 1;

	if (result == 1) {
		/* The kprobe PMU exists only with CONFIG_KPROBES; tracefs is not needed for it. */
		result = access("/sys/bus/event_source/devices/kprobe/type", R_OK) ? -ENOENT : 0;
	}
	if (why)
		*why = result ? "the kernel has no kprobes (CONFIG_KPROBES is off)" : NULL;
	return result == 0;
}

void probe_pick_tp(struct bpf_program *btf_prog, struct bpf_program *raw_prog, const char *tp)
{
	bool use_btf, forced;

	if (!btf_prog || !raw_prog)
		return;
	/* BPFPROF_FORCE_RAW_TP=1 lets tests run the raw_tp fallback on kernels with tp_btf */
	forced = getenv("BPFPROF_FORCE_RAW_TP") && strcmp(getenv("BPFPROF_FORCE_RAW_TP"), "0");
	use_btf = !forced && probe_tp_btf(tp);
	bpf_program__set_autoload(btf_prog, use_btf);
	bpf_program__set_autoload(raw_prog, !use_btf);
	p_info("%s: using %s", tp, use_btf ? "tp_btf (BTF-typed arguments)" :
		forced ? "raw_tp (BPFPROF_FORCE_RAW_TP is set)" :
			 "raw_tp (this kernel cannot attach tp_btf here)");
}

/* Follows typedefs and modifiers (const, volatile...) down to the type they name. */
static const struct btf_type *skip_mods(const struct btf *btf, __u32 id, __u32 *res_id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	if (res_id)
		*res_id = id;
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
	t = t ? skip_mods(btf, t->type, NULL) : NULL;
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = skip_mods(btf, t->type, NULL);
	if (!t || !btf_is_func_proto(t))
		return -EINVAL;
	params = btf_params(t);
	vlen = btf_vlen(t);
	/* params[0] is the tracepoint's private __data pointer, not one of the program's args */
	for (i = 1; i < vlen; i++) {
		t = skip_mods(btf, params[i].type, NULL);
		if (!t || !btf_is_ptr(t))
			continue;
		target = skip_mods(btf, t->type, NULL);
		if (target && btf_is_struct(target) &&
		    !strcmp(btf__name_by_offset(btf, target->name_off), struct_name))
			return i - 1;
	}
	return -ENOENT;
}
