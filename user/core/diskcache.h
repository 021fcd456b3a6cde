/* bpfprof's persistent cache directory, shared by what it keeps across runs: the unwinder's
 * tables (unwind/tcache.h), the inline chains and lines of functions (sym/srcline.h) and the
 * core kernel's symbols of the current boot (sym/ksyms.c).
 *
 * A directory only bpfprof's user writes ($XDG_CACHE_HOME/bpfprof, or /var/cache/bpfprof),
 * refused when it is a link, another user's, or writable by group or others.  A cache file is
 * named by the key of the file it describes (disk_cache_key_src()) and a suffix naming its kind and
 * format version; it is written to a temporary name and renamed into place, so a reader sees a
 * whole file or none, and read back as hostile input (disk_cache__open_file()): no link
 * followed, a regular file of ours only, its size bounded.  Each kind checks its own header and
 * checksum (disk_cache_hash()) and rejects a file that fails (disk_cache__reject(): removed,
 * rebuilt by the next store).  The directory's size is bounded: the least recently used files
 * (by mtime, touched on every hit) go first, whatever their kind. */
#ifndef BPFPROF_DISKCACHE_H
#define BPFPROF_DISKCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/types.h>

struct disk_cache;

#define DISK_CACHE_DEFAULT_MB 128
#define DISK_CACHE_KEY_MAX    96

/* The cache directory: $XDG_CACHE_HOME/bpfprof when that is set, else /var/cache/bpfprof. */
const char *disk_cache_default_dir(char *buf, size_t size);

/* Opens (creating it 0700) the cache in dir (NULL: the default), bounded to max_bytes, with one
 * reference.  NULL with errno set when the directory cannot be made, or is refused (not ours, or
 * writable by group or others): *why (may be NULL) says why, one line. */
struct disk_cache *disk_cache__open(const char *dir, __u64 max_bytes, char *why, size_t size);
/* Another reference (the cache is shared by threads and owners that end apart); returns c. */
struct disk_cache *disk_cache__get(struct disk_cache *c);
/* Drops a reference; the last one frees.  NULL-safe. */
void disk_cache__put(struct disk_cache *c);
const char *disk_cache__dir(const struct disk_cache *c);

/* What a build-id key leaves unchecked, kept in its cache file's header (each kind's own): the
 * identity of the file the cache file was made from (device, inode, size, mtime, ctime: any
 * write since moves the ctime) and the hash of its call-frame sections (.eh_frame,
 * .debug_frame, .eh_frame_hdr), computed only when the identity differs (a package
 * reinstalled: the same bytes, a new inode), so that a run takes a cache file without reading
 * the file's sections (megabytes for a compiler). */
struct disk_cache_src {
	int fd;          /* the file (borrowed), or -1: the key names it whole (f- keys) */
	__u64 ident[7];
	__u64 cfi_hash;  /* 0 until disk_cache_src_hash() */
};
/* The key of the open file fd into key: its GNU build-id and size where root owns the file and
 * only root writes it, else its device, inode, size and mtime, which no other file can claim.
 * A build-id names a build, not the bytes after it (a binary patched in place keeps both): for
 * such a key *src is what its kind checks a header by (src->fd -1 for the others).  0, or
 * -errno (not a regular file). */
int disk_cache_key_src(int fd, char *key, size_t size, struct disk_cache_src *src);
/* The hash of src's call-frame sections, computed once; 0 when they cannot be read (nothing
 * is then taken or stored under the key). */
__u64 disk_cache_src_hash(struct disk_cache_src *src);
/* Whether a header's ident and cfi_hash (what disk_cache_src_hash() gave when it was written)
 * are of src's file as it is: the same identity, or the same call-frame bytes (then *moved is
 * set: the header is worth writing again with the new identity). */
bool disk_cache_src_same(struct disk_cache_src *src, const __u64 ident[7], __u64 cfi_hash,
			 bool *moved);

/* Whether key can name a file in the directory (what disk_cache_key_src() writes). */
bool disk_cache_key_ok(const char *key);

/* A 64-bit FNV-1a-like hash over 8-byte words in four lanes, from h (0 for a fresh one): a
 * corrupt byte anywhere changes it.  Every kind's format depends on it: a change of it is a
 * change of their versions. */
__u64 disk_cache_hash(__u64 h, const void *p, size_t len);

/* The cache file name, opened for reading: a regular file of ours of size min_size to
 * max_size bytes (*st filled).  The descriptor, -ENOENT when there is none, or -EBADMSG when
 * one is there that is not to be trusted (a link, not ours, its size): removed, as
 * disk_cache__reject() does, what says why. */
int disk_cache__open_file(struct disk_cache *c, const char *name, __u64 min_size,
			  __u64 max_size, struct stat *st, const char *what);
/* A cache file found corrupt or foreign by its reader: removed (the next store rebuilds it),
 * said with -v (what: "unwind cache", ...).  Returns -EBADMSG. */
int disk_cache__reject(struct disk_cache *c, const char *name, const char *what);
/* len bytes at off of a cache file: 0, -EBADMSG when it is shorter, or -errno. */
int disk_cache_read(int fd, void *buf, size_t len, off_t off);
/* A hit: the file fd read is the most recently used (eviction takes the least first). */
void disk_cache__touch(int fd);

/* Stores the nr buffers of iov as the cache file name (a new file, renamed into place), then
 * evicts the least recently used files beyond the bound.  0, -E2BIG (larger than the bound) or
 * -errno. */
int disk_cache__store(struct disk_cache *c, const char *name, const struct iovec *iov, int nr);
/* The same of a file that fill() writes to fd (with disk_cache_write()), size bytes exactly
 * (checked against the bound first, and after): for what is too large to hold whole in memory
 * at once.  fill() returns 0 or -errno (then nothing is stored). */
int disk_cache__store_with(struct disk_cache *c, const char *name, __u64 size,
			   int (*fill)(int fd, void *ctx), void *ctx);
/* len bytes of buf to fd (a file disk_cache__store_with() writes): 0 or -errno. */
int disk_cache_write(int fd, const void *buf, size_t len);

/* A cache file of a kind with no header of its own (the core kernel's symbols: sym/ksyms.c),
 * name a plain file name: read whole into *buf (malloc'd) and *len with the same distrust as
 * any (disk_cache__open_file(), at most max bytes of content), behind a header naming it and a
 * checksum of the whole: 0, -ENOENT, -EBADMSG (removed, counted as rejected) or -errno. */
int disk_cache__read_file(struct disk_cache *c, const char *name, size_t max, void **buf,
			  size_t *len);
/* Stores len bytes of buf as such a file (disk_cache__store(): counted in the bound): 0, -EINVAL
 * (a name that is not a plain file name), -E2BIG or -errno. */
int disk_cache__write_file(struct disk_cache *c, const char *name, const void *buf, size_t len);

struct disk_cache_stats {
	__u64 stores, rejected, evicted;
};
void disk_cache__stats(const struct disk_cache *c, struct disk_cache_stats *out);
#endif
