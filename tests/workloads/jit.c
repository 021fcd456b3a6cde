/* A tiny JIT: copies a spin loop's machine code into an anonymous executable page, names it in
 * a perf map as V8 or the JVM's perf-map-agent would, and calls it for SECONDS.
 * Usage: jit SECONDS [MAP]  (MAP: where to write the map, default /tmp/perf-<its pid>.map; an
 * existing file is truncated and written in place, keeping its owner).  Prints "jit ADDR". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* unsigned long spin(unsigned long n): counts n down to zero */
#if defined(__x86_64__)
static const unsigned char spin_code[] = {
	0x48, 0x89, 0xf8, /* mov %rdi,%rax */
	0x48, 0xff, 0xc8, /* 1: dec %rax */
	0x75, 0xfb,       /* jnz 1b */
	0xc3,             /* ret */
};
#elif defined(__aarch64__)
static const unsigned char spin_code[] = {
	0x00, 0x04, 0x00, 0xf1, /* 1: subs x0, x0, #1 */
	0xe1, 0xff, 0xff, 0x54, /* b.ne 1b */
	0xc0, 0x03, 0x5f, 0xd6, /* ret */
};
#else
#error "jit.c: no spin loop for this architecture"
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_map(const char *path, const void *code)
{
	char line[128];
	int fd, len;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	len = snprintf(line, sizeof(line), "%lx %zx jitted_spin\n", (unsigned long)code,
		       sizeof(spin_code));
	if (write(fd, line, len) != len) {
		perror(path);
		close(fd);
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2, end;
	unsigned long (*spin)(unsigned long);
	char path[64];
	void *code;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return perror("mmap"), 1;
	memcpy(code, spin_code, sizeof(spin_code));
	__builtin___clear_cache((char *)code, (char *)code + sizeof(spin_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return perror("mprotect"), 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (write_map(argc > 2 ? argv[2] : path, code))
		return 1;
	printf("jit %p\n", code);
	fflush(stdout);
	spin = (unsigned long (*)(unsigned long))code;
	for (end = now() + seconds; now() < end;)
		spin(1000000);
	return 0;
}
