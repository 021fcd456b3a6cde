/* Arrays that grow by doubling: one place for the arithmetic every growing array needs (the
 * room doubled until it holds what is asked, the size checked for overflow, the old array kept
 * when realloc fails). */
#ifndef BPFPROF_GROW_H
#define BPFPROF_GROW_H
#include <stdbool.h>
#include <stddef.h>

/* Makes the array at *arrp (a pointer to any T *, of *cap elements of elem bytes) hold at least
 * need elements: its room doubled, from 16 elements, until it does, the new elements zeroed when
 * zero is set.  0, or -ENOMEM with *arrp and *cap unchanged (also when the size would not fit a
 * size_t). */
int array_grow(void *arrp, size_t *cap, size_t need, size_t elem, bool zero);

/* The same for an array arr of cap elements (lvalues: a T * and its size_t room). */
#define ARRAY_GROW(arr, cap, need) array_grow(&(arr), &(cap), (need), sizeof(*(arr)), false)
#define ARRAY_GROW_ZEROED(arr, cap, need) array_grow(&(arr), &(cap), (need), sizeof(*(arr)), true)
#endif
