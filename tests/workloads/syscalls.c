/* Syscall-heavy workload: time mostly in the kernel under a known user function.
 * Usage: syscalls read SECONDS   - read_devzero() reads /dev/zero in 64 KiB blocks
 *        syscalls getppid N      - call_getppid() makes exactly N getppid() calls, prints N
 * System calls go through raw_syscall3(), which keeps a frame pointer: Debian's libc wrappers do
 * not, and a frame-pointer walk through them loses their caller (the subject of .eh_frame
 * unwinding, tested elsewhere). */
#include <fcntl.h>
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
	if (argc == 3 && !strcmp(argv[1], "read")) {
		read_devzero(atof(argv[2]));
	} else if (argc == 3 && !strcmp(argv[1], "getppid")) {
		/* Give a tracer started alongside time to attach before the counted calls. */
		usleep(getenv("WL_DELAY_MS") ? atoi(getenv("WL_DELAY_MS")) * 1000 : 0);
		call_getppid(atol(argv[2]));
		printf("%ld\n", atol(argv[2]));
	} else {
		fprintf(stderr, "usage: syscalls read SECONDS | getppid N\n");
		return 2;
	}
	return 0;
}
