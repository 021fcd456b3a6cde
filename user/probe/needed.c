// SPDX-License-Identifier: GPL-2.0
/* The files a program maps as it starts, found as the dynamic loader finds them (ld.so(8)): the
 * executable (or a script's interpreter), its PT_INTERP, and its DT_NEEDED libraries, breadth
 * first, each searched in the needing object's DT_RPATH (when it has no DT_RUNPATH),
 * LD_LIBRARY_PATH, its DT_RUNPATH, the ld.so cache, then the default directories.  $ORIGIN is
 * expanded; other dynamic string tokens ($LIB, $PLATFORM) are not, and such entries are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "probe/probe.h"

#define MAX_FILES 64
#define LDCACHE "/etc/ld.so.cache"

static const char *const default_dirs[] = {
#if defined(__x86_64__)
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
#elif defined(__aarch64__)
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64",
#endif
	"/lib", "/usr/lib",
};

struct found {
	char *path[MAX_FILES];
	size_t nr;
};

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* Adds path once (by name: the loader would map a file reached twice under one name once).
 * Returns 1 when added, 0 when known already or full, -ENOMEM. */
static int add_found(struct found *f, const char *path)
{
	for (size_t i = 0; i < f->nr; i++)
		if (!strcmp(f->path[i], path))
			return 0;
	if (f->nr == MAX_FILES)
		return 0;
	f->path[f->nr] = strdup(path);
	if (!f->path[f->nr])
		return -ENOMEM;
	f->nr++;
	return 1;
}

/* name in each directory of a ':'-separated list; $ORIGIN is the needing object's directory. */
static bool search_dirs(const char *list, const char *origin, const char *name, char *out,
			size_t size)
{
	while (list && *list) {
		size_t len = strcspn(list, ":");
		char dir[PATH_MAX];

		if (len >= 7 && !strncmp(list, "$ORIGIN", 7))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 7), list + 7);
		else if (len >= 9 && !strncmp(list, "${ORIGIN}", 9))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 9), list + 9);
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)len, list);
		if (!strchr(dir, '$') && (size_t)snprintf(out, size, "%s/%s", dir, name) < size &&
		    is_file(out))
			return true;
		list += len + (list[len] == ':');
	}
	return false;
}

static bool find_library(const char *name, const char *origin, const char *rpath,
			 const char *runpath, char *out, size_t size)
{
	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return is_file(out);
	}
	if (!runpath && search_dirs(rpath, origin, name, out, size))
		return true;
	if (search_dirs(getenv("LD_LIBRARY_PATH"), origin, name, out, size) ||
	    search_dirs(runpath, origin, name, out, size))
		return true;
	if (!probe_ldcache_lookup(LDCACHE, name, out, size, NULL, NULL) && is_file(out))
		return true;
	for (size_t i = 0; i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++) {
		snprintf(out, size, "%s/%s", default_dirs[i], name);
		if (is_file(out))
			return true;
	}
	return false;
}

/* The dynamic section's strings of one object: what it needs and where to look. */
static int read_dynamic(Elf *elf, struct found *f, const char *origin)
{
	const char *needed[MAX_FILES];
	const char *rpath = NULL, *runpath = NULL;
	size_t nr_needed = 0, shstr;
	Elf_Scn *scn = NULL;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstr))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_RPATH)
				rpath = s;
			else if (dyn.d_tag == DT_RUNPATH)
				runpath = s;
			else if (nr_needed < MAX_FILES)
				needed[nr_needed++] = s;
		}
		break;
	}
	for (size_t i = 0; i < nr_needed && err >= 0; i++) {
		char path[PATH_MAX];

		if (find_library(needed[i], origin, rpath, runpath, path, sizeof(path)))
			err = add_found(f, path);
	}
	return err < 0 ? err : 0;
}

/* The interpreter (PT_INTERP) and the libraries of the ELF file at path; -EINVAL when it is not
 * an ELF file. */
static int read_object(const char *path, struct found *f, bool main)
{
	char origin[PATH_MAX], interp[PATH_MAX];
	Elf *elf = NULL;
	size_t nr_ph;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nr_ph)) {
		err = -EINVAL;
		goto cleanup;
	}
	for (size_t i = 0; main && i < nr_ph; i++) {
		GElf_Phdr ph;
		size_t len;
		char *raw;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_INTERP)
			continue;
		raw = elf_rawfile(elf, &len);
		if (raw && ph.p_offset < len && ph.p_filesz < sizeof(interp) &&
		    ph.p_filesz <= len - ph.p_offset) {
			memcpy(interp, raw + ph.p_offset, ph.p_filesz);
			interp[ph.p_filesz] = '\0';
			if (is_file(interp))
				err = add_found(f, interp);
		}
	}
	snprintf(origin, sizeof(origin), "%s", path);
	*(strrchr(origin, '/') ?: origin) = '\0';
	if (err >= 0)
		err = read_dynamic(elf, f, origin[0] ? origin : ".");
cleanup:
	elf_end(elf);
	close(fd);
	return err < 0 ? err : 0;
}

/* A script runs its "#!" interpreter: that is the program whose files are mapped. */
static void script_interpreter(const char *path, char *out, size_t size)
{
	char line[PATH_MAX];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return;
	line[n] = '\0';
	snprintf(out, size, "%.*s", (int)strcspn(line + 2 + strspn(line + 2, " \t"), " \t\n"),
		 line + 2 + strspn(line + 2, " \t"));
}

int probe_program_files(const char *exe, int (*fn)(const char *path, void *ctx), void *ctx)
{
	struct found f = {};
	char interp[PATH_MAX];
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	script_interpreter(exe, interp, sizeof(interp));
	err = add_found(&f, interp[0] && is_file(interp) ? interp : exe);
	if (err < 0)
		goto cleanup;
	err = read_object(f.path[0], &f, true);
	/* breadth first: each library's own needs after the program's */
	for (size_t i = 1; !err && i < f.nr; i++)
		err = read_object(f.path[i], &f, false) == -ENOMEM ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < f.nr; i++)
		err = fn(f.path[i], ctx);
cleanup:
	for (size_t i = 0; i < f.nr; i++)
		free(f.path[i]);
	return err;
}
