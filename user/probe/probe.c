#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "core/common.h"
#include "events.h"
#include "core/follow.h"
#include "probe/probe.h"
#include "sym/syms.h"

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

/* ---- event specs ------------------------------------------------------------------------- */

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static int copy_part(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

int probe_spec_parse(const char *text, struct probe_spec *spec, char *err, size_t err_size)
{
	const char *colon = strchr(text, ':'), *rest, *last;
	size_t plen;

	memset(spec, 0, sizeof(*spec));
	spec->text = text;
	if (!*text) {
		snprintf(err, err_size, "empty event spec");
		return -EINVAL;
	}
	if (!colon) {
		/* A bare name is a kernel function, as in funclatency and bpftrace. */
		spec->kind = PROBE_KFUNC;
		goto name_only;
	}
	plen = colon - text;
	rest = colon + 1;
	last = strrchr(text, ':');
	if ((plen == 1 && text[0] == 'k') || (plen == 3 && !strncmp(text, "sys", 3))) {
		spec->kind = text[0] == 'k' ? PROBE_KFUNC : PROBE_SYSCALL;
		text = rest;
		if (strchr(text, ':')) {
			snprintf(err, err_size, "'%s' has too many ':' (expected %s)", spec->text,
				 spec->kind == PROBE_KFUNC ? "k:FUNC" : "sys:NAME");
			return -EINVAL;
		}
		goto name_only;
	}
	if (plen == 1 && (text[0] == 'u' || text[0] == 't')) {
		spec->kind = text[0] == 'u' ? PROBE_UFUNC : PROBE_TP;
		if (last == colon) {
			snprintf(err, err_size, "'%s' needs %s", spec->text,
				 spec->kind == PROBE_UFUNC ? "u:PATH:FUNC or u:LIB:FUNC" : "t:CATEGORY:NAME");
			return -EINVAL;
		}
		if (spec->kind == PROBE_TP && strchr(rest, ':') != last) {
			snprintf(err, err_size, "'%s' has too many ':' (expected t:CATEGORY:NAME)",
				 spec->text);
			return -EINVAL;
		}
		/* A path may hold ':', a function name not: split at the last one. */
		if (copy_part(spec->target, sizeof(spec->target), rest, last - rest) ||
		    copy_part(spec->name, sizeof(spec->name), last + 1, strlen(last + 1)))
			goto too_long;
		if (!spec->target[0] || !spec->name[0]) {
			snprintf(err, err_size, "'%s' has an empty %s", spec->text,
				 !spec->target[0] ? (spec->kind == PROBE_UFUNC ? "path" : "category") :
						    (spec->kind == PROBE_UFUNC ? "function" : "event name"));
			return -EINVAL;
		}
		return 0;
	}
	/* No known prefix: PATH:FUNC when it has a '/', else LIB:FUNC or CATEGORY:NAME. */
	if (last != colon && !memchr(text, '/', last - text)) {
		snprintf(err, err_size, "unknown prefix '%.*s:' in '%s' (expected k:, u:, t: or sys:)",
			 (int)plen, text, spec->text);
		return -EINVAL;
	}
	spec->kind = PROBE_UFUNC;
	spec->lib_or_tp = !memchr(text, '/', last - text);
	if (copy_part(spec->target, sizeof(spec->target), text, last - text) ||
	    copy_part(spec->name, sizeof(spec->name), last + 1, strlen(last + 1)))
		goto too_long;
	if (!spec->target[0] || !spec->name[0]) {
		snprintf(err, err_size, "'%s' has an empty %s", spec->text,
			 spec->target[0] ? "function or event name" : "library, path or category");
		return -EINVAL;
	}
	return 0;

name_only:
	if (!*text) {
		snprintf(err, err_size, "'%s' has an empty name", spec->text);
		return -EINVAL;
	}
	if (copy_part(spec->name, sizeof(spec->name), text, strlen(text)))
		goto too_long;
	return 0;
too_long:
	snprintf(err, err_size, "'%.64s...' is too long", spec->text);
	return -ENAMETOOLONG;
}

/* ---- near matches ------------------------------------------------------------------------ */

/* Levenshtein distance, giving up (returning limit + 1) once it must exceed limit. */
static int edit_distance(const char *a, const char *b, int limit)
{
	int la = strlen(a), lb = strlen(b), prev[PROBE_NAME_MAX + 1], cur[PROBE_NAME_MAX + 1];

	if (la > PROBE_NAME_MAX || lb > PROBE_NAME_MAX || abs(la - lb) > limit)
		return limit + 1;
	for (int j = 0; j <= lb; j++)
		prev[j] = j;
	for (int i = 1; i <= la; i++) {
		int row_min;

		cur[0] = row_min = i;
		for (int j = 1; j <= lb; j++) {
			int d = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
			if (d < row_min)
				row_min = d;
		}
		if (row_min > limit)
			return limit + 1;
		memcpy(prev, cur, (lb + 1) * sizeof(int));
	}
	return prev[lb];
}

struct near {
	const char *name;
	int score;
};

static int near_cmp(const void *a, const void *b)
{
	const struct near *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name);

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

int probe_near_matches(const char *want, const char *const *cands, size_t n, int max, char *buf,
		       size_t size)
{
	int wl = strlen(want), limit = wl < 4 ? 1 : wl < 12 ? 2 : 3, nr = 0, kept = 0;
	struct near best[16];
	size_t off = 0;

	if (max > 16)
		max = 16;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *c = cands[i];
		int d, score;
		bool dup = false;

		if (!strcmp(c, want))
			continue;
		d = edit_distance(want, c, limit);
		score = d <= limit ? 2 * d : -1;
		/* "getpid" for "sys_enter_getpid": a name that contains what was asked */
		if (wl >= 3 && strstr(c, want) && (score < 0 || score > 3))
			score = 3;
		if (score < 0)
			continue;
		for (int k = 0; k < kept; k++)
			dup |= !strcmp(best[k].name, c);
		if (dup)
			continue;
		if (kept < max) {
			best[kept++] = (struct near){ c, score };
		} else {
			struct near cand = { c, score };

			if (near_cmp(&cand, &best[kept - 1]) >= 0)
				continue;
			best[kept - 1] = cand;
		}
		qsort(best, kept, sizeof(best[0]), near_cmp);
	}
	for (int k = 0; k < kept && off + 1 < size; k++) {
		int w = snprintf(buf + off, size - off, "%s%s", k ? ", " : "", best[k].name);

		if (w < 0 || (size_t)w >= size - off) {
			buf[off] = '\0';
			break;
		}
		off += w;
		nr++;
	}
	return nr;
}

/* Prints "bpfprof: MSG" with ", did you mean: a, b?" when something is close. */
static void err_with_near(const char *msg, const char *want, const char *const *cands, size_t n)
{
	char near[512];

	if (cands && probe_near_matches(want, cands, n, 5, near, sizeof(near)) > 0)
		p_err("%s; did you mean: %s?", msg, near);
	else
		p_err("%s", msg);
}

/* ---- a growable list of names ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *ns, const char *s)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(s);
	return ns->v[ns->n] ? (ns->n++, 0) : -ENOMEM;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- syscall numbers --------------------------------------------------------------------- */

/* Generated at build time from <asm/unistd.h> for the build's architecture: the kernel exposes
 * no name -> number map at run time (its syscall metadata is not in kallsyms without
 * CONFIG_KALLSYMS_ALL), and perf, strace and libbpf-tools all compile one in likewise. */
static const struct syscall_nr {
	const char *name;
	int nr;
} syscall_nrs[] = {
#define SYSCALL(name, nr) { #name, nr },
#include "syscall_nrs.h"
#undef SYSCALL
};

/* Tracepoints are named after the kernel's entry points, which differ from the __NR_ names for
 * a few calls (arch/x86/entry/syscalls/syscall_64.tbl: "4 common stat sys_newstat"). */
static const struct { const char *tp, *nr_name; } syscall_aliases[] = {
	{ "newstat", "stat" },     { "newfstat", "fstat" },   { "newlstat", "lstat" },
	{ "newuname", "uname" },   { "sendfile64", "sendfile" }, { "umount", "umount2" },
};

/* Syscalls newer than the kernel headers bpfprof may be built against (Debian 12's are 6.1), from
 * arch/x86/entry/syscalls/syscall_64.tbl: numbers are ABI, never reused.  Each was checked on a
 * 6.18 kernel by calling it and counting its syscalls:sys_enter_* perf event.  Without them these
 * tracepoints would each need a perf event, whose close waits ~40 ms. */
static const struct syscall_nr syscall_nrs_newer[] = {
#if defined(__x86_64__)
	{ "cachestat", 451 },         { "fchmodat2", 452 },        { "futex_wake", 454 },
	{ "futex_wait", 455 },        { "futex_requeue", 456 },    { "statmount", 457 },
	{ "listmount", 458 },         { "lsm_get_self_attr", 459 }, { "lsm_set_self_attr", 460 },
	{ "lsm_list_modules", 461 },  { "mseal", 462 },            { "setxattrat", 463 },
	{ "getxattrat", 464 },        { "listxattrat", 465 },      { "removexattrat", 466 },
	{ "open_tree_attr", 467 },    { "file_getattr", 468 },     { "file_setattr", 469 },
#endif
	{ NULL, -1 },
};

int probe_syscall_nr(const char *name)
{
	for (size_t i = 0; i < sizeof(syscall_aliases) / sizeof(syscall_aliases[0]); i++)
		if (!strcmp(name, syscall_aliases[i].tp))
			name = syscall_aliases[i].nr_name;
	for (size_t i = 0; i < sizeof(syscall_nrs) / sizeof(syscall_nrs[0]); i++)
		if (!strcmp(name, syscall_nrs[i].name))
			return syscall_nrs[i].nr < SYS_NR_MAX ? syscall_nrs[i].nr : -1;
	for (size_t i = 0; syscall_nrs_newer[i].name; i++)
		if (!strcmp(name, syscall_nrs_newer[i].name))
			return syscall_nrs_newer[i].nr;
	return -1;
}

/* ---- kernel functions -------------------------------------------------------------------- */

struct kfunc {
	char *name;
	__u64 addr;
};

static struct {
	struct kfunc *v;
	size_t n;
	bool loaded;
	int err;
} kfuncs;

static int kfunc_cmp(const void *a, const void *b)
{
	const struct kfunc *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Text symbols of /proc/kallsyms, sorted by name, one entry per name (the first address). */
static int load_kfuncs(void)
{
	char line[512], name[256], type;
	size_t cap = 0, w = 0;
	unsigned long long addr;
	FILE *f;

	if (kfuncs.loaded)
		return kfuncs.err;
	kfuncs.loaded = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return kfuncs.err = -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* IBT/CFI padding and prefix symbols are not functions one can trace */
		if (!strncmp(name, "__pfx_", 6) || !strncmp(name, "__cfi_", 6))
			continue;
		if (kfuncs.n == cap) {
			struct kfunc *v;

			cap = cap ? cap * 2 : 65536;
			v = realloc(kfuncs.v, cap * sizeof(*v));
			if (!v) {
				fclose(f);
				return kfuncs.err = -ENOMEM;
			}
			kfuncs.v = v;
		}
		kfuncs.v[kfuncs.n].name = strdup(name);
		if (!kfuncs.v[kfuncs.n].name) {
			fclose(f);
			return kfuncs.err = -ENOMEM;
		}
		kfuncs.v[kfuncs.n++].addr = addr;
	}
	fclose(f);
	/* static functions of the same name in several files: keep one, at the lowest address */
	qsort(kfuncs.v, kfuncs.n, sizeof(*kfuncs.v), kfunc_cmp);
	for (size_t i = 0; i < kfuncs.n; i++) {
		if (w && !strcmp(kfuncs.v[w - 1].name, kfuncs.v[i].name)) {
			if (kfuncs.v[i].addr < kfuncs.v[w - 1].addr)
				kfuncs.v[w - 1].addr = kfuncs.v[i].addr;
			free(kfuncs.v[i].name);
			continue;
		}
		kfuncs.v[w++] = kfuncs.v[i];
	}
	kfuncs.n = w;
	if (!kfuncs.n)
		kfuncs.err = -ENOENT;
	return kfuncs.err;
}

static const struct kfunc *find_kfunc(const char *name)
{
	struct kfunc key = { .name = (char *)name };

	return kfuncs.n ? bsearch(&key, kfuncs.v, kfuncs.n, sizeof(key), kfunc_cmp) : NULL;
}

/* ---- tracefs ----------------------------------------------------------------------------- */

/* The events directory of tracefs, mounting tracefs when nothing has (it is not mounted at boot
 * on every system).  NULL with errno set when there is none. */
static const char *tracefs_events(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing/events",
					    "/sys/kernel/debug/tracing/events" };
	static const char *found;
	static int err;

	if (found || err)
		return errno = err, found;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!access(dirs[i], F_OK))
			return found = dirs[i];
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		p_info("mounted tracefs on /sys/kernel/tracing");
		if (!access(dirs[0], F_OK))
			return found = dirs[0];
	}
	err = errno ?: ENOENT;
	errno = err;
	return NULL;
}

/* Sorted names of the subdirectories of dir (categories, or events of a category). */
static int list_dirs(const char *dir, struct names *out)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && !err) {
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		err = names_add(out, e->d_name);
	}
	closedir(d);
	if (!err)
		qsort(out->v, out->n, sizeof(*out->v), str_cmp);
	return err;
}

static bool tp_category_exists(const char *cat)
{
	const char *events = tracefs_events();
	char path[PROBE_PATH_MAX + 64];
	struct stat st;

	if (!events || strchr(cat, '/') || !strcmp(cat, ".") || !strcmp(cat, ".."))
		return false;
	snprintf(path, sizeof(path), "%s/%s", events, cat);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int read_tp_id(const char *events, const char *cat, const char *name, __u32 *id)
{
	char path[PROBE_PATH_MAX + 64];
	unsigned int v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s/%s/id", events, cat, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%u", &v);
	fclose(f);
	if (n != 1)
		return -EINVAL;
	*id = v;
	return 0;
}

/* ---- libraries --------------------------------------------------------------------------- */

static bool is_so_name(const char *file, const char *so)
{
	size_t n = strlen(so);

	return !strncmp(file, so, n) && (file[n] == '\0' || file[n] == '.');
}

bool probe_lib_matches(const char *lib, const char *file)
{
	char so[PROBE_NAME_MAX + 8];

	if (!strcmp(lib, file))
		return true;
	if (strstr(lib, ".so"))
		return is_so_name(file, lib);
	snprintf(so, sizeof(so), "lib%s.so", lib);
	if (is_so_name(file, so))
		return true;
	snprintf(so, sizeof(so), "%s.so", lib);
	return !strncmp(lib, "lib", 3) && is_so_name(file, so);
}

/* glibc's elf/dl-cache.h, new format (the only one glibc writes since 2.32). */
#define LDCACHE_MAGIC_OLD "ld.so-1.7.0"
#define LDCACHE_MAGIC "glibc-ld.so.cache1.1"
struct ldcache_header {
	char magic[20]; /* "glibc-ld.so.cache" "1.1" */
	__u32 nlibs;
	__u32 len_strings;
	__u8 flags;
	__u8 pad[3];
	__u32 extension_offset;
	__u32 unused[3];
};
struct ldcache_entry {
	__s32 flags;
	__u32 key, value; /* string offsets from the header */
	__u32 osversion;
	__u64 hwcap;
};
#define LDCACHE_FLAG_ELF_LIBC6 0x0003
#if defined(__x86_64__)
#define LDCACHE_ARCH 0x0300
#elif defined(__aarch64__)
#define LDCACHE_ARCH 0x0a00
#else
#define LDCACHE_ARCH -1
#endif

static bool ldcache_entry_ours(__s32 flags)
{
	if ((flags & 0xff) != LDCACHE_FLAG_ELF_LIBC6)
		return false;
	return LDCACHE_ARCH < 0 || (flags & 0xff00) == LDCACHE_ARCH;
}

int probe_ldcache_lookup(const char *cache, const char *lib, char *path, size_t size,
			 char ***names_out, size_t *nr_names)
{
	const struct ldcache_header *h;
	struct names names = {};
	size_t len, base = 0;
	char *data = NULL;
	int err = 0;
	struct stat st;
	FILE *f;

	f = fopen(cache, "re");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || st.st_size < (off_t)sizeof(*h) || st.st_size > (64 << 20)) {
		err = -EINVAL;
		goto cleanup;
	}
	len = st.st_size;
	data = malloc(len + 1);
	if (!data || fread(data, 1, len, f) != len) {
		err = data ? -EIO : -ENOMEM;
		goto cleanup;
	}
	data[len] = '\0';
	if (!memcmp(data, LDCACHE_MAGIC_OLD, strlen(LDCACHE_MAGIC_OLD))) {
		/* old-format entries (12 bytes) first, then the new format, 8-byte aligned */
		__u32 nold;

		memcpy(&nold, data + strlen(LDCACHE_MAGIC_OLD), 4);
		base = (strlen(LDCACHE_MAGIC_OLD) + 4 + (size_t)nold * 12 + 7) & ~(size_t)7;
	}
	if (base + sizeof(*h) > len || memcmp(data + base, LDCACHE_MAGIC, strlen(LDCACHE_MAGIC))) {
		err = -EINVAL;
		goto cleanup;
	}
	h = (const struct ldcache_header *)(data + base);
	if ((len - base - sizeof(*h)) / sizeof(struct ldcache_entry) < h->nlibs) {
		err = -EINVAL;
		goto cleanup;
	}
	err = -ENOENT;
	for (__u32 i = 0; i < h->nlibs; i++) {
		struct ldcache_entry e;
		const char *key, *value;

		memcpy(&e, data + base + sizeof(*h) + i * sizeof(e), sizeof(e));
		if (!ldcache_entry_ours(e.flags) || base + e.key >= len || base + e.value >= len)
			continue;
		key = data + base + e.key;
		value = data + base + e.value;
		if (probe_lib_matches(lib, key)) {
			snprintf(path, size, "%s", value);
			err = 0;
			break;
		}
		if (names_out && names_add(&names, key)) {
			err = -ENOMEM;
			break;
		}
	}
	if (err == -ENOENT && names_out) {
		*names_out = names.v;
		*nr_names = names.n;
		names.v = NULL;
		names.n = 0;
	}
cleanup:
	names_free(&names);
	free(data);
	fclose(f);
	return err;
}

/* LIB in a process's mappings: path gets the mapped file.  names gets the mapped files' names. */
static int maps_lookup(pid_t pid, const char *lib, char *path, size_t size, struct names *names)
{
	char file[64], line[PROBE_PATH_MAX + 128];
	int err = -ENOENT;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		base = strrchr(p, '/') + 1;
		if (probe_lib_matches(lib, base)) {
			snprintf(path, size, "%s", p);
			err = 0;
			break;
		}
		if (names_add(names, base)) {
			err = -ENOMEM;
			break;
		}
	}
	fclose(f);
	return err;
}

/* ---- resolution -------------------------------------------------------------------------- */

static struct probe_event *add_event(struct probe_events *evs, enum probe_kind kind, int spec,
				     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct probe_event *add_event(struct probe_events *evs, enum probe_kind kind, int spec,
				     const char *fmt, ...)
{
	struct probe_event *e;
	va_list ap;

	if (evs->nr == EVENTS_MAX) {
		errno = E2BIG;
		return NULL;
	}
	if (evs->nr == evs->cap) {
		int cap = evs->cap ? evs->cap * 2 : 64;
		struct probe_event *v = realloc(evs->ev, cap * sizeof(*v));

		if (!v)
			return NULL;
		evs->ev = v;
		evs->cap = cap;
	}
	e = &evs->ev[evs->nr];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->spec = spec;
	e->sys_nr = -1;
	va_start(ap, fmt);
	vsnprintf(e->name, sizeof(e->name), fmt, ap);
	va_end(ap);
	/* the same event named twice (two overlapping globs) is counted once */
	for (int i = 0; i < evs->nr; i++)
		if (evs->ev[i].kind == kind && !strcmp(evs->ev[i].name, e->name))
			return &evs->ev[i];
	evs->nr++;
	return e;
}

static int too_many(const struct probe_spec *spec)
{
	p_err("'%s' matches too many events (at most %d per run)", spec->text, EVENTS_MAX);
	return -E2BIG;
}

static int resolve_kfunc(const struct probe_spec *spec, int idx, struct probe_events *evs)
{
	struct btf *btf = vmlinux_btf();
	const struct kfunc *kf;
	int err, added = 0;
	char msg[512];

	err = load_kfuncs();
	if (err) {
		p_err("cannot read kernel functions from /proc/kallsyms: %s", strerror(-err));
		return err;
	}
	for (size_t i = 0; i < kfuncs.n; i++) {
		struct probe_event *e;

		kf = is_glob(spec->name) ? &kfuncs.v[i] : find_kfunc(spec->name);
		if (!kf)
			break;
		if (is_glob(spec->name) && fnmatch(spec->name, kf->name, 0))
			continue;
		e = add_event(evs, PROBE_KFUNC, idx, "%s", kf->name);
		if (!e)
			return errno == E2BIG ? too_many(spec) : -ENOMEM;
		e->offset = kf->addr;
		if (btf) {
			int id = btf__find_by_name_kind(btf, kf->name, BTF_KIND_FUNC);

			e->btf_id = id > 0 ? id : 0;
		}
		added++;
		if (!is_glob(spec->name))
			break;
	}
	if (added)
		return added;
	if (is_glob(spec->name)) {
		p_err("no kernel function matches '%s'", spec->name);
		return -ENOENT;
	}
	{
		const char **cands = malloc(kfuncs.n * sizeof(*cands));

		snprintf(msg, sizeof(msg), "kernel function '%s' not found", spec->name);
		for (size_t i = 0; cands && i < kfuncs.n; i++)
			cands[i] = kfuncs.v[i].name;
		err_with_near(msg, spec->name, cands, cands ? kfuncs.n : 0);
		free(cands);
	}
	return -ENOENT;
}

static int resolve_tp(const struct probe_spec *spec, const char *cat_glob, const char *name_glob,
		      enum probe_kind kind, int idx, struct probe_events *evs)
{
	struct names cats = {}, events = {};
	const char *dir = tracefs_events();
	char path[PROBE_PATH_MAX + 64], msg[PROBE_PATH_MAX + 512];
	int err = 0, added = 0, nr_cats = 0;

	if (!dir) {
		err = -errno;
		p_err("cannot list tracepoints: tracefs is not mounted and mounting it on "
		      "/sys/kernel/tracing failed: %s", strerror(-err));
		return err;
	}
	err = list_dirs(dir, &cats);
	for (size_t c = 0; !err && c < cats.n; c++) {
		const char *cat = cats.v[c];

		if (is_glob(cat_glob) ? fnmatch(cat_glob, cat, 0) : strcmp(cat_glob, cat))
			continue;
		nr_cats++;
		names_free(&events);
		snprintf(path, sizeof(path), "%s/%s", dir, cat);
		err = list_dirs(path, &events);
		for (size_t i = 0; !err && i < events.n; i++) {
			const char *ev = events.v[i];
			struct probe_event *e;
			__u32 id = 0;

			if (is_glob(name_glob) ? fnmatch(name_glob, ev, 0) : strcmp(name_glob, ev))
				continue;
			if (read_tp_id(dir, cat, ev, &id))
				continue; /* not an event: no id */
			if (kind == PROBE_SYSCALL)
				e = add_event(evs, kind, idx, "sys:%s", ev + strlen("sys_enter_"));
			else
				e = add_event(evs, kind, idx, "%s:%s", cat, ev);
			if (!e) {
				err = errno == E2BIG ? too_many(spec) : -ENOMEM;
				break;
			}
			e->tp_id = id;
			e->from_glob = is_glob(cat_glob) || is_glob(name_glob);
			if (!strcmp(cat, "syscalls") && !strncmp(ev, "sys_enter_", 10))
				e->sys_nr = probe_syscall_nr(ev + 10);
			else if (!strcmp(cat, "syscalls") && !strncmp(ev, "sys_exit_", 9))
				e->sys_nr = probe_syscall_nr(ev + 9), e->sys_exit = true;
			if (kind == PROBE_SYSCALL && e->sys_nr < 0) {
				p_err("syscall '%s' has no number in this build's syscall table "
				      "(built against older kernel headers?)", ev + 10);
				err = -ENOENT;
				break;
			}
			added++;
		}
	}
	if (err)
		goto cleanup;
	if (added) {
		err = added;
		goto cleanup;
	}
	err = -ENOENT;
	if (kind == PROBE_SYSCALL) {
		for (size_t i = 0; i < events.n; i++)
			if (!strncmp(events.v[i], "sys_enter_", 10))
				memmove(events.v[i], events.v[i] + 10, strlen(events.v[i] + 10) + 1);
		snprintf(msg, sizeof(msg), "no syscall %s '%s'", is_glob(spec->name) ? "matches" : "named",
			 spec->name);
		err_with_near(msg, spec->name, (const char *const *)events.v, events.n);
	} else if (!nr_cats) {
		snprintf(msg, sizeof(msg), "no tracepoint category %s '%s' (in '%s')",
			 is_glob(cat_glob) ? "matches" : "named", cat_glob, spec->text);
		err_with_near(msg, cat_glob, (const char *const *)cats.v, cats.n);
	} else {
		snprintf(msg, sizeof(msg), "no tracepoint %s '%s:%s'",
			 is_glob(name_glob) ? "matches" : "named", cat_glob, name_glob);
		err_with_near(msg, name_glob, nr_cats == 1 ? (const char *const *)events.v : NULL,
			      events.n);
	}
cleanup:
	names_free(&cats);
	names_free(&events);
	return err;
}

/* The file a UFUNC spec names: a path, or a library through -p's maps or the ld.so cache. */
static int resolve_ufile(const struct probe_spec *spec, pid_t pid, char *path, size_t size)
{
	struct names names = {};
	char **cache_names = NULL;
	size_t nr_cache = 0;
	char msg[PROBE_PATH_MAX + 512];
	int err;

	if (strchr(spec->target, '/')) {
		if (access(spec->target, R_OK)) {
			err = -errno;
			p_err("cannot read '%s' (in '%s'): %s", spec->target, spec->text, strerror(-err));
			return err;
		}
		if (!realpath(spec->target, path))
			return -errno;
		return 0;
	}
	if (pid > 0) {
		err = maps_lookup(pid, spec->target, path, size, &names);
		if (err == -ENOENT) {
			qsort(names.v, names.n, sizeof(*names.v), str_cmp);
			snprintf(msg, sizeof(msg), "library '%s' is not mapped by pid %d", spec->target,
				 pid);
			err_with_near(msg, spec->target, (const char *const *)names.v, names.n);
		} else if (err) {
			p_err("cannot read the mappings of pid %d: %s", pid, strerror(-err));
		}
		names_free(&names);
		return err;
	}
	err = probe_ldcache_lookup("/etc/ld.so.cache", spec->target, path, size, &cache_names,
				   &nr_cache);
	if (err == -ENOENT) {
		struct names cands = {};
		const char *events = spec->lib_or_tp ? tracefs_events() : NULL;

		/* "A:B" could have meant a tracepoint category as well */
		if (events)
			list_dirs(events, &cands);
		for (size_t i = 0; i < nr_cache; i++)
			names_add(&cands, cache_names[i]);
		snprintf(msg, sizeof(msg), "%s '%s' not found in the ld.so cache (give its path, "
			 "or -p PID of a process that maps it)",
			 events ? "no tracepoint category, and library" : "library", spec->target);
		err_with_near(msg, spec->target, (const char *const *)cands.v, cands.n);
		names_free(&cands);
	} else if (err) {
		p_err("cannot read /etc/ld.so.cache to find library '%s': %s", spec->target,
		      strerror(-err));
	}
	for (size_t i = 0; i < nr_cache; i++)
		free(cache_names[i]);
	free(cache_names);
	return err;
}

struct ufunc_match {
	char name[PROBE_NAME_MAX];
	__u64 off;
};

struct ufunc_matches {
	struct ufunc_match *v;
	size_t n, cap;
	const char *want; /* exact name asked for, or NULL for a glob */
};

static int ufunc_cb(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	struct ufunc_matches *m = ctx;

	/* aliases at one address (malloc, __libc_malloc) are one uprobe: keep the name asked for,
	 * else the shortest */
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].off != file_off)
			continue;
		if ((m->want && !strcmp(name, m->want)) ||
		    (!(m->want && !strcmp(m->v[i].name, m->want)) && strlen(name) < strlen(m->v[i].name)))
			snprintf(m->v[i].name, sizeof(m->v[i].name), "%s", name);
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct ufunc_match *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	snprintf(m->v[m->n].name, sizeof(m->v[m->n].name), "%s", name);
	m->v[m->n++].off = file_off;
	return 0;
}

static int names_cb(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	return names_add(ctx, name);
}

static int resolve_ufunc(const struct probe_spec *spec, int idx, pid_t pid, struct probe_events *evs)
{
	struct ufunc_matches m = { .want = is_glob(spec->name) ? NULL : spec->name };
	char path[PROBE_PATH_MAX], msg[2 * PROBE_PATH_MAX + 128];
	const char *base;
	struct elf_syms *es;
	int err;

	err = resolve_ufile(spec, pid, path, sizeof(path));
	if (err)
		return err;
	es = elf_syms__open(path);
	if (!es) {
		err = -errno;
		p_err("cannot read the symbols of '%s': %s", path, strerror(-err));
		return err;
	}
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	err = elf_syms__for_each_match(es, spec->name, ufunc_cb, &m);
	for (size_t i = 0; !err && i < m.n; i++) {
		struct probe_event *e = add_event(evs, PROBE_UFUNC, idx, "%s:%s", base, m.v[i].name);

		if (!e) {
			err = errno == E2BIG ? too_many(spec) : -ENOMEM;
			break;
		}
		if (!e->path) {
			e->path = strdup(path);
			if (!e->path) {
				err = -ENOMEM;
				break;
			}
		}
		e->offset = m.v[i].off;
	}
	if (!err && !m.n) {
		struct names all = {};

		err = -ENOENT;
		if (is_glob(spec->name)) {
			p_err("no function in '%s' matches '%s'", path, spec->name);
		} else {
			elf_syms__for_each_match(es, "*", names_cb, &all);
			snprintf(msg, sizeof(msg), "function '%s' not found in '%s'", spec->name, path);
			err_with_near(msg, spec->name, (const char *const *)all.v, all.n);
		}
		names_free(&all);
	}
	elf_syms__free(es);
	free(m.v);
	return err ?: (int)m.n;
}

int probe_resolve(const struct probe_spec *spec, int spec_idx, pid_t pid, struct probe_events *evs)
{
	char glob[PROBE_NAME_MAX + 16];

	switch (spec->kind) {
	case PROBE_KFUNC:
		return resolve_kfunc(spec, spec_idx, evs);
	case PROBE_TP:
		return resolve_tp(spec, spec->target, spec->name, PROBE_TP, spec_idx, evs);
	case PROBE_SYSCALL:
		snprintf(glob, sizeof(glob), "sys_enter_%s", spec->name);
		return resolve_tp(spec, "syscalls", glob, PROBE_SYSCALL, spec_idx, evs);
	case PROBE_UFUNC:
		if (spec->lib_or_tp && tp_category_exists(spec->target))
			return resolve_tp(spec, spec->target, spec->name, PROBE_TP, spec_idx, evs);
		return resolve_ufunc(spec, spec_idx, pid, evs);
	}
	return -EINVAL;
}

int probe_resolve_specs(char **specs, int n, pid_t pid, struct probe_events *evs)
{
	struct probe_spec *spec = malloc(sizeof(*spec));
	char why[PROBE_PATH_MAX + 128];
	int err = spec ? 0 : -ENOMEM;

	for (int i = 0; i < n && !err; i++) {
		err = probe_spec_parse(specs[i], spec, why, sizeof(why));
		if (err) {
			p_err("invalid event spec: %s", why);
			err = -EINVAL; /* bad usage, unlike what resolution finds missing */
			break;
		}
		err = probe_resolve(spec, i, pid, evs);
		if (err > 0) {
			if (is_glob(spec->name) || is_glob(spec->target))
				fprintf(stderr, "bpfprof: '%s' matches %d %s\n", specs[i], err,
					spec->kind == PROBE_TP || evs->ev[evs->nr - 1].kind == PROBE_TP ?
					"tracepoints" : spec->kind == PROBE_SYSCALL ? "syscalls" : "functions");
			err = 0;
		}
	}
	free(spec);
	return err;
}

void probe_events_free(struct probe_events *evs)
{
	for (int i = 0; i < evs->nr; i++)
		free(evs->ev[i].path);
	free(evs->ev);
	memset(evs, 0, sizeof(*evs));
}

/* ---- the process filter ---------------------------------------------------------------- */

int probe_filter_start(struct bpf_map *tgids, pid_t pid, bool follow,
		       struct follow_bpf **follow_out)
{
	__u32 key = pid;
	__u8 one = 1;
	int err;

	if (pid <= 0)
		return 0;
	err = bpf_map__update_elem(tgids, &key, 4, &one, 1, BPF_ANY);
	if (err) {
		p_err("cannot set the PID filter: %s", strerror(-err));
		return err;
	}
	return follow ? follow_start(tgids, follow_out) : 0;
}

/* ---- attaching --------------------------------------------------------------------------- */

enum kfunc_mode { KFUNC_NONE, KFUNC_FENTRY, KFUNC_KPROBE };

/* Raw tracepoints with an attach cookie (kernel 6.10): tracepoints then attach through
 * BPF_RAW_TRACEPOINT_OPEN, whose detach does not wait for an RCU grace period per event as a
 * perf tracepoint's close does (~40 ms each: minutes for 'sched:*' 'irq:*' 'block:*'...). */
static bool probe_raw_tp_cookie(void)
{
	static int result = -1;
	struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_attach_cookie },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	if (result < 0) {
		fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, "GPL", insns, 3, NULL);
		result = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return result;
}

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
	const char *why_f = NULL, *why_k = NULL;
	int err;

	for (int i = 0; i < evs->nr; i++) {
		const struct probe_event *e = &evs->ev[i];

		switch (e->kind) {
		case PROBE_KFUNC:
			first_k = first_k ?: e;
			all_btf &= e->btf_id > 0;
			break;
		case PROBE_UFUNC:
			uf = true;
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
			sys_out |= p->want_exit;
			break;
		}
	}
	kfunc_mode = KFUNC_NONE;
	if (first_k) {
		/* fentry: no int3, no return trampoline, BTF-typed; kprobes where it is refused */
		if (probe_fentry(&why_f) && all_btf && p->fentry)
			kfunc_mode = KFUNC_FENTRY;
		else if (probe_kprobes(&why_k) && p->kentry)
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
	set_autoload(p->fexit, kfunc_mode == KFUNC_FENTRY && p->want_exit);
	set_autoload(p->kentry, kfunc_mode == KFUNC_KPROBE);
	set_autoload(p->kexit, kfunc_mode == KFUNC_KPROBE && p->want_exit);
	set_autoload(p->uentry, uf);
	set_autoload(p->uexit, uf && p->want_exit);
	use_raw_tp = tp && p->raw_tp && probe_raw_tp_cookie();
	if (tp)
		p_info("tracepoints: %s", use_raw_tp ? "raw tracepoints with cookies" :
		       "perf tracepoint events (no raw tracepoint cookies on this kernel)");
	/* perf events stay loaded for tracepoints that are no raw tracepoint of the same name */
	set_autoload(p->tp, tp);
	set_autoload(p->raw_tp, use_raw_tp);
	set_autoload(p->sys_enter, sys_in);
	set_autoload(p->sys_exit, sys_out);
	if (kfunc_mode == KFUNC_FENTRY) {
		/* loaded against the first function; probe_attach() clones it for the others */
		err = bpf_program__set_attach_target(p->fentry, 0, first_k->name);
		if (!err && p->want_exit && p->fexit)
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
	if (l->nr == l->cap) {
		int cap = l->cap ? l->cap * 2 : 64;
		struct bpf_link **v = realloc(l->links, cap * sizeof(*v));

		if (!v) {
			bpf_link__destroy(link);
			return -ENOMEM;
		}
		l->links = v;
		l->cap = cap;
	}
	l->links[l->nr++] = link;
	return 0;
}

static int fds_add(struct probe_links *l, int fd)
{
	if (l->nr_fds == l->cap_fds) {
		int cap = l->cap_fds ? l->cap_fds * 2 : 64;
		int *v = realloc(l->fds, cap * sizeof(*v));

		if (!v) {
			close(fd);
			return -ENOMEM;
		}
		l->fds = v;
		l->cap_fds = cap;
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
		LIBBPF_OPTS(bpf_kprobe_opts, opts, .bpf_cookie = idx);
		struct bpf_link *link = bpf_program__attach_kprobe_opts(p->kentry, e->name, &opts);

		err = link ? links_add(l, link) : -errno;
		if (!err && p->want_exit) {
			opts.retprobe = true;
			link = bpf_program__attach_kprobe_opts(p->kexit, e->name, &opts);
			err = link ? links_add(l, link) : -errno;
		}
	}
	return err;
}

static int attach_ufunc(const struct probe_progs *p, const struct probe_event *e, int idx,
			pid_t pid, struct probe_links *l)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = idx);
	struct bpf_link *link;
	int err;

	link = bpf_program__attach_uprobe_opts(p->uentry, pid > 0 ? pid : -1, e->path, e->offset,
					       &opts);
	err = link ? links_add(l, link) : -errno;
	if (!err && p->want_exit) {
		opts.retprobe = true;
		link = bpf_program__attach_uprobe_opts(p->uexit, pid > 0 ? pid : -1, e->path,
						       e->offset, &opts);
		err = link ? links_add(l, link) : -errno;
	}
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

int probe_attach(const struct probe_progs *p, const struct probe_events *evs, pid_t pid,
		 struct probe_links *l)
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
			err = attach_ufunc(p, e, i, pid, l);
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
			if (!err && p->want_exit)
				err = bpf_map__update_elem(p->sys_exit_idx, &nr, 4, &v, 4, BPF_ANY);
			raw_in = true;
			raw_out |= p->want_exit;
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
