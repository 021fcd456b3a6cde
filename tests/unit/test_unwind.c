// SPDX-License-Identifier: GPL-2.0
/* Unwind tables: rows built from fixture objects with known CFI (compiled here), lookup edge
 * cases, .debug_frame and separate debug files, corrupt and stripped input, process mappings,
 * memory-bounded eviction, and a walk of this test's own stack through libc (built without frame
 * pointers) with the rules the BPF unwinder applies. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <gelf.h>
#include "stacks.h"
#include "unwind/cfi.h"
#include "sym/syms.h"
#include "test.h"
#include "unwind/unwinder.h"

static char dir[] = "/tmp/test_unwind.XXXXXX";
static bool have_cc;

/* The fixture: functions whose CFI is known instruction by instruction. */
static const char fixture_s[] =
	"	.text\n"
	"	.globl f_push\n"
	"	.type f_push,@function\n"
	"f_push:\n"                       /* frame-pointer prologue */
	"	.cfi_startproc\n"
	"	push %rbp\n"                  /* +0, 1 byte */
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"             /* +1, 3 bytes */
	"	.cfi_def_cfa_register %rbp\n"
	"	sub $32, %rsp\n"              /* +4, 4 bytes */
	"	call ext_func@PLT\n"          /* +8, 5 bytes */
	"	leave\n"                      /* +13 */
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"                        /* +14 */
	"	.cfi_endproc\n"
	"	.size f_push, .-f_push\n"
	"	.p2align 6\n"
	"	.globl f_nofp\n"
	"	.type f_nofp,@function\n"
	"f_nofp:\n"                       /* no frame pointer, a 4 KB frame */
	"	.cfi_startproc\n"
	"	push %rbx\n"                  /* +0 */
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbx, -16\n"
	"	sub $0x1000, %rsp\n"          /* +1, 7 bytes */
	"	.cfi_def_cfa_offset 4112\n"
	"	nop\n"                        /* +8 */
	"	add $0x1000, %rsp\n"          /* +9 */
	"	.cfi_def_cfa_offset 16\n"
	"	pop %rbx\n"                   /* +16 */
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"                        /* +17 */
	"	.cfi_endproc\n"
	"	.size f_nofp, .-f_nofp\n"
	"	.p2align 6\n"
	"	.globl f_nocfi\n"
	"	.type f_nocfi,@function\n"
	"f_nocfi:\n"                      /* hand-written code without CFI */
	"	.fill 40, 1, 0x90\n"
	"	ret\n"
	"	.size f_nocfi, .-f_nocfi\n"
	"	.p2align 6\n"
	"	.globl f_expr\n"
	"	.type f_expr,@function\n"
	"f_expr:\n"                       /* CFA = *(rbx): no BPF rule for that */
	"	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 0x03, 0x73, 0x00, 0x06\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size f_expr, .-f_expr\n"
	"	.p2align 6\n"
	"	.globl f_drap\n"
	"	.type f_drap,@function\n"
	"f_drap:\n"                       /* GCC's realignment: CFA = *(rbp - 8) */
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06\n"
	"	nop\n"                        /* +4 */
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size f_drap, .-f_drap\n"
	"	.p2align 6\n"
	"	.globl f_end\n"
	"	.type f_end,@function\n"
	"f_end:\n"                        /* the outermost frame: return address undefined */
	"	.cfi_startproc\n"
	"	.cfi_undefined rip\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size f_end, .-f_end\n";

static char *path_in_dir(const char *name)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Writes the fixture source with an optional first directive and links it into a shared object
 * (a call through the PLT makes the linker add its PLT CFI). */
static int build_fixture(const char *name, const char *directive)
{
	char *src = path_in_dir("fx.s");
	FILE *f = fopen(src, "w");

	if (!f)
		return -errno;
	fprintf(f, "%s\n%s", directive ? directive : "", fixture_s);
	fclose(f);
	return sh("cc -shared -nostdlib -Wl,--build-id -o %s %s 2>&1", path_in_dir(name), src) ? -EIO : 0;
}

/* Assembles text (written to src) into the shared object so; ldflags are added to the link. */
static int build_so(const char *so, const char *src, const char *text, const char *ldflags)
{
	FILE *f = fopen(src, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	fclose(f);
	return sh("cc -shared -nostdlib %s -o %s %s >/dev/null 2>&1", ldflags, so, src) ? -EIO : 0;
}

struct sym_off {
	const char *name;
	__u64 off;
};

static int find_sym(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	struct sym_off *s = ctx;

	s->off = file_off;
	return 1;
}

/* File offset of a function of the fixture. */
static __u64 sym(const char *file, const char *name)
{
	struct elf_syms *es = elf_syms__open(file);
	struct sym_off s = { name, UINT64_MAX };

	if (es)
		elf_syms__for_each_match(es, name, find_sym, &s);
	elf_syms__free(es);
	return s.off;
}

static const char *rule_at(const struct cfi_rows *r, __u64 off)
{
	static char buf[8][64];
	static int i;
	const struct unw_row *row = cfi_find(r->rows, r->nr, off);

	i = (i + 1) % 8;
	if (!row)
		return "before";
	return cfi_row_str(row, buf[i], sizeof(buf[i]));
}

static void test_rows_from_fixture(void)
{
	struct cfi_rows r;
	char why[256];
	const char *so;
	__u64 push, nofp, nocfi, expr, drap, end;

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	CHECK_INT(build_fixture("fx.so", NULL), 0);
	so = path_in_dir("fx.so");
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_STR(r.source, ".eh_frame");
	CHECK_INT(r.fdes, 6); /* five functions with CFI and the PLT */
	CHECK_INT(r.unsupported, 1);
	push = sym(so, "f_push");
	nofp = sym(so, "f_nofp");
	nocfi = sym(so, "f_nocfi");
	expr = sym(so, "f_expr");
	drap = sym(so, "f_drap");
	end = sym(so, "f_end");
	CHECK(push != UINT64_MAX && end != UINT64_MAX);

	/* frame-pointer function: entry, after push, after mov, mid-body, after leave, last byte */
	CHECK_STR(rule_at(&r, push), "cfa=sp+8 fp=same");
	CHECK_STR(rule_at(&r, push + 1), "cfa=sp+16 fp=cfa-16");
	CHECK_STR(rule_at(&r, push + 3), "cfa=sp+16 fp=cfa-16");
	CHECK_STR(rule_at(&r, push + 4), "cfa=fp+16 fp=cfa-16");
	CHECK_STR(rule_at(&r, push + 12), "cfa=fp+16 fp=cfa-16");
	CHECK_STR(rule_at(&r, push + 14), "cfa=sp+8 fp=cfa-16");
	/* no frame pointer: the 4 KB frame is an SP offset, RBP untouched */
	CHECK_STR(rule_at(&r, nofp), "cfa=sp+8 fp=same");
	CHECK_STR(rule_at(&r, nofp + 1), "cfa=sp+16 fp=same");
	CHECK_STR(rule_at(&r, nofp + 8), "cfa=sp+4112 fp=same");
	CHECK_STR(rule_at(&r, nofp + 16), "cfa=sp+16 fp=same");
	CHECK_STR(rule_at(&r, nofp + 17), "cfa=sp+8 fp=same");
	/* code between FDEs has no rule; a few bytes of padding after a function stay covered */
	CHECK_STR(rule_at(&r, nocfi), "none");
	CHECK_STR(rule_at(&r, nocfi + 40), "none");
	CHECK_STR(rule_at(&r, nofp + 18), "none");
	/* expressions: unsupported, except the DRAP form */
	CHECK_STR(rule_at(&r, expr), "unsupported");
	CHECK_STR(rule_at(&r, drap + 4), "cfa=*(fp-8) fp=cfa-16");
	CHECK_STR(rule_at(&r, end), "end");
	/* after the last FDE, and before the first one */
	CHECK_STR(rule_at(&r, end + 2), "none");
	CHECK_STR(rule_at(&r, end + 0x10000), "none");
	CHECK_STR(rule_at(&r, 0), "before");
	/* rows are sorted and strictly increasing, and identical neighbours are merged */
	for (size_t i = 1; i < r.nr; i++) {
		CHECK(r.rows[i - 1].pc < r.rows[i].pc);
		CHECK(r.rows[i - 1].type != r.rows[i].type || r.rows[i - 1].cfa_off != r.rows[i].cfa_off ||
		      r.rows[i - 1].fp_off != r.rows[i].fp_off);
	}
	cfi_rows_free(&r);
}

/* FDEs out of address order (g_hot's code goes first, its FDE second: the linker puts .text.hot
 * before .text) and overlapping (a hand-written FDE, first in the section, covers g_over's first
 * 8 bytes with a CFA of sp+64, where g_over's own FDE, after it, says sp+8 then sp+16). */
static const char order_s[] =
	"	.section .eh_frame,\"a\",@unwind\n"
	"cie:	.long cie_end - cie_id\n"
	"cie_id:	.long 0\n"
	"	.byte 1\n"
	"	.string \"zR\"\n"
	"	.uleb128 1\n"
	"	.sleb128 -8\n"
	"	.uleb128 16\n"
	"	.uleb128 1\n"
	"	.byte 0x1b\n"                   /* FDE addresses: pc-relative, signed 4 bytes */
	"	.byte 0x0c, 7, 8\n"             /* DW_CFA_def_cfa rsp 8 */
	"	.byte 0x90, 1\n"                /* DW_CFA_offset RA, cfa-8 */
	"	.balign 8, 0\n"
	"cie_end:\n"
	"	.long fde_end - fde_cie\n"
	"fde_cie:	.long fde_cie - cie\n"
	"	.long over_start - .\n"
	"	.long 8\n"
	"	.uleb128 0\n"
	"	.byte 0x0e, 64\n"               /* DW_CFA_def_cfa_offset 64 */
	"	.balign 8, 0\n"
	"fde_end:\n"
	"	.text\n"
	"	.globl g_over\n"
	"g_over:\n"
	"over_start:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbx, -16\n"
	"	nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop\n"
	"	pop %rbx\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.section .text.hot,\"ax\",@progbits\n"
	"	.globl g_hot\n"
	"g_hot:\n"
	"	.cfi_startproc\n"
	"	sub $24, %rsp\n"
	"	.cfi_def_cfa_offset 32\n"
	"	add $24, %rsp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n";

static void test_fde_order_and_overlap(void)
{
	const char *so = path_in_dir("order.so"), *src = path_in_dir("order.s");
	struct cfi_rows r;
	char why[256];
	__u64 hot, over;

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	/* ld refuses an .eh_frame_hdr over overlapping FDEs: without one, libdw reads them in order */
	CHECK_INT(build_so(so, src, order_s, "-Wl,--no-eh-frame-hdr"), 0);
	hot = sym(so, "g_hot");
	over = sym(so, "g_over");
	CHECK(hot != UINT64_MAX && over != UINT64_MAX && hot < over);
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_INT(r.fdes, 3);
	CHECK_STR(rule_at(&r, hot), "cfa=sp+8 fp=same");
	CHECK_STR(rule_at(&r, hot + 4), "cfa=sp+32 fp=same");
	CHECK_STR(rule_at(&r, hot + 8), "cfa=sp+8 fp=same");
	/* where they overlap, the FDE first in the section wins; libdw keeps no two overlapping
	 * FDEs in its search tree, so past the first one's end g_over's own cannot be run: covered
	 * as unsupported (the walk stops there), not guessed */
	CHECK_STR(rule_at(&r, over), "cfa=sp+64 fp=same");
	CHECK_STR(rule_at(&r, over + 7), "cfa=sp+64 fp=same");
	CHECK_STR(rule_at(&r, over + 8), "unsupported");
	CHECK_STR(rule_at(&r, over + 14), "unsupported");
	CHECK_STR(rule_at(&r, over + 15), "none");
	CHECK_INT(r.unsupported, 1);
	for (size_t i = 1; i < r.nr; i++)
		CHECK(r.rows[i - 1].pc < r.rows[i].pc);
	cfi_rows_free(&r);
}

/* File offset of a section, UINT64_MAX when the file has none. */
static __u64 section_offset(const char *file, const char *section)
{
	__u64 off = UINT64_MAX;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr shdr;
	Elf *elf;
	int fd;

	fd = open(file, O_RDONLY);
	if (fd < 0)
		return off;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &shdr))
				continue;
			name = elf_strptr(elf, shstrndx, shdr.sh_name);
			if (name && !strcmp(name, section))
				off = shdr.sh_offset;
		}
	}
	elf_end(elf);
	close(fd);
	return off;
}

static void test_plt(void)
{
	struct cfi_rows r;
	char why[256];
	const char *so = path_in_dir("fx.so");
	__u64 plt;
	const struct unw_row *row;

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	plt = section_offset(so, ".plt");
	CHECK(plt != UINT64_MAX);
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	/* PLT0 pushes once, then jumps; the entries push the relocation index at entry + 6 */
	CHECK_STR(rule_at(&r, plt), "cfa=sp+16 fp=same");
	CHECK_STR(rule_at(&r, plt + 6), "cfa=sp+24 fp=same");
	CHECK_STR(rule_at(&r, plt + 16), "cfa=plt11 fp=same");
	CHECK_STR(rule_at(&r, plt + 31), "cfa=plt11 fp=same");
	row = cfi_find(r.rows, r.nr, plt + 16);
	CHECK(row && UNW_ROW_CFA(row->type) == UNW_CFA_PLT && row->cfa_off == 11);
	cfi_rows_free(&r);
}

static void test_debug_frame(void)
{
	struct cfi_rows r;
	char why[256];
	const char *so, *dbg;
	__u64 push;

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	/* CFI only in .debug_frame, as with -fno-asynchronous-unwind-tables -g */
	CHECK_INT(build_fixture("df.so", "	.cfi_sections .debug_frame"), 0);
	so = path_in_dir("df.so");
	push = sym(so, "f_push");
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_STR(r.source, ".debug_frame");
	CHECK_STR(rule_at(&r, push + 4), "cfa=fp+16 fp=cfa-16");
	cfi_rows_free(&r);

	/* the same CFI moved to a separate debug file, found through .gnu_debuglink */
	dbg = path_in_dir("df.debug");
	CHECK_INT(sh("(objcopy --only-keep-debug %s %s && objcopy --strip-debug %s && "
		     "objcopy --add-gnu-debuglink=%s %s) 2>/dev/null", so, dbg, so, dbg, so), 0);
	CHECK_INT(section_offset(so, ".debug_frame"), UINT64_MAX);
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_STR(r.source, "debug file .debug_frame");
	CHECK_STR(rule_at(&r, push + 4), "cfa=fp+16 fp=cfa-16");
	cfi_rows_free(&r);
}

static void test_bad_input(void)
{
	struct cfi_rows r;
	char why[256];
	const char *so, *bad = path_in_dir("corrupt.so"), *bare = path_in_dir("bare.so");
	__u64 eh;
	int fd;

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	so = path_in_dir("fx.so");
	/* .eh_frame removed (objcopy can; strip keeps it): no CFI, said so */
	CHECK_INT(sh("objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr %s %s "
		     "2>/dev/null", so, bare), 0);
	CHECK_INT(cfi_build_file(bare, -1, NULL, &r, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "no .eh_frame") != NULL);
	CHECK(r.rows == NULL && r.nr == 0);

	/* a CIE length that runs past the section: rejected as a whole, with the reason */
	CHECK_INT(sh("cp %s %s", so, bad), 0);
	eh = section_offset(bad, ".eh_frame");
	fd = open(bad, O_WRONLY);
	CHECK(fd >= 0 && eh != UINT64_MAX);
	CHECK_INT(pwrite(fd, "\xf0\xff\xff\x7f", 4, eh), 4);
	close(fd);
	CHECK(cfi_build_file(bad, -1, NULL, &r, why, sizeof(why)) < 0);
	CHECK(strstr(why, "corrupt .eh_frame") != NULL);
	CHECK(r.rows == NULL);

	/* not an ELF file at all, and a missing one */
	CHECK_INT(cfi_build_file("/proc/self/status", -1, NULL, &r, why, sizeof(why)), -EINVAL);
	CHECK(cfi_build_file(path_in_dir("missing.so"), -1, NULL, &r, why, sizeof(why)) == -ENOENT);
	CHECK(strstr(why, "cannot open") != NULL);
}

/* CFI written to exhaust its reader: libdw sizes its register array by the highest register
 * number (2 GB for this one, cleared) and copies it at each remembered state.  Such FDEs are
 * unsupported; the others in the file still unwind, and memory stays flat. */
static void test_hostile_cfi(void)
{
	static const char src[] =
		"	.text\n"
		"	.globl f_ok, f_bigreg, f_deep\n"
		"	.type f_ok,@function\n"
		"	.type f_bigreg,@function\n"
		"	.type f_deep,@function\n"
		"f_ok:\n"
		"	.cfi_startproc\n"
		"	push %rbp\n"
		"	.cfi_def_cfa_offset 16\n"
		"	.cfi_offset %rbp, -16\n"
		"	pop %rbp\n"
		"	.cfi_def_cfa_offset 8\n"
		"	ret\n"
		"	.cfi_endproc\n"
		"f_bigreg:\n"
		"	.cfi_startproc\n"
		"	push %rbp\n"
		"	.cfi_def_cfa_offset 16\n"
		"	.cfi_offset 89478485, -16\n"
		"	pop %rbp\n"
		"	.cfi_def_cfa_offset 8\n"
		"	ret\n"
		"	.cfi_endproc\n"
		"f_deep:\n"
		"	.cfi_startproc\n"
		"	.rept 100\n"
		"	.cfi_remember_state\n"
		"	.endr\n"
		"	ret\n"
		"	.cfi_endproc\n";
	const char *asm_path = path_in_dir("hostile.s"), *so = path_in_dir("hostile.so");
	struct rusage before, after;
	struct cfi_rows r;
	char why[256];

	if (!have_cc)
		SKIP("no C compiler to build the fixture");
	CHECK_INT(build_so(so, asm_path, src, ""), 0);
	getrusage(RUSAGE_SELF, &before);
	CHECK_INT(cfi_build_file(so, -1, NULL, &r, why, sizeof(why)), 0);
	getrusage(RUSAGE_SELF, &after);
	CHECK(after.ru_maxrss - before.ru_maxrss < 64 * 1024); /* KB */
	CHECK_INT(r.fdes, 3);
	CHECK_INT(r.unsupported, 2);
	CHECK_STR(rule_at(&r, sym(so, "f_ok") + 1), "cfa=sp+16 fp=cfa-16");
	CHECK_STR(rule_at(&r, sym(so, "f_bigreg") + 1), "unsupported");
	CHECK_STR(rule_at(&r, sym(so, "f_deep")), "unsupported");
	cfi_rows_free(&r);
}

/* ---- the test process itself ---- */

static int file_key(const char *path, __u64 *dev, __u64 *ino)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* libc's own qsort: a sanitizer build (make asan) interposes a qsort of its own in the
 * executable, so &qsort would be this test's file, not libc. */
static void *libc_qsort(void)
{
	return dlsym(RTLD_NEXT, "qsort");
}

/* Path of the mapped file containing addr, from /proc/self/maps. */
static int mapped_path(const void *addr, char *out, size_t size)
{
	unsigned long long lo, hi;
	char line[4096], path[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = -ENOENT;

	while (f && fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %4095s", &lo, &hi, path) < 2)
			continue;
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi && path[0] == '/') {
			snprintf(out, size, "%s", path);
			found = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void test_process_mappings(void)
{
	struct syms_cache *sc = syms_cache__new();
	struct unwinder *u = unwinder__new_mem(sc, 1 << 20);
	const struct unw_proc *p;
	const struct unw_mapping *m = NULL;
	char libc[4096];
	__u64 dev = 0, ino = 0, addr = (uintptr_t)libc_qsort();
	int id;

	CHECK(sc && u);
	CHECK_INT(syms_cache__snapshot(sc, getpid()), 0);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	p = unwinder__proc(u, getpid());
	CHECK(p && p->nr >= 3);
	for (__u32 i = 0; p && i < p->nr; i++) {
		if (i)
			CHECK(p->maps[i - 1].end <= p->maps[i].start);
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			m = &p->maps[i];
	}
	/* qsort's mapping is libc's, its table is libc's, and the bias gives qsort's file offset */
	CHECK_INT(mapped_path(libc_qsort(), libc, sizeof(libc)), 0);
	CHECK_INT(file_key(libc, &dev, &ino), 0);
	id = unwinder__table_of(u, dev, ino);
	CHECK(id >= 0);
	CHECK(m != NULL);
	if (m) {
		CHECK_INT(m->table, id);
		CHECK_INT(addr - m->bias, sym(libc, "qsort"));
	}
	/* tables load on request only */
	CHECK(id >= 0 && unwinder__table(u, id)->loc == 0);
	unwinder__free(u);
	syms_cache__free(sc);
}

static __u64 mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the BPF side's clock (last_used, announcements) */
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A refresh the BPF side asks for (a pc outside every mapping: most often a garbage return
 * address) writes the list again only when it changed; an announcement too, but only where the
 * list was written after the announcing sample (an exec before it dropped the BPF side's);
 * and none made stale by an exec told since. */
static void test_process_rewrites(void)
{
	struct syms_cache *sc = syms_cache__new();
	struct unwinder *u = unwinder__new_mem(sc, 1 << 20);
	struct unw_event ev = { .type = UNW_EV_REFRESH_PROC, .tgid = getpid() };
	struct proc_seen_event seen = { .tgid = getpid() };
	struct unwind_usage us;

	CHECK(sc && u);
	CHECK_INT(syms_cache__snapshot(sc, getpid()), 0);
	seen.time = mono_now();
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	unwinder__handle_event(u, &ev, sizeof(ev));
	unwinder__handle_event(u, &ev, sizeof(ev));
	unwinder__usage(u, &us);
	CHECK_INT(us.procs_written, 1);
	CHECK_INT(us.refreshes_same, 2);
	/* announced by a sample before the write: the list held is the one written */
	unwinder__proc_event(u, &seen, sizeof(seen));
	unwinder__usage(u, &us);
	CHECK_INT(us.procs_written, 1);
	CHECK_INT(us.refreshes_same, 3);
	/* announced after it: an exec may have dropped it since */
	seen.time = mono_now();
	unwinder__proc_event(u, &seen, sizeof(seen));
	unwinder__usage(u, &us);
	CHECK_INT(us.procs_written, 2);
	/* a process that mmap records say exec'd after the announcement's sample */
	syms_cache__records_on(sc, true);
	CHECK_INT(syms_cache__record_exec(sc, 0x7ffffff5, 100), 0);
	seen.tgid = 0x7ffffff5;
	seen.time = 99;
	unwinder__proc_event(u, &seen, sizeof(seen));
	unwinder__usage(u, &us);
	CHECK_INT(us.procs_written, 2);
	CHECK_INT(us.announcements_stale, 1);
	unwinder__free(u);
	syms_cache__free(sc);
}

static void on_usr2(int sig)
{
	(void)sig;
}

/* libc's signal restorer (__restore_rt, which the kernel makes every handler return into) is a
 * signal frame, and so is the byte before it: its FDE starts there so that the handler's return
 * address, looked up less one, finds it. */
static void test_signal_frame(void)
{
	struct sigaction sa = { .sa_handler = on_usr2 }, old;
	struct cfi_rows r = {};
	char why[256];
	Dl_info info;
	__u64 off;

	CHECK_INT(sigaction(SIGUSR2, &sa, NULL), 0);
	CHECK_INT(sigaction(SIGUSR2, NULL, &old), 0);
	/* glibc reports the restorer it installed (SA_RESTORER, required on x86-64) */
	CHECK(old.sa_restorer != NULL);
	CHECK(old.sa_restorer && dladdr((void *)old.sa_restorer, &info) && info.dli_fname);
	if (!old.sa_restorer || !info.dli_fname)
		return;
	off = (uintptr_t)old.sa_restorer - (uintptr_t)info.dli_fbase;
	CHECK_INT(cfi_build_file(info.dli_fname, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_STR(rule_at(&r, off), "signal frame");
	CHECK_STR(rule_at(&r, off - 1), "signal frame");
	cfi_rows_free(&r);
	signal(SIGUSR2, SIG_DFL);
}

/* glibc's vfork pops its return address into RDI before the syscall and keeps it there (its CFI:
 * DW_CFA_register rip, rdi): after the pop, the return address is in RDI, and the CFA is SP. */
static void test_vfork_rdi(void)
{
	struct cfi_rows r = {};
	char why[256];
	Dl_info info;
	void *vf = dlsym(RTLD_DEFAULT, "vfork");
	const unsigned char *code = vf;
	__u64 off;

	if (!vf || !dladdr(vf, &info) || !info.dli_fname || strstr(info.dli_fname, "libc.so") == NULL)
		SKIP("no glibc vfork");
	/* pop %rdi: the first instruction of glibc's x86-64 vfork */
	if (code[0] != 0x5f)
		SKIP("vfork does not begin with pop %rdi");
	off = (uintptr_t)vf - (uintptr_t)info.dli_fbase;
	CHECK_INT(cfi_build_file(info.dli_fname, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK_STR(rule_at(&r, off), "cfa=sp+8 fp=same");
	CHECK_STR(rule_at(&r, off + 1), "cfa=sp+0 ra=rdi fp=same");
	cfi_rows_free(&r);
}

/* The [vdso]: its table is loaded once, under the key the BPF walks give it (UNW_VDSO_KEY), from
 * this kernel's image; a process's [vdso] mapping gets it with the image at the mapping's start;
 * a walk through the kernel's mappings that asks for it by that key (UNW_EV_FILE) is answered
 * with it too; and it is never evicted. */
static void test_vdso(void)
{
	struct syms_cache *sc = syms_cache__new();
	struct unwinder *u = NULL;
	const struct unw_proc *p;
	const struct unw_table *t;
	struct unw_event ev = { .type = UNW_EV_FILE, .tgid = getpid(),
				.file = { .dev = UNW_VDSO_KEY, .ino = UNW_VDSO_KEY } };
	struct cfi_rows r = { 0 };
	char why[256], libc[4096];
	const void *image = syms_vdso_image(&(size_t){ 0 });
	size_t len = 0;
	__u64 dev = 0, ino = 0, vdso = (uintptr_t)image;
	int id, id_libc, found = 0;

	if (!image)
		SKIP("no vdso in this process");
	syms_vdso_image(&len);
	CHECK_INT(cfi_build_mem(image, len, &r, why, sizeof(why)), 0);
	CHECK(r.nr > 0);

	/* preloaded: the rows are the image's */
	u = unwinder__new_mem(sc, 1 << 20);
	CHECK_INT(unwinder__preload_vdso(u), 0);
	id = unwinder__table_of(u, UNW_VDSO_KEY, UNW_VDSO_KEY);
	CHECK(id >= 0);
	t = id >= 0 ? unwinder__table(u, id) : NULL;
	CHECK(t && t->state == UNW_TABLE_LOADED && UNW_LOC_COUNT(t->loc) == r.nr);
	if (t)
		CHECK(!memcmp(unwinder__rows(u) + UNW_LOC_FIRST(t->loc), r.rows,
			      r.nr * sizeof(*r.rows)));
	/* a process's [vdso] mapping: that table, the image at its start */
	CHECK_INT(syms_cache__snapshot(sc, getpid()), 0);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	p = unwinder__proc(u, getpid());
	for (__u32 i = 0; p && i < p->nr; i++) {
		if (vdso < p->maps[i].start || vdso >= p->maps[i].end)
			continue;
		found = 1;
		CHECK_INT(p->maps[i].table, id);
		CHECK(p->maps[i].bias == p->maps[i].start);
	}
	CHECK(found);
	unwinder__free(u);

	/* not preloaded: a walk through the kernel's mappings asks by the vdso's key */
	u = unwinder__new_mem(sc, 1 << 20);
	ev.addr = vdso + 16;
	unwinder__handle_event(u, &ev, sizeof(ev));
	id = unwinder__table_of(u, UNW_VDSO_KEY, UNW_VDSO_KEY);
	CHECK(id >= 0);
	CHECK(id >= 0 && unwinder__table(u, id)->state == UNW_TABLE_LOADED);
	unwinder__free(u);

	/* never evicted: libc's table, which fits only in its rows, waits */
	CHECK_INT(mapped_path(libc_qsort(), libc, sizeof(libc)), 0);
	CHECK_INT(file_key(libc, &dev, &ino), 0);
	u = unwinder__new_mem(sc, 2 * r.nr);
	CHECK_INT(unwinder__preload_vdso(u), 0);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	id = unwinder__table_of(u, UNW_VDSO_KEY, UNW_VDSO_KEY);
	id_libc = unwinder__table_of(u, dev, ino);
	CHECK(id >= 0 && id_libc >= 0);
	if (id >= 0 && id_libc >= 0) {
		unwinder__touch(u, id, 100); /* cold */
		CHECK(unwinder__load_table(u, id_libc) < 0);
		CHECK_INT(unwinder__table(u, id)->state, UNW_TABLE_LOADED);
	}
	unwinder__free(u);
	cfi_rows_free(&r);
	syms_cache__free(sc);
}

/* ---- eviction ---- */

static void test_eviction(void)
{
	struct syms_cache *sc = syms_cache__new();
	struct unwinder *u = NULL;
	struct cfi_rows r;
	struct unwind_usage us;
	char why[256], libc[4096], self[4096];
	__u64 dev = 0, ino = 0, nr_libc, nr_self;
	int id_libc, id_self;
	const struct unw_table *t;

	CHECK_INT(mapped_path(libc_qsort(), libc, sizeof(libc)), 0);
	CHECK_INT(mapped_path((void *)&test_eviction, self, sizeof(self)), 0);
	CHECK_INT(cfi_build_file(libc, -1, NULL, &r, why, sizeof(why)), 0);
	nr_libc = r.nr;
	cfi_rows_free(&r);
	CHECK_INT(cfi_build_file(self, -1, NULL, &r, why, sizeof(why)), 0);
	nr_self = r.nr;
	cfi_rows_free(&r);
	CHECK(nr_libc > nr_self);

	/* room for libc's table and a little more: not for libc and this test's table together */
	u = unwinder__new_mem(sc, nr_libc + nr_self / 2);
	CHECK_INT(syms_cache__snapshot(sc, getpid()), 0);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	CHECK_INT(file_key(libc, &dev, &ino), 0);
	id_libc = unwinder__table_of(u, dev, ino);
	CHECK_INT(file_key(self, &dev, &ino), 0);
	id_self = unwinder__table_of(u, dev, ino);
	CHECK(id_libc >= 0 && id_self >= 0);
	if (id_libc < 0 || id_self < 0)
		goto cleanup;

	CHECK_INT(unwinder__load_table(u, id_libc), 0);
	t = unwinder__table(u, id_libc);
	CHECK_INT(UNW_LOC_COUNT(t->loc), nr_libc);
	CHECK_INT(t->state, UNW_TABLE_LOADED);
	unwinder__touch(u, id_libc, 100);
	/* loading this test's table must evict libc's, the least recently used */
	CHECK_INT(unwinder__load_table(u, id_self), 0);
	CHECK_INT(unwinder__table(u, id_self)->state, UNW_TABLE_LOADED);
	CHECK_INT(unwinder__table(u, id_libc)->loc, 0);
	CHECK_INT(unwinder__table(u, id_libc)->state, UNW_TABLE_EMPTY);
	unwinder__usage(u, &us);
	CHECK_INT(us.evictions, 1);
	CHECK_INT(us.tables_loaded, 1);
	CHECK(us.rows_used <= us.rows_cap);
	/* ... and libc's back evicts this one; the rows land in place and match a fresh build */
	unwinder__touch(u, id_self, 200);
	CHECK_INT(unwinder__load_table(u, id_libc), 0);
	CHECK_INT(unwinder__table(u, id_self)->state, UNW_TABLE_EMPTY);
	t = unwinder__table(u, id_libc);
	CHECK_INT(cfi_build_file(libc, -1, NULL, &r, why, sizeof(why)), 0);
	CHECK(UNW_LOC_COUNT(t->loc) == r.nr &&
	      !memcmp(unwinder__rows(u) + UNW_LOC_FIRST(t->loc), r.rows, r.nr * sizeof(*r.rows)));
	cfi_rows_free(&r);
	unwinder__usage(u, &us);
	CHECK_INT(us.evictions, 2);
	CHECK_INT(us.loads, 3);
	unwinder__free(u);

	/* a table in use is never evicted: the newcomer waits, and loads once it has cooled */
	u = unwinder__new_mem(sc, nr_libc + nr_self / 2);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	CHECK_INT(unwinder__load_table(u, id_libc), 0);
	unwinder__touch(u, id_libc, mono_now());
	CHECK_INT(unwinder__load_table(u, id_self), -EBUSY);
	CHECK_INT(unwinder__table(u, id_libc)->state, UNW_TABLE_LOADED);
	CHECK_INT(unwinder__table(u, id_self)->state, UNW_TABLE_EMPTY);
	unwinder__usage(u, &us);
	CHECK_INT(us.evictions, 0);
	CHECK_INT(us.deferrals, 1);
	CHECK_INT(us.tables_no_cfi, 0);
	unwinder__touch(u, id_libc, 100);
	unwinder__tick(u);
	CHECK_INT(unwinder__table(u, id_self)->state, UNW_TABLE_LOADED);
	CHECK_INT(unwinder__table(u, id_libc)->state, UNW_TABLE_EMPTY);
	unwinder__free(u);

	/* a table larger than the whole budget is refused with the reason; the rest still loads */
	u = unwinder__new_mem(sc, nr_self + 16);
	CHECK_INT(unwinder__add_process(u, getpid()), 0);
	file_key(libc, &dev, &ino);
	id_libc = unwinder__table_of(u, dev, ino);
	file_key(self, &dev, &ino);
	id_self = unwinder__table_of(u, dev, ino);
	CHECK_INT(unwinder__load_table(u, id_libc), -E2BIG);
	CHECK_INT(unwinder__table(u, id_libc)->state, UNW_TABLE_NO_CFI);
	CHECK_INT(unwinder__load_table(u, id_self), 0);
	unwinder__summary(u, why, sizeof(why));
	unwinder__usage(u, &us);
	CHECK_INT(us.tables_no_cfi, 1);
	CHECK_INT(us.tables_loaded, 1);
cleanup:
	unwinder__free(u);
	syms_cache__free(sc);
}

/* ---- a walk of our own stack, as the BPF side does it ---- */

struct walk {
	struct syms_cache *sc;
	struct unwinder *u;
	__u64 ips[64];
	int nr;
	__u64 stack_lo, stack_hi;
	const char *ended;
};

static bool read_word(struct walk *w, __u64 addr, __u64 *out)
{
	if (addr < w->stack_lo || addr + 8 > w->stack_hi)
		return false;
	memcpy(out, (void *)(uintptr_t)addr, 8);
	return true;
}

/* One step of bpf/unwind.bpf.h's unwind_step() over the user-space copy of the tables. */
static bool step(struct walk *w, __u64 *ip, __u64 *sp, __u64 *bp)
{
	const struct unw_proc *p = unwinder__proc(w->u, getpid());
	const struct unw_mapping *m = NULL;
	const struct unw_table *t;
	const struct unw_row *row;
	__u64 lookup = w->nr > 1 ? *ip - 1 : *ip, cfa, ra, nbp = *bp;

	for (__u32 i = 0; p && i < p->nr; i++)
		if (lookup >= p->maps[i].start && lookup < p->maps[i].end)
			m = &p->maps[i];
	if (!m || m->table == UNW_NO_TABLE)
		return w->ended = "unmapped", false;
	t = unwinder__table(w->u, m->table);
	if (!t->loc && unwinder__load_table(w->u, m->table))
		return w->ended = "no table", false;
	row = cfi_find(unwinder__rows(w->u) + UNW_LOC_FIRST(t->loc), UNW_LOC_COUNT(t->loc),
		       lookup - m->bias);
	if (!row)
		return w->ended = "no row", false;
	switch (UNW_ROW_CFA(row->type)) {
	case UNW_CFA_SP:
		cfa = *sp + row->cfa_off * 8;
		break;
	case UNW_CFA_FP:
		cfa = *bp + row->cfa_off * 8;
		break;
	case UNW_CFA_END:
		return w->ended = "end", false;
	default:
		return w->ended = "rule", false;
	}
	if (cfa <= *sp || !read_word(w, cfa - 8, &ra))
		return w->ended = "bad frame", false;
	if (UNW_ROW_FP(row->type) == UNW_FP_SAVED && !read_word(w, cfa + row->fp_off * 8, &nbp))
		return w->ended = "bad fp", false;
	*ip = ra;
	*sp = cfa;
	*bp = nbp;
	return ra != 0;
}

static struct walk *current_walk;

static int __attribute__((noinline)) cmp_and_walk(const void *a, const void *b)
{
	struct walk *w = current_walk;
	__u64 ip, sp, bp;

	if (w && !w->nr) {
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
				 : "=r"(ip), "=r"(sp), "=r"(bp));
		do
			w->ips[w->nr++] = ip;
		while (w->nr < 64 && step(w, &ip, &sp, &bp));
	}
	return *(const int *)a - *(const int *)b;
}

static void __attribute__((noinline)) sort_through_libc(void)
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };

	qsort(v, 8, sizeof(v[0]), cmp_and_walk);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame must stay */
}

static int stack_bounds(__u64 *lo, __u64 *hi)
{
	unsigned long long a, b;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int err = -ENOENT;

	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
			*lo = a;
			*hi = b;
			err = 0;
		}
	}
	if (f)
		fclose(f);
	return err;
}

static void test_walk_through_libc(void)
{
	struct walk w = {};
	const char *names[64];
	int at_cmp = -1, at_qsort = -1, at_sort = -1, at_main = -1, at_start = -1;

	w.sc = syms_cache__new();
	w.u = unwinder__new_mem(w.sc, 1 << 20);
	CHECK_INT(stack_bounds(&w.stack_lo, &w.stack_hi), 0);
	CHECK_INT(syms_cache__snapshot(w.sc, getpid()), 0);
	CHECK_INT(unwinder__add_process(w.u, getpid()), 0);
	current_walk = &w;
	sort_through_libc();
	current_walk = NULL;
	printf("    # walk (ended: %s):", w.ended ? w.ended : "?");
	for (int i = 0; i < w.nr; i++) {
		struct user_sym us;

		syms_cache__resolve(w.sc, getpid(), i ? w.ips[i] - 1 : w.ips[i], &us);
		names[i] = us.name ? us.name : "?";
		printf(" %s", names[i]);
		if (at_cmp < 0 && !strcmp(names[i], "cmp_and_walk"))
			at_cmp = i;
		if (at_qsort < 0 && strstr(names[i], "qsort"))
			at_qsort = i;
		if (at_sort < 0 && !strcmp(names[i], "sort_through_libc"))
			at_sort = i;
		if (at_main < 0 && !strcmp(names[i], "main"))
			at_main = i;
		if (at_start < 0 && strstr(names[i], "__libc_start_main"))
			at_start = i;
	}
	printf("\n");
	/* comparator -> (libc's qsort internals) -> qsort -> sort_through_libc -> main -> libc start */
	CHECK_INT(at_cmp, 0);
	CHECK(at_qsort > at_cmp);
	CHECK(at_sort > at_qsort);
	CHECK(at_main > at_sort);
	CHECK(at_start > at_main);
	CHECK_STR(w.ended, "end"); /* _start's undefined return address, not a failure */
	unwinder__free(w.u);
	syms_cache__free(w.sc);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	have_cc = system("cc --version >/dev/null 2>&1") == 0 &&
		  system("objcopy --version >/dev/null 2>&1") == 0;
	RUN(test_rows_from_fixture);
	RUN(test_plt);
	RUN(test_fde_order_and_overlap);
	RUN(test_debug_frame);
	RUN(test_bad_input);
	RUN(test_hostile_cfi);
	RUN(test_process_mappings);
	RUN(test_process_rewrites);
	RUN(test_signal_frame);
	RUN(test_vfork_rdi);
	RUN(test_vdso);
	RUN(test_eviction);
	RUN(test_walk_through_libc);
	sh("rm -rf %s", dir);
	TESTS_DONE();
}
