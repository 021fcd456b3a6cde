/* Option parsing helpers: numbers, durations, id and CPU lists, and their errors. */
#include <errno.h>
#include <stdint.h>
#include "core/common.h"
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

int main(void)
{
	RUN(test_parse_u64);
	RUN(test_parse_seconds);
	RUN(test_parse_percent);
	RUN(test_parse_id_list);
	RUN(test_parse_cpu_list);
	RUN(test_is_negative_number);
	TESTS_DONE();
}
