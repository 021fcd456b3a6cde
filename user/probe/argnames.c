// SPDX-License-Identifier: GPL-2.0
/* A function's argument names (fields.h: func_params): a user function's from the DWARF of its
 * binary (or of its separate debug file), a kernel function's from the kernel's BTF.  Each name
 * is another name of argN, so only parameters passed one per integer register are mapped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <bpf/btf.h>
#include "core/grow.h"
#include "probe/fields.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

/* Records parameter i, or says why the mapping stops there: a float goes in a vector register
 * and a struct or wider value by value in several, or on the stack, so the registers the later
 * parameters use are no longer arg(i+1)... as the ABI's integer sequence numbers them. */
static bool add_param(struct func_params *p, const char *name, const char *type, unsigned size,
		      bool is_signed, bool is_ptr, bool scalar)
{
	struct func_param *q;

	if (p->nr == FUNC_PARAMS_MAX)
		return false;
	if (!scalar || !size || size > 8) {
		snprintf(p->stop, sizeof(p->stop), "%s (%s) is not passed in an integer register: "
			 "it and the parameters after it have no argN name", name[0] ? name : "?",
			 type);
		return false;
	}
	q = &p->p[p->nr++];
	snprintf(q->name, sizeof(q->name), "%s", name);
	snprintf(q->type, sizeof(q->type), "%s", type);
	q->size = size;
	q->is_signed = is_signed;
	q->is_ptr = is_ptr;
	return true;
}

/* ---- DWARF ---- */

/* The pointee's name for "T *", through qualifiers. */
static const char *pointee_name(Dwarf_Die *ptr)
{
	Dwarf_Attribute a;
	Dwarf_Die t = *ptr;

	for (int depth = 0; depth < 8; depth++) {
		if (!dwarf_attr_integrate(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			return "void";
		if (dwarf_diename(&t))
			return dwarf_diename(&t);
	}
	return "?";
}

/* A parameter's type: through typedefs and qualifiers to what decides its register. */
static void dwarf_param(Dwarf_Die *param, struct func_params *p, bool *more)
{
	const char *name = dwarf_diename(param) ?: "", *tname = NULL;
	Dwarf_Attribute a;
	Dwarf_Die t, *tp = param;
	Dwarf_Word enc = 0;
	bool scalar = false, is_signed = false, is_ptr = false;
	char type[FIELD_TYPE_MAX];
	int size = 0;

	for (int depth = 0; depth < 16; depth++) {
		if (!dwarf_attr_integrate(tp, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			break;
		tp = &t;
		if (!tname)
			tname = dwarf_diename(&t);
		switch (dwarf_tag(&t)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			continue;
		case DW_TAG_pointer_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
			scalar = is_ptr = true;
			size = 8;
			break;
		case DW_TAG_base_type:
			size = dwarf_bytesize(&t);
			if (dwarf_attr(&t, DW_AT_encoding, &a) && !dwarf_formudata(&a, &enc))
				scalar = enc == DW_ATE_signed || enc == DW_ATE_unsigned ||
					 enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
					 enc == DW_ATE_boolean || enc == DW_ATE_UTF;
			is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
			break;
		case DW_TAG_enumeration_type:
			size = dwarf_bytesize(&t);
			scalar = true;
			is_signed = true;
			break;
		default: /* struct, union, class, array by value */
			size = dwarf_bytesize(&t);
			break;
		}
		break;
	}
	if (is_ptr) /* "char *" rather than a pointer typedef's name */
		snprintf(type, sizeof(type), "%s *", pointee_name(tp));
	else
		snprintf(type, sizeof(type), "%s", tname ?: "?");
	*more = add_param(p, name, type, size > 0 ? (unsigned)size : 0, is_signed, is_ptr, scalar);
}

#define NO_ADDR (~0ULL)
#define LOADS_MAX 16

/* The parameters of the subprogram DIE d (its declaration's, through DW_AT_specification). */
static void dwarf_params(Dwarf_Die *d, struct func_params *p)
{
	Dwarf_Die child, spec, *fn = d;
	Dwarf_Attribute a;
	bool more = true;

	/* an out-of-line C++ method's definition may list its parameters only in its declaration */
	if (dwarf_child(fn, &child) && dwarf_attr(d, DW_AT_specification, &a) &&
	    dwarf_formref_die(&a, &spec))
		fn = &spec;
	if (dwarf_child(fn, &child))
		return;
	do {
		if (dwarf_tag(&child) == DW_TAG_unspecified_parameters)
			break;
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		dwarf_param(&child, p, &more);
	} while (more && dwarf_siblingof(&child, &child) == 0);
}

/* Debug info of an open ELF: its own, else its separate debug file's. */
static Dwarf *open_dwarf(Elf *elf, const char *path, uid_t owner, int *dfd, Elf **delf)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);

	if (dw)
		return dw;
	*dfd = debuginfo_open(elf, path, owner);
	if (*dfd < 0)
		return NULL;
	*delf = untrusted_elf(*dfd);
	return *delf && elf_kind(*delf) == ELF_K_ELF ? dwarf_begin_elf(*delf, DWARF_C_READ, NULL) :
						       NULL;
}

/* Calls fn on every function definition of path's DWARF (dwarf_getfuncs()'s callback) until
 * *stop; loads gets the file's PT_LOAD headers (at most LOADS_MAX).  0, -ENOENT without debug
 * info, or another -errno. */
static int walk_dwarf(const char *path, GElf_Phdr *loads, int *nr_loads,
		      int (*fn)(Dwarf_Die *d, void *ctx), void *ctx, const bool *stop)
{
	static const struct file_rules named = { .follow = true };
	enum file_refusal why;
	Elf *elf = NULL, *delf = NULL;
	Dwarf *dw = NULL;
	Dwarf_Off off = 0, next;
	size_t hsize, n;
	struct stat st;
	int fd, dfd = -1;

	*nr_loads = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &named, &st, &why);
	if (fd < 0)
		return fd;
	elf = untrusted_elf(fd);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		for (size_t i = 0; !elf_getphdrnum(elf, &n) && i < n && *nr_loads < LOADS_MAX; i++)
			if (gelf_getphdr(elf, i, &loads[*nr_loads]) &&
			    loads[*nr_loads].p_type == PT_LOAD)
				++*nr_loads;
		dw = open_dwarf(elf, path, st.st_uid, &dfd, &delf);
	}
	while (dw && !*stop && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			dwarf_getfuncs(&cu, fn, ctx, 0);
		off = next;
	}
	if (dw)
		dwarf_end(dw);
	elf_end(delf);
	elf_end(elf);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	return dw ? 0 : -ENOENT;
}

/* One file's functions, read in one pass and kept for the next lookups: a glob's matches
 * (u:libc:str*) are many functions of one file. */
struct dw_entry {
	__u64 lo;         /* where its code starts (ELF virtual address) */
	char *name, *link; /* DW_AT_name, DW_AT_linkage_name (either may be NULL) */
	struct func_params p;
};
static struct dw_index {
	char *path;
	int err;
	GElf_Phdr loads[LOADS_MAX];
	int nr_loads;
	struct dw_entry *v;
	size_t n, cap;
	bool stop; /* ENOMEM */
} dwi;

static int index_cb(Dwarf_Die *d, void *ctx)
{
	struct dw_index *x = ctx;
	struct dw_entry *e;
	Dwarf_Attribute a;
	const char *link = NULL;
	Dwarf_Addr lo;

	/* the definition (code at an address), not a declaration */
	if (dwarf_lowpc(d, &lo))
		return DWARF_CB_OK;
	if (ARRAY_GROW(x->v, x->cap, x->n + 1)) {
		x->stop = true;
		return DWARF_CB_ABORT;
	}
	e = &x->v[x->n++];
	memset(e, 0, sizeof(*e));
	e->lo = lo;
	if (dwarf_attr_integrate(d, DW_AT_linkage_name, &a))
		link = dwarf_formstring(&a);
	e->name = dwarf_diename(d) ? strdup(dwarf_diename(d)) : NULL;
	e->link = link ? strdup(link) : NULL;
	dwarf_params(d, &e->p);
	return DWARF_CB_OK;
}

static void index_free(struct dw_index *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->v[i].name);
		free(x->v[i].link);
	}
	free(x->v);
	free(x->path);
	memset(x, 0, sizeof(*x));
}

static int index_file(const char *path)
{
	if (dwi.path && !strcmp(dwi.path, path))
		return dwi.err;
	index_free(&dwi);
	dwi.path = strdup(path);
	if (!dwi.path)
		return -ENOMEM;
	dwi.err = walk_dwarf(path, dwi.loads, &dwi.nr_loads, index_cb, &dwi, &dwi.stop);
	if (!dwi.err && dwi.stop)
		dwi.err = -ENOMEM;
	return dwi.err;
}

int func_params_dwarf(const char *path, const char *func, __u64 file_off,
		      struct func_params *out)
{
	__u64 addr = NO_ADDR;
	const struct dw_entry *by_name = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	err = index_file(path);
	if (err)
		return err;
	for (int i = 0; file_off != NO_ADDR && i < dwi.nr_loads; i++) {
		const GElf_Phdr *ph = &dwi.loads[i];

		if (file_off >= ph->p_offset && file_off < ph->p_offset + ph->p_filesz)
			addr = file_off - ph->p_offset + ph->p_vaddr;
	}
	/* by address first: an alias symbol (glibc's malloc is __libc_malloc's) or one of two
	 * static functions of the same name is the code the probe is on */
	for (size_t i = 0; i < dwi.n; i++) {
		const struct dw_entry *e = &dwi.v[i];

		if (addr != NO_ADDR && e->lo == addr) {
			*out = e->p;
			return 0;
		}
		if (!by_name && ((e->name && !strcmp(e->name, func)) ||
				 (e->link && !strcmp(e->link, func))))
			by_name = e;
	}
	if (!by_name)
		return -ENOENT;
	*out = by_name->p;
	return 0;
}

struct each_ctx {
	int (*fn)(__u64 vaddr, const struct func_params *p, void *ctx);
	void *ctx;
	int err;
	bool stop;
};

static int each_cb(Dwarf_Die *d, void *ctx)
{
	struct each_ctx *c = ctx;
	struct func_params p = {};
	Dwarf_Addr lo;

	if (dwarf_lowpc(d, &lo))
		return DWARF_CB_OK;
	dwarf_params(d, &p);
	c->err = c->fn(lo, &p, c->ctx);
	c->stop = c->err != 0;
	return c->stop ? DWARF_CB_ABORT : DWARF_CB_OK;
}

int func_params_dwarf_each(const char *path,
			   int (*fn)(__u64 vaddr, const struct func_params *p, void *ctx),
			   void *ctx)
{
	struct each_ctx c = { .fn = fn, .ctx = ctx };
	GElf_Phdr loads[LOADS_MAX];
	int nr_loads, err = walk_dwarf(path, loads, &nr_loads, each_cb, &c, &c.stop);

	return err ?: c.err;
}

/* ---- BTF ---- */

int func_params_btf(const struct btf *btf, int func_id, struct func_params *out)
{
	const struct btf_type *fn = btf ? btf__type_by_id(btf, func_id) : NULL, *proto;
	const struct btf_param *ps;

	memset(out, 0, sizeof(*out));
	if (!fn || !btf_is_func(fn))
		return -ENOENT;
	proto = btf__type_by_id(btf, fn->type);
	if (!proto || !btf_is_func_proto(proto))
		return -ENOENT;
	ps = btf_params(proto);
	for (int i = 0; i < btf_vlen(proto); i++) {
		const char *name = btf__name_by_offset(btf, ps[i].name_off) ?: "";
		__s32 tid = btf__resolve_type(btf, ps[i].type);
		const struct btf_type *t = tid >= 0 ? btf__type_by_id(btf, tid) : NULL;
		const struct btf_type *named = btf__type_by_id(btf, ps[i].type);
		const char *tname = named ? btf__name_by_offset(btf, named->name_off) : NULL;
		__s64 size = tid >= 0 ? btf__resolve_size(btf, tid) : -1;
		bool ptr = t && btf_is_ptr(t), is_signed = false, scalar = ptr;
		char type[FIELD_TYPE_MAX];

		if (!ps[i].type) /* "...": a variadic function's */
			break;
		if (ptr) {
			__s32 to = btf__resolve_type(btf, t->type);
			const struct btf_type *pt = to > 0 ? btf__type_by_id(btf, to) : NULL;
			const char *pn = pt ? btf__name_by_offset(btf, pt->name_off) : NULL;

			snprintf(type, sizeof(type), "%s%s *", pt && btf_is_struct(pt) ? "struct " : "",
				 pn && *pn ? pn : "void");
			size = 8;
		} else {
			if (t && btf_is_int(t)) {
				scalar = true;
				is_signed = btf_int_encoding(t) & BTF_INT_SIGNED;
			} else if (t && (btf_is_enum(t) || btf_is_enum64(t))) {
				scalar = true;
				is_signed = btf_kflag(t);
			}
			snprintf(type, sizeof(type), "%s", tname && *tname ? tname : "?");
		}
		if (!add_param(out, name, type, size > 0 ? (unsigned)size : 0, is_signed, ptr,
			       scalar))
			break;
	}
	return 0;
}

/* ---- as text ---- */

char *func_params_text(const struct func_params *p, char *buf, size_t size)
{
	size_t off = 0;

	off += snprintf(buf, size, "(");
	for (int i = 0; i < p->nr && off < size; i++) {
		const struct func_param *q = &p->p[i];
		size_t tl = strlen(q->type);

		off += snprintf(buf + off, size - off, "%s%s%s%s", i ? ", " : "", q->type,
				tl && q->type[tl - 1] == '*' ? "" : " ", q->name[0] ? q->name : "?");
	}
	if (off < size)
		snprintf(buf + off, size - off, "%s)", p->stop[0] ? (p->nr ? ", ..." : "...") : "");
	return buf;
}

/* ---- as fields ---- */

int fields_add_func_params(struct field_list *l, const struct func_params *p)
{
	int err = 0;

	for (int i = 0; i < p->nr && !err; i++) {
		const struct func_param *q = &p->p[i];
		struct field f = { .src = FSRC_ARG, .arg = i, .size = q->size, .alias = true,
				   .is_signed = q->is_signed,
				   .kind = q->is_ptr ? FIELD_PTR : FIELD_INT };
		bool taken = !q->name[0];

		/* arg0..arg5 keep their meaning; a parameter named pid or cpu wins over the pseudo
		 * field added after it, as a tracepoint's own field does */
		for (int k = 0; k < l->nr; k++)
			taken |= !strcmp(l->v[k].name, q->name);
		if (taken)
			continue;
		snprintf(f.name, sizeof(f.name), "%s", q->name);
		snprintf(f.type, sizeof(f.type), "%s", q->type);
		err = field_list_add(l, &f);
	}
	return err;
}
