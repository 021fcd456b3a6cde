/* Source lines and inlined functions from DWARF (elfutils' libdw): what an address of an ELF file
 * expands into, as perf's --inline and srcline do.  The debug info is the file's own or its
 * separate debug file, found as the symbolizer finds it (build-id, ~/.debug, .gnu_debuglink,
 * debuginfod: debuginfo_open()).  Lookups are cached per (file, address), so a profile of many
 * samples pays once per distinct address.  Pure: no BPF, unit-tested on fixture objects. */
#ifndef BPFPROF_SRCLINE_H
#define BPFPROF_SRCLINE_H
#include <stdbool.h>
#include <linux/types.h>

struct srcline_frame {
	const char *func; /* the function (an inlined one's own name: its linkage name demangled,
			   * else DW_AT_name), NULL when DWARF has none */
	const char *file; /* the source file as DWARF names it (usually absolute), or NULL */
	__u32 line;       /* 0 when unknown */
};

/* An address's inline chain, outermost first: f[0] is the function the code was compiled in
 * (its line the call site of f[1]), f[nr - 1] the innermost inlined function, its line the one
 * the address belongs to.  nr == 1 when nothing is inlined there. */
struct srcline_chain {
	__u32 nr;
	struct srcline_frame f[];
};

/* The bytes of chain c. */
static inline size_t srcline_chain_size(const struct srcline_chain *c)
{
	return sizeof(*c) + c->nr * sizeof(c->f[0]);
}

struct srclines;

/* NULL on ENOMEM.  Not thread-safe. */
struct srclines *srclines__new(void);
struct disk_cache;
/* Lookups answered from the persistent cache in dc (sym/srccache.h) where it holds them, and
 * what the debug info answers stored there when the files are closed (srclines__close_files(),
 * srclines__free()); before any lookup.  0 or -ENOMEM. */
int srclines__set_cache(struct srclines *s, struct disk_cache *dc);
/* The chain of ELF virtual address vaddr of the file at path.  0 with *chain set; -ENOENT when
 * the file has no debug info (none of its own, no debug file found: remembered per file),
 * -ENXIO when the debug info does not cover vaddr, or another -errno.  The chain and its
 * strings stay valid until srclines__free(). */
int srclines__lookup(struct srclines *s, const char *path, __u64 vaddr,
		     const struct srcline_chain **chain);
/* srclines__lookup() of the address of file offset off (srclines__file_offset_to_vaddr()), the
 * file found once: what a frame, known by its file offset, asks.  -ENXIO also for an offset
 * no segment maps. */
int srclines__lookup_offset(struct srclines *s, const char *path, __u64 off,
			    const struct srcline_chain **chain);
/* The ELF virtual address of file offset off of the file at path (through the PT_LOAD that maps
 * it), as mapped code's addresses are known.  0 or -errno (-ENOENT: no segment maps it). */
int srclines__file_offset_to_vaddr(struct srclines *s, const char *path, __u64 off,
				   __u64 *vaddr);
/* One step (a unit) of putting every function of the files whose debug info is dear to open
 * (compressed sections: libc's debug file) into the persistent cache, once one was opened: a
 * later run then answers from the cache, never opening it again.  Returns whether there is
 * more to do.  For the idle moments of the lookup thread (sym/srcworker.c). */
bool srclines__harvest(struct srclines *s);
/* Whether the file has debug info (opening it if needed). */
bool srclines__has_dwarf(struct srclines *s, const char *path);
/* What the lookups so far parsed of the debug info (line tables, abbreviations), and the
 * pages of it they mapped, given back; the chains found and the indexes made stay.  Lookups
 * do it themselves after a few indexes made (sym/srcline.c). */
void srclines__release(struct srclines *s);
/* When what libdw parsed for the lookups, unread since, is to be given back (srclines__release():
 * CLOCK_MONOTONIC ns; 0 while it holds nothing).  For the lookup thread (sym/srcworker.c). */
__u64 srclines__stale_at(const struct srclines *s);
/* Everything held for lookups given back: the files (reopened if looked up again), their
 * indexes, the chains cached (their strings stay).  Once the lookups of a run are done. */
void srclines__close_files(struct srclines *s);
struct srcline_stats {
	__u64 lookups, hits;     /* addresses asked, and those answered from the cache */
	__u64 units, functions;  /* CUs and functions whose index is held */
	__u64 index_bytes;       /* what those indexes hold */
	__u64 opened;            /* files opened (again, after their eviction) */
	__u64 drops;             /* files whose indexes went to keep them in bounds */
	__u64 releases;          /* libdw's parsed state given back */
	__u64 line_bytes;        /* the units' line tables held */
	__u64 chains;            /* chains cached */
	__u64 dwarf_opened;      /* files whose debug info was opened */
	__u64 harvested;         /* files whose every function went to the cache */
	__u64 cache_answers;     /* lookups answered from the persistent cache */
	__u64 cache_files, cache_entries, cache_stored, cache_regions, cache_rejected;
	__u64 cache_flushes;     /* files stored in the middle of the run (bounded memory) */
	__u64 cache_flush_dropped; /* regions such a store could not keep (looked up again) */
	const char *cache_dir;   /* NULL: no persistent cache */
};
/* What the srclines hold of bpfprof's heap, as far as it counts it (not libdw's parse): for -v. */
size_t srclines__bytes(const struct srclines *s);
/* What the lookups so far cost: for -v. */
void srclines__stats(const struct srclines *s, struct srcline_stats *st);
void srclines__free(struct srclines *s);
#endif
