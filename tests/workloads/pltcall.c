/* A loop calling a small libc function, so that the PLT stub it calls through (one indirect
 * jump) takes a share of the samples: perf names that code labs@plt, and so must we.
 * Usage: pltcall SECONDS */
// build: -O2 -fno-builtin
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long caller(double seconds)
{
	double end = now() + seconds;
	long sum = 0;

	while (now() < end)
		for (long i = 0; i < 1000000; i++)
			sum += labs(i - 500000);
	return sum;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;

	printf("%ld\n", caller(seconds));
	return 0;
}
