/* ELF function symbols: .symtab (from the file itself, or from its build-id / .gnu_debuglink
 * debug file when the file is stripped) plus .dynsym, sorted by address for binary search.
 * Names and program headers are copied out of libelf, so nothing stays open or mapped once a
 * table is built. */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/sorted.h"
#include "sym/syms.h"
#include "sym/untrusted.h"


struct esym {
	__u64 addr;
	__u64 end;  /* exclusive; while loading, zero-size symbols hold their section's end */
	const char *name;
	int rank;   /* 2 global, 1 local, 0 weak: which alias to show at a shared address */
	bool sized;
	bool label; /* an untyped symbol in code (an assembly entry such as ld.so's _start) */
};

struct eseg {
	__u64 vaddr;
	__u64 off;
	__u64 filesz;
};

struct elf_syms {
	struct esym *syms;
	size_t nr_syms;
	struct eseg *segs; /* PT_LOAD, always from the real file */
	size_t nr_segs;
	char *strtabs[4];  /* arenas of the function names the entries point into (.symtab,
			    * the debug file's, .dynsym, the PLT's) */
	size_t nr_strtabs;
	char build_id[2 * 64 + 1]; /* hex, "" when the file has none */
};

/* The file's GNU build-id in hex, as readelf -n prints it (pprof's mappings carry it). */
static void read_build_id(struct elf_syms *es, Elf *elf)
{
	unsigned char id[64];
	int n = elf_build_id(elf, id, sizeof(id));

	for (int i = 0; i < n; i++)
		snprintf(es->build_id + 2 * i, 3, "%02x", id[i]);
}

const char *elf_syms__build_id(const struct elf_syms *es)
{
	return es && es->build_id[0] ? es->build_id : NULL;
}

static int read_segments(struct elf_syms *es, Elf *elf)
{
	GElf_Phdr ph;
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return 0; /* no program headers (relocatable object): no offset translation */
	es->segs = calloc(n ? n : 1, sizeof(*es->segs));
	if (!es->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		es->segs[es->nr_segs].vaddr = ph.p_vaddr;
		es->segs[es->nr_segs].off = ph.p_offset;
		es->segs[es->nr_segs].filesz = ph.p_filesz;
		es->nr_segs++;
	}
	return 0;
}

/* End address of every section, so that a zero-size symbol never runs into the next section
 * (e.g. _init, size 0 in .init, must not swallow .plt). */
static __u64 *section_ends(Elf *elf, size_t nsec)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	__u64 *ends;

	ends = calloc(nsec ? nsec : 1, sizeof(*ends));
	if (!ends)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		size_t i = elf_ndxscn(scn);

		if (i < nsec && gelf_getshdr(scn, &sh))
			ends[i] = sh.sh_addr + sh.sh_size;
	}
	return ends;
}

static int bind_rank(int bind)
{
	if (bind == STB_WEAK)
		return 0;
	return bind == STB_LOCAL ? 1 : 2;
}

/* An untyped symbol in an executable section, as perf takes it (elf_sym__is_label): assembly
 * entry points declared without .type (ld.so's _start and _dl_start_user), which would otherwise
 * be [ld-linux-x86-64.so.2] at the root of every stack a process takes before main. */
static bool is_code_label(Elf *elf, const GElf_Sym *sym, const char *strtab)
{
	const char *name = strtab + sym->st_name;
	Elf_Scn *scn;
	GElf_Shdr sh;

	/* the section is looked up last: most symbols are data, typed as such */
	if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE ||
	    GELF_ST_VISIBILITY(sym->st_other) != STV_DEFAULT || name[0] == '.' || name[0] == '$')
		return false;
	scn = elf_getscn(elf, sym->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* A function of this file (or, with *label set, a label in its code).  strtab holds strsz bytes. */
static bool is_function(Elf *elf, const GElf_Sym *sym, size_t nsec, const char *strtab,
			size_t strsz, bool *label)
{
	int type = GELF_ST_TYPE(sym->st_info);

	*label = false;
	/* undefined (imports), absolute and common symbols are not code in this file */
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE || sym->st_shndx >= nsec)
		return false;
	if (!sym->st_value || !sym->st_name || sym->st_name >= strsz)
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	*label = is_code_label(elf, sym, strtab);
	return *label;
}

/* Appends the function symbols of one symbol table; returns how many, or a negative errno.
 * Only the names of functions are copied (into one arena): a C++ library's string table is
 * megabytes of names we would never show. */
static int add_table(struct elf_syms *es, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data, *strdata;
	Elf_Scn *strscn;
	__u64 *sec_end = NULL;
	struct esym *tmp, *e;
	const char *strtab;
	char *names = NULL;
	size_t n, i, nsec, names_len = 0, len, nr_fn = 0;
	GElf_Sym sym;
	int err = 0, added = 0;
	bool label;

	if (!sh->sh_entsize || es->nr_strtabs == sizeof(es->strtabs) / sizeof(es->strtabs[0]))
		return 0;
	data = elf_getdata(scn, NULL);
	strscn = elf_getscn(elf, sh->sh_link);
	strdata = strscn ? elf_getdata(strscn, NULL) : NULL;
	/* a debug file's .dynsym is NOBITS: nothing to read */
	if (!data || !data->d_buf || !strdata || !strdata->d_buf || elf_getshdrnum(elf, &nsec))
		return 0;
	strtab = strdata->d_buf;
	n = sh->sh_size / sh->sh_entsize;
	/* First pass: how much room the function names need. */
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(data, i, &sym))
			break;
		if (is_function(elf, &sym, nsec, strtab, strdata->d_size, &label) &&
		    strtab[sym.st_name]) {
			names_len += strnlen(strtab + sym.st_name, strdata->d_size - sym.st_name) + 1;
			nr_fn++;
		}
	}
	if (!names_len)
		return 0;
	sec_end = section_ends(elf, nsec);
	names = malloc(names_len);
	/* room for the functions counted, not for every symbol: this is while libelf holds the
	 * whole table and its strings, the peak of a load */
	tmp = realloc(es->syms, (es->nr_syms + nr_fn) * sizeof(*tmp));
	if (!sec_end || !names || !tmp) {
		if (tmp)
			es->syms = tmp;
		err = -ENOMEM;
		goto cleanup;
	}
	es->syms = tmp;
	names_len = 0;
	for (i = 1; i < n && added < (int)nr_fn; i++) {
		if (!gelf_getsym(data, i, &sym))
			break;
		if (!is_function(elf, &sym, nsec, strtab, strdata->d_size, &label) ||
		    !strtab[sym.st_name])
			continue;
		len = strnlen(strtab + sym.st_name, strdata->d_size - sym.st_name);
		e = &es->syms[es->nr_syms++];
		e->addr = sym.st_value;
		e->sized = sym.st_size != 0;
		e->label = label;
		e->end = e->sized ? sym.st_value + sym.st_size : sec_end[sym.st_shndx];
		e->name = names + names_len;
		e->rank = bind_rank(GELF_ST_BIND(sym.st_info));
		memcpy(names + names_len, strtab + sym.st_name, len);
		names[names_len + len] = '\0';
		names_len += len + 1;
		added++;
	}
	es->strtabs[es->nr_strtabs++] = names;
	names = NULL;
cleanup:
	free(names);
	free(sec_end);
	return err ? err : added;
}

/* Adds the first section of type SHT_SYMTAB or SHT_DYNSYM; returns the number of functions. */
static int add_symbols(struct elf_syms *es, Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return add_table(es, elf, scn, &sh);
	return 0;
}

/* An ELF section by name, or NULL. */
static Elf_Scn *section_named(Elf *elf, size_t shstrndx, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	const char *n;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && (n = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    !strcmp(n, name))
			return scn;
	return NULL;
}

/* The PLT's layout: the size of its header (the lazy resolver's stub) and of each entry. */
static bool plt_layout(Elf *elf, size_t *header, size_t *entry, bool *rela)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return false;
	*entry = 16;
	*rela = eh.e_machine != EM_386;
	switch (eh.e_machine) {
	case EM_X86_64:
	case EM_386:
		*header = 16;
		return true;
	case EM_AARCH64:
		*header = 32;
		return true;
	default:
		return false;
	}
}

static int leading_underscores(const char *s);

/* The name of the function at addr, among the symbols loaded so far (not sorted yet), or NULL:
 * of aliases, the one a caller wrote (strnlen, not __strnlen_ifunc, its resolver's own name):
 * fewest leading underscores, then the shortest. */
static const char *ifunc_at(const struct elf_syms *es, __u64 addr)
{
	const struct esym *best = NULL;

	for (size_t i = 0; i < es->nr_syms; i++) {
		const struct esym *e = &es->syms[i];
		int u, bu;

		if (e->addr != addr)
			continue;
		u = leading_underscores(e->name);
		bu = best ? leading_underscores(best->name) : 0;
		if (!best || u < bu || (u == bu && strlen(e->name) < strlen(best->name)))
			best = e;
	}
	return best ? best->name : NULL;
}

struct plt_slot {
	__u64 got;     /* the GOT slot a relocation fills */
	size_t index;  /* the relocation's index */
};

static int cmp_slot(const void *a, const void *b)
{
	const struct plt_slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The GOT slot an x86 PLT entry at addr jumps through: its `jmp *disp(%rip)` (ff 25, after an
 * endbr64 and a bnd prefix in an IBT entry) names it, and one relocation fills it.  libc's
 * .rela.plt mixes IRELATIVE relocations in, so the Nth entry is not always the Nth relocation,
 * as objdump's names show.  false where the entry has no such jump. */
static bool x86_entry_got(const unsigned char *code, size_t len, __u64 addr, __u64 *got)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		__s32 disp;

		if (code[i] != 0xff || code[i + 1] != 0x25)
			continue;
		memcpy(&disp, code + i + 2, 4);
		*got = addr + i + 6 + (__s64)disp;
		return true;
	}
	return false;
}

/* Whether got is among the n sorted slots; *at: where it is, or would go. */
static bool find_got(const struct plt_slot *slots, size_t n, __u64 got, size_t *at)
{
	size_t lo = FIRST_AT(slots, n, got, got);

	*at = lo;
	return lo < n && slots[lo].got == got;
}

/* A table of PLT entries and the relocations that name them. */
struct plt_table {
	const unsigned char *code; /* the first entry's bytes */
	__u64 addr;              /* the first entry's address */
	size_t entry, n;         /* entry size, how many */
	Elf_Data *rel, *syms, *strs;
	size_t nrel;
	size_t rel_size;         /* an entry's size in the file (sh_entsize) */
	bool rela;
	struct plt_slot *slots;  /* x86-64: the entries' GOT slots and their relocations, by
				  * slot; NULL: by rank */
	size_t nslots;
};

/* The offset relocation i of t fills: read in place where libelf gave the section as an array
 * of 64-bit entries (a PIE's .rela.dyn: gelf_getrela() for each of tens of thousands was most
 * of naming its PLT), else through gelf.  false past the end. */
static bool rel_offset(const struct plt_table *t, size_t i, __u64 *off)
{
	GElf_Rela r;
	GElf_Rel rl;

	if (t->rela && t->rel->d_type == ELF_T_RELA &&
	    t->rel->d_size >= t->nrel * sizeof(Elf64_Rela) && t->rel_size == sizeof(Elf64_Rela)) {
		/* a hostile file's section may sit at any offset: not read as an aligned struct */
		memcpy(off, (const char *)t->rel->d_buf + i * sizeof(Elf64_Rela) +
			    offsetof(Elf64_Rela, r_offset), sizeof(*off));
		return true;
	}
	if (t->rela ? !gelf_getrela(t->rel, i, &r) : !gelf_getrel(t->rel, i, &rl))
		return false;
	*off = t->rela ? r.r_offset : rl.r_offset;
	return true;
}

/* The entries of section code_name (after header bytes) named by the relocations of rel_name,
 * by the GOT slot each jumps through where by_slot, else by rank.  false when the file has no
 * such table, or on ENOMEM (*err set). */
static bool plt_table(Elf *elf, size_t shstrndx, const char *code_name, size_t header,
		      size_t entry, const char *rel_name, bool rela, bool by_slot,
		      struct plt_table *t, int *err)
{
	Elf_Scn *code_scn, *rel_scn, *sym_scn, *str_scn;
	GElf_Shdr code_sh, rel_sh, sym_sh, str_sh;
	Elf_Data *code;

	memset(t, 0, sizeof(*t));
	code_scn = section_named(elf, shstrndx, code_name, &code_sh);
	rel_scn = section_named(elf, shstrndx, rel_name, &rel_sh);
	if (!code_scn || !rel_scn || !rel_sh.sh_entsize || code_sh.sh_type != SHT_PROGBITS ||
	    code_sh.sh_size < header || !(sym_scn = elf_getscn(elf, rel_sh.sh_link)) ||
	    !gelf_getshdr(sym_scn, &sym_sh) || !(str_scn = elf_getscn(elf, sym_sh.sh_link)) ||
	    !gelf_getshdr(str_scn, &str_sh))
		return false;
	code = elf_getdata(code_scn, NULL);
	t->rel = elf_getdata(rel_scn, NULL);
	t->syms = elf_getdata(sym_scn, NULL);
	t->strs = elf_getdata(str_scn, NULL);
	/* a debug file's copies are NOBITS */
	if (!t->rel || !t->rel->d_buf || !t->syms || !t->syms->d_buf || !t->strs ||
	    !t->strs->d_buf || !code || !code->d_buf || code->d_size < code_sh.sh_size)
		return false;
	t->rela = rela;
	t->addr = code_sh.sh_addr + header;
	t->entry = entry;
	t->n = (code_sh.sh_size - header) / entry;
	t->nrel = rel_sh.sh_size / rel_sh.sh_entsize;
	t->rel_size = rel_sh.sh_entsize;
	t->code = (const unsigned char *)code->d_buf + header;
	if (!by_slot) {
		if (t->n > t->nrel)
			t->n = t->nrel;
		return true;
	}
	/* the slots the entries jump through first, then their relocations: a PIE's .rela.dyn
	 * holds tens of thousands for a few .plt.got entries (sorting them all was most of parsing
	 * a compiler's symbols) */
	t->slots = calloc(t->n ?: 1, sizeof(*t->slots));
	if (!t->slots) {
		*err = -ENOMEM;
		return false;
	}
	for (size_t i = 0; i < t->n; i++) {
		__u64 got;

		if (x86_entry_got(t->code + i * t->entry, t->entry, t->addr + i * t->entry, &got))
			t->slots[t->nslots++] = (struct plt_slot){ got, t->nrel };
	}
	qsort(t->slots, t->nslots, sizeof(*t->slots), cmp_slot);
	for (size_t i = 0; i < t->nrel; i++) {
		__u64 off;
		size_t at;

		if (!rel_offset(t, i, &off))
			break;
		/* a slot filled twice (never seen) is named by its first relocation */
		if (find_got(t->slots, t->nslots, off, &at) && t->slots[at].index == t->nrel)
			t->slots[at].index = i;
	}
	return true;
}

/* The name of entry i of t, without "@plt", and its length; NULL for an entry without one. */
static const char *plt_entry_name(const struct elf_syms *es, const struct plt_table *t, size_t i,
				  size_t *len)
{
	size_t ri = i;
	GElf_Rela r;
	GElf_Rel rl;
	GElf_Sym sym;
	const char *name;

	if (t->slots) {
		__u64 got;
		size_t at;

		ri = t->nrel;
		if (x86_entry_got(t->code + i * t->entry, t->entry, t->addr + i * t->entry, &got) &&
		    find_got(t->slots, t->nslots, got, &at))
			ri = t->slots[at].index;
	}
	if (ri >= t->nrel || (t->rela ? !gelf_getrela(t->rel, ri, &r) :
					!gelf_getrel(t->rel, ri, &rl)))
		return NULL;
	if (!t->rela)
		r.r_info = rl.r_info;
	if (!GELF_R_SYM(r.r_info)) {
		/* IRELATIVE (libc calling its own memcpy): named after the ifunc whose resolver
		 * the addend is, as objdump's *ABS*+0x9f550 is */
		name = t->rela ? ifunc_at(es, r.r_addend) : NULL;
		*len = name ? strlen(name) : 0;
		return *len ? name : NULL;
	}
	if (!gelf_getsym(t->syms, GELF_R_SYM(r.r_info), &sym) || !sym.st_name ||
	    sym.st_name >= t->strs->d_size)
		return NULL;
	name = (const char *)t->strs->d_buf + sym.st_name;
	*len = strnlen(name, t->strs->d_size - sym.st_name);
	return *len ? name : NULL;
}

/* Symbols for the PLT's entries, which have none: "puts@plt", as perf and objdump synthesize
 * them (a program calling a small libc function in a loop has samples there).  The entries are
 * those of .plt after its header, or of .plt.sec where the linker split the PLT for IBT (the
 * entries there are the ones called), and on x86-64 those of .plt.got, for functions whose
 * address is also taken (ls calls malloc, free and strcmp there).  On x86-64 each entry's
 * relocation is the one for the GOT slot it jumps through (x86_entry_got()); elsewhere the
 * Nth relocation of .rela.plt is the Nth entry.  Returns how many were added, or -ENOMEM. */
static int add_plt(struct elf_syms *es, Elf *elf)
{
	struct plt_table t[2];
	size_t shstrndx, header, entry, nr = 0, names_len = 0, room = 0, at = 0;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	struct esym *tmp;
	char *names = NULL;
	bool rela, x86_64, ibt;
	int err = 0, added = 0;

	if (es->nr_strtabs == sizeof(es->strtabs) / sizeof(es->strtabs[0]) ||
	    !plt_layout(elf, &header, &entry, &rela) || elf_getshdrstrndx(elf, &shstrndx) ||
	    !gelf_getehdr(elf, &eh))
		return 0;
	/* (i386's PIC entries jump through %ebx, not %rip: by rank there) */
	x86_64 = eh.e_machine == EM_X86_64;
	ibt = section_named(elf, shstrndx, ".plt.sec", &sh) != NULL;
	if (plt_table(elf, shstrndx, ibt ? ".plt.sec" : ".plt", ibt ? 0 : header, entry,
		      rela ? ".rela.plt" : ".rel.plt", rela, x86_64, &t[nr], &err))
		nr++;
	/* .plt.got's entries are 8 bytes, 16 with IBT's endbr64 */
	if (!err && x86_64 &&
	    plt_table(elf, shstrndx, ".plt.got", 0, ibt ? 16 : 8, ".rela.dyn", true, true, &t[nr],
		      &err))
		nr++;
	/* first the room the names take, then the entries */
	for (size_t k = 0; k < nr; k++)
		for (size_t i = 0; i < t[k].n; i++) {
			size_t len;

			if (plt_entry_name(es, &t[k], i, &len)) {
				names_len += len + 5;
				room++;
			}
		}
	if (err || !room)
		goto cleanup;
	names = malloc(names_len);
	tmp = realloc(es->syms, (es->nr_syms + room) * sizeof(*tmp));
	if (tmp)
		es->syms = tmp;
	if (!names || !tmp) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t k = 0; k < nr; k++)
		for (size_t i = 0; i < t[k].n && added < (int)room; i++) {
			size_t len;
			const char *name = plt_entry_name(es, &t[k], i, &len);
			__u64 addr = t[k].addr + i * t[k].entry;

			if (!name || at + len + 5 > names_len)
				continue;
			memcpy(names + at, name, len);
			memcpy(names + at + len, "@plt", 5);
			es->syms[es->nr_syms++] = (struct esym){ .addr = addr,
				.end = addr + t[k].entry, .name = names + at, .rank = 1, .sized = true };
			at += len + 5;
			added++;
		}
	es->strtabs[es->nr_strtabs++] = names;
	names = NULL;
cleanup:
	for (size_t k = 0; k < nr; k++)
		free(t[k].slots);
	free(names);
	return err ? err : added;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Address order; among aliases, perf's choice first: sized over zero-size, global over local over
 * weak, fewer leading underscores, longer name. */
static int cmp_esym(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;
	size_t lx, ly;
	int ux, uy;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->sized != y->sized)
		return x->sized ? -1 : 1;
	if (x->label != y->label)
		return x->label ? 1 : -1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux - uy;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorts by cmp_esym(): by address with a radix sort of (address, index) pairs, then each run of
 * aliases at one address with cmp_esym().  qsort() of the 40-byte entries was most of the time
 * a file's symbols took to load (cc1's 9k: 3 of 7 ms), and a file is loaded by every run that
 * meets it.  0 or -ENOMEM (s left unsorted). */
static int sort_by_addr(struct esym *s, size_t n)
{
	struct kv { __u64 addr, idx; } *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	struct esym *out = NULL;
	size_t i, j;
	int err = a && b ? 0 : -ENOMEM;

	for (i = 0; !err && i < n; i++) {
		a[i].addr = s[i].addr;
		a[i].idx = i;
	}
	/* least significant byte first, stable; bytes every address shares are skipped */
	for (int shift = 0; !err && shift < 64; shift += 8) {
		size_t count[257] = {};
		struct kv *t;

		for (i = 0; i < n; i++)
			count[((a[i].addr >> shift) & 0xff) + 1]++;
		if (count[((a[0].addr >> shift) & 0xff) + 1] == n)
			continue;
		for (i = 1; i < 257; i++)
			count[i] += count[i - 1];
		for (i = 0; i < n; i++)
			b[count[(a[i].addr >> shift) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	/* the pairs' second array goes before the entries' copy: a big table's peak stays low */
	free(b);
	b = NULL;
	out = err ? NULL : malloc(n * sizeof(*out));
	if (!err && !out)
		err = -ENOMEM;
	for (i = 0; !err && i < n; i++)
		out[i] = s[a[i].idx];
	for (i = 0; !err && i < n; i = j) {
		for (j = i + 1; j < n && out[j].addr == out[i].addr; j++)
			;
		if (j - i > 1)
			qsort(out + i, j - i, sizeof(*out), cmp_esym);
	}
	if (!err)
		memcpy(s, out, n * sizeof(*s));
	free(a);
	free(b);
	free(out);
	return err;
}

/* Exported functions are in both .symtab and .dynsym: keep one entry per (address, name). */
static size_t dedupe(struct esym *s, size_t n)
{
	size_t i, j, k, m, group, out = 0;

	for (i = 0; i < n; i = j) {
		for (j = i; j < n && s[j].addr == s[i].addr; j++)
			;
		group = out;
		for (k = i; k < j; k++) {
			for (m = group; m < out && strcmp(s[m].name, s[k].name); m++)
				;
			if (m == out)
				s[out++] = s[k];
		}
	}
	return out;
}

/* A label inside a function (a loop's entry in hand-written assembly) is part of that function,
 * not a function of its own: only labels outside every sized symbol are kept. */
static size_t drop_inner_labels(struct esym *s, size_t n)
{
	__u64 covered = 0;
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i].label && s[i].addr < covered)
			continue;
		if (s[i].sized && s[i].end > covered)
			covered = s[i].end;
		s[out++] = s[i];
	}
	return out;
}

/* Zero-size symbols cover up to the next symbol (within their section); aliases at one address
 * share the widest end, so the displayed alias covers what any of them does. */
static void compute_ends(struct esym *s, size_t n)
{
	__u64 next = UINT64_MAX, end;
	size_t i = n, g, k;

	while (i > 0) {
		for (g = i - 1; g > 0 && s[g - 1].addr == s[i - 1].addr; g--)
			;
		end = 0;
		for (k = g; k < i; k++) {
			if (!s[k].sized && s[k].end > next)
				s[k].end = next;
			if (s[k].end > end)
				end = s[k].end;
		}
		for (k = g; k < i; k++)
			s[k].end = end;
		next = s[g].addr;
		i = g;
	}
}

/* Address order, one entry per (address, name), each with its end. */
static void sort_syms(struct elf_syms *es)
{
	/* a file without function symbols leaves syms NULL, which qsort may not be given; short
	 * of memory for the radix sort's arrays, qsort() sorts in place */
	if (es->nr_syms && sort_by_addr(es->syms, es->nr_syms))
		qsort(es->syms, es->nr_syms, sizeof(*es->syms), cmp_esym);
	es->nr_syms = drop_inner_labels(es->syms, es->nr_syms);
	es->nr_syms = dedupe(es->syms, es->nr_syms);
	compute_ends(es->syms, es->nr_syms);
}

static int load_elf(struct elf_syms *es, Elf *elf, const char *path, uid_t owner)
{
	Elf *delf = NULL;
	int err, dfd = -1;

	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	err = read_segments(es, elf);
	if (err)
		goto cleanup;
	read_build_id(es, elf);
	err = add_symbols(es, elf, SHT_SYMTAB);
	if (err < 0)
		goto cleanup;
	if (err == 0) {
		/* stripped: the debug file's .symtab has the local (static) functions */
		dfd = debuginfo_open(elf, path, owner);
		if (dfd >= 0)
			delf = untrusted_elf(dfd);
		err = delf && elf_kind(delf) == ELF_K_ELF ? add_symbols(es, delf, SHT_SYMTAB) : 0;
		if (err < 0)
			goto cleanup;
	}
	err = add_symbols(es, elf, SHT_DYNSYM);
	err = err < 0 ? err : add_plt(es, elf);
	if (err < 0)
		goto cleanup;
	err = 0;
cleanup:
	elf_end(delf);
	if (dfd >= 0)
		close(dfd);
	return err;
}

/* Builds a table from an Elf handle (of a file owned by owner); frees the handle.  NULL with
 * errno set on error. */
static struct elf_syms *open_elf(Elf *elf, const char *path, uid_t owner)
{
	struct elf_syms *es = NULL;
	int err = 0;

	if (!elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	es = calloc(1, sizeof(*es));
	if (!es) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = load_elf(es, elf, path, owner);
cleanup:
	/* libelf's copies of the tables go before the sort, which takes as much again */
	elf_end(elf);
	if (!err)
		sort_syms(es);
	if (err) {
		elf_syms__free(es);
		errno = -err;
		return NULL;
	}
	return es;
}

struct elf_syms *elf_syms__open_fd(int fd, const char *path)
{
	struct stat st;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	/* the owner of the file decides whose debug file next to it is believed */
	if (fstat(fd, &st))
		return NULL;
	return open_elf(untrusted_elf(fd), path, st.st_uid);
}

struct elf_syms *elf_syms__open(const char *path)
{
	/* a path the user named: a link is theirs to follow, a FIFO or a device still no ELF */
	static const struct file_rules named = { .follow = true };
	enum file_refusal why;
	struct elf_syms *es;
	struct stat st;
	int fd, err;

	fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &named, &st, &why);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	es = elf_syms__open_fd(fd, path);
	err = errno;
	close(fd);
	errno = err;
	return es;
}

struct elf_syms *elf_syms__open_mem(const void *image, size_t size, const char *name)
{
	struct elf_syms *es;
	void *copy;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	/* libelf may write to the image it reads (byte-order conversion); the vdso is read-only */
	copy = malloc(size ? size : 1);
	if (!copy)
		return NULL;
	memcpy(copy, image, size);
	es = open_elf(elf_memory(copy, size), NULL, 0);
	err = errno;
	free(copy);
	errno = err;
	return es;
}

bool elf_syms__file_offset_to_vaddr(const struct elf_syms *es, __u64 off, __u64 *vaddr)
{
	const struct eseg *s;
	size_t i;

	for (i = 0; es && i < es->nr_segs; i++) {
		s = &es->segs[i];
		if (off >= s->off && off - s->off < s->filesz) {
			*vaddr = off - s->off + s->vaddr;
			return true;
		}
	}
	return false;
}

static bool vaddr_to_file_offset(const struct elf_syms *es, __u64 vaddr, __u64 *off)
{
	const struct eseg *s;
	size_t i;

	for (i = 0; i < es->nr_segs; i++) {
		s = &es->segs[i];
		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*off = vaddr - s->vaddr + s->off;
			return true;
		}
	}
	return false;
}

const char *elf_syms__find(const struct elf_syms *es, __u64 vaddr, __u64 *sym_off)
{
	return elf_syms__find_span(es, vaddr, sym_off, NULL);
}

const char *elf_syms__find_span(const struct elf_syms *es, __u64 vaddr, __u64 *sym_off,
				__u64 *size)
{
	size_t lo, mid;

	if (!es)
		return NULL;
	lo = FIRST_ABOVE(es->syms, es->nr_syms, addr, vaddr);
	if (!lo)
		return NULL;
	/* the best-ranked alias sorts first among equal addresses */
	for (mid = lo - 1; mid && es->syms[mid - 1].addr == es->syms[mid].addr; mid--)
		;
	if (vaddr >= es->syms[mid].end)
		return NULL;
	if (sym_off)
		*sym_off = vaddr - es->syms[mid].addr;
	if (size)
		*size = es->syms[mid].end - es->syms[mid].addr;
	return es->syms[mid].name;
}

int elf_syms__for_each_match(const struct elf_syms *es, const char *glob,
			     int (*fn)(const char *name, __u64 vaddr, __u64 file_off, void *ctx),
			     void *ctx)
{
	const struct esym *s;
	__u64 off;
	size_t i;
	int ret;

	for (i = 0; es && i < es->nr_syms; i++) {
		s = &es->syms[i];
		if (fnmatch(glob, s->name, 0))
			continue;
		/* a symbol outside every PT_LOAD cannot be probed: there is no file offset */
		if (!vaddr_to_file_offset(es, s->addr, &off))
			continue;
		ret = fn(s->name, s->addr, off, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

size_t elf_syms__bytes(const struct elf_syms *es)
{
	size_t n;

	if (!es)
		return 0;
	n = malloc_usable_size((void *)es) + malloc_usable_size(es->syms) +
	    malloc_usable_size(es->segs);
	for (size_t i = 0; i < es->nr_strtabs; i++)
		n += malloc_usable_size(es->strtabs[i]);
	return n;
}

void elf_syms__free(struct elf_syms *es)
{
	size_t i;

	if (!es)
		return;
	for (i = 0; i < es->nr_strtabs; i++)
		free(es->strtabs[i]);
	free(es->syms);
	free(es->segs);
	free(es);
}
