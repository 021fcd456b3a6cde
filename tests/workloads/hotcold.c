/* CPU-bound workload with a known shape: main -> driver -> hot_a / hot_b -> spin, with hot_a
 * doing exactly twice the work of hot_b.  Each round's work is scaled by 0.5-1.5 (the same for
 * both): a fixed round length could come close to a multiple of the sampling period, and the
 * samples then fell on the same phases of the round for seconds (hot_a:hot_b 1.5:1 or 2.8:1
 * at 499 Hz, seen on a VM).  Usage: hotcold [SECONDS] (default 3).
 * At exit it prints "cpu_seconds N" on stderr: the CPU time it got, which is what a sampler can
 * see on a loaded machine; and "sampled_seconds hot_a A hot_b B": the time each phase ran as a
 * timer sampler sees it (its wall time less its waits on the run queue, from schedstat: on a VM
 * that keeps the time the host took the CPU, which a cpu-clock timer samples and CPU time
 * leaves out; a burst of it in one phase moved hot_a:hot_b to 2.74). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

static volatile unsigned long sink;

/* hotcold_swapped.c builds the 1:2 variant, for bpfprof diff */
#ifndef HOT_A_ITERATIONS
#define HOT_A_ITERATIONS 2000000
#define HOT_B_ITERATIONS 1000000
#endif

__attribute__((noinline)) void spin(unsigned long iterations)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < iterations; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

/* this round's work, in quarters of the nominal (2..6) */
static volatile unsigned long round_quarters = 4;

__attribute__((noinline)) void hot_a(void)
{
	spin(HOT_A_ITERATIONS / 4 * round_quarters);
}

__attribute__((noinline)) void hot_b(void)
{
	spin(HOT_B_ITERATIONS / 4 * round_quarters);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int schedstat_fd = -1;

/* Seconds waited on the run queue so far (schedstat's second field); 0 without schedstat. */
static double run_delay(void)
{
	char buf[128];
	unsigned long long exec, delay;
	ssize_t n;

	if (schedstat_fd < 0 || lseek(schedstat_fd, 0, SEEK_SET) < 0)
		return 0;
	n = read(schedstat_fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu", &exec, &delay) == 2 ? delay / 1e9 : 0;
}

/* The time a sampler sees between two readings: wall time less run-queue waits. */
static double sampled_now(void)
{
	return now() - run_delay();
}

static double sampled_a, sampled_b;

__attribute__((noinline)) void driver(double seconds)
{
	double end = now() + seconds, t, mid;
	unsigned long seed = 88172645463325252UL;

	while (now() < end) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		round_quarters = 2 + seed % 5;
		t = sampled_now();
		hot_a();
		mid = sampled_now();
		sampled_a += mid - t;
		hot_b();
		sampled_b += sampled_now() - mid;
	}
}

int main(int argc, char **argv)
{
	struct rusage ru;

	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	driver(argc > 1 ? atof(argv[1]) : 3.0);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "cpu_seconds %.3f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
						ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	fprintf(stderr, "sampled_seconds hot_a %.3f hot_b %.3f\n", sampled_a, sampled_b);
	return 0;
}
