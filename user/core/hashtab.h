/* A small open-addressing hash table from a (u64, u64) key to a pointer, for caches on the user
 * side (resolved stacks per process, stack traces by id).  Grows at 50% load. */
#ifndef BPFPROF_HASHTAB_H
#define BPFPROF_HASHTAB_H
#include <stddef.h>
#include <linux/types.h>

struct hashtab_entry {
	__u64 k1, k2;
	void *val; /* NULL marks an empty slot: values must not be NULL */
};

struct hashtab {
	struct hashtab_entry *slots;
	size_t cap, len;
};

/* The value stored under (k1, k2), or NULL. */
void *hashtab_get(const struct hashtab *h, __u64 k1, __u64 k2);
/* Stores val (not NULL) under (k1, k2), replacing any previous value.  0 or -ENOMEM. */
int hashtab_put(struct hashtab *h, __u64 k1, __u64 k2, void *val);
/* Removes the entry under (k1, k2); returns its value, or NULL when there was none. */
void *hashtab_del(struct hashtab *h, __u64 k1, __u64 k2);
/* Empties the table but keeps its room, unless it held less than an eighth of it: one filled
 * again to its size need not grow (values are not freed). */
void hashtab_reset(struct hashtab *h);
/* Frees the table, calling free_val (if not NULL) on each value. */
void hashtab_clear(struct hashtab *h, void (*free_val)(void *));
#endif
