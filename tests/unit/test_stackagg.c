/* The user-space side of draining: the aggregation by (command, symbolized stack), and the hash
 * table whose deletions let processes be forgotten. */
#include <stdint.h>
#include "core/hashtab.h"
#include "out/folded.h"
#include "sym/stackagg.h"
#include "test.h"

static struct stack_sample sample(const char *comm, __u32 pid, struct frame *f, __u32 n,
				  __u64 value)
{
	struct stack_sample s = { .pid = pid, .tid = pid, .value = value, .frames = f,
				  .nr_frames = n };

	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	return s;
}

/* A fork storm of one program: every process's identical stack is one entry; other functions
 * and other commands stay apart. */
static void test_agg_merges_by_command_and_stack(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char main_name[] = "main", work[] = "work", other[] = "other", mod[] = "/usr/bin/ls";
	struct frame f1[] = { { .name = main_name, .module = mod, .addr = 0x1000 },
			      { .name = work, .module = mod, .addr = 0x2000 } };
	struct frame f2[] = { { .name = main_name, .module = mod, .addr = 0x1008 },
			      { .name = work, .module = mod, .addr = 0x2010 } };
	struct frame f3[] = { { .name = main_name, .module = mod },
			      { .name = other, .module = mod } };
	struct frame u1[] = { { .module = mod, .offset = 0x10 } }, u2[] = { { .module = mod,
									      .offset = 0x20 } };
	const struct stack_sample *out;
	size_t n;

	CHECK(a);
	for (__u32 pid = 100; pid < 400; pid++) {
		struct stack_sample s = sample("ls", pid, pid & 1 ? f1 : f2, 2, 1);

		CHECK_INT(stack_agg__add(a, &s), 0);
	}
	struct stack_sample s3 = sample("ls", 5, f3, 2, 7), s4 = sample("cc1", 6, f1, 2, 2);
	struct stack_sample s5 = sample("ls", 7, u1, 1, 1), s6 = sample("ls", 8, u2, 1, 1);
	struct stack_sample s7 = sample("ls", 9, u1, 1, 4);

	CHECK_INT(stack_agg__add(a, &s3), 0);
	CHECK_INT(stack_agg__add(a, &s4), 0);
	CHECK_INT(stack_agg__add(a, &s5), 0);
	CHECK_INT(stack_agg__add(a, &s6), 0);
	CHECK_INT(stack_agg__add(a, &s7), 0);
	/* the caller's strings may go: the aggregation holds its own */
	strcpy(main_name, "XXXX");
	strcpy(mod, "/gone/gone!");
	out = stack_agg__samples(a, &n);
	CHECK_INT(n, 4);
	CHECK_INT(out[0].value, 300);
	CHECK_STR(out[0].comm, "ls");
	CHECK_STR(stack_sample_frame(&out[0], 0)->name, "main");
	CHECK_STR(stack_sample_frame(&out[0], 1)->module, "/usr/bin/ls");
	CHECK(out[0].frames == NULL); /* ids into one table: no frame copied */
	CHECK_INT(out[1].value, 7);
	CHECK_STR(out[2].comm, "cc1");
	/* unresolved frames of a file are one frame, without an address: "[ls]" */
	CHECK_INT(out[3].value, 6);
	CHECK_INT(stack_sample_frame(&out[3], 0)->offset, 0);
	/* the writers read frames through the ids */
	{
		struct folded_opts fo = {};
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK_INT(folded_write(f, out, n, &fo), 0);
		fclose(f);
		CHECK(strstr(buf, "ls;main;work 300\n") != NULL);
		CHECK(strstr(buf, "cc1;main;work 2\n") != NULL);
		CHECK(strstr(buf, "ls;[ls] 6\n") != NULL);
		free(buf);
	}
	stack_agg__free(a);
}

static void test_agg_by_tid(void)
{
	struct stack_agg *a = stack_agg__new(true);
	struct frame f[] = { { .name = "f", .module = "m" } };
	struct stack_sample x = sample("t", 1, f, 1, 1), y = sample("t", 2, f, 1, 1);
	size_t n;

	CHECK_INT(stack_agg__add(a, &x), 0);
	CHECK_INT(stack_agg__add(a, &y), 0);
	CHECK_INT(stack_agg__add(a, &x), 0);
	stack_agg__samples(a, &n);
	CHECK_INT(n, 2);
	stack_agg__free(a);
}

/* Deletions against a plain array as the reference, with keys that collide in the table. */
/* The drain's memo path: frames given as ids of the aggregation's own table (from
 * stack_agg__frame_id()) make the same entries as the frames themselves. */
static void test_agg_own_ids(void)
{
	struct stack_agg *a = stack_agg__new(false), *b = stack_agg__new(false);
	char main_name[] = "main", work[] = "work", mod[] = "/usr/bin/cc1", k[] = "[kernel.kallsyms]";
	struct frame f[] = { { .name = main_name, .module = mod, .addr = 0x1000 },
			     { .name = work, .module = mod, .addr = 0x2000 },
			     { .module = mod, .offset = 0x30, .addr = 0x3030 },
			     { .name = work, .module = k, .kernel = true, .addr = 0xffff1000 } };
	const struct stack_sample *oa, *ob;
	size_t na, nb;
	__u32 ids[4];

	CHECK(a && b);
	for (int round = 0; round < 3; round++) {
		struct stack_sample s = sample(round == 2 ? "as" : "cc1", 10 + round, f, 4, 1 + round);

		/* a: frames; b: ids, looked up afresh each round as a new drain would */
		CHECK_INT(stack_agg__add(a, &s), 0);
		for (int i = 0; i < 4; i++) {
			long id = stack_agg__frame_id(b, &f[i]);

			CHECK(id >= 0);
			ids[i] = id;
		}
		s.frames = NULL;
		s.frame_ids = s.waker_frame_ids = ids;
		s.frame_table = stack_agg__frames(b);
		CHECK_INT(stack_agg__add_own(b, &s), 0);
	}
	oa = stack_agg__samples(a, &na);
	ob = stack_agg__samples(b, &nb);
	CHECK_INT(na, 2);
	CHECK_INT(nb, na);
	for (size_t i = 0; i < na && i < nb; i++) {
		CHECK_STR(oa[i].comm, ob[i].comm);
		CHECK_INT(oa[i].value, ob[i].value);
		CHECK_INT(oa[i].nr_frames, ob[i].nr_frames);
		for (__u32 j = 0; j < oa[i].nr_frames && j < ob[i].nr_frames; j++) {
			const struct frame *x = stack_sample_frame(&oa[i], j), *y = stack_sample_frame(&ob[i], j);

			CHECK(x->kernel == y->kernel && x->offset == y->offset && x->addr == y->addr);
			CHECK_STR(x->module, y->module);
			CHECK(x->name ? y->name && !strcmp(x->name, y->name) : !y->name);
		}
	}
	CHECK_INT(oa[0].value, 3); /* cc1: rounds 0 and 1 */
	CHECK(!stack_agg__exact_leaves(b));
	stack_agg__free(a);
	stack_agg__free(b);
}

/* Stacks as paths of one tree: a stack that is another's prefix, the same frames with and
 * without a waker (and the waker's frames apart from the sleeper's), a stack without frames,
 * each an entry of its own, in the order first seen, each read back whole; an add after the
 * samples were read goes on where they left off. */
static void test_agg_paths(void)
{
	struct stack_agg *a = stack_agg__new(false);
	char m[] = "main", w[] = "work", x[] = "x", mod[] = "/bin/p";
	struct frame f[] = { { .name = m, .module = mod }, { .name = w, .module = mod },
			     { .name = x, .module = mod } };
	struct stack_sample s1 = sample("p", 1, f, 3, 1), s2 = sample("p", 2, f, 2, 2),
			    s3 = sample("p", 3, f, 2, 4), s4 = sample("p", 4, NULL, 0, 8),
			    s5 = sample("p", 5, f, 1, 16);
	const struct stack_sample *out;
	struct stack_agg_stats st;
	size_t n;

	CHECK(a);
	/* s3: main;work, woken by q in main;work;x */
	s3.waker_frames = f;
	s3.nr_waker_frames = 3;
	strcpy(s3.waker_comm, "q");
	const struct stack_sample *adds[] = { &s1, &s2, &s3, &s4, &s1, &s5, &s2 };
	/* value, frames, waker frames of each entry after the first five adds, then all */
	const __u64 want[2][5][3] = { { { 2, 3, 0 }, { 2, 2, 0 }, { 4, 2, 3 }, { 8, 0, 0 } },
				      { { 2, 3, 0 }, { 4, 2, 0 }, { 4, 2, 3 }, { 8, 0, 0 },
					{ 16, 1, 0 } } };

	for (int round = 0, i = 0; round < 2; round++) {
		for (; i < (round ? 7 : 5); i++)
			CHECK_INT(stack_agg__add(a, adds[i]), 0);
		out = stack_agg__samples(a, &n);
		CHECK_INT(n, round ? 5 : 4);
		for (size_t k = 0; k < n; k++) {
			CHECK_INT(out[k].value, want[round][k][0]);
			CHECK_INT(out[k].nr_frames, want[round][k][1]);
			CHECK_INT(out[k].nr_waker_frames, want[round][k][2]);
		}
	}
	CHECK_STR(stack_sample_frame(&out[0], 2)->name, "x");
	CHECK_STR(out[2].waker_comm, "q");
	CHECK_STR(stack_sample_frame(&out[2], 1)->name, "work");
	CHECK_STR(stack_sample_waker_frame(&out[2], 0)->name, "main");
	CHECK_STR(stack_sample_waker_frame(&out[2], 2)->name, "x");
	CHECK_INT(out[3].pid, 4);
	stack_agg__stats(a, &st);
	/* a context node for "p" and one for "p" woken by "q", main;work;x under each, the mark */
	CHECK_INT(st.nodes, 2 + 3 + 1 + 2 + 3);
	CHECK_INT(st.ids, 3 + 2 + 5 + 0 + 1);
	stack_agg__free(a);
}

static void test_hashtab_del(void)
{
	enum { N = 2000 };
	static char present[N];
	struct hashtab h = {};
	unsigned int seed = 1;

	for (int round = 0; round < 20000; round++) {
		__u64 k;

		seed = seed * 1103515245 + 12345;
		k = (seed >> 8) % N;
		if (present[k]) {
			CHECK(hashtab_del(&h, k, 7) == (void *)(uintptr_t)(k + 1));
			present[k] = 0;
		} else {
			CHECK_INT(hashtab_put(&h, k, 7, (void *)(uintptr_t)(k + 1)), 0);
			present[k] = 1;
		}
	}
	for (__u64 k = 0; k < N; k++)
		CHECK(hashtab_get(&h, k, 7) == (present[k] ? (void *)(uintptr_t)(k + 1) : NULL));
	CHECK(hashtab_del(&h, N + 1, 7) == NULL);
	hashtab_clear(&h, NULL);
}

/* Reset empties a table and keeps its room (top's tables are filled again to about their size
 * each refresh); one that held far less than its room is freed. */
static void test_hashtab_reset(void)
{
	struct hashtab h = {};
	size_t cap;

	for (__u64 k = 0; k < 1000; k++)
		CHECK_INT(hashtab_put(&h, k, 1, (void *)(uintptr_t)(k + 1)), 0);
	cap = h.cap;
	hashtab_reset(&h);
	CHECK(h.len == 0 && h.cap == cap);
	for (__u64 k = 0; k < 1000; k++)
		CHECK(hashtab_get(&h, k, 1) == NULL);
	for (__u64 k = 0; k < 100; k++)
		CHECK_INT(hashtab_put(&h, k, 2, (void *)(uintptr_t)(k + 7)), 0);
	CHECK(h.cap == cap && hashtab_get(&h, 5, 2) == (void *)(uintptr_t)12);
	hashtab_reset(&h);
	CHECK(h.len == 0 && h.cap == 0 && h.slots == NULL);
	CHECK_INT(hashtab_put(&h, 1, 1, (void *)1), 0);
	CHECK(hashtab_get(&h, 1, 1) == (void *)1);
	hashtab_clear(&h, NULL);
}

/* The drain's memo keeps ids of one aggregation and tells the next one by its serial: an
 * aggregation allocated where a freed one was must not pass for it. */
static void test_agg_serial(void)
{
	struct stack_agg *a = stack_agg__new(false), *b;
	__u64 first = a ? stack_agg__serial(a) : 0;

	CHECK(a && first);
	stack_agg__free(a);
	b = stack_agg__new(false);
	CHECK(b && stack_agg__serial(b) != first);
	CHECK(b && stack_agg__nr_frames(b) == 0);
	stack_agg__free(b);
}

int main(void)
{
	RUN(test_agg_merges_by_command_and_stack);
	RUN(test_agg_serial);
	RUN(test_agg_by_tid);
	RUN(test_agg_own_ids);
	RUN(test_agg_paths);
	RUN(test_hashtab_del);
	RUN(test_hashtab_reset);
	TESTS_DONE();
}
