/* Binary search in arrays sorted by a __u64 member (an address, an offset): one lower bound for
 * the symbol, mapping and line lookups.  Inline, so that the element size and the member's offset
 * are constants where it is used: the same code as the search written out. */
#ifndef BPFPROF_SORTED_H
#define BPFPROF_SORTED_H
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

/* The first of nr elements of size bytes at base, sorted by the __u64 at byte off of each, whose
 * key is key or more (above: more than key): nr when none is.  With above, how many elements have
 * a key of key or less, so that the last of those is the one before. */
static inline size_t sorted_first(const void *base, size_t nr, size_t size, size_t off,
				  __u64 key, bool above)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		__u64 k;

		memcpy(&k, (const char *)base + mid * size + off, sizeof(k));
		if (above ? k <= key : k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The same for an array arr of nr elements sorted by their __u64 member field. */
#define FIRST_AT(arr, nr, field, key) \
	sorted_first((arr), (nr), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), (key), false)
#define FIRST_ABOVE(arr, nr, field, key) \
	sorted_first((arr), (nr), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), (key), true)
#endif
