// SPDX-License-Identifier: GPL-2.0
/* Event specs: parsing, near matches, library names, syscall numbers, the ld.so cache reader. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "probe/probe.h"

static struct probe_spec spec;
static char why[512];

static int parse(const char *s)
{
	why[0] = '\0';
	return probe_spec_parse(s, &spec, why, sizeof(why));
}

static void test_parse_kernel_functions(void)
{
	CHECK_INT(parse("vfs_read"), 0);
	CHECK_INT(spec.kind, PROBE_KFUNC);
	CHECK_STR(spec.name, "vfs_read");
	CHECK_INT(parse("k:tcp_*"), 0);
	CHECK_INT(spec.kind, PROBE_KFUNC);
	CHECK_STR(spec.name, "tcp_*");
	CHECK_INT(parse("k:"), -EINVAL);
	CHECK(strstr(why, "empty name") != NULL);
	CHECK_INT(parse("k:a:b"), -EINVAL);
	CHECK(strstr(why, "too many ':'") != NULL);
}

static void test_parse_user_functions(void)
{
	CHECK_INT(parse("u:/usr/bin/bash:readline"), 0);
	CHECK_INT(spec.kind, PROBE_UFUNC);
	CHECK(!spec.lib_or_tp);
	CHECK_STR(spec.target, "/usr/bin/bash");
	CHECK_STR(spec.name, "readline");
	/* u:LIB:FUNC is a library, never a tracepoint */
	CHECK_INT(parse("u:c:str*"), 0);
	CHECK_INT(spec.kind, PROBE_UFUNC);
	CHECK(!spec.lib_or_tp);
	CHECK_STR(spec.target, "c");
	CHECK_STR(spec.name, "str*");
	/* PATH:FUNC without the prefix: a '/' makes it a path */
	CHECK_INT(parse("./build/funcs:slow_op"), 0);
	CHECK_INT(spec.kind, PROBE_UFUNC);
	CHECK(!spec.lib_or_tp);
	CHECK_STR(spec.target, "./build/funcs");
	/* a path may hold ':' itself; the function is after the last one */
	CHECK_INT(parse("u:/tmp/a:b/prog:main"), 0);
	CHECK_STR(spec.target, "/tmp/a:b/prog");
	CHECK_STR(spec.name, "main");
	CHECK_INT(parse("u:foo"), -EINVAL);
	CHECK(strstr(why, "u:PATH:FUNC") != NULL);
	CHECK_INT(parse("u:/bin/true:"), -EINVAL);
	CHECK(strstr(why, "empty function") != NULL);
}

/* perf probe's FUNC%return */
static void test_parse_return(void)
{
	CHECK_INT(parse("u:/bin/prog:work%return"), 0);
	CHECK(spec.ret);
	CHECK_STR(spec.name, "work");
	CHECK_STR(spec.target, "/bin/prog");
	CHECK_INT(parse("k:vfs_read%return"), 0);
	CHECK(spec.ret && spec.kind == PROBE_KFUNC);
	CHECK_STR(spec.name, "vfs_read");
	CHECK_INT(parse("u:/bin/prog:work"), 0);
	CHECK(!spec.ret);
	CHECK_INT(parse("t:sched:sched_switch%return"), -EINVAL);
	CHECK(strstr(why, "applies to functions") != NULL);
	CHECK_INT(parse("k:%return"), -EINVAL);
	CHECK(strstr(why, "empty function") != NULL);
}

static void test_parse_lib_or_tracepoint(void)
{
	/* "A:B" is decided at resolution: a tracepoint category if one exists, else a library */
	CHECK_INT(parse("c:malloc"), 0);
	CHECK_INT(spec.kind, PROBE_UFUNC);
	CHECK(spec.lib_or_tp);
	CHECK_STR(spec.target, "c");
	CHECK_STR(spec.name, "malloc");
	CHECK_INT(parse("syscalls:sys_enter_*"), 0);
	CHECK(spec.lib_or_tp);
	CHECK_STR(spec.target, "syscalls");
	CHECK_STR(spec.name, "sys_enter_*");
	CHECK_INT(parse(":malloc"), -EINVAL);
	CHECK_INT(parse("c:"), -EINVAL);
}

static void test_parse_tracepoints_and_syscalls(void)
{
	CHECK_INT(parse("t:block:block_rq_*"), 0);
	CHECK_INT(spec.kind, PROBE_TP);
	CHECK_STR(spec.target, "block");
	CHECK_STR(spec.name, "block_rq_*");
	CHECK_INT(parse("t:block"), -EINVAL);
	CHECK(strstr(why, "t:CATEGORY:NAME") != NULL);
	CHECK_INT(parse("t:a:b:c"), -EINVAL);
	CHECK_INT(parse("sys:read"), 0);
	CHECK_INT(spec.kind, PROBE_SYSCALL);
	CHECK_STR(spec.name, "read");
	CHECK_INT(parse("sys:"), -EINVAL);
}

static void test_parse_bad_prefix(void)
{
	CHECK_INT(parse("q:a:b"), -EINVAL);
	CHECK_STR(why, "unknown prefix 'q:' in 'q:a:b' (expected k:, u:, t: or sys:)");
	CHECK_INT(parse("kprobe:vfs_read:x"), -EINVAL);
	CHECK(strstr(why, "unknown prefix 'kprobe:'") != NULL);
	CHECK_INT(parse(""), -EINVAL);
	CHECK_STR(why, "empty event spec");
}

static void test_near_matches(void)
{
	static const char *const cands[] = { "vfs_read", "vfs_readv", "vfs_write", "vcs_read",
					     "do_sys_open", "ksys_read", "sys_enter_getppid" };
	size_t n = sizeof(cands) / sizeof(cands[0]);
	char buf[256];

	/* one typo away first, then two, shorter names before longer ones */
	CHECK_INT(probe_near_matches("vfs_reaad", cands, n, 3, buf, sizeof(buf)), 3);
	CHECK_STR(buf, "vfs_read, vcs_read, vfs_readv");
	/* a name that contains what was asked counts as near */
	CHECK_INT(probe_near_matches("getppid", cands, n, 5, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "sys_enter_getppid");
	/* nothing close: empty */
	CHECK_INT(probe_near_matches("zzzzzzzz", cands, n, 5, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "");
	/* the exact name is not a suggestion */
	CHECK_INT(probe_near_matches("vfs_write", cands, n, 5, buf, sizeof(buf)), 0);
	/* a short buffer keeps whole names only */
	CHECK(probe_near_matches("vfs_reaad", cands, n, 3, buf, 12) <= 1);
	CHECK(strlen(buf) < 12);
}

static void test_lib_matches(void)
{
	CHECK(probe_lib_matches("c", "libc.so.6"));
	CHECK(probe_lib_matches("libc", "libc.so.6"));
	CHECK(probe_lib_matches("libc.so", "libc.so.6"));
	CHECK(probe_lib_matches("libc.so.6", "libc.so.6"));
	CHECK(probe_lib_matches("pthread", "libpthread.so.0"));
	CHECK(probe_lib_matches("z", "libz.so.1"));
	CHECK(!probe_lib_matches("z", "libz3.so.4"));
	CHECK(!probe_lib_matches("c", "libcap.so.2"));
	CHECK(!probe_lib_matches("c", "libc++.so.1"));
	CHECK(!probe_lib_matches("libc.so.6", "libc.so.7"));
	/* an executable by its file name */
	CHECK(probe_lib_matches("funcs", "funcs"));
	CHECK(!probe_lib_matches("func", "funcs"));
}

static void test_syscall_numbers(void)
{
#if defined(__x86_64__)
	CHECK_INT(probe_syscall_nr("read"), 0);
	CHECK_INT(probe_syscall_nr("getppid"), 110);
	/* tracepoints carry the entry point's name: sys_newstat is syscall 4 */
	CHECK_INT(probe_syscall_nr("newstat"), 4);
	CHECK_INT(probe_syscall_nr("umount"), 166);
	/* newer than the build's headers, from the kernel's table */
	CHECK_INT(probe_syscall_nr("mseal"), 462);
	CHECK_INT(probe_syscall_nr("cachestat"), 451);
#else
	CHECK(probe_syscall_nr("getppid") >= 0);
#endif
	CHECK_INT(probe_syscall_nr("no_such_syscall"), -1);
}

/* A cache in glibc's new format: header, entries, then the strings they point to. */
static int write_cache(const char *path, bool old_prefix)
{
	static const struct { __s32 flags; const char *key, *value; } libs[] = {
		{ 0x0003, "libc.so.6", "/lib32/libc.so.6" },          /* 32-bit: not ours */
		{ 0x0303, "libz3.so.4", "/lib/x86_64-linux-gnu/libz3.so.4" },
		{ 0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1" },
		{ 0x0303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6" },
	};
	enum { N = sizeof(libs) / sizeof(libs[0]) };
	unsigned char buf[4096] = {};
	size_t base = 0, strs, off;
	__u32 v;
	FILE *f;

	if (old_prefix) {
		/* "ld.so-1.7.0", nlibs 1, one 12-byte entry, then 8-byte alignment */
		memcpy(buf, "ld.so-1.7.0", 11);
		v = 1;
		memcpy(buf + 11, &v, 4);
		base = (11 + 4 + 12 + 7) & ~7UL;
	}
	memcpy(buf + base, "glibc-ld.so.cache1.1", 20);
	v = N;
	memcpy(buf + base + 20, &v, 4);
	strs = 48 + N * 24;
	off = strs;
	for (int i = 0; i < N; i++) {
		unsigned char *e = buf + base + 48 + i * 24;
		__u32 key = off, value;

		memcpy(buf + base + off, libs[i].key, strlen(libs[i].key) + 1);
		off += strlen(libs[i].key) + 1;
		value = off;
		memcpy(buf + base + off, libs[i].value, strlen(libs[i].value) + 1);
		off += strlen(libs[i].value) + 1;
		memcpy(e, &libs[i].flags, 4);
		memcpy(e + 4, &key, 4);
		memcpy(e + 8, &value, 4);
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fwrite(buf, 1, base + off, f);
	return fclose(f);
}

static void test_ldcache_fixture(void)
{
	char path[] = "/tmp/test_probe.XXXXXX", out[256];
	char **names = NULL;
	size_t nr = 0;
	int fd = mkstemp(path);

	if (fd < 0)
		SKIP("cannot create a temporary file");
	close(fd);
	for (int old = 0; old < 2; old++) {
		CHECK_INT(write_cache(path, old), 0);
#if defined(__x86_64__)
		CHECK_INT(probe_ldcache_lookup(path, "c", out, sizeof(out), NULL, NULL), 0);
		CHECK_STR(out, "/lib/x86_64-linux-gnu/libc.so.6");
		CHECK_INT(probe_ldcache_lookup(path, "z", out, sizeof(out), NULL, NULL), 0);
		CHECK_STR(out, "/lib/x86_64-linux-gnu/libz.so.1");
		CHECK_INT(probe_ldcache_lookup(path, "zz", out, sizeof(out), &names, &nr), -ENOENT);
		CHECK_INT(nr, 3);
		CHECK_STR(nr ? names[0] : NULL, "libz3.so.4");
		for (size_t i = 0; i < nr; i++)
			free(names[i]);
		free(names);
		names = NULL;
#endif
	}
	/* truncated or foreign files are errors, not crashes */
	truncate(path, 30);
	CHECK_INT(probe_ldcache_lookup(path, "c", out, sizeof(out), NULL, NULL), -EINVAL);
	unlink(path);
	CHECK_INT(probe_ldcache_lookup("/nonexistent/ld.so.cache", "c", out, sizeof(out), NULL, NULL),
		  -ENOENT);
}

static void test_ldcache_system(void)
{
	char out[4096];

	if (access("/etc/ld.so.cache", R_OK))
		SKIP("no /etc/ld.so.cache on this system");
	CHECK_INT(probe_ldcache_lookup("/etc/ld.so.cache", "c", out, sizeof(out), NULL, NULL), 0);
	CHECK(strstr(out, "libc.so") != NULL);
	CHECK(access(out, R_OK) == 0);
}

int main(void)
{
	RUN(test_parse_kernel_functions);
	RUN(test_parse_user_functions);
	RUN(test_parse_return);
	RUN(test_parse_lib_or_tracepoint);
	RUN(test_parse_tracepoints_and_syscalls);
	RUN(test_parse_bad_prefix);
	RUN(test_near_matches);
	RUN(test_lib_matches);
	RUN(test_syscall_numbers);
	RUN(test_ldcache_fixture);
	RUN(test_ldcache_system);
	TESTS_DONE();
}
