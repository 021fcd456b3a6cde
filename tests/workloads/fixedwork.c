/* Fixed amount of CPU work on every CPU, for overhead benchmarks: prints the seconds it took.
 * Usage: fixedwork [ITERATIONS_PER_THREAD] (default 2000M: about 2.5 s). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long iterations = 2000000000UL;

__attribute__((noinline)) static unsigned long crunch(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void *worker(void *arg)
{
	*(unsigned long *)arg = crunch(iterations);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[256];
	unsigned long out[256];
	struct timespec a, b;

	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 10);
	if (n < 1 || n > 256)
		n = 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &out[i]);
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.4f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
