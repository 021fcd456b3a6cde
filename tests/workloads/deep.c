/* Recurses DEPTH frames deep (recurse() calling itself), then spins in the innermost frame for
 * SECONDS: a stack of known depth, deeper than the kernel's default 127 frames.
 * Usage: deep SECONDS [DEPTH] (default 300). */
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long bottom(double seconds)
{
	volatile unsigned long x = 0;
	double end = now() + seconds;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
	return x;
}

/* not a tail call: the addition after it keeps every frame on the stack */
__attribute__((noinline)) static unsigned long recurse(int depth, double seconds)
{
	if (depth <= 1)
		return bottom(seconds);
	return recurse(depth - 1, seconds) + depth;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	int depth = argc > 2 ? atoi(argv[2]) : 300;

	return recurse(depth, seconds) == 0;
}
