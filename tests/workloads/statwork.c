/* Events of a known number, for bpfprof stat against perf stat: SLEEPS sleeps of 1 ms (one
 * context switch each), PAGES fresh pages touched (one page fault each), MIGRATIONS moves
 * between the first two online CPUs (the process is pinned to one CPU at a time, so the
 * scheduler adds none), and SPIN_MS of CPU work (task-clock).
 * Usage: statwork SLEEPS PAGES MIGRATIONS SPIN_MS */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The first two online CPUs (the same one twice on a one-CPU machine). */
static void two_cpus(int cpu[2])
{
	cpu_set_t set;
	int n = 0;

	sched_getaffinity(0, sizeof(set), &set);
	cpu[0] = cpu[1] = 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	if (n == 1)
		cpu[1] = cpu[0];
}

int main(int argc, char **argv)
{
	long sleeps, pages, migrations, spin_ms, page = sysconf(_SC_PAGESIZE);
	struct timespec ms = { 0, 1000000 };
	volatile unsigned long x = 1;
	int cpu[2];
	char *mem;
	double t;

	if (argc != 5) {
		fprintf(stderr, "usage: statwork SLEEPS PAGES MIGRATIONS SPIN_MS\n");
		return 2;
	}
	sleeps = atol(argv[1]), pages = atol(argv[2]), migrations = atol(argv[3]);
	spin_ms = atol(argv[4]);
	two_cpus(cpu);
	pin(cpu[0]);
	for (long i = 1; i <= migrations; i++)
		pin(cpu[i % 2]);
	for (long i = 0; i < sleeps; i++)
		nanosleep(&ms, NULL);
	mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	for (long i = 0; i < pages; i++)
		mem[i * page] = 1;
	t = now_ms(CLOCK_THREAD_CPUTIME_ID);
	while (now_ms(CLOCK_THREAD_CPUTIME_ID) - t < spin_ms)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1;
	return 0;
}
