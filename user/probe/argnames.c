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

struct dw_find {
	const char *func;
	__u64 addr;      /* the function's ELF virtual address, or NO_ADDR */
	Dwarf_Die found; /* at addr, else the first definition named func */
	bool by_addr, by_name;
};
#define NO_ADDR (~0ULL)

static int dw_func_cb(Dwarf_Die *d, void *arg)
{
	struct dw_find *f = arg;
	Dwarf_Attribute a;
	const char *name = dwarf_diename(d), *link = NULL;
	Dwarf_Addr lo;

	/* the definition (code at an address), not a declaration */
	if (dwarf_lowpc(d, &lo))
		return DWARF_CB_OK;
	/* by address first: an alias symbol (glibc's malloc is __libc_malloc's) or one of two
	 * static functions of the same name is the code the probe is on */
	if (f->addr != NO_ADDR && lo == f->addr) {
		f->found = *d;
		f->by_addr = true;
		return DWARF_CB_ABORT;
	}
	if (f->by_name)
		return DWARF_CB_OK;
	if (dwarf_attr_integrate(d, DW_AT_linkage_name, &a))
		link = dwarf_formstring(&a);
	if ((!name || strcmp(name, f->func)) && (!link || strcmp(link, f->func)))
		return DWARF_CB_OK;
	f->found = *d;
	f->by_name = true;
	return f->addr == NO_ADDR ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* The ELF virtual address of file offset off, through the PT_LOAD that maps it; NO_ADDR when
 * none does. */
static __u64 offset_to_vaddr(Elf *elf, __u64 off)
{
	size_t n;
	GElf_Phdr ph;

	if (off == NO_ADDR || elf_getphdrnum(elf, &n))
		return NO_ADDR;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && off >= ph.p_offset &&
		    off < ph.p_offset + ph.p_filesz)
			return off - ph.p_offset + ph.p_vaddr;
	return NO_ADDR;
}

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
 * *stop, then finish(ctx) while the DWARF is still open; *vaddr gets file_off's ELF virtual
 * address.  0, -ENOENT without debug info, or another -errno. */
static int walk_dwarf(const char *path, __u64 file_off, __u64 *vaddr,
		      int (*fn)(Dwarf_Die *d, void *ctx), void (*finish)(void *ctx), void *ctx,
		      const bool *stop)
{
	static const struct file_rules named = { .follow = true };
	enum file_refusal why;
	Elf *elf = NULL, *delf = NULL;
	Dwarf *dw = NULL;
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct stat st;
	int fd, dfd = -1;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &named, &st, &why);
	if (fd < 0)
		return fd;
	elf = untrusted_elf(fd);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		*vaddr = offset_to_vaddr(elf, file_off);
		dw = open_dwarf(elf, path, st.st_uid, &dfd, &delf);
	}
	while (dw && !*stop && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			dwarf_getfuncs(&cu, fn, ctx, 0);
		off = next;
	}
	if (dw)
		finish(ctx);
	if (dw)
		dwarf_end(dw);
	elf_end(delf);
	elf_end(elf);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	return dw ? 0 : -ENOENT;
}

struct find_ctx {
	struct dw_find find;
	struct func_params *out;
};

static void find_finish(void *ctx)
{
	struct find_ctx *c = ctx;

	if (c->find.by_addr || c->find.by_name)
		dwarf_params(&c->find.found, c->out);
}

static int find_cb(Dwarf_Die *d, void *ctx)
{
	return dw_func_cb(d, &((struct find_ctx *)ctx)->find);
}

int func_params_dwarf(const char *path, const char *func, __u64 file_off,
		      struct func_params *out)
{
	struct find_ctx c = { .find = { .func = func, .addr = NO_ADDR }, .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	err = walk_dwarf(path, file_off, &c.find.addr, find_cb, find_finish, &c, &c.find.by_addr);
	return err ?: (c.find.by_addr || c.find.by_name ? 0 : -ENOENT);
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

static void each_finish(void *ctx)
{
	(void)ctx;
}

int func_params_dwarf_each(const char *path,
			   int (*fn)(__u64 vaddr, const struct func_params *p, void *ctx),
			   void *ctx)
{
	struct each_ctx c = { .fn = fn, .ctx = ctx };
	__u64 vaddr;
	int err = walk_dwarf(path, NO_ADDR, &vaddr, each_cb, each_finish, &c, &c.stop);

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
