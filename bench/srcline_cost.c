/* What inline resolution costs: N sample addresses drawn from the functions of an ELF file with
 * debug info (bpfprof itself by default), resolved to symbols alone (elf_syms__find, what a
 * report pays without --inline) and to inline chains and lines as well (srclines__lookup), the
 * second time from the cache.  A profile samples a hot function at many of its instructions:
 * PER_FN distinct addresses are drawn from each function picked (1: every one from another).
 * bench/srcline_cost [FILE [N [DISTINCT [PER_FN]]]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "sym/srcline.h"
#include "sym/syms.h"

/* CPU seconds: on a busy machine the wall clock counts the others' time too */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct addrs { __u64 *a; size_t n, cap; };

static int collect(const char *name, __u64 vaddr, __u64 off, void *ctx)
{
	struct addrs *x = ctx;

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 1024;
		x->a = realloc(x->a, x->cap * sizeof(*x->a));
	}
	x->a[x->n++] = vaddr;
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "./bpfprof";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1000000;
	size_t distinct = argc > 3 ? strtoul(argv[3], NULL, 0) : 20000;
	size_t per_fn = argc > 4 && strtoul(argv[4], NULL, 0) ? strtoul(argv[4], NULL, 0) : 1;
	struct elf_syms *es = elf_syms__open(path);
	struct srclines *s = srclines__new();
	struct addrs fns = {};
	__u64 *pick, *sample, sum = 0;
	struct srcline_stats st;
	double t0, t_syms, t_open, t_first, t_lines;
	size_t resolved = 0, inlined = 0;

	if (!es || !s) {
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	elf_syms__for_each_match(es, "*", collect, &fns);
	pick = calloc(distinct, sizeof(*pick));
	sample = calloc(n, sizeof(*sample));
	srand(42);
	/* distinct addresses (mostly): a few bytes into random functions, per_fn in each */
	for (size_t i = 0; i < distinct; i++) {
		__u64 size = 0, off = 0;
		static __u64 a;

		if (i % per_fn == 0)
			a = fns.a[rand() % fns.n];
		elf_syms__find_span(es, a, &off, &size);
		pick[i] = a + (size ? (__u64)rand() % size : 0);
	}
	for (size_t i = 0; i < n; i++)
		sample[i] = pick[rand() % distinct];
	t0 = now();
	for (size_t i = 0; i < n; i++)
		sum += elf_syms__find(es, sample[i], NULL) != NULL;
	t_syms = now() - t0;
	t0 = now();
	srclines__has_dwarf(s, path);
	t_open = now() - t0;
	t0 = now();
	for (size_t i = 0; i < distinct; i++) {
		const struct srcline_chain *c;

		if (!srclines__lookup(s, path, pick[i], &c)) {
			resolved++;
			inlined += c->nr > 1;
		}
	}
	t_first = now() - t0;
	t0 = now();
	for (size_t i = 0; i < n; i++) {
		const struct srcline_chain *c;

		sum += srclines__lookup(s, path, sample[i], &c) == 0;
	}
	t_lines = now() - t0;
	srclines__stats(s, &st);
	printf("%s: %zu functions; %zu samples over %zu distinct addresses, %zu a function (%zu "
	       "with lines, %zu in inlined code)\n", path, fns.n, n, distinct, per_fn, resolved,
	       inlined);
	printf("symbols only:        %.3f s (%.0f ns a sample)\n", t_syms, t_syms * 1e9 / n);
	printf("debug info opened:   %.3f s\n", t_open);
	printf("lines, first sight:  %.3f s (%.1f us a distinct address)\n", t_first,
	       t_first * 1e6 / distinct);
	printf("lines, cached:       %.3f s (%.0f ns a sample; %llu lookups, %llu hits)\n", t_lines,
	       t_lines * 1e9 / n, (unsigned long long)st.lookups, (unsigned long long)st.hits);
	printf("(checksum %llu)\n", (unsigned long long)sum);
	srclines__free(s);
	elf_syms__free(es);
	return 0;
}
