/* Per-process symbolization.  A process is a snapshot of its executable mappings; each mapped
 * file is opened once (through /proc/PID/map_files, which works after deletion and across mount
 * namespaces) and that fd is shared by every process mapping the same (dev, inode), so samples can
 * be symbolized after the process exits.  Symbol tables are parsed at the first address that
 * needs them and shared too.  Every string handed out lives until syms_cache__free. */
#include <elf.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "core/grow.h"
#include "core/hashtab.h"
#include "core/sorted.h"
#include "sym/syms.h"

#define REFRESH_INTERVAL_NS 1000000000ULL
/* A file no process maps is kept, parsed, for this many sweeps (one a drain, about a second):
 * under churn the same few programs (a compiler's passes, ls) start again and again, each time
 * after the last one exited. */
#define FILE_IDLE_SWEEPS 10
/* And for this many times the CPU time its symbols took to parse (at most FILE_KEEP_MAX_NS): a
 * program that comes back costs at most 1/20000 of a CPU parsing it again.  Ten sweeps were 10-20
 * s; libLLVM's 17 ms parse (clang run now and then) cost a live view up to a third of its CPU. */
#define FILE_KEEP_PER_PARSE_NS 20000
#define FILE_KEEP_MAX_NS (300 * 1000000000ULL)
/* Parsed symbols held at most, beyond those of the files looked up in the last FILE_IDLE_SWEEPS
 * sweeps: the least recently looked-up files' go first, mapped or not, and are parsed again if a
 * lookup needs them (the frame memo answers most addresses without one).  Under process churn on
 * a machine running compilers, the symbols of every program seen lately (libLLVM's 3.5 MB,
 * libclang-cpp's 2.9, cc1plus's 2.2...) grew a run's RSS from 7 to 27 MB and more. */
#define SYMS_BUDGET_BYTES (8 << 20)
#define DELETED_SUFFIX " (deleted)"
/* Mappings a forked child's array has room for beyond its parent's (syms_cache__record_fork) */
#define FORK_MAPS_ROOM 16


/* ---- files, processes ---- */
struct dso {
	__u64 dev;
	__u64 ino;
	int fd;              /* -1 when it could not be opened: parsed by path then */
	char *path;          /* as the first process to map it saw it, without " (deleted)" */
	struct elf_syms *es; /* NULL until parsed, or when not an ELF */
	bool parsed;
	bool deleted;        /* mapped as " (deleted)": not on disk under that name */
	bool mapped;         /* syms_cache__sweep_files(): some process still maps it */
	unsigned idle;       /* sweeps in a row that found no process mapping it */
	__u64 idle_since_ns; /* when the first of them found none */
	__u64 parse_ns;      /* the CPU time its symbols took to parse */
	size_t sym_bytes;    /* what its parsed symbols hold */
	__u64 used;          /* the sweep (syms_cache.sweeps) of its last lookup */
	struct dso *next;    /* next dso with the same inode number */
	__u64 serial;        /* syms_cache__file_at(): never another dso's, even once freed */
};

enum map_kind { MAP_FILE, MAP_VDSO, MAP_ANON, MAP_SPECIAL };

struct mapping {
	__u64 start;
	__u64 end;
	__u64 pgoff;
	enum map_kind kind;
	struct dso *dso;    /* MAP_FILE */
	const char *module; /* MAP_SPECIAL: "[vsyscall]"... */
};

struct proc {
	__u32 tgid;
	bool gone;            /* exited (or its pid now belongs to another process) */
	bool exit_told;       /* its exit was told (syms_cache__exited): forgotten at the next
			       * syms_cache__forget(), or replaced if its pid is announced again */
	bool refreshed;       /* refreshed on a miss since the last explicit snapshot */
	__u64 start_time;     /* /proc/PID/stat field 22: tells pid reuse apart */
	__u64 last_refresh_ns;
	bool revisit;         /* snapshotted once, early: look again (syms_cache__revisit) */
	struct mapping *maps; /* sorted, disjoint */
	size_t nr_maps;
	size_t maps_cap;      /* room in maps */
	struct perf_map *pm;
	struct perf_map **old_pms; /* replaced maps: their names may still be in use */
	size_t nr_old_pms;
	struct stat pm_st;         /* of the loaded map: reload only when it changed */
	bool pm_refused;           /* its map was refused, and counted */
	/* Told by mmap records since its exec, or since a /proc read while records are read (or
	 * a fork of such a process): its mappings are complete without reading /proc again, and
	 * stay known after it exits (sym/mmaprec.h). */
	bool tracked;
	__u64 born_ns;             /* the record (fork, exec) that made it this program */
	bool execed;               /* born_ns is an exec's */
	char jit_module[32];  /* "[JIT] tid N", made with its first perf map */
};

struct syms_cache {
	struct hashtab procs;     /* tgid -> proc */
	struct hashtab dsos;      /* inode -> dso chain */
	struct hashtab demangled; /* raw name pointer -> display name (itself when not C++) */
	struct proc *last;       /* frames of one stack share a tgid */
	struct elf_syms *vdso;
	bool vdso_tried;
	bool nofile_raised;
	bool exits_told;          /* syms_cache__forget() follows every exit: no pid is reused under us */
	bool records;             /* mmap records tell of new processes (syms_cache__records_on) */
	bool records_monotonic;   /* their times are CLOCK_MONOTONIC's */
	bool records_lost;        /* some were lost: a new program under a pid may have gone untold */
	__u64 dsos_made;          /* the last dso's serial */
	__u64 sweeps;             /* syms_cache__sweep_files() calls */
	size_t syms_budget;       /* SYMS_BUDGET_BYTES, or syms_cache__set_syms_budget()'s */
	__u64 syms_evicted;       /* files' symbols freed over SYMS_BUDGET_BYTES */
	/* processes to snapshot once more, in the order they were first seen */
	__u32 *revisits;
	size_t revisit_head, nr_revisits, revisits_cap;
};

static __u64 clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static __u64 now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

struct syms_cache *syms_cache__new(void)
{
	struct syms_cache *sc = calloc(1, sizeof(struct syms_cache));

	if (sc)
		sc->syms_budget = SYMS_BUDGET_BYTES;
	return sc;
}

void syms_cache__set_syms_budget(struct syms_cache *sc, size_t bytes)
{
	sc->syms_budget = bytes;
}

/* Start time of a process in clock ticks since boot: unlike the pid, never reused. */
static int read_start_time(__u32 tgid, __u64 *start_time)
{
	char path[64], buf[1024], *p;
	int fd, i, err = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		err = -errno;
		goto cleanup;
	}
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: fields restart after the last ')' */
	p = strrchr(buf, ')');
	for (i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (!p) {
		err = -EINVAL;
		goto cleanup;
	}
	*start_time = strtoull(p + 1, NULL, 10);
cleanup:
	close(fd);
	return err;
}

/* The soft fd limit (often 1024) is low for one fd per mapped file system-wide. */
static void raise_nofile_limit(struct syms_cache *sc)
{
	struct rlimit rl;

	if (sc->nofile_raised)
		return;
	sc->nofile_raised = true;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* map_files first: the kernel's own link to the mapped file, which reaches it even when it was
 * deleted or lives in another mount namespace (needs CAP_SYS_ADMIN); then the path as the process
 * sees it, and as we do.  Another user may have put anything under that name since: only the
 * inode the process mapped is taken, never through a symlink.  A mapping told by an mmap record
 * (told) is read after it was made, when the process may have mapped another file at that range:
 * map_files must then give the record's inode (its device may differ: overlayfs shows its own),
 * and a file found by name the record's device and inode. */
static int open_mapped_file(struct syms_cache *sc, __u32 tgid, const struct mapping *m,
			    __u64 dev, __u64 ino, const char *path, bool deleted, bool told)
{
	const struct file_rules map_files = { .follow = true, .ino = told ? ino : 0 };
	const struct file_rules by_name = { .ino = ino, .dev = told ? dev : 0 };
	enum file_refusal why;
	struct stat st;
	char buf[4200];
	int fd;

	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", tgid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = untrusted_open(AT_FDCWD, buf, FILE_MAPPED, &map_files, &st, &why);
	if (fd == -EMFILE) {
		raise_nofile_limit(sc);
		fd = untrusted_open(AT_FDCWD, buf, FILE_MAPPED, &map_files, &st, &why);
	}
	/* told: the range holds another file now, which is no refusal; the name may still lead
	 * to the one mapped */
	if (told && why == FILE_NOT_MAPPED)
		why = FILE_OK;
	if (fd < 0 && !why && !deleted) {
		snprintf(buf, sizeof(buf), "/proc/%u/root%s", tgid, path);
		fd = untrusted_open(AT_FDCWD, buf, FILE_MAPPED, &by_name, &st, &why);
		if (fd < 0 && !why) {
			snprintf(buf, sizeof(buf), "%s", path);
			fd = untrusted_open(AT_FDCWD, buf, FILE_MAPPED, &by_name, &st, &why);
		}
	}
	if (why)
		untrusted_refused(FILE_MAPPED, buf, why);
	return fd;
}

static void dso_free(struct dso *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	elf_syms__free(d->es);
	free(d->path);
	free(d);
}

/* The dso of a file mapping, shared by every process that maps the same (dev, inode).  Holding
 * its fd also keeps the inode number from being reused by another file. */
static struct dso *dso_get(struct syms_cache *sc, __u32 tgid, const struct mapping *m,
			   __u64 dev, __u64 ino, const char *path, bool told)
{
	struct dso *head = hashtab_get(&sc->dsos, ino, 0), *d;
	size_t len = strlen(path), slen = strlen(DELETED_SUFFIX);
	bool deleted = len > slen && !strcmp(path + len - slen, DELETED_SUFFIX);

	for (d = head; d; d = d->next)
		if (d->dev == dev)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dev = dev;
	d->ino = ino;
	d->serial = ++sc->dsos_made;
	d->path = strndup(path, deleted ? len - slen : len);
	if (!d->path || hashtab_put(&sc->dsos, ino, 0, d)) {
		d->fd = -1;
		dso_free(d);
		return NULL;
	}
	d->next = head;
	d->deleted = deleted;
	d->fd = open_mapped_file(sc, tgid, m, dev, ino, d->path, deleted, told);
	return d;
}

static const char *special_module(const char *path)
{
	static const char *const known[] = { "[vsyscall]", "[uprobes]" };
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(path, known[i]))
			return known[i];
	return "[unknown]";
}

/* Parses one /proc/PID/maps line: "start-end perms pgoff major:minor inode   path".
 * Returns 1 for an executable mapping to keep, 0 to skip, or a negative errno. */
static int classify_mapping(struct syms_cache *sc, __u32 tgid, struct mapping *m, dev_t dev,
			    __u64 ino, const char *path, bool told);

static int parse_maps_line(struct syms_cache *sc, __u32 tgid, char *line, struct mapping *m)
{
	unsigned long major, minor;
	__u64 ino;
	char *p = line, *perms, *path;

	memset(m, 0, sizeof(*m));
	m->start = strtoull(p, &p, 16);
	if (*p++ != '-')
		return 0;
	m->end = strtoull(p, &p, 16);
	perms = p + 1;
	if (*p != ' ' || strlen(perms) < 5 || perms[2] != 'x')
		return 0;
	m->pgoff = strtoull(perms + 4, &p, 16);
	major = strtoul(p, &p, 16);
	if (*p++ != ':')
		return 0;
	minor = strtoul(p, &p, 16);
	ino = strtoull(p, &p, 10);
	while (*p == ' ' || *p == '\t')
		p++;
	path = p;
	path[strcspn(path, "\n")] = '\0';
	return classify_mapping(sc, tgid, m, makedev(major, minor), ino, path, false);
}

/* What an executable mapping [m->start, m->end) at m->pgoff is, from the name /proc (or an mmap
 * record: told) gives it. */
static int classify_mapping(struct syms_cache *sc, __u32 tgid, struct mapping *m, dev_t dev,
			    __u64 ino, const char *path, bool told)
{
	if (!strcmp(path, "[vdso]")) {
		m->kind = MAP_VDSO;
	} else if (path[0] == '[') {
		m->kind = MAP_SPECIAL;
		m->module = special_module(path);
	} else if (!path[0] || !ino) {
		m->kind = MAP_ANON;
	} else {
		m->kind = MAP_FILE;
		m->dso = dso_get(sc, tgid, m, dev, ino, path, told);
		if (!m->dso)
			return -ENOMEM;
	}
	return 1;
}

/* PROCMAP_QUERY (linux/fs.h, 6.11): one executable mapping at a time, in binary, from an ioctl
 * on /proc/PID/maps, where the text file formats every mapping (most are data) and its path.
 * Defined here for the headers of older distributions; the ABI is fixed by its size field. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#endif

/* Whether the kernel answered PROCMAP_QUERY once; cleared at the first ENOTTY (older kernels). */
static bool have_procmap_query = true;

static int grow_maps(struct mapping **maps, size_t nr, size_t *cap)
{
	return ARRAY_GROW(*maps, *cap, nr + 1);
}

/* The executable mappings through PROCMAP_QUERY; -ENOTTY where the kernel has none. */
static int query_maps(struct syms_cache *sc, __u32 tgid, int fd, struct mapping **out,
		      size_t *nr_out)
{
	struct mapping *maps = NULL;
	size_t nr = 0, cap = 0;
	char name[4096 + 16];
	__u64 addr = 0;
	int err = 0;

	for (;;) {
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA | PROCMAP_QUERY_VMA_EXECUTABLE,
			.query_addr = addr,
			.vma_name_addr = (uintptr_t)name,
			.vma_name_size = sizeof(name),
		};

		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			/* ENOENT: no mapping above addr; ESRCH: a zombie, whose memory is gone
			 * (the text file reads empty) */
			err = errno == ENOENT || errno == ESRCH ? 0 : -errno;
			break;
		}
		err = grow_maps(&maps, nr, &cap);
		if (err)
			break;
		if (!q.vma_name_size)
			name[0] = '\0';
		name[sizeof(name) - 1] = '\0';
		memset(&maps[nr], 0, sizeof(maps[nr]));
		maps[nr].start = q.vma_start;
		maps[nr].end = q.vma_end;
		maps[nr].pgoff = q.vma_offset;
		err = classify_mapping(sc, tgid, &maps[nr], makedev(q.dev_major, q.dev_minor),
				       q.inode, name, false);
		if (err < 0)
			break;
		nr += err;
		err = 0;
		addr = q.vma_end;
	}
	if (!err) {
		*out = maps;
		*nr_out = nr;
		maps = NULL;
	}
	free(maps);
	return err;
}

/* The same from the text of the file. */
static int parse_maps(struct syms_cache *sc, __u32 tgid, int fd, struct mapping **out,
		      size_t *nr_out)
{
	struct mapping *maps = NULL;
	size_t nr = 0, cap = 0, linecap = 0;
	char *line = NULL;
	FILE *f = fdopen(fd, "r");
	int err = 0;

	if (!f)
		return -errno;
	while (getline(&line, &linecap, f) > 0) {
		err = grow_maps(&maps, nr, &cap);
		if (err)
			goto cleanup;
		err = parse_maps_line(sc, tgid, line, &maps[nr]);
		if (err < 0)
			goto cleanup;
		nr += err;
	}
	err = 0;
	*out = maps;
	*nr_out = nr;
	maps = NULL;
cleanup:
	free(maps);
	free(line);
	fclose(f);
	return err;
}

/* Reads the executable mappings of a process, in address order. */
static int read_maps(struct syms_cache *sc, __u32 tgid, struct mapping **out, size_t *nr_out)
{
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (have_procmap_query) {
		err = query_maps(sc, tgid, fd, out, nr_out);
		if (err != -ENOTTY && err != -EINVAL) {
			close(fd);
			return err;
		}
		have_procmap_query = false;
	}
	return parse_maps(sc, tgid, fd, out, nr_out); /* closes fd */
}

static const struct mapping *find_mapping(const struct mapping *maps, size_t nr, __u64 addr)
{
	size_t lo = FIRST_ABOVE(maps, nr, start, addr);

	return lo && addr < maps[lo - 1].end ? &maps[lo - 1] : NULL;
}

static bool overlaps(const struct mapping *maps, size_t nr, const struct mapping *m)
{
	/* the last mapping starting before m ends is the only one that can overlap it */
	size_t lo = FIRST_AT(maps, nr, start, m->end);

	return lo && maps[lo - 1].end > m->start;
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A refresh keeps the old mappings that nothing new replaced: samples taken before a dlclose
 * (or an exec) still point into them. */
static int merge_maps(struct proc *p, struct mapping *fresh, size_t nr_fresh)
{
	struct mapping *merged;
	size_t i, nr = nr_fresh;

	merged = realloc(fresh, (nr_fresh + p->nr_maps + 1) * sizeof(*merged));
	if (!merged)
		return -ENOMEM;
	for (i = 0; i < p->nr_maps; i++)
		if (!overlaps(merged, nr_fresh, &p->maps[i]))
			merged[nr++] = p->maps[i];
	if (nr > nr_fresh)
		qsort(merged, nr, sizeof(*merged), cmp_mapping);
	free(p->maps);
	p->maps_cap = nr_fresh + p->nr_maps + 1;
	p->maps = merged;
	p->nr_maps = nr;
	return 0;
}

static bool same_file_version(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Stops using the current perf map, keeping it allocated: names from it may still be in use. */
static int proc_retire_perf_map(struct proc *p)
{
	struct perf_map **tmp;

	if (!p->pm)
		return 0;
	tmp = realloc(p->old_pms, (p->nr_old_pms + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	p->old_pms = tmp;
	p->old_pms[p->nr_old_pms++] = p->pm;
	p->pm = NULL;
	return 0;
}

/* Counts a refused map once per process, and says which file and why on stderr. */
static void note_refusal(struct proc *p, enum file_refusal why, const char *path)
{
	if (p->pm_refused)
		return;
	p->pm_refused = true;
	untrusted_refused(FILE_JIT_MAP, path, why);
}

/* Whether the process has code a JIT may have written: executable memory that is anonymous, or
 * a file that is not on disk (memfd, deleted: JITs that map their code twice).  Only those can
 * have a perf map worth reading: most processes have none, and looking costs a /proc read. */
static bool proc_may_jit(const struct proc *p)
{
	for (size_t i = 0; i < p->nr_maps; i++) {
		const struct mapping *m = &p->maps[i];

		if (m->kind == MAP_ANON)
			return true;
		if (m->kind == MAP_FILE && (!strncmp(m->dso->path, "/memfd:", 7) ||
					    m->dso->deleted))
			return true;
	}
	return false;
}

/* Loads the process's JIT map, or reloads it when the JIT appended to it since. */
static void proc_load_perf_map(struct syms_cache *sc, struct proc *p)
{
	enum file_refusal why;
	struct perf_map *pm;
	char path[96];
	struct stat st;
	int fd;

	if (!p->pm && !proc_may_jit(p))
		return;
	fd = perf_map__open(p->tgid, &st, &why, path, sizeof(path));
	if (why)
		note_refusal(p, why, path);
	if (fd < 0)
		return;
	pm = p->pm && same_file_version(&st, &p->pm_st) ? NULL : perf_map__load_fd(fd);
	if (!pm && errno == EFBIG)
		note_refusal(p, FILE_TOO_BIG, path);
	close(fd);
	if (!pm)
		return;
	if (proc_retire_perf_map(p)) {
		perf_map__free(pm);
		return;
	}
	p->pm = pm;
	p->pm_st = st;
	/* a process's name for its JIT's code, only where it has some (a new process costs a
	 * snprintf less: hundreds a second under churn) */
	if (!p->jit_module[0])
		snprintf(p->jit_module, sizeof(p->jit_module), "[JIT] tid %u", p->tgid);
}

/* Takes (explicit) or refreshes (on a miss) the snapshot of a process. */
static int proc_snapshot(struct syms_cache *sc, struct proc *p, bool explicit)
{
	struct mapping *fresh = NULL;
	__u64 start_time = 0;
	size_t nr_fresh = 0;
	int err = 0;

	/* told by mmap records: its mappings are all known, only a JIT map can be newer */
	if (p->tracked) {
		proc_load_perf_map(sc, p);
		p->refreshed = !explicit;
		p->last_refresh_ns = now_ns();
		return 0;
	}
	/* Where exits are told, a pid's process is forgotten before the pid can come back (a
	 * fifth of the cost of a new process's snapshot is reading its start time). */
	if (!sc->exits_told)
		err = read_start_time(p->tgid, &start_time);
	if (!err && p->start_time && start_time != p->start_time) {
		if (!explicit) {
			/* the pid was reused: these mappings would belong to another program */
			err = -ESRCH;
			goto cleanup;
		}
		/* told to snapshot a new process under an old pid: forget the old one */
		p->nr_maps = 0;
		err = proc_retire_perf_map(p);
		if (err)
			goto cleanup;
	}
	err = err ? err : read_maps(sc, p->tgid, &fresh, &nr_fresh);
	if (err)
		goto cleanup;
	err = merge_maps(p, fresh, nr_fresh);
	if (err)
		goto cleanup;
	fresh = NULL;
	p->start_time = start_time;
	p->gone = false;
	/* from here on its mmap records tell what it maps next (applied to a process held; one
	 * older than this read adds what the read found already): a miss is a garbage frame, no
	 * reason to read /proc again (each sampled process that existed at the start, or that
	 * forked from one and had not exec'd, was read again at its first miss and every second:
	 * a twentieth of top's CPU under churn) */
	if (sc->records && !sc->records_lost)
		p->tracked = true;
cleanup:
	if (err == -ENOENT || err == -ESRCH)
		p->gone = true;
	/* a JIT's map outlives it: load it even when the process is gone (unless the pid, and
	 * so the map's name, now belongs to another process) */
	if (err != -ESRCH)
		proc_load_perf_map(sc, p);
	p->refreshed = !explicit;
	p->last_refresh_ns = now_ns();
	free(fresh);
	return err;
}

static void proc_free(struct proc *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr_old_pms; i++)
		perf_map__free(p->old_pms[i]);
	free(p->old_pms);
	perf_map__free(p->pm);
	free(p->maps);
	free(p);
}

static struct proc *proc_new(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tgid = tgid;
	if (hashtab_put(&sc->procs, tgid, 0, p)) {
		proc_free(p);
		return NULL;
	}
	return p;
}

/* Queues a second snapshot of a process first seen now. */
static void queue_revisit(struct syms_cache *sc, struct proc *p)
{
	if (sc->revisit_head && sc->revisit_head == sc->nr_revisits)
		sc->revisit_head = sc->nr_revisits = 0;
	if (sc->nr_revisits == sc->revisits_cap) {
		size_t cap = sc->revisits_cap ? sc->revisits_cap * 2 : 64;
		__u32 *q;

		/* the queue's consumed head is reclaimed before growing it */
		if (sc->revisit_head) {
			memmove(sc->revisits, sc->revisits + sc->revisit_head,
				(sc->nr_revisits - sc->revisit_head) * sizeof(*q));
			sc->nr_revisits -= sc->revisit_head;
			sc->revisit_head = 0;
		}
		if (sc->nr_revisits == sc->revisits_cap) {
			q = realloc(sc->revisits, cap * sizeof(*q));
			if (!q)
				return; /* a process without its second snapshot: symbolized on a miss */
			sc->revisits = q;
			sc->revisits_cap = cap;
		}
	}
	sc->revisits[sc->nr_revisits++] = p->tgid;
	p->revisit = true;
}

int syms_cache__snapshot(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	if (p && p->exit_told) {
		/* with mmap records, a new program under the pid is told by its fork or exec: this
		 * is the one that exited, and what is known of it stays for its samples */
		if (sc->records && !sc->records_lost)
			return -ESRCH;
		/* announced after its exit: a new process under the pid (exec) */
		syms_cache__forget(sc, tgid);
		p = NULL;
	}
	if (!p) {
		p = proc_new(sc, tgid);
		if (!p)
			return -ENOMEM;
		queue_revisit(sc, p);
	}
	return proc_snapshot(sc, p, true);
}

void syms_cache__revisit(struct syms_cache *sc, __u64 min_age_ns)
{
	__u64 now = now_ns();

	/* the queue is in order of first sight: only its head can be due */
	while (sc->revisit_head < sc->nr_revisits) {
		struct proc *p = hashtab_get(&sc->procs, sc->revisits[sc->revisit_head], 0);

		if (p && p->revisit && !p->gone && now - p->last_refresh_ns < min_age_ns)
			break;
		sc->revisit_head++;
		if (!p || !p->revisit || p->gone)
			continue;
		p->revisit = false;
		/* Additive: mappings seen the first time stay, new ones (libraries) join them. */
		proc_snapshot(sc, p, true);
	}
}

bool syms_cache__revisits_pending(const struct syms_cache *sc)
{
	return sc->revisit_head < sc->nr_revisits;
}

/* A name handed out by a JIT map about to be freed may be a key of the demangled names: those
 * are keyed by pointer, and the memory will come back as another name. */
static void forget_demangled(struct syms_cache *sc)
{
	for (size_t i = 0; i < sc->demangled.cap; i++) {
		struct hashtab_entry *e = &sc->demangled.slots[i];

		if (e->val && e->val != (void *)(uintptr_t)e->k1)
			free(e->val);
	}
	hashtab_clear(&sc->demangled, NULL);
}

void syms_cache__exited(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	if (p)
		p->exit_told = true;
}

void syms_cache__forget_exited(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	if (p && p->exit_told)
		syms_cache__forget(sc, tgid);
}

void syms_cache__forget(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p = hashtab_del(&sc->procs, tgid, 0);

	if (!p)
		return;
	if (sc->last == p)
		sc->last = NULL;
	if (p->pm || p->nr_old_pms)
		forget_demangled(sc);
	proc_free(p);
}

/* ---- processes told by mmap records (sym/mmaprec.c) ---- */

void syms_cache__records_on(struct syms_cache *sc, bool monotonic)
{
	sc->records = true;
	sc->records_monotonic = monotonic;
}

bool syms_cache__execed_after(const struct syms_cache *sc, __u32 tgid, __u64 time)
{
	const struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	return sc->records && sc->records_monotonic && !sc->records_lost && p && p->tracked &&
	       p->execed && p->born_ns > time;
}

/* A new program under tgid: whatever was held under the pid goes (its exit was told, or missed). */
static struct proc *proc_reborn(struct syms_cache *sc, __u32 tgid, __u64 time)
{
	struct proc *p;

	syms_cache__forget(sc, tgid);
	p = proc_new(sc, tgid);
	if (p)
		p->born_ns = time;
	return p;
}

/* Adds mapping m to p: the parts of older mappings that it covers go, as mmap over them does
 * (MAP_FIXED), and the rest of them stay. */
static int proc_add_mapping(struct proc *p, const struct mapping *m)
{
	struct mapping *out, part;
	bool placed = false;
	size_t n = 0, lo = FIRST_AT(p->maps, p->nr_maps, start, m->start);

	/* most records map where nothing is (a process's libraries after its exec): m goes in
	 * between, in the room the array has, where each record made an array afresh and copied
	 * it whole */
	if ((!lo || p->maps[lo - 1].end <= m->start) &&
	    (lo == p->nr_maps || p->maps[lo].start >= m->end)) {
		if (ARRAY_GROW(p->maps, p->maps_cap, p->nr_maps + 1))
			return -ENOMEM;
		memmove(&p->maps[lo + 1], &p->maps[lo], (p->nr_maps - lo) * sizeof(*p->maps));
		p->maps[lo] = *m;
		p->nr_maps++;
		return 0;
	}
	/* one old mapping may be cut in two around m */
	out = malloc((p->nr_maps + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_maps; i++) {
		const struct mapping *old = &p->maps[i];

		if (old->end <= m->start || old->start >= m->end) {
			if (!placed && old->start >= m->end) {
				out[n++] = *m;
				placed = true;
			}
			out[n++] = *old;
			continue;
		}
		if (old->start < m->start) {
			part = *old;
			part.end = m->start;
			out[n++] = part;
		}
		if (!placed) {
			out[n++] = *m;
			placed = true;
		}
		if (old->end > m->end) {
			part = *old;
			part.pgoff += m->end - old->start;
			part.start = m->end;
			out[n++] = part;
		}
	}
	if (!placed)
		out[n++] = *m;
	free(p->maps);
	p->maps_cap = p->nr_maps + 2;
	p->maps = out;
	p->nr_maps = n;
	return 0;
}

int syms_cache__record_fork(struct syms_cache *sc, __u32 tgid, __u32 parent_tgid, __u64 time)
{
	struct proc *parent = hashtab_get(&sc->procs, parent_tgid, 0);
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);
	struct mapping *maps = NULL;
	size_t cap;

	/* a thread; or what came after the fork was told first (records of CPUs read in one
	 * batch) */
	if (tgid == parent_tgid || (p && p->born_ns > time))
		return 0;
	if (!parent) {
		/* A process that existed at the start forks (a shell's loop): read it from /proc
		 * once, while it lives, so that this child and its next ones start with its
		 * mappings: a sample taken in the exec still has the parent's code on its user
		 * stack.  Gone already, the child is read from /proc if sampled before an exec. */
		parent = proc_new(sc, parent_tgid);
		if (!parent)
			return -ENOMEM;
		if (proc_snapshot(sc, parent, true)) {
			syms_cache__forget(sc, parent_tgid);
			syms_cache__forget(sc, tgid);
			return 0;
		}
	}
	/* with room for what an exec maps next (its program, loader and libraries: copied at
	 * their size, most children's arrays were made again at their first mmap record) */
	cap = parent->nr_maps ? parent->nr_maps + FORK_MAPS_ROOM : 0;
	if (cap) {
		maps = malloc(cap * sizeof(*maps));
		if (!maps)
			return -ENOMEM;
		memcpy(maps, parent->maps, parent->nr_maps * sizeof(*maps));
	}
	p = proc_reborn(sc, tgid, time);
	if (!p) {
		free(maps);
		return -ENOMEM;
	}
	/* the child's address space is a copy of its parent's (the same files: shared dsos) */
	p->maps = maps;
	p->nr_maps = parent->nr_maps;
	p->maps_cap = cap;
	p->tracked = parent->tracked;
	return 0;
}

int syms_cache__record_exec(struct syms_cache *sc, __u32 tgid, __u64 time)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	if (p && p->born_ns > time)
		return 0;
	if (!p || p->exit_told) {
		p = proc_reborn(sc, tgid, time);
		if (!p)
			return -ENOMEM;
	} else {
		/* the old program's mappings stay where the new one maps nothing: samples taken
		 * before the exec are read later; its JIT map is not the new program's */
		if (proc_retire_perf_map(p))
			return -ENOMEM;
		p->pm_refused = false;
		p->born_ns = time;
	}
	p->tracked = true;
	p->execed = true;
	p->gone = false;
	p->revisit = false; /* a /proc snapshot queued before: not needed any more */
	return 0;
}

int syms_cache__record_mmap(struct syms_cache *sc, __u32 tgid, __u64 time,
			    const struct syms_mmap *mm)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);
	struct mapping m = { .start = mm->start, .end = mm->start + mm->len, .pgoff = mm->pgoff };
	int err;

	/* a process not held is read from /proc when it is sampled, this mapping with the rest */
	if (!p || time < p->born_ns || m.end <= m.start)
		return 0;
	err = classify_mapping(sc, tgid, &m, mm->dev, mm->ino, mm->path, true);
	return err < 0 ? err : proc_add_mapping(p, &m);
}

bool syms_cache__record_exit(struct syms_cache *sc, __u32 tgid, __u64 time)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);

	if (!p || time < p->born_ns || p->exit_told)
		return false;
	p->exit_told = true;
	p->gone = true;
	return true;
}

void syms_cache__records_lost(struct syms_cache *sc, void (*gone)(void *ctx, __u32 tgid),
			      void *ctx)
{
	sc->records_lost = true;
	for (size_t i = 0; i < sc->procs.cap; i++) {
		struct proc *p = sc->procs.slots[i].val;

		if (!p)
			continue;
		/* mappings and execs may have gone untold: misses refresh from /proc again */
		p->tracked = false;
		p->refreshed = false;
		/* and exits: a process gone is forgotten as if told */
		if (!p->exit_told && kill(p->tgid, 0) && errno == ESRCH) {
			p->exit_told = true;
			p->gone = true;
			gone(ctx, p->tgid);
		}
	}
}

/* Whether dso d, which no process maps, is kept at this sweep (its idle-th without one). */
static bool idle_kept(const struct dso *d, __u64 now)
{
	__u64 keep = d->parse_ns * FILE_KEEP_PER_PARSE_NS;

	if (d->idle < FILE_IDLE_SWEEPS)
		return true;
	/* a deleted file's space on disk is held by its fd; one without symbols (evicted, or none)
	 * costs nothing to open again */
	if (d->deleted || !d->es)
		return false;
	return now - d->idle_since_ns < (keep < FILE_KEEP_MAX_NS ? keep : FILE_KEEP_MAX_NS);
}

/* Frees the dsos of inode chain `ino` that no process maps; true when one had symbols. */
static bool sweep_chain(struct syms_cache *sc, __u64 ino, struct dso *head, __u64 now)
{
	struct dso *kept = NULL, **tail = &kept, *d, *next;
	bool freed_syms = false;

	for (d = head; d; d = next) {
		next = d->next;
		if (!d->mapped && !d->idle++)
			d->idle_since_ns = now;
		if (d->mapped || idle_kept(d, now)) {
			if (d->mapped)
				d->idle = 0;
			*tail = d;
			tail = &d->next;
			continue;
		}
		freed_syms |= d->es != NULL;
		dso_free(d);
	}
	*tail = NULL;
	if (!kept)
		hashtab_del(&sc->dsos, ino, 0);
	else if (kept != head)
		hashtab_put(&sc->dsos, ino, 0, kept); /* replaces: no allocation */
	return freed_syms;
}

static int cmp_used(const void *a, const void *b)
{
	__u64 x = (*(struct dso *const *)a)->used, y = (*(struct dso *const *)b)->used;

	return x < y ? -1 : x > y;
}

/* Frees the symbols of the files least recently looked up (none in the last FILE_IDLE_SWEEPS
 * sweeps) while all held are over the budget (SYMS_BUDGET_BYTES); true when it freed some. */
static bool evict_symbols(struct syms_cache *sc)
{
	size_t total = 0, nr = 0, n = 0, i;
	struct dso **v, *d;

	for (i = 0; i < sc->dsos.cap; i++)
		for (d = sc->dsos.slots[i].val; d; d = d->next) {
			total += d->sym_bytes;
			nr++;
		}
	if (total <= sc->syms_budget)
		return false;
	v = malloc(nr * sizeof(*v));
	if (!v)
		return false;
	for (i = 0; i < sc->dsos.cap; i++)
		for (d = sc->dsos.slots[i].val; d; d = d->next)
			if (d->es && sc->sweeps - d->used >= FILE_IDLE_SWEEPS)
				v[n++] = d;
	qsort(v, n, sizeof(*v), cmp_used);
	for (i = 0; i < n && total > sc->syms_budget; i++) {
		total -= v[i]->sym_bytes;
		elf_syms__free(v[i]->es);
		v[i]->es = NULL;
		v[i]->sym_bytes = 0;
		v[i]->parsed = false; /* parsed again at the next lookup */
		sc->syms_evicted++;
	}
	free(v);
	return i > 0;
}

size_t syms_cache__sweep_files(struct syms_cache *sc)
{
	size_t before = 0, after = 0, i;
	bool freed_syms = false;
	__u64 *inos, now = now_ns();
	struct dso *d;

	for (i = 0; i < sc->dsos.cap; i++)
		for (d = sc->dsos.slots[i].val; d; d = d->next) {
			d->mapped = false;
			before++;
		}
	for (i = 0; i < sc->procs.cap; i++) {
		struct proc *p = sc->procs.slots[i].val;

		for (size_t k = 0; p && k < p->nr_maps; k++)
			if (p->maps[k].kind == MAP_FILE)
				p->maps[k].dso->mapped = true;
	}
	/* the chains' keys first: deleting from the table while walking it would move entries */
	inos = malloc((sc->dsos.len ?: 1) * sizeof(*inos));
	if (!inos)
		return 0;
	for (i = 0, after = 0; i < sc->dsos.cap; i++)
		if (sc->dsos.slots[i].val)
			inos[after++] = sc->dsos.slots[i].k1;
	for (i = 0; i < after; i++)
		freed_syms |= sweep_chain(sc, inos[i], hashtab_get(&sc->dsos, inos[i], 0), now);
	free(inos);
	sc->sweeps++;
	freed_syms |= evict_symbols(sc);
	/* the demangled names are keyed by the raw names' pointers, which went with the symbols */
	if (freed_syms)
		forget_demangled(sc);
	return before - syms_cache__nr_files(sc);
}

static void mem_top(struct syms_cache_mem *m, const char *path, size_t bytes)
{
	const size_t nr = sizeof(m->top) / sizeof(m->top[0]);
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t i = nr, len = strlen(name);

	while (i > 0 && bytes > m->top[i - 1].bytes)
		i--;
	if (i == nr)
		return;
	memmove(&m->top[i + 1], &m->top[i], (nr - i - 1) * sizeof(m->top[0]));
	m->top[i].bytes = bytes;
	if (len >= sizeof(m->top[i].name))
		name += len - sizeof(m->top[i].name) + 1;
	strcpy(m->top[i].name, name);
}

void syms_cache__mem(const struct syms_cache *sc, struct syms_cache_mem *m)
{
	*m = (struct syms_cache_mem){};
	for (size_t i = 0; i < sc->procs.cap; i++) {
		const struct proc *p = sc->procs.slots[i].val;

		if (!p)
			continue;
		m->procs++;
		m->proc_bytes += malloc_usable_size((void *)p) + malloc_usable_size(p->maps) +
				 malloc_usable_size(p->old_pms);
		m->jit_bytes += perf_map__bytes(p->pm);
		for (size_t k = 0; k < p->nr_old_pms; k++)
			m->jit_bytes += perf_map__bytes(p->old_pms[k]);
	}
	for (size_t i = 0; i < sc->dsos.cap; i++)
		for (const struct dso *d = sc->dsos.slots[i].val; d; d = d->next) {
			m->files++;
			m->file_bytes += malloc_usable_size((void *)d) + malloc_usable_size(d->path);
			m->parsed += d->es != NULL;
			m->sym_bytes += d->sym_bytes;
			m->idle += d->idle > 0;
			m->idle_sym_bytes += d->idle ? d->sym_bytes : 0;
			mem_top(m, d->path, d->sym_bytes);
		}
	m->sym_bytes += elf_syms__bytes(sc->vdso);
	m->syms_evicted = sc->syms_evicted;
	m->index_bytes = (sc->procs.cap + sc->dsos.cap) * sizeof(struct hashtab_entry) +
			 sc->revisits_cap * sizeof(*sc->revisits);
	m->demangled_bytes = sc->demangled.cap * sizeof(struct hashtab_entry);
	for (size_t i = 0; i < sc->demangled.cap; i++) {
		const struct hashtab_entry *e = &sc->demangled.slots[i];

		if (e->val && e->val != (void *)(uintptr_t)e->k1)
			m->demangled_bytes += malloc_usable_size(e->val);
	}
}

size_t syms_cache__nr_files(const struct syms_cache *sc)
{
	size_t n = 0;

	for (size_t i = 0; i < sc->dsos.cap; i++)
		for (struct dso *d = sc->dsos.slots[i].val; d; d = d->next)
			n++;
	return n;
}

void syms_cache__exits_told(struct syms_cache *sc)
{
	sc->exits_told = true;
}

size_t syms_cache__nr_procs(const struct syms_cache *sc)
{
	return sc->procs.len;
}

/* The process, snapshotted on first sight. */
static struct proc *proc_get(struct syms_cache *sc, __u32 tgid)
{
	struct proc *p;

	if (sc->last && sc->last->tgid == tgid)
		return sc->last;
	p = hashtab_get(&sc->procs, tgid, 0);
	if (!p) {
		p = proc_new(sc, tgid);
		if (!p)
			return NULL;
		/* as fresh as it gets: no point refreshing on the first miss */
		proc_snapshot(sc, p, false);
	}
	sc->last = p;
	return p;
}

/* The first miss after an explicit snapshot refreshes at once (a dlopen since then is the
 * likely reason); after that at most once a second, since garbage frames miss every time. */
static bool proc_may_refresh(const struct proc *p)
{
	if (p->gone)
		return false;
	/* told by mmap records: a miss is a garbage frame, unless a JIT's map has it */
	if (p->tracked && !proc_may_jit(p))
		return false;
	return !p->refreshed || now_ns() - p->last_refresh_ns >= REFRESH_INTERVAL_NS;
}

/* Display name: demangled once per distinct raw name (names are stable pointers until free). */
static const char *display_name(struct syms_cache *sc, const char *raw)
{
	char *d;

	if (raw[0] != '_' || raw[1] != 'Z')
		return raw;
	d = hashtab_get(&sc->demangled, (uintptr_t)raw, 0);
	if (d)
		return d;
	d = demangle(raw);
	if (!d)
		d = (char *)raw;
	if (hashtab_put(&sc->demangled, (uintptr_t)raw, 0, d)) {
		if (d != raw)
			free(d);
		return raw;
	}
	return d;
}

static struct elf_syms *dso_syms(struct dso *d)
{
	if (!d->parsed) {
		__u64 start = clock_ns(CLOCK_THREAD_CPUTIME_ID);

		d->parsed = true;
		/* no fd: the file was refused, or gone; by its name now it could be anything */
		d->es = d->fd >= 0 ? elf_syms__open_fd(d->fd, d->path) : NULL;
		d->parse_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
		d->sym_bytes = elf_syms__bytes(d->es);
	}
	return d->es;
}

/* Size of an ELF image in memory, from the farthest header or section it describes. */
static size_t elf_image_size(const ElfW(Ehdr) *eh)
{
	const ElfW(Shdr) *sh = (const void *)((const char *)eh + eh->e_shoff);
	const ElfW(Phdr) *ph = (const void *)((const char *)eh + eh->e_phoff);
	size_t size = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
	size_t i, end;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return 0;
	if (eh->e_shoff) {
		end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
		size = end > size ? end : size;
		for (i = 0; i < eh->e_shnum; i++) {
			end = sh[i].sh_offset + sh[i].sh_size;
			if (sh[i].sh_type != SHT_NOBITS && end > size)
				size = end;
		}
	}
	for (i = 0; i < eh->e_phnum; i++) {
		end = ph[i].p_offset + ph[i].p_filesz;
		size = end > size ? end : size;
	}
	return size;
}

const void *syms_vdso_image(size_t *size)
{
	const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);

	*size = eh ? elf_image_size(eh) : 0;
	return *size ? eh : NULL;
}

/* Our own vdso: the same image is mapped into every process of this kernel and architecture. */
static struct elf_syms *vdso_syms(struct syms_cache *sc)
{
	const void *image;
	size_t size;

	if (!sc->vdso_tried) {
		sc->vdso_tried = true;
		image = syms_vdso_image(&size);
		if (image)
			sc->vdso = elf_syms__open_mem(image, size, "[vdso]");
	}
	return sc->vdso;
}

/* Looks a file offset up in a symbol table; fills out->name when found. */
static void lookup_elf(struct syms_cache *sc, struct elf_syms *es, __u64 file_off,
		       struct user_sym *out)
{
	const char *name;
	__u64 vaddr, sym_off;

	if (!elf_syms__file_offset_to_vaddr(es, file_off, &vaddr))
		return;
	name = elf_syms__find(es, vaddr, &sym_off);
	if (name)
		out->name = display_name(sc, name);
}

/* A JIT entry for addr, if the process has a perf map naming it. */
static bool lookup_jit(struct syms_cache *sc, const struct proc *p, __u64 addr,
		       struct user_sym *out)
{
	const char *name;
	__u64 sym_off;

	name = perf_map__find(p->pm, addr, &sym_off);
	if (!name)
		return false;
	out->name = display_name(sc, name);
	out->module = p->jit_module;
	out->offset = addr;
	out->build_id = NULL;
	return true;
}

/* Fills *out; returns false when addr is in no file, vdso or JIT symbol, so that a fresher
 * snapshot (new mapping, new perf-map entry) might do better. */
static bool resolve_in_proc(struct syms_cache *sc, struct proc *p, __u64 addr,
			    struct user_sym *out)
{
	const struct mapping *m = find_mapping(p->maps, p->nr_maps, addr);

	out->name = NULL;
	out->module = "[unknown]";
	out->offset = addr;
	out->build_id = NULL;
	if (m && m->kind == MAP_FILE) {
		out->module = m->dso->path;
		out->offset = addr - m->start + m->pgoff;
		m->dso->used = sc->sweeps;
		out->build_id = elf_syms__build_id(dso_syms(m->dso));
		if (dso_syms(m->dso))
			lookup_elf(sc, m->dso->es, out->offset, out);
		/* JITs that map their code from a memfd (.NET's doublemapper) name it in a perf map */
		if (!out->name && p->pm)
			lookup_jit(sc, p, addr, out);
		return true;
	}
	if (m && m->kind == MAP_VDSO) {
		out->module = "[vdso]";
		out->offset = addr - m->start; /* the image starts the mapping */
		out->build_id = elf_syms__build_id(vdso_syms(sc));
		if (vdso_syms(sc))
			lookup_elf(sc, sc->vdso, out->offset, out);
		return true;
	}
	if (lookup_jit(sc, p, addr, out))
		return true;
	if (m && m->kind == MAP_SPECIAL) {
		out->module = m->module;
		out->offset = addr - m->start;
		return true;
	}
	return false;
}

__u64 syms_cache__file_at(struct syms_cache *sc, __u32 tgid, __u64 addr, __u64 *file_off)
{
	struct proc *p = proc_get(sc, tgid);
	const struct mapping *m = p ? find_mapping(p->maps, p->nr_maps, addr) : NULL;

	/* a JIT's perf map may name what the file does not: the process decides then */
	if (!m || m->kind != MAP_FILE || p->pm)
		return 0;
	*file_off = addr - m->start + m->pgoff;
	return m->dso->serial;
}

void syms_cache__resolve(struct syms_cache *sc, __u32 tgid, __u64 addr, struct user_sym *out)
{
	struct proc *p;

	out->name = NULL;
	out->module = "[unknown]";
	out->offset = addr;
	out->build_id = NULL;
	p = proc_get(sc, tgid);
	if (!p || resolve_in_proc(sc, p, addr, out) || !proc_may_refresh(p))
		return;
	if (!proc_snapshot(sc, p, false))
		resolve_in_proc(sc, p, addr, out);
}

int syms_cache__for_each_mapping(struct syms_cache *sc, __u32 tgid,
				 int (*fn)(const struct syms_mapping *m, void *ctx), void *ctx)
{
	struct proc *p = hashtab_get(&sc->procs, tgid, 0);
	int err;

	if (!p)
		return -ENOENT;
	for (size_t i = 0; i < p->nr_maps; i++) {
		const struct mapping *m = &p->maps[i];
		struct syms_mapping sm = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .fd = -1 };

		if (m->kind == MAP_SPECIAL)
			continue;
		if (m->kind == MAP_FILE) {
			sm.dev = m->dso->dev;
			sm.ino = m->dso->ino;
			sm.fd = m->dso->fd;
			sm.path = m->dso->path;
		} else if (m->kind == MAP_VDSO) {
			sm.path = "[vdso]";
		}
		err = fn(&sm, ctx);
		if (err)
			return err;
	}
	return 0;
}

void syms_cache__release(struct syms_cache *sc)
{
	struct dso *d, *next;
	size_t i;

	for (i = 0; i < sc->procs.cap; i++)
		proc_free(sc->procs.slots[i].val);
	for (i = 0; i < sc->dsos.cap; i++) {
		for (d = sc->dsos.slots[i].val; d; d = next) {
			next = d->next;
			dso_free(d);
		}
	}
	/* A name that needed no demangling maps to itself: only the others were allocated. */
	forget_demangled(sc);
	hashtab_clear(&sc->procs, NULL);
	hashtab_clear(&sc->dsos, NULL);
	sc->last = NULL;
	free(sc->revisits);
	sc->revisits = NULL;
	sc->revisit_head = sc->nr_revisits = sc->revisits_cap = 0;
	elf_syms__free(sc->vdso);
	sc->vdso = NULL;
	sc->vdso_tried = false;
}

void syms_cache__free(struct syms_cache *sc)
{
	if (!sc)
		return;
	syms_cache__release(sc);
	free(sc);
}

size_t syms_cache__refusals(const struct syms_cache *sc, char *buf, size_t size)
{
	return untrusted_refusals(buf, size);
}
