/* Symbolizer tests.  Fixtures are compiled at run time into a temp dir: a PIE with known
 * functions (static, exported, zero-size asm), shared libraries (one with a C++ function, one
 * dlopen'ed late), stripped binaries with .gnu_debuglink and build-id debug files.  Expected
 * addresses come from nm/objdump, or from the running fixture printing its own pointers. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "sym/syms.h"
#include "test.h"

static char dir[] = "/tmp/bpfprof-test-syms-XXXXXX";
static bool dir_made;
static bool fixtures_ok;
static bool have_cxx;

static const char lib_c[] =
	"__attribute__((noinline)) int lib_fn(int x)\n"
	"{\n"
	"	int i, s = 0;\n"
	"	for (i = 0; i < x; i++)\n"
	"		s += i * x;\n"
	"	return s;\n"
	"}\n"
	"void *lib_fn_addr(void) { return (void *)lib_fn; }\n";

static const char cxx_cc[] =
	"namespace ns {\n"
	"__attribute__((noinline)) int cxx_fn(int x)\n"
	"{\n"
	"	int s = 0;\n"
	"	for (int i = 0; i < x; i++)\n"
	"		s ^= i * 3;\n"
	"	return s;\n"
	"}\n"
	"}\n"
	"extern \"C\" void *cxx_fn_addr(void) { return (void *)&ns::cxx_fn; }\n";

/* used when no C++ compiler is installed */
static const char cxx_stub_c[] = "void *cxx_fn_addr(void) { return 0; }\n";

static const char late_c[] =
	"__attribute__((noinline)) int late_fn(int x) { return x * 7 + 3; }\n"
	"void *late_fn_addr(void) { return (void *)late_fn; }\n";

/* Prints "pid hot_function local_fn lib_fn cxx_fn jit_page", then dlopens every path it reads
 * on stdin and prints late_fn's address; exits when stdin closes. */
static const char prog_c[] =
	"#include <dlfcn.h>\n"
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"#include <sys/mman.h>\n"
	"#include <unistd.h>\n"
	"int lib_fn(int x);\n"
	"void *lib_fn_addr(void);\n"
	"void *cxx_fn_addr(void);\n"
	"void asm_nosize(void);\n"
	"int data_var = 42;\n"
	"__asm__(\".text\\n.globl asm_entry\\nasm_entry:\\n\\tnop\\n\\tnop\\n\"\n"
	"	\".globl asm_nosize\\n.type asm_nosize, @function\\n\"\n"
	"	\"asm_nosize:\\n\\tnop\\n\\tnop\\n\\tnop\\n\\tnop\\n\\tret\\n\"\n"
	"	\".globl asm_sized\\n.type asm_sized, @function\\n\"\n"
	"	\".globl zz_alias_with_a_long_name\\n.type zz_alias_with_a_long_name, @function\\n\"\n"
	"	\"asm_sized:\\nzz_alias_with_a_long_name:\\n\\tnop\\n\"\n"
	"	\".globl asm_inner\\nasm_inner:\\n\\tnop\\n\\tnop\\n\\tret\\n\"\n"
	"	\".size asm_sized, .-asm_sized\\n\");\n"
	"static __attribute__((noinline)) int local_fn(int x) { return x * data_var + 1; }\n"
	"__attribute__((noinline)) int hot_function(int x)\n"
	"{\n"
	"	int i, s = 0;\n"
	"	for (i = 0; i < x; i++)\n"
	"		s += local_fn(i);\n"
	"	return s;\n"
	"}\n"
	"int main(void)\n"
	"{\n"
	"	char line[4200];\n"
	"	void *jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"	printf(\"%d %p %p %p %p %p\\n\", (int)getpid(), (void *)hot_function, (void *)local_fn,\n"
	"	       lib_fn_addr(), cxx_fn_addr(), jit);\n"
	"	fflush(stdout);\n"
	"	while (fgets(line, sizeof(line), stdin)) {\n"
	"		void *h, *(*f)(void) = NULL;\n"
	"		line[strcspn(line, \"\\n\")] = 0;\n"
	"		h = dlopen(line, RTLD_NOW);\n"
	"		if (h)\n"
	"			f = (void *(*)(void))dlsym(h, \"late_fn_addr\");\n"
	"		printf(\"%p\\n\", f ? f() : NULL);\n"
	"		fflush(stdout);\n"
	"	}\n"
	"	asm_nosize();\n"
	"	return hot_function(3) + lib_fn(2);\n"
	"}\n";

/* For the separate debug files: secret_local is only ever in .symtab. */
static const char dbg_c[] =
	"static __attribute__((noinline)) int secret_local(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) int visible_fn(int x) { return secret_local(x) + 2; }\n"
	"int main(int argc, char **argv) { (void)argv; return visible_fn(argc); }\n";

static const char *fx(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
	return buf;
}

/* Runs a shell command built like printf; returns its exit status (0 = success). */
static int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	fputs(text, f);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f))
		err = -errno;
	return err;
}

/* Address of a symbol in nm's output, or 0. */
static __u64 nm_addr(const char *file, const char *sym)
{
	char cmd[4200], line[1024], name[512], type;
	unsigned long long addr;
	__u64 found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -- '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %511s", &addr, &type, name) == 3 && !strcmp(name, sym))
			found = addr;
	pclose(p);
	return found;
}

/* VMA and file offset of a section, from objdump -h; false when missing. */
static bool section_info(const char *file, const char *sec, __u64 *vma, __u64 *off)
{
	char cmd[4200], line[1024], name[256];
	unsigned long long size, v, l, o;
	bool found = false;
	int idx;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -h -- '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%d %255s %llx %llx %llx %llx", &idx, name, &size, &v, &l, &o) == 6 &&
		    !strcmp(name, sec)) {
			*vma = v;
			*off = o;
			found = true;
		}
	}
	pclose(p);
	return found;
}

static bool build_fixtures(void)
{
	char p[4096];

	if (!mkdtemp(dir))
		return false;
	dir_made = true;
	if (write_file(fx(p, sizeof(p), "lib.c"), lib_c) ||
	    write_file(fx(p, sizeof(p), "cxx.cc"), cxx_cc) ||
	    write_file(fx(p, sizeof(p), "cxx_stub.c"), cxx_stub_c) ||
	    write_file(fx(p, sizeof(p), "late.c"), late_c) ||
	    write_file(fx(p, sizeof(p), "prog.c"), prog_c) ||
	    write_file(fx(p, sizeof(p), "dbg.c"), dbg_c))
		return false;
	have_cxx = !run("cc -x c++ -O1 -fPIC -fno-exceptions -c -o %s/cxx.o %s/cxx.cc 2>/dev/null",
			dir, dir);
	if (!have_cxx && run("cc -O1 -fPIC -c -o %s/cxx.o %s/cxx_stub.c", dir, dir))
		return false;
	return !run("cd %s && cc -O1 -g -fPIC -shared -o libsymtest.so lib.c cxx.o && "
		    "cc -O1 -g -fPIC -shared -o liblate.so late.c && "
		    "cc -O1 -g -fPIE -pie -rdynamic -o prog prog.c -L. -lsymtest "
		    "-Wl,-rpath,%s -ldl && "
		    "mkdir gone && cp libsymtest.so gone/ && "
		    "cc -O1 -g -fPIE -pie -o gone/prog prog.c -Lgone -lsymtest "
		    "-Wl,-rpath,%s/gone -ldl && "
		    "mkdir gone2 && cp libsymtest.so gone2/ && "
		    "cc -O1 -g -fPIE -pie -o gone2/prog prog.c -Lgone2 -lsymtest "
		    "-Wl,-rpath,%s/gone2 -ldl && "
		    "mkdir dl && cc -O1 -g -Wl,--build-id=none -o dl/prog_dl dbg.c && "
		    "objcopy --only-keep-debug dl/prog_dl dl/prog_dl.debug && "
		    "strip --strip-all dl/prog_dl && "
		    "objcopy --add-gnu-debuglink=dl/prog_dl.debug dl/prog_dl && "
		    "mkdir bid && cc -O1 -g -Wl,--build-id -o bid/prog_bid dbg.c",
		    dir, dir, dir, dir);
}

/* ---- a fixture process: stdin to send it library paths, stdout to read its pointers ---- */
struct child {
	pid_t pid;
	FILE *out;
	int in;
};

static int spawn(const char *path, struct child *c)
{
	int to[2], from[2];

	if (pipe2(to, O_CLOEXEC))
		return -errno;
	if (pipe2(from, O_CLOEXEC)) {
		close(to[0]);
		close(to[1]);
		return -errno;
	}
	c->pid = fork();
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = fdopen(from[0], "r");
	return c->pid < 0 ? -errno : 0;
}

static void reap(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
	if (c->out)
		fclose(c->out);
	if (c->in >= 0)
		close(c->in);
	c->out = NULL;
	c->in = -1;
}

/* Reads one line of pointers ("0x..." or "(nil)"); returns how many. */
static int read_ptrs(struct child *c, __u64 *v, int max)
{
	char line[1024], *tok, *save;
	int n = 0;

	if (!c->out || !fgets(line, sizeof(line), c->out))
		return 0;
	for (tok = strtok_r(line, " \n", &save); tok && n < max; tok = strtok_r(NULL, " \n", &save))
		v[n++] = strtoull(tok, NULL, 0);
	return n;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- tests ---- */
static void test_demangle(void)
{
	char *s = demangle("_ZN3foo3barEv");

	if (!s && !dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD) &&
	    !dlopen("libstdc++.so.6", RTLD_LAZY))
		SKIP("libstdc++.so.6 is not installed");
	CHECK_STR(s, "foo::bar()");
	free(s);
	s = demangle("_ZN2ns6cxx_fnEi");
	CHECK_STR(s, "ns::cxx_fn(int)");
	free(s);
	CHECK(demangle("main") == NULL);
	CHECK(demangle("_Z!!not-mangled") == NULL);
	CHECK(demangle(NULL) == NULL);
}

static void test_ksyms_fixture(void)
{
	char path[4096];
	const struct ksym *k;
	struct ksyms *ks;

	fx(path, sizeof(path), "kallsyms");
	CHECK_INT(write_file(path,
			     "ffffffffc0002000 t bar_fn [bar]\n"
			     "ffffffff81000100 T second\n"
			     "0000000000000000 A hidden_zero\n"
			     "ffffffff81000000 t _first_alias\n"
			     "ffffffff81000000 T first\n"
			     "ffffffffc0001000 t foo_fn\t[foo]\n"
			     "ffffffff81000200 W weak_one\n"
			     "ffffffff83000000 R __start_orc_unwind_ip\n"
			     "ffffffff83000010 r other_data\n"
			     "not a symbol line\n"
			     "ffffffffc0001080 t foo_fn2 [foo]"), 0);
	ks = ksyms__load_file(path);
	CHECK(ks != NULL);
	if (!ks)
		return;
	k = ksyms__find(ks, 0xffffffff81000000ULL); /* exact start; global beats the local alias */
	CHECK(k && !strcmp(k->name, "first") && !strcmp(k->module, "[kernel.kallsyms]"));
	k = ksyms__find(ks, 0xffffffff81000080ULL); /* middle */
	CHECK_STR(k ? k->name : NULL, "first");
	k = ksyms__find(ks, 0xffffffff81000100ULL);
	CHECK_STR(k ? k->name : NULL, "second");
	k = ksyms__find(ks, 0xffffffff81000234ULL);
	CHECK_STR(k ? k->name : NULL, "weak_one");
	CHECK(ksyms__find(ks, 0xffffffff80ffffffULL) == NULL); /* before first */
	CHECK(ksyms__find(ks, 0) == NULL);
	k = ksyms__find(ks, 0xffffffffc0001010ULL); /* module, tab-separated */
	CHECK(k && !strcmp(k->name, "foo_fn") && !strcmp(k->module, "[foo]"));
	k = ksyms__find(ks, 0xffffffffc0001080ULL); /* last line, no newline */
	CHECK(k && !strcmp(k->name, "foo_fn2") && !strcmp(k->module, "[foo]"));
	k = ksyms__find(ks, 0xffffffffc0002fffULL); /* after last: greatest start <= addr */
	CHECK(k && !strcmp(k->name, "bar_fn") && !strcmp(k->module, "[bar]"));
	CHECK_INT(ksyms__addr(ks, "second"), 0xffffffff81000100ULL);
	CHECK_INT(ksyms__addr(ks, "hidden_zero"), 0);
	CHECK_INT(ksyms__addr(ks, "nope"), 0);
	/* data symbols: only the kept ones, by their own lookup; never a frame's name */
	CHECK_INT(ksyms__data_addr(ks, "__start_orc_unwind_ip"), 0xffffffff83000000ULL);
	CHECK_INT(ksyms__data_addr(ks, "__stop_orc_unwind_ip"), 0);
	CHECK_INT(ksyms__data_addr(ks, "other_data"), 0);
	CHECK_INT(ksyms__addr(ks, "__start_orc_unwind_ip"), 0);
	/* a symbol's end: the next code symbol's start (aliases share the start), 0 after the last */
	CHECK_INT(ksyms__end(ks, 0xffffffff81000000ULL), 0xffffffff81000100ULL);
	CHECK_INT(ksyms__end(ks, 0xffffffff810000ffULL), 0xffffffff81000100ULL);
	CHECK_INT(ksyms__end(ks, 0xffffffffc0001010ULL), 0xffffffffc0001080ULL);
	CHECK_INT(ksyms__end(ks, 0xffffffffc0002000ULL), 0);
	ksyms__free(ks);

	/* kptr_restrict: every address zero is an error, not an empty table */
	CHECK_INT(write_file(path, "0000000000000000 T a\n0000000000000000 t b [m]\n"), 0);
	errno = 0;
	ks = ksyms__load_file(path);
	CHECK(ks == NULL && errno == EPERM);
	ksyms__free(ks);
	errno = 0;
	CHECK(ksyms__load_file("/nonexistent/kallsyms") == NULL && errno == ENOENT);
}

/* Function padding (__pfx_NAME just before NAME) is kept as a size on NAME's entry, not as an
 * entry: lookups still name the padding, and the function before ends where it begins. */
static void test_ksyms_pfx(void)
{
	char path[4096];
	const struct ksym *k;
	struct ksyms *ks;

	fx(path, sizeof(path), "kallsyms_pfx");
	CHECK_INT(write_file(path,
			     "ffffffff81000000 T first\n"
			     "ffffffff810000f0 T __pfx_second\n"
			     "ffffffff81000100 T second\n"
			     "ffffffff810001f0 t __pfx_orphan\n"   /* not followed by its function */
			     "ffffffff81000200 T other\n"
			     "ffffffffc0000ff0 t __pfx_mod_fn\t[m]\n"
			     "ffffffffc0001000 t mod_fn\t[m]\n"
			     "ffffffffc0001ff0 t __pfx_last\t[m]\n"), 0);
	ks = ksyms__load_file(path);
	CHECK(ks != NULL);
	if (!ks)
		return;
	k = ksyms__find(ks, 0xffffffff810000efULL);
	CHECK_STR(k ? k->name : NULL, "first");
	k = ksyms__find(ks, 0xffffffff810000f4ULL);
	CHECK(k && !strcmp(k->name, "__pfx_second") && k->addr == 0xffffffff810000f0ULL);
	k = ksyms__find(ks, 0xffffffff81000100ULL);
	CHECK(k && !strcmp(k->name, "second") && k->addr == 0xffffffff81000100ULL);
	k = ksyms__find(ks, 0xffffffff810001f8ULL);
	CHECK_STR(k ? k->name : NULL, "__pfx_orphan");
	k = ksyms__find(ks, 0xffffffffc0000ff8ULL);
	CHECK(k && !strcmp(k->name, "__pfx_mod_fn") && !strcmp(k->module, "[m]"));
	k = ksyms__find(ks, 0xffffffffc0001004ULL);
	CHECK(k && !strcmp(k->name, "mod_fn") && !strcmp(k->module, "[m]"));
	k = ksyms__find(ks, 0xffffffffc0001ff1ULL);
	CHECK_STR(k ? k->name : NULL, "__pfx_last");
	CHECK_INT(ksyms__end(ks, 0xffffffff81000000ULL), 0xffffffff810000f0ULL);
	CHECK_INT(ksyms__end(ks, 0xffffffff810000f0ULL), 0xffffffff81000100ULL);
	CHECK_INT(ksyms__end(ks, 0xffffffffc0001000ULL), 0xffffffffc0001ff0ULL);
	CHECK_INT(ksyms__addr(ks, "second"), 0xffffffff81000100ULL);
	CHECK_INT(ksyms__addr(ks, "__pfx_second"), 0);
	ksyms__free(ks);
}

static void test_ksyms_proc(void)
{
	double ms, best = 1e9;
	struct timespec t0;
	const struct ksym *k;
	struct ksyms *ks;
	__u64 addr;
	int i;

	for (i = 0; i < 3; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ks = ksyms__load();
		ms = ms_since(&t0);
		if (!ks && errno == EPERM)
			SKIP("kernel addresses hidden by kptr_restrict");
		if (!ks && errno == ENOENT)
			SKIP("no /proc/kallsyms");
		CHECK(ks != NULL);
		if (!ks)
			return;
		best = ms < best ? ms : best;
		if (i < 2)
			ksyms__free(ks);
	}
	printf("    # ksyms__load(/proc/kallsyms): best of 3 %.1f ms\n", best);
	addr = ksyms__addr(ks, "schedule");
	CHECK(addr != 0);
	k = ksyms__find(ks, addr + 1);
	CHECK(k && !strcmp(k->name, "schedule") && !strcmp(k->module, "[kernel.kallsyms]"));
	ksyms__free(ks);
}

/* A store in memory for ksyms__load_kept(): one file. */
struct mem_store {
	char name[128];
	void *buf;
	size_t len;
	int reads, writes;
};

static int mem_read(void *ctx, const char *name, size_t max, void **buf, size_t *len)
{
	struct mem_store *m = ctx;

	m->reads++;
	if (!m->buf || strcmp(name, m->name) || m->len > max)
		return -ENOENT;
	*buf = malloc(m->len);
	memcpy(*buf, m->buf, m->len);
	*len = m->len;
	return 0;
}

static int mem_write(void *ctx, const char *name, const void *buf, size_t len)
{
	struct mem_store *m = ctx;

	m->writes++;
	snprintf(m->name, sizeof(m->name), "%s", name);
	free(m->buf);
	m->buf = malloc(len);
	memcpy(m->buf, buf, len);
	m->len = len;
	return 0;
}

struct kept_cmp {
	const struct ksyms *full, *kept;
	bool core; /* this pass: the addresses the kept table answers alone */
	__u64 core_last; /* those end at the last core symbol's start */
	__u64 bpf_addr;  /* a BPF program's function, 0: none loaded */
	size_t asked, differ;
};

static int last_core(const char *name, __u64 addr, void *ctx)
{
	struct kept_cmp *c = ctx;
	const struct ksym *f = ksyms__find(c->full, addr);

	if (f && !strcmp(f->module, "[kernel.kallsyms]") && f->addr > c->core_last)
		c->core_last = f->addr;
	if (f && !strcmp(f->module, "[bpf]") && !c->bpf_addr && !strncmp(f->name, "bpf_prog_", 9))
		c->bpf_addr = f->addr;
	return 0;
}

static int compare_kept(const char *name, __u64 addr, void *ctx)
{
	struct kept_cmp *c = ctx;
	const __u64 at[] = { addr, addr - 1, addr + 3 };

	for (size_t i = 0; i < 3; i++) {
		const struct ksym *f = ksyms__find(c->full, at[i]), *k;
		char fname[600];
		const char *fmod;
		__u64 faddr;

		if (!f || c->core != (!strcmp(f->module, "[kernel.kallsyms]") &&
				      at[i] < c->core_last))
			continue;
		snprintf(fname, sizeof(fname), "%s", f->name); /* a __pfx_ name is the table's buffer */
		fmod = f->module;
		faddr = f->addr;
		k = ksyms__find(c->kept, at[i]);
		c->asked++;
		if (!k || strcmp(fname, k->name) || strcmp(fmod, k->module) || faddr != k->addr)
			c->differ++;
	}
	return 0;
}

/* Whether /proc/kallsyms still names a BPF program name at addr: programs of other tools come
 * and go between the test's reads. */
static bool bpf_prog_still_there(__u64 addr, const char *name)
{
	struct ksyms *now = ksyms__load_file("/proc/kallsyms");
	const struct ksym *f = now ? ksyms__find(now, addr) : NULL;
	bool there = f && f->addr == addr && !strcmp(f->name, name);

	ksyms__free(now);
	return there;
}

/* The core kernel's symbols kept between runs: the first load reads the file and keeps them, the
 * second takes them back and answers every core address as the whole table does without reading
 * the file, and a BPF program's from the program's info; every name asked for reads it whole
 * then, and names given out before stay valid.  A kept table that is not one (flipped, truncated) is not taken. */
static void test_ksyms_kept(void)
{
	struct mem_store m = { 0 };
	struct ksyms_store st = { mem_read, mem_write, &m };
	struct ksyms *full = ksyms__load_file("/proc/kallsyms"), *first, *kept;
	struct kept_cmp c = { 0 };
	const struct ksym *k;
	const char *early;
	size_t outside;
	bool read_outside;
	__u64 sched;

	if (!full && errno == EPERM)
		SKIP("kernel addresses hidden by kptr_restrict");
	CHECK(full != NULL);
	first = ksyms__load_kept(&st);
	CHECK(first && !ksyms__partial(first));
	ksyms__free(first);
	if (!m.writes) {
		ksyms__free(full);
		SKIP("no kept table here (not x86-64, no build-id or boot id, or symbols interleaved)");
	}
	kept = ksyms__load_kept(&st);
	CHECK(kept && ksyms__partial(kept));
	if (!kept || !full)
		goto out;
	sched = ksyms__addr(kept, "schedule");
	CHECK(sched && sched == ksyms__addr(full, "schedule"));
	k = ksyms__find(kept, sched + 1);
	early = k ? k->name : NULL;
	CHECK_STR(early, "schedule");
	c.full = full;
	c.kept = kept;
	c.core = true;
	ksyms__for_each_name(full, last_core, &c);
	ksyms__for_each_name(full, compare_kept, &c);
	printf("    # %zu core lookups, %zu differ; still the kept table alone: %d\n", c.asked,
	       c.differ, ksyms__partial(kept));
	CHECK(c.asked > 10000);
	CHECK_INT(c.differ, 0);
	CHECK(ksyms__partial(kept));
	for (size_t i = 0; i < 3; i++) {
		static const char *const data[] = { "__start_orc_unwind_ip", "__stop_orc_unwind_ip",
						    "__start_orc_unwind" };

		CHECK_INT(ksyms__data_addr(kept, data[i]), ksyms__data_addr(full, data[i]));
	}
	/* a BPF program's function: named from the program's info, the file still not read */
	if (c.bpf_addr) {
		const struct ksym *f = ksyms__find(full, c.bpf_addr);
		char fname[600];

		snprintf(fname, sizeof(fname), "%s", f->name);
		k = ksyms__find(kept, c.bpf_addr + 1);
		if (!(k && !strcmp(k->name, fname)) && !bpf_prog_still_there(c.bpf_addr, fname))
			printf("    # %s was unloaded meanwhile (another tool's program)\n", fname);
		else
			CHECK(k && !strcmp(k->name, fname) && !strcmp(k->module, "[bpf]") &&
			      k->addr == c.bpf_addr);
		CHECK(ksyms__partial(kept));
	}
	/* the rest (modules', trampolines'): the file's symbols outside the core read at the
	 * first of them, beside the kept core's, not the whole file */
	c.core = false;
	c.asked = c.differ = 0;
	ksyms__for_each_name(full, compare_kept, &c);
	read_outside = ksyms__outside(kept, &outside);
	printf("    # %zu other lookups, %zu differ (BPF programs come and go); %zu symbols "
	       "outside the core read, %zu KB held (the whole table: %zu KB)\n", c.asked, c.differ,
	       outside, ksyms__bytes(kept) >> 10, ksyms__bytes(full) >> 10);
	/* (none where no module, trampoline or BPF program is listed: nothing read then) */
	CHECK(c.differ * 10 <= c.asked);
	CHECK(ksyms__partial(kept) && ((read_outside && outside > 0) || !c.asked));
	CHECK(ksyms__bytes(kept) < ksyms__bytes(full));
	CHECK_STR(early, "schedule"); /* a name found before stays */
	CHECK_INT(ksyms__nr_names(kept) > 1000, 1); /* every name: the file read whole */
	CHECK(!ksyms__partial(kept));
	ksyms__free(kept);
	/* a header byte flipped (its range), then truncated: not taken, read whole and kept again
	 * (the cache's files carry a checksum besides: test_tcache) */
	((char *)m.buf)[40] ^= 0x55;
	kept = ksyms__load_kept(&st);
	CHECK(kept && !ksyms__partial(kept));
	ksyms__free(kept);
	m.len -= 100;
	kept = ksyms__load_kept(&st);
	CHECK(kept && !ksyms__partial(kept));
	ksyms__free(kept);
	kept = ksyms__load_kept(&st);
	CHECK(kept && ksyms__partial(kept));
out:
	ksyms__free(kept);
	ksyms__free(full);
	free(m.buf);
}

static void test_perf_map(void)
{
	char path[4096];
	struct perf_map *pm;
	__u64 off = 99;

	fx(path, sizeof(path), "perf-test.map");
	CHECK_INT(write_file(path,
			     "0x1000 0x100 first entry\n"
			     "2000 80 bare hex\n"
			     "0x1080 0x100 newer overlapping\n"
			     "0x1000 0x10 tiny newest\n"
			     "garbage line\n"
			     "0x3000 0 zero size\n"
			     "0x4000 0x10 name with  two  spaces\r\n"
			     "5000 100 old big\n"
			     "5010 10 new small\n"
			     "5000 100 newest big\n"
			     "6010 10 old small\n"
			     "6000 100 new big"), 0);
	pm = perf_map__load(path);
	CHECK(pm != NULL);
	if (!pm)
		return;
	CHECK_STR(perf_map__find(pm, 0x1000, &off), "tiny newest");
	CHECK_INT(off, 0);
	CHECK_STR(perf_map__find(pm, 0x1010, &off), "first entry");
	CHECK_INT(off, 0x10);
	CHECK_STR(perf_map__find(pm, 0x107f, NULL), "first entry");
	CHECK_STR(perf_map__find(pm, 0x1080, &off), "newer overlapping");
	CHECK_INT(off, 0);
	CHECK_STR(perf_map__find(pm, 0x1150, &off), "newer overlapping");
	CHECK_INT(off, 0x150 - 0x80);
	CHECK(perf_map__find(pm, 0x1180, NULL) == NULL);
	CHECK(perf_map__find(pm, 0xfff, NULL) == NULL);
	CHECK_STR(perf_map__find(pm, 0x2000, NULL), "bare hex");
	CHECK_STR(perf_map__find(pm, 0x207f, NULL), "bare hex");
	CHECK(perf_map__find(pm, 0x2080, NULL) == NULL);
	CHECK(perf_map__find(pm, 0x3000, NULL) == NULL);
	CHECK_STR(perf_map__find(pm, 0x4005, NULL), "name with  two  spaces");
	CHECK_STR(perf_map__find(pm, 0x5015, &off), "newest big");
	CHECK_INT(off, 0x15);
	CHECK_STR(perf_map__find(pm, 0x6015, NULL), "new big");
	CHECK_STR(perf_map__find(pm, 0x60ff, NULL), "new big");
	CHECK(perf_map__find(pm, 0x6100, NULL) == NULL);
	perf_map__free(pm);
	errno = 0;
	CHECK(perf_map__load("/nonexistent/perf.map") == NULL && errno == ENOENT);
}

/* Opens our own map as a profiler would (through /proc/self's pid), in each shape a hostile or
 * careless writer could give it. */
static void test_perf_map_open(void)
{
	char map[64], other[64], path[96];
	enum file_refusal why;
	struct perf_map *pm;
	struct stat st;
	int fd;

	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	snprintf(other, sizeof(other), "/tmp/bpfprof-test-%d.map", (int)getpid());
	unlink(map);
	unlink(other);
	CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -ENOENT);

	CHECK_INT(write_file(map, "1000 10 mine\n"), 0);
	fd = perf_map__open(getpid(), &st, &why, path, sizeof(path));
	CHECK(fd >= 0 && why == FILE_OK);
	pm = fd >= 0 ? perf_map__load_fd(fd) : NULL;
	CHECK_STR(pm ? perf_map__find(pm, 0x1001, NULL) : NULL, "mine");
	perf_map__free(pm);
	if (fd >= 0)
		close(fd);

	/* a symlink to the real map (or to /etc/shadow): never followed */
	CHECK_INT(rename(map, other), 0);
	CHECK_INT(symlink(other, map), 0);
	CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -EPERM);
	CHECK_INT(why, FILE_SYMLINK);
	CHECK(perf_map__load(map) == NULL && errno == EPERM);
	unlink(map);

	/* a second name for a file: another user's hard link to root's file would pass as root's */
	CHECK_INT(link(other, map), 0);
	CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -EPERM);
	CHECK_INT(why, FILE_HARD_LINKED);
	unlink(map);
	unlink(other);

	/* a FIFO: refused at once, not a read that waits for a writer */
	CHECK_INT(mkfifo(map, 0600), 0);
	CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -EPERM);
	CHECK_INT(why, FILE_NOT_REGULAR);
	unlink(map);

	/* bigger than we read (sparse: no disk used) */
	fd = open(map, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && !ftruncate(fd, PERF_MAP_MAX_BYTES + 1));
	if (fd >= 0)
		close(fd);
	CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -EPERM);
	CHECK_INT(why, FILE_TOO_BIG);
	CHECK(perf_map__load(map) == NULL && errno == EPERM);

	/* another user's map names our code: only root can make one to test with */
	if (!geteuid()) {
		CHECK_INT(write_file(map, "1000 10 theirs\n"), 0);
		CHECK_INT(chown(map, 65534, 65534), 0);
		CHECK_INT(perf_map__open(getpid(), &st, &why, path, sizeof(path)), -EPERM);
		CHECK_INT(why, FILE_OWNER);
	}
	unlink(map);
}

/* The rules a file another user controls is judged by, on the open fd. */
static void test_untrusted_open(void)
{
	const struct file_rules plain = {}, follow = { .follow = true };
	struct file_rules rules = {};
	char file[4096], lnk[4096], fifo[4096], other[4096];
	enum file_refusal why;
	struct stat st;
	int fd;

	fx(file, sizeof(file), "untrusted.txt");
	fx(lnk, sizeof(lnk), "untrusted.link");
	fx(fifo, sizeof(fifo), "untrusted.fifo");
	fx(other, sizeof(other), "untrusted.other");
	CHECK_INT(write_file(file, "text"), 0);
	CHECK_INT(write_file(other, "other"), 0);
	CHECK_INT(symlink(file, lnk), 0);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	fd = untrusted_open(AT_FDCWD, file, FILE_MAPPED, &plain, &st, &why);
	CHECK(fd >= 0 && why == FILE_OK && st.st_size == 4);
	if (fd >= 0)
		close(fd);
	CHECK_INT(untrusted_open(AT_FDCWD, lnk, FILE_MAPPED, &plain, &st, &why), -EPERM);
	CHECK_INT(why, FILE_SYMLINK);
	/* a link the rules follow (a /proc/PID/map_files entry): the file it names is judged */
	fd = untrusted_open(AT_FDCWD, lnk, FILE_MAPPED, &follow, &st, &why);
	CHECK(fd >= 0 && why == FILE_OK);
	if (fd >= 0)
		close(fd);
	CHECK_INT(untrusted_open(AT_FDCWD, fifo, FILE_MAPPED, &follow, &st, &why), -EPERM);
	CHECK_INT(why, FILE_NOT_REGULAR);
	CHECK_INT(untrusted_open(AT_FDCWD, dir, FILE_DEBUG, &plain, &st, &why), -EPERM);
	CHECK_INT(why, FILE_NOT_REGULAR);
	CHECK_INT(untrusted_open(AT_FDCWD, "/dev/zero", FILE_DEBUG, &follow, &st, &why), -EPERM);
	CHECK_INT(why, FILE_NOT_REGULAR);
	CHECK_INT(untrusted_open(AT_FDCWD, "/nonexistent", FILE_DEBUG, &plain, &st, &why), -ENOENT);
	CHECK_INT(why, FILE_OK);
	/* found by name, but another file than the one a process mapped */
	CHECK_INT(stat(file, &st), 0);
	rules.ino = st.st_ino;
	fd = untrusted_open(AT_FDCWD, file, FILE_MAPPED, &rules, &st, &why);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_INT(untrusted_open(AT_FDCWD, other, FILE_MAPPED, &rules, &st, &why), -EPERM);
	CHECK_INT(why, FILE_NOT_MAPPED);
	/* a second name */
	rules = (struct file_rules){ .one_name = true };
	CHECK_INT(unlink(lnk), 0);
	CHECK_INT(link(file, lnk), 0);
	CHECK_INT(untrusted_open(AT_FDCWD, file, FILE_MAPPED, &rules, &st, &why), -EPERM);
	CHECK_INT(why, FILE_HARD_LINKED);
	/* another user's file, where only root's or the file's owner's is taken */
	if (!geteuid()) {
		rules = (struct file_rules){ .check_owner = true, .owners = { 1000, (uid_t)-1 } };
		CHECK_INT(chown(other, 65534, 65534), 0);
		CHECK_INT(untrusted_open(AT_FDCWD, other, FILE_DEBUG, &rules, &st, &why), -EPERM);
		CHECK_INT(why, FILE_OWNER);
		rules.owners[0] = 65534;
		fd = untrusted_open(AT_FDCWD, other, FILE_DEBUG, &rules, &st, &why);
		CHECK(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	unlink(file);
	unlink(lnk);
	unlink(fifo);
	unlink(other);
}

/* Each "<NAME@plt>" objdump labels in file's PLT (.plt, .plt.sec, .plt.got) is what
 * elf_syms__find() names that address; objdump's "*ABS*+0x...@plt" (an IRELATIVE entry) is
 * some NAME@plt.
 * Returns how many labels were checked, -1 when objdump is missing. */
static int check_plt(const char *file)
{
	char cmd[4200], line[1024], name[512];
	unsigned long long addr;
	struct elf_syms *es = elf_syms__open(file);
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got -- '%s' 2>/dev/null",
		 file);
	p = es ? popen(cmd, "r") : NULL;
	if (!p) {
		elf_syms__free(es);
		return -1;
	}
	while (fgets(line, sizeof(line), p)) {
		const char *got;
		__u64 off = 1;

		/* (the header, "<puts@plt-0x10>", is no entry) */
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2 ||
		    strlen(name) < 4 || strcmp(name + strlen(name) - 4, "@plt"))
			continue;
		got = elf_syms__find(es, addr, &off);
		if (!strncmp(name, "*ABS*", 5)) {
			if (!got || !strstr(got, "@plt") || strstr(got, "*ABS*"))
				fprintf(stderr, "    %s: %llx is %s, objdump says %s\n", file, addr,
					got ?: "(none)", name);
			CHECK(got && strstr(got, "@plt") && !strstr(got, "*ABS*"));
		} else if (!got || strcmp(got, name)) {
			fprintf(stderr, "    %s: %llx is %s, objdump says %s\n", file, addr,
				got ?: "(none)", name);
			CHECK(!"a PLT entry named as objdump names it");
		}
		CHECK_INT(off, 0);
		/* the whole entry (8 bytes at least) */
		got = elf_syms__find(es, addr + 7, &off);
		CHECK(got && strstr(got, "@plt"));
		n++;
	}
	pclose(p);
	elf_syms__free(es);
	return n;
}

/* PLT entries get perf's and objdump's names: a program's (lazy .plt), one split for IBT
 * (.plt.sec after -fcf-protection), and libc's, whose .rela.plt mixes IRELATIVE entries in. */
static void test_elf_plt(void)
{
	char prog[4096], ibt[4096], cmd[9000], libc[4096] = "";
	FILE *p;
	int n;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	n = check_plt(prog);
	if (n < 0)
		SKIP("objdump not found");
	CHECK(n > 0);
	fx(ibt, sizeof(ibt), "ibtprog");
	snprintf(cmd, sizeof(cmd), "printf '#include <stdio.h>\n#include <stdlib.h>\n"
		 "int main(int c, char **v) { puts(v[0]); return abs(c) + atoi(v[0]); }\n' | "
		 "cc -O1 -fno-builtin -fcf-protection=full -Wl,-z,ibtplt -x c -o '%s' - 2>/dev/null",
		 ibt);
	if (system(cmd) == 0) {
		CHECK(check_plt(ibt) >= 3);
		unlink(ibt);
	}
	/* the libc this test runs with */
	p = popen("ldd /bin/true 2>/dev/null | awk '/libc\\.so/ {print $3}'", "r");
	if (p && fgets(libc, sizeof(libc), p))
		libc[strcspn(libc, "\n")] = '\0';
	if (p)
		pclose(p);
	if (libc[0])
		CHECK(check_plt(libc) > 0);
}

static void test_elf_find(void)
{
	char prog[4096], lib[4096], junk[4096];
	struct elf_syms *es;
	__u64 a, off = 99, vma, foff;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	fx(lib, sizeof(lib), "libsymtest.so");
	es = elf_syms__open(prog);
	CHECK(es != NULL);
	a = nm_addr(prog, "hot_function");
	CHECK(a != 0);
	CHECK_STR(elf_syms__find(es, a, &off), "hot_function");
	CHECK_INT(off, 0);
	CHECK_STR(elf_syms__find(es, a + 3, &off), "hot_function");
	CHECK_INT(off, 3);
	a = nm_addr(prog, "local_fn");
	CHECK_STR(elf_syms__find(es, a + 1, NULL), "local_fn");
	/* size 0: covers up to the next symbol */
	a = nm_addr(prog, "asm_nosize");
	CHECK_STR(elf_syms__find(es, a + 3, &off), "asm_nosize");
	CHECK_INT(off, 3);
	/* ... and no further: asm_sized follows it */
	a = nm_addr(prog, "asm_sized");
	CHECK_STR(elf_syms__find(es, a, &off), "asm_sized");
	/* a zero-size alias (with a longer name, which would win otherwise) loses to the sized one */
	CHECK_INT(nm_addr(prog, "zz_alias_with_a_long_name"), a);
	CHECK_STR(elf_syms__find(es, a + 2, &off), "asm_sized");
	CHECK_INT(off, 2);
	/* an untyped label in code (ld.so's _start is one) is a function, as perf takes it, up to
	 * the next symbol; one inside a sized function is part of that function */
	a = nm_addr(prog, "asm_entry");
	CHECK_STR(elf_syms__find(es, a + 1, &off), "asm_entry");
	CHECK_INT(off, 1);
	CHECK_STR(elf_syms__find(es, nm_addr(prog, "asm_inner"), &off), "asm_sized");
	CHECK_INT(off, 1);
	/* _init has size 0 too, but must stop at the end of .init: .plt has no symbol */
	if (section_info(prog, ".plt", &vma, &foff))
		CHECK(elf_syms__find(es, vma, NULL) == NULL);
	CHECK(elf_syms__find(es, 0, NULL) == NULL);
	CHECK(elf_syms__find(es, 0xffffffffffffULL, NULL) == NULL);
	elf_syms__free(es);

	es = elf_syms__open(lib);
	CHECK(es != NULL);
	a = nm_addr(lib, "lib_fn");
	CHECK_STR(elf_syms__find(es, a + 2, NULL), "lib_fn");
	if (have_cxx) {
		a = nm_addr(lib, "_ZN2ns6cxx_fnEi");
		CHECK(a != 0);
		CHECK_STR(elf_syms__find(es, a + 1, NULL), "_ZN2ns6cxx_fnEi");
	}
	elf_syms__free(es);

	errno = 0;
	CHECK(elf_syms__open("/nonexistent/file") == NULL && errno == ENOENT);
	errno = 0;
	CHECK(elf_syms__open(fx(junk, sizeof(junk), "lib.c")) == NULL && errno == ENOEXEC);
	CHECK(elf_syms__find(NULL, 0x1000, NULL) == NULL);
	elf_syms__free(NULL);
}

static void test_elf_file_offset_to_vaddr(void)
{
	__u64 a, vma, foff, vaddr = 0;
	struct elf_syms *es;
	char prog[4096];

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	es = elf_syms__open(prog);
	CHECK(es != NULL);
	/* .text: the file offset computed through the section headers maps back to nm's vaddr */
	a = nm_addr(prog, "hot_function");
	CHECK(section_info(prog, ".text", &vma, &foff));
	CHECK(elf_syms__file_offset_to_vaddr(es, a - vma + foff, &vaddr));
	CHECK_INT(vaddr, a);
	/* .data sits in a segment whose vaddr and offset differ in a PIE */
	a = nm_addr(prog, "data_var");
	CHECK(section_info(prog, ".data", &vma, &foff));
	CHECK(vma != foff);
	CHECK(elf_syms__file_offset_to_vaddr(es, a - vma + foff, &vaddr));
	CHECK_INT(vaddr, a);
	CHECK(!elf_syms__file_offset_to_vaddr(es, 1ULL << 40, &vaddr));
	elf_syms__free(es);
}

struct match_ctx {
	int calls;
	int hot_calls;
	__u64 hot_vaddr;
	__u64 hot_off;
	int stop_after;
};

static int on_match(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	struct match_ctx *m = ctx;

	m->calls++;
	if (!strcmp(name, "hot_function") || !strcmp(name, "lib_fn")) {
		m->hot_calls++;
		m->hot_vaddr = vaddr;
		m->hot_off = file_off;
	}
	return m->stop_after && m->calls >= m->stop_after ? 7 : 0;
}

static void test_elf_for_each_match(void)
{
	char prog[4096], lib[4096];
	struct match_ctx m = { 0 };
	struct elf_syms *es;
	__u64 vma, foff;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	fx(lib, sizeof(lib), "libsymtest.so");
	/* -rdynamic: hot_function is in .symtab and .dynsym, and must be reported once */
	es = elf_syms__open(prog);
	CHECK_INT(elf_syms__for_each_match(es, "hot_*", on_match, &m), 0);
	CHECK_INT(m.calls, 1);
	CHECK_INT(m.hot_calls, 1);
	CHECK_INT(m.hot_vaddr, nm_addr(prog, "hot_function"));
	CHECK(section_info(prog, ".text", &vma, &foff));
	CHECK_INT(m.hot_off, m.hot_vaddr - vma + foff);
	memset(&m, 0, sizeof(m));
	CHECK_INT(elf_syms__for_each_match(es, "*_fn", on_match, &m), 0);
	CHECK_INT(m.calls, 1); /* local_fn; lib_fn is only an import here */
	memset(&m, 0, sizeof(m));
	m.stop_after = 2;
	CHECK_INT(elf_syms__for_each_match(es, "*", on_match, &m), 7);
	CHECK_INT(m.calls, 2);
	elf_syms__free(es);

	memset(&m, 0, sizeof(m));
	es = elf_syms__open(lib);
	CHECK_INT(elf_syms__for_each_match(es, "lib_fn", on_match, &m), 0);
	CHECK_INT(m.hot_calls, 1);
	CHECK_INT(m.hot_vaddr, nm_addr(lib, "lib_fn"));
	elf_syms__free(es);
}

/* Is secret_local (only in the debug file's .symtab) found in the stripped binary? */
static bool finds_secret(const char *bin, __u64 secret)
{
	struct elf_syms *es = elf_syms__open(bin);
	const char *name = elf_syms__find(es, secret + 1, NULL);
	bool found = name && !strcmp(name, "secret_local");

	elf_syms__free(es);
	return found;
}

static void test_debuglink(void)
{
	char bin[4096], dbg[4096], root[4096];
	size_t refused;
	__u64 secret;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(bin, sizeof(bin), "dl/prog_dl");
	fx(dbg, sizeof(dbg), "dl/prog_dl.debug");
	fx(root, sizeof(root), "debugroot-dl");
	secret = nm_addr(dbg, "secret_local");
	CHECK(secret != 0);
	CHECK(nm_addr(bin, "secret_local") == 0); /* really stripped */
	CHECK(finds_secret(bin, secret));         /* next to the file */
	/* a link, or a FIFO, in its place: refused without waiting, and counted */
	refused = untrusted_refusals(NULL, 0);
	CHECK_INT(run("mv %s %s.real && ln -s %s.real %s", dbg, dbg, dbg, dbg), 0);
	CHECK(!finds_secret(bin, secret));
	CHECK_INT(run("rm %s && mkdir %s/dl/.debug && mkfifo %s/dl/.debug/prog_dl.debug", dbg, dir,
		      dir), 0);
	CHECK(!finds_secret(bin, secret));
	CHECK_INT(untrusted_refusals(NULL, 0), refused + 2);
	CHECK_INT(run("rm %s/dl/.debug/prog_dl.debug && mv %s.real %s", dir, dbg, dbg), 0);
	CHECK(finds_secret(bin, secret));
	CHECK_INT(run("mv %s %s/dl/.debug/", dbg, dir), 0);
	CHECK(finds_secret(bin, secret));         /* in .debug/ */
	CHECK_INT(run("mkdir -p %s%s/dl && mv %s/dl/.debug/prog_dl.debug %s%s/dl/", root, dir, dir,
		      root, dir), 0);
	CHECK(!finds_secret(bin, secret));        /* not under /usr/lib/debug */
	CHECK_INT(syms_set_debug_root(root), 0);
	CHECK(finds_secret(bin, secret));         /* under the debug root */
	/* a debug file from another build must not be used */
	CHECK_INT(run("echo >> %s%s/dl/prog_dl.debug", root, dir), 0);
	CHECK(!finds_secret(bin, secret));
	CHECK_INT(syms_set_debug_root(NULL), 0);
}

static void test_build_id(void)
{
	char bin[4096], root[4096], cmd[4200], id[256] = "";
	__u64 secret;
	FILE *p;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(bin, sizeof(bin), "bid/prog_bid");
	fx(root, sizeof(root), "debugroot-bid");
	secret = nm_addr(bin, "secret_local");
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: *//p'", bin);
	p = popen(cmd, "r");
	if (!p || !fgets(id, sizeof(id), p))
		id[0] = '\0';
	if (p)
		pclose(p);
	id[strcspn(id, "\n")] = '\0';
	if (strlen(id) < 4)
		SKIP("the linker wrote no build-id");
	CHECK(secret != 0);
	CHECK_INT(run("mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug %s "
		      "%s/.build-id/%.2s/%s.debug && strip --strip-all %s",
		      root, id, bin, root, id, id + 2, bin), 0);
	CHECK(nm_addr(bin, "secret_local") == 0);
	CHECK(!finds_secret(bin, secret));
	CHECK_INT(syms_set_debug_root(root), 0);
	CHECK(finds_secret(bin, secret));
	CHECK_INT(syms_set_debug_root(NULL), 0);
}

static void test_vdso(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	struct syms_cache *sc;
	struct user_sym s;

	if (!fn)
		SKIP("no __vdso_clock_gettime in this process");
	sc = syms_cache__new();
	syms_cache__resolve(sc, getpid(), (uintptr_t)fn + 1, &s);
	CHECK_STR(s.module, "[vdso]");
	CHECK(s.name && strstr(s.name, "clock_gettime"));
	syms_cache__free(sc);
}

static void check_sym(const struct user_sym *s, const char *name, const char *module)
{
	CHECK_STR(s->name, name);
	CHECK_STR(s->module, module);
}

static void test_cache_live_process(void)
{
	char prog[4096], lib[4096], late[4096], map[64], jitmod[64];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	__u64 v[6], vma, foff, bias, late_addr = 0;
	struct user_sym s;
	int n;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	fx(lib, sizeof(lib), "libsymtest.so");
	fx(late, sizeof(late), "liblate.so");
	CHECK_INT(spawn(prog, &c), 0);
	n = read_ptrs(&c, v, 6);
	CHECK_INT(n, 6);
	if (n != 6)
		goto cleanup;
	/* written by "the JIT" before the snapshot: one entry in its anonymous code page, one in
	 * no mapping at all, one C++ name */
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
	snprintf(jitmod, sizeof(jitmod), "[JIT] tid %d", c.pid);
	{
		char text[256];

		snprintf(text, sizeof(text),
			 "%llx 40 jitted_fn one\n0x10000 0x100 unmapped jit\n%llx 10 _ZN3foo3barEv\n",
			 (unsigned long long)v[5], (unsigned long long)v[5] + 0x40);
		CHECK_INT(write_file(map, text), 0);
	}
	sc = syms_cache__new();
	CHECK_INT(syms_cache__snapshot(sc, c.pid), 0);

	/* A library dlopen'ed after the snapshot: the first miss refreshes the snapshot at once
	 * (later misses at most once a second, so this comes before the unmapped lookups). */
	CHECK(dprintf(c.in, "%s\n", late) > 0);
	CHECK_INT(read_ptrs(&c, &late_addr, 1), 1);
	CHECK(late_addr != 0);
	syms_cache__resolve(sc, c.pid, late_addr + 1, &s);
	check_sym(&s, "late_fn", late);

	syms_cache__resolve(sc, c.pid, v[1] + 1, &s);
	check_sym(&s, "hot_function", prog);
	syms_cache__resolve(sc, c.pid, v[2] + 1, &s);
	check_sym(&s, "local_fn", prog);
	syms_cache__resolve(sc, c.pid, v[3] + 1, &s);
	check_sym(&s, "lib_fn", lib);
	if (have_cxx) {
		syms_cache__resolve(sc, c.pid, v[4] + 1, &s);
		check_sym(&s, "ns::cxx_fn(int)", lib);
	}
	syms_cache__resolve(sc, c.pid, v[5] + 8, &s);
	check_sym(&s, "jitted_fn one", jitmod);
	syms_cache__resolve(sc, c.pid, v[5] + 0x41, &s);
	check_sym(&s, "foo::bar()", jitmod);
	syms_cache__resolve(sc, c.pid, 0x10010, &s);
	check_sym(&s, "unmapped jit", jitmod);
	/* no mapping, no JIT entry */
	syms_cache__resolve(sc, c.pid, 0x20000, &s);
	CHECK(s.name == NULL);
	CHECK_STR(s.module, "[unknown]");
	CHECK_INT(s.offset, 0x20000);
	/* mapped but no symbol (.plt): module + file offset, for "prog+0x..." */
	bias = v[1] - nm_addr(prog, "hot_function");
	if (section_info(prog, ".plt", &vma, &foff)) {
		syms_cache__resolve(sc, c.pid, bias + vma + 2, &s);
		CHECK(s.name == NULL);
		CHECK_STR(s.module, prog);
		CHECK_INT(s.offset, foff + 2);
	}
	/* resolved frames carry the module offset too */
	syms_cache__resolve(sc, c.pid, v[1], &s);
	CHECK(section_info(prog, ".text", &vma, &foff));
	CHECK_INT(s.offset, nm_addr(prog, "hot_function") - vma + foff);
	/* still there after the refresh and all the misses */
	syms_cache__resolve(sc, c.pid, late_addr + 1, &s);
	check_sym(&s, "late_fn", late);

cleanup:
	syms_cache__free(sc);
	unlink(map);
	reap(&c);
}

/* A library mapped after the first snapshot and a process that exits before the report: the
 * second look (syms_cache__revisit) while it lives is what still names the library's code. */
static void test_cache_revisit(void)
{
	char prog[4096], late[4096];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	__u64 v[6], late_addr = 0;
	struct user_sym s;
	int n;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	fx(late, sizeof(late), "liblate.so");
	CHECK_INT(spawn(prog, &c), 0);
	n = read_ptrs(&c, v, 6);
	CHECK_INT(n, 6);
	if (n != 6)
		goto cleanup;
	sc = syms_cache__new();
	CHECK_INT(syms_cache__snapshot(sc, c.pid), 0);
	CHECK(dprintf(c.in, "%s\n", late) > 0);
	CHECK_INT(read_ptrs(&c, &late_addr, 1), 1);
	/* too young for a second look yet; then old enough */
	syms_cache__revisit(sc, 3600ULL * 1000000000ULL);
	syms_cache__revisit(sc, 0);
	reap(&c);
	syms_cache__resolve(sc, v[0], late_addr + 1, &s);
	check_sym(&s, "late_fn", late);
cleanup:
	syms_cache__free(sc);
	reap(&c);
}

/* The fixture program of dir (prog and libsymtest.so, "" for the top one) started, its six
 * addresses read into v, and a cache that snapshotted it: the cache, or NULL (checked). */
static struct syms_cache *spawn_snapshotted(const char *dir, char *prog, char *lib, size_t size,
					    struct child *c, __u64 *v)
{
	struct syms_cache *sc;
	char name[64];
	int n;

	snprintf(name, sizeof(name), "%sprog", dir);
	fx(prog, size, name);
	snprintf(name, sizeof(name), "%slibsymtest.so", dir);
	fx(lib, size, name);
	CHECK_INT(spawn(prog, c), 0);
	n = read_ptrs(c, v, 6);
	CHECK_INT(n, 6);
	if (n != 6)
		return NULL;
	sc = syms_cache__new();
	CHECK(sc && syms_cache__snapshot(sc, c->pid) == 0);
	return sc;
}

static void test_cache_after_exit(void)
{
	char prog[4096], lib[4096];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	struct user_sym s;
	__u64 v[6];

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	sc = spawn_snapshotted("gone/", prog, lib, sizeof(prog), &c, v);
	if (!sc)
		goto cleanup;
	/* nothing is parsed yet: the symbol tables are read after the files are gone */
	reap(&c);
	CHECK_INT(unlink(prog), 0);
	CHECK_INT(unlink(lib), 0);
	syms_cache__resolve(sc, v[0], v[1] + 1, &s);
	check_sym(&s, "hot_function", prog);
	syms_cache__resolve(sc, v[0], v[2] + 1, &s);
	check_sym(&s, "local_fn", prog);
	syms_cache__resolve(sc, v[0], v[3] + 1, &s);
	check_sym(&s, "lib_fn", lib);
	if (have_cxx) {
		syms_cache__resolve(sc, v[0], v[4] + 1, &s);
		check_sym(&s, "ns::cxx_fn(int)", lib);
	}
	syms_cache__resolve(sc, v[0], 0x20000, &s);
	CHECK(s.name == NULL);
	CHECK_STR(s.module, "[unknown]");
	/* a process never seen and already gone */
	syms_cache__resolve(sc, 0x7ffffff1, 0x20000, &s);
	CHECK_STR(s.module, "[unknown]");
	CHECK_INT(syms_cache__snapshot(sc, 0x7ffffff0), -ENOENT);
cleanup:
	syms_cache__free(sc);
	reap(&c);
}

/* Over the symbols' budget, the files looked up least lately lose their parsed symbols at a sweep
 * (those looked up in the last ten sweeps keep them), mapped or not, and a later lookup parses
 * them again: a long run holds the symbols of what it samples now, not of every program it saw. */
static void test_cache_syms_budget(void)
{
	char prog[4096], lib[4096];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	struct syms_cache_mem m;
	struct user_sym s;
	__u64 v[6];

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	sc = spawn_snapshotted("", prog, lib, sizeof(prog), &c, v);
	if (!sc)
		goto cleanup;
	for (int i = 1; i <= 3; i += 2) {
		syms_cache__resolve(sc, c.pid, v[i] + 1, &s);
		check_sym(&s, i == 1 ? "hot_function" : "lib_fn", i == 1 ? prog : lib);
	}
	syms_cache__set_syms_budget(sc, 1);
	/* looked up lately: kept over the budget */
	for (int i = 0; i < 9; i++)
		syms_cache__sweep_files(sc);
	syms_cache__mem(sc, &m);
	CHECK(m.parsed >= 2 && m.sym_bytes > 0);
	CHECK_INT(m.syms_evicted, 0);
	syms_cache__sweep_files(sc);
	syms_cache__mem(sc, &m);
	CHECK_INT(m.parsed, 0);
	CHECK(m.syms_evicted >= 2);
	CHECK(m.files >= 2); /* the process still maps them: only their symbols went */
	/* parsed again */
	for (int i = 1; i <= 3; i += 2) {
		syms_cache__resolve(sc, c.pid, v[i] + 1, &s);
		check_sym(&s, i == 1 ? "hot_function" : "lib_fn", i == 1 ? prog : lib);
	}
	syms_cache__mem(sc, &m);
	CHECK(m.parsed >= 2 && m.sym_bytes > 0);
cleanup:
	syms_cache__free(sc);
	reap(&c);
}

/* Can we open /proc/PID/map_files links (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)? */
static bool map_files_openable(void)
{
	unsigned long long a, b;
	char line[4200], path[128];
	bool ok = false;
	FILE *f;
	int fd;

	/* the first file-backed mapping: anonymous ones have no map_files entry */
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strchr(line, '/') || sscanf(line, "%llx-%llx", &a, &b) != 2)
			continue;
		snprintf(path, sizeof(path), "/proc/self/map_files/%llx-%llx", a, b);
		fd = open(path, O_RDONLY);
		ok = fd >= 0;
		if (fd >= 0)
			close(fd);
		break;
	}
	if (f)
		fclose(f);
	return ok;
}

/* Files deleted before the snapshot: only /proc/PID/map_files still reaches them. */
static void test_cache_deleted_before_snapshot(void)
{
	char prog[4096], lib[4096];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	struct user_sym s;
	__u64 v[6];

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	if (!map_files_openable())
		SKIP("opening /proc/PID/map_files needs CAP_SYS_ADMIN");
	fx(prog, sizeof(prog), "gone2/prog");
	fx(lib, sizeof(lib), "gone2/libsymtest.so");
	CHECK_INT(spawn(prog, &c), 0);
	CHECK_INT(read_ptrs(&c, v, 6), 6);
	CHECK_INT(unlink(prog), 0);
	CHECK_INT(unlink(lib), 0);
	sc = syms_cache__new();
	CHECK_INT(syms_cache__snapshot(sc, c.pid), 0);
	reap(&c);
	/* module shown without the " (deleted)" that /proc/PID/maps appends */
	syms_cache__resolve(sc, v[0], v[1] + 1, &s);
	check_sym(&s, "hot_function", prog);
	syms_cache__resolve(sc, v[0], v[3] + 1, &s);
	check_sym(&s, "lib_fn", lib);
	syms_cache__free(sc);
}

/* The executable mappings of process pid as mmap records would tell them (read here from
 * /proc/PID/maps, as the kernel's records carry the same fields). */
static int record_maps(__u32 pid, struct syms_mmap *m, char (*paths)[4096], int max)
{
	unsigned long long a, b, off, ino;
	unsigned major, minor;
	char line[4200], perms[8], path[4096];
	int n = 0;
	FILE *f;

	snprintf(line, sizeof(line), "/proc/%u/maps", pid);
	f = fopen(line, "r");
	while (f && n < max && fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &a, &b, perms, &off, &major,
			   &minor, &ino, path) < 7 || perms[2] != 'x')
			continue;
		snprintf(paths[n], sizeof(paths[n]), "%s", ino ? path : path[0] ? path : "//anon");
		m[n] = (struct syms_mmap){ .start = a, .len = b - a, .pgoff = off,
					   .dev = makedev(major, minor), .ino = ino,
					   .path = paths[n] };
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* A process born while records are read, gone before its first sample is symbolized: its
 * exec and mappings, told by records, name its frames with no /proc read; its fork child
 * starts with its mappings; a record names a file by (dev, inode), and another file under the
 * name is refused. */
static void test_cache_records(void)
{
	static char paths[32][4096];
	struct syms_mmap m[32], bad;
	char prog[4096], lib[4096];
	struct child c = { .in = -1 };
	struct syms_cache *sc = NULL;
	__u32 pid, child, other;
	struct user_sym s;
	__u64 v[6];
	int n, i;

	if (!fixtures_ok)
		SKIP("fixtures failed to build");
	fx(prog, sizeof(prog), "prog");
	fx(lib, sizeof(lib), "libsymtest.so");
	CHECK_INT(spawn(prog, &c), 0);
	CHECK_INT(read_ptrs(&c, v, 6), 6);
	pid = c.pid;
	n = record_maps(pid, m, paths, 32);
	CHECK(n >= 3);
	reap(&c);
	/* pids no process has: the records are all there is */
	child = 0x7ffffff2;
	other = 0x7ffffff3;
	sc = syms_cache__new();
	syms_cache__exits_told(sc);
	syms_cache__records_on(sc, true);
	CHECK_INT(syms_cache__record_exec(sc, pid, 10), 0);
	for (i = 0; i < n; i++)
		CHECK_INT(syms_cache__record_mmap(sc, pid, 11, &m[i]), 0);
	CHECK_INT(syms_cache__record_fork(sc, child, pid, 12), 0);
	/* announced before its exec (the unwinder writes no list for that), or after it */
	CHECK(syms_cache__execed_after(sc, pid, 9));
	CHECK(!syms_cache__execed_after(sc, pid, 10));
	CHECK(!syms_cache__execed_after(sc, pid, 13));
	/* a fork is no exec: the child's announcements all stand */
	CHECK(!syms_cache__execed_after(sc, child, 11));
	/* an older fork record read after the exec (another CPU's ring) changes nothing */
	CHECK_INT(syms_cache__record_fork(sc, pid, 1, 5), 0);
	CHECK(syms_cache__record_exit(sc, pid, 20));
	CHECK(!syms_cache__record_exit(sc, pid, 21));
	/* its first sample's announcement, after its exit: nothing to read, nothing lost */
	CHECK_INT(syms_cache__snapshot(sc, pid), -ESRCH);
	syms_cache__resolve(sc, pid, v[1] + 1, &s);
	check_sym(&s, "hot_function", prog);
	syms_cache__resolve(sc, pid, v[3] + 1, &s);
	check_sym(&s, "lib_fn", lib);
	syms_cache__resolve(sc, child, v[2] + 1, &s);
	check_sym(&s, "local_fn", prog);
	/* a garbage frame of a told process: no refresh from /proc (it has no /proc entry) */
	syms_cache__resolve(sc, pid, 0x20000, &s);
	CHECK_STR(s.module, "[unknown]");
	/* the same path under another inode: not the file that was mapped */
	printf("    (the next line is the expected refusal)\n");
	fflush(stdout);
	CHECK_INT(syms_cache__record_exec(sc, other, 30), 0);
	for (i = 0; i < n; i++) {
		if (strcmp(m[i].path, prog))
			continue;
		bad = m[i];
		bad.ino += 1ULL << 40; /* no file's: ^1 could be the next fixture's */
		CHECK_INT(syms_cache__record_mmap(sc, other, 31, &bad), 0);
	}
	syms_cache__resolve(sc, other, v[1] + 1, &s);
	CHECK(s.name == NULL);
	CHECK_STR(s.module, prog);
	syms_cache__free(sc);
}

/* A mapping told over part of an older one keeps the rest of it, at the right file offsets. */
static void test_cache_records_overlap(void)
{
	static char paths[64][4096];
	void *fn = dlsym(RTLD_DEFAULT, "getppid");
	__u32 pid = 0x7ffffff4, self = getpid();
	long page = sysconf(_SC_PAGESIZE);
	struct syms_mmap m[64], anon;
	struct syms_cache *sc;
	struct user_sym want, s;
	char want_name[256];
	int n, i, hit = -1;
	__u64 addr = (uintptr_t)fn;

	n = record_maps(self, m, paths, 64);
	for (i = 0; i < n; i++)
		if (addr >= m[i].start && addr < m[i].start + m[i].len)
			hit = i;
	if (!fn || hit < 0 || addr - m[hit].start < 2 * (__u64)page)
		SKIP("getppid not past the second page of an executable mapping");
	sc = syms_cache__new();
	syms_cache__resolve(sc, self, addr, &want);
	CHECK(want.name != NULL);
	snprintf(want_name, sizeof(want_name), "%s", want.name ? want.name : "");
	/* times from another clock: no announcement is taken as older than an exec */
	syms_cache__records_on(sc, false);
	CHECK_INT(syms_cache__record_exec(sc, pid, 1), 0);
	CHECK(!syms_cache__execed_after(sc, pid, 0));
	for (i = 0; i < n; i++)
		CHECK_INT(syms_cache__record_mmap(sc, pid, 2, &m[i]), 0);
	/* anonymous code over the mapping's second page (a JIT's MAP_FIXED) */
	anon = (struct syms_mmap){ .start = m[hit].start + page, .len = page, .path = "//anon" };
	CHECK_INT(syms_cache__record_mmap(sc, pid, 3, &anon), 0);
	syms_cache__resolve(sc, pid, addr, &s);
	CHECK_STR(s.name, want_name);
	CHECK_INT(s.offset, want.offset);
	syms_cache__resolve(sc, pid, m[hit].start + page + 8, &s);
	CHECK(s.name == NULL);
	CHECK_STR(s.module, "[unknown]");
	syms_cache__resolve(sc, pid, m[hit].start + 8, &s);
	CHECK_STR(s.module, m[hit].path);
	syms_cache__free(sc);
}

/* 200k lookups over this process's own code (libc, ld.so, this binary): a big report's worth. */
static void test_cache_speed(void)
{
	struct range { __u64 start, end; } r[64];
	int nr = 0, resolved = 0, i, pass;
	__u32 self = getpid();
	char line[4200], perms[8];
	unsigned long long a, b;
	struct syms_cache *sc;
	struct timespec t0;
	__u64 x, addr;
	struct user_sym s;
	double ms;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f) && nr < 64)
		if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x' &&
		    strchr(line, '/'))
			r[nr++] = (struct range){ a, b };
	if (f)
		fclose(f);
	if (!nr)
		SKIP("no executable file mappings in /proc/self/maps");
	sc = syms_cache__new();
	/* the first pass parses every file (libc, ld.so, this binary); the second only looks up */
	for (pass = 0; pass < 2; pass++) {
		x = 88172645463325252ULL;
		resolved = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (i = 0; i < 200000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			addr = r[i % nr].start + x % (r[i % nr].end - r[i % nr].start);
			syms_cache__resolve(sc, self, addr, &s);
			resolved += s.name != NULL;
		}
		ms = ms_since(&t0);
		printf("    # syms_cache__resolve: 200000 addresses in %.1f ms (%d named), %s\n", ms,
		       resolved, pass ? "cached" : "parsing included");
	}
	CHECK(resolved > 0);
	syms_cache__free(sc);
}

int main(void)
{
	fixtures_ok = build_fixtures();
	if (!fixtures_ok)
		printf("    # could not build fixtures in %s\n", dir);
	RUN(test_demangle);
	RUN(test_ksyms_fixture);
	RUN(test_ksyms_pfx);
	RUN(test_ksyms_proc);
	RUN(test_ksyms_kept);
	RUN(test_perf_map);
	RUN(test_perf_map_open);
	RUN(test_untrusted_open);
	RUN(test_elf_find);
	RUN(test_elf_plt);
	RUN(test_elf_file_offset_to_vaddr);
	RUN(test_elf_for_each_match);
	RUN(test_debuglink);
	RUN(test_build_id);
	RUN(test_vdso);
	RUN(test_cache_live_process);
	RUN(test_cache_after_exit);
	RUN(test_cache_syms_budget);
	RUN(test_cache_revisit);
	RUN(test_cache_deleted_before_snapshot);
	RUN(test_cache_records);
	RUN(test_cache_records_overlap);
	RUN(test_cache_speed);
	if (dir_made && !getenv("KEEP_FIXTURES"))
		run("rm -rf '%s'", dir);
	TESTS_DONE();
}
