/* The slot index (core/slotidx.h): rows found by their keys through growth, colliding hashes,
 * the wrap at the end of the slots, rows the caller leaves out, and the load it keeps. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/slotidx.h"
#include "test.h"

/* Rows of (parent, name) pairs, as the call-path trees keep them. */
struct rows {
	struct { __u32 parent, name; } *r;
	size_t n;
	bool collide;   /* every row the same hash */
	bool skip_odd;  /* odd rows are not indexed */
};

struct key {
	__u32 parent, name;
};

static __u64 hash_of(const struct rows *t, __u32 parent, __u32 name)
{
	return t->collide ? 42 : slotidx_hash2(parent, name);
}

static bool row_eq(const void *ctx, __u32 row, const void *key)
{
	const struct rows *t = ctx;
	const struct key *k = key;

	return t->r[row].parent == k->parent && t->r[row].name == k->name;
}

static bool row_hash(const void *ctx, __u32 row, __u64 *h)
{
	const struct rows *t = ctx;

	*h = hash_of(t, t->r[row].parent, t->r[row].name);
	return !(t->skip_odd && row % 2);
}

/* The slot of (parent, name), after making room for one more row. */
static size_t find(struct slotidx *x, struct rows *t, __u32 parent, __u32 name, unsigned quarters,
		   size_t first)
{
	struct key k = { parent, name };

	if (slotidx_reserve(x, t->n, quarters, first, row_hash, t))
		return SIZE_MAX;
	return slotidx_find(x, hash_of(t, parent, name), row_eq, t, &k);
}

/* Adds (parent, name) unless it is there: its row, or -1. */
static long add(struct slotidx *x, struct rows *t, __u32 parent, __u32 name, unsigned quarters,
		size_t first)
{
	size_t i = find(x, t, parent, name, quarters, first);

	if (i == SIZE_MAX)
		return -1;
	if (x->slots[i])
		return x->slots[i] - 1;
	t->r[t->n].parent = parent;
	t->r[t->n].name = name;
	x->slots[i] = t->n + 1;
	return t->n++;
}

static void test_slotidx_finds_rows_through_growth(void)
{
	struct rows t = { .r = calloc(20000, sizeof(*t.r)) };
	struct slotidx x = {};
	size_t grows = 0, nr = 0;
	int bad = 0;

	CHECK_INT(x.nr, 0);
	for (__u32 i = 0; i < 10000; i++) {
		bad += add(&x, &t, i / 7, i, 3, 16) != (long)i;
		grows += x.nr != nr;
		nr = x.nr;
		/* three quarters full at most, a power of two from the first size */
		bad += t.n * 4 > x.nr * 3 || (x.nr & (x.nr - 1)) || x.nr < 16;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(x.nr, 16384); /* 10,000 rows > 3/4 of 8,192 */
	CHECK_INT(grows, 11);   /* 16 ... 16,384 */
	CHECK_INT(slotidx_bytes(&x), 16384 * 4);
	/* every row again, and the same pair added twice is one row */
	for (__u32 i = 0; i < 10000; i++)
		bad += add(&x, &t, i / 7, i, 3, 16) != (long)i;
	CHECK_INT(bad, 0);
	CHECK_INT(t.n, 10000);
	/* absent keys: an empty slot */
	for (__u32 i = 0; i < 1000; i++)
		bad += x.slots[find(&x, &t, i / 7 + 1, i, 3, 16)] != 0;
	CHECK_INT(bad, 0);
	slotidx_free(&x);
	CHECK(!x.slots);
	CHECK_INT(x.nr, 0);
	slotidx_free(&x); /* twice is harmless */
	free(t.r);
}

/* Every hash the same: found by comparing alone, the probe wrapping past the last slot. */
static void test_slotidx_collisions_wrap(void)
{
	struct rows t = { .r = calloc(64, sizeof(*t.r)), .collide = true };
	struct slotidx x = {};
	int bad = 0;

	for (__u32 i = 0; i < 40; i++)
		bad += add(&x, &t, 1, i, 2, 8) != (long)i;
	CHECK_INT(bad, 0);
	CHECK_INT(x.nr, 128); /* half full at most */
	/* hash 42 starts at slot (42 ^ 0) & 127 = 42: rows fill 42.. onwards */
	CHECK_INT(x.slots[42], 1);
	for (__u32 i = 0; i < 40; i++)
		bad += add(&x, &t, 1, i, 2, 8) != (long)i;
	CHECK_INT(bad, 0);
	slotidx_free(&x);

	/* 8 slots, start at 42 & 7 = 2: the sixth row goes to slot 7, the seventh wraps to 0 */
	t.n = 0;
	CHECK_INT(slotidx_grow(&x, 0, 8, row_hash, &t), 0);
	for (__u32 i = 0; i < 7; i++) {
		struct key k = { 1, i };
		size_t s;

		s = slotidx_find(&x, 42, row_eq, &t, &k);
		bad += x.slots[s] != 0 || s != (2 + i) % 8;
		t.r[i].parent = 1;
		t.r[i].name = i;
		x.slots[s] = ++t.n;
	}
	CHECK_INT(bad, 0);
	for (__u32 i = 0; i < 7; i++)
		bad += slotidx_find(&x, 42, row_eq, &t, &(struct key){ 1, i }) != (2 + i) % 8;
	CHECK_INT(bad, 0);
	CHECK_INT(slotidx_find(&x, 42, row_eq, &t, &(struct key){ 2, 0 }), 1); /* the empty one */
	slotidx_free(&x);
	free(t.r);
}

/* Rows the hash callback leaves out are not placed again when the slots grow. */
static void test_slotidx_grow_leaves_out_rows(void)
{
	struct rows t = { .r = calloc(100, sizeof(*t.r)) };
	struct slotidx x = {};
	size_t placed = 0;
	int bad = 0;

	for (__u32 i = 0; i < 100; i++) {
		t.r[i].parent = i;
		t.r[i].name = i * 3;
	}
	t.n = 100;
	t.skip_odd = true;
	CHECK_INT(slotidx_grow(&x, t.n, 256, row_hash, &t), 0);
	CHECK_INT(x.nr, 256);
	for (size_t s = 0; s < x.nr; s++)
		placed += x.slots[s] != 0;
	CHECK_INT(placed, 50);
	for (__u32 i = 0; i < 100; i++) {
		size_t s = slotidx_find(&x, hash_of(&t, i, i * 3), row_eq, &t,
					&(struct key){ i, i * 3 });

		bad += i % 2 ? x.slots[s] != 0 : x.slots[s] != i + 1;
	}
	CHECK_INT(bad, 0);
	/* growing again doubles */
	CHECK_INT(slotidx_grow(&x, t.n, 256, row_hash, &t), 0);
	CHECK_INT(x.nr, 512);
	slotidx_free(&x);
	free(t.r);
}

int main(void)
{
	RUN(test_slotidx_finds_rows_through_growth);
	RUN(test_slotidx_collisions_wrap);
	RUN(test_slotidx_grow_leaves_out_rows);
	TESTS_DONE();
}
