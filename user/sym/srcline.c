// SPDX-License-Identifier: GPL-2.0
/* Inline chains and source lines from DWARF (libdw), cached per file and address.
 *
 * libdw reads a file's debug info through a copy of it that holds only the units looked up
 * (debug_copy()): what a profile of the whole machine costs in memory is what its addresses
 * need, not every debug file read whole.  What a lookup needs of a unit and of a function is
 * read from libdw once, into indexes of bpfprof's own (cu_index, fn_scopes): a long run looks
 * up its hot functions' addresses without parsing their debug info again.
 *
 * For an address, the DIEs that contain it, from the concrete DW_TAG_subprogram the code was
 * compiled in down: lexical blocks and a DW_TAG_inlined_subroutine for each level of inlining.
 * The innermost frame's line is the line table's for the address; each inlined level's
 * DW_AT_call_file / DW_AT_call_line is where the frame around it called it, which is how
 * addr2line -i and perf's inline_list build the same chain. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <zlib.h>
#include <sys/mman.h>
#include "core/common.h"
#include "core/grow.h"
#include "core/diskcache.h"
#include "core/hashtab.h"
#include "core/sorted.h"
#include "out/stack.h"
#include "sym/srccache.h"
#include "sym/srcindex.h"
#include "sym/srcline.h"
#include "sym/syms.h"

/* Where a sparse copy's .debug_info is: the section libdw reads (the units looked up, one after
 * the other in the order they were, then a padding unit of nothing), and the whole section
 * after the ELF image, which libdw never reads, from which units are copied into it. */
struct info_copy {
	__u64 sparse, full, size;
	__u64 used;  /* the units copied so far: the padding unit begins there */
	int fd;      /* where the whole section is: the copy, or the file itself (-1: the copy) */
};

struct sfile {
	char *path;
	int fd, dfd;         /* the file, its separate debug file (-1: none) */
	int mfd;             /* the debug sections' copy (debug_copy()), or -1 */
	Elf *elf, *delf, *melf;
	Dwarf *dw;           /* NULL: no debug info */
	int err;             /* why the file could not be read, 0 when it was */
	GElf_Phdr *loads;    /* PT_LOAD segments, for file offsets */
	size_t nr_loads;
	struct cu_range *cus; /* without .debug_aranges: every CU's ranges, by start */
	size_t nr_cus;
	bool cus_read;
	struct hashtab cu_indexes; /* CU DIE offset -> struct cu_index, made on first lookup */
	struct hashtab fn_scopes;  /* function DIE offset -> struct fn_scopes, likewise */
	size_t nr_units, nr_functions, index_bytes; /* what they hold, for -v */
	bool sparse;         /* its .debug_info copied unit by unit (debug_copy()) */
	struct info_copy info;
	/* the units copied, by their place in the file's .debug_info ([lo, hi)), each with the
	 * offset of its DIE in the copy's */
	struct cu_range *present;
	size_t nr_present;
	void *map;           /* the copy's ELF image, mapped */
	size_t map_size;
	bool closed;         /* evicted (srclines.max_open): opened again when next asked */
	bool dirty;          /* libdw read since srclines__release() */
	__u64 last_use;
	/* the persistent cache's of the file (sym/srccache.h), or NULL; while it answers, the
	 * debug info is not opened (deferred: fd and elf kept to open it at a miss) */
	struct src_file *src;
	bool deferred;
	bool debug_looked;   /* find_debug_file() was called since the file was opened */
	uid_t owner;
	/* its debug sections compressed: each opening inflates them (libc's debug file, ~50 ms);
	 * once opened, every function goes to the cache (srclines__harvest()), units[harvest] on */
	bool inflated, harvest;
	size_t harvest_at;
};

/* What a lookup needs of the debug info, read from libdw once and kept in a form of its own:
 * a CU's concrete functions by address; a function's scopes and the rows of the line table for
 * its addresses.  A lookup at an address of a function seen before reads nothing of libdw's
 * (which gives back what it parsed: srclines__release()), nor a page of the debug info. */

/* A concrete function's range in its CU: a lookup descends into one function's DIEs, not the
 * CU's (walking past a sibling without DW_AT_sibling parses its whole subtree). */
struct fn_range {
	__u64 lo, hi;
	Dwarf_Off die;
};

struct cu_index {
	struct fn_range *r;  /* by lo */
	size_t nr, cap;
	/* its line table, while it is among the least recently used (SRCLINE_CU_LINES_MAX):
	 * what its functions' rows are taken from */
	struct lines lines;
	bool has_lines;
	__u64 lines_use;
	/* the files of its line table's header, interned, by DW_AT_call_file's index: read
	 * once, where libdw (0.188) reads them by parsing the whole line table, again after
	 * each srclines__release() */
	const char **srcfiles;
	size_t nr_srcfiles;
	bool srcfiles_read;
	bool harvested;      /* its functions all put in the persistent cache */
};

struct cu_range {
	__u64 lo, hi;        /* [lo, hi) */
	Dwarf_Off die;       /* the CU's DIE */
};

struct srclines {
	struct sfile *files;
	size_t nr_files, cap_files;
	struct hashtab file_index;   /* (path hash, probe) -> file index + 1 */
	struct hashtab chains;       /* (vaddr, file index) -> struct srcline_chain */
	struct stack_names *strs;    /* function and file names, stored once */
	struct hashtab demangled;    /* a linkage name in strs -> its demangled name in strs */
	__u64 lookups, hits;
	__u64 clock;                 /* file uses, for the least recently used */
	size_t nr_open;              /* files held open */
	__u32 built;                 /* indexes made since libdw's state was given back */
	__u32 unmapped;              /* built when the copies were last unmapped */
	size_t parsed;               /* line table rows libdw read for them */
	size_t nr_chains;
	size_t chain_bytes;          /* theirs */
	size_t index_bytes;          /* the files' */
	size_t cu_lines_bytes;       /* the units' line tables held */
	__u64 lines_clock;
	__u64 opened, drops, releases;
	struct src_cache *cache;     /* the persistent cache, or NULL */
	__u64 libdw_ns;              /* when libdw was last read (CLOCK_MONOTONIC) */
	__u64 dwarf_opened;          /* files whose debug info was opened */
	__u64 cache_answers;         /* lookups answered from it */
	__u64 harvested;             /* files whose every function went to it */
};

/* Files with debug info held open at most, their DWARF parsed: a long run over many programs
 * keeps the ones in use, not every one it met (each holds descriptors and its parsed debug
 * info; a file without is closed at once). */
#define SRCLINE_MAX_OPEN 48

/* What libdw parsed to make the indexes (line tables, abbreviations, the units it stepped over)
 * and the pages of the copies it read are given back (srclines__release()) after this many
 * indexes made (of a unit or a function), or once it parsed SRCLINE_RELEASE_ROWS rows of line
 * tables (about 48 bytes each in libdw, 1.5 MB): libdw is read only to index, and a lookup in
 * a function indexed before reads none of it.  (Given back after every few, libdw steps over
 * every unit copied again each time, and reads a unit's line table again for each function of
 * it indexed after: more CPU, no less memory.  A replay of the 5,090 lookups of a 60 s
 * system-wide run under churn took 0.35 s with these bounds and those below, 1.33 s with 64
 * indexes, 8k rows, 4 MB of indexes and 1 MB of line tables; RSS 22 against 26 MB.)  Halved
 * (128 indexes, 16k rows: 0.75 MB of libdw's rows) with the indexes' bound below at 2 MB, 60 s
 * of churn with an empty cache held 1-2 MB less than with 256, 32k and 3 MB, beside it at load
 * 8 (the peak 45 MB against 49), for 0.5% of a CPU more (10.4% against 9.9%). */
#define SRCLINE_RELEASE_EVERY 128
#define SRCLINE_RELEASE_ROWS (16 << 10)

/* Indexes made between two unmappings of the pages of the copies libdw read to make them (the
 * kernel's page cache: mapped again, a minor fault a page, if read again).  After each: with
 * an empty cache under churn, 8 left 4-6 MB of them mapped (shmem, counted in RSS) as a shared
 * machine's fresh builds were opened one after another, 1 about 0.5 MB. */
#define SRCLINE_UNMAP_EVERY 1

/* The indexes' memory at most: past it, the least recently used files' indexes go (their
 * units are indexed again if looked up again).  A 60 s system-wide profile under process churn
 * held 4.5 MB of them (libc's, ld.so's, and those of the other programs with debug info that a
 * shared machine ran: several bpfprof builds, CPython's huge functions); a bound below what
 * the programs running need has each drop read their units again.  Since what a run finds goes
 * to the persistent cache in the middle of it (SRCLINE_PENDING_MAX), a function dropped is read
 * back from there (a pread(), no libdw): at 3 MB the same run under churn with an empty cache
 * held 2.7 MB of them (4.9-6.5 at 8), its lookups 1.3 s of the worker's CPU a minute
 * (0.9-1.3); 2 MB (above, with libdw's state given back twice as often) took 1-2 MB less. */
#define SRCLINE_INDEX_MAX (2 << 20)

/* The units' line tables held at most (each 16 bytes a row kept, about a row in three of
 * libdw's): past it the least recently used go, read again if a function of theirs not seen
 * before is looked up.  The same run held 3.7 MB (CPython's ceval.c alone is 0.5 MB); at 1 MB,
 * a new function of a unit dropped cost its whole table parsed again, 0.5 ms.  At 1.5 MB the
 * empty cache's run held 1.3 MB (2.2-4.0 at 4). */
#define SRCLINE_CU_LINES_MAX (3 << 19)

/* What this run found that the persistent cache did not hold, kept to be stored (its entries,
 * serialized), at most: past it the file holding the most is stored in the middle of the run
 * and read back (src_file__flush()), its regions then answered from the disk.  A run that
 * meets debug info the cache has not seen holds otherwise every function it looked up until
 * the file closes: 60 s of churn with an empty cache held 11 MB of them (libc's, ld.so's
 * every function, put in it whole, 8.7). */
#define SRCLINE_PENDING_MAX (512 << 10)

/* Chains cached at most: past it they all go (looked up again, from the indexes, when asked).
 * The lookup thread keeps its own copy of each answer (sym/srcworker.c) and asks an address
 * once until it forgets them: these answer what it asks again after that, and the other
 * form of an address (its file offset, its virtual address).  At 64k they held 1.6 MB after
 * 60 s under churn (8,820 chains, their table's 32k slots). */
#define SRCLINE_MAX_CHAINS (8 << 10)

/* libdw's state left unread this long (no unit or function indexed from it) is given back
 * (srclines__stale_at()): under churn a long run asks for addresses all the time, most of them
 * answered from the persistent cache or the indexes, and what libdw parsed for the last one it
 * was read for would otherwise stay until SRCLINE_RELEASE_EVERY more indexes are made. */
#define SRCLINE_STALE_NS (3ULL * 1000000000)

/* Cached for addresses the debug info does not cover. */
static struct srcline_chain no_chain;

struct srclines *srclines__new(void)
{
	struct srclines *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->strs = stack_names__new();
	if (!s->strs) {
		free(s);
		return NULL;
	}
	return s;
}

/* libdw read (an index made from it): its state is given back a while after the last such. */
static void read_libdw(struct srclines *s)
{
	s->libdw_ns = now_ns();
}

static __u64 hash_path(const char *p)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

static int read_loads(struct sfile *f)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(f->elf, &n))
		return -ENOEXEC;
	f->loads = calloc(n ?: 1, sizeof(*f->loads));
	if (!f->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(f->elf, i, &ph) && ph.p_type == PT_LOAD)
			f->loads[f->nr_loads++] = ph;
	return 0;
}

/* The sections a lookup reads: not .debug_loclists, .debug_frame, .debug_macro (a fifth of
 * libc's debug info), nor the code and symbols. */
static bool wanted_section(const char *name)
{
	static const char *const names[] = {
		".debug_info", ".debug_abbrev", ".debug_line", ".debug_line_str", ".debug_str",
		".debug_str_offsets", ".debug_aranges", ".debug_ranges", ".debug_rnglists",
		".debug_addr",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* A section of strings libdw reads (terminate_strings() says why it matters). */
static bool string_section(const char *name, const GElf_Shdr *sh)
{
	/* libdw finds its sections by name, whatever their flags say */
	return !strcmp(name, ".debug_str") || !strcmp(name, ".debug_line_str") ||
	       ((sh->sh_flags & SHF_STRINGS) && !strncmp(name, ".debug_", 7));
}

#define COPY_CHUNK (64 << 10)

/* Appends size bytes of fd at off to out at *pos, inflated when zlib is set (an ELF compressed
 * section's data past its header): a chunk at a time, so nothing the size of the section is
 * ever held.  0 or -errno. */
static int copy_out(int fd, __u64 off, __u64 size, bool zlib, __u64 want, int out, __u64 *pos)
{
	unsigned char *in = malloc(COPY_CHUNK), *buf = zlib ? malloc(COPY_CHUNK) : NULL;
	z_stream z = { 0 };
	__u64 done = 0, start = *pos;
	int err = -ENOMEM, zret = Z_OK;

	if (!in || (zlib && !buf) || (zlib && inflateInit(&z) != Z_OK))
		goto cleanup;
	err = 0;
	while (!err && done < size) {
		ssize_t n = pread(fd, in, size - done < COPY_CHUNK ? size - done : COPY_CHUNK,
				  off + done);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += n;
		if (!zlib) {
			if (pwrite(out, in, n, *pos) != n)
				err = -EIO;
			*pos += n;
			continue;
		}
		z.next_in = in;
		z.avail_in = n;
		do {
			ssize_t w;

			z.next_out = buf;
			z.avail_out = COPY_CHUNK;
			zret = inflate(&z, Z_NO_FLUSH);
			if (zret != Z_OK && zret != Z_STREAM_END && zret != Z_BUF_ERROR) {
				err = -EINVAL;
				break;
			}
			w = COPY_CHUNK - z.avail_out;
			if (w && pwrite(out, buf, w, *pos) != w)
				err = -EIO;
			*pos += w;
			/* a section inflating past the size its header gave is not one */
			if (*pos - start > want)
				err = -EINVAL;
		} while (!err && z.avail_out == 0);
	}
	/* and one inflating short of it neither */
	if (!err && zlib && (zret != Z_STREAM_END || *pos - start != want))
		err = -EINVAL;
cleanup:
	if (zlib)
		inflateEnd(&z);
	free(in);
	free(buf);
	return err;
}

/* Section sh of the ELF file fd, inflated, appended to out at *pos (8-aligned), sh made its
 * header there.  0, -EOPNOTSUPP for a compression other than zlib, or -errno. */
static int copy_section(int fd, int out, __u64 *pos, GElf_Shdr *sh)
{
	Elf64_Chdr ch;
	__u64 start = (*pos + 7) & ~7ULL;
	int err;

	*pos = start;
	if (!(sh->sh_flags & SHF_COMPRESSED)) {
		err = sh->sh_type == SHT_NOBITS ? 0 : copy_out(fd, sh->sh_offset, sh->sh_size, false,
								 sh->sh_size, out, pos);
	} else {
		if (sh->sh_size < sizeof(ch) ||
		    pread(fd, &ch, sizeof(ch), sh->sh_offset) != sizeof(ch))
			return -EINVAL;
		if (ch.ch_type != ELFCOMPRESS_ZLIB)
			return -EOPNOTSUPP;
		err = copy_out(fd, sh->sh_offset + sizeof(ch), sh->sh_size - sizeof(ch), true,
			       ch.ch_size, out, pos);
	}
	sh->sh_offset = start;
	sh->sh_size = *pos - start;
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	sh->sh_addralign = 1;
	return err;
}

static int cmp_range(const void *a, const void *b);

/* Parses .debug_aranges (size bytes at off in fd) into f->cus: each range's unit by its header
 * offset.  0, or -EINVAL for a table this does not read (then the copy is not sparse). */
static int read_aranges(struct sfile *f, int fd, __u64 off, __u64 size)
{
	unsigned char *buf = malloc(size ?: 1), *p, *end = NULL;
	size_t cap = 0;
	int err = -EINVAL;

	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, size, off) != (ssize_t)size)
		goto cleanup;
	for (p = buf; p < buf + size; p = end) {
		__u64 len, cu;
		__u32 l32;
		bool dw64;
		unsigned char *set = p;
		__u16 version;

		if (buf + size - p < 4)
			goto cleanup;
		memcpy(&l32, p, 4);
		dw64 = l32 == 0xffffffff;
		if (dw64 && buf + size - p < 12)
			goto cleanup;
		if (dw64)
			memcpy(&len, p + 4, 8);
		else
			len = l32;
		p += dw64 ? 12 : 4;
		if (len > (__u64)(buf + size - p) || len < (dw64 ? 12u : 8u))
			goto cleanup;
		end = p + len;
		memcpy(&version, p, 2);
		cu = 0;
		memcpy(&cu, p + 2, dw64 ? 8 : 4);
		p += 2 + (dw64 ? 8 : 4);
		/* 8-byte addresses, no segments: what x86-64 and arm64 write */
		if (version != 2 || p[0] != 8 || p[1] != 0)
			goto cleanup;
		p = set + ((p + 2 - set + 15) & ~15);
		for (; p + 16 <= end; p += 16) {
			__u64 lo, n;

			memcpy(&lo, p, 8);
			memcpy(&n, p + 8, 8);
			if (!lo && !n)
				break;
			if (!n)
				continue;
			if (ARRAY_GROW(f->cus, cap, f->nr_cus + 1)) {
				err = -ENOMEM;
				goto cleanup;
			}
			f->cus[f->nr_cus++] = (struct cu_range){ lo, lo + n, cu };
		}
	}
	if (f->nr_cus)
		qsort(f->cus, f->nr_cus, sizeof(*f->cus), cmp_range);
	err = f->nr_cus ? 0 : -EINVAL;
cleanup:
	free(buf);
	if (err) {
		free(f->cus);
		f->cus = NULL;
		f->nr_cus = 0;
	}
	return err;
}

/* Writes at off of the copy a unit of len bytes in all that holds nothing (a version 4 unit
 * header and no DIE): what libdw steps over, by its length, between the units looked up. */
static int write_padding(int out, __u64 off, __u64 len)
{
	unsigned char h[23] = { 0 };
	size_t n;

	if (len < 0xfffffff0ULL) {
		__u32 l = len - 4;

		memcpy(h, &l, 4);
		h[4] = 4;      /* version */
		h[10] = 8;     /* address size, after the 4-byte abbreviation offset */
		n = 11;
	} else {
		__u64 l = len - 12;

		memset(h, 0xff, 4);
		memcpy(h + 4, &l, 8);
		h[12] = 4;
		h[22] = 8;
		n = 23;
	}
	return len < n || pwrite(out, h, n, off) != (ssize_t)n ? -EIO : 0;
}

/* The ULEB128 at *p (before end), *p moved past it; false when it does not end there. */
static bool read_uleb(const unsigned char **p, const unsigned char *end, __u64 *v)
{
	*v = 0;
	for (unsigned int shift = 0; *p < end; shift += 7) {
		unsigned char b = *(*p)++;

		if (shift < 64)
			*v |= (__u64)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Whether the abbreviations in sh (a section of the copy out) let a DIE refer to another unit's
 * by its offset in .debug_info (DW_FORM_ref_addr: LTO's abstract origins, dwz), or hide their
 * form (DW_FORM_indirect), or cannot be read: then the units stay where they are. */
static bool cross_unit_refs(int out, const GElf_Shdr *sh)
{
	__u64 start = sh->sh_offset & ~4095ULL, len = sh->sh_offset + sh->sh_size - start;
	const unsigned char *map, *p, *end;
	bool found = true;

	if (!sh->sh_size)
		return false;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, out, start);
	if (map == MAP_FAILED)
		return true;
	p = map + (sh->sh_offset - start);
	end = map + len;
	while (p < end) {
		__u64 code, tag, attr, form, c;

		if (!read_uleb(&p, end, &code))
			goto out;
		if (!code)
			continue; /* the end of a unit's table */
		if (!read_uleb(&p, end, &tag) || p == end)
			goto out;
		p++; /* DW_CHILDREN_yes or no */
		do {
			if (!read_uleb(&p, end, &attr) || !read_uleb(&p, end, &form))
				goto out;
			if (form == DW_FORM_ref_addr || form == DW_FORM_indirect ||
			    form == DW_FORM_GNU_ref_alt || form == DW_FORM_ref_sup4 ||
			    form == DW_FORM_ref_sup8)
				goto out;
			/* its value is in the abbreviation: a signed LEB128 */
			if (form == DW_FORM_implicit_const && !read_uleb(&p, end, &c))
				goto out;
		} while (attr || form);
	}
	found = false;
out:
	munmap((void *)map, len);
	return found;
}

/* The size of section sh once inflated, or 0 when it cannot be read. */
static __u64 inflated_size(int fd, const GElf_Shdr *sh)
{
	Elf64_Chdr ch;

	if (!(sh->sh_flags & SHF_COMPRESSED))
		return sh->sh_size;
	if (sh->sh_size < sizeof(ch) || pread(fd, &ch, sizeof(ch), sh->sh_offset) != sizeof(ch))
		return 0;
	return ch.ch_size;
}

/* The units found in .debug_aranges and the fd .debug_info is read from: a copy that failed, or
 * that libdw refused, leaves the file read in as it is. */
static void forget_units(struct sfile *f)
{
	free(f->cus);
	f->cus = NULL;
	f->nr_cus = 0;
	f->sparse = false;
	if (f->info.fd >= 0)
		close(f->info.fd);
	f->info.fd = -1;
}

/* The debug sections of a 64-bit little-endian ELF (its own or a debug file) written out,
 * inflated, into a memfd, which libdw then reads through a mapping: only the pages it touches
 * count in bpfprof's memory, where reading the file in (libelf's ELF_C_READ) allocates every
 * debug section whole and inflates the compressed ones (10 MB for libc6-dbg's libc).  Where
 * the file has .debug_aranges, .debug_info is sparse (struct info_copy): libdw finds a unit by
 * stepping over every unit header before it, which touches each page of the section (6 MB of
 * libc's), and here steps over a few padding units instead.  The memfd's pages are the
 * kernel's (shmem), freed when the file is closed, and no one else can truncate it under the
 * mapping (a mapped file of another user's could be, and a read past its end kills the
 * reader).  Returns the memfd, with *image the size of the ELF image at its start, or -errno
 * when the file is not one to copy (another class or byte order, an object file whose
 * relocations libdw would not apply, compression other than zlib, a dwz'd file): read in
 * then, as before. */
static int debug_copy(struct sfile *f, Elf *elf, int fd, __u64 *image)
{
	GElf_Ehdr eh;
	Elf64_Ehdr oh = { 0 };
	GElf_Shdr *shs = NULL, info = { 0 }, aranges = { 0 }, abbrev = { 0 };
	char *names = NULL;
	size_t shstrndx, nr = 1, names_len = 1, names_cap = 256;
	__u64 pos = sizeof(oh), info_size;
	Elf_Scn *scn = NULL;
	int out = -1, err;

	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type == ET_REL ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return -EOPNOTSUPP;
	out = memfd_create("bpfprof-debug", MFD_CLOEXEC);
	names = malloc(names_cap);
	if (out < 0 || !names) {
		err = out < 0 ? -errno : -ENOMEM;
		goto cleanup;
	}
	names[0] = 0;
	err = 0;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, *n;
		const char *name;
		size_t len;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		/* dwz's shared file (Fedora's debuginfo): libdw finds it from the file's own
		 * path and section, which a copy has not */
		if (!strcmp(name, ".gnu_debugaltlink") || !strcmp(name, ".debug_sup")) {
			err = -EOPNOTSUPP;
			break;
		}
		if (!wanted_section(name) || sh.sh_type == SHT_NOBITS)
			continue;
		f->inflated |= !!(sh.sh_flags & SHF_COMPRESSED);
		len = strlen(name) + 1;
		if (names_len + len + 16 > names_cap) {
			char *m = realloc(names, names_cap * 2 + len);

			if (!m) {
				err = -ENOMEM;
				break;
			}
			names = m;
			names_cap = names_cap * 2 + len;
		}
		/* this section, and after the loop .debug_aranges, .debug_info and .shstrtab */
		n = realloc(shs, (nr + 4) * sizeof(*shs));
		if (!n) {
			err = -ENOMEM;
			break;
		}
		shs = n;
		/* .debug_info last (below); .debug_aranges given to libdw only where the copy
		 * is not sparse (it would read the header of every unit they name) */
		memcpy(names + names_len, name, len);
		sh.sh_name = names_len;
		names_len += len;
		if (!strcmp(name, ".debug_info")) {
			info = sh;
			continue;
		}
		err = copy_section(fd, out, &pos, &sh);
		/* a string section's last byte is a NUL, whatever the file says
		 * (terminate_strings()) */
		if (!err && sh.sh_size && string_section(name, &sh) &&
		    pwrite(out, "", 1, sh.sh_offset + sh.sh_size - 1) != 1)
			err = -EIO;
		sh.sh_link = sh.sh_info = 0;
		if (!strcmp(name, ".debug_abbrev"))
			abbrev = sh;
		if (!strcmp(name, ".debug_aranges"))
			aranges = sh;
		else
			shs[nr++] = sh;
	}
	if (err)
		goto cleanup;
	info_size = inflated_size(fd, &info);
	if (!info_size) {
		err = info.sh_size ? -EINVAL : -ENOENT;
		goto cleanup;
	}
	/* without aranges, or with references from a unit into another, every unit is read
	 * where it is: the sections are copied whole */
	f->sparse = aranges.sh_size && !cross_unit_refs(out, &abbrev) &&
		    !read_aranges(f, out, aranges.sh_offset, aranges.sh_size);
	if (aranges.sh_size && !f->sparse)
		shs[nr++] = aranges;
	if (f->sparse) {
		GElf_Shdr full = info;
		__u64 at;

		pos = (pos + 7) & ~7ULL;
		f->info.sparse = pos;
		f->info.size = info_size;
		f->info.used = 0;
		/* the whole section past the image (whose end is counted here) */
		at = f->info.full = (pos + info_size + names_len + 64 +
				     (nr + 2) * sizeof(Elf64_Shdr) + 4095) & ~4095ULL;
		/* an uncompressed section is read from the file as it is (with pread(), which a
		 * file truncated under it only makes fail): no copy of a vmlinux's 500 MB */
		if (!(info.sh_flags & SHF_COMPRESSED) && (f->info.fd = dup(fd)) >= 0)
			f->info.full = info.sh_offset;
		else
			err = copy_section(fd, out, &at, &full);
		err = err ?: write_padding(out, pos, info_size);
		info.sh_offset = pos;
		info.sh_size = info_size;
		info.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
		info.sh_addralign = 1;
		pos += info_size;
	} else {
		err = copy_section(fd, out, &pos, &info);
	}
	if (err)
		goto cleanup;
	info.sh_link = info.sh_info = 0;
	shs[nr++] = info;
	/* .shstrtab, then the section headers */
	memcpy(names + names_len, ".shstrtab", 10);
	shs[0] = (GElf_Shdr){ 0 };
	shs[nr] = (GElf_Shdr){ .sh_name = names_len, .sh_type = SHT_STRTAB, .sh_offset = pos,
			       .sh_size = names_len + 10, .sh_addralign = 1 };
	names_len += 10;
	if (pwrite(out, names, names_len, pos) != (ssize_t)names_len) {
		err = -EIO;
		goto cleanup;
	}
	pos = (pos + names_len + 7) & ~7ULL;
	for (size_t i = 0; i <= nr; i++) {
		Elf64_Shdr o = {
			.sh_name = shs[i].sh_name, .sh_type = shs[i].sh_type,
			.sh_flags = shs[i].sh_flags, .sh_offset = shs[i].sh_offset,
			.sh_size = shs[i].sh_size, .sh_addralign = shs[i].sh_addralign,
		};

		if (pwrite(out, &o, sizeof(o), pos + i * sizeof(o)) != sizeof(o)) {
			err = -EIO;
			goto cleanup;
		}
	}
	*image = pos + (nr + 1) * sizeof(Elf64_Shdr);
	if (f->sparse && f->info.fd < 0 && *image > f->info.full) {
		err = -EINVAL; /* (cannot be: the room was counted) */
		goto cleanup;
	}
	memcpy(oh.e_ident, eh.e_ident, EI_NIDENT);
	oh.e_type = eh.e_type;
	oh.e_machine = eh.e_machine;
	oh.e_version = eh.e_version;
	oh.e_flags = eh.e_flags;
	oh.e_ehsize = sizeof(oh);
	oh.e_shentsize = sizeof(Elf64_Shdr);
	oh.e_shoff = pos;
	oh.e_shnum = nr + 1;
	oh.e_shstrndx = nr;
	if (pwrite(out, &oh, sizeof(oh), 0) != sizeof(oh))
		err = -EIO;
cleanup:
	free(shs);
	free(names);
	if (err && out >= 0)
		close(out);
	if (err)
		forget_units(f);
	return err ? err : out;
}

/* A unit of a sparse copy (at its offset unit in the file's .debug_info), copied into the copy's
 * section if it is not there yet: after the units copied before it, a padding unit over the
 * rest.  A unit may move so: its DIEs refer to each other relative to its start, to other
 * units never (cross_unit_refs()).  libdw steps from unit to unit from the section's start as
 * far as the unit asked for, and keeps what it read: it never reads the padding at the end,
 * so a unit copied there changes nothing it read, and what it parsed of the others stays.
 * Returns the unit's first DIE's offset in the copy, or 0 when it cannot be read. */
static Dwarf_Off unit_die(struct sfile *f, Dwarf_Off unit)
{
	unsigned char h[16], buf[16 << 10];
	__u64 len, hsize, at = f->info.used, rest;
	__u32 l32;
	__u16 version;
	size_t lo, off = 4;
	int src = f->info.fd >= 0 ? f->info.fd : f->mfd;
	struct cu_range *n;

	/* the units copied, by their place in the file: this one, or the one after it */
	lo = FIRST_AT(f->present, f->nr_present, lo, unit);
	if (lo < f->nr_present && f->present[lo].lo == unit)
		return f->present[lo].die;
	if (unit + 12 > f->info.size || pread(src, h, 12, f->info.full + unit) != 12)
		return 0;
	memcpy(&l32, h, 4);
	len = (__u64)l32 + 4;
	if (l32 == 0xffffffff) {
		memcpy(&len, h + 4, 8);
		len += 12;
		off = 12;
	}
	/* the header after the length: version, unit type (DWARF 5), address size and the
	 * abbreviations' offset, then a skeleton's or split unit's id, a type unit's signature
	 * and type offset */
	if (unit + off + 3 > f->info.size || pread(src, h, 3, f->info.full + unit + off) != 3)
		return 0;
	memcpy(&version, h, 2);
	hsize = off + 2 + 1 + (off == 12 ? 8 : 4);
	if (version >= 5) {
		hsize++;
		if (h[2] == DW_UT_skeleton || h[2] == DW_UT_split_compile)
			hsize += 8;
		else if (h[2] == DW_UT_type || h[2] == DW_UT_split_type)
			hsize += 8 + (off == 12 ? 8 : 4);
	}
	if (len > f->info.size - unit || len < hsize || len > f->info.size - at)
		return 0;
	/* not over the units around it (a section of overlapping units is not one) */
	if ((lo < f->nr_present && unit + len > f->present[lo].lo) ||
	    (lo > 0 && f->present[lo - 1].hi > unit))
		return 0;
	/* what is left after it holds the units not copied: room for a padding unit */
	rest = f->info.size - at - len;
	if (rest && rest < 11)
		return 0;
	n = realloc(f->present, (f->nr_present + 1) * sizeof(*n));
	if (!n)
		return 0;
	f->present = n;
	for (__u64 done = 0; done < len;) {
		size_t chunk = len - done < sizeof(buf) ? len - done : sizeof(buf);

		if (pread(src, buf, chunk, f->info.full + unit + done) != (ssize_t)chunk ||
		    pwrite(f->mfd, buf, chunk, f->info.sparse + at + done) != (ssize_t)chunk)
			return 0;
		done += chunk;
	}
	if (rest && write_padding(f->mfd, f->info.sparse + at + len, rest))
		return 0;
	f->info.used = at + len;
	memmove(f->present + lo + 1, f->present + lo, (f->nr_present - lo) * sizeof(*f->present));
	f->present[lo] = (struct cu_range){ unit, unit + len, at + hsize };
	f->nr_present++;
	return at + hsize;
}

/* libdw (0.188) takes a string of .debug_str or .debug_line_str as ending within its section: a
 * file whose last string has no NUL made it read past the section (found by
 * tests/fuzz/fuzz_srcline.c).  Where the debug info is read in rather than copied, each such
 * section's last byte is made a NUL in libelf's copy (the file is read in, ELF_C_READ: the
 * buffers are ours to write), decompressed first as libdw would. */
static void terminate_strings(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || !string_section(name, &sh))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size)
			((char *)d->d_buf)[d->d_size - 1] = '\0';
	}
}

/* Debug info of an ELF (the file's or its debug file's) through its copy (debug_copy()), or
 * read in where it cannot be copied. */
static Dwarf *begin_dwarf(struct sfile *f, Elf *elf, int fd)
{
	__u64 image = 0;
	int mfd = debug_copy(f, elf, fd, &image);
	Dwarf *dw = NULL;

	if (mfd == -ENOENT)
		return NULL; /* no debug sections */
	if (mfd < 0) {
		terminate_strings(elf);
		return dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	}
	/* the image only: the whole .debug_info past it is read with pread() */
	f->map = mmap(NULL, image, PROT_READ, MAP_SHARED, mfd, 0);
	if (f->map == MAP_FAILED)
		f->map = NULL;
	/* a fault maps its page only, not the 15 around it: libdw reads a unit here and there */
	if (f->map)
		madvise(f->map, image, MADV_RANDOM);
	f->map_size = image;
	f->melf = f->map ? elf_memory(f->map, image) : NULL;
	dw = f->melf ? dwarf_begin_elf(f->melf, DWARF_C_READ, NULL) : NULL;
	if (!dw) {
		elf_end(f->melf);
		if (f->map)
			munmap(f->map, f->map_size);
		f->melf = NULL;
		f->map = NULL;
		forget_units(f);
		close(mfd);
		return NULL;
	}
	f->cus_read = f->sparse;
	f->mfd = mfd;
	return dw;
}

static bool own_debug_info(Elf *elf);

/* The separate debug file of f, looked for once, kept (f->dfd, f->delf) only where it has
 * DWARF: perf's cache of a build-id may hold the binary itself (~/.debug/.build-id/ID/elf),
 * as stripped as the file, which would otherwise get a cache key made (a hash of a
 * compiler's megabytes of call-frame sections) and its debug info looked for at every run. */
static void find_debug_file(struct sfile *f)
{
	if (f->debug_looked)
		return;
	f->debug_looked = true;
	f->dfd = debuginfo_open(f->elf, f->path, f->owner);
	if (f->dfd < 0)
		return;
	f->delf = untrusted_elf(f->dfd);
	if (f->delf && elf_kind(f->delf) == ELF_K_ELF && own_debug_info(f->delf))
		return;
	elf_end(f->delf);
	close(f->dfd);
	f->delf = NULL;
	f->dfd = -1;
}

/* Debug info of an open ELF: its own .debug_info, else its separate debug file's. */
static void open_dwarf(struct sfile *f)
{
	f->dw = begin_dwarf(f, f->elf, f->fd);
	if (f->dw)
		return;
	find_debug_file(f);
	if (f->delf)
		f->dw = begin_dwarf(f, f->delf, f->dfd);
}

/* Whether the ELF has a .debug_info section of its own (compressed or not). */
static bool own_debug_info(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/* The debug info of file f opened (open_dwarf()); then, without debug info or with its copy
 * mapped, nothing more is read from the file (nor the copy's descriptor: libelf reads the
 * mapping): its segments are kept, not the file. */
static void begin_file_dwarf(struct srclines *s, struct sfile *f)
{
	f->deferred = false;
	open_dwarf(f);
	if (f->dw)
		s->dwarf_opened++;
	f->harvest = f->dw && f->src && f->inflated && f->sparse;
	f->harvest_at = 0;
	if (f->melf && !f->sparse) {
		close(f->mfd);
		f->mfd = -1;
	}
	if (!f->dw || f->melf) {
		elf_end(f->delf);
		elf_end(f->elf);
		f->elf = f->delf = NULL;
		if (f->dfd >= 0)
			close(f->dfd);
		close(f->fd);
		f->fd = f->dfd = -1;
	}
}

/* The debug info of a file whose lookups the persistent cache answered so far, opened for one
 * it does not: whether there is some. */
static bool file_dwarf(struct srclines *s, struct sfile *f)
{
	if (f->deferred)
		begin_file_dwarf(s, f);
	return f->dw != NULL;
}

static void open_file(struct srclines *s, struct sfile *f)
{
	/* a path a mapping or a profile named: followed as elf_syms__open() follows it */
	static const struct file_rules named = { .follow = true };
	char key[DISK_CACHE_KEY_MAX];
	struct disk_cache_src src;
	enum file_refusal why;
	struct stat st;
	bool own;

	f->fd = f->dfd = f->mfd = f->info.fd = -1;
	f->debug_looked = false;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		f->err = -EINVAL;
		return;
	}
	f->fd = untrusted_open(AT_FDCWD, f->path, FILE_MAPPED, &named, &st, &why);
	if (f->fd < 0) {
		f->err = f->fd;
		return;
	}
	f->elf = untrusted_elf(f->fd);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		f->err = -ENOEXEC;
		return;
	}
	f->err = read_loads(f);
	if (f->err)
		return;
	f->owner = st.st_uid;
	/* what the cache holds of the file answers without its debug info; what it does not
	 * opens it (file_dwarf()), and what that finds is stored with the rest.  A file with no
	 * debug info of its own nor a debug file has no key made; the key of one that has is
	 * checked by the file's identity (its call-frame sections hashed only when that
	 * changed: a compiler's are megabytes) */
	own = s->cache && own_debug_info(f->elf);
	if (s->cache && !own)
		find_debug_file(f);
	if (s->cache && (own || f->dfd >= 0) && !disk_cache_key_src(f->fd, key, sizeof(key), &src))
		f->src = src_file__open(s->cache, key, &src);
	if (f->src && src_file__loaded(f->src)) {
		f->deferred = true;
		return;
	}
	begin_file_dwarf(s, f);
	if (!f->dw) {
		src_file__free(f->src); /* nothing to store */
		f->src = NULL;
	}
}

static void free_chain(void *c);

static size_t chain_bytes(const struct srcline_chain *c)
{
	return c && c != &no_chain ? srcline_chain_size(c) : 0;
}

static void free_lines(struct lines *ln)
{
	free(ln->rows);
	free(ln->files);
	memset(ln, 0, sizeof(*ln));
}

static size_t lines_bytes(const struct lines *ln)
{
	return ln->nr_rows * sizeof(*ln->rows) + ln->nr_files * sizeof(*ln->files);
}

static void free_cu_index(void *p)
{
	struct cu_index *ix = p;

	free(ix->r);
	free_lines(&ix->lines);
	free(ix->srcfiles);
	free(ix);
}

static void free_fn_scopes(void *p)
{
	struct fn_scopes *x = p;

	free(x->s);
	free(x->r);
	free_lines(&x->lines);
	free(x);
}

/* The file's indexes, dropped (its chains stay). */
static void drop_file_indexes(struct srclines *s, struct sfile *f)
{
	for (size_t j = 0; j < f->cu_indexes.cap; j++) {
		struct cu_index *ix = f->cu_indexes.slots[j].val;

		if (ix && ix->has_lines)
			s->cu_lines_bytes -= lines_bytes(&ix->lines);
	}
	s->index_bytes -= f->index_bytes;
	hashtab_clear(&f->cu_indexes, free_cu_index);
	hashtab_clear(&f->fn_scopes, free_fn_scopes);
	f->nr_units = f->nr_functions = f->index_bytes = 0;
}

static void close_file(struct srclines *s, struct sfile *f)
{
	if (f->dw)
		dwarf_end(f->dw);
	/* what this run added to the cache of the file, stored with what was there */
	if (f->src)
		src_file__store(f->src);
	src_file__free(f->src);
	f->src = NULL;
	f->deferred = false;
	elf_end(f->melf);
	elf_end(f->delf);
	elf_end(f->elf);
	if (f->mfd >= 0)
		close(f->mfd);
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->fd >= 0)
		close(f->fd);
	if (f->map)
		munmap(f->map, f->map_size);
	free(f->loads);
	free(f->cus);
	free(f->present);
	f->present = NULL;
	f->nr_present = 0;
	f->map = NULL;
	f->sparse = false;
	if (f->info.fd >= 0)
		close(f->info.fd);
	f->info.fd = -1;
	drop_file_indexes(s, f);
	f->dw = NULL;
	f->elf = f->delf = f->melf = NULL;
	f->fd = f->dfd = f->mfd = -1;
	f->loads = NULL;
	f->cus = NULL;
	f->nr_loads = f->nr_cus = 0;
	f->cus_read = false;
}

/* Closes the least recently used open file but keep, and drops its chains (their strings
 * stay: frames may still name them). */
static void evict(struct srclines *s, size_t keep)
{
	struct sfile *lru = NULL;
	size_t idx = 0;

	for (size_t i = 0; i < s->nr_files; i++) {
		struct sfile *f = &s->files[i];

		if (i != keep && !f->closed && (f->dw || f->deferred) &&
		    (!lru || f->last_use < lru->last_use)) {
			lru = f;
			idx = i;
		}
	}
	if (!lru)
		return;
	for (size_t i = 0; i < s->chains.cap;) {
		struct hashtab_entry *e = &s->chains.slots[i];

		/* a deletion shifts later entries back into this slot: look at it again */
		if (e->val && e->k2 == idx) {
			s->chain_bytes -= chain_bytes(e->val);
			free_chain(hashtab_del(&s->chains, e->k1, e->k2));
			s->nr_chains--;
		} else
			i++;
	}
	close_file(s, lru);
	lru->closed = true;
	s->nr_open--;
}

/* A file's use: opened on first sight and again after its eviction, the least recently used
 * one closed when too many are open. */
static void use_file(struct srclines *s, struct sfile *f, size_t idx, bool fresh)
{
	f->last_use = ++s->clock;
	if (!fresh && !f->closed)
		return;
	f->closed = false;
	f->err = 0;
	s->opened++;
	open_file(s, f);
	if ((f->dw || f->deferred) && ++s->nr_open > SRCLINE_MAX_OPEN)
		evict(s, idx);
}

/* The file at path, opened on first sight; NULL on ENOMEM. */
static struct sfile *file_of(struct srclines *s, const char *path, size_t *idx)
{
	__u64 h = hash_path(path), probe;
	struct sfile *f;
	void *slot;

	for (probe = 0; (slot = hashtab_get(&s->file_index, h, probe)); probe++) {
		*idx = (uintptr_t)slot - 1;
		if (!strcmp(s->files[*idx].path, path)) {
			use_file(s, &s->files[*idx], *idx, false);
			return &s->files[*idx];
		}
	}
	if (ARRAY_GROW(s->files, s->cap_files, s->nr_files + 1))
		return NULL;
	f = &s->files[s->nr_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path || hashtab_put(&s->file_index, h, probe, (void *)(uintptr_t)(s->nr_files + 1))) {
		free(f->path);
		return NULL;
	}
	*idx = s->nr_files++;
	use_file(s, f, *idx, true);
	return f;
}

static const char *intern(struct srclines *s, const char *str)
{
	int id;

	if (!str)
		return NULL;
	id = stack_names__intern(s->strs, str, strlen(str));
	return id < 0 ? NULL : stack_names__str(s->strs, id);
}

/* A file name of the line table of CU cu, interned, made whole with the unit's DW_AT_comp_dir
 * where it is relative, as addr2line and llvm-symbolizer give it: libdw (0.188) leaves DWARF 5's
 * relative directories as they are ("tests/workloads/inlined.c"), a name that annotate cannot
 * read the source at, nor pprof -list find, but where the program was built. */
static const char *intern_src(struct srclines *s, Dwarf_Die *cu, const char *name)
{
	char full[PATH_MAX];
	Dwarf_Attribute a;
	const char *dir;
	int n = -1;

	/* "<artificial>", "<built-in>": no file */
	if (!name || name[0] == '/' || name[0] == '<')
		return intern(s, name);
	dir = dwarf_formstring(dwarf_attr_integrate(cu, DW_AT_comp_dir, &a));
	if (dir && dir[0])
		n = snprintf(full, sizeof(full), "%s/%s", dir, name);
	return intern(s, n > 0 && (size_t)n < sizeof(full) ? full : name);
}

/* The files of CU cu's line table header into ix, interned, on first use. */
static void read_srcfiles(struct srclines *s, struct cu_index *ix, Dwarf_Die *cu)
{
	Dwarf_Files *files;
	size_t nr;

	ix->srcfiles_read = true;
	if (dwarf_getsrcfiles(cu, &files, &nr) || !nr)
		return;
	ix->srcfiles = calloc(nr, sizeof(*ix->srcfiles));
	if (!ix->srcfiles)
		return;
	for (size_t i = 0; i < nr; i++)
		ix->srcfiles[i] = intern_src(s, cu, dwarf_filesrc(files, i, NULL, NULL));
	ix->nr_srcfiles = nr;
}

/* The file an inlined subroutine's DW_AT_call_file names (interned), or NULL. */
static const char *call_file(struct srclines *s, struct cu_index *ix, Dwarf_Die *cu, Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;

	if (!dwarf_attr(d, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx))
		return NULL;
	if (!ix->srcfiles_read)
		read_srcfiles(s, ix, cu);
	return idx < ix->nr_srcfiles ? ix->srcfiles[idx] : NULL;
}

static __u32 call_line(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Word line;

	if (!dwarf_attr(d, DW_AT_call_line, &a) || dwarf_formudata(&a, &line))
		return 0;
	return line;
}

/* Scopes that may hold code, as a lookup descends (namespaces hold C++ functions and have no
 * addresses of their own: always looked into). */
static int scope_kind(Dwarf_Die *d)
{
	switch (dwarf_tag(d)) {
	case DW_TAG_namespace:
	case DW_TAG_module:
		return SCOPE_ALWAYS;
	case DW_TAG_subprogram:
		return SCOPE_FUNCTION;
	case DW_TAG_inlined_subroutine:
		return SCOPE_INLINED;
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_entry_point:
		return SCOPE_BLOCK;
	default:
		return SCOPE_NONE;
	}
}

/* Whether a lookup at pc descends into d. */
static bool may_hold(Dwarf_Die *d, __u64 pc)
{
	int kind = scope_kind(d);

	return kind == SCOPE_ALWAYS || (kind != SCOPE_NONE && dwarf_haspc(d, pc) == 1);
}

#define MAX_INLINE_DEPTH 64
/* levels a lookup descends at most (lexical blocks between inlined functions count) */
#define MAX_SCOPE_DEPTH (4 * MAX_INLINE_DEPTH)

static int add_fn(Dwarf_Die *d, void *arg)
{
	struct cu_index *ix = arg;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t it = 0;

	while ((it = dwarf_ranges(d, it, &base, &lo, &hi)) > 0) {
		if (ARRAY_GROW(ix->r, ix->cap, ix->nr + 1))
			return DWARF_CB_ABORT;
		ix->r[ix->nr++] = (struct fn_range){ lo, hi, dwarf_dieoffset(d) };
	}
	return DWARF_CB_OK;
}

static int cmp_fn_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool same_line(const struct line_row *a, const struct line_row *b)
{
	return !a->end && !b->end && a->line == b->line && a->file == b->file;
}

/* Appends row r to ix's rows, keeping only those a lookup can find, with what it would find
 * there: of the rows at an address, the last; of the rows of one line in a sequence (a
 * line's columns, statements, views), the first. */
static void add_row(struct lines *ln, const struct line_row *r)
{
	struct line_row *prev = ln->nr_rows ? &ln->rows[ln->nr_rows - 1] : NULL;

	if (prev && prev->addr == r->addr) {
		*prev = *r;
		if (ln->nr_rows > 1 && same_line(&ln->rows[ln->nr_rows - 2], prev))
			ln->nr_rows--;
	} else if (!prev || !same_line(prev, r)) {
		ln->rows[ln->nr_rows++] = *r;
	}
}

/* The CU's line table into ln: the rows a lookup can find, their files interned.  0 or -ENOMEM
 * (a CU without a line table has no rows). */
static int read_lines(struct srclines *s, struct lines *ln, Dwarf_Die *cu)
{
	const char **names = NULL; /* libdw's name of each of ln->files */
	size_t nr = 0, last = 0;
	Dwarf_Lines *lines;
	int err = -ENOMEM;

	if (dwarf_getsrclines(cu, &lines, &nr) || !nr)
		return 0;
	s->parsed += nr;
	ln->rows = malloc(nr * sizeof(*ln->rows));
	ln->files = calloc(1, sizeof(*ln->files));
	names = calloc(1, sizeof(*names));
	if (!ln->rows || !ln->files || !names)
		goto cleanup;
	ln->nr_files = 1;
	for (size_t i = 0; i < nr; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr = 0;
		const char *name;
		bool end = false;
		int line = 0;
		size_t k;

		if (!l || dwarf_lineaddr(l, &addr) || dwarf_lineendsequence(l, &end))
			continue;
		dwarf_lineno(l, &line);
		/* a file's rows come together: the last one's, else one of those seen */
		name = dwarf_linesrc(l, NULL, NULL);
		for (k = names[last] == name ? last : 0; k < ln->nr_files && names[k] != name; k++)
			;
		if (k == ln->nr_files) {
			const char **n = realloc(names, (k + 1) * sizeof(*n));
			const char **m = n ? realloc(ln->files, (k + 1) * sizeof(*m)) : NULL;

			if (n)
				names = n;
			if (!m || k > UINT16_MAX)
				goto cleanup;
			ln->files = m;
			names[k] = name;
			ln->files[k] = intern_src(s, cu, name);
			ln->nr_files++;
		}
		last = k;
		add_row(ln, &(struct line_row){ addr, line > 0 ? line : 0, k, end });
	}
	/* (what was read, then what is kept) */
	if (ln->nr_rows < nr) {
		struct line_row *m = realloc(ln->rows, (ln->nr_rows ?: 1) * sizeof(*m));

		if (m)
			ln->rows = m;
	}
	err = 0;
cleanup:
	free(names);
	if (err)
		free_lines(ln);
	return err;
}

/* The first of ln's rows at or above addr. */
static size_t first_row_at(const struct lines *ln, __u64 addr)
{
	return FIRST_AT(ln->rows, ln->nr_rows, addr, addr);
}

/* The rows of a CU's table cu a lookup in the nr ranges r (by lo, not overlapping) can find,
 * into ln: those in each range and the last before it (the row of its first addresses, when
 * no row begins it).  0 or -ENOMEM. */
static int range_lines(struct lines *ln, const struct lines *cu, const struct addr_range *r,
		       size_t nr)
{
	size_t end = 0, want = 0, *map = calloc(cu->nr_files ?: 1, sizeof(*map));

	if (!map)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		end = 0;
		for (size_t i = 0; i < nr; i++) {
			size_t first = first_row_at(cu, r[i].lo), to = first_row_at(cu, r[i].hi);

			first = first ? first - 1 : 0;
			if (first < end)
				first = end; /* (the range before reached it) */
			for (size_t j = first; j < to; j++) {
				const struct line_row *row = &cu->rows[j];
				struct line_row copy = *row;

				if (!pass) {
					want++;
					continue;
				}
				if (!map[row->file]) {
					map[row->file] = ++ln->nr_files;
					ln->files[ln->nr_files - 1] = cu->files[row->file];
				}
				copy.file = map[row->file] - 1;
				add_row(ln, &copy);
			}
			end = to > end ? to : end;
		}
		if (!pass) {
			ln->rows = malloc((want ?: 1) * sizeof(*ln->rows));
			ln->files = malloc((cu->nr_files ?: 1) * sizeof(*ln->files));
			if (!ln->rows || !ln->files) {
				free(map);
				free_lines(ln);
				return -ENOMEM;
			}
		}
	}
	free(map);
	return 0;
}

/* The row of the line table for pc, as dwarf_getsrc_die() finds it: the last row at or below
 * pc, unless that is the end of a sequence; NULL when there is none. */
static const struct line_row *row_at(const struct lines *ln, __u64 pc)
{
	size_t n = FIRST_ABOVE(ln->rows, ln->nr_rows, addr, pc);

	return n && !ln->rows[n - 1].end ? &ln->rows[n - 1] : NULL;
}

/* The index of CU cu (at offset off): its functions and lines, read on first sight.  NULL on
 * ENOMEM. */
static struct cu_index *cu_index(struct srclines *s, struct sfile *f, Dwarf_Die *cu, Dwarf_Off off)
{
	struct cu_index *ix = hashtab_get(&f->cu_indexes, off, 0);
	size_t bytes;

	if (ix)
		return ix;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return NULL;
	dwarf_getfuncs(cu, add_fn, ix, 0);
	if (ix->nr)
		qsort(ix->r, ix->nr, sizeof(*ix->r), cmp_fn_range);
	if (hashtab_put(&f->cu_indexes, off, 0, ix)) {
		free_cu_index(ix);
		return NULL;
	}
	f->nr_units++;
	s->built++;
	read_libdw(s);
	bytes = sizeof(*ix) + ix->cap * sizeof(*ix->r);
	f->index_bytes += bytes;
	s->index_bytes += bytes;
	return ix;
}

/* The least recently used units' line tables dropped until they take at most half of
 * SRCLINE_CU_LINES_MAX. */
static void drop_cu_lines(struct srclines *s)
{
	while (s->cu_lines_bytes > SRCLINE_CU_LINES_MAX / 2) {
		struct cu_index *lru = NULL;

		for (size_t i = 0; i < s->nr_files; i++) {
			struct hashtab *h = &s->files[i].cu_indexes;

			for (size_t j = 0; j < h->cap; j++) {
				struct cu_index *ix = h->slots[j].val;

				if (ix && ix->has_lines && (!lru || ix->lines_use < lru->lines_use))
					lru = ix;
			}
		}
		if (!lru)
			return;
		s->cu_lines_bytes -= lines_bytes(&lru->lines);
		free_lines(&lru->lines);
		lru->has_lines = false;
	}
}

/* The line table of CU cu (index ix), read if it is not held.  NULL on ENOMEM. */
static const struct lines *cu_lines(struct srclines *s, struct cu_index *ix, Dwarf_Die *cu)
{
	ix->lines_use = ++s->lines_clock;
	if (ix->has_lines)
		return &ix->lines;
	if (read_lines(s, &ix->lines, cu))
		return NULL;
	ix->has_lines = true;
	s->cu_lines_bytes += lines_bytes(&ix->lines);
	if (s->cu_lines_bytes > SRCLINE_CU_LINES_MAX)
		drop_cu_lines(s);
	return ix->has_lines ? &ix->lines : NULL;
}

/* The concrete function of a CU containing pc, from its index: its DIE's offset, or 0. */
static Dwarf_Off function_at(const struct cu_index *ix, __u64 pc)
{
	size_t lo = FIRST_ABOVE(ix->r, ix->nr, lo, pc);

	for (size_t i = lo; i > 0 && lo - i < 8; i--)
		if (pc >= ix->r[i - 1].lo && pc < ix->r[i - 1].hi)
			return ix->r[i - 1].die;
	return 0;
}

/* The name of function or inlined subroutine d, interned: its linkage name demangled as symbols
 * are (C++: "cmp<int>::operator()(int, int) const", where DW_AT_name says "operator()"), so that
 * an inlined copy and the function's own code have the one name; else DW_AT_name (C). */
static const char *scope_name(struct srclines *s, Dwarf_Die *d)
{
	Dwarf_Attribute a, *at = dwarf_attr_integrate(d, DW_AT_linkage_name, &a);
	const char *linkage, *key, *name;
	char *dm;

	linkage = dwarf_formstring(at ?: dwarf_attr_integrate(d, DW_AT_MIPS_linkage_name, &a));
	if (!linkage || linkage[0] != '_' || linkage[1] != 'Z')
		return intern(s, dwarf_diename(d));
	/* demangled once: a template's every inlined copy has the one name (a 2 us call each) */
	key = intern(s, linkage);
	name = key ? hashtab_get(&s->demangled, (uintptr_t)key, 0) : NULL;
	if (name)
		return name;
	dm = demangle(linkage);
	name = intern(s, dm ?: dwarf_diename(d));
	free(dm);
	/* (ENOMEM: demangled again the next time) */
	if (key && name)
		hashtab_put(&s->demangled, (uintptr_t)key, 0, (void *)name);
	return name;
}

/* Scope d (of kind) and, below depth levels, the scopes in it, appended to x.  0 or -ENOMEM. */
static int add_scope(struct srclines *s, struct fn_scopes *x, struct cu_index *ix, Dwarf_Die *cu,
		     Dwarf_Die *d, int kind, int depth)
{
	size_t at = x->nr;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t it = 0;
	Dwarf_Die child;
	struct scope *sc;

	if (ARRAY_GROW(x->s, x->cap, x->nr + 1))
		return -ENOMEM;
	sc = &x->s[x->nr++];
	memset(sc, 0, sizeof(*sc));
	sc->kind = kind;
	sc->ranges = x->nr_r;
	if (kind == SCOPE_FUNCTION || kind == SCOPE_INLINED)
		sc->name = scope_name(s, d);
	if (kind == SCOPE_INLINED) {
		sc->call_file = call_file(s, ix, cu, d);
		sc->call_line = call_line(d);
	}
	/* what dwarf_haspc() would test */
	while (kind != SCOPE_ALWAYS && (it = dwarf_ranges(d, it, &base, &lo, &hi)) > 0) {
		if (ARRAY_GROW(x->r, x->cap_r, x->nr_r + 1))
			return -ENOMEM;
		x->r[x->nr_r].lo = lo;
		x->r[x->nr_r++].hi = hi;
	}
	x->s[at].nr_ranges = x->nr_r - x->s[at].ranges;
	if (depth < MAX_SCOPE_DEPTH && dwarf_child(d, &child) == 0) {
		do {
			int k = scope_kind(&child);
			int err = k != SCOPE_NONE ? add_scope(s, x, ix, cu, &child, k, depth + 1) : 0;

			if (err)
				return err;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	x->s[at].next = x->nr;
	return 0;
}

/* The scopes of the concrete function at DIE offset die, read on first sight.  NULL when it
 * cannot be read, or on ENOMEM. */
static int cmp_addr_range(const void *a, const void *b)
{
	const struct addr_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* What an index of a function's scopes holds. */
static size_t scopes_bytes(const struct fn_scopes *x)
{
	return sizeof(*x) + x->cap * sizeof(*x->s) + x->cap_r * sizeof(*x->r) +
	       lines_bytes(&x->lines);
}

/* The scopes of the concrete function at DIE offset die of CU cu (index ix) and the rows of
 * the CU's line table for its addresses, read on first sight.  NULL when it cannot be read, or
 * on ENOMEM. */
static struct fn_scopes *fn_scopes(struct srclines *s, struct sfile *f, Dwarf_Die *cu,
				   struct cu_index *ix, Dwarf_Off die)
{
	struct fn_scopes *x = hashtab_get(&f->fn_scopes, die, 0);
	struct addr_range *own = NULL;
	const struct lines *cl;
	Dwarf_Die fn;
	size_t bytes;
	int err;

	if (x)
		return x;
	if (!dwarf_offdie(f->dw, die, &fn))
		return NULL;
	x = calloc(1, sizeof(*x));
	err = !x || add_scope(s, x, ix, cu, &fn, SCOPE_FUNCTION, 0) || !(cl = cu_lines(s, ix, cu));
	if (!err) {
		/* its own ranges, in order */
		own = malloc((x->s[0].nr_ranges ?: 1) * sizeof(*own));
		err = !own;
	}
	if (!err) {
		memcpy(own, x->r + x->s[0].ranges, x->s[0].nr_ranges * sizeof(*own));
		qsort(own, x->s[0].nr_ranges, sizeof(*own), cmp_addr_range);
		err = range_lines(&x->lines, cl, own, x->s[0].nr_ranges);
	}
	free(own);
	if (err || hashtab_put(&f->fn_scopes, die, 0, x)) {
		if (x)
			free_fn_scopes(x);
		return NULL;
	}
	f->nr_functions++;
	s->built++;
	read_libdw(s);
	bytes = scopes_bytes(x);
	f->index_bytes += bytes;
	s->index_bytes += bytes;
	return x;
}

static bool scope_holds(const struct fn_scopes *x, const struct scope *sc, __u64 pc)
{
	if (sc->kind == SCOPE_ALWAYS)
		return true;
	for (__u32 i = sc->ranges; i < sc->ranges + sc->nr_ranges; i++)
		if (pc >= x->r[i].lo && pc < x->r[i].hi)
			return true;
	return false;
}

/* A level of an address's chain: its function, and where that called the level inside it. */
struct level {
	const char *name;
	bool inlined;
	const char *call_file;
	__u32 call_line;
};

/* The levels of function x at pc, outermost first: the function, then each function inlined
 * there, as a descent of the DIE tree finds them (the first scope at each level that holds
 * pc).  Returns how many, at most max. */
static int scopes_at(const struct fn_scopes *x, __u64 pc, struct level *out, int max)
{
	__u32 cur = 0;
	int n = 0;

	out[n++] = (struct level){ x->s[0].name };
	for (int depth = 0; depth < MAX_SCOPE_DEPTH; depth++) {
		__u32 j;

		for (j = cur + 1; j < x->s[cur].next && !scope_holds(x, &x->s[j], pc);
		     j = x->s[j].next)
			;
		if (j >= x->s[cur].next)
			break;
		cur = j;
		if (x->s[j].kind == SCOPE_FUNCTION || x->s[j].kind == SCOPE_INLINED)
			if (n < max)
				out[n++] = (struct level){ x->s[j].name,
							   x->s[j].kind == SCOPE_INLINED,
							   x->s[j].call_file, x->s[j].call_line };
	}
	return n;
}

/* The same, for an address of no concrete function the CU's index knows: a descent of the
 * CU's whole tree. */
static int cu_scopes_at(struct srclines *s, struct cu_index *ix, Dwarf_Die *cu, __u64 pc,
			struct level *out, int max)
{
	Dwarf_Die parent = *cu, child;
	int n = 0, depth = 0;

	while (depth++ < MAX_SCOPE_DEPTH && dwarf_child(&parent, &child) == 0) {
		bool found = false;

		do {
			int kind;

			if (!may_hold(&child, pc))
				continue;
			kind = scope_kind(&child);
			if ((kind == SCOPE_FUNCTION || kind == SCOPE_INLINED) && n < max)
				out[n++] = (struct level){
					scope_name(s, &child), kind == SCOPE_INLINED,
					kind == SCOPE_INLINED ? call_file(s, ix, cu, &child) : NULL,
					kind == SCOPE_INLINED ? call_line(&child) : 0 };
			parent = child;
			found = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every CU's address ranges, sorted: read once, where the file has no .debug_aranges. */
static void read_cu_ranges(struct sfile *f)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	f->cus_read = true;
	while (dwarf_nextcu(f->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;

		if (dwarf_offdie(f->dw, off + hsize, &cu)) {
			while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
				if (ARRAY_GROW(f->cus, cap, f->nr_cus + 1))
					return;
				f->cus[f->nr_cus++] = (struct cu_range){ lo, hi, off + hsize };
			}
		}
		off = next;
	}
	if (f->nr_cus)
		qsort(f->cus, f->nr_cus, sizeof(*f->cus), cmp_range);
}

/* The offset of the DIE of the CU containing vaddr: by .debug_aranges, else (clang does not
 * emit them by default) by the CUs' own ranges.  false when none does. */
static bool cu_at(struct sfile *f, __u64 vaddr, Dwarf_Off *off)
{
	size_t lo;
	Dwarf_Die cu;

	f->dirty |= !f->sparse;
	if (!f->sparse && dwarf_addrdie(f->dw, vaddr, &cu)) {
		*off = dwarf_dieoffset(&cu);
		return true;
	}
	if (!f->cus_read)
		read_cu_ranges(f);
	/* the last range starting at or below vaddr, then back over overlapping ones */
	lo = FIRST_ABOVE(f->cus, f->nr_cus, lo, vaddr);
	for (size_t i = lo; i > 0; i--) {
		if (vaddr < f->cus[i - 1].lo || vaddr >= f->cus[i - 1].hi)
			continue;
		/* a sparse copy's ranges name their unit's header: copied in when first met */
		*off = f->sparse ? unit_die(f, f->cus[i - 1].die) : f->cus[i - 1].die;
		return *off != 0;
	}
	return false;
}

/* The chain of levels (n of them, outermost first) at an address whose line is file:lineno:
 * malloc'd, or NULL on ENOMEM. */
static struct srcline_chain *make_chain(const struct level *levels, int n, const char *file,
					__u32 lineno)
{
	struct srcline_chain *c = malloc(sizeof(*c) + (n ?: 1) * sizeof(c->f[0]));

	if (!c)
		return NULL;
	if (!n) {
		/* lines but no function DIE (assembly): one frame, its line */
		c->nr = 1;
		c->f[0] = (struct srcline_frame){ NULL, file, lineno };
		return c;
	}
	c->nr = n;
	/* innermost first: each inlined level's call site is the line of the frame around it */
	for (int i = n - 1; i >= 0; i--) {
		c->f[i] = (struct srcline_frame){ levels[i].name, file, lineno };
		if (levels[i].inlined) {
			file = levels[i].call_file;
			lineno = levels[i].call_line;
		}
	}
	return c;
}

/* The chain at vaddr of function x (or, x->nr 0, of code of no function): what chain_at()
 * gives, from x alone.  NULL on ENOMEM. */
static struct srcline_chain *scopes_chain(const struct fn_scopes *x, __u64 vaddr)
{
	struct level levels[MAX_INLINE_DEPTH];
	const struct line_row *row = row_at(&x->lines, vaddr);
	int n = x->nr ? scopes_at(x, vaddr, levels, MAX_INLINE_DEPTH) : 0;

	return make_chain(levels, n, row ? x->lines.files[row->file] : NULL, row ? row->line : 0);
}

/* The span [*lo, *hi) around vaddr in which cu_at() finds what it finds for vaddr (the same
 * unit, or none), from the units' ranges (f->cus_read). */
static void cu_span(const struct sfile *f, __u64 vaddr, __u64 *lo, __u64 *hi)
{
	size_t at = FIRST_ABOVE(f->cus, f->nr_cus, lo, vaddr), chosen = at;

	for (size_t i = at; i > 0; i--) {
		if (vaddr >= f->cus[i - 1].lo && vaddr < f->cus[i - 1].hi) {
			chosen = i - 1;
			break;
		}
	}
	*lo = chosen < at ? f->cus[chosen].lo : 0;
	*hi = at < f->nr_cus ? f->cus[at].lo : UINT64_MAX;
	if (chosen < at && f->cus[chosen].hi < *hi)
		*hi = f->cus[chosen].hi;
	/* the ranges cu_at() looks at before the one it found, which do not hold vaddr (and
	 * every one, where none does) */
	for (size_t i = chosen < at ? chosen + 1 : 0; i < at; i++)
		if (f->cus[i].hi > *lo)
			*lo = f->cus[i].hi;
}

/* The span [*lo, *hi) around pc in which function_at() finds what it finds at pc (its first
 * call, with FIRST_ABOVE(), and its choice among the 8 ranges before: the same).  false where
 * it finds none. */
static bool fn_span(const struct cu_index *ix, __u64 pc, __u64 *lo, __u64 *hi)
{
	size_t at = FIRST_ABOVE(ix->r, ix->nr, lo, pc), chosen = at;

	for (size_t i = at; i > 0 && at - i < 8; i--) {
		if (pc >= ix->r[i - 1].lo && pc < ix->r[i - 1].hi) {
			chosen = i - 1;
			break;
		}
	}
	if (chosen == at)
		return false;
	*lo = ix->r[chosen].lo;
	*hi = ix->r[chosen].hi;
	if (at < ix->nr && ix->r[at].lo < *hi)
		*hi = ix->r[at].lo;
	/* those it looks at first, which end before pc */
	for (size_t i = chosen + 1; i < at; i++)
		if (ix->r[i].hi > *lo)
			*lo = ix->r[i].hi;
	return true;
}

/* Whether a scope DIE (a function, an inlined one, a block) among the children of d, or in its
 * namespaces, may hold an address in [lo, hi); true also past *budget DIEs looked at. */
static bool scopes_within(Dwarf_Die *d, __u64 lo, __u64 hi, int *budget, int depth)
{
	Dwarf_Die child;

	if (dwarf_child(d, &child))
		return false;
	do {
		Dwarf_Addr base, a, b;
		ptrdiff_t it = 0;
		int kind = scope_kind(&child);

		if (--*budget < 0 || depth > MAX_SCOPE_DEPTH)
			return true;
		if (kind == SCOPE_ALWAYS && scopes_within(&child, lo, hi, budget, depth + 1))
			return true;
		if (kind == SCOPE_NONE || kind == SCOPE_ALWAYS)
			continue;
		while ((it = dwarf_ranges(&child, it, &base, &a, &b)) > 0)
			if (a < hi && b > lo)
				return true;
		if (it < 0)
			return true; /* ranges it cannot read: not known not to */
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Records in the file's persistent cache the region around vaddr that function x (found by
 * function_at() in unit index ix) answers: where the lookup goes the same way (cu_span() where
 * the units' ranges are read, fn_span()).  Its entry is written once. */
static void cache_function(struct sfile *f, const struct cu_index *ix, struct fn_scopes *x,
			   __u64 vaddr)
{
	__u64 lo, hi, clo = 0, chi = UINT64_MAX;
	__u32 held;
	long entry;

	/* stored in the middle of the run (src_file__flush()): no second entry */
	if (src_file__find(f->src, vaddr, &held) != SRC_NONE || !fn_span(ix, vaddr, &lo, &hi))
		return;
	if (f->cus_read)
		cu_span(f, vaddr, &clo, &chi);
	lo = lo > clo ? lo : clo;
	hi = hi < chi ? hi : chi;
	if (lo > vaddr || hi <= vaddr)
		return;
	if (!x->cache_entry) {
		entry = src_file__add_entry(f->src, x, false);
		if (entry < 0)
			return;
		x->cache_entry = entry + 1;
	}
	src_file__add_region(f->src, SRC_FUNCTION, lo, hi, x->cache_entry - 1);
}

/* Records in the file's persistent cache the region around vaddr answered as code of no
 * function of unit cu (index ix): the span in which the lookup goes the same way (cu_span(),
 * between the unit's functions, no scope in it), with the unit's line rows for it. */
static void cache_no_function(struct srclines *s, struct sfile *f, struct cu_index *ix,
			      Dwarf_Die *cu, __u64 vaddr)
{
	struct fn_scopes x = { 0 };
	const struct lines *cl;
	struct addr_range r = { 0, UINT64_MAX };
	bool span = f->cus_read;
	int budget = 512;
	long entry;

	if (span)
		cu_span(f, vaddr, &r.lo, &r.hi);
	for (size_t i = 0; span && i < ix->nr; i++) {
		/* a function function_at() did not find (overlaps) */
		span = !(ix->r[i].lo <= vaddr && ix->r[i].hi > vaddr);
		if (ix->r[i].lo <= vaddr && ix->r[i].hi > r.lo)
			r.lo = ix->r[i].hi;
		if (ix->r[i].lo > vaddr && ix->r[i].lo < r.hi)
			r.hi = ix->r[i].lo;
	}
	/* where the span is not known to go the same way (a scope in it the descent did not
	 * reach, the units' ranges not read), the address alone: its answer is this one */
	if (!span || r.lo > vaddr || r.hi <= vaddr || scopes_within(cu, r.lo, r.hi, &budget, 0))
		r = (struct addr_range){ vaddr, vaddr + 1 };
	if (!(cl = cu_lines(s, ix, cu)) || range_lines(&x.lines, cl, &r, 1))
		return;
	entry = src_file__add_entry(f->src, &x, true);
	if (entry >= 0)
		src_file__add_region(f->src, SRC_NO_FUNCTION, r.lo, r.hi, entry);
	free_lines(&x.lines);
}

/* The chain at vaddr of a file with debug info: malloc'd, or NULL when the debug info does not
 * cover it (*err 0) or on ENOMEM (*err set).  libdw is asked only for what was not read
 * before: the CU's index at its first lookup, a function's scopes at its first.  What it
 * finds goes to the file's persistent cache too (f->src). */
static struct srcline_chain *chain_at(struct srclines *s, struct sfile *f, __u64 vaddr, int *err)
{
	struct level levels[MAX_INLINE_DEPTH];
	const struct line_row *row;
	struct srcline_chain *c;
	struct cu_index *ix;
	struct fn_scopes *x = NULL;
	const char *file = NULL;
	bool have_cu = false, had_files;
	__u32 lineno = 0;
	Dwarf_Off off, fn;
	Dwarf_Die cu;
	int n = 0;

	*err = 0;
	if (!cu_at(f, vaddr, &off)) {
		struct addr_range r;

		/* cu_at() read every unit's ranges to find none */
		if (f->src && f->cus_read) {
			cu_span(f, vaddr, &r.lo, &r.hi);
			src_file__add_region(f->src, SRC_UNCOVERED, r.lo, r.hi, 0);
		}
		return NULL;
	}
	ix = hashtab_get(&f->cu_indexes, off, 0);
	if (!ix) {
		f->dirty = true;
		read_libdw(s);
		if (!dwarf_offdie(f->dw, off, &cu))
			return NULL;
		have_cu = true;
		ix = cu_index(s, f, &cu, off);
		if (!ix) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	had_files = ix->srcfiles_read;
	fn = function_at(ix, vaddr);
	if (fn)
		x = hashtab_get(&f->fn_scopes, fn, 0);
	f->dirty |= !x;
	if (!x && (have_cu || dwarf_offdie(f->dw, off, &cu))) {
		have_cu = true;
		x = fn ? fn_scopes(s, f, &cu, ix, fn) : NULL;
	}
	if (x) {
		row = row_at(&x->lines, vaddr);
		if (row) {
			file = x->lines.files[row->file];
			lineno = row->line;
		}
		n = scopes_at(x, vaddr, levels, MAX_INLINE_DEPTH);
		if (f->src)
			cache_function(f, ix, x, vaddr);
	} else if (have_cu) {
		/* code of no function the CU's index knows (assembly): from libdw each time */
		Dwarf_Line *line = dwarf_getsrc_die(&cu, vaddr);

		if (line) {
			int l = 0;

			file = intern_src(s, &cu, dwarf_linesrc(line, NULL, NULL));
			dwarf_lineno(line, &l);
			lineno = l > 0 ? l : 0;
		}
		n = cu_scopes_at(s, ix, &cu, vaddr, levels, MAX_INLINE_DEPTH);
		s->built++;
		read_libdw(s);
		if (f->src && !fn && !n)
			cache_no_function(s, f, ix, &cu, vaddr);
	}
	if (!had_files && ix->srcfiles_read) {
		f->index_bytes += ix->nr_srcfiles * sizeof(*ix->srcfiles);
		s->index_bytes += ix->nr_srcfiles * sizeof(*ix->srcfiles);
	}
	c = make_chain(levels, n, file, lineno);
	if (!c)
		*err = -ENOMEM;
	return c;
}

/* The chain at vaddr from the file's persistent cache, where it holds vaddr's region: *c
 * (NULL for an address no unit covers) and true; false where it does not (nor an entry that
 * failed its checks: the debug info answers).  *err -ENOMEM. */
static bool cached_chain(struct srclines *s, struct sfile *f, __u64 vaddr,
			 struct srcline_chain **c, int *err)
{
	enum src_region kind;
	struct fn_scopes *x;
	__u32 entry;

	*c = NULL;
	*err = 0;
	kind = f->src ? src_file__find(f->src, vaddr, &entry) : SRC_NONE;
	if (kind == SRC_NONE)
		return false;
	if (kind == SRC_UNCOVERED)
		return true;
	/* an entry read is kept with the indexes (its key apart from the functions' DIEs) */
	x = hashtab_get(&f->fn_scopes, entry, 1);
	if (!x) {
		size_t bytes;

		*err = src_file__entry(f->src, entry, kind, s->strs, &x);
		if (*err == -EBADMSG)
			*err = 0;
		if (*err || !x)
			return *err != 0;
		if (hashtab_put(&f->fn_scopes, entry, 1, x)) {
			free_fn_scopes(x);
			*err = -ENOMEM;
			return true;
		}
		bytes = scopes_bytes(x);
		f->nr_functions++;
		f->index_bytes += bytes;
		s->index_bytes += bytes;
	}
	*c = scopes_chain(x, vaddr);
	if (!*c)
		*err = -ENOMEM;
	s->cache_answers++;
	return true;
}

static void unmap_copies(struct srclines *s);

/* The least recently used files' indexes dropped, but keep's, until they take at most half of
 * SRCLINE_INDEX_MAX; keep's too if that is not enough. */
static void drop_indexes(struct srclines *s, size_t keep)
{
	while (s->index_bytes > SRCLINE_INDEX_MAX / 2) {
		struct sfile *lru = NULL;

		for (size_t i = 0; i < s->nr_files; i++)
			if (i != keep && s->files[i].index_bytes &&
			    (!lru || s->files[i].last_use < lru->last_use))
				lru = &s->files[i];
		if (!lru) {
			drop_file_indexes(s, &s->files[keep]);
			return;
		}
		drop_file_indexes(s, lru);
		s->drops++;
	}
}

/* What the files hold to store in the persistent cache, bounded (SRCLINE_PENDING_MAX): the file
 * holding the most stored and read back.  The entry numbers its indexes held go with it: the
 * functions read from the cache (keyed by their entry's number) go, and those made from libdw
 * that it stored (answered from it from now on, read back if asked again); those it could
 * not store keep their scopes, not their number. */
static void bound_pending(struct srclines *s)
{
	struct sfile *most = NULL;
	size_t total = 0, most_bytes = 0;
	bool stored;

	for (size_t i = 0; i < s->nr_files; i++) {
		size_t b = s->files[i].src ? src_file__pending(s->files[i].src) : 0;

		total += b;
		if (b > most_bytes) {
			most_bytes = b;
			most = &s->files[i];
		}
	}
	if (total <= SRCLINE_PENDING_MAX)
		return;
	stored = !src_file__flush(most->src);
	for (size_t i = 0; i < most->fn_scopes.cap;) {
		struct hashtab_entry *e = &most->fn_scopes.slots[i];
		struct fn_scopes *x = e->val;

		if (x && (e->k2 == 1 || (stored && x->cache_entry))) {
			/* a deletion shifts later entries back into this slot: look at it again */
			size_t bytes = scopes_bytes(x);

			free_fn_scopes(hashtab_del(&most->fn_scopes, e->k1, e->k2));
			most->nr_functions--;
			most->index_bytes -= bytes;
			s->index_bytes -= bytes;
			continue;
		}
		if (x)
			x->cache_entry = 0;
		i++;
	}
}

/* The chain at vaddr of file f (index idx), which has debug info. */
static int lookup_in(struct srclines *s, struct sfile *f, size_t idx, __u64 vaddr,
		     const struct srcline_chain **chain)
{
	struct srcline_chain *c;
	int err;

	s->lookups++;
	c = hashtab_get(&s->chains, vaddr, idx);
	if (c) {
		s->hits++;
		*chain = c;
		return c->nr ? 0 : -ENXIO;
	}
	if (!cached_chain(s, f, vaddr, &c, &err)) {
		if (file_dwarf(s, f))
			c = chain_at(s, f, vaddr, &err);
		else
			err = 0; /* the cache held the file's, its debug info is gone */
		bound_pending(s);
	}
	/* (the chain's strings are interned: nothing of libdw's is kept) */
	if (s->built >= SRCLINE_RELEASE_EVERY || s->parsed >= SRCLINE_RELEASE_ROWS)
		srclines__release(s);
	else if (s->built - s->unmapped >= SRCLINE_UNMAP_EVERY)
		unmap_copies(s);
	if (s->index_bytes > SRCLINE_INDEX_MAX)
		drop_indexes(s, idx);
	if (err)
		return err;
	if (s->nr_chains >= SRCLINE_MAX_CHAINS) {
		hashtab_clear(&s->chains, free_chain);
		s->nr_chains = s->chain_bytes = 0;
	}
	if (hashtab_put(&s->chains, vaddr, idx, c ?: &no_chain)) {
		free(c);
		return -ENOMEM;
	}
	s->nr_chains++;
	s->chain_bytes += chain_bytes(c);
	*chain = c ?: &no_chain;
	return c ? 0 : -ENXIO;
}

/* The file at path with debug info, opened if needed; NULL with *err set otherwise (-ENOENT: no
 * debug info). */
static struct sfile *file_with_dwarf(struct srclines *s, const char *path, size_t *idx, int *err)
{
	struct sfile *f = file_of(s, path, idx);

	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	if (f->err || (!f->dw && !f->deferred)) {
		*err = f->err && f->err != -ENOEXEC ? f->err : -ENOENT;
		return NULL;
	}
	return f;
}

/* The units' gaps (no unit covers them) into f's persistent cache: in order, the ranges
 * before each not reached by those before it. */
static void harvest_uncovered(struct sfile *f)
{
	__u64 end = 0;

	for (size_t i = 0; i < f->nr_cus; i++) {
		if (f->cus[i].lo > end)
			src_file__add_region(f->src, SRC_UNCOVERED, end, f->cus[i].lo, 0);
		if (f->cus[i].hi > end)
			end = f->cus[i].hi;
	}
	if (f->nr_cus && end < UINT64_MAX)
		src_file__add_region(f->src, SRC_UNCOVERED, end, UINT64_MAX, 0);
}

/* Every function of the unit of range u of f into its persistent cache (those the cache does
 * not hold yet), as a lookup at each would put it. */
static void harvest_unit(struct srclines *s, struct sfile *f, size_t idx, const struct cu_range *u)
{
	enum src_region kind;
	struct cu_index *ix;
	Dwarf_Off off;
	Dwarf_Die cu;
	__u32 entry;

	kind = src_file__find(f->src, u->lo, &entry);
	if (kind != SRC_NONE && src_file__find(f->src, u->hi - 1, &entry) != SRC_NONE)
		return; /* stored by a run before */
	off = f->sparse ? unit_die(f, u->die) : u->die;
	if (!off || !dwarf_offdie(f->dw, off, &cu))
		return;
	f->dirty = true;
	read_libdw(s);
	ix = cu_index(s, f, &cu, off);
	if (!ix || ix->harvested)
		return;
	ix->harvested = true;
	for (size_t i = 0; i < ix->nr; i++) {
		/* the function a lookup there finds (of aliases at one address, one) */
		Dwarf_Off fn = function_at(ix, ix->r[i].lo);
		struct fn_scopes *x;

		if (!fn || src_file__find(f->src, ix->r[i].lo, &entry) != SRC_NONE)
			continue;
		x = hashtab_get(&f->fn_scopes, fn, 0);
		x = x ?: fn_scopes(s, f, &cu, ix, fn);
		if (x)
			cache_function(f, ix, x, ix->r[i].lo);
	}
	if (s->built >= SRCLINE_RELEASE_EVERY || s->parsed >= SRCLINE_RELEASE_ROWS)
		srclines__release(s);
	else if (s->built - s->unmapped >= SRCLINE_UNMAP_EVERY)
		unmap_copies(s);
	/* what it indexed is in the cache: kept only within the bound lookups keep */
	if (s->index_bytes > SRCLINE_INDEX_MAX / 2)
		drop_indexes(s, idx);
	bound_pending(s);
}

bool srclines__harvest(struct srclines *s)
{
	for (size_t i = 0; i < s->nr_files; i++) {
		struct sfile *f = &s->files[i];

		if (!f->harvest || f->closed || !f->dw || !f->src)
			continue;
		if (!f->harvest_at)
			harvest_uncovered(f);
		if (f->harvest_at < f->nr_cus) {
			harvest_unit(s, f, i, &f->cus[f->harvest_at++]);
			return true;
		}
		f->harvest = false;
		s->harvested++;
	}
	return false;
}

int srclines__lookup(struct srclines *s, const char *path, __u64 vaddr,
		     const struct srcline_chain **chain)
{
	size_t idx;
	int err;
	struct sfile *f = file_with_dwarf(s, path, &idx, &err);

	return f ? lookup_in(s, f, idx, vaddr, chain) : err;
}

int srclines__lookup_offset(struct srclines *s, const char *path, __u64 off,
			    const struct srcline_chain **chain)
{
	size_t idx;
	int err;
	struct sfile *f = file_with_dwarf(s, path, &idx, &err);

	if (!f)
		return err;
	for (size_t i = 0; i < f->nr_loads; i++) {
		const GElf_Phdr *ph = &f->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz)
			return lookup_in(s, f, idx, off - ph->p_offset + ph->p_vaddr, chain);
	}
	return -ENXIO;
}

int srclines__file_offset_to_vaddr(struct srclines *s, const char *path, __u64 off,
				   __u64 *vaddr)
{
	struct sfile *f;
	size_t idx;

	f = file_of(s, path, &idx);
	if (!f)
		return -ENOMEM;
	if (f->err)
		return f->err;
	for (size_t i = 0; i < f->nr_loads; i++) {
		const GElf_Phdr *ph = &f->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

bool srclines__has_dwarf(struct srclines *s, const char *path)
{
	size_t idx;
	struct sfile *f = file_of(s, path, &idx);

	return f && (f->dw || f->deferred);
}

/* The pages of the copies libdw read since, out of bpfprof's memory. */
static void unmap_copies(struct srclines *s)
{
	s->unmapped = s->built;
	for (size_t i = 0; i < s->nr_files; i++)
		if (s->files[i].dirty && s->files[i].map)
			madvise(s->files[i].map, s->files[i].map_size, MADV_DONTNEED);
}

/* What libdw parsed of file f given back; its offsets into the copy stay true. */
static void release_file(struct sfile *f)
{
	f->dirty = false;
	if (!f->melf || !f->dw)
		return;
	dwarf_end(f->dw);
	f->dw = dwarf_begin_elf(f->melf, DWARF_C_READ, NULL);
	if (!f->dw)
		f->err = -EINVAL;
}

static bool parsed_held(const struct srclines *s)
{
	if (s->built || s->parsed)
		return true;
	for (size_t i = 0; i < s->nr_files; i++)
		if (s->files[i].dirty)
			return true;
	return false;
}

__u64 srclines__stale_at(const struct srclines *s)
{
	return parsed_held(s) ? s->libdw_ns + SRCLINE_STALE_NS : 0;
}

void srclines__release(struct srclines *s)
{
	unmap_copies(s);
	s->built = s->unmapped = 0;
	s->parsed = 0;
	s->releases++;
	for (size_t i = 0; i < s->nr_files; i++)
		if (s->files[i].dirty)
			release_file(&s->files[i]);
}

void srclines__close_files(struct srclines *s)
{
	for (size_t i = 0; i < s->nr_files; i++) {
		if (!s->files[i].closed && (s->files[i].dw || s->files[i].deferred)) {
			close_file(s, &s->files[i]);
			s->files[i].closed = true;
		}
	}
	s->nr_open = 0;
	hashtab_clear(&s->chains, free_chain);
	s->nr_chains = s->chain_bytes = 0;
}

int srclines__set_cache(struct srclines *s, struct disk_cache *dc)
{
	src_cache__free(s->cache);
	s->cache = dc ? src_cache__new(dc) : NULL;
	return dc && !s->cache ? -ENOMEM : 0;
}

void srclines__stats(const struct srclines *s, struct srcline_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->dwarf_opened = s->dwarf_opened;
	st->harvested = s->harvested;
	st->cache_answers = s->cache_answers;
	if (s->cache) {
		struct src_cache_stats cs;

		src_cache__stats(s->cache, &cs);
		st->cache_files = cs.files_read;
		st->cache_entries = cs.entries_read;
		st->cache_stored = cs.files_stored;
		st->cache_regions = cs.regions_added;
		st->cache_rejected = cs.rejected;
		st->cache_flushes = cs.flushes;
		st->cache_flush_dropped = cs.flush_dropped;
		st->cache_dir = src_cache__dir(s->cache);
	}
	st->lookups = s->lookups;
	st->hits = s->hits;
	st->opened = s->opened;
	st->drops = s->drops;
	st->releases = s->releases;
	st->line_bytes = s->cu_lines_bytes;
	st->chains = s->nr_chains;
	for (size_t i = 0; i < s->nr_files; i++) {
		st->units += s->files[i].nr_units;
		st->functions += s->files[i].nr_functions;
		st->index_bytes += s->files[i].index_bytes;
	}
}

size_t srclines__bytes(const struct srclines *s)
{
	size_t tables = s->chains.cap + s->file_index.cap + s->demangled.cap;

	return s->index_bytes + s->cu_lines_bytes + s->chain_bytes +
	       tables * sizeof(struct hashtab_entry) +
	       s->cap_files * sizeof(*s->files) + stack_names__bytes(s->strs);
}

static void free_chain(void *c)
{
	if (c != &no_chain)
		free(c);
}

void srclines__free(struct srclines *s)
{
	if (!s)
		return;
	hashtab_clear(&s->chains, free_chain);
	hashtab_clear(&s->file_index, NULL);
	hashtab_clear(&s->demangled, NULL);
	for (size_t i = 0; i < s->nr_files; i++) {
		close_file(s, &s->files[i]);
		free(s->files[i].path);
	}
	free(s->files);
	src_cache__free(s->cache);
	stack_names__free(s->strs);
	free(s);
}
