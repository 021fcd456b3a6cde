/* The lower bound of core/sorted.h against a linear count: keys repeated, keys at either end
 * (0, UINT64_MAX), an empty array, and a key that is not the element's first member. */
#include <stdint.h>
#include "core/sorted.h"
#include "test.h"

struct elem {
	__u32 tag;
	__u64 key; /* at offset 8: not the first member */
};

/* How many of e's n keys are below key (or at most key, with above). */
static size_t count(const struct elem *e, size_t n, __u64 key, bool above)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += above ? e[i].key <= key : e[i].key < key;
	return c;
}

static void test_sorted_against_count(void)
{
	static const __u64 keys[] = { 0, 0, 3, 5, 5, 5, 9, 100, UINT64_MAX - 1, UINT64_MAX,
				      UINT64_MAX };
	static const __u64 probes[] = { 0, 1, 3, 4, 5, 6, 99, 100, 101, UINT64_MAX - 1,
					UINT64_MAX };
	struct elem e[sizeof(keys) / sizeof(keys[0])];
	size_t nr = sizeof(keys) / sizeof(keys[0]);
	int bad = 0;

	for (size_t i = 0; i < nr; i++)
		e[i] = (struct elem){ .tag = i, .key = keys[i] };
	/* every prefix of the array, so that every length is searched */
	for (size_t n = 0; n <= nr; n++)
		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
			bad += FIRST_AT(e, n, key, probes[p]) != count(e, n, probes[p], false);
			bad += FIRST_ABOVE(e, n, key, probes[p]) != count(e, n, probes[p], true);
		}
	CHECK_INT(bad, 0);
	CHECK_INT(FIRST_AT(e, nr, key, 5), 3);
	CHECK_INT(FIRST_ABOVE(e, nr, key, 5), 6);
	CHECK_INT(FIRST_ABOVE(e, nr, key, UINT64_MAX), nr);
	CHECK_INT(FIRST_AT(e, 0, key, 7), 0);
}

int main(void)
{
	RUN(test_sorted_against_count);
	TESTS_DONE();
}
