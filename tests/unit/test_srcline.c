/* sym/srcline.c on fixture objects the Makefile builds -O2 -g from tests/unit/fixtures/: a
 * function inlined twice at different call sites, two levels of inlining, a function not
 * inlined, the separate debug file found by build-id, and a stripped file with none. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "test.h"
#include "test_elf.h"
#include <fcntl.h>
#include <gelf.h>
#include "core/diskcache.h"
#include "sym/srccache.h"
#include "sym/srcline.h"
#include "sym/srcworker.h"
#include "sym/syms.h"

static char fixture[PATH_MAX], source[PATH_MAX];
static unsigned line_twice, line_inner, line_middle_call, line_call_a, line_call_b,
	line_call_middle, line_plain;

/* The fixture next to this test program (build/tests/fixtures/, or build/asan/...). */
static bool find_fixture(void)
{
	snprintf(source, sizeof(source), "tests/unit/fixtures/srcline_fixture.c");
	return test_fixture("srcline_fixture", fixture, sizeof(fixture));
}

/* The line of each marker comment in the fixture's source. */
static void find_lines(void)
{
	struct { const char *marker; unsigned *line; } m[] = {
		{ "LINE_TWICE", &line_twice }, { "LINE_INNER", &line_inner },
		{ "LINE_MIDDLE_CALL", &line_middle_call }, { "LINE_CALL_A", &line_call_a },
		{ "LINE_CALL_B", &line_call_b }, { "LINE_CALL_MIDDLE", &line_call_middle },
		{ "LINE_PLAIN", &line_plain },
	};
	FILE *f = fopen(source, "r");
	char buf[512];
	unsigned ln = 0;

	while (f && fgets(buf, sizeof(buf), f)) {
		ln++;
		for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			char want[64];

			snprintf(want, sizeof(want), "/* %s */", m[i].marker);
			if (strstr(buf, want))
				*m[i].line = ln;
		}
	}
	if (f)
		fclose(f);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

struct span { __u64 start, end; };

static int find_fn(const char *name, __u64 vaddr, __u64 off, void *ctx)
{
	((struct span *)ctx)->start = vaddr;
	return 1;
}

/* A function's address range, by its symbol: up to where elf_syms__find() names another. */
static struct span function_span(const char *path, const char *name)
{
	struct elf_syms *es = elf_syms__open(path);
	struct span s = {};
	const char *at;

	if (!es)
		return s;
	elf_syms__for_each_match(es, name, find_fn, &s);
	for (s.end = s.start; (at = elf_syms__find(es, s.end, NULL)) && !strcmp(at, name);)
		s.end++;
	elf_syms__free(es);
	return s;
}

/* What the chains of every address of caller() say: which call sites of which inlined
 * functions are seen. */
struct seen {
	bool twice_at_a, twice_at_b, inner_via_middle, caller_only, bad;
};

static void check_chains(struct srclines *s, const char *path, struct seen *seen)
{
	struct span sp = function_span(path, "caller");
	const struct srcline_chain *c;

	memset(seen, 0, sizeof(*seen));
	CHECK(sp.end > sp.start);
	for (__u64 a = sp.start; a < sp.end; a++) {
		int err = srclines__lookup(s, path, a, &c);

		if (err) {
			seen->bad |= err != -ENXIO;
			continue;
		}
		/* the outermost frame is always the function the code was compiled in */
		if (!c->f[0].func || strcmp(c->f[0].func, "caller") ||
		    !ends_with(c->f[0].file, "srcline_fixture.c")) {
			seen->bad = true;
			continue;
		}
		if (c->nr == 1)
			seen->caller_only = true;
		if (c->nr == 2 && !strcmp(c->f[1].func, "twice") && c->f[1].line == line_twice) {
			if (c->f[0].line == line_call_a)
				seen->twice_at_a = true;
			else if (c->f[0].line == line_call_b)
				seen->twice_at_b = true;
			else
				seen->bad = true;
		}
		if (c->nr == 3 && !strcmp(c->f[1].func, "middle") && !strcmp(c->f[2].func, "inner") &&
		    c->f[0].line == line_call_middle && c->f[1].line == line_middle_call &&
		    c->f[2].line == line_inner)
			seen->inner_via_middle = true;
	}
}

static void test_inlined_twice(void)
{
	struct srclines *s = srclines__new();
	struct seen seen;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	find_lines();
	CHECK(line_twice && line_call_a && line_call_b && line_call_a != line_call_b);
	check_chains(s, fixture, &seen);
	CHECK(seen.twice_at_a);
	CHECK(seen.twice_at_b);
	CHECK(seen.inner_via_middle);
	CHECK(!seen.bad);
	srclines__free(s);
}

/* Every file a chain names is the source's whole path, as addr2line gives it: the Makefile
 * compiles the fixture by a relative path, and DWARF 5 keeps the unit's directories relative to
 * its DW_AT_comp_dir ("tests/unit/fixtures"), which libdw (0.188) leaves as they are. */
static void test_whole_file_names(void)
{
	struct srclines *s = srclines__new();
	char want[PATH_MAX], got[PATH_MAX];
	const struct srcline_chain *c;
	struct span sp;
	int seen = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK(realpath(source, want) != NULL);
	sp = function_span(fixture, "caller");
	CHECK(sp.end > sp.start);
	for (__u64 a = sp.start; a < sp.end; a++) {
		if (srclines__lookup(s, fixture, a, &c))
			continue;
		for (__u32 k = 0; k < c->nr; k++, seen++) {
			if (!c->f[k].file || c->f[k].file[0] != '/' || !realpath(c->f[k].file, got) ||
			    strcmp(got, want)) {
				fprintf(stderr, "    %s at 0x%llx: not %s\n", c->f[k].file ?: "(none)",
					(unsigned long long)a, want);
				CHECK(!"a whole path");
				break;
			}
		}
	}
	CHECK(seen > 0);
	srclines__free(s);
}

/* A C++ member function inlined is named as its own code is, its linkage name demangled
 * ("ns::W::get() const"), not by its DW_AT_name alone ("get"). */
static void test_cxx_names(void)
{
	static const char w_cc[] =
		"namespace ns { struct W { int v; int get() const { return v * 3 + 1; } }; }\n"
		"__attribute__((noinline)) int use(const ns::W *w, int n)\n"
		"{ int t = 0; for (int i = 0; i < n; i++) t += w[i].get() ^ t; return t; }\n"
		"int main(int argc, char **argv)\n"
		"{ ns::W w[4] = { { argc } }; return use(w, argc); }\n";
	char dir[] = "/tmp/srcline-cxx-XXXXXX", cmd[3 * PATH_MAX], prog[PATH_MAX], src[PATH_MAX];
	struct srclines *s = srclines__new();
	const struct srcline_chain *c;
	bool qualified = false, bare = false;
	struct span sp;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(src, sizeof(src), "%s/w.cc", dir);
	snprintf(prog, sizeof(prog), "%s/w", dir);
	f = fopen(src, "w");
	CHECK(f && fputs(w_cc, f) >= 0 && !fclose(f));
	snprintf(cmd, sizeof(cmd), "c++ -O2 -g '%s' -o '%s' 2>/dev/null", src, prog);
	if (system(cmd)) {
		fprintf(stderr, "    c++ could not build the program: skipped\n");
	} else {
		sp = function_span(prog, "_Z3usePKN2ns1WEi");
		CHECK(sp.end > sp.start);
		for (__u64 a = sp.start; a < sp.end; a++) {
			if (srclines__lookup(s, prog, a, &c))
				continue;
			for (__u32 k = 1; k < c->nr; k++) {
				const char *fn = c->f[k].func ?: "";

				qualified |= !strcmp(fn, "ns::W::get() const");
				bare |= !strcmp(fn, "get");
			}
		}
		CHECK(qualified);
		CHECK(!bare);
	}
	srclines__free(s);
	unlink(prog);
	unlink(src);
	rmdir(dir);
}

static void test_not_inlined(void)
{
	struct srclines *s = srclines__new();
	struct span sp;
	const struct srcline_chain *c = NULL;
	struct srcline_stats st;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	find_lines();
	sp = function_span(fixture, "plain");
	CHECK(sp.end > sp.start);
	CHECK_INT(srclines__lookup(s, fixture, sp.start, &c), 0);
	if (c) {
		CHECK_INT(c->nr, 1);
		CHECK_STR(c->f[0].func, "plain");
		CHECK(c->f[0].line >= line_plain - 1 && c->f[0].line <= line_plain + 1);
	}
	/* the second time from the cache, the same chain */
	{
		const struct srcline_chain *again = NULL;

		CHECK_INT(srclines__lookup(s, fixture, sp.start, &again), 0);
		CHECK(again == c);
		srclines__stats(s, &st);
		CHECK_INT(st.lookups, 2);
		CHECK_INT(st.hits, 1);
	}
	/* an address outside any CU */
	CHECK_INT(srclines__lookup(s, fixture, 0x10, &c), -ENXIO);
	CHECK(srclines__has_dwarf(s, fixture));
	srclines__free(s);
}

static void test_file_offset(void)
{
	struct srclines *s = srclines__new();
	struct span sp;
	__u64 v = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	sp = function_span(fixture, "caller");
	/* a -O2 PIE: .text's offsets are its addresses (first PT_LOAD at 0, page-aligned) */
	CHECK_INT(srclines__file_offset_to_vaddr(s, fixture, sp.start, &v), 0);
	CHECK_INT(v, sp.start);
	CHECK_INT(srclines__file_offset_to_vaddr(s, fixture, 1ULL << 40, &v), -ENOENT);
	CHECK(srclines__file_offset_to_vaddr(s, "/nonexistent/file", 0, &v) < 0);
	srclines__free(s);
}

/* The debug info as distributions ship it and as other compilers write it: compressed sections
 * (Debian's libc6-dbg), no .debug_aranges (clang), both.  Each is read as the fixture itself:
 * every address of caller() gets the same chain, also after the parsed debug info is given
 * back between lookups (srclines__release(), as after each drain). */
static void test_copies(void)
{
	static const char *const how[] = {
		"--compress-debug-sections=zlib", "--remove-section=.debug_aranges",
		"--compress-debug-sections=zlib --remove-section=.debug_aranges",
	};
	char dir[] = "/tmp/srcline-copies-XXXXXX", path[PATH_MAX + 64], cmd[3 * PATH_MAX];
	struct srclines *ref, *s;
	struct span sp;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	find_lines();
	CHECK(mkdtemp(dir) != NULL);
	ref = srclines__new();
	sp = function_span(fixture, "caller");
	CHECK(sp.end > sp.start);
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		struct seen seen;
		int same = 0, total = 0;

		snprintf(path, sizeof(path), "%s/copy%zu", dir, i);
		snprintf(cmd, sizeof(cmd), "objcopy %s '%s' '%s'", how[i], fixture, path);
		if (system(cmd)) {
			CHECK(!"objcopy failed");
			continue;
		}
		s = srclines__new();
		check_chains(s, path, &seen);
		CHECK(seen.twice_at_a && seen.twice_at_b && seen.inner_via_middle && !seen.bad);
		srclines__free(s);
		/* address by address, half of them after a release */
		s = srclines__new();
		for (__u64 a = sp.start; a < sp.end; a++) {
			const struct srcline_chain *x = NULL, *y = NULL;
			int ex = srclines__lookup(ref, fixture, a, &x);
			int ey = srclines__lookup(s, path, a, &y);
			bool eq = ex == ey;

			if (a == (sp.start + sp.end) / 2)
				srclines__release(s);
			for (__u32 k = 0; eq && !ex && k < x->nr; k++)
				eq = x->nr == y->nr && x->f[k].line == y->f[k].line &&
				     !strcmp(x->f[k].func ?: "", y->f[k].func ?: "") &&
				     !strcmp(x->f[k].file ?: "", y->f[k].file ?: "");
			same += eq;
			total++;
		}
		if (same != total)
			fprintf(stderr, "    %s: %d of %d addresses as the fixture's\n", how[i], same,
				total);
		CHECK_INT(same, total);
		srclines__free(s);
		unlink(path);
	}
	srclines__free(ref);
	rmdir(dir);
}

/* Stripped of its debug info: none until the debug file is under the debug root by build-id. */
static void test_debug_file(void)
{
	char stripped[PATH_MAX + 16], debug[PATH_MAX + 16], root[] = "/tmp/srcline-XXXXXX";
	char dir[PATH_MAX], link[PATH_MAX + 64];
	struct srclines *s;
	struct elf_syms *es;
	const char *id;
	struct seen seen;
	const struct srcline_chain *c;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	find_lines();
	snprintf(stripped, sizeof(stripped), "%s.stripped", fixture);
	snprintf(debug, sizeof(debug), "%s.debug", fixture);
	syms_set_debuginfod(false);
	syms_set_debug_root("/nonexistent");
	s = srclines__new();
	CHECK_INT(srclines__lookup(s, stripped, 0x1000, &c), -ENOENT);
	CHECK(!srclines__has_dwarf(s, stripped));
	srclines__free(s);

	es = elf_syms__open(stripped);
	id = es ? elf_syms__build_id(es) : NULL;
	CHECK(id && strlen(id) > 2);
	CHECK(mkdtemp(root) != NULL);
	if (id && strlen(id) > 2) {
		snprintf(link, sizeof(link), "%s/.build-id", root);
		mkdir(link, 0755);
		snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", root, id);
		mkdir(dir, 0755);
		snprintf(link, sizeof(link), "%s/%s.debug", dir, id + 2);
		CHECK_INT(symlink(debug, link), 0);
		syms_set_debug_root(root);
		s = srclines__new();
		check_chains(s, stripped, &seen);
		CHECK(seen.twice_at_a && seen.twice_at_b && seen.inner_via_middle && !seen.bad);
		srclines__free(s);
		unlink(link);
		rmdir(dir);
		snprintf(link, sizeof(link), "%s/.build-id", root);
		rmdir(link);
	}
	rmdir(root);
	elf_syms__free(es);
	syms_set_debug_root(NULL);
}

/* mkdir -p of the directory part of path */
static void mkdirs(const char *path)
{
	char d[PATH_MAX];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = strchr(d + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
}

/* The running kernel's vmlinux: the lookup order and the build-id match, on a fixture tree whose
 * "vmlinux" files are the fixture (the "running kernel" is its build-id), its stripped copy (same
 * build-id, no DWARF) and this test program (DWARF, another build-id). */
static void test_kernel_vmlinux(void)
{
	char stripped[PATH_MAX + 16], debug[PATH_MAX + 16], self[PATH_MAX], got[PATH_MAX];
	char root[] = "/tmp/vmlinux-XXXXXX", boot[PATH_MAX + 64], mods[PATH_MAX + 64],
	     byid[PATH_MAX + 128];
	const char *rel = "0.0.0-bpfprof-fixture";
	struct elf_syms *es;
	const char *id;
	ssize_t n;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	snprintf(stripped, sizeof(stripped), "%s.stripped", fixture);
	snprintf(debug, sizeof(debug), "%s.debug", fixture);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';
	es = elf_syms__open(fixture);
	id = es ? elf_syms__build_id(es) : NULL;
	CHECK(id && strlen(id) > 2);
	if (!id || strlen(id) <= 2 || !mkdtemp(root)) {
		elf_syms__free(es);
		return;
	}
	syms_set_debuginfod(false);
	syms_set_debug_root(root);
	snprintf(boot, sizeof(boot), "%s/boot/vmlinux-%s", root, rel);
	snprintf(mods, sizeof(mods), "%s/lib/modules/%s/vmlinux", root, rel);
	snprintf(byid, sizeof(byid), "%s/.build-id/%.2s/%s.debug", root, id, id + 2);
	mkdirs(boot);
	mkdirs(mods);
	mkdirs(byid);
	CHECK_INT(kernel_debuginfo_find(rel, id, got, sizeof(got)), -ENOENT); /* none there */
	/* another build's image, with DWARF: refused; the release's name is not enough */
	CHECK_INT(symlink(self, boot), 0);
	CHECK_INT(kernel_debuginfo_find(rel, id, got, sizeof(got)), -ENOENT);
	/* the same build without DWARF: passed over */
	CHECK_INT(symlink(stripped, mods), 0);
	CHECK_INT(kernel_debuginfo_find(rel, id, got, sizeof(got)), -ENOENT);
	/* the same build with DWARF, in the second place looked at */
	unlink(mods);
	CHECK_INT(symlink(fixture, mods), 0);
	CHECK_INT(kernel_debuginfo_find(rel, id, got, sizeof(got)), 0);
	CHECK_STR(got, mods);
	/* by build-id comes first */
	CHECK_INT(symlink(debug, byid), 0);
	CHECK_INT(kernel_debuginfo_find(rel, id, got, sizeof(got)), 0);
	CHECK_STR(got, byid);
	/* the running kernel's build-id unknown: the release's files are taken on their name */
	CHECK_INT(kernel_debuginfo_find(rel, NULL, got, sizeof(got)), 0);
	CHECK_STR(got, boot);
	unlink(byid);
	unlink(mods);
	unlink(boot);
	syms_set_debug_root(NULL);
	elf_syms__free(es);
	(void)!system((snprintf(got, sizeof(got), "rm -r '%s'", root), got));
}

/* The last place looked at: debuginfod by the kernel's build-id, from a local server of the
 * fixture's debug file (the "running kernel"), nothing under the debug root. */
static void test_kernel_vmlinux_debuginfod(void)
{
	char dir[] = "/tmp/vmlinux-dbgd-XXXXXX", cmd[PATH_MAX * 2 + 256], got[PATH_MAX];
	char urls[64], cache[PATH_MAX];
	struct elf_syms *es;
	const char *id;
	int port = 20000 + getpid() % 20000, ready = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	if (system("command -v debuginfod >/dev/null && command -v debuginfod-find >/dev/null"))
		SKIP("debuginfod (the server and debuginfod-find) is not installed");
	es = elf_syms__open(fixture);
	id = es ? elf_syms__build_id(es) : NULL;
	CHECK(id != NULL);
	if (!id || !mkdtemp(dir)) {
		elf_syms__free(es);
		return;
	}
	snprintf(cmd, sizeof(cmd), "mkdir %s/srv && cp %s.debug %s/srv/ && "
		 "(debuginfod -F -p %d -d %s/db.sqlite -t 1 %s/srv >%s/server.log 2>&1 & "
		 "echo $! >%s/pid)", dir, fixture, dir, port, dir, dir, dir, dir);
	CHECK_INT(system(cmd), 0);
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", port);
	/* until its first scan has indexed the file (a fresh cache each time: a miss is kept) */
	for (int i = 0; i < 100 && !ready; i++) {
		snprintf(cmd, sizeof(cmd), "DEBUGINFOD_URLS=%s DEBUGINFOD_CACHE_PATH=%s/probe.%d "
			 "debuginfod-find debuginfo %s >/dev/null 2>&1", urls, dir, i, id);
		ready = !system(cmd);
		if (!ready)
			usleep(200 * 1000);
	}
	CHECK(ready);
	if (ready) {
		snprintf(cache, sizeof(cache), "%s/cache", dir);
		setenv("DEBUGINFOD_URLS", urls, 1);
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
		syms_set_debug_root(dir); /* nothing there */
		syms_set_debuginfod(true);
		CHECK_INT(kernel_debuginfo_find("0.0.0-bpfprof-fixture", id, got, sizeof(got)), 0);
		CHECK(!strncmp(got, cache, strlen(cache)));
		/* another kernel's build-id: the server has none */
		CHECK_INT(kernel_debuginfo_find("0.0.0-bpfprof-fixture",
						"00112233445566778899aabbccddeeff00112233", got,
						sizeof(got)), -ENOENT);
		syms_set_debuginfod(false);
		syms_set_debug_root(NULL);
		unsetenv("DEBUGINFOD_URLS");
		unsetenv("DEBUGINFOD_CACHE_PATH");
	}
	snprintf(cmd, sizeof(cmd), "kill $(cat %s/pid) 2>/dev/null; sleep 0.2; rm -rf %s", dir, dir);
	(void)!system(cmd);
	elf_syms__free(es);
}

static int count_fds(void)
{
	char p[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		n += access(p, F_OK) == 0;
	}
	return n;
}

/* More files than are held open: the least recently used are closed and opened again when
 * asked, with the same answers. */
static void test_many_files(void)
{
	char dir[] = "/tmp/srcline-many-XXXXXX", path[80][PATH_MAX + 32];
	struct srclines *s = srclines__new();
	struct span sp;
	struct seen seen;
	int n = 80, made = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	find_lines();
	CHECK(mkdtemp(dir) != NULL);
	for (int i = 0; i < n; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/f%d", dir, i);
		made += symlink(fixture, path[i]) == 0;
	}
	CHECK_INT(made, n);
	sp = function_span(fixture, "plain");
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < n; i++) {
			const struct srcline_chain *c = NULL;

			CHECK_INT(srclines__lookup(s, path[i], sp.start, &c), 0);
			CHECK(c && c->nr == 1 && c->f[0].func && !strcmp(c->f[0].func, "plain"));
		}
	check_chains(s, path[0], &seen);
	CHECK(seen.twice_at_a && seen.twice_at_b && seen.inner_via_middle && !seen.bad);
	/* 80 files met, at most 48 held open (two descriptors each: the copy of the debug info,
	 * and the file its .debug_info is read from) */
	CHECK(count_fds() < 2 * 48 + 16);
	srclines__free(s);
	for (int i = 0; i < n; i++)
		unlink(path[i]);
	rmdir(dir);
}

/* Whether chain x (error ex) and chain y (ey) are the same. */
static bool same_chain(int ex, const struct srcline_chain *x, int ey, const struct srcline_chain *y)
{
	bool eq = ex == ey;

	for (__u32 k = 0; eq && !ex && k < x->nr; k++)
		eq = x->nr == y->nr && x->f[k].line == y->f[k].line &&
		     !strcmp(x->f[k].func ?: "", y->f[k].func ?: "") &&
		     !strcmp(x->f[k].file ?: "", y->f[k].file ?: "");
	return eq;
}

/* Every address of function fn of path, looked up in s, against the same in ref of ref_path
 * (the file read as it is); half of them after what s parsed was given back.  Returns how many
 * differ, *inlined set when one had name in its chain. */
static int differ(struct srclines *s, const char *path, struct srclines *ref, const char *ref_path,
		  const char *fn, const char *name, bool *inlined)
{
	struct span sp = function_span(path, fn);
	int bad = sp.end > sp.start ? 0 : 1;

	for (__u64 a = sp.start; a < sp.end; a++) {
		const struct srcline_chain *x = NULL, *y = NULL;
		int ex = srclines__lookup(ref, ref_path, a, &x);
		int ey = srclines__lookup(s, path, a, &y);

		if (a == (sp.start + sp.end) / 2)
			srclines__release(s);
		bad += !same_chain(ex, x, ey, y);
		for (__u32 k = 1; !ey && k < y->nr; k++)
			*inlined |= y->f[k].func && !strcmp(y->f[k].func, name);
	}
	return bad;
}

/* A program of two units, as the sparse copy holds them: the units looked up copied one after
 * the other in the order of the lookups (the second unit first here), which moves them, and
 * the chains are the file's own.  Built with -flto, its units refer to each other's DIEs (the
 * abstract origins of inlined functions): such a copy keeps its units where they are, and the
 * inlined functions still have their names. */
static void test_units_moved(void)
{
	static const char a_c[] =
		"static inline int sq(int x) { return x * x; }\n"
		"__attribute__((noinline)) int fa(int n)\n"
		"{ int s = 0; for (int i = 0; i < n; i++) s += sq(i) ^ s; return s; }\n"
		"int fb(int n);\n"
		"int main(int argc, char **argv) { return fa(argc * 100) + fb(argc * 50); }\n";
	static const char b_c[] =
		"static inline int cube(int x) { return x * x * x; }\n"
		"int fa(int n);\n"
		"__attribute__((noinline)) int fb(int n)\n"
		"{ int s = 0; for (int i = 0; i < n; i++) s += cube(i) ^ fa(i & 3);"
		" return s; }\n";
	static const char *const how[] = { "", "-flto" };
	char dir[] = "/tmp/srcline-units-XXXXXX", cmd[4 * PATH_MAX], prog[PATH_MAX + 16],
	     ref[PATH_MAX + 16], src[PATH_MAX + 16];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(src, sizeof(src), "%s/a.c", dir);
	f = fopen(src, "w");
	CHECK(f && fputs(a_c, f) >= 0 && !fclose(f));
	snprintf(src, sizeof(src), "%s/b.c", dir);
	f = fopen(src, "w");
	CHECK(f && fputs(b_c, f) >= 0 && !fclose(f));
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		struct srclines *s = srclines__new(), *r = srclines__new();
		bool sq = false, cube = false;

		snprintf(prog, sizeof(prog), "%s/prog%zu", dir, i);
		snprintf(ref, sizeof(ref), "%s/ref%zu", dir, i);
		snprintf(cmd, sizeof(cmd), "cd '%s' && cc -O2 -g %s a.c b.c -o '%s' 2>/dev/null && "
			 "objcopy --remove-section=.debug_aranges '%s' '%s'", dir, how[i], prog,
			 prog, ref);
		if (system(cmd)) {
			fprintf(stderr, "    cc %s could not build the program: skipped\n", how[i]);
			srclines__free(s);
			srclines__free(r);
			continue;
		}
		/* the second unit first */
		CHECK_INT(differ(s, prog, r, ref, "fb", "cube", &cube), 0);
		CHECK_INT(differ(s, prog, r, ref, "fa", "sq", &sq), 0);
		CHECK(sq && cube);
		srclines__free(s);
		srclines__free(r);
		unlink(prog);
		unlink(ref);
	}
	snprintf(src, sizeof(src), "%s/a.c", dir);
	unlink(src);
	snprintf(src, sizeof(src), "%s/b.c", dir);
	unlink(src);
	rmdir(dir);
}

/* The worker (sym/srcworker.h): every address of caller() asked without waiting is answered
 * once the worker settles, each as srclines__lookup() answers it in srclines of its own, and
 * asked again at once from what it kept; a file without debug info is answered so at once after
 * its first address; answers go only when none is pending; and questions asked while it is held
 * are answered alike. */
static void test_worker(void)
{
	struct srclines *s = srclines__new(), *ref = srclines__new();
	struct srcworker *w = s ? srcworker__new(s) : NULL;
	char stripped[PATH_MAX + 16];
	const struct srcline_chain *x, *y;
	__u32 tickets[4096], t;
	struct span sp;
	size_t n = 0;
	int bad = 0, err;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK(w && ref);
	if (!w || !ref)
		goto cleanup;
	syms_set_debuginfod(false);
	syms_set_debug_root("/nonexistent");
	sp = function_span(fixture, "caller");
	CHECK(sp.end > sp.start && sp.end - sp.start <= 4096);
	for (__u64 a = sp.start; a < sp.end && n < 4096; a++, n++) {
		err = srcworker__ask(w, fixture, true, a, false, &y, &tickets[n]);
		bad += err != -EAGAIN && err != 0 && err != -ENXIO;
	}
	CHECK_INT(bad, 0);
	srcworker__settle(w);
	for (size_t i = 0; i < n; i++) {
		int ex = srclines__lookup(ref, fixture, sp.start + i, &x);
		int ey = srcworker__answer(w, tickets[i], &y);

		bad += !same_chain(ex, x, ey, y);
		/* asked again: the same answer at once, the same ticket */
		ey = srcworker__ask(w, fixture, true, sp.start + i, false, &y, &t);
		bad += !same_chain(ex, x, ey, y) || t != tickets[i];
	}
	CHECK_INT(bad, 0);
	/* a file offset, waited for: the chain of its address (a -O2 PIE: the same) */
	CHECK_INT(srcworker__ask(w, fixture, false, sp.start, true, &y, NULL),
		  srclines__lookup(ref, fixture, sp.start, &x));
	snprintf(stripped, sizeof(stripped), "%s.stripped", fixture);
	CHECK_INT(srcworker__ask(w, stripped, true, 0x1000, true, &y, NULL), -ENOENT);
	t = 12345;
	CHECK_INT(srcworker__ask(w, stripped, true, 0x1004, false, &y, &t), -ENOENT);
	CHECK_INT(t, 12345); /* no question asked */
	CHECK(!srcworker__trim(w, n + 10));
	CHECK(srcworker__trim(w, 0));
	/* held (a drain's questions asked in one go): a question waited for is answered, settling
	 * returns, and every answer is the same */
	srcworker__hold(w, true);
	for (size_t i = 0; i < n; i++) {
		err = srcworker__ask(w, fixture, true, sp.start + i, false, &y, &tickets[i]);
		bad += err != -EAGAIN && err != 0 && err != -ENXIO;
	}
	CHECK_INT(srcworker__ask(w, fixture, true, sp.start + n / 2, true, &y, NULL),
		  srclines__lookup(ref, fixture, sp.start + n / 2, &x));
	srcworker__settle(w);
	for (size_t i = 0; i < n; i++) {
		int ex = srclines__lookup(ref, fixture, sp.start + i, &x);
		int ey = srcworker__answer(w, tickets[i], &y);

		bad += !same_chain(ex, x, ey, y);
	}
	srcworker__hold(w, false);
	CHECK_INT(bad, 0);
	srcworker__stop(w, NULL);
	/* stopped, the srclines are the caller's again; a question starts it again */
	CHECK(srclines__has_dwarf(s, fixture));
	CHECK(srcworker__ask(w, fixture, true, sp.start, true, &y, NULL) ==
	      srclines__lookup(ref, fixture, sp.start, &x));
cleanup:
	srcworker__free(w);
	srclines__free(s);
	srclines__free(ref);
}

/* The executable segment of an ELF file: [start, end) of its virtual addresses. */
static struct span exec_span(const char *path)
{
	struct span sp = {};
	int fd = open(path, O_RDONLY);
	Elf *elf = fd >= 0 && elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ, NULL) :
								  NULL;
	size_t n = 0;
	GElf_Phdr ph;

	if (elf && !elf_getphdrnum(elf, &n))
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				sp = (struct span){ ph.p_vaddr, ph.p_vaddr + ph.p_memsz };
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return sp;
}

/* The cache file of the ELF file at path in cache directory dir. */
static void cache_file_of(const char *dir, const char *path, char *buf, size_t size)
{
	char key[DISK_CACHE_KEY_MAX] = "";
	struct disk_cache_src src;
	int fd = open(path, O_RDONLY);

	if (fd >= 0)
		disk_cache_key_src(fd, key, sizeof(key), &src);
	if (fd >= 0)
		close(fd);
	snprintf(buf, size, "%s/%s" SRC_CACHE_SUFFIX, dir, key);
}

/* Lookups of every step-th address of sp in s and in ref alike (same_chain()): how many
 * differ. */
static int differ_span(struct srclines *ref, struct srclines *s, const char *path,
		       struct span sp, __u64 step)
{
	int bad = 0;

	for (__u64 a = sp.start; a < sp.end; a += step) {
		const struct srcline_chain *x = NULL, *y = NULL;
		int ex = srclines__lookup(ref, path, a, &x);
		int ey = srclines__lookup(s, path, a, &y);

		if (!same_chain(ex, x, ey, y) && bad++ < 3)
			fprintf(stderr, "    %s %#llx: %d/%u %s against %d/%u %s\n", path,
				(unsigned long long)a, ex, ex ? 0 : x->nr,
				ex ? "" : x->f[x->nr - 1].func ?: "?", ey, ey ? 0 : y->nr,
				ey ? "" : y->f[y->nr - 1].func ?: "?");
	}
	return bad;
}

/* The persistent cache (sym/srccache.h): a run that looked up some addresses of a file stores
 * their regions; a later one answers every address of the file as the debug info does (those
 * regions from the cache, without opening the debug info when none other is asked); a cache
 * file corrupt anywhere is rejected and rebuilt, and the answers stay the same. */
static void test_persistent_cache(void)
{
	const char *files[] = { fixture, "./bpfprof", "/usr/lib/x86_64-linux-gnu/libc.so.6",
				"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" };
	char dir[] = "/tmp/srcline-cache-XXXXXX", cpath[PATH_MAX + 128];
	struct srcline_stats st;
	struct disk_cache *dc;
	struct srclines *ref, *s;
	int tried = 0;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK(mkdtemp(dir) != NULL);
	dc = disk_cache__open(dir, 256 << 20, NULL, 0);
	CHECK(dc != NULL);
	if (!dc)
		return;
	ref = srclines__new();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct span sp = exec_span(files[i]);
		/* about 30,000 addresses of each file, a few hundred of them asked first */
		__u64 len = sp.end - sp.start, step = len / 30000 ?: 1, seed = len / 300 ?: 1;
		const struct srcline_chain *c;

		if (!srclines__has_dwarf(ref, files[i]) || !len)
			continue;
		tried++;
		/* a run asks a few hundred addresses: their regions stored at its end */
		s = srclines__new();
		CHECK_INT(srclines__set_cache(s, dc), 0);
		for (__u64 a = sp.start; a < sp.end; a += seed)
			srclines__lookup(s, files[i], a, &c);
		/* and every function, where the debug file is compressed (libc's) */
		while (srclines__harvest(s))
			;
		srclines__stats(s, &st);
		CHECK(st.cache_regions > 0);
		/* more than a run holds to store (libc's whole): stored in the middle of the run,
		 * read back, and the same run's answers alike after it */
		if (st.harvested && strstr(files[i], "libc.so"))
			CHECK(st.cache_flushes > 0);
		if (st.cache_flushes) {
			CHECK_INT(st.cache_flush_dropped, 0);
			CHECK_INT(differ_span(ref, s, files[i], sp, step), 0);
			srclines__stats(s, &st);
			CHECK(st.cache_answers > 0);
		}
		srclines__free(s);
		/* the next answers every address alike, those from the cache */
		s = srclines__new();
		CHECK_INT(srclines__set_cache(s, dc), 0);
		CHECK_INT(differ_span(ref, s, files[i], sp, step), 0);
		srclines__stats(s, &st);
		CHECK(st.cache_answers > 0);
		srclines__free(s);
		/* the seeds' addresses again: from the cache, the debug info not opened */
		s = srclines__new();
		CHECK_INT(srclines__set_cache(s, dc), 0);
		for (__u64 a = sp.start; a < sp.end; a += seed)
			srclines__lookup(s, files[i], a, &c);
		srclines__stats(s, &st);
		CHECK_INT(st.dwarf_opened, 0);
		CHECK(st.cache_answers > 0);
		srclines__free(s);
		/* corrupt in its header, its entry table, or an entry: rejected, answers alike,
		 * stored again whole */
		cache_file_of(dir, files[i], cpath, sizeof(cpath));
		for (int where = 0; where < 3; where++) {
			struct stat sb;
			int fd = open(cpath, O_RDWR);
			off_t off = where == 0 ? 20 : where == 1 ? 200 : -3;
			unsigned char b = 0;

			CHECK(fd >= 0 && !fstat(fd, &sb));
			if (fd < 0)
				break;
			if (off < 0)
				off += sb.st_size;
			CHECK(pread(fd, &b, 1, off) == 1);
			b ^= 0x41;
			CHECK(pwrite(fd, &b, 1, off) == 1);
			close(fd);
			s = srclines__new();
			CHECK_INT(srclines__set_cache(s, dc), 0);
			CHECK_INT(differ_span(ref, s, files[i], sp, seed), 0);
			srclines__stats(s, &st);
			CHECK(st.cache_rejected >= 1);
			srclines__free(s);
			CHECK(access(cpath, F_OK) == 0);
		}
		/* the fixture's file (small) corrupt at 64 places more, each run on the file the
		 * run before wrote: never trusted, answers alike */
		for (int k = 0; i == 0 && k < 64; k++) {
			struct stat sb;
			int fd = open(cpath, O_RDWR);
			unsigned char b = 0;
			off_t off;

			if (fd < 0 || fstat(fd, &sb) || !sb.st_size) {
				CHECK(!"cache file gone");
				if (fd >= 0)
					close(fd);
				break;
			}
			off = (off_t)((k * 2654435761u) % sb.st_size);
			if (pread(fd, &b, 1, off) == 1) {
				b ^= 1u << (k % 8);
				CHECK(pwrite(fd, &b, 1, off) == 1);
			}
			close(fd);
			s = srclines__new();
			CHECK_INT(srclines__set_cache(s, dc), 0);
			CHECK_INT(differ_span(ref, s, files[i], sp, seed), 0);
			srclines__free(s);
		}
		s = srclines__new();
		CHECK_INT(srclines__set_cache(s, dc), 0);
		CHECK_INT(differ_span(ref, s, files[i], sp, seed), 0);
		srclines__stats(s, &st);
		CHECK_INT(st.cache_rejected, 0);
		CHECK_INT(st.dwarf_opened, 0);
		srclines__free(s);
	}
	CHECK(tried >= 1);
	srclines__free(ref);
	disk_cache__put(dc);
	snprintf(cpath, sizeof(cpath), "rm -rf '%s'", dir);
	CHECK(system(cpath) == 0);
}

/* A build-id key's inline cache is taken by the file's identity, its call-frame sections not
 * read; a file of another identity by their hash (the header then learns the identity, and the
 * next open reads nothing again); a file whose sections changed in place (the same build-id
 * and size) is not answered from it. */
static void test_cache_identity(void)
{
	char dir[] = "/tmp/srccache-id-XXXXXX", copy[64], cmd[PATH_MAX + 256], key[DISK_CACHE_KEY_MAX];
	struct disk_cache_src src;
	struct src_cache_stats st;
	struct disk_cache *dc = NULL;
	struct src_cache *c = NULL;
	struct src_file *f;
	unsigned char b;
	off_t off;
	int fd = -1;

	if (!find_fixture())
		SKIP("fixture not built (make unit builds it)");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof(copy), "%s.exe", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' %s && chmod 755 %s", fixture, copy, copy);
	dc = disk_cache__open(dir, 1 << 20, NULL, 0);
	c = dc ? src_cache__new(dc) : NULL;
	CHECK(c != NULL && !system(cmd));
	fd = open(copy, O_RDWR);
	if (!c || fd < 0 || disk_cache_key_src(fd, key, sizeof(key), &src) || key[0] != 'b') {
		printf("# skip: build-id keys need a file of root's with a build-id (%s)\n", key);
		goto out;
	}
	/* a run stores a region of it */
	f = src_file__open(c, key, &src);
	CHECK(f && !src_file__loaded(f) && src.cfi_hash != 0);
	CHECK_INT(src_file__add_region(f, SRC_UNCOVERED, 0x1000, 0x2000, 0), 0);
	CHECK_INT(src_file__store(f), 0);
	src_file__free(f);
	/* the same file: taken without reading its sections */
	CHECK_INT(disk_cache_key_src(fd, key, sizeof(key), &src), 0);
	f = src_file__open(c, key, &src);
	CHECK(f && src_file__loaded(f) && src.cfi_hash == 0);
	CHECK_INT(src_file__store(f), 0); /* (nothing to write) */
	src_file__free(f);
	/* a new identity (a touch moves mtime and ctime), the same bytes: hashed, taken, relearned */
	usleep(10000);
	CHECK(!futimens(fd, NULL));
	CHECK_INT(disk_cache_key_src(fd, key, sizeof(key), &src), 0);
	f = src_file__open(c, key, &src);
	CHECK(f && src_file__loaded(f) && src.cfi_hash != 0);
	CHECK_INT(src_file__store(f), 0);
	src_file__free(f);
	CHECK_INT(disk_cache_key_src(fd, key, sizeof(key), &src), 0);
	f = src_file__open(c, key, &src);
	CHECK(f && src_file__loaded(f) && src.cfi_hash == 0);
	src_file__free(f);
	/* a call-frame byte changed in place: the build-id and size stay, the cache is not taken */
	off = test_eh_frame_middle(fd);
	CHECK(off > 0 && pread(fd, &b, 1, off) == 1);
	b ^= 0x5a;
	CHECK(pwrite(fd, &b, 1, off) == 1);
	CHECK_INT(disk_cache_key_src(fd, key, sizeof(key), &src), 0);
	f = src_file__open(c, key, &src);
	CHECK(f && !src_file__loaded(f));
	src_file__free(f);
	src_cache__stats(c, &st);
	CHECK_INT(st.files_stored, 2);
	CHECK_INT(st.rejected, 0);
out:
	if (fd >= 0)
		close(fd);
	unlink(copy);
	src_cache__free(c);
	disk_cache__put(dc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(!system(cmd));
}

int main(void)
{
	RUN(test_inlined_twice);
	RUN(test_whole_file_names);
	RUN(test_cxx_names);
	RUN(test_not_inlined);
	RUN(test_file_offset);
	RUN(test_debug_file);
	RUN(test_copies);
	RUN(test_units_moved);
	RUN(test_kernel_vmlinux);
	RUN(test_kernel_vmlinux_debuginfod);
	RUN(test_many_files);
	RUN(test_worker);
	RUN(test_persistent_cache);
	RUN(test_cache_identity);
	TESTS_DONE();
}
