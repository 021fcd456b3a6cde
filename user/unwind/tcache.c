/* The persistent unwind-table cache (unwind/tcache.h).
 *
 * Layout of a cache file: struct cache_hdr, then nr_rows struct unw_row.  Written to a temporary
 * name in the directory and renamed into place, so a reader (another run) sees a whole file or
 * none.  Read back with the same distrust as a file another user wrote (sym/untrusted.c): no
 * symbolic link followed, a regular file of ours only, its size bounded by the largest table and
 * equal to what its header says, the checksum and the rows' order verified before the BPF side
 * ever searches them. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include "core/common.h"
#include "sym/syms.h"
#include "sym/untrusted.h"
#include "unwind/cfi.h"
#include "unwind/tcache.h"

#define CACHE_MAGIC   "BPFPUNW"
/* UNW_CACHE_VERSION (tcache.h) is bumped on any change of struct cache_hdr, struct unw_row or
 * what cfi.c puts in rows.  It is in the file names too: two bpfprof versions sharing the
 * directory (a fleet agent and a newer one run by hand) would otherwise each reject and rewrite
 * the other's tables, building every table at every start; this way each keeps its own, and the
 * other's age out by the size bound. */
#define CACHE_VERSION UNW_CACHE_VERSION
#define CACHE_SUFFIX  UNW_CACHE_SUFFIX

struct cache_hdr {
	char magic[8];
	__u32 version;
	__u32 row_size;           /* sizeof(struct unw_row): a foreign layout is rejected */
	char key[UNW_CACHE_KEY_MAX]; /* NUL-terminated; must match the file's name */
	__u64 nr_rows;
	__u64 fdes, unsupported;
	__u32 source;             /* index in sources[] */
	__u32 pad;
	__u64 checksum;           /* of the header (this field 0) and the rows */
	/* build-id keys: the file the rows were built from (struct unw_cache_key); 0 otherwise */
	__u64 ident[7];
	__u64 cfi_hash;
};

static const char *const sources[] = { ".eh_frame", ".debug_frame", "debug file .debug_frame" };

struct unw_cache {
	char dir[4096];
	int dfd;
	__u64 max_bytes;
	/* the directory's size as the last scan found it plus what this run stored since: a scan
	 * (a readdir and a stat per file) runs only when that passes the bound */
	__u64 total;
	bool scanned;
	pthread_mutex_t lock; /* total, scanned, eviction: the worker and the main thread store */
	struct unw_cache_stats st; /* updated atomically: the unwinder's worker and main thread */
};

const char *unw_cache_default_dir(char *buf, size_t size)
{
	const char *xdg = getenv("XDG_CACHE_HOME");

	if (xdg && xdg[0] == '/')
		snprintf(buf, size, "%s/bpfprof", xdg);
	else
		snprintf(buf, size, "/var/cache/bpfprof");
	return buf;
}

/* Ours, and no one else may write it: the only directory and files the cache trusts. */
static const char *refusal(const struct stat *st, bool dir)
{
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return dir ? "not a directory" : "not a regular file";
	if (st->st_uid != geteuid())
		return "owned by another user";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	return NULL;
}

struct unw_cache *unw_cache__open(const char *dir, __u64 max_bytes, char *why, size_t size)
{
	struct unw_cache *c = calloc(1, sizeof(*c));
	const char *bad;
	struct stat st;
	int err;

	if (!c)
		return NULL;
	c->dfd = -1;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->lock, NULL);
	if (dir)
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
	else
		unw_cache_default_dir(c->dir, sizeof(c->dir));
	if (dir == NULL && getenv("XDG_CACHE_HOME") && getenv("XDG_CACHE_HOME")[0] == '/')
		mkdir(getenv("XDG_CACHE_HOME"), 0700); /* the XDG directory itself may not exist yet */
	if (mkdir(c->dir, 0700) && errno != EEXIST) {
		err = -errno;
		snprintf(why, size, "cannot create %s: %s", c->dir, strerror(-err));
		goto fail;
	}
	c->dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->dfd < 0) {
		err = -errno;
		/* O_NOFOLLOW|O_DIRECTORY on a link: ELOOP, or ENOTDIR on some kernels */
		if (err == -ELOOP || (err == -ENOTDIR && !lstat(c->dir, &st) && S_ISLNK(st.st_mode)))
			err = -EPERM;
		snprintf(why, size, "%s %s: %s", c->dir, err == -EPERM ? "not used" : "cannot be opened",
			 err == -EPERM ? "a symbolic link" : strerror(-err));
		goto fail;
	}
	if (fstat(c->dfd, &st)) {
		err = -errno;
		snprintf(why, size, "cannot stat %s: %s", c->dir, strerror(-err));
		goto fail;
	}
	bad = refusal(&st, true);
	if (bad) {
		err = -EPERM;
		snprintf(why, size, "%s not used: %s", c->dir, bad);
		goto fail;
	}
	return c;
fail:
	unw_cache__free(c);
	errno = -err;
	return NULL;
}

void unw_cache__free(struct unw_cache *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const char *unw_cache__dir(const struct unw_cache *c)
{
	return c->dir;
}

void unw_cache__stats(const struct unw_cache *c, struct unw_cache_stats *out)
{
	out->hits = __atomic_load_n(&c->st.hits, __ATOMIC_RELAXED);
	out->misses = __atomic_load_n(&c->st.misses, __ATOMIC_RELAXED);
	out->stores = __atomic_load_n(&c->st.stores, __ATOMIC_RELAXED);
	out->rejected = __atomic_load_n(&c->st.rejected, __ATOMIC_RELAXED);
	out->evicted = __atomic_load_n(&c->st.evicted, __ATOMIC_RELAXED);
}

static void count(__u64 *v)
{
	__atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
}

/* A file of the directory opened for reading if it is one we could trust: a regular file (no
 * link followed, no FIFO waited on), ours, written by no one else, of min to max bytes.  The fd,
 * -ENOENT, or -EBADMSG for one that is not. */
static int open_entry(struct unw_cache *c, const char *name, __u64 min, __u64 max, struct stat *st)
{
	int fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EBADMSG; /* a link (ELOOP), a FIFO... */
	if (fstat(fd, st) || refusal(st, false) || (__u64)st->st_size < min ||
	    (__u64)st->st_size > max) {
		close(fd);
		return -EBADMSG;
	}
	return fd;
}

static __u64 hash(__u64 h, const void *p, size_t len);

/* A hash of the call-frame sections' bytes: a build-id names a build, not the bytes after it
 * (a binary patched or corrupted in place keeps its build-id and size). */
static __u64 cfi_sections_hash(Elf *elf)
{
	__u64 h = 0xcbf29ce484222325ULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    (strcmp(name, ".eh_frame") && strcmp(name, ".debug_frame") &&
		     strcmp(name, ".eh_frame_hdr")))
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			return 0;
		h = hash(h ^ sh.sh_offset, d->d_buf, d->d_size);
	}
	return h;
}

int unw_cache_key(int fd, struct unw_cache_key *key)
{
	unsigned char id[64];
	struct stat st;
	int n = -ENOENT;

	memset(key, 0, sizeof(*key));
	key->fd = -1;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* a build-id names the content only when no one but root could have written the file:
	 * any user can give their binary libc's build-id and other CFI */
	if (st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		Elf *elf = untrusted_elf(fd);

		n = elf ? elf_build_id(elf, id, sizeof(id)) : -ENOENT;
		elf_end(elf);
	}
	if (n > 0 && (size_t)n * 2 + 24 < sizeof(key->name)) {
		int k = snprintf(key->name, sizeof(key->name), "b-");

		for (int i = 0; i < n; i++)
			k += snprintf(key->name + k, sizeof(key->name) - k, "%02x", id[i]);
		snprintf(key->name + k, sizeof(key->name) - k, "-%llx", (unsigned long long)st.st_size);
		key->fd = fd;
		key->ident[0] = st.st_dev;
		key->ident[1] = st.st_ino;
		key->ident[2] = st.st_size;
		key->ident[3] = st.st_mtim.tv_sec;
		key->ident[4] = st.st_mtim.tv_nsec;
		key->ident[5] = st.st_ctim.tv_sec;
		key->ident[6] = st.st_ctim.tv_nsec;
		return 0;
	}
	snprintf(key->name, sizeof(key->name), "f-%llx-%llx-%llx-%llx.%lx",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec,
		 (unsigned long)st.st_mtim.tv_nsec);
	return 0;
}

void unw_cache_key_name(struct unw_cache_key *key, const char *name)
{
	memset(key, 0, sizeof(*key));
	key->fd = -1;
	snprintf(key->name, sizeof(key->name), "%s", name);
}

/* The hash of a build-id key's call-frame sections, computed once (0 when they cannot be read:
 * nothing is then taken from or stored in the cache under the key). */
static __u64 key_cfi_hash(struct unw_cache_key *key)
{
	Elf *elf;

	if (key->cfi_hash || key->fd < 0)
		return key->cfi_hash;
	elf = untrusted_elf(key->fd);
	key->cfi_hash = elf ? cfi_sections_hash(elf) : 0;
	elf_end(elf);
	return key->cfi_hash;
}

static __u64 mix(__u64 h, __u64 w)
{
	h = (h ^ w) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

/* 64-bit FNV-1a-like mixing over 8-byte words, in four lanes folded at the end: one lane waited
 * on its multiply at every word (a third of reading cc1's 3.4 MB table back).  Each step is a
 * bijection of the lane for a given word, and the fold of each lane, so a corrupt byte anywhere
 * changes the result. */
static __u64 hash(__u64 h, const void *p, size_t len)
{
	const unsigned char *b = p;
	__u64 l[4] = { h, h + 1, h + 2, h + 3 };

	for (; len >= 32; len -= 32, b += 32) {
		__u64 w[4];

		memcpy(w, b, 32);
		for (int i = 0; i < 4; i++)
			l[i] = mix(l[i], w[i]);
	}
	for (int i = 0; i < 4; i++)
		h = mix(h, l[i]);
	for (; len >= 8; len -= 8, b += 8) {
		__u64 w;

		memcpy(&w, b, 8);
		h = mix(h, w);
	}
	for (; len; len--, b++)
		h = (h ^ *b) * 0x100000001b3ULL;
	return h;
}

static __u64 checksum(const struct cache_hdr *h, const struct unw_row *rows, size_t nr)
{
	struct cache_hdr copy = *h;

	copy.checksum = 0;
	return hash(hash(0xcbf29ce484222325ULL, &copy, sizeof(copy)), rows, nr * sizeof(*rows));
}

/* The shape the BPF search and walk rely on: sorted pcs, known rule types, the end row.  Without
 * a branch a row: 430k of them in cc1's table. */
static bool rows_valid(const struct unw_row *rows, size_t nr)
{
	bool bad = false;

	for (size_t i = 0; i < nr; i++)
		bad |= (UNW_ROW_CFA(rows[i].type) > UNW_CFA_SP_RA_RDI) |
		       (UNW_ROW_FP(rows[i].type) > UNW_FP_UNDEFINED) |
		       (i > 0 && rows[i].pc < rows[i - 1].pc);
	return !bad && UNW_ROW_CFA(rows[nr - 1].type) == UNW_CFA_NONE;
}

static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	/* a name in the directory, nothing else: unw_cache_key() writes [a-z0-9.-] only */
	return n && n < UNW_CACHE_KEY_MAX - sizeof(CACHE_SUFFIX) && !strchr(key, '/') && key[0] != '.';
}

static int read_full(int fd, void *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EBADMSG;
		buf = (char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int store(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows);

/* Whether the header's table was built from key's file as it is: the same identity (no write
 * since: the ctime would have moved), or the same call-frame bytes by hash (the file replaced by
 * an identical one, e.g. a package reinstalled; *moved is set so the header learns the new
 * identity).  Keys of a name alone carry no file: their name is the whole identity. */
static bool same_source(const struct cache_hdr *h, struct unw_cache_key *key, bool *moved)
{
	if (key->fd < 0)
		return true;
	if (!h->cfi_hash)
		return false;
	if (!memcmp(h->ident, key->ident, sizeof(h->ident)))
		return true;
	*moved = key_cfi_hash(key) == h->cfi_hash;
	return *moved;
}

int unw_cache__get(struct unw_cache *c, struct unw_cache_key *key, struct cfi_rows *out)
{
	char name[UNW_CACHE_KEY_MAX + 8];
	struct cache_hdr h;
	struct stat st;
	size_t len;
	void *rows = MAP_FAILED;
	bool moved = false;
	int fd, err;

	memset(out, 0, sizeof(*out));
	if (!key_ok(key->name))
		return -EINVAL;
	snprintf(name, sizeof(name), "%s" CACHE_SUFFIX, key->name);
	fd = open_entry(c, name, sizeof(h),
			sizeof(h) + (__u64)UNWIND_MAX_TABLE_ROWS * sizeof(struct unw_row), &st);
	if (fd == -ENOENT) {
		count(&c->st.misses);
		return fd;
	}
	err = -EBADMSG;
	if (fd < 0)
		goto reject;
	if (read_full(fd, &h, sizeof(h), 0))
		goto reject;
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(CACHE_MAGIC)) || h.version != CACHE_VERSION ||
	    h.row_size != sizeof(struct unw_row) || memchr(h.key, 0, sizeof(h.key)) == NULL ||
	    strcmp(h.key, key->name) || h.nr_rows < 1 || h.nr_rows > UNWIND_MAX_TABLE_ROWS ||
	    (__u64)st.st_size != sizeof(h) + h.nr_rows * sizeof(struct unw_row) ||
	    h.source >= sizeof(sources) / sizeof(sources[0]))
		goto reject;
	/* A header of other bytes under the same build-id and size (a binary patched in place, or
	 * a flipped bit in the header, which the checksum below would catch): not this file's
	 * table, which the caller builds and stores over it. */
	if (!same_source(&h, key, &moved)) {
		count(&c->st.misses);
		err = -ENOENT;
		goto cleanup;
	}
	/* The file mapped, not read into memory of ours: no page of it faulted, zeroed and copied
	 * into (the pages are the page cache's), half of reading cc1's table back.  Checked as
	 * mapped; cache files are replaced by rename, never written in place. */
	len = st.st_size;
	rows = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (rows == MAP_FAILED) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (memcmp(rows, &h, sizeof(h)) ||
	    checksum(&h, (struct unw_row *)((char *)rows + sizeof(h)), h.nr_rows) != h.checksum ||
	    !rows_valid((struct unw_row *)((char *)rows + sizeof(h)), h.nr_rows))
		goto reject;
	futimens(fd, NULL); /* eviction takes the least recently used first */
	out->rows = (struct unw_row *)((char *)rows + sizeof(h));
	out->nr = h.nr_rows;
	out->map_len = len;
	out->map_off = sizeof(h);
	out->fdes = h.fdes;
	out->unsupported = h.unsupported;
	out->source = sources[h.source];
	out->cached = true;
	rows = MAP_FAILED;
	count(&c->st.hits);
	if (moved)
		store(c, key, out); /* the next run takes it by identity, unhashed */
	err = 0;
	goto cleanup;
reject:
	/* corrupt, truncated, foreign or not ours: never trusted, rebuilt and replaced */
	count(&c->st.rejected);
	p_info("unwind cache: %s/%s rejected (corrupt or not ours); rebuilding the table", c->dir,
	       name);
	unlinkat(c->dfd, name, 0);
	err = -EBADMSG;
cleanup:
	if (rows != MAP_FAILED)
		munmap(rows, len);
	if (fd >= 0)
		close(fd);
	return err;
}

static int write_full(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

struct entry {
	char name[UNW_CACHE_KEY_MAX + 32];
	__u64 size;
	struct timespec mtime;
};

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

/* Removes the least recently used files until the directory is within its bound; under lock. */
static void evict(struct unw_cache *c)
{
	struct entry *e = NULL, *tmp;
	size_t nr = 0, cap = 0;
	__u64 total = 0;
	struct dirent *d;
	DIR *dir;
	int fd = openat(c->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((d = readdir(dir))) {
		struct stat st;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..") ||
		    strlen(d->d_name) >= sizeof(e->name) ||
		    fstatat(c->dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (d->d_name[0] == '.') {
			/* a temporary file: another run's being written, or one left by a crash */
			if (st.st_mtim.tv_sec + 600 < time(NULL))
				unlinkat(c->dfd, d->d_name, 0);
			continue;
		}
		if (nr == cap) {
			cap = cap ? cap * 2 : 64;
			tmp = realloc(e, cap * sizeof(*e));
			if (!tmp)
				goto out;
			e = tmp;
		}
		snprintf(e[nr].name, sizeof(e[nr].name), "%s", d->d_name);
		e[nr].size = st.st_blocks * 512ULL > (__u64)st.st_size ? st.st_blocks * 512ULL : (__u64)st.st_size;
		e[nr].mtime = st.st_mtim;
		total += e[nr].size;
		nr++;
	}
	c->total = total;
	c->scanned = true;
	if (total <= c->max_bytes)
		goto out;
	qsort(e, nr, sizeof(*e), by_age);
	for (size_t i = 0; i < nr && total > c->max_bytes; i++) {
		if (unlinkat(c->dfd, e[i].name, 0))
			continue;
		total -= e[i].size;
		c->total = total;
		count(&c->st.evicted);
		p_info("unwind cache: evicted %s (least recently used; the cache holds %llu MB at most)",
		       e[i].name, (unsigned long long)(c->max_bytes >> 20));
	}
out:
	closedir(dir);
	free(e);
}

/* Writes a file of the directory, a then b, under a temporary name renamed into place (a reader
 * sees the whole file or none), then evicts beyond the bound: 0 or -errno. */
static int write_entry(struct unw_cache *c, const char *name, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	char tmp[UNW_CACHE_KEY_MAX + 64];
	int fd, err;

	snprintf(tmp, sizeof(tmp), ".%.*s.%d.%lx", UNW_CACHE_KEY_MAX, name, getpid(),
		 (unsigned long)syscall(SYS_gettid));
	fd = openat(c->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_full(fd, a, alen);
	err = err ?: write_full(fd, b, blen);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(c->dfd, tmp, c->dfd, name))
		err = -errno;
	if (err) {
		unlinkat(c->dfd, tmp, 0);
		return err;
	}
	pthread_mutex_lock(&c->lock);
	c->total += alen + blen;
	if (!c->scanned || c->total > c->max_bytes)
		evict(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Writes rows under key: 0 or -errno. */
static int store(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows)
{
	char name[UNW_CACHE_KEY_MAX + 8];
	struct cache_hdr h = { .magic = CACHE_MAGIC };
	size_t src;

	if (!key_ok(key->name) || !rows->nr || rows->nr > UNWIND_MAX_TABLE_ROWS)
		return -EINVAL;
	/* a build-id key's rows are taken later by what they were built from */
	if (key->fd >= 0) {
		h.cfi_hash = key_cfi_hash(key);
		if (!h.cfi_hash)
			return -EINVAL;
		memcpy(h.ident, key->ident, sizeof(h.ident));
	}
	for (src = 0; src < sizeof(sources) / sizeof(sources[0]); src++)
		if (rows->source && !strcmp(rows->source, sources[src]))
			break;
	if (src == sizeof(sources) / sizeof(sources[0]))
		return -EINVAL;
	if ((__u64)(sizeof(h) + rows->nr * sizeof(*rows->rows)) > c->max_bytes)
		return -E2BIG;
	h.version = CACHE_VERSION;
	h.row_size = sizeof(struct unw_row);
	snprintf(h.key, sizeof(h.key), "%s", key->name);
	h.nr_rows = rows->nr;
	h.fdes = rows->fdes;
	h.unsupported = rows->unsupported;
	h.source = src;
	h.checksum = checksum(&h, rows->rows, rows->nr);
	snprintf(name, sizeof(name), "%s" CACHE_SUFFIX, key->name);
	return write_entry(c, name, &h, sizeof(h), rows->rows, rows->nr * sizeof(*rows->rows));
}

int unw_cache__put(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows)
{
	int err = store(c, key, rows);

	if (!err)
		count(&c->st.stores);
	return err;
}

/* A file of the cache's besides the tables: its content after this header, which names it. */
struct file_hdr {
	char magic[8];
	char name[UNW_CACHE_KEY_MAX];
	__u64 len;
	__u64 checksum; /* of the header (this field 0) and the content */
};
#define FILE_MAGIC "BPFPFIL"

static __u64 file_checksum(const struct file_hdr *h, const void *buf)
{
	struct file_hdr copy = *h;

	copy.checksum = 0;
	return hash(hash(0xcbf29ce484222325ULL, &copy, sizeof(copy)), buf, h->len);
}

int unw_cache__read_file(struct unw_cache *c, const char *name, size_t max, void **buf,
			 size_t *len)
{
	struct file_hdr h;
	struct stat st;
	void *b = NULL;
	int fd, err;

	*buf = NULL;
	if (!key_ok(name))
		return -EINVAL;
	fd = open_entry(c, name, sizeof(h), sizeof(h) + (__u64)max, &st);
	if (fd == -ENOENT)
		return fd;
	err = -EBADMSG;
	if (fd < 0 || read_full(fd, &h, sizeof(h), 0) || memcmp(h.magic, FILE_MAGIC, sizeof(FILE_MAGIC)) ||
	    strncmp(h.name, name, sizeof(h.name)) || h.len != (__u64)st.st_size - sizeof(h))
		goto reject;
	b = malloc(h.len ?: 1);
	if (!b) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (read_full(fd, b, h.len, sizeof(h)) || file_checksum(&h, b) != h.checksum)
		goto reject;
	futimens(fd, NULL); /* eviction takes the least recently used first */
	*buf = b;
	*len = h.len;
	b = NULL;
	err = 0;
	goto cleanup;
reject:
	count(&c->st.rejected);
	p_info("cache: %s/%s rejected (corrupt or not ours); made again", c->dir, name);
	unlinkat(c->dfd, name, 0);
cleanup:
	free(b);
	if (fd >= 0)
		close(fd);
	return err;
}

int unw_cache__write_file(struct unw_cache *c, const char *name, const void *buf, size_t len)
{
	struct file_hdr h = { .magic = FILE_MAGIC, .len = len };

	if (!key_ok(name) || sizeof(h) + len > c->max_bytes)
		return -EINVAL;
	snprintf(h.name, sizeof(h.name), "%s", name);
	h.checksum = file_checksum(&h, buf);
	return write_entry(c, name, &h, sizeof(h), buf, len);
}
