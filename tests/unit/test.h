/* Minimal unit-test harness: each test prints "ok - NAME", "not ok - NAME" or
 * "skip - NAME: REASON"; tests/run.sh counts those lines across every test program. */
#ifndef BPFPROF_TEST_H
#define BPFPROF_TEST_H
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static int test_failed_now;
static int test_skipped_now;
static const char *test_skip_reason;
static int tests_failed_total;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			printf("    check failed: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			test_failed_now = 1;                                          \
		}                                                                     \
	} while (0)

#define CHECK_STR(got, want)                                                          \
	do {                                                                          \
		const char *g_ = (got), *w_ = (want);                                 \
		if (!g_ || !w_ || strcmp(g_, w_)) {                                   \
			printf("    check failed: %s:%d: %s == \"%s\", got \"%s\"\n",    \
			       __FILE__, __LINE__, #got, w_ ? w_ : "(null)",           \
			       g_ ? g_ : "(null)");                                   \
			test_failed_now = 1;                                          \
		}                                                                     \
	} while (0)

#define CHECK_INT(got, want)                                                          \
	do {                                                                          \
		long long g_ = (long long)(got), w_ = (long long)(want);              \
		if (g_ != w_) {                                                       \
			printf("    check failed: %s:%d: %s == %lld, got %lld\n",       \
			       __FILE__, __LINE__, #got, w_, g_);                     \
			test_failed_now = 1;                                          \
		}                                                                     \
	} while (0)

#define SKIP(reason)                                                                  \
	do {                                                                          \
		test_skipped_now = 1;                                                 \
		test_skip_reason = (reason);                                          \
		return;                                                               \
	} while (0)

#define RUN(fn)                                                                       \
	do {                                                                          \
		test_failed_now = test_skipped_now = 0;                               \
		fn();                                                                 \
		if (test_skipped_now)                                                 \
			printf("skip - %s: %s\n", #fn, test_skip_reason ? test_skip_reason : "");             \
		else {                                                                \
			printf("%s - %s\n", test_failed_now ? "not ok" : "ok", #fn);  \
			tests_failed_total += test_failed_now;                        \
		}                                                                     \
		fflush(stdout);                                                       \
	} while (0)

#define TESTS_DONE() return tests_failed_total ? 1 : 0

/* The fixture object NAME the Makefile builds next to the test program (build/tests/fixtures/,
 * or build/asan/tests/fixtures/) into path; whether it is there. */
static inline int test_fixture(const char *name, char *path, size_t size)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return 0;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	n = snprintf(path, size, "%s/fixtures/%s", slash ? self : ".", name);
	return n > 0 && (size_t)n < size && access(path, R_OK) == 0;
}

/* Reads a whole stream (e.g. an open_memstream or tmpfile) into a malloc'd string. */
static inline char *test_slurp(FILE *f)
{
	long n;
	char *buf;

	fflush(f);
	n = ftell(f);
	buf = calloc(1, n + 1);
	rewind(f);
	if (fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		return NULL;
	}
	return buf;
}
#endif
