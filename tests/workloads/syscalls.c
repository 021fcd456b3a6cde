/* Syscall-heavy workload: time mostly in the kernel under a known user function.
 * Usage: syscalls read SECONDS   - read_devzero() reads /dev/zero in 64 KiB blocks
 *        syscalls getppid N      - call_getppid() makes exactly N getppid() calls, prints N
 *                                  (after WL_DELAY_MS, or after SIGUSR1 with WL_WAIT_USR1=1)
 * System calls go through raw_syscall3(), which keeps a frame pointer: Debian's libc wrappers do
 * not, and a frame-pointer walk through them loses their caller (the subject of .eh_frame
 * unwinding, tested elsewhere). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static char buf[65536];

__attribute__((noinline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void read_devzero(double seconds)
{
	int fd = open("/dev/zero", O_RDONLY);
	double end = now() + seconds;

	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	while (now() < end)
		for (int i = 0; i < 100; i++)
			if (raw_syscall3(SYS_read, fd, (long)buf, sizeof(buf)) < 0)
				exit(1);
	close(fd);
}

__attribute__((noinline)) void call_getppid(long n)
{
	for (long i = 0; i < n; i++)
		raw_syscall3(SYS_getppid, 0, 0, 0);
}

int main(int argc, char **argv)
{
	sigset_t usr1;
	double t0;

	/* blocked from the start, so a SIGUSR1 sent early waits for sigwait() */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	if (argc == 3 && !strcmp(argv[1], "read")) {
		read_devzero(atof(argv[2]));
	} else if (argc == 3 && !strcmp(argv[1], "getppid")) {
		/* Give a tracer started alongside time to attach before the counted calls; with
		 * WL_WAIT_USR1 set, wait until it says so with SIGUSR1 (no race at all). */
		usleep(getenv("WL_DELAY_MS") ? atoi(getenv("WL_DELAY_MS")) * 1000 : 0);
		if (getenv("WL_WAIT_USR1")) {
			sigset_t set;
			int sig;

			sigemptyset(&set);
			sigaddset(&set, SIGUSR1);
			sigwait(&set, &sig);
		}
		t0 = now();
		call_getppid(atol(argv[2]));
		printf("%ld\n", atol(argv[2]));
		/* benchmarks: the cost of one call, tracer included */
		if (getenv("WL_REPORT_NS"))
			fprintf(stderr, "ns/call %.1f\n", (now() - t0) * 1e9 / (atol(argv[2]) ?: 1));
	} else {
		fprintf(stderr, "usage: syscalls read SECONDS | getppid N\n");
		return 2;
	}
	return 0;
}
