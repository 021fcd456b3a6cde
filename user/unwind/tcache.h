/* The persistent unwind-table cache: the rows cfi.c builds for a file, kept on disk across runs so
 * a second run starts with its tables in a few milliseconds instead of rebuilding them (libc: ~10
 * ms, libLLVM: a second).
 *
 * One file per table in bpfprof's cache directory (core/diskcache.h: its rules, keys, size bound
 * and eviction), named by the file's key: the GNU build-id and size of files owned by root that
 * only root writes, otherwise the file's device, inode, size and mtime, which no other file can
 * claim (disk_cache_key_src()).  A build-id names a build, not the bytes after it (a binary
 * patched in place keeps it): a build-id table's header also holds a hash of the call-frame
 * sections it was built from and the file's identity then (device, inode, size, mtime, ctime).
 * A file with that identity is the same file unchanged (a write moves its ctime, which only the
 * clock sets) and is taken without reading it; another is hashed, and taken when the sections
 * are the same bytes (the header then records the new identity).  Every cache file is read as
 * hostile input: a header (magic, version, key, row count, checksum) checked before use, rows
 * checked for the shape the BPF search relies on; a file that fails is removed and the table
 * rebuilt. */
#ifndef BPFPROF_TCACHE_H
#define BPFPROF_TCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "core/diskcache.h"

struct cfi_rows;
struct unw_cache;
struct disk_cache;

#define UNW_CACHE_DEFAULT_MB DISK_CACHE_DEFAULT_MB
/* A table's file is KEY UNW_CACHE_SUFFIX, the format's version in the name (tcache.c says why). */
#define UNW_CACHE_VERSION 3
#define UNW_CACHE_STR_(x) #x
#define UNW_CACHE_STR(x)  UNW_CACHE_STR_(x)
#define UNW_CACHE_SUFFIX  ".v" UNW_CACHE_STR(UNW_CACHE_VERSION) ".unw"
#define UNW_CACHE_KEY_MAX    DISK_CACHE_KEY_MAX

/* The cache directory: $XDG_CACHE_HOME/bpfprof when that is set, else /var/cache/bpfprof. */
const char *unw_cache_default_dir(char *buf, size_t size);

/* Opens (creating it 0700) the cache in dir (NULL: the default), bounded to max_bytes.  NULL
 * with errno set when the directory cannot be made, or is refused (not ours, or writable by
 * group or others): *why (may be NULL) says why, one line. */
struct unw_cache *unw_cache__open(const char *dir, __u64 max_bytes, char *why, size_t size);
/* The table cache in the cache directory dc, which it holds a reference of.  NULL on ENOMEM. */
struct unw_cache *unw_cache__on(struct disk_cache *dc);
void unw_cache__free(struct unw_cache *c);

/* A table's key, and for a build-id key what its file is checked against. */
struct unw_cache_key {
	char name[UNW_CACHE_KEY_MAX]; /* the cache file's name without UNW_CACHE_SUFFIX */
	struct disk_cache_src src;    /* its file (borrowed), or src.fd -1: the name says it all */
};

/* The key of the open file fd (borrowed by *key until the last get or put with it): 0, or
 * -errno (not a regular file). */
int unw_cache_key(int fd, struct unw_cache_key *key);
/* A key of a name alone (no file to check: f- keys, tests). */
void unw_cache_key_name(struct unw_cache_key *key, const char *name);

/* Rows for key into *out (freed with cfi_rows_free).  0 (out->cached is set), -ENOENT (not
 * cached, or cached for other bytes of the file), -EBADMSG (a corrupt or foreign file: removed,
 * counted), or -errno. */
int unw_cache__get(struct unw_cache *c, struct unw_cache_key *key, struct cfi_rows *out);
/* Stores rows under key (a new file, renamed into place), then evicts the least recently used
 * files beyond the bound.  0 or -errno. */
int unw_cache__put(struct unw_cache *c, struct unw_cache_key *key, const struct cfi_rows *rows);

struct unw_cache_stats {
	__u64 hits, misses, stores, rejected, evicted;
};
void unw_cache__stats(const struct unw_cache *c, struct unw_cache_stats *out);
const char *unw_cache__dir(const struct unw_cache *c);
#endif
