// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "core/slotidx.h"

int slotidx_grow(struct slotidx *x, size_t nr_rows, size_t first, slotidx_hash_fn *hash,
		 const void *ctx)
{
	size_t nr = x->nr ? x->nr * 2 : first, mask = nr - 1;
	__u32 *slots = calloc(nr, sizeof(*slots));
	__u64 h;

	if (!slots)
		return -ENOMEM;
	for (size_t row = 0; row < nr_rows; row++) {
		size_t i;

		if (!hash(ctx, row, &h))
			continue;
		/* rows are distinct: the probe stops at the first empty slot */
		for (i = (h ^ h >> 29) & mask; slots[i]; i = (i + 1) & mask)
			;
		slots[i] = row + 1;
	}
	free(x->slots);
	x->slots = slots;
	x->nr = nr;
	return 0;
}

void slotidx_free(struct slotidx *x)
{
	free(x->slots);
	x->slots = NULL;
	x->nr = 0;
}
