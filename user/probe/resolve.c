// SPDX-License-Identifier: GPL-2.0
/* Event specs resolved to attach points: kernel functions (kallsyms, BTF ids for fentry),
 * tracepoints (tracefs), syscalls (the build's number table), and user functions in files and
 * libraries (through -p's mappings or the ld.so cache). */
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
#include <bpf/btf.h>
#include "core/grow.h"
#include "core/common.h"
#include "core/features.h"
#include "events.h"
#include "probe/internal.h"
#include "probe/probe.h"
#include "sym/syms.h"

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
	{ "uretprobe", 335 },         { "uprobe", 336 },
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

/* ---- kernel functions: the symbolizer's kallsyms reader (sym/ksyms.c), loaded once ---- */

static struct ksyms *kfuncs;

static const struct ksyms *kernel_funcs(void)
{
	if (!kfuncs)
		kfuncs = ksyms__load();
	return kfuncs;
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
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!access(dirs[i], F_OK))
			return found = dirs[i];
		/* mounted, but not for us: mounting again would not help */
		if (errno == EACCES) {
			errno = err = EACCES;
			return NULL;
		}
	}
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
		names_sort(out);
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
	if (ARRAY_GROW(evs->ev, evs->cap, (size_t)evs->nr + 1))
		return NULL;
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

struct kfunc_match {
	const struct probe_spec *spec;
	int idx, added, err;
	struct probe_events *evs;
	const struct btf *btf;
	struct names names; /* every name, for near matches */
};

static int add_kfunc(const char *name, __u64 addr, struct kfunc_match *m)
{
	struct probe_event *e = add_event(m->evs, PROBE_KFUNC, m->idx, "%s", name);

	if (!e)
		return errno == E2BIG ? too_many(m->spec) : -ENOMEM;
	e->offset = addr;
	e->ret = m->spec->ret;
	if (m->btf) {
		int id = btf__find_by_name_kind(m->btf, name, BTF_KIND_FUNC);

		e->btf_id = id > 0 ? id : 0;
	}
	m->added++;
	return 0;
}

static int match_kfunc(const char *name, __u64 addr, void *ctx)
{
	struct kfunc_match *m = ctx;

	return fnmatch(m->spec->name, name, 0) ? 0 : add_kfunc(name, addr, m);
}

static int name_kfunc(const char *name, __u64 addr, void *ctx)
{
	return names_add(&((struct kfunc_match *)ctx)->names, name);
}

static int resolve_kfunc(const struct probe_spec *spec, int idx, struct probe_events *evs)
{
	struct kfunc_match m = { .spec = spec, .idx = idx, .evs = evs, .btf = feat_btf() };
	const struct ksyms *ks = kernel_funcs();
	char msg[512];
	__u64 addr;
	int err;

	if (!ks) {
		err = -errno;
		p_err("cannot read kernel functions from /proc/kallsyms: %s", strerror(-err));
		return err;
	}
	if (is_glob(spec->name)) {
		err = ksyms__for_each_name(ks, match_kfunc, &m);
		if (err)
			return err;
		if (!m.added) {
			p_err("no kernel function matches '%s'", spec->name);
			return -ENOENT;
		}
		return m.added;
	}
	addr = ksyms__addr(ks, spec->name);
	if (addr) {
		err = add_kfunc(spec->name, addr, &m);
		return err ?: 1;
	}
	/* perf's raw PMU events: r then the event's hex code (perf stat -e r0) */
	if (spec->name[0] == 'r' && spec->name[1] &&
	    strspn(spec->name + 1, "0123456789abcdefABCDEF") == strlen(spec->name + 1)) {
		p_err("kernel function '%s' not found; perf's raw PMU events (rNNN) are not taken: "
		      "bpfprof list hw names the hardware events", spec->name);
		return -ENOENT;
	}
	snprintf(msg, sizeof(msg), "kernel function '%s' not found", spec->name);
	ksyms__for_each_name(ks, name_kfunc, &m);
	err_with_near(msg, spec->name, (const char *const *)m.names.v, m.names.n);
	names_free(&m.names);
	return -ENOENT;
}

static int resolve_tp(const struct probe_spec *spec, const char *cat_glob, const char *name_glob,
		      enum probe_kind kind, int idx, struct probe_events *evs)
{
	struct names cats = {}, events = {};
	const char *dir = tracefs_events();
	char path[PROBE_PATH_MAX + 64], msg[PROBE_PATH_MAX + 512];
	int err = 0, added = 0, nr_cats = 0, nr_unnumbered = 0;
	const char *unnumbered = NULL;

	if (!dir) {
		err = -errno;
		if (err == -EACCES)
			p_err("cannot list tracepoints: tracefs is readable by root only (run as root)");
		else
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
			/* sys:NAME rides on the raw sys_enter/sys_exit programs, by number */
			if (kind == PROBE_SYSCALL && probe_syscall_nr(ev + 10) < 0) {
				if (!is_glob(name_glob)) {
					p_err("syscall '%s' has no number in this build's syscall table "
					      "(built against older kernel headers?); "
					      "syscalls:sys_enter_%s counts it", ev + 10, ev + 10);
					err = -ENOENT;
					break;
				}
				unnumbered = unnumbered ?: events.v[i];
				nr_unnumbered++;
				continue;
			}
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
			added++;
		}
	}
	if (!err && nr_unnumbered)
		fprintf(stderr, "bpfprof: %d syscall%s matching '%s' left out: not in this build's "
			"syscall table (%s%s); syscalls:sys_enter_* counts them\n", nr_unnumbered,
			nr_unnumbered == 1 ? "" : "s", spec->text, unnumbered + 10,
			nr_unnumbered > 1 ? ", ..." : "");
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
			names_sort(&names);
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
	if (err == -ENOENT && spec->lib_or_tp && !tracefs_events() && errno == EACCES) {
		/* most likely a tracepoint that cannot be seen: saying "no such library" would mislead */
		p_err("'%s:%s' is no library function, and tracepoints cannot be listed: tracefs is "
		      "readable by root only (run as root)", spec->target, spec->name);
	} else if (err == -ENOENT) {
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
	if (ARRAY_GROW(m->v, m->cap, m->n + 1))
		return -ENOMEM;
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
		struct probe_event *e = add_event(evs, PROBE_UFUNC, idx, "%s:%s%s", base, m.v[i].name,
						  spec->ret ? "%return" : "");

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
		e->ret = spec->ret;
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
		if (spec->lib_or_tp && tp_category_exists(spec->target) && spec->ret) {
			p_err("'%s': %%return applies to functions, not to tracepoints", spec->text);
			return -EINVAL;
		}
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
	/* kallsyms is needed again only by the symbolizer, which has its own */
	ksyms__free(kfuncs);
	kfuncs = NULL;
	return err;
}

void probe_events_free(struct probe_events *evs)
{
	for (int i = 0; i < evs->nr; i++)
		free(evs->ev[i].path);
	free(evs->ev);
	memset(evs, 0, sizeof(*evs));
}

