/* USDT probes of known names (<sys/sdt.h>, systemtap-sdt-dev), for bpfprof list:
 *   bpfprof_wl:start      once, before the loop
 *   bpfprof_wl:tick       N times, with the iteration (two sites: odd and even iterations)
 *   bpfprof_wl:guarded    N times, only while a tracer has raised its semaphore
 * (sdt.h gives every probe of a file a semaphore once one has: the others have theirs unused.)
 * Usage: usdt [N [SECONDS]]: N ticks (default 3), then sleeps SECONDS (default 0) so that a
 * test can list the running process. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short bpfprof_wl_start_semaphore __attribute__((unused, section(".probes")));
unsigned short bpfprof_wl_tick_semaphore __attribute__((unused, section(".probes")));
unsigned short bpfprof_wl_guarded_semaphore __attribute__((unused, section(".probes")));

__attribute__((noinline)) void tick(long i)
{
	if (i % 2)
		DTRACE_PROBE1(bpfprof_wl, tick, i);
	else
		DTRACE_PROBE1(bpfprof_wl, tick, i);
	if (bpfprof_wl_guarded_semaphore)
		DTRACE_PROBE1(bpfprof_wl, guarded, i);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;
	unsigned int secs = argc > 2 ? atoi(argv[2]) : 0;

	DTRACE_PROBE(bpfprof_wl, start);
	for (long i = 0; i < n; i++)
		tick(i);
	printf("ticks %ld\n", n);
	fflush(stdout);
	sleep(secs);
	return 0;
}
