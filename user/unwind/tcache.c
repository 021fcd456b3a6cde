/* The persistent unwind-table cache (unwind/tcache.h).
 *
 * Layout of a cache file: struct cache_hdr, then nr_rows struct unw_row.  Written to a temporary
 * name in the directory and renamed into place, so a reader (another run) sees a whole file or
 * none.  Read back with the same distrust as a file another user wrote (sym/untrusted.c): no
 * symbolic link followed, a regular file of ours only, its size bounded by the largest table and
 * equal to what its header says, the checksum and the rows' order verified before the BPF side
 * ever searches them.  A build-id table is taken only for the bytes it was built from: the
 * header holds the file's identity and call-frame sections' hash then (disk_cache_src_same()). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "core/common.h"
#include "core/diskcache.h"
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
	struct disk_cache *dc;
	struct unw_cache_stats st; /* updated atomically: the unwinder's worker and main thread */
};

const char *unw_cache_default_dir(char *buf, size_t size)
{
	return disk_cache_default_dir(buf, size);
}

struct unw_cache *unw_cache__on(struct disk_cache *dc)
{
	struct unw_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->dc = disk_cache__get(dc);
	return c;
}

struct unw_cache *unw_cache__open(const char *dir, __u64 max_bytes, char *why, size_t size)
{
	struct disk_cache *dc = disk_cache__open(dir, max_bytes, why, size);
	struct unw_cache *c = dc ? unw_cache__on(dc) : NULL;

	disk_cache__put(dc);
	if (dc && !c)
		errno = ENOMEM;
	return c;
}

void unw_cache__free(struct unw_cache *c)
{
	if (!c)
		return;
	disk_cache__put(c->dc);
	free(c);
}

const char *unw_cache__dir(const struct unw_cache *c)
{
	return disk_cache__dir(c->dc);
}

void unw_cache__stats(const struct unw_cache *c, struct unw_cache_stats *out)
{
	struct disk_cache_stats ds;

	disk_cache__stats(c->dc, &ds);
	out->hits = __atomic_load_n(&c->st.hits, __ATOMIC_RELAXED);
	out->misses = __atomic_load_n(&c->st.misses, __ATOMIC_RELAXED);
	out->stores = __atomic_load_n(&c->st.stores, __ATOMIC_RELAXED);
	out->rejected = __atomic_load_n(&c->st.rejected, __ATOMIC_RELAXED);
	out->evicted = ds.evicted;
}

static void count(__u64 *v)
{
	__atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
}

int unw_cache_key(int fd, struct unw_cache_key *key)
{
	/* a build-id key's name says nothing of the bytes: those are checked against the header */
	return disk_cache_key_src(fd, key->name, sizeof(key->name), &key->src);
}

void unw_cache_key_name(struct unw_cache_key *key, const char *name)
{
	memset(key, 0, sizeof(*key));
	key->src.fd = -1;
	snprintf(key->name, sizeof(key->name), "%s", name);
}

static __u64 checksum(const struct cache_hdr *h, const struct unw_row *rows, size_t nr)
{
	struct cache_hdr copy = *h;

	copy.checksum = 0;
	return disk_cache_hash(disk_cache_hash(0, &copy, sizeof(copy)), rows, nr * sizeof(*rows));
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
	return disk_cache_key_ok(key) && strlen(key) < UNW_CACHE_KEY_MAX - sizeof(CACHE_SUFFIX);
}

static int store(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows);

int unw_cache__get(struct unw_cache *c, struct unw_cache_key *key, struct cfi_rows *out)
{
	char name[UNW_CACHE_KEY_MAX + 8];
	struct cache_hdr h;
	struct stat st;
	size_t len = 0;
	void *map = MAP_FAILED;
	struct unw_row *rows;
	bool moved = false;
	int fd, err;

	memset(out, 0, sizeof(*out));
	if (!key_ok(key->name))
		return -EINVAL;
	snprintf(name, sizeof(name), "%s" CACHE_SUFFIX, key->name);
	fd = disk_cache__open_file(c->dc, name, sizeof(h),
				   sizeof(h) + (__u64)UNWIND_MAX_TABLE_ROWS * sizeof(struct unw_row),
				   &st, "unwind cache");
	if (fd == -ENOENT)
		count(&c->st.misses);
	if (fd == -EBADMSG)
		count(&c->st.rejected);
	if (fd < 0)
		return fd;
	err = -EBADMSG;
	if (disk_cache_read(fd, &h, sizeof(h), 0))
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
	if (!disk_cache_src_same(&key->src, h.ident, h.cfi_hash, &moved)) {
		count(&c->st.misses);
		err = -ENOENT;
		goto cleanup;
	}
	/* The file mapped, not read into memory of ours: no page of it faulted, zeroed and copied
	 * into (the pages are the page cache's), half of reading cc1's table back.  Checked as
	 * mapped; cache files are replaced by rename, never written in place. */
	len = st.st_size;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -ENOMEM;
		goto cleanup;
	}
	rows = (struct unw_row *)((char *)map + sizeof(h));
	if (memcmp(map, &h, sizeof(h)) || checksum(&h, rows, h.nr_rows) != h.checksum ||
	    !rows_valid(rows, h.nr_rows))
		goto reject;
	disk_cache__touch(fd); /* eviction takes the least recently used first */
	out->rows = rows;
	out->nr = h.nr_rows;
	out->map_len = len;
	out->map_off = sizeof(h); /* cfi_rows_free() unmaps the whole file */
	out->fdes = h.fdes;
	out->unsupported = h.unsupported;
	out->source = sources[h.source];
	out->cached = true;
	map = MAP_FAILED;
	count(&c->st.hits);
	if (moved)
		store(c, key, out); /* the next run takes it by identity, unhashed */
	err = 0;
	goto cleanup;
reject:
	count(&c->st.rejected);
	err = disk_cache__reject(c->dc, name, "unwind cache");
cleanup:
	if (map != MAP_FAILED)
		munmap(map, len);
	close(fd);
	return err;
}

/* Writes rows under key: 0 or -errno. */
static int store(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows)
{
	char name[UNW_CACHE_KEY_MAX + 8];
	struct cache_hdr h = { .magic = CACHE_MAGIC };
	struct iovec iov[2];
	size_t src;

	if (!key_ok(key->name) || !rows->nr || rows->nr > UNWIND_MAX_TABLE_ROWS)
		return -EINVAL;
	/* a build-id key's rows are taken later by what they were built from */
	if (key->src.fd >= 0) {
		h.cfi_hash = disk_cache_src_hash(&key->src);
		if (!h.cfi_hash)
			return -EINVAL;
		memcpy(h.ident, key->src.ident, sizeof(h.ident));
	}
	for (src = 0; src < sizeof(sources) / sizeof(sources[0]); src++)
		if (rows->source && !strcmp(rows->source, sources[src]))
			break;
	if (src == sizeof(sources) / sizeof(sources[0]))
		return -EINVAL;
	h.version = CACHE_VERSION;
	h.row_size = sizeof(struct unw_row);
	snprintf(h.key, sizeof(h.key), "%s", key->name);
	h.nr_rows = rows->nr;
	h.fdes = rows->fdes;
	h.unsupported = rows->unsupported;
	h.source = src;
	h.checksum = checksum(&h, rows->rows, rows->nr);
	snprintf(name, sizeof(name), "%s" CACHE_SUFFIX, key->name);
	iov[0] = (struct iovec){ &h, sizeof(h) };
	iov[1] = (struct iovec){ rows->rows, rows->nr * sizeof(*rows->rows) };
	return disk_cache__store(c->dc, name, iov, 2);
}

int unw_cache__put(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows)
{
	int err = store(c, key, rows);

	if (!err)
		count(&c->st.stores);
	return err;
}
