/* --filter's parser (user/probe/filter.c): perf's / ftrace's syntax compiled to the postfix
 * program the kernel runs, checked by evaluating it (filter_eval, the BPF interpreter's
 * reference), and every bad input refused with one line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probe/filter.h"
#include "test.h"

static struct field_list fields;
static struct field_table tab;
static char err[1024];

/* a function's arguments (arg0 signed 64-bit) and the pseudo fields (comm a string) */
static void setup(void)
{
	if (!fields.nr) {
		fields_add_func_args(&fields);
		fields_add_pseudo(&fields);
	}
	memset(&tab, 0, sizeof(tab));
	err[0] = '\0';
}

static int compile(const char *expr)
{
	setup();
	return filter_compile(expr, &fields, true, &tab, err, sizeof(err));
}

/* The filter's value with arg0 = a0, arg1 = a1, comm = comm (fields in the table's order). */
static bool eval(__s64 a0, __s64 a1, const char *comm)
{
	__u64 ints[FILTER_FIELDS_MAX] = {};
	char strs[FILTER_FIELDS_MAX][FIELD_STR_LEN] = {};

	for (__u32 i = 0; i < tab.nr_filt; i++) {
		const struct field_desc *d = &tab.filt[i];

		if (d->src == FSRC_ARG)
			ints[i] = d->offset == 0 ? (__u64)a0 : (__u64)a1;
		else if (d->src == FSRC_COMM)
			snprintf(strs[i], FIELD_STR_LEN, "%s", comm);
	}
	return filter_eval(&tab, ints, (const char (*)[FIELD_STR_LEN])strs);
}

static void test_integers(void)
{
	CHECK_INT(compile("arg0 == 9"), 0);
	CHECK_INT(tab.nr_filt, 1);
	CHECK_INT(tab.nr_ops, 1);
	CHECK(eval(9, 0, "") && !eval(7, 0, ""));
	CHECK_INT(compile("arg0 != 9"), 0);
	CHECK(!eval(9, 0, "") && eval(7, 0, ""));
	CHECK_INT(compile("arg0 < 0"), 0);
	CHECK(eval(-1, 0, "") && !eval(0, 0, ""));
	CHECK_INT(compile("arg0>=0x10"), 0);
	CHECK(eval(16, 0, "") && !eval(15, 0, ""));
	CHECK_INT(compile("arg0 <= -2"), 0);
	CHECK(eval(-2, 0, "") && !eval(-1, 0, ""));
	CHECK_INT(compile("arg0 > 5"), 0);
	CHECK(eval(6, 0, "") && !eval(5, 0, ""));
	CHECK_INT(compile("arg0 & 4"), 0);
	CHECK(eval(12, 0, "") && !eval(8, 0, ""));
	/* a cast makes it unsigned: -1 is then the largest */
	CHECK_INT(compile("arg0:u64 > 5"), 0);
	CHECK(eval(-1, 0, ""));
}

static void test_logic(void)
{
	CHECK_INT(compile("arg0 == 1 || arg0 == 2 && arg1 == 3"), 0);
	/* && binds tighter: 1 || (2 && 3) */
	CHECK(eval(1, 0, "") && eval(2, 3, "") && !eval(2, 4, "") && !eval(3, 3, ""));
	CHECK_INT(tab.nr_filt, 2); /* arg0 once */
	CHECK_INT(compile("(arg0 == 1 || arg0 == 2) && arg1 == 3"), 0);
	CHECK(!eval(1, 0, "") && eval(1, 3, "") && eval(2, 3, ""));
	CHECK_INT(compile("!(arg0 == 1)"), 0);
	CHECK(!eval(1, 0, "") && eval(2, 0, ""));
	CHECK_INT(compile("!arg0 == 1 && !!(arg1 > 0)"), 0);
	CHECK(eval(2, 1, "") && !eval(1, 1, "") && !eval(2, 0, ""));
}

static void test_strings(void)
{
	CHECK_INT(compile("comm == bash"), 0);
	CHECK(eval(0, 0, "bash") && !eval(0, 0, "bash2") && !eval(0, 0, "bas"));
	CHECK_INT(compile("comm != \"bash\""), 0);
	CHECK(!eval(0, 0, "bash") && eval(0, 0, "zsh"));
	CHECK_INT(compile("comm ~ 'kworker*'"), 0);
	CHECK_INT(tab.ops[0].cmp, FCMP_PREFIX);
	CHECK(eval(0, 0, "kworker/0:1") && !eval(0, 0, "xkworker"));
	CHECK_INT(compile("comm ~ \"*sh\""), 0);
	CHECK(eval(0, 0, "bash") && !eval(0, 0, "shell"));
	CHECK_INT(compile("comm ~ \"*or*\""), 0);
	CHECK(eval(0, 0, "kworker") && !eval(0, 0, "bash"));
	CHECK_INT(compile("comm !~ \"*or*\""), 0);
	CHECK(!eval(0, 0, "kworker") && eval(0, 0, "bash"));
	CHECK_INT(compile("comm ~ \"*\""), 0);
	CHECK(eval(0, 0, "") && eval(0, 0, "x"));
	CHECK_INT(compile("comm == a || comm == b || comm == c"), 0);
	CHECK(eval(0, 0, "b") && !eval(0, 0, "d"));
	CHECK_INT(tab.nr_filt, 1);
	CHECK_INT(compile("arg1:string == \"/etc/passwd\""), 0);
	CHECK_INT(tab.filt[0].read, FREAD_USTR);
}

static void test_errors(void)
{
	CHECK_INT(compile("nope == 1"), -ENOENT);
	CHECK(strstr(err, "unknown field 'nope'") && strstr(err, "arg0, arg1") &&
	      strstr(err, "comm, pid"));
	CHECK(!strchr(err, '\n'));
	CHECK_INT(compile("(arg0 == 1"), -EINVAL);
	CHECK(strstr(err, "unbalanced parentheses") != NULL);
	CHECK_INT(compile("arg0 == 1)"), -EINVAL);
	CHECK(strstr(err, "unbalanced parentheses") != NULL);
	CHECK_INT(compile(")"), -EINVAL);
	CHECK(strstr(err, "unbalanced parentheses") != NULL);
	CHECK_INT(compile("comm < abc"), -EINVAL);
	CHECK(strstr(err, "is a string") != NULL);
	CHECK_INT(compile("arg0 ~ 1*"), -EINVAL);
	CHECK(strstr(err, "~ compares strings") != NULL);
	CHECK_INT(compile("arg0 == abc"), -EINVAL);
	CHECK(strstr(err, "'abc' is none") != NULL);
	CHECK_INT(compile("arg0 == \"1\""), -EINVAL);
	CHECK_INT(compile("arg0 = 1"), -EINVAL);
	CHECK(strstr(err, "expected ==") != NULL);
	CHECK_INT(compile("arg0 =="), -EINVAL);
	CHECK(strstr(err, "expected a value at its end") != NULL);
	CHECK_INT(compile("arg0 == 1 arg1 == 2"), -EINVAL);
	CHECK(strstr(err, "expected && or ||") != NULL);
	CHECK_INT(compile("arg0 == 1 &&"), -EINVAL);
	CHECK_INT(compile(""), -EINVAL);
	CHECK_INT(compile("comm == \"abc"), -EINVAL);
	CHECK(strstr(err, "unterminated") != NULL);
	CHECK_INT(compile("comm ~ \"a*b\""), -EINVAL);
	CHECK(strstr(err, "glob") != NULL);
	CHECK_INT(compile("arg0:q8 == 1"), -EINVAL);
	CHECK(strstr(err, "unknown cast") != NULL);
	CHECK_INT(compile("arg0 == 1 || arg0 == 2 || arg0 == 3 || arg0 == 4 || arg0 == 5 || "
			  "arg0 == 6 || arg0 == 7 || arg0 == 8 || arg0 == 9 || arg0 == 10 || "
			  "arg0 == 11 || arg0 == 12 || arg0 == 13 || arg0 == 14 || arg0 == 15 || "
			  "arg0 == 16 || arg0 == 17"), -E2BIG);
	CHECK_INT(tab.nr_ops, 0);
}

static void test_field_names(void)
{
	char names[4][FIELD_NAME_MAX + 16];

	CHECK_INT(filter_field_names("a == 1 && (b:u8 > 2 || a != 3)", names, 4, err, sizeof(err)), 2);
	CHECK_STR(names[0], "a");
	CHECK_STR(names[1], "b:u8");
	CHECK_INT(filter_field_names("(a == 1", names, 4, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	RUN(test_integers);
	RUN(test_logic);
	RUN(test_strings);
	RUN(test_errors);
	RUN(test_field_names);
	field_list_free(&fields);
	return tests_failed_total ? 1 : 0;
}
