/* Its time in the [vdso] from its first instruction on: clock_loop() reads CLOCK_MONOTONIC,
 * which the vdso answers without entering the kernel, for SECONDS of CPU time.  With "signal",
 * a profiling timer interrupts the loop (mostly inside the vdso) every 4 ms of CPU time and the
 * handler reads the clock too, in in_handler(), for about 1 ms.  Every stack goes through the
 * vdso into main, the handler's through the signal frame (libc's __restore_rt) and the vdso
 * twice.  A walk that learns of the vdso only from the process's mapping list, read by user
 * space after its first samples, ends those at the vdso.  No frame pointers: only the call-frame
 * tables go on past the vdso.
 * Usage: vdsoclock SECONDS [signal] */
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

/* Reads the clock n times: in the vdso nearly all along. */
__attribute__((noinline)) static void read_clock(int n)
{
	struct timespec ts;

	for (int i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
}

__attribute__((noinline)) static void in_handler(void)
{
	double end = cpu_now() + 0.001;

	while (cpu_now() < end)
		read_clock(1000);
}

__attribute__((noinline)) static void on_signal(int sig)
{
	(void)sig;
	in_handler();
}

__attribute__((noinline)) static void clock_loop(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		read_clock(1000);
}

int main(int argc, char **argv)
{
	struct itimerval it = { .it_interval = { 0, 4000 }, .it_value = { 0, 4000 } };
	struct sigaction sa;

	if (argc > 2 && !strcmp(argv[2], "signal")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGPROF, &sa, NULL);
		setitimer(ITIMER_PROF, &it, NULL);
	}
	clock_loop(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
