// SPDX-License-Identifier: GPL-2.0
/* Inline chains and source lines from DWARF (libdw), cached per file and address.
 *
 * libdw reads a file's debug info through a copy of it that holds only the units looked up
 * (debug_copy()): what a profile of the whole machine costs in memory is what its addresses
 * need, not every debug file read whole.
 *
 * For an address, dwarf_getscopes() gives the DIEs that contain it, innermost first: lexical
 * blocks, DW_TAG_inlined_subroutine for each level of inlining, then the DW_TAG_subprogram the
 * code was compiled in.  The innermost frame's line is the line table's for the address; each
 * inlined level's DW_AT_call_file / DW_AT_call_line is where the frame around it called it,
 * which is how addr2line -i and perf's inline_list build the same chain. */
#include <errno.h>
#include <fcntl.h>
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
#include "core/hashtab.h"
#include "out/stack.h"
#include "sym/srcline.h"
#include "sym/syms.h"

/* Where a sparse copy's .debug_info is: the section libdw reads (only the units looked up are
 * written there, padding units of nothing between them), and the whole section after the ELF
 * image, which libdw never reads, from which units are copied into it. */
struct info_copy {
	__u64 sparse, full, size;
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
	struct hashtab fn_indexes; /* CU DIE offset -> struct fn_index, made on first lookup */
	bool sparse;         /* its .debug_info copied unit by unit (debug_copy()) */
	bool stale;          /* a unit was copied since dw began: begun again before a lookup */
	struct info_copy info;
	struct cu_range *present; /* the units copied, sorted ([lo, hi) in .debug_info) */
	size_t nr_present;
	void *map;           /* the copy's ELF image, mapped */
	size_t map_size;
	bool closed;         /* evicted (srclines.max_open): opened again when next asked */
	__u64 last_use;
};

/* A CU's concrete functions by address: a lookup descends into one function's DIEs, not the
 * CU's (walking past a sibling without DW_AT_sibling parses its whole subtree). */
struct fn_range {
	__u64 lo, hi;
	Dwarf_Off die;
};

struct fn_index {
	size_t nr, cap;
	struct fn_range *r;
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
	__u64 lookups, hits;
	__u64 clock;                 /* file uses, for the least recently used */
	size_t nr_open;              /* files held open */
	__u64 misses;                /* lookups of addresses of copies not cached */
};

/* Files with debug info held open at most, their DWARF parsed: a long run over many programs
 * keeps the ones in use, not every one it met (each holds descriptors and its parsed debug
 * info; a file without is closed at once). */
#define SRCLINE_MAX_OPEN 48

/* Lookups of new addresses in copies between two unmappings of the pages they read. */
#define SRCLINE_UNMAP_EVERY 32

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
			if (f->nr_cus == cap) {
				struct cu_range *r;

				cap = cap ? cap * 2 : 256;
				r = realloc(f->cus, cap * sizeof(*r));
				if (!r) {
					err = -ENOMEM;
					goto cleanup;
				}
				f->cus = r;
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
	GElf_Shdr *shs = NULL, info = { 0 }, aranges = { 0 };
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
	/* without aranges, every unit is read as it is: the sections are copied whole */
	f->sparse = aranges.sh_size && !read_aranges(f, out, aranges.sh_offset, aranges.sh_size);
	if (aranges.sh_size && !f->sparse)
		shs[nr++] = aranges;
	if (f->sparse) {
		GElf_Shdr full = info;
		__u64 at;

		pos = (pos + 7) & ~7ULL;
		f->info.sparse = pos;
		f->info.size = info_size;
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

/* A unit of a sparse copy, copied into its section if it is not there yet (a fresh libdw
 * handle then sees it: the old one knows the padding unit that was there).  Returns its first
 * DIE's offset, or 0 when it cannot be read. */
static Dwarf_Off unit_die(struct sfile *f, Dwarf_Off unit)
{
	unsigned char h[16], buf[16 << 10];
	__u64 len, end, gap_lo = 0, gap_hi = f->info.size, hsize;
	__u32 l32;
	__u16 version;
	size_t at = 0, off = 4;
	int src = f->info.fd >= 0 ? f->info.fd : f->mfd;

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
	if (len > f->info.size - unit || len < hsize)
		return 0;
	end = unit + len;
	/* the present units, sorted: the gap this one is in */
	for (at = 0; at < f->nr_present && f->present[at].lo <= unit; at++)
		gap_lo = f->present[at].hi;
	if (at > 0 && unit < f->present[at - 1].hi)
		return f->present[at - 1].lo == unit ? unit + hsize : 0;
	if (at < f->nr_present)
		gap_hi = f->present[at].lo;
	if (end > gap_hi)
		return 0;
	{
		struct cu_range *n = realloc(f->present, (f->nr_present + 1) * sizeof(*n));

		if (!n)
			return 0;
		f->present = n;
	}
	for (__u64 done = 0; done < len;) {
		size_t chunk = len - done < sizeof(buf) ? len - done : sizeof(buf);

		if (pread(src, buf, chunk, f->info.full + unit + done) != (ssize_t)chunk ||
		    pwrite(f->mfd, buf, chunk, f->info.sparse + unit + done) != (ssize_t)chunk)
			return 0;
		done += chunk;
	}
	if ((gap_lo < unit && write_padding(f->mfd, f->info.sparse + gap_lo, unit - gap_lo)) ||
	    (end < gap_hi && write_padding(f->mfd, f->info.sparse + end, gap_hi - end)))
		return 0;
	memmove(f->present + at + 1, f->present + at, (f->nr_present - at) * sizeof(*f->present));
	f->present[at] = (struct cu_range){ unit, end, 0 };
	f->nr_present++;
	f->stale = true;
	return unit + hsize;
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

/* Debug info of an open ELF: its own .debug_info, else its separate debug file's. */
static void open_dwarf(struct sfile *f, uid_t owner)
{
	f->dw = begin_dwarf(f, f->elf, f->fd);
	if (f->dw)
		return;
	f->dfd = debuginfo_open(f->elf, f->path, owner);
	if (f->dfd < 0)
		return;
	f->delf = untrusted_elf(f->dfd);
	if (f->delf && elf_kind(f->delf) == ELF_K_ELF)
		f->dw = begin_dwarf(f, f->delf, f->dfd);
}

static void open_file(struct sfile *f)
{
	/* a path a mapping or a profile named: followed as elf_syms__open() follows it */
	static const struct file_rules named = { .follow = true };
	enum file_refusal why;
	struct stat st;

	f->fd = f->dfd = f->mfd = f->info.fd = -1;
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
	if (!f->err)
		open_dwarf(f, st.st_uid);
	/* without debug info, or with its copy mapped, nothing more is read from the file (nor
	 * the copy's descriptor: libelf reads the mapping): its segments are kept, not the file */
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

static void free_chain(void *c);

static void free_fn_index(void *p)
{
	struct fn_index *ix = p;

	free(ix->r);
	free(ix);
}

static void close_file(struct sfile *f)
{
	if (f->dw)
		dwarf_end(f->dw);
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
	f->sparse = f->stale = false;
	if (f->info.fd >= 0)
		close(f->info.fd);
	f->info.fd = -1;
	hashtab_clear(&f->fn_indexes, free_fn_index);
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

		if (i != keep && !f->closed && f->dw && (!lru || f->last_use < lru->last_use)) {
			lru = f;
			idx = i;
		}
	}
	if (!lru)
		return;
	for (size_t i = 0; i < s->chains.cap;) {
		struct hashtab_entry *e = &s->chains.slots[i];

		/* a deletion shifts later entries back into this slot: look at it again */
		if (e->val && e->k2 == idx)
			free_chain(hashtab_del(&s->chains, e->k1, e->k2));
		else
			i++;
	}
	close_file(lru);
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
	open_file(f);
	if (f->dw && ++s->nr_open > SRCLINE_MAX_OPEN)
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
	if (s->nr_files == s->cap_files) {
		size_t cap = s->cap_files ? s->cap_files * 2 : 16;
		struct sfile *n = realloc(s->files, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->files = n;
		s->cap_files = cap;
	}
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

static bool is_function(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The file an inlined subroutine's DW_AT_call_file names, or NULL. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t nr;

	if (!dwarf_attr(d, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nr) || idx >= nr)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static __u32 call_line(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Word line;

	if (!dwarf_attr(d, DW_AT_call_line, &a) || dwarf_formudata(&a, &line))
		return 0;
	return line;
}

/* Scopes that may hold code: descended into when they contain the address (namespaces hold
 * C++ functions and have no addresses of their own: always looked into). */
static bool may_hold(Dwarf_Die *d, __u64 pc)
{
	switch (dwarf_tag(d)) {
	case DW_TAG_namespace:
	case DW_TAG_module:
		return true;
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_entry_point:
		return dwarf_haspc(d, pc) == 1;
	default:
		return false;
	}
}

#define MAX_INLINE_DEPTH 64

static int add_fn(Dwarf_Die *d, void *arg)
{
	struct fn_index *ix = arg;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t it = 0;

	while ((it = dwarf_ranges(d, it, &base, &lo, &hi)) > 0) {
		if (ix->nr == ix->cap) {
			size_t cap = ix->cap ? ix->cap * 2 : 64;
			struct fn_range *n = realloc(ix->r, cap * sizeof(*n));

			if (!n)
				return DWARF_CB_ABORT;
			ix->r = n;
			ix->cap = cap;
		}
		ix->r[ix->nr++] = (struct fn_range){ lo, hi, dwarf_dieoffset(d) };
	}
	return DWARF_CB_OK;
}

static int cmp_fn_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The concrete function of cu containing pc, from the CU's index (made once); false when none
 * is found there. */
static bool function_at(struct sfile *f, Dwarf_Die *cu, __u64 pc, Dwarf_Die *out)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct fn_index *ix = hashtab_get(&f->fn_indexes, off, 0);
	size_t lo = 0, hi;

	if (!ix) {
		ix = calloc(1, sizeof(*ix));
		if (!ix)
			return false;
		dwarf_getfuncs(cu, add_fn, ix, 0);
		if (ix->nr)
			qsort(ix->r, ix->nr, sizeof(*ix->r), cmp_fn_range);
		if (hashtab_put(&f->fn_indexes, off, 0, ix)) {
			free_fn_index(ix);
			return false;
		}
	}
	for (hi = ix->nr; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && lo - i < 8; i--)
		if (pc >= ix->r[i - 1].lo && pc < ix->r[i - 1].hi)
			return dwarf_offdie(f->dw, ix->r[i - 1].die, out) != NULL;
	return false;
}

/* The function DIEs containing pc, outermost first: the concrete subprogram, then each inlined
 * subroutine in it.  (dwarf_getscopes() is no use here: past an inlined instance it climbs the
 * abstract definition's scopes, not the caller's.)  Returns how many, at most max. */
static int functions_at(struct sfile *f, Dwarf_Die *cu, __u64 pc, Dwarf_Die *out, int max)
{
	Dwarf_Die parent = *cu, child;
	int n = 0, depth = 0;

	/* from the CU's index of functions where it has the address; else the CU's whole tree */
	if (max > 0 && function_at(f, cu, pc, &parent))
		out[n++] = parent;
	while (depth++ < 4 * MAX_INLINE_DEPTH && dwarf_child(&parent, &child) == 0) {
		bool found = false;

		do {
			if (!may_hold(&child, pc))
				continue;
			if (is_function(&child) && n < max)
				out[n++] = child;
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
				if (f->nr_cus == cap) {
					struct cu_range *n;

					cap = cap ? cap * 2 : 256;
					n = realloc(f->cus, cap * sizeof(*n));
					if (!n)
						return;
					f->cus = n;
				}
				f->cus[f->nr_cus++] = (struct cu_range){ lo, hi, off + hsize };
			}
		}
		off = next;
	}
	if (f->nr_cus)
		qsort(f->cus, f->nr_cus, sizeof(*f->cus), cmp_range);
}

/* The CU containing vaddr: by .debug_aranges, else (clang does not emit them by default) by
 * the CUs' own ranges. */
static bool cu_at(struct sfile *f, __u64 vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi;

	if (!f->sparse && dwarf_addrdie(f->dw, vaddr, cu))
		return true;
	if (!f->cus_read)
		read_cu_ranges(f);
	/* the last range starting at or below vaddr, then back over overlapping ones */
	for (hi = f->nr_cus; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->cus[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0; i--) {
		Dwarf_Off die = f->cus[i - 1].die;

		if (vaddr < f->cus[i - 1].lo || vaddr >= f->cus[i - 1].hi)
			continue;
		/* a sparse copy's ranges name their unit's header: copied in when first met */
		if (f->sparse && !(die = unit_die(f, die)))
			return false;
		if (f->stale) {
			/* the old handle took the unit's place for padding; what it parsed of
			 * the other units goes, the functions' index by offset stays true */
			dwarf_end(f->dw);
			f->dw = dwarf_begin_elf(f->melf, DWARF_C_READ, NULL);
			f->stale = false;
			if (!f->dw) {
				f->err = -EINVAL;
				return false;
			}
		}
		return dwarf_offdie(f->dw, die, cu) != NULL;
	}
	return false;
}

/* The chain at vaddr of a file with debug info: malloc'd, or NULL when the debug info does not
 * cover it (*err 0) or on ENOMEM (*err set). */
static struct srcline_chain *chain_at(struct srclines *s, struct sfile *f, __u64 vaddr, int *err)
{
	Dwarf_Die cu, fns[MAX_INLINE_DEPTH];
	struct srcline_chain *c;
	const char *file = NULL;
	Dwarf_Line *line;
	__u32 lineno = 0;
	int n;

	*err = 0;
	if (!cu_at(f, vaddr, &cu))
		return NULL;
	line = dwarf_getsrc_die(&cu, vaddr);
	if (line) {
		int l = 0;

		file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &l);
		lineno = l > 0 ? l : 0;
	}
	n = functions_at(f, &cu, vaddr, fns, MAX_INLINE_DEPTH);
	c = malloc(sizeof(*c) + (n ?: 1) * sizeof(c->f[0]));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!n) {
		/* lines but no function DIE (assembly): one frame, its line */
		c->nr = 1;
		c->f[0] = (struct srcline_frame){ NULL, intern(s, file), lineno };
		return c;
	}
	c->nr = n;
	/* innermost first: each inlined level's call site is the line of the frame around it */
	for (int i = n - 1; i >= 0; i--) {
		c->f[i] = (struct srcline_frame){ intern(s, dwarf_diename(&fns[i])), intern(s, file),
						  lineno };
		if (dwarf_tag(&fns[i]) == DW_TAG_inlined_subroutine) {
			file = call_file(&cu, &fns[i]);
			lineno = call_line(&fns[i]);
		}
	}
	return c;
}

static void unmap_copies(struct srclines *s);

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
	c = chain_at(s, f, vaddr, &err);
	/* the copy's pages read stay in the page cache, not in bpfprof's memory: the next
	 * lookups map again what they need (a minor fault a page; a unit is a few pages) */
	if (f->map && ++s->misses % SRCLINE_UNMAP_EVERY == 0)
		unmap_copies(s);
	if (err)
		return err;
	if (hashtab_put(&s->chains, vaddr, idx, c ?: &no_chain)) {
		free(c);
		return -ENOMEM;
	}
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
	if (f->err || !f->dw) {
		*err = f->err && f->err != -ENOEXEC ? f->err : -ENOENT;
		return NULL;
	}
	return f;
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

	return f && f->dw;
}

/* The pages of the copies that lookups read, out of bpfprof's memory (they stay the kernel's,
 * mapped again when read again). */
static void unmap_copies(struct srclines *s)
{
	for (size_t i = 0; i < s->nr_files; i++)
		if (s->files[i].map)
			madvise(s->files[i].map, s->files[i].map_size, MADV_DONTNEED);
}

void srclines__release(struct srclines *s)
{
	for (size_t i = 0; i < s->nr_files; i++) {
		struct sfile *f = &s->files[i];

		/* begun again (stale) at the next lookup: its offsets into the copy stay true */
		if (!f->melf || !f->dw)
			continue;
		dwarf_end(f->dw);
		f->dw = dwarf_begin_elf(f->melf, DWARF_C_READ, NULL);
		f->stale = false;
		if (!f->dw)
			f->err = -EINVAL;
	}
	unmap_copies(s);
}

void srclines__stats(const struct srclines *s, __u64 *lookups, __u64 *hits)
{
	*lookups = s->lookups;
	*hits = s->hits;
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
	for (size_t i = 0; i < s->nr_files; i++) {
		close_file(&s->files[i]);
		free(s->files[i].path);
	}
	free(s->files);
	stack_names__free(s->strs);
	free(s);
}
