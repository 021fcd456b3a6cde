/* An index of 4-byte slots over rows the caller keeps in its own array: open addressing with
 * linear probing, a slot holding its row's index + 1 (0: empty).  The caller hashes and compares:
 * the lookup is inline, so that the compiler inlines the compare function it is given, and a
 * table of rows needs 4 bytes a slot beside them, not a copy of their keys. */
#ifndef BPFPROF_SLOTIDX_H
#define BPFPROF_SLOTIDX_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct slotidx {
	__u32 *slots; /* row + 1, 0 for an empty slot */
	size_t nr;    /* a power of two; 0 until the first slotidx_reserve() */
};

/* Whether row (of the rows ctx holds) has the key the lookup was given. */
typedef bool slotidx_eq_fn(const void *ctx, __u32 row, const void *key);
/* The hash row was looked up with, into *h; false for a row that is not in the index. */
typedef bool slotidx_hash_fn(const void *ctx, __u32 row, __u64 *h);

/* A hash of two 32-bit ids, e.g. a tree node's parent and name. */
static inline __u64 slotidx_hash2(__u32 hi, __u32 lo)
{
	return ((__u64)hi << 32 | lo) * 0x9e3779b97f4a7c15ULL;
}

/* The slot of the row of hash h whose key eq says is key's, or else the empty slot where such a
 * row goes (slots[i] == 0).  The index must have room (slotidx_reserve()). */
static inline size_t slotidx_find(const struct slotidx *x, __u64 h, slotidx_eq_fn *eq,
				  const void *ctx, const void *key)
{
	size_t mask = x->nr - 1, i = (h ^ h >> 29) & mask;

	for (;; i = (i + 1) & mask) {
		__u32 n = x->slots[i];

		if (!n || eq(ctx, n - 1, key))
			return i;
	}
}

/* Doubles the slots (to first, a power of two, when there are none) and places rows [0, nr_rows)
 * of ctx again, where hash puts them.  0 or -ENOMEM (x unchanged). */
int slotidx_grow(struct slotidx *x, size_t nr_rows, size_t first, slotidx_hash_fn *hash,
		 const void *ctx);

/* Room for row nr_rows, with at most quarters/4 of the slots used: slotidx_grow() when not.  0 or
 * -ENOMEM. */
static inline int slotidx_reserve(struct slotidx *x, size_t nr_rows, unsigned quarters,
				  size_t first, slotidx_hash_fn *hash, const void *ctx)
{
	if ((nr_rows + 1) * 4 <= x->nr * quarters)
		return 0;
	return slotidx_grow(x, nr_rows, first, hash, ctx);
}

/* The bytes the slots take. */
static inline size_t slotidx_bytes(const struct slotidx *x)
{
	return x->nr * sizeof(*x->slots);
}

/* Frees the slots; x is empty again. */
void slotidx_free(struct slotidx *x);
#endif
