#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/hashtab.h"

static size_t slot_of(__u64 k1, __u64 k2, size_t cap)
{
	__u64 h = k1 * 0x9e3779b97f4a7c15ULL ^ (k2 + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;

	h ^= h >> 29;
	return h & (cap - 1);
}

static struct hashtab_entry *find(const struct hashtab *h, __u64 k1, __u64 k2)
{
	size_t i;

	if (!h->cap)
		return NULL;
	for (i = slot_of(k1, k2, h->cap);; i = (i + 1) & (h->cap - 1)) {
		struct hashtab_entry *e = &h->slots[i];

		if (!e->val || (e->k1 == k1 && e->k2 == k2))
			return e;
	}
}

void *hashtab_get(const struct hashtab *h, __u64 k1, __u64 k2)
{
	struct hashtab_entry *e = find(h, k1, k2);

	return e ? e->val : NULL;
}

static int grow(struct hashtab *h)
{
	struct hashtab old = *h;
	size_t i;

	h->cap = old.cap ? old.cap * 2 : 64;
	h->slots = calloc(h->cap, sizeof(*h->slots));
	if (!h->slots) {
		*h = old;
		return -ENOMEM;
	}
	h->len = 0;
	for (i = 0; i < old.cap; i++)
		if (old.slots[i].val)
			*find(h, old.slots[i].k1, old.slots[i].k2) = old.slots[i], h->len++;
	free(old.slots);
	return 0;
}

int hashtab_put(struct hashtab *h, __u64 k1, __u64 k2, void *val)
{
	struct hashtab_entry *e = find(h, k1, k2);
	int err;

	/* a key it holds is replaced where it is: a table kept at its bound (the frame memo's
	 * 65,536 slots, half of them used) doubled at its next put, 3 MB, to hold no more */
	if (!e || !e->val) {
		if ((h->len + 1) * 2 > h->cap) {
			err = grow(h);
			if (err)
				return err;
			e = find(h, k1, k2);
		}
		h->len++;
	}
	e->k1 = k1;
	e->k2 = k2;
	e->val = val;
	return 0;
}

void *hashtab_del(struct hashtab *h, __u64 k1, __u64 k2)
{
	struct hashtab_entry *e = find(h, k1, k2);
	size_t hole, i;
	void *val;

	if (!e || !e->val)
		return NULL;
	val = e->val;
	/* Backward shift: entries after the hole that probed past it move into it, so that every
	 * probe still stops at the first empty slot without tombstones. */
	hole = e - h->slots;
	for (i = (hole + 1) & (h->cap - 1); h->slots[i].val; i = (i + 1) & (h->cap - 1)) {
		size_t home = slot_of(h->slots[i].k1, h->slots[i].k2, h->cap);

		/* stays when its home lies cyclically in (hole, i] */
		if (hole < i ? (home > hole && home <= i) : (home > hole || home <= i))
			continue;
		h->slots[hole] = h->slots[i];
		hole = i;
	}
	h->slots[hole].val = NULL;
	h->len--;
	return val;
}

void hashtab_reset(struct hashtab *h)
{
	/* far more room than it held (after a burst): freed, to grow again to what is needed */
	if (h->cap > 1024 && h->len * 8 < h->cap)
		hashtab_clear(h, NULL);
	if (h->slots)
		memset(h->slots, 0, h->cap * sizeof(*h->slots));
	h->len = 0;
}

void hashtab_clear(struct hashtab *h, void (*free_val)(void *))
{
	size_t i;

	for (i = 0; free_val && i < h->cap; i++)
		if (h->slots[i].val)
			free_val(h->slots[i].val);
	free(h->slots);
	h->slots = NULL;
	h->cap = h->len = 0;
}
