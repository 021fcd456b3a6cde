/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_NAME.c, built by make fuzz-build): each one
 * feeds its input to a parser's real entry point, the one bpfprof calls on files other users
 * write, and asks a few questions of what it built so the lookups run over it too. */
#ifndef BPFPROF_FUZZ_H
#define BPFPROF_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "sym/syms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A file holding data, for parsers that take an fd or a path (/proc/self/fd/N); -1 on error. */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (done < size) {
		n = write(fd, data + done, size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* The input's first 8 bytes (zero-padded) as an address to look up: the fuzzer learns to aim
 * them at what it parsed. */
static inline __u64 fuzz_addr(const uint8_t *data, size_t size)
{
	__u64 a = 0;

	memcpy(&a, data, size < sizeof(a) ? size : sizeof(a));
	return a;
}

/* Separate debug files are looked up by build-id and .gnu_debuglink on the real file system: keep
 * every lookup off it, so an input names no file of this machine and runs the same anywhere. */
static inline void fuzz_no_debug_files(void)
{
	syms_set_debug_root("/nonexistent/bpfprof-fuzz");
	syms_set_debuginfod(false);
	setenv("PERF_BUILDID_DIR", "/nonexistent/bpfprof-fuzz", 1);
	unsetenv("DEBUGINFOD_URLS");
}
#endif
