// build: -O2 -g
/* Optimised code whose time is in inlined functions (bpfprof's source lines, issue 16):
 * `inlined inline [SECONDS]` spends its time in two static inline functions, mix_a doing twice
 * the work of mix_b, both inlined into one caller, work(), which is not; `inlined loop [SECONDS]`
 * spins in asm_loop(), whose loop is a known instruction sequence (x86-64: imul, xor, ror, dec,
 * jnz), for annotate.  Default 3 seconds. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

/* A chain of dependent multiplies: the compiler can neither vectorise nor fuse it. */
static inline unsigned long mix_a(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9UL + i;
	return x;
}

static inline unsigned long mix_b(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		x = (x ^ (x >> 31)) * 0x94d049bb133111ebUL + i;
	return x;
}

__attribute__((noinline)) unsigned long work(unsigned long seed)
{
	unsigned long x = mix_a(seed, 2000000);

	sink = x;
	x = mix_b(x, 1000000);
	sink = x;
	return x;
}

__attribute__((noinline)) unsigned long asm_loop(unsigned long n)
{
	unsigned long x = n | 1;

#if defined(__x86_64__)
	__asm__ volatile("1:\n\t"
			 "imul %1, %1\n\t"
			 "xor %0, %1\n\t"
			 "ror $7, %1\n\t"
			 "dec %0\n\t"
			 "jnz 1b\n\t"
			 : "+r"(n), "+r"(x) : : "cc"); /* LOOP_LINE */
#else
	while (n--)
		x = (x * x ^ n) >> 7 | (x * x ^ n) << 57;
#endif
	return x;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	bool loop = argc > 1 && !strcmp(argv[1], "loop");
	double secs = argc > 2 ? atof(argv[2]) : 3, end = now() + secs;
	unsigned long x = 1;

	if (argc < 2 || (!loop && strcmp(argv[1], "inline"))) {
		fprintf(stderr, "usage: inlined inline|loop [SECONDS]\n");
		return 2;
	}
	while (now() < end)
		x += loop ? asm_loop(3000000) : work(x);
	sink = x;
	return 0;
}
