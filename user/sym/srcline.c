// SPDX-License-Identifier: GPL-2.0
/* Inline chains and source lines from DWARF (libdw), cached per file and address.
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
#include "core/hashtab.h"
#include "out/stack.h"
#include "sym/srcline.h"
#include "sym/syms.h"

struct sfile {
	char *path;
	int fd, dfd;         /* the file, its separate debug file (-1: none) */
	Elf *elf, *delf;
	Dwarf *dw;           /* NULL: no debug info */
	int err;             /* why the file could not be read, 0 when it was */
	GElf_Phdr *loads;    /* PT_LOAD segments, for file offsets */
	size_t nr_loads;
	struct cu_range *cus; /* without .debug_aranges: every CU's ranges, by start */
	size_t nr_cus;
	bool cus_read;
	struct hashtab fn_indexes; /* CU DIE offset -> struct fn_index, made on first lookup */
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
};

/* Files with debug info held open at most, their DWARF parsed: a long run over many programs
 * keeps the ones in use, not every one it met (each holds descriptors and its parsed debug
 * info; a file without is closed at once). */
#define SRCLINE_MAX_OPEN 48

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

/* Debug info of an open ELF: its own .debug_info, else its separate debug file's. */
static void open_dwarf(struct sfile *f, uid_t owner)
{
	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (f->dw)
		return;
	f->dfd = debuginfo_open(f->elf, f->path, owner);
	if (f->dfd < 0)
		return;
	f->delf = untrusted_elf(f->dfd);
	if (f->delf && elf_kind(f->delf) == ELF_K_ELF)
		f->dw = dwarf_begin_elf(f->delf, DWARF_C_READ, NULL);
}

static void open_file(struct sfile *f)
{
	/* a path a mapping or a profile named: followed as elf_syms__open() follows it */
	static const struct file_rules named = { .follow = true };
	enum file_refusal why;
	struct stat st;

	f->fd = f->dfd = -1;
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
	/* without debug info nothing more is read from it: its segments are kept, not the file */
	if (!f->dw) {
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
	elf_end(f->delf);
	elf_end(f->elf);
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->fd >= 0)
		close(f->fd);
	free(f->loads);
	free(f->cus);
	hashtab_clear(&f->fn_indexes, free_fn_index);
	f->dw = NULL;
	f->elf = f->delf = NULL;
	f->fd = f->dfd = -1;
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

		if (i != keep && !f->closed && f->fd >= 0 && (!lru || f->last_use < lru->last_use)) {
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
	if (f->fd >= 0 && ++s->nr_open > SRCLINE_MAX_OPEN)
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

	if (dwarf_addrdie(f->dw, vaddr, cu))
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
	for (size_t i = lo; i > 0; i--)
		if (vaddr >= f->cus[i - 1].lo && vaddr < f->cus[i - 1].hi)
			return dwarf_offdie(f->dw, f->cus[i - 1].die, cu) != NULL;
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

int srclines__lookup(struct srclines *s, const char *path, __u64 vaddr,
		     const struct srcline_chain **chain)
{
	struct srcline_chain *c;
	struct sfile *f;
	size_t idx;
	int err;

	f = file_of(s, path, &idx);
	if (!f)
		return -ENOMEM;
	if (f->err || !f->dw)
		return f->err && f->err != -ENOEXEC ? f->err : -ENOENT;
	s->lookups++;
	c = hashtab_get(&s->chains, vaddr, idx);
	if (c) {
		s->hits++;
		*chain = c;
		return c->nr ? 0 : -ENXIO;
	}
	c = chain_at(s, f, vaddr, &err);
	if (err)
		return err;
	if (hashtab_put(&s->chains, vaddr, idx, c ?: &no_chain)) {
		free(c);
		return -ENOMEM;
	}
	*chain = c ?: &no_chain;
	return c ? 0 : -ENXIO;
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
