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

/* The kernel's BTF, parsed only for as long as a probe needs it: it takes several MB, and the
 * probe results are cached. */
static struct btf *vmlinux_btf(void)
{
	struct btf *btf = btf__load_vmlinux_btf();

	return libbpf_get_error(btf) ? NULL : btf;
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

int probe_tp_nr_args(const char *name)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t = NULL;
	char type_name[96];
	int id, nr = -ENOENT;

	if (!btf)
		return -ENOENT;
	/* typedef void (*btf_trace_NAME)(void *__data, ARGS...) */
	snprintf(type_name, sizeof(type_name), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF);
	if (id > 0)
		t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t) && btf_vlen(t) >= 1)
		nr = btf_vlen(t) - 1;
	btf__free(btf);
	return nr;
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

	/* Tests force the raw_tp fallbacks with it on kernels that have tp_btf. */
	if (getenv("BPFPROF_FORCE_RAW_TP"))
		return false;
	for (i = 0; i < nr_cached; i++)
		if (!strcmp(cache[i].name, name))
			return cache[i].ok;
	btf = vmlinux_btf();
	snprintf(type_name, sizeof(type_name), "btf_trace_%s", name);
	id = btf ? btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF) : -ENOENT;
	btf__free(btf);
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
		btf = vmlinux_btf();
		id = btf ? btf__find_by_name_kind(btf, "do_nanosleep", BTF_KIND_FUNC) : -ENOENT;
		btf__free(btf);
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
	bool use_btf;

	if (!btf_prog || !raw_prog)
		return;
	use_btf = probe_tp_btf(tp);
	bpf_program__set_autoload(btf_prog, use_btf);
	bpf_program__set_autoload(raw_prog, !use_btf);
	p_info("%s: using %s", tp, use_btf ? "tp_btf (BTF-typed arguments)" :
					     "raw_tp (this kernel cannot attach tp_btf here)");
}
