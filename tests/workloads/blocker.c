/* Off-CPU workload with known blocking.  Usage: blocker [N] (default 50)
 *   main thread  main -> sleeper -> sleep_20ms -> raw_syscall(nanosleep): N x 20 ms asleep (S)
 *   "pipereader" reader_loop -> raw_syscall(read): blocked on a pipe (S) ...
 *   "pipewriter" writer_loop -> raw_syscall(write): ... that this thread writes every 10 ms
 *   "diskio"     disk_loop -> raw_syscall(pwrite64 / fdatasync): O_DIRECT|O_SYNC writes to a file
 *                under /var/tmp, waiting for the disk (D)
 * The process exits when main has done its N sleeps, and prints to stderr how long they took
 * ("blocker: slept US us"): on a loaded machine each sleep ends later than its 20 ms, and a test
 * compares what offcpu counted with that rather than with N x 20 ms.
 *
 * Every blocking system call goes through raw_syscall(), an inline "syscall" instruction in a
 * function with a frame pointer: Debian's libc is built without frame pointers, so a
 * frame-pointer walk that starts inside libc's nanosleep() or read() skips their caller (the
 * walk finds the caller's caller in %rbp).  Here the chain is intact. */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static volatile int done;
static int pipefd[2];

__attribute__((noinline)) long raw_syscall(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void sleep_20ms(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	while (raw_syscall(SYS_nanosleep, (long)&ts, (long)&ts, 0, 0) == -EINTR)
		;
}

static long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* The time spent in sleep_20ms(), in microseconds. */
__attribute__((noinline)) long long sleeper(int n)
{
	long long slept = 0;

	for (int i = 0; i < n; i++) {
		long long t0 = now_us();

		sleep_20ms();
		slept += now_us() - t0;
	}
	return slept;
}

__attribute__((noinline)) void reader_loop(void)
{
	char c;

	while (raw_syscall(SYS_read, pipefd[0], (long)&c, 1, 0) == 1)
		;
}

static void *reader(void *arg)
{
	prctl(PR_SET_NAME, "pipereader");
	reader_loop();
	return NULL;
}

__attribute__((noinline)) void writer_loop(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	char c = 'x';

	while (!done) {
		raw_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0);
		raw_syscall(SYS_write, pipefd[1], (long)&c, 1, 0);
	}
}

static void *writer(void *arg)
{
	prctl(PR_SET_NAME, "pipewriter");
	writer_loop();
	return NULL;
}

__attribute__((noinline)) void disk_loop(int fd, void *buf)
{
	for (long off = 0; !done; off = (off + 4096) % (4 << 20)) {
		if (raw_syscall(SYS_pwrite64, fd, (long)buf, 4096, off) != 4096)
			break;
		raw_syscall(SYS_fdatasync, fd, 0, 0, 0);
	}
}

static void *disk(void *arg)
{
	char path[] = "/var/tmp/bpfprof-blocker.XXXXXX";
	void *buf = NULL;
	int tmp, fd;

	prctl(PR_SET_NAME, "diskio");
	tmp = mkstemp(path);
	if (tmp < 0) {
		perror("blocker: mkstemp");
		return NULL;
	}
	/* O_DIRECT|O_SYNC: every write goes to the disk and the thread waits for it. */
	fd = open(path, O_RDWR | O_DIRECT | O_SYNC);
	unlink(path);
	close(tmp);
	if (fd < 0 || posix_memalign(&buf, 4096, 4096)) {
		perror("blocker: O_DIRECT file in /var/tmp");
		return NULL;
	}
	memset(buf, 'x', 4096);
	disk_loop(fd, buf);
	close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	pthread_t r, w, d;
	long long slept;

	if (pipe(pipefd)) {
		perror("blocker: pipe");
		return 1;
	}
	pthread_create(&r, NULL, reader, NULL);
	pthread_create(&w, NULL, writer, NULL);
	pthread_create(&d, NULL, disk, NULL);
	slept = sleeper(n);
	fprintf(stderr, "blocker: slept %lld us\n", slept);
	done = 1;
	pthread_join(w, NULL);
	close(pipefd[1]); /* the reader sees end of file */
	pthread_join(r, NULL);
	pthread_join(d, NULL);
	return 0;
}
