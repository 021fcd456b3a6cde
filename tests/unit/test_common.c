/* Option parsing helpers: numbers, durations, id and CPU lists, and their errors; growing arrays. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "core/child.h"
#include "core/common.h"
#include "core/grow.h"
#include "test.h"

static void test_parse_u64(void)
{
	__u64 v = 0;

	CHECK_INT(parse_u64("99", 1, 1000, &v), 0);
	CHECK_INT(v, 99);
	CHECK_INT(parse_u64("0", 1, 1000, &v), -ERANGE);
	CHECK_INT(parse_u64("1001", 1, 1000, &v), -ERANGE);
	CHECK_INT(parse_u64("abc", 1, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64("12abc", 1, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64("", 1, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64("-5", 0, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64("+5", 0, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64(" 5", 0, 1000, &v), -EINVAL);
	CHECK_INT(parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
}

static void test_parse_seconds(void)
{
	double d = 0;

	CHECK_INT(parse_seconds("10", &d), 0);
	CHECK(d == 10.0);
	CHECK_INT(parse_seconds("0.25", &d), 0);
	CHECK(d == 0.25);
	CHECK_INT(parse_seconds("0", &d), -ERANGE);
	CHECK_INT(parse_seconds("-1", &d), -EINVAL);
	CHECK_INT(parse_seconds("1s", &d), -EINVAL);
	CHECK_INT(parse_seconds("nan", &d), -EINVAL);
	CHECK_INT(parse_seconds("inf", &d), -ERANGE);
}

static void test_parse_percent(void)
{
	double p = -1;

	CHECK_INT(parse_percent("0.5", &p), 0);
	CHECK(p == 0.5);
	CHECK_INT(parse_percent("100", &p), 0);
	CHECK_INT(parse_percent("101", &p), -EINVAL);
	CHECK_INT(parse_percent("-1", &p), -EINVAL);
	CHECK_INT(parse_percent("x", &p), -EINVAL);
}

static void test_parse_id_list(void)
{
	__u32 ids[4];

	CHECK_INT(parse_id_list("1,22,333", ids, 4), 3);
	CHECK_INT(ids[0], 1);
	CHECK_INT(ids[2], 333);
	CHECK_INT(parse_id_list("1,x", ids, 4), -EINVAL);
	CHECK_INT(parse_id_list("0", ids, 4), -ERANGE);
	CHECK_INT(parse_id_list("1,2,3,4,5", ids, 4), -E2BIG);
	CHECK_INT(parse_id_list("", ids, 4), -EINVAL);
	CHECK_INT(parse_id_list(",", ids, 4), -EINVAL);
}

static void test_parse_cpu_list(void)
{
	bool cpus[8] = {};

	CHECK_INT(parse_cpu_list("0,2-3", cpus, 8), 0);
	CHECK(cpus[0] && !cpus[1] && cpus[2] && cpus[3] && !cpus[4]);
	CHECK_INT(parse_cpu_list("8", cpus, 8), -ERANGE);
	CHECK_INT(parse_cpu_list("6-9", cpus, 8), -ERANGE);
	CHECK_INT(parse_cpu_list("3-1", cpus, 8), -EINVAL);
	CHECK_INT(parse_cpu_list("1-x", cpus, 8), -EINVAL);
	CHECK_INT(parse_cpu_list("a", cpus, 8), -EINVAL);
}

static void test_is_negative_number(void)
{
	CHECK(is_negative_number("-1"));
	CHECK(is_negative_number("-0.5"));
	CHECK(!is_negative_number("-F"));
	CHECK(!is_negative_number("-"));
	CHECK(!is_negative_number("5"));
}

/* Runs `touch MARK` as -- COMMAND from a process that releases it or dies first; returns
 * whether MARK was made once the command is gone. */
static bool command_ran(bool release)
{
	char dir[] = "/tmp/bpfprof-test-child-XXXXXX", mark[64], byte;
	int done[2], status = -1;
	bool ran;
	pid_t p;

	if (!mkdtemp(dir) || pipe(done))
		return true;
	snprintf(mark, sizeof(mark), "%s/ran", dir);
	p = fork();
	if (p == 0) {
		char *argv[] = { "touch", mark, NULL };
		struct child c;

		/* the command inherits done[1]: done[0] reads EOF once it (or touch) is gone */
		close(done[0]);
		if (child_start(&c, argv))
			_exit(1);
		if (release && (child_release(&c, "touch") || waitpid(c.pid, NULL, 0) != c.pid))
			_exit(1);
		_exit(0); /* not released: as bpfprof killed during setup */
	}
	close(done[1]);
	CHECK(waitpid(p, &status, 0) == p && WIFEXITED(status) && !WEXITSTATUS(status));
	while (read(done[0], &byte, 1) > 0)
		;
	close(done[0]);
	ran = !access(mark, F_OK);
	unlink(mark);
	rmdir(dir);
	return ran;
}

static void test_child_gate(void)
{
	CHECK(command_ran(true));
	/* bpfprof gone (SIGKILL, a crash) with the command at its gate: it must never run */
	CHECK(!command_ran(false));
}

/* Room doubled from 16 until it holds what is asked, new elements zeroed on request, the
 * array and its room untouched when the size would overflow. */
static void test_array_grow(void)
{
	__u32 *v = NULL;
	size_t cap = 0;

	CHECK_INT(ARRAY_GROW(v, cap, 0), 0);
	CHECK(v == NULL && cap == 0);
	CHECK_INT(ARRAY_GROW_ZEROED(v, cap, 1), 0);
	CHECK_INT(cap, 16);
	for (size_t i = 0; i < cap; i++)
		CHECK_INT(v[i], 0);
	v[15] = 7;
	CHECK_INT(ARRAY_GROW_ZEROED(v, cap, 100), 0);
	CHECK_INT(cap, 128);
	CHECK_INT(v[15], 7);
	CHECK_INT(v[16], 0);
	CHECK_INT(v[127], 0);
	CHECK_INT(ARRAY_GROW(v, cap, 128), 0);  /* already there: nothing moves */
	CHECK_INT(cap, 128);
	CHECK_INT(ARRAY_GROW(v, cap, SIZE_MAX / 2), -ENOMEM);
	CHECK_INT(ARRAY_GROW(v, cap, SIZE_MAX), -ENOMEM);
	CHECK_INT(cap, 128);
	CHECK_INT(v[15], 7);
	free(v);
}

int main(void)
{
	RUN(test_parse_u64);
	RUN(test_parse_seconds);
	RUN(test_parse_percent);
	RUN(test_parse_id_list);
	RUN(test_parse_cpu_list);
	RUN(test_is_negative_number);
	RUN(test_child_gate);
	RUN(test_array_grow);
	TESTS_DONE();
}
