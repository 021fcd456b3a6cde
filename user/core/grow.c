// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"

int array_grow(void *arrp, size_t *cap, size_t need, size_t elem, bool zero)
{
	size_t room = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return 0;
	while (room < need) {
		if (room > SIZE_MAX / 2)
			return -ENOMEM;
		room *= 2;
	}
	if (room > SIZE_MAX / elem)
		return -ENOMEM;
	grown = realloc(*(void **)arrp, room * elem);
	if (!grown)
		return -ENOMEM;
	if (zero)
		memset((char *)grown + *cap * elem, 0, (room - *cap) * elem);
	*(void **)arrp = grown;
	*cap = room;
	return 0;
}
