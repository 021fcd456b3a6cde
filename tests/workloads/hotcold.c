/* CPU-bound workload with a known shape: main -> driver -> hot_a / hot_b -> spin, with hot_a
 * doing exactly twice the work of hot_b.  Usage: hotcold [SECONDS] (default 3). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin(unsigned long iterations)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < iterations; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void hot_a(void)
{
	spin(2000000);
}

__attribute__((noinline)) void hot_b(void)
{
	spin(1000000);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void driver(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		hot_a();
		hot_b();
	}
}

int main(int argc, char **argv)
{
	driver(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
