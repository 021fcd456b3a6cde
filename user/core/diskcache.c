// SPDX-License-Identifier: GPL-2.0
/* The persistent cache directory (core/diskcache.h): its rules, the keys of the files it
 * describes, reading a cache file with distrust, storing one whole, and its size bound. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "core/grow.h"
#include "core/common.h"
#include "core/diskcache.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

struct disk_cache {
	char dir[4096];
	int dfd;
	int refs;
	__u64 max_bytes;
	/* the directory's size as the last scan found it plus what this run stored since: a scan
	 * (a readdir and a stat per file) runs only when that passes the bound */
	__u64 total;
	bool scanned;
	pthread_mutex_t lock; /* total, scanned, eviction: threads of the run store */
	struct disk_cache_stats st; /* updated atomically */
};

const char *disk_cache_default_dir(char *buf, size_t size)
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

struct disk_cache *disk_cache__open(const char *dir, __u64 max_bytes, char *why, size_t size)
{
	struct disk_cache *c = calloc(1, sizeof(*c));
	const char *bad;
	struct stat st;
	int err;

	if (!c)
		return NULL;
	c->dfd = -1;
	c->refs = 1;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->lock, NULL);
	if (dir)
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
	else
		disk_cache_default_dir(c->dir, sizeof(c->dir));
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
	disk_cache__put(c);
	errno = -err;
	return NULL;
}

struct disk_cache *disk_cache__get(struct disk_cache *c)
{
	__atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void disk_cache__put(struct disk_cache *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const char *disk_cache__dir(const struct disk_cache *c)
{
	return c->dir;
}

void disk_cache__stats(const struct disk_cache *c, struct disk_cache_stats *out)
{
	out->stores = __atomic_load_n(&c->st.stores, __ATOMIC_RELAXED);
	out->rejected = __atomic_load_n(&c->st.rejected, __ATOMIC_RELAXED);
	out->evicted = __atomic_load_n(&c->st.evicted, __ATOMIC_RELAXED);
}

static void count(__u64 *v)
{
	__atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
}

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
		h = disk_cache_hash(h ^ sh.sh_offset, d->d_buf, d->d_size);
	}
	return h;
}

/* The key of fd (disk_cache_key_src()), *st its stat: 1 for a build-id key, 0 for a key of the
 * file's identity, or -errno. */
static int make_key(int fd, char *key, size_t size, struct stat *st)
{
	unsigned char id[64];
	int n = -ENOENT;

	if (fstat(fd, st))
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	/* a build-id names the content only when no one but root could have written the file:
	 * any user can give their binary libc's build-id and other CFI */
	if (st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH))) {
		Elf *elf = untrusted_elf(fd);

		n = elf ? elf_build_id(elf, id, sizeof(id)) : -ENOENT;
		elf_end(elf);
	}
	if (n > 0 && (size_t)n * 2 + 40 < size) {
		int k = snprintf(key, size, "b-");

		for (int i = 0; i < n; i++)
			k += snprintf(key + k, size - k, "%02x", id[i]);
		snprintf(key + k, size - k, "-%llx", (unsigned long long)st->st_size);
		return 1;
	}
	snprintf(key, size, "f-%llx-%llx-%llx-%llx.%lx", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, (unsigned long long)st->st_size,
		 (unsigned long long)st->st_mtim.tv_sec, (unsigned long)st->st_mtim.tv_nsec);
	return 0;
}

int disk_cache_key_src(int fd, char *key, size_t size, struct disk_cache_src *src)
{
	struct stat st;
	int err;

	memset(src, 0, sizeof(*src));
	src->fd = -1;
	err = make_key(fd, key, size, &st);
	if (err <= 0)
		return err;
	src->fd = fd;
	src->ident[0] = st.st_dev;
	src->ident[1] = st.st_ino;
	src->ident[2] = st.st_size;
	src->ident[3] = st.st_mtim.tv_sec;
	src->ident[4] = st.st_mtim.tv_nsec;
	src->ident[5] = st.st_ctim.tv_sec;
	src->ident[6] = st.st_ctim.tv_nsec;
	return 0;
}

__u64 disk_cache_src_hash(struct disk_cache_src *src)
{
	Elf *elf;

	if (src->cfi_hash || src->fd < 0)
		return src->cfi_hash;
	elf = untrusted_elf(src->fd);
	src->cfi_hash = elf ? cfi_sections_hash(elf) : 0;
	elf_end(elf);
	return src->cfi_hash;
}

bool disk_cache_src_same(struct disk_cache_src *src, const __u64 ident[7], __u64 cfi_hash,
			 bool *moved)
{
	*moved = false;
	if (src->fd < 0)
		return true;
	if (!cfi_hash)
		return false;
	if (!memcmp(ident, src->ident, sizeof(src->ident)))
		return true;
	*moved = disk_cache_src_hash(src) == cfi_hash;
	return *moved;
}

static __u64 mix(__u64 h, __u64 w)
{
	h = (h ^ w) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

/* Four lanes folded at the end: one lane waited on its multiply at every word (a third of
 * reading cc1's 3.4 MB unwind table back).  Each step is a bijection of the lane for a given
 * word, and so is the fold of each lane: a corrupt byte anywhere changes the result. */
__u64 disk_cache_hash(__u64 h, const void *p, size_t len)
{
	const unsigned char *b = p;
	__u64 l[4];

	if (!h)
		h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < 4; i++)
		l[i] = h + i;
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

/* A plain name of a file in the directory, nothing else (no path, no temporary file's). */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	return n && n < DISK_CACHE_KEY_MAX && !strchr(name, '/') && name[0] != '.';
}

bool disk_cache_key_ok(const char *key)
{
	/* disk_cache_key_src() writes [a-z0-9.-] only, and the kinds' suffixes are short */
	return name_ok(key) && strlen(key) < DISK_CACHE_KEY_MAX - 16;
}

int disk_cache_read(int fd, void *buf, size_t len, off_t off)
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

int disk_cache__reject(struct disk_cache *c, const char *name, const char *what)
{
	/* corrupt, truncated, foreign or not ours: never trusted, rebuilt and replaced */
	count(&c->st.rejected);
	p_info("%s: %s/%s rejected (corrupt or not ours); rebuilding it", what, c->dir, name);
	unlinkat(c->dfd, name, 0);
	return -EBADMSG;
}

int disk_cache__open_file(struct disk_cache *c, const char *name, __u64 min_size,
			  __u64 max_size, struct stat *st, const char *what)
{
	int fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	/* a symbolic link (ELOOP), a FIFO that would not open... */
	if (fd < 0 || fstat(fd, st) || refusal(st, false) || (__u64)st->st_size < min_size ||
	    (__u64)st->st_size > max_size) {
		if (fd >= 0)
			close(fd);
		return disk_cache__reject(c, name, what);
	}
	return fd;
}

void disk_cache__touch(int fd)
{
	futimens(fd, NULL);
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
	char name[DISK_CACHE_KEY_MAX + 32];
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
static void evict(struct disk_cache *c)
{
	struct entry *e = NULL;
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
		if (ARRAY_GROW(e, cap, nr + 1))
			goto out;
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
		p_info("cache: evicted %s (least recently used; the cache holds %llu MB at most)",
		       e[i].name, (unsigned long long)(c->max_bytes >> 20));
	}
out:
	closedir(dir);
	free(e);
}

int disk_cache_write(int fd, const void *buf, size_t len)
{
	return write_full(fd, buf, len);
}

int disk_cache__store_with(struct disk_cache *c, const char *name, __u64 size,
			   int (*fill)(int fd, void *ctx), void *ctx)
{
	char tmp[DISK_CACHE_KEY_MAX + 64];
	struct stat st;
	int fd, err;

	if (size > c->max_bytes)
		return -E2BIG;
	snprintf(tmp, sizeof(tmp), ".%s.%d.%lx", name, getpid(), (unsigned long)syscall(SYS_gettid));
	fd = openat(c->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = fill(fd, ctx);
	/* what the writer promised, no more: the bound counts it */
	if (!err && (fstat(fd, &st) ? -errno : (__u64)st.st_size != size))
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(c->dfd, tmp, c->dfd, name))
		err = -errno;
	if (err) {
		unlinkat(c->dfd, tmp, 0);
		return err;
	}
	count(&c->st.stores);
	pthread_mutex_lock(&c->lock);
	c->total += size;
	if (!c->scanned || c->total > c->max_bytes)
		evict(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

struct iov_write {
	const struct iovec *iov;
	int nr;
};

static int write_iov(int fd, void *ctx)
{
	const struct iov_write *w = ctx;
	int err = 0;

	for (int i = 0; i < w->nr && !err; i++)
		err = write_full(fd, w->iov[i].iov_base, w->iov[i].iov_len);
	return err;
}

int disk_cache__store(struct disk_cache *c, const char *name, const struct iovec *iov, int nr)
{
	struct iov_write w = { iov, nr };
	__u64 size = 0;

	for (int i = 0; i < nr; i++)
		size += iov[i].iov_len;
	return disk_cache__store_with(c, name, size, write_iov, &w);
}

/* The header of a file of a kind with no header of its own (disk_cache__read_file()). */
struct file_hdr {
	char magic[8];
	char name[DISK_CACHE_KEY_MAX]; /* NUL-terminated; must match the file's name */
	__u64 len;                     /* of the content after the header */
	__u64 checksum;                /* of the header (this field 0) and the content */
};
#define FILE_MAGIC "BPFPFIL"

static __u64 file_checksum(const struct file_hdr *h, const void *buf)
{
	struct file_hdr copy = *h;

	copy.checksum = 0;
	return disk_cache_hash(disk_cache_hash(0, &copy, sizeof(copy)), buf, h->len);
}

int disk_cache__read_file(struct disk_cache *c, const char *name, size_t max, void **buf,
			  size_t *len)
{
	struct file_hdr h;
	struct stat st;
	void *b = NULL;
	int fd, err;

	*buf = NULL;
	if (!name_ok(name))
		return -EINVAL;
	fd = disk_cache__open_file(c, name, sizeof(h), sizeof(h) + (__u64)max, &st, "cache");
	if (fd < 0)
		return fd;
	err = -EBADMSG;
	if (disk_cache_read(fd, &h, sizeof(h), 0) || memcmp(h.magic, FILE_MAGIC, sizeof(FILE_MAGIC)) ||
	    strncmp(h.name, name, sizeof(h.name)) || h.len != (__u64)st.st_size - sizeof(h))
		goto reject;
	b = malloc(h.len ?: 1);
	if (!b) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (disk_cache_read(fd, b, h.len, sizeof(h)) || file_checksum(&h, b) != h.checksum)
		goto reject;
	disk_cache__touch(fd); /* eviction takes the least recently used first */
	*buf = b;
	*len = h.len;
	b = NULL;
	err = 0;
	goto cleanup;
reject:
	err = disk_cache__reject(c, name, "cache");
cleanup:
	free(b);
	close(fd);
	return err;
}

int disk_cache__write_file(struct disk_cache *c, const char *name, const void *buf, size_t len)
{
	struct file_hdr h = { .magic = FILE_MAGIC, .len = len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)buf, len } };

	if (!name_ok(name))
		return -EINVAL;
	snprintf(h.name, sizeof(h.name), "%s", name);
	h.checksum = file_checksum(&h, buf);
	return disk_cache__store(c, name, iov, 2);
}
