/* The persistent cache of inline chains and lines (issue 16): what a lookup needs of a function's
 * debug info (sym/srcindex.h: its scopes, with the inlined subroutines' ranges, names and call
 * sites, and the rows of the line table for its addresses), kept on disk across runs in bpfprof's
 * cache directory (core/diskcache.h), one file per ELF file, named by its key (build-id where
 * root owns the file) with SRC_CACHE_SUFFIX.  A later run answers an address of a function in
 * the file from it without opening the debug info at all; an address of a function not in it
 * opens the debug info as before, and what that finds is added when the file is stored again.
 *
 * A file holds regions of addresses, each answered alike: a function's ranges (its entry), code
 * of no function (lines only: assembly), or addresses no unit covers.  Each entry carries its
 * own checksum and is read (pread()) and checked only when a lookup first needs it, so a run's
 * memory holds the functions it samples, not the file.  Every byte is read as hostile input:
 * header, regions and entry table checksummed and bounds-checked at open (a file that fails is
 * removed, and rebuilt by the run's store), an entry's checksum and indexes before use (an
 * entry that fails is looked up again, and the file stored without it). */
#ifndef BPFPROF_SRCCACHE_H
#define BPFPROF_SRCCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "sym/srcindex.h"

struct disk_cache;
struct disk_cache_src;
struct stack_names;
struct src_cache;
struct src_file;

/* Bumped on any change of the file's layout, of what an entry holds, or of disk_cache_hash()
 * (2: its four lanes; 3: the file's identity in the header, the key unhashed; 4: source file
 * names made whole with their unit's directory); in the file names too, as the unwind tables'
 * (unwind/tcache.c says why). */
#define SRC_CACHE_VERSION 4
#define SRC_CACHE_SUFFIX ".v4.src"

/* What a region of a file's addresses is. */
enum src_region {
	SRC_NONE,      /* not in the cache: ask the debug info */
	SRC_FUNCTION,  /* a function's addresses: its entry */
	SRC_NO_FUNCTION, /* code with lines but no function (an entry of lines, no scopes) */
	SRC_UNCOVERED, /* no unit of the debug info covers it */
};

/* The inline cache in dc (a reference held).  NULL on ENOMEM. */
struct src_cache *src_cache__new(struct disk_cache *dc);
void src_cache__free(struct src_cache *c);

/* The cache of the file whose key is key and file src (disk_cache_key_src(): a build-id key's
 * file is checked against the header by its identity, its call-frame sections hashed only when
 * that changed, or when a file is to be written anew; src->fd is read no later than here): what
 * is stored of it, or nothing yet.  NULL on ENOMEM. */
struct src_file *src_file__open(struct src_cache *c, const char *key, struct disk_cache_src *src);
/* Whether anything of the file was read from the disk. */
bool src_file__loaded(const struct src_file *f);
/* The region holding vaddr and, for SRC_FUNCTION and SRC_NO_FUNCTION, its entry's number. */
enum src_region src_file__find(struct src_file *f, __u64 vaddr, __u32 *entry);
/* Entry number entry of a region of kind, read and checked, into *x (malloc'd, its strings
 * interned in strs): a function's scopes, or lines alone (x->nr 0).  0, -ENOMEM, or -EBADMSG
 * for a corrupt entry: then its regions are no longer answered, and the file is written again
 * without it at src_file__store(). */
int src_file__entry(struct src_file *f, __u32 entry, enum src_region kind,
		    struct stack_names *strs, struct fn_scopes **x);
/* Adds an entry of this run: x, a function's scopes and lines (or its lines alone:
 * lines_only), stored at src_file__store().  Its number, or -errno (-E2BIG: the file has
 * enough). */
long src_file__add_entry(struct src_file *f, const struct fn_scopes *x, bool lines_only);
/* Adds a region of this run: [lo, hi) is kind (SRC_FUNCTION, SRC_NO_FUNCTION: answered by
 * entry, a number src_file__add_entry() gave; SRC_UNCOVERED).  0 or -ENOMEM. */
int src_file__add_region(struct src_file *f, enum src_region kind, __u64 lo, __u64 hi,
			 __u32 entry);
/* The file's regions, those read and those added (those read first where they overlap),
 * written back when some were added.  0 or -errno. */
int src_file__store(struct src_file *f);
/* The bytes this run's additions hold until they are stored. */
size_t src_file__pending(const struct src_file *f);
/* src_file__store() in the middle of a run, to bound what a run that meets much debug info the
 * cache has not seen holds: what was stored is read back, answered from the disk from then on
 * as a run before's, and this run's copies given back.  The entry numbers that
 * src_file__add_entry() gave are void after it, stored or not.  0 or -errno: then what was
 * added is dropped (counted: flush_dropped), looked up in the debug info again if asked. */
int src_file__flush(struct src_file *f);
void src_file__free(struct src_file *f);

struct src_cache_stats {
	__u64 files_read, files_stored, entries_read, regions_added, rejected;
	__u64 flushes, flush_dropped; /* src_file__flush(): done, and regions it could not store */
};
void src_cache__stats(const struct src_cache *c, struct src_cache_stats *out);
const char *src_cache__dir(const struct src_cache *c);
#endif
