// SPDX-License-Identifier: GPL-2.0
/* bpfprof annotate: per hot function, its instructions with the share of its samples on each
 * and the source lines they come from, as perf annotate --stdio shows them.  From a live run
 * (profile's targets, events and runner, the samples keeping their leaf's address:
 * stack_agg__keep_leaf_addrs()) or from a pprof file with addresses (-i FILE).
 *
 * Instructions are decoded by capstone, a disassembly library: the bytes of the function are
 * read from its file and decoded in process, at the addresses the samples name, instead of
 * running objdump and parsing its text (whose layout changes between binutils versions, and
 * which perf annotate needs installed to work at all). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <capstone/capstone.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "cmd/profile.h"
#include "core/common.h"
#include "core/kernel_text.h"
#include "core/stackrun.h"
#include "in/profile_in.h"
#include "sym/srcline.h"
#include "sym/stackcollect.h"
#include "sym/stackagg.h"
#include "sym/syms.h"
#include "profile.skel.h"

/* The most bytes of one function disassembled. */
#define MAX_FUNCTION_BYTES (1 << 20)
/* of a kernel function, whose end kallsyms only bounds by the next symbol */
#define MAX_KERNEL_FUNCTION_BYTES (1 << 16)
/* The module of a frame in the vdso (sym/syms.h) */
#define VDSO "[vdso]"
/* perf annotate's colours: red from 5%, green from 0.5% */
#define HOT_PERCENT 5.0
#define WARM_PERCENT 0.5

static struct {
	const char *symbol; /* -s, or the file mode's SYMBOL */
	const char *input;  /* -i */
	bool stdio;
	double percent_limit; /* the file mode's --percent-limit */
	/* perf annotate's -n, -M intel, --asm-raw, --no-source */
	bool show_nr, intel, asm_raw, no_source;
} env;

struct ann_addr {
	__u64 offset; /* in the file; a kernel function's: the address */
	__u64 count;
};

/* A function the samples' leaves are in. */
struct ann_fn {
	const char *name, *module;
	const char *build_id; /* the module's, as the samples had it (hex), or NULL */
	bool kernel;
	__u64 total;
	struct ann_addr *addrs;
	size_t nr, cap;
};

struct annotation {
	struct ann_fn *fns;
	size_t nr, cap;
	struct stack_names *keys; /* "module\x1fname" -> index */
	bool live;                /* kernel addresses are this boot's: its functions are read */
	__u64 total, kernel, unresolved;
};

/* ---- the samples' leaves, by function and instruction ---- */

static int add_leaf(struct annotation *a, const struct stack_sample *s)
{
	const struct frame *leaf, *f;
	struct ann_fn *fn;
	char key[4096];
	int id, len;
	__u64 off;
	__u32 i;

	if (!s->nr_frames || !s->value)
		return 0;
	a->total += s->value;
	leaf = stack_sample_frame(s, s->nr_frames - 1);
	/* the compiled function, before the inlined ones at the same address */
	for (i = s->nr_frames - 1, f = leaf; i > 0 && f->inlined; f = stack_sample_frame(s, --i))
		;
	if (leaf->kernel)
		a->kernel += s->value;
	if (leaf->kernel && !a->live)
		return 0;
	if (!f->name || !f->module ||
	    (!leaf->kernel && f->module[0] != '/' && strcmp(f->module, VDSO))) {
		a->unresolved += s->value;
		return 0;
	}
	len = snprintf(key, sizeof(key), "%s\x1f%s", f->module, f->name);
	id = stack_names__intern(a->keys, key, len < (int)sizeof(key) ? len : (int)sizeof(key) - 1);
	if (id < 0)
		return id;
	if ((size_t)id == a->nr) {
		if (ARRAY_GROW(a->fns, a->cap, a->nr + 1))
			return -ENOMEM;
		a->fns[a->nr++] = (struct ann_fn){ .name = f->name, .module = f->module,
						   .build_id = f->build_id, .kernel = leaf->kernel };
	}
	fn = &a->fns[id];
	fn->total += s->value;
	off = leaf->kernel ? leaf->addr : leaf->offset;
	for (size_t k = 0; k < fn->nr; k++)
		if (fn->addrs[k].offset == off) {
			fn->addrs[k].count += s->value;
			return 0;
		}
	if (ARRAY_GROW(fn->addrs, fn->cap, fn->nr + 1))
		return -ENOMEM;
	fn->addrs[fn->nr++] = (struct ann_addr){ off, s->value };
	return 0;
}

static int cmp_fn(const void *x, const void *y)
{
	const struct ann_fn *a = x, *b = y;

	return a->total < b->total ? 1 : a->total > b->total ? -1 : strcmp(a->name, b->name);
}

/* ---- source text ---- */

struct src_file {
	char *path, *text;
	const char **lines;
	size_t nr;
};

struct src_cache {
	struct src_file files[16];
	size_t nr;
};

/* Line `line` of the source file at path (NULL when unreadable); cut at its newline by len. */
static const char *source_line(struct src_cache *c, const char *path, __u32 line, int *len)
{
	struct src_file *f = NULL;
	size_t size = 0;
	const char *end;

	for (size_t i = 0; i < c->nr; i++)
		if (!strcmp(c->files[i].path, path))
			f = &c->files[i];
	if (!f && c->nr < sizeof(c->files) / sizeof(c->files[0])) {
		/* a source file is the user's to read: but never a FIFO or a device */
		static const struct file_rules named = { .follow = true };
		enum file_refusal why;
		struct stat st;
		int fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &named, &st, &why);

		f = &c->files[c->nr++];
		memset(f, 0, sizeof(*f));
		f->path = strdup(path);
		if (fd >= 0 && untrusted_read(fd, FILE_MAPPED, &f->text, &size) == 0) {
			for (size_t i = 0; i <= size; i++)
				if (i == size || f->text[i] == '\n')
					f->nr++;
			f->lines = calloc(f->nr + 1, sizeof(*f->lines));
			for (size_t i = 0, n = 0; f->lines && i < size; i++)
				if (i == 0 || f->text[i - 1] == '\n')
					f->lines[n++] = f->text + i;
		}
		if (fd >= 0)
			close(fd);
	}
	if (!f || !f->lines || !line || line > f->nr || !f->lines[line - 1])
		return NULL;
	end = strchr(f->lines[line - 1], '\n');
	*len = end ? end - f->lines[line - 1] : (int)strlen(f->lines[line - 1]);
	return f->lines[line - 1];
}

static void src_cache_free(struct src_cache *c)
{
	for (size_t i = 0; i < c->nr; i++) {
		free(c->files[i].path);
		free(c->files[i].text);
		free(c->files[i].lines);
	}
}

/* ---- one function ---- */

struct printer {
	FILE *out;
	bool colour;
	const char *event;
	struct srclines *lines;
	struct src_cache src;
	__u64 run_total;
	/* kernel functions: their symbols, their code, and the vmlinux with their lines */
	struct ksyms *ksyms;
	struct ktext *ktext;
	const char *ktext_how;
	bool vmlinux_tried;
	char *vmlinux;
	__u64 kaslr;
	/* the files' symbols, opened once per file: a system-wide run's hundreds of functions
	 * are in a few dozen files (sorting a large library's symbols per function cost seconds) */
	struct {
		char *path;
		struct elf_syms *es;
		int err;   /* errno of the open where es is NULL */
		bool said; /* why its functions cannot be disassembled, printed */
	} syms[32];
	size_t nr_syms, next_sym;
};

/* The slot of p->syms that holds the file at path, or -1. */
static int module_slot(const struct printer *p, const char *path)
{
	for (size_t i = 0; i < p->nr_syms; i++)
		if (!strcmp(p->syms[i].path, path))
			return i;
	return -1;
}

/* The symbols of the file at path (or of our own [vdso], every process's), from the cache (NULL
 * with errno set when unreadable). */
static const struct elf_syms *module_syms(struct printer *p, const char *path)
{
	size_t i, n = sizeof(p->syms) / sizeof(p->syms[0]), size;
	int held = module_slot(p, path);
	const void *vdso;
	char *copy;

	if (held >= 0) {
		errno = p->syms[held].err;
		return p->syms[held].es;
	}
	copy = strdup(path);
	if (!copy)
		return NULL;
	/* full: the oldest goes */
	i = p->nr_syms < n ? p->nr_syms++ : p->next_sym++ % n;
	free(p->syms[i].path);
	elf_syms__free(p->syms[i].es);
	p->syms[i].path = copy;
	if (strcmp(path, VDSO)) {
		p->syms[i].es = elf_syms__open(path);
	} else {
		vdso = syms_vdso_image(&size);
		errno = ENOENT; /* a kernel without one */
		p->syms[i].es = vdso ? elf_syms__open_mem(vdso, size, VDSO) : NULL;
	}
	p->syms[i].err = p->syms[i].es ? 0 : errno ?: ENOEXEC;
	errno = p->syms[i].err;
	return p->syms[i].es;
}

/* Whether why the file at path cannot be read was said (module_syms() opened it): then true;
 * else false, and it is taken as said. */
static bool module_said(struct printer *p, const char *path)
{
	int i = module_slot(p, path);
	bool said = i >= 0 && p->syms[i].said;

	if (i >= 0)
		p->syms[i].said = true;
	return said;
}

static const char *colour_of(const struct printer *p, double pct, bool hottest)
{
	if (!p->colour)
		return "";
	if (hottest)
		return "\033[1;31m";
	return pct >= HOT_PERCENT ? "\033[31m" : pct >= WARM_PERCENT ? "\033[32m" : "";
}

/* The function's code: *start its address, the bytes in *code (malloc'd), *len of them.  0 or
 * -errno (printed). */
static int read_code(struct printer *p, const struct ann_fn *fn, __u64 *start, __u8 **code,
		     size_t *len)
{
	static const struct file_rules named = { .follow = true };
	const struct elf_syms *es = module_syms(p, fn->module);
	__u64 vaddr, off = fn->addrs[0].offset, sym_off = 0, size = 0;
	enum file_refusal why;
	const char *name, *id;
	size_t image_size;
	struct stat st;
	int fd = -1, err = -errno;
	ssize_t got;

	*code = NULL;
	/* (once per file, not once for each of its functions) */
	if (!es) {
		if (!module_said(p, fn->module))
			p_err("cannot read %s: %s", fn->module, strerror(-err));
		goto cleanup;
	}
	/* a file rebuilt since the profile was taken: its code is not what was sampled */
	id = elf_syms__build_id(es);
	if (fn->build_id && id && strcmp(fn->build_id, id)) {
		if (!module_said(p, fn->module))
			p_err("%s is not the file the samples are of (build-id %s, the samples' %s)",
			      fn->module, id, fn->build_id);
		err = -ESTALE;
		goto cleanup;
	}
	name = elf_syms__file_offset_to_vaddr(es, off, &vaddr) ?
	       elf_syms__find_span(es, vaddr, &sym_off, &size) : NULL;
	if (!name || !size) {
		p_err("%s: no symbol at %s+0x%llx to disassemble", fn->name, fn->module,
		      (unsigned long long)off);
		err = -ENOENT;
		goto cleanup;
	}
	*start = vaddr - sym_off;
	*len = size > MAX_FUNCTION_BYTES ? MAX_FUNCTION_BYTES : size;
	if (!strcmp(fn->module, VDSO)) {
		/* the image mapped into every process, ours too (the build-ids agreed) */
		const __u8 *image = syms_vdso_image(&image_size);

		if (!image || off - sym_off >= image_size || !(*code = malloc(*len))) {
			err = image ? -ENOMEM : -ENOENT;
			p_err("cannot read %s's code in %s: %s", fn->name, VDSO, strerror(-err));
			goto cleanup;
		}
		*len = *len < image_size - (off - sym_off) ? *len : image_size - (off - sym_off);
		memcpy(*code, image + off - sym_off, *len);
		err = 0;
		goto cleanup;
	}
	fd = untrusted_open(AT_FDCWD, fn->module, FILE_MAPPED, &named, &st, &why);
	*code = malloc(*len);
	if (fd < 0 || !*code) {
		err = fd < 0 ? fd : -ENOMEM;
		p_err("cannot read %s: %s", fn->module, strerror(-err));
		goto cleanup;
	}
	/* the function's bytes are at its file offset: the samples' less their distance in */
	got = pread(fd, *code, *len, off - sym_off);
	if (got <= 0) {
		err = got < 0 ? -errno : -EIO;
		p_err("cannot read %s's code in %s: %s", fn->name, fn->module, strerror(-err));
		goto cleanup;
	}
	*len = got;
	err = 0;
cleanup:
	if (err) {
		free(*code);
		*code = NULL;
	}
	if (fd >= 0)
		close(fd);
	return err;
}

/* A kernel function's code, as it runs (core/kernel_text.h), its bounds from kallsyms. */
static int read_kernel_code(struct printer *p, const struct ann_fn *fn, __u64 *start,
			    __u8 **code, size_t *len)
{
	const struct ksym *k;
	__u64 end;
	long got;

	*code = NULL;
	p->ksyms = p->ksyms ?: ksyms__load();
	k = p->ksyms ? ksyms__find(p->ksyms, fn->addrs[0].offset) : NULL;
	if (!k || strcmp(k->name, fn->name)) {
		p_err("%s: no kernel symbol at 0x%llx to disassemble", fn->name,
		      (unsigned long long)fn->addrs[0].offset);
		return -ENOENT;
	}
	*start = k->addr;
	end = ksyms__end(p->ksyms, k->addr);
	*len = end > *start && end - *start < MAX_KERNEL_FUNCTION_BYTES ? end - *start :
									  MAX_KERNEL_FUNCTION_BYTES;
	p->ktext = p->ktext ?: ktext__new();
	*code = malloc(*len);
	if (!p->ktext || !*code) {
		free(*code);
		*code = NULL;
		return -ENOMEM;
	}
	got = ktext__read(p->ktext, *start, *code, *len, &p->ktext_how);
	if (got < 0) {
		p_err("cannot read the kernel's code of %s (through %s): %s", fn->name,
		      p->ktext_how ?: "/proc/kcore", strerror((int)-got));
		free(*code);
		*code = NULL;
		return (int)got;
	}
	*len = got;
	return 0;
}

/* The source line chain of an instruction: from the file's DWARF, or for the core kernel's
 * from its vmlinux where one with debug info is found.  0 or -errno. */
static int insn_chain(struct printer *p, const struct ann_fn *fn, __u64 addr,
		      const struct srcline_chain **chain)
{
	if (!fn->kernel)
		return srclines__lookup(p->lines, fn->module, addr, chain);
	if (strcmp(fn->module, "[kernel.kallsyms]"))
		return -ENOENT;
	if (!p->vmlinux_tried) {
		char path[4096];

		p->vmlinux_tried = true;
		p->ksyms = p->ksyms ?: ksyms__load();
		if (p->ksyms && !kernel_vmlinux_find(p->ksyms, path, sizeof(path), &p->kaslr))
			p->vmlinux = strdup(path);
	}
	return p->vmlinux ? srclines__lookup(p->lines, p->vmlinux, addr - p->kaslr, chain) :
			    -ENOENT;
}

/* " <NAME+0xOFF>" for the target of a call, or of a jump out of the function [lo, hi), as
 * objdump names it, into buf ("" when unknown): the kernel's from kallsyms, a file's from its
 * symbols (es, which may be NULL). */
static const char *call_target(struct printer *p, const struct ann_fn *fn,
			       const struct elf_syms *es, const cs_insn *insn, __u64 lo, __u64 hi,
			       char *buf, size_t size)
{
	bool call = !strncmp(insn->mnemonic, "call", 4) || !strcmp(insn->mnemonic, "bl");
	bool jump = insn->mnemonic[0] == 'j' || !strcmp(insn->mnemonic, "b");
	const char *name = NULL;
	__u64 target, off = 0, len;
	char *end;

	buf[0] = '\0';
	if (!call && !jump)
		return buf;
	/* an immediate target: capstone prints it as 0x... (arm64: #0x...) */
	errno = 0;
	target = strtoull(insn->op_str + (insn->op_str[0] == '#'), &end, 16);
	if (errno || *end || strncmp(insn->op_str + (insn->op_str[0] == '#'), "0x", 2) ||
	    (!call && target >= lo && target < hi))
		return buf;
	if (fn->kernel) {
		const struct ksym *k = p->ksyms ? ksyms__find(p->ksyms, target) : NULL;

		if (k) {
			name = k->name;
			off = target - k->addr;
		}
	} else if (es) {
		name = elf_syms__find_span(es, target, &off, &len);
	}
	if (name)
		snprintf(buf, size, off ? " <%s+0x%llx>" : " <%s>", name, (unsigned long long)off);
	return buf;
}

/* --asm-raw: the instruction's bytes in hex, as objdump prints them, padded to seven. */
static const char *raw_bytes(const cs_insn *insn, char *buf, size_t size)
{
	size_t off = 0;

	for (size_t i = 0; i < insn->size && off + 4 < size; i++)
		off += snprintf(buf + off, size - off, "%02x ", insn->bytes[i]);
	snprintf(buf + off, size - off, "%*s", off < 21 ? (int)(21 - off) : 0, "");
	return buf;
}

static __u64 insn_count(const struct ann_fn *fn, __u64 start_off, __u64 addr, __u64 start,
			size_t size)
{
	__u64 n = 0, off = start_off + (addr - start);

	for (size_t i = 0; i < fn->nr; i++)
		if (fn->addrs[i].offset >= off && fn->addrs[i].offset < off + size)
			n += fn->addrs[i].count;
	return n;
}

/* capstone, loaded by the runs that disassemble: linked, its 80,000 relocations cost every run of
 * every command ~3 ms of CPU before main() and 3 MB of RSS (its relocation table and relocated
 * data), for annotate alone. */
static struct {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_disasm) *disasm;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
} cs_rt;

/* 0, or -ENOENT (printed) when the library or one of its functions is missing. */
static int capstone_load(void)
{
	static int state; /* 0 not tried, 1 loaded, -1 missing */
	char name[32];
	void *h;

	if (state)
		return state > 0 ? 0 : -ENOENT;
	state = -1;
	/* the soname follows the API's major version (libcapstone.so.4, .so.5) */
	snprintf(name, sizeof(name), "libcapstone.so.%d", CS_API_MAJOR);
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h) {
		cs_rt.open = (__typeof__(cs_rt.open))dlsym(h, "cs_open");
		cs_rt.option = (__typeof__(cs_rt.option))dlsym(h, "cs_option");
		cs_rt.disasm = (__typeof__(cs_rt.disasm))dlsym(h, "cs_disasm");
		cs_rt.free = (__typeof__(cs_rt.free))dlsym(h, "cs_free");
		cs_rt.close = (__typeof__(cs_rt.close))dlsym(h, "cs_close");
	}
	if (!h || !cs_rt.open || !cs_rt.option || !cs_rt.disasm || !cs_rt.free || !cs_rt.close) {
		p_err("cannot disassemble: %s (install capstone, Debian's libcapstone%d)",
		      h ? "a capstone function is missing" : dlerror(), CS_API_MAJOR);
		return -ENOENT;
	}
	state = 1;
	return 0;
}

static int annotate_fn(struct printer *p, const struct ann_fn *fn)
{
	__u64 start = 0, start_off, vaddr, hottest = 0;
	const struct srcline_chain *chain;
	const char *last_file = NULL;
	__u32 last_line = 0;
	cs_insn *insn = NULL;
	__u8 *code = NULL;
	size_t len = 0, n = 0;
	const struct elf_syms *es = NULL;
	char target[256], raw[64];
	csh cs = 0;
	int err;

	err = fn->kernel ? read_kernel_code(p, fn, &start, &code, &len) :
			   read_code(p, fn, &start, &code, &len);
	if (err)
		return err;
	if (fn->kernel) {
		start_off = start; /* a kernel function's "offsets" are its addresses */
	} else {
		es = module_syms(p, fn->module);
		elf_syms__file_offset_to_vaddr(es, fn->addrs[0].offset, &vaddr);
		start_off = fn->addrs[0].offset - (vaddr - start);
	}
	err = capstone_load();
	if (err)
		goto cleanup;
#if defined(__x86_64__)
	err = cs_rt.open(CS_ARCH_X86, CS_MODE_64, &cs) == CS_ERR_OK ? 0 : -EINVAL;
	/* AT&T, as objdump and perf annotate print x86, unless -M intel */
	if (!err)
		cs_rt.option(cs, CS_OPT_SYNTAX, env.intel ? CS_OPT_SYNTAX_INTEL : CS_OPT_SYNTAX_ATT);
#elif defined(__aarch64__)
	err = cs_rt.open(CS_ARCH_ARM64, CS_MODE_ARM, &cs) == CS_ERR_OK ? 0 : -EINVAL;
#else
	err = -EOPNOTSUPP;
#endif
	if (err) {
		p_err("cannot disassemble: capstone has no decoder for this architecture");
		goto cleanup;
	}
	/* capstone stops at the first byte it cannot decode: what it gave is shown */
	n = cs_rt.disasm(cs, code, len, start, 0, &insn);
	for (size_t i = 0; i < n; i++) {
		__u64 c = insn_count(fn, start_off, insn[i].address, start, insn[i].size);

		hottest = c > hottest ? c : hottest;
	}
	fprintf(p->out, " %s |\tSource code & Disassembly of %s for %s (%llu samples, "
		"%.2f%% of all, percent: local period)\n", env.show_nr ? "Samples" : "Percent",
		fn->name, p->event,
		(unsigned long long)fn->total, p->run_total ? 100.0 * fn->total / p->run_total : 0);
	fprintf(p->out, "%s\n", "----------------------------------------------------------------"
		"--------------------------------");
	if (fn->kernel) {
		fprintf(p->out, "         :\t%s (the code as it runs, read through %s)\n",
			fn->module, p->ktext_how);
		if (!env.no_source && insn_chain(p, fn, start, &chain) == -ENOENT)
			fprintf(p->out, "         :\t(source lines unavailable: %s)\n",
				p->vmlinux ? "a module's, and only vmlinux's are read" :
				"no vmlinux with debug info (/usr/lib/debug/boot/vmlinux-RELEASE, "
				"by build-id, or from debuginfod)");
	} else {
		fprintf(p->out, "         :\t%s\n", fn->module);
		if (!env.no_source && !srclines__has_dwarf(p->lines, fn->module))
			fprintf(p->out, "         :\t(source lines unavailable: no debug info, nor a "
				"debug file)\n");
	}
	for (size_t i = 0; i < n; i++) {
		__u64 c = insn_count(fn, start_off, insn[i].address, start, insn[i].size);
		double pct = fn->total ? 100.0 * c / fn->total : 0;
		const char *col = colour_of(p, pct, c && c == hottest);

		/* the source line the instruction is from, where it changes */
		if (!env.no_source && !insn_chain(p, fn, insn[i].address, &chain)) {
			const struct srcline_frame *at = &chain->f[chain->nr - 1];

			if (at->file && at->line && (at->line != last_line || !last_file ||
						     strcmp(at->file, last_file))) {
				const char *base = strrchr(at->file, '/'), *text;
				int tlen = 0;

				text = source_line(&p->src, at->file, at->line, &tlen);
				fprintf(p->out, "         :\t%s:%u%s%s%s\n", base ? base + 1 : at->file,
					at->line, chain->nr > 1 && at->func ? " (inlined " : "",
					chain->nr > 1 && at->func ? at->func : "",
					chain->nr > 1 && at->func ? ")" : "");
				if (text)
					fprintf(p->out, "         :\t    %.*s\n", tlen, text);
				last_file = at->file;
				last_line = at->line;
			}
		}
		if (c && env.show_nr)
			fprintf(p->out, "%s%8llu%s :\t", col, (unsigned long long)c,
				p->colour ? "\033[0m" : "");
		else if (c)
			fprintf(p->out, "%s%8.2f%s :\t", col, pct, p->colour ? "\033[0m" : "");
		else
			fprintf(p->out, env.show_nr ? "       0 :\t" : "    0.00 :\t");
		fprintf(p->out, "%s%8llx:   %s%-7s %s%s%s\n", col, (unsigned long long)insn[i].address,
			env.asm_raw ? raw_bytes(&insn[i], raw, sizeof(raw)) : "",
			insn[i].mnemonic, insn[i].op_str,
			call_target(p, fn, es, &insn[i], start, start + len, target, sizeof(target)),
			p->colour && *col ? "\033[0m" : "");
	}
	fputc('\n', p->out);
cleanup:
	if (insn)
		cs_rt.free(insn, n);
	if (cs)
		cs_rt.close(&cs);
	free(code);
	return err;
}

/* Where a demangled C++ name's parameter list begins ("by_hash(std::string const&) const" ->
 * 7, "S::operator()(int)" -> 13): the '(' that the last ')' closes; strlen(name) without one. */
static size_t params_at(const char *name)
{
	const char *close = strrchr(name, ')');
	int depth = 0;

	for (const char *c = close; c && c > name; c--) {
		depth += *c == ')' ? 1 : *c == '(' ? -1 : 0;
		if (!depth)
			return c - name;
	}
	return strlen(name);
}

/* Whether SYMBOL names the function: its name as it is (where a C++ name's "[abi:cxx11]" or
 * "operator[]" would be a bracket expression to fnmatch), as a glob, or either without the
 * parameter list of a demangled C++ name ("by_hash" for "by_hash(std::string const&)"), as
 * perf annotate names it. */
static bool name_matches(const char *symbol, const char *name)
{
	size_t n = params_at(name);
	char base[1024];

	if (!strcmp(symbol, name) || !fnmatch(symbol, name, 0))
		return true;
	if (!name[n] || n >= sizeof(base))
		return false;
	memcpy(base, name, n);
	base[n] = '\0';
	return !strcmp(symbol, base) || !fnmatch(symbol, base, 0);
}

/* The samples with a function named glob on their stack; with leaf false, not at its leaf:
 * time spent in what the function calls, which an annotation of its own code cannot show. */
static __u64 samples_named(const struct stack_sample *s, size_t n, const char *glob, bool leaf)
{
	__u64 v = 0;

	for (size_t i = 0; i < n; i++)
		for (__u32 k = 0; k + !leaf < s[i].nr_frames; k++) {
			const struct frame *f = stack_sample_frame(&s[i], k);

			if (f->name && name_matches(glob, f->name)) {
				v += s[i].value;
				break;
			}
		}
	return v;
}

static bool kernel_leaf_named(const struct stack_sample *s, size_t n, const char *glob)
{
	for (size_t i = 0; i < n; i++) {
		const struct frame *f = s[i].nr_frames ?
					stack_sample_frame(&s[i], s[i].nr_frames - 1) : NULL;

		if (f && f->kernel && f->name && name_matches(glob, f->name))
			return true;
	}
	return false;
}

/* Whether fn is annotated: named by symbol when given, else at or above percent_limit of the
 * samples. */
static bool chosen(const struct annotation *a, const struct ann_fn *fn, const char *symbol,
		   double percent_limit)
{
	return symbol ? name_matches(symbol, fn->name) : 100.0 * fn->total >= percent_limit * a->total;
}

/* Where the symbol that holds a function's address off (a file offset; a kernel function's:
 * the address) begins, the same way; ~0 where no symbol holds it. */
static __u64 symbol_start(struct printer *p, const struct ann_fn *fn, __u64 off)
{
	const struct elf_syms *es;
	const struct ksym *k;
	__u64 vaddr, sym_off, size;

	if (fn->kernel) {
		p->ksyms = p->ksyms ?: ksyms__load();
		k = p->ksyms ? ksyms__find(p->ksyms, off) : NULL;
		return k ? k->addr : ~0ULL;
	}
	es = module_syms(p, fn->module);
	if (!elf_syms__file_offset_to_vaddr(es, off, &vaddr) ||
	    !elf_syms__find_span(es, vaddr, &sym_off, &size))
		return ~0ULL;
	return off - sym_off;
}

/* a->fns[i] split by its symbols: functions of one name in one file (a static one in each of
 * two source files, of which the kernel has hundreds) are one name to the samples' frames,
 * and each is annotated on its own, with its own samples.  The addresses of the others go to
 * a function appended to a->fns, which is split in turn.  0 or -ENOMEM. */
static int split_by_symbol(struct printer *p, struct annotation *a, size_t i)
{
	struct ann_fn *fn = &a->fns[i];
	struct ann_fn rest = { .name = fn->name, .module = fn->module, .build_id = fn->build_id,
			       .kernel = fn->kernel };
	__u64 first = symbol_start(p, fn, fn->addrs[0].offset);
	size_t keep = 0;

	for (size_t k = 0; k < fn->nr; k++) {
		if (symbol_start(p, fn, fn->addrs[k].offset) == first) {
			fn->addrs[keep++] = fn->addrs[k];
			continue;
		}
		if (ARRAY_GROW(rest.addrs, rest.cap, rest.nr + 1))
			goto nomem;
		rest.addrs[rest.nr++] = fn->addrs[k];
		rest.total += fn->addrs[k].count;
	}
	fn->nr = keep;
	fn->total -= rest.total;
	if (!rest.nr)
		return 0;
	if (ARRAY_GROW(a->fns, a->cap, a->nr + 1))
		goto nomem;
	a->fns[a->nr++] = rest;
	return 0;
nomem:
	free(rest.addrs);
	return -ENOMEM;
}

/* Annotates the chosen functions of the samples of event ev (of every sample when ev < 0),
 * adding its samples to sum's counts, the functions written to *shown and the error of one
 * that could not be (printed) to *fn_err.  0 or -ENOMEM. */
static int annotate_event(struct printer *p, const struct stack_sample *s, size_t n, int ev,
			  const char *symbol, double percent_limit, struct annotation *sum,
			  size_t *shown, int *fn_err)
{
	struct annotation a = { .live = sum->live };
	int err = 0;

	a.keys = stack_names__new();
	if (!a.keys)
		return -ENOMEM;
	for (size_t i = 0; !err && i < n; i++)
		if (ev < 0 || s[i].event == (__u32)ev)
			err = add_leaf(&a, &s[i]);
	for (size_t i = 0; !err && i < a.nr; i++)
		if (chosen(&a, &a.fns[i], symbol, percent_limit))
			err = split_by_symbol(p, &a, i);
	if (!err && a.nr)
		qsort(a.fns, a.nr, sizeof(*a.fns), cmp_fn);
	p->run_total = a.total;
	for (size_t i = 0; !err && i < a.nr; i++) {
		int e;

		if (!chosen(&a, &a.fns[i], symbol, percent_limit))
			continue;
		e = annotate_fn(p, &a.fns[i]);
		if (e)
			*fn_err = e;
		else
			(*shown)++;
	}
	sum->total += a.total;
	sum->kernel += a.kernel;
	sum->unresolved += a.unresolved;
	for (size_t i = 0; i < a.nr; i++)
		free(a.fns[i].addrs);
	free(a.fns);
	stack_names__free(a.keys);
	return err;
}

/* Writes the annotation of the samples' hot functions: those named symbol (a glob) when given,
 * else those at or above percent_limit of all samples.  With more than one event, each event's
 * apart, as perf annotates each event's (events[i] names the samples of stack_sample.event i);
 * else the samples are of label.  0 or -errno (printed). */
static int annotate_write(FILE *out, const struct stack_sample *s, size_t n, const char *label,
			  const char *const *events, int nr_events, const char *symbol,
			  double percent_limit, bool live)
{
	struct annotation a = { .live = live };
	struct printer p = { .out = out };
	size_t shown = 0;
	int err = 0, fn_err = 0;

	p.lines = srclines__new();
	if (!p.lines)
		err = -ENOMEM;
	p.colour = !env.stdio && isatty(fileno(out));
	for (int ev = nr_events > 1 ? 0 : -1; !err && ev < (nr_events > 1 ? nr_events : 0); ev++) {
		p.event = ev < 0 ? label : events[ev];
		err = annotate_event(&p, s, n, ev, symbol, percent_limit, &a, &shown, &fn_err);
	}
	if (err)
		goto cleanup;
	if (!shown && fn_err) {
		err = fn_err; /* each function that could not be shown said why */
	} else if (!shown) {
		__u64 below = symbol ? samples_named(s, n, symbol, false) : 0;

		if (!live && a.unresolved && a.unresolved + a.kernel == a.total)
			p_err("no sample is at an address in a file: folded stacks and pprof profiles "
			      "without mappings have none (bpfprof record and --pprof write them)");
		else if (symbol && !samples_named(s, n, symbol, true))
			p_err("no function named %s in the %llu samples", symbol,
			      (unsigned long long)a.total);
		else if (below && !(a.kernel && !live && kernel_leaf_named(s, n, symbol)))
			p_err("no samples in %s itself: its %llu samples (%.1f%%) are in the functions "
			      "it calls (annotate shows where samples land; 'report' shows the callees)",
			      symbol, (unsigned long long)below, 100.0 * below / (a.total ?: 1));
		else if (symbol)
			p_err("no samples in %s%s", symbol, a.total ? (a.kernel && !live ?
			      " (a file's kernel samples are not annotated)" : "") :
			      " (no samples at all)");
		else
			p_err("no function to annotate: %llu samples, %llu of them in the kernel, "
			      "%llu in code of no file or of no symbol", (unsigned long long)a.total,
			      (unsigned long long)a.kernel, (unsigned long long)a.unresolved);
		err = -ENOENT;
	} else {
		if (a.kernel && !live)
			fprintf(out, "# %llu samples in the kernel are not annotated: its code is read "
				"in a live run only (a file's addresses may be another boot's)\n",
				(unsigned long long)a.kernel);
		if (a.unresolved && !symbol)
			fprintf(out, "# %llu samples (%.1f%%) are not annotated: in code of no file (JIT, "
				"anonymous memory) or of no symbol\n", (unsigned long long)a.unresolved,
				100.0 * a.unresolved / a.total);
	}
	if (!err && (err = stack_output_done(out)))
		runner_report_failed(err); /* the output's name and why, once; not a closed pipe */
cleanup:
	if (err == -ENOMEM)
		p_err("%s", strerror(ENOMEM));
	srclines__free(p.lines);
	src_cache_free(&p.src);
	ksyms__free(p.ksyms);
	for (size_t i = 0; i < p.nr_syms; i++) {
		free(p.syms[i].path);
		elf_syms__free(p.syms[i].es);
	}
	ktext__free(p.ktext);
	free(p.vmlinux);
	return err;
}

/* ---- the live run: profile's ---- */

RUNNER_SKELETON(profile);

static int opt_style(const char *arg)
{
	if (strcmp(arg, "att") && strcmp(arg, "intel")) {
		p_err("invalid --disassembler-style '%s' (att or intel)", arg);
		return -EINVAL;
	}
	env.intel = !strcmp(arg, "intel");
	return 0;
}

/* How instructions are shown, live and from a file: perf annotate's options. */
#define ANNOTATE_DISPLAY_OPTS                                                                   \
	{ 'n', "show-nr-samples", NULL, "the samples on each instruction, not their percent",     \
	  OPT_FLAG, &env.show_nr },                                                                \
	{ 'M', "disassembler-style", "STYLE", "att (the default, as objdump prints x86) or intel", \
	  OPT_FN, .fn = opt_style },                                                               \
	{ 0, "asm-raw", NULL, "each instruction's bytes too", OPT_FLAG, &env.asm_raw },           \
	{ 0, "no-source", NULL, "no source lines between the instructions", OPT_FLAG,            \
	  &env.no_source }

static const struct opt annotate_opts[] = {
	{ 's', "symbol", "SYM", "only this function (a glob), as SYMBOL; default every\n"
	  "function at or above --percent-limit", OPT_STR, &env.symbol },
	{ 0, "stdio", NULL, "plain text, no colours (the default when stdout is not a\n"
	  "terminal)", OPT_FLAG, &env.stdio },
	{ 'i', "input", "FILE", "annotate a pprof file made with addresses (bpfprof's\n"
	  "--pprof) instead of running: bpfprof annotate -i FILE [SYMBOL]", OPT_STR, &env.input },
	ANNOTATE_DISPLAY_OPTS,
	{},
};

static int annotate_check(struct runner *r)
{
	/* the report's options that the stack group brings along mean nothing here */
	if (stack_opts.no_children || stack_opts.sort) {
		p_err("--no-children and --sort are the report's: annotate shows instructions");
		return -EINVAL;
	}
	if (run_opts.symbol && env.symbol) {
		p_err("the function is given twice ('%s' and -s %s)", run_opts.symbol, env.symbol);
		return -EINVAL;
	}
	if (run_opts.symbol)
		env.symbol = run_opts.symbol;
	/* the leaf's address kept by the aggregation; inlined frames are not needed (the leaf's
	 * function is the compiled one), lines are looked up per instruction */
	stack_opts.leaf_addrs = true;
	stack_opts.no_inline = true;
	stack_opts.srcline = false;
	return profile_check(r);
}

static int annotate_run_write(struct runner *r)
{
	struct profile_state st;

	profile_state(r, &st);
	if (stack_run_samples(st.sr))
		return -ENOMEM;
	return annotate_write(r->out, st.sr->samples, st.sr->nr_samples, st.event, st.events,
			      st.nr_events, env.symbol, stack_opts.percent_limit, true);
}

static void annotate_teardown(struct runner *r)
{
	profile_teardown(r);
	memset(&env, 0, sizeof(env));
}

const struct command annotate_cmd = {
	.name = "annotate",
	.summary = "per-instruction samples of the hot functions, source lines interleaved",
	.description =
		"Sample on-CPU as profile does, then show each hot function's disassembly with the\n"
		"share of its samples on each instruction and the source lines they come from (from\n"
		"DWARF, where the file or its debug file has it), as perf annotate --stdio.  With -i\n"
		"FILE, a pprof profile made with addresses is annotated instead of a run.",
	.notes =
		PROFILE_EVENT_NOTES
		"\n"
		"SYMBOL (or -s SYM, a glob): that function only (a C++ one also by its name without\n"
		"its parameter list, as perf shows it: `annotate by_hash`); without it, those at\n"
		"or above --percent-limit of the samples (default all), hottest first.  A last word\n"
		"that begins with a digit is the DURATION: `annotate spin 5`, `annotate -p PID\n"
		"spin`, `annotate spin -- ./prog`.  On a terminal, instructions at 5% or more are\n"
		"red, at 0.5% green, the hottest bold.  Kernel functions are disassembled from the\n"
		"running kernel's code (/proc/kcore, else read by a BPF program), with their source\n"
		"lines where a vmlinux with debug info is found (/usr/lib/debug, or debuginfod).\n",
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_STACKS | CAP_EVENTS,
	.positional = POS_SYMBOL_DURATION,
	.opts = annotate_opts,
	PROFILE_RUN_HOOKS,
	.check = annotate_check,
	.write = annotate_run_write,
	.teardown = annotate_teardown,
};

/* ---- from a file: bpfprof annotate -i FILE [SYMBOL] ---- */

static const struct opt annotate_file_opts[] = {
	{ 'i', "input", "FILE", "the pprof file (bpfprof's --pprof: addresses in their files)",
	  OPT_STR, &env.input },
	{ 's', "symbol", "SYM", "only this function (a glob), as SYMBOL", OPT_STR, &env.symbol },
	{ 0, "stdio", NULL, "plain text, no colours", OPT_FLAG, &env.stdio },
	{ 0, "percent-limit", "P", "only functions with at least P percent of the samples",
	  OPT_PERCENT, &env.percent_limit },
	ANNOTATE_DISPLAY_OPTS,
	{},
};

static int annotate_file_run(FILE *out, char **args, int nr)
{
	struct profile_in *in = NULL;
	const struct stack_sample *s;
	size_t n;
	int err;

	if (!env.input) {
		p_err("annotate from a file needs -i FILE");
		return -EINVAL;
	}
	if (nr && env.symbol) {
		p_err("the function is given twice ('%s' and -s %s)", args[0], env.symbol);
		return -EINVAL;
	}
	in = profile_in__new();
	if (in)
		stack_agg__keep_leaf_addrs(in->agg); /* the addresses are what is annotated */
	err = in ? profile_in__read(in, env.input) : -ENOMEM;
	if (err)
		goto cleanup;
	s = profile_in__samples(in, &n);
	err = annotate_write(out, s, n, in->event_names[0] ?: in->value_type,
			     (const char *const *)in->event_names, in->nr_events,
			     nr ? args[0] : env.symbol, env.percent_limit, false);
cleanup:
	profile_in__free(in);
	return err;
}

static void annotate_file_reset(void)
{
	memset(&env, 0, sizeof(env));
}

const struct file_command annotate_file_cmd = {
	.name = "annotate",
	.summary = "annotate a pprof file's hot functions",
	.args = "[SYMBOL]",
	.description =
		"Per hot function of a pprof profile made with addresses (bpfprof's --pprof), its\n"
		"disassembly with the share of its samples on each instruction, source lines\n"
		"interleaved.  The files the profile names are read where it names them; kernel\n"
		"samples are counted, not annotated (the addresses may be another boot's).",
	.min_files = 0,
	.max_files = 1,
	.opts = annotate_file_opts,
	.run = annotate_file_run,
	.reset = annotate_file_reset,
};
