/* What the files of probe/ share and nothing else needs. */
#ifndef BPFPROF_PROBE_INTERNAL_H
#define BPFPROF_PROBE_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* A growable list of malloc'd names (candidates for near matches). */
struct names {
	char **v;
	size_t n, cap;
};
int names_add(struct names *ns, const char *s);
/* Sorts the names (str_cmp order). */
void names_sort(struct names *ns);
void names_free(struct names *ns);
/* qsort comparator for char *. */
int str_cmp(const void *a, const void *b);

/* Prints "bpfprof: MSG" with "; did you mean: a, b?" when something is close. */
void err_with_near(const char *msg, const char *want, const char *const *cands, size_t n);
#endif
