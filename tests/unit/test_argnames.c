/* probe/argnames.c: a function's argument names by position, from the DWARF of a fixture the
 * Makefile builds -O2 -g (tests/unit/fixtures/argnames_fixture.c) and from a BTF built here;
 * the mapping stops at the first parameter not passed in an integer register. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include "test.h"
#include "probe/fields.h"
#include "sym/syms.h"

static char fixture[PATH_MAX];

static bool find_fixture(void)
{
	return test_fixture("argnames_fixture", fixture, sizeof(fixture));
}

static void test_dwarf_names(void)
{
	struct func_params p;
	char text[256];

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK_INT(func_params_dwarf(fixture, "three", ~0ULL, &p), 0);
	CHECK_INT(p.nr, 3);
	CHECK_STR(p.p[0].name, "count");
	CHECK_STR(p.p[0].type, "int");
	CHECK_INT(p.p[0].size, 4);
	CHECK(p.p[0].is_signed && !p.p[0].is_ptr);
	CHECK_STR(p.p[1].name, "label");
	CHECK_STR(p.p[1].type, "char *");
	CHECK(p.p[1].is_ptr && p.p[1].size == 8);
	CHECK_STR(p.p[2].name, "out");
	CHECK_STR(p.p[2].type, "counter_t *");
	CHECK_STR(p.stop, "");
	CHECK_STR(func_params_text(&p, text, sizeof(text)), "(int count, char *label, counter_t *out)");
}

static void test_dwarf_stops(void)
{
	struct func_params p;
	char text[256];

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	/* mixed(int first, double scale, int after): only first */
	CHECK_INT(func_params_dwarf(fixture, "mixed", ~0ULL, &p), 0);
	CHECK_INT(p.nr, 1);
	CHECK_STR(p.p[0].name, "first");
	CHECK(strstr(p.stop, "scale (double)") != NULL);
	CHECK_STR(func_params_text(&p, text, sizeof(text)), "(int first, ...)");
	/* a struct by value first: nothing */
	CHECK_INT(func_params_dwarf(fixture, "bystruct", ~0ULL, &p), 0);
	CHECK_INT(p.nr, 0);
	CHECK(strstr(p.stop, "t (triple)") != NULL);
	CHECK_STR(func_params_text(&p, text, sizeof(text)), "(...)");
	/* eight longs: six registers */
	CHECK_INT(func_params_dwarf(fixture, "many", ~0ULL, &p), 0);
	CHECK_INT(p.nr, 6);
	CHECK_STR(p.p[5].name, "f");
	CHECK_INT(func_params_dwarf(fixture, "no_such_function", ~0ULL, &p), -ENOENT);
}

static int offset_cb(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	(void)name;
	(void)vaddr;
	*(__u64 *)ctx = file_off;
	return 0;
}

/* By the code's address, as an alias symbol's probe finds its function (glibc's malloc is
 * __libc_malloc): the name given is then only the fallback. */
static void test_dwarf_by_address(void)
{
	struct elf_syms *es;
	struct func_params p;
	__u64 off = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	es = elf_syms__open(fixture);
	CHECK(es != NULL);
	if (!es)
		return;
	CHECK_INT(elf_syms__for_each_match(es, "mixed", offset_cb, &off), 0);
	elf_syms__free(es);
	CHECK(off != 0);
	CHECK_INT(func_params_dwarf(fixture, "an_alias_of_mixed", off, &p), 0);
	CHECK_INT(p.nr, 1);
	CHECK_STR(p.p[0].name, "first");
	/* an address no function starts at: the name decides */
	CHECK_INT(func_params_dwarf(fixture, "three", off + 1, &p), 0);
	CHECK_STR(p.p[0].name, "count");
}

static int count_sig(__u64 vaddr, const struct func_params *p, void *ctx)
{
	(void)vaddr;
	((int *)ctx)[0] += !strcmp(p->p[0].name, "count") + 2 * !strcmp(p->p[0].name, "first");
	return 0;
}

/* One pass over every function (bpfprof list -x BIN): three's and mixed's among them. */
static void test_dwarf_each(void)
{
	int seen = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK_INT(func_params_dwarf_each(fixture, count_sig, &seen), 0);
	CHECK_INT(seen, 3);
}

static void test_dwarf_debug_file(void)
{
	char stripped[PATH_MAX + 16];
	struct func_params p;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	snprintf(stripped, sizeof(stripped), "%s.stripped", fixture);
	syms_set_debuginfod(false);
	syms_set_debug_root("/nonexistent");
	CHECK_INT(func_params_dwarf(stripped, "three", ~0ULL, &p), -ENOENT);
	CHECK_INT(p.nr, 0);
	syms_set_debug_root(NULL);
}

static void test_as_fields(void)
{
	struct field_list l = {};
	struct func_params p;
	struct field f;
	char why[256];

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK_INT(func_params_dwarf(fixture, "three", ~0ULL, &p), 0);
	CHECK_INT(fields_add_func_args(&l), 0);
	CHECK_INT(fields_add_func_params(&l, &p), 0);
	CHECK_INT(l.nr, 9);
	CHECK_INT(fields_lookup(&l, "label", true, &f, why, sizeof(why)), 0);
	CHECK(f.src == FSRC_ARG && f.arg == 1 && f.alias && f.kind == FIELD_PTR);
	CHECK_INT(fields_lookup(&l, "label:string", true, &f, why, sizeof(why)), 0);
	CHECK(f.kind == FIELD_USTR && f.arg == 1);
	CHECK_INT(fields_lookup(&l, "count", true, &f, why, sizeof(why)), 0);
	CHECK(f.arg == 0 && f.size == 4 && f.is_signed && f.kind == FIELD_INT);
	CHECK_INT(fields_lookup(&l, "count:string", true, &f, why, sizeof(why)), -EINVAL);
	CHECK_INT(fields_lookup(&l, "arg2", true, &f, why, sizeof(why)), 0);
	CHECK(f.arg == 2 && !f.alias);
	field_list_free(&l);
}

static void test_btf_names(void)
{
	struct btf *btf = btf__new_empty();
	struct func_params p;
	int i32, dbl, chr, ptr, proto, fn, proto2, fn2;

	CHECK(btf != NULL);
	if (!btf)
		return;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	dbl = btf__add_float(btf, "double", 8);
	ptr = btf__add_ptr(btf, chr);
	/* int f(int fd, char *buf) */
	proto = btf__add_func_proto(btf, i32);
	btf__add_func_param(btf, "fd", i32);
	btf__add_func_param(btf, "buf", ptr);
	fn = btf__add_func(btf, "f", BTF_FUNC_GLOBAL, proto);
	/* int g(int a, double x, int b) */
	proto2 = btf__add_func_proto(btf, i32);
	btf__add_func_param(btf, "a", i32);
	btf__add_func_param(btf, "x", dbl);
	btf__add_func_param(btf, "b", i32);
	fn2 = btf__add_func(btf, "g", BTF_FUNC_GLOBAL, proto2);
	CHECK(fn > 0 && fn2 > 0);
	CHECK_INT(func_params_btf(btf, fn, &p), 0);
	CHECK_INT(p.nr, 2);
	CHECK_STR(p.p[0].name, "fd");
	CHECK(p.p[0].size == 4 && p.p[0].is_signed);
	CHECK_STR(p.p[1].name, "buf");
	CHECK_STR(p.p[1].type, "char *");
	CHECK_INT(func_params_btf(btf, fn2, &p), 0);
	CHECK_INT(p.nr, 1);
	CHECK(strstr(p.stop, "x (double)") != NULL);
	CHECK_INT(func_params_btf(btf, i32, &p), -ENOENT);
	btf__free(btf);
}

int main(void)
{
	RUN(test_dwarf_names);
	RUN(test_dwarf_stops);
	RUN(test_dwarf_by_address);
	RUN(test_dwarf_each);
	RUN(test_dwarf_debug_file);
	RUN(test_as_fields);
	RUN(test_btf_names);
	TESTS_DONE();
}
