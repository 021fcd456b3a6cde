/* A hot function that runs inside a signal handler, without frame pointers: a profiling timer
 * interrupts outer_loop() every 4 ms of CPU time and the handler spins in in_handler() for about
 * 2 ms, so a third of the time is spent under the signal frame.  Unwinding from in_handler
 * reaches main only through the signal frame (libc's __restore_rt).
 * Usage: sighandler_nofp SECONDS */
// build: -fomit-frame-pointer -momit-leaf-frame-pointer
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void in_handler(void)
{
	double end = cpu_now() + 0.002;

	while (cpu_now() < end)
		for (int i = 0; i < 2000; i++)
			sink += i;
}

__attribute__((noinline)) static void on_signal(int sig)
{
	(void)sig;
	in_handler();
}

__attribute__((noinline)) static void outer_loop(double seconds)
{
	double end = cpu_now() + seconds;

	/* no calls but the clock, checked rarely: the signal mostly interrupts this loop */
	while (cpu_now() < end)
		for (int i = 0; i < 200000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { .it_interval = { 0, 4000 }, .it_value = { 0, 4000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	outer_loop(argc > 1 ? atof(argv[1]) : 2.0);
	return 0;
}
