/* Opens files of a known name a known number of times, for bpfprof trace: N opens of PATH
 * (created first; each returns the same descriptor, printed once as "fd FD"), M opens of PATH
 * with ".missing" appended (each fails with ENOENT), every INTERVAL_MS milliseconds, then
 * exits.  The opens go through raw_openat(), which keeps a frame pointer (Debian's libc
 * wrappers do not), so a frame-pointer walk finds open_known() and main().
 * Prints "ready PID" first; with WL_WAIT_USR1=1 it waits for SIGUSR1 before the first open.
 * With WL_COLD_PATH=1 each open of PATH reads its name from a page never touched before (a
 * fresh private mapping of the file PATH.name): what a tracer cannot read before the kernel
 * faults it in.
 * Usage: opener PATH N M INTERVAL_MS */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

__attribute__((noinline)) long raw_openat(const char *path, int flags)
{
	register long mode asm("r10") = 0;
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "a"((long)SYS_openat), "D"((long)AT_FDCWD), "S"(path), "d"((long)flags),
		       "r"(mode)
		     : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) long open_known(const char *path)
{
	return raw_openat(path, O_RDONLY | O_CLOEXEC);
}

/* PATH from a fresh mapping of name_fd, untouched until the kernel reads it. */
static long open_cold(int name_fd)
{
	char *name = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, name_fd, 0);
	long fd;

	if (name == MAP_FAILED)
		return -1;
	fd = open_known(name);
	munmap(name, 4096);
	return fd;
}

int main(int argc, char **argv)
{
	struct timespec gap;
	char missing[4096], name_file[4096];
	long fd = -1;
	int n, m, ms, name_fd = -1;

	if (argc != 5) {
		fprintf(stderr, "usage: opener PATH N M INTERVAL_MS\n");
		return 2;
	}
	n = atoi(argv[2]);
	m = atoi(argv[3]);
	ms = atoi(argv[4]);
	gap.tv_sec = ms / 1000;
	gap.tv_nsec = (ms % 1000) * 1000000L;
	snprintf(missing, sizeof(missing), "%s.missing", argv[1]);
	close(open(argv[1], O_WRONLY | O_CREAT, 0644));
	if (getenv("WL_COLD_PATH")) {
		snprintf(name_file, sizeof(name_file), "%s.name", argv[1]);
		name_fd = open(name_file, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (name_fd < 0 || write(name_fd, argv[1], strlen(argv[1]) + 1) < 0) {
			perror(name_file);
			return 1;
		}
	}
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (getenv("WL_WAIT_USR1"))
		while (!go)
			nanosleep(&gap, NULL);
	for (int i = 0; i < n || i < m; i++) {
		if (i < n) {
			fd = name_fd >= 0 ? open_cold(name_fd) : open_known(argv[1]);
			if (i == 0) {
				printf("fd %ld\n", fd);
				fflush(stdout);
			}
			if (fd >= 0)
				close(fd);
		}
		if (i < m)
			open_known(missing);
		nanosleep(&gap, NULL);
	}
	return 0;
}
