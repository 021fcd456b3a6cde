// SPDX-License-Identifier: GPL-2.0
/* Finding the debug information of an ELF file, where perf, gdb and elfutils look:
 *   1. DEBUG_ROOT/.build-id/ab/cdef....debug      Debian's -dbgsym packages (/usr/lib/debug)
 *   2. ~/.debug/.build-id/ab/cdef.../{debug,elf}  perf's build-id cache: `perf record` keeps a copy
 *      of every binary it saw there, so a binary stripped or replaced since is still named
 *      (PERF_BUILDID_DIR moves it, as for perf)
 *   3. .gnu_debuglink, next to the file, in its .debug/, under DEBUG_ROOT (gdb's order)
 *   4. debuginfod, when DEBUGINFOD_URLS is set (elfutils' client: its cache is
 *      ~/.cache/debuginfod_client), unless --no-debuginfod; each lookup bounded in time.
 * bpfprof runs as root and these are files that other users may write: every candidate is opened
 * as sym/untrusted.h says (no FIFO waited on, no device, a regular file of at most 4 GiB, read no
 * further than its size), owned by root or by us, or next to the file, by the file's owner, with
 * no symlink at its name there; a build-id candidate must carry the same build-id. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include <elfutils/debuginfod.h>
#include "core/common.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

#define DEFAULT_DEBUG_ROOT "/usr/lib/debug"
#define BUILD_ID_MAX 64
/* One debuginfod lookup, and all of them in a run: a server that does not answer must not hold
 * the report up for long. */
#define DEBUGINFOD_LOOKUP_NS (20ULL * 1000000000ULL)
#define DEBUGINFOD_BUDGET_NS (60ULL * 1000000000ULL)
/* A lookup slower than this says what it is doing on stderr. */
#define DEBUGINFOD_QUIET_NS 1000000000ULL

/* against DEBUG_CRC_BUDGET_NS; __atomic: the unwinder's worker checks CRCs too */
static __u64 crc_spent_ns;

static char *debug_root; /* NULL: DEFAULT_DEBUG_ROOT */

/* libdebuginfod is loaded only when a lookup needs it, as elfutils' own libdwfl does: it brings
 * libcurl and its TLS and Kerberos libraries (29 more shared objects, about 4 MB of a profile's
 * peak RSS) into every run that never asks a server. */
static struct {
	bool tried;
	debuginfod_client *(*begin)(void);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
} libdbgd;

static bool load_libdebuginfod(void)
{
	void *h;

	if (libdbgd.tried)
		return libdbgd.begin != NULL;
	libdbgd.tried = true;
	h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		p_info("debuginfod: %s", dlerror());
		return false;
	}
	libdbgd.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	libdbgd.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	libdbgd.begin = dlsym(h, "debuginfod_begin");
	if (!libdbgd.set_progressfn || !libdbgd.find_debuginfo)
		libdbgd.begin = NULL;
	return libdbgd.begin != NULL;
}

static struct {
	bool off;             /* --no-debuginfod */
	debuginfod_client *client;
	__u64 spent_ns;       /* in lookups so far */
	__u64 deadline_ns;    /* of the lookup in progress */
	__u64 started_ns;
	const char *what;     /* the file being looked up */
	bool said;            /* progress shown for this lookup */
	bool gave_up;         /* the budget is spent, or the server failed us */
	int found, missed;
} dbgd;

int syms_set_debug_root(const char *dir)
{
	char *copy = NULL;

	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	free(debug_root);
	debug_root = copy;
	return 0;
}

static const char *get_debug_root(void)
{
	return debug_root ? debug_root : DEFAULT_DEBUG_ROOT;
}

void syms_set_debuginfod(bool on)
{
	dbgd.off = !on;
}

int elf_build_id(Elf *elf, unsigned char *id, size_t size)
{
	size_t off, next, name_off, desc_off;
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	GElf_Shdr sh;
	GElf_Nhdr nh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		for (off = 0; (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0; off = next) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + name_off, "GNU", 4) || nh.n_descsz < 2 ||
			    nh.n_descsz > size)
				continue;
			memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
	}
	return -ENOENT;
}

/* Where root alone writes (the debug root, root's perf cache): the links there are the
 * distribution's or perf's, and the file they reach must still be root's (or ours). */
static const struct file_rules root_tree = { .follow = true, .check_owner = true };

/* Opens a candidate debug file under rules; one refused is named and counted.  An fd with its
 * size in *size, or a negative errno. */
static int open_candidate(const char *path, const struct file_rules *rules, __u64 *size)
{
	enum file_refusal why;
	struct stat st;
	int fd = untrusted_open(AT_FDCWD, path, FILE_DEBUG, rules, &st, &why);

	if (why)
		untrusted_refused(FILE_DEBUG, path, why);
	if (fd >= 0 && size)
		*size = st.st_size;
	return fd;
}

/* The fd when the file at fd is an ELF file with the given build-id; closed otherwise. */
static int same_build_id(int fd, const unsigned char *id, size_t len)
{
	unsigned char got[BUILD_ID_MAX];
	Elf *elf = untrusted_elf(fd);
	int n = elf ? elf_build_id(elf, got, sizeof(got)) : -ENOENT;

	elf_end(elf);
	if (n == (int)len && !memcmp(got, id, len))
		return fd;
	close(fd);
	return -ENOENT;
}

static void hex(const unsigned char *id, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* 1: DEBUG_ROOT/.build-id/ab/cdef...debug */
static int by_build_id(const unsigned char *id, size_t len)
{
	char h[2 * BUILD_ID_MAX + 1], path[4096];

	hex(id, len, h);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", get_debug_root(), h, h + 2);
	return open_candidate(path, &root_tree, NULL);
}

/* 2: perf's build-id cache.  Newer perf: .build-id/ab/cdef... is a symlink to a directory
 * holding `elf` (the binary as recorded) and maybe `debug`; older perf: to the binary itself. */
static int by_perf_cache(const unsigned char *id, size_t len)
{
	static const char *const leaves[] = { "/debug", "/elf", "" };
	const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char h[2 * BUILD_ID_MAX + 1], path[4096];
	int fd;

	hex(id, len, h);
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		if (dir && dir[0])
			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", dir, h, h + 2, leaves[i]);
		else if (home && home[0])
			snprintf(path, sizeof(path), "%s/.debug/.build-id/%.2s/%s%s", home, h, h + 2,
				 leaves[i]);
		else
			return -ENOENT;
		fd = open_candidate(path, &root_tree, NULL);
		if (fd >= 0 && (fd = same_build_id(fd, id, len)) >= 0)
			return fd;
		/* the entry itself only when it is no directory (older perf's link to the binary) */
		if (i == 1 && fd != -ENOTDIR)
			break;
	}
	return -ENOENT;
}

/* The CRC of the first size bytes (the size fstat gave): a file that grows as it is read, or
 * one of the files in /proc whose size says 0 and whose reading never ends, is read no further;
 * -ETIME once the run's DEBUG_CRC_BUDGET_NS is spent. */
static int file_crc32(int fd, __u64 size, __u32 *out)
{
	__u64 start = now_ns(), spent = __atomic_load_n(&crc_spent_ns, __ATOMIC_RELAXED);
	size_t chunk = 1 << 16;
	uLong crc = crc32(0L, Z_NULL, 0);
	unsigned char *buf;
	__u64 off = 0;
	ssize_t r = 0;
	int err = 0;

	buf = malloc(chunk);
	if (!buf)
		return -ENOMEM;
	while (off < size && !err) {
		r = pread(fd, buf, size - off < chunk ? size - off : chunk, off);
		if (r <= 0)
			break;
		crc = crc32(crc, buf, r);
		off += r;
		if (spent + now_ns() - start > DEBUG_CRC_BUDGET_NS)
			err = -ETIME;
	}
	free(buf);
	__atomic_fetch_add(&crc_spent_ns, now_ns() - start, __ATOMIC_RELAXED);
	if (!err && (r < 0 || off < size))
		err = -EIO;
	if (!err)
		*out = crc;
	return err;
}

static Elf_Scn *find_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	const char *s;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		s = elf_strptr(elf, shstrndx, sh.sh_name);
		if (s && !strcmp(s, name))
			return scn;
	}
	return NULL;
}

/* Reads .gnu_debuglink: the debug file's name, then (4-byte aligned) its CRC32. */
static int read_debuglink(Elf *elf, const char **name, __u32 *crc)
{
	Elf_Scn *scn = find_section(elf, ".gnu_debuglink");
	unsigned char *ident;
	size_t len, crc_off;
	Elf_Data *d;
	__u32 v;

	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return -ENOENT;
	len = strnlen(d->d_buf, d->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (!len || crc_off + 4 > d->d_size)
		return -ENOENT;
	memcpy(&v, (char *)d->d_buf + crc_off, 4);
	/* the section is raw bytes in the file's byte order */
	ident = (unsigned char *)elf_getident(elf, NULL);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (ident && ident[EI_DATA] == ELFDATA2MSB)
		v = __builtin_bswap32(v);
#else
	if (ident && ident[EI_DATA] == ELFDATA2LSB)
		v = __builtin_bswap32(v);
#endif
	*name = d->d_buf;
	*crc = v;
	return 0;
}

/* 3: gdb's search order: next to the file, in its .debug/ subdirectory, then under the debug root
 * with the file's directory appended.  The CRC guards against a stale debug file.  Next to the
 * file is where its owner writes: a debug file there is theirs (or root's), under its own name.
 * The link is a file name: one with a '/' ("../../../dev/zero") would lead out of the directories
 * searched, and is refused. */
static int by_debuglink(Elf *elf, const char *path, uid_t owner)
{
	const struct file_rules owners = { .one_name = true, .check_owner = true,
					   .owners = { owner, (uid_t)-1 } };
	const char *link, *slash;
	char cand[4096], dir[4096];
	__u32 crc, got;
	__u64 size;
	int i, n, fd, err;

	if (!path || read_debuglink(elf, &link, &crc))
		return -ENOENT;
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (strchr(link, '/')) {
		n = snprintf(cand, sizeof(cand), "%s/%s", dir, link);
		untrusted_refused(FILE_DEBUG, n > 0 ? cand : link, FILE_BAD_NAME);
		return -ENOENT;
	}
	for (i = 0; i < 3; i++) {
		if (i == 0)
			n = snprintf(cand, sizeof(cand), "%s/%s", dir, link);
		else if (i == 1)
			n = snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, link);
		else if (dir[0] == '/')
			n = snprintf(cand, sizeof(cand), "%s%s/%s", get_debug_root(), dir, link);
		else
			break;
		if (n < 0 || (size_t)n >= sizeof(cand))
			continue;
		fd = open_candidate(cand, i < 2 ? &owners : &root_tree, &size);
		if (fd < 0)
			continue;
		err = file_crc32(fd, size, &got);
		if (!err && got == crc)
			return fd;
		if (err == -ETIME)
			untrusted_refused(FILE_DEBUG, cand, FILE_TOO_SLOW);
		close(fd);
	}
	return -ENOENT;
}

/* libdebuginfod calls this while it downloads: non-zero cancels.  The lookup is bounded, and a
 * slow one says so on stderr. */
static int debuginfod_progress(debuginfod_client *c, long done, long total)
{
	__u64 now = now_ns();

	if (now >= dbgd.deadline_ns)
		return 1;
	if (!dbgd.said && now - dbgd.started_ns >= DEBUGINFOD_QUIET_NS) {
		fprintf(stderr, "bpfprof: debuginfod: fetching debug info for %s...\n", dbgd.what);
		dbgd.said = true;
	}
	return 0;
}

/* 4: debuginfod, the servers of DEBUGINFOD_URLS; the file's path in the client's cache into
 * *cached (malloc'd) when asked. */
static int by_debuginfod(const unsigned char *id, size_t len, const char *path, char **cached)
{
	__u64 budget_left = DEBUGINFOD_BUDGET_NS - dbgd.spent_ns, took;
	const char *urls = getenv("DEBUGINFOD_URLS");
	enum file_refusal why;
	char *found = NULL;
	struct stat st;
	int fd;

	if (dbgd.off || dbgd.gave_up || !urls || !urls[0])
		return -ENOENT;
	if (!dbgd.client) {
		dbgd.client = load_libdebuginfod() ? libdbgd.begin() : NULL;
		if (!dbgd.client) {
			dbgd.gave_up = true;
			return -ENOENT;
		}
		libdbgd.set_progressfn(dbgd.client, debuginfod_progress);
	}
	dbgd.started_ns = now_ns();
	dbgd.deadline_ns = dbgd.started_ns +
			   (budget_left < DEBUGINFOD_LOOKUP_NS ? budget_left : DEBUGINFOD_LOOKUP_NS);
	dbgd.what = path ? path : "a file";
	dbgd.said = false;
	fd = libdbgd.find_debuginfo(dbgd.client, id, len, &found);
	took = now_ns() - dbgd.started_ns;
	dbgd.spent_ns += took;
	if (dbgd.said)
		fprintf(stderr, "bpfprof: debuginfod: %s for %s after %.1f s\n",
			fd >= 0 ? "got debug info" : "no debug info", dbgd.what, took / 1e9);
	if (dbgd.spent_ns >= DEBUGINFOD_BUDGET_NS || (fd < 0 && now_ns() >= dbgd.deadline_ns)) {
		fprintf(stderr, "bpfprof: debuginfod: giving up for this run (%.0f s spent; "
			"--no-debuginfod skips it)\n", dbgd.spent_ns / 1e9);
		dbgd.gave_up = true;
	}
	p_info("debuginfod: %s for %s: %s", fd >= 0 ? "found" : "no debug info", dbgd.what,
	       fd >= 0 ? found : strerror(-fd));
	/* from the client's cache: checked as every other candidate is */
	if (fd >= 0 && untrusted_check(fd, FILE_DEBUG, &root_tree, &st, &why)) {
		untrusted_refused(FILE_DEBUG, found ? found : dbgd.what, why);
		close(fd);
		fd = -EPERM;
	}
	if (fd >= 0 && cached) {
		*cached = found;
		found = NULL;
	}
	free(found);
	if (fd < 0) {
		dbgd.missed++;
		return fd;
	}
	dbgd.found++;
	return fd;
}

int debuginfo_open(Elf *elf, const char *path, uid_t owner)
{
	unsigned char id[BUILD_ID_MAX];
	int len = elf_build_id(elf, id, sizeof(id)), fd = -ENOENT;

	if (len > 0)
		fd = by_build_id(id, len);
	if (fd < 0 && len > 0)
		fd = by_perf_cache(id, len);
	if (fd < 0)
		fd = by_debuglink(elf, path, owner);
	if (fd < 0 && len > 0)
		fd = by_debuginfod(id, len, path, NULL);
	return fd;
}

/* Whether the ELF file at fd has the build-id (when id is given: the running kernel's) and
 * DWARF of its own.  Closes fd. */
static bool vmlinux_fits(int fd, const unsigned char *id, size_t len)
{
	unsigned char got[BUILD_ID_MAX];
	Elf *elf = fd >= 0 ? untrusted_elf(fd) : NULL;
	bool ok = elf && elf_kind(elf) == ELF_K_ELF;

	if (ok && id)
		ok = elf_build_id(elf, got, sizeof(got)) == (int)len && !memcmp(got, id, len);
	ok = ok && (find_section(elf, ".debug_info") || find_section(elf, ".zdebug_info"));
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ok;
}

int kernel_debuginfo_find(const char *release, const char *build_id, char *path, size_t size)
{
	unsigned char id[BUILD_ID_MAX];
	size_t len = 0;
	char *cached = NULL;
	int fd;

	/* the hex build-id of /sys/kernel/notes, as bytes */
	for (; build_id && build_id[2 * len] && build_id[2 * len + 1] && len < sizeof(id); len++) {
		unsigned int b;

		if (sscanf(build_id + 2 * len, "%2x", &b) != 1)
			return -EINVAL;
		id[len] = b;
	}
	for (int i = 0; i < 4; i++) {
		if (i == 0 && !len)
			continue;
		if (i == 0)
			snprintf(path, size, "%s/.build-id/%02x/%s.debug", get_debug_root(), id[0],
				 build_id + 2);
		else if (i == 1)
			snprintf(path, size, "%s/boot/vmlinux-%s", get_debug_root(), release);
		else if (i == 2)
			snprintf(path, size, "%s/lib/modules/%s/vmlinux", get_debug_root(), release);
		else
			snprintf(path, size, "/lib/modules/%s/build/vmlinux", release);
		/* a missing file is the common case: not a refusal to name */
		if (access(path, F_OK))
			continue;
		if (vmlinux_fits(open_candidate(path, &root_tree, NULL), len ? id : NULL, len))
			return 0;
	}
	if (!len)
		return -ENOENT;
	fd = by_debuginfod(id, len, "the kernel", &cached);
	if (fd >= 0 && !cached) {
		close(fd);
		fd = -ENOENT;
	}
	if (fd >= 0 && vmlinux_fits(fd, id, len)) {
		snprintf(path, size, "%s", cached);
		free(cached);
		return 0;
	}
	free(cached);
	return -ENOENT;
}

void debuginfo_stats(int *found, int *missed)
{
	*found = dbgd.found;
	*missed = dbgd.missed;
}
