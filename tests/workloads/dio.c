/* Known block I/O: READS then WRITES synchronous O_DIRECT 4 KiB requests to PATH (a block device
 * or a file with allocated blocks), at distinct 4 KiB-aligned offsets, one at a time, so none can
 * be merged with another.  With GOFILE, waits until that file exists before the first request,
 * so a tracer can be started against this process's PID first.
 * Usage: dio PATH READS WRITES [GOFILE] */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BS 4096

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	long reads, writes, i, blocks;
	off_t size;
	void *buf;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: dio PATH READS WRITES [GOFILE]\n");
		return 2;
	}
	reads = atol(argv[2]);
	writes = atol(argv[3]);
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "dio: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size = lseek(fd, 0, SEEK_END);
	blocks = size / BS;
	if (blocks < 1) {
		fprintf(stderr, "dio: %s is smaller than %d bytes\n", argv[1], BS);
		return 1;
	}
	if (posix_memalign(&buf, BS, BS))
		return 1;
	memset(buf, 0x5a, BS);
	if (argc > 4) {
		while (access(argv[4], F_OK))
			nanosleep(&tick, NULL);
	}
	/* stride 7 blocks: no two consecutive requests are adjacent on disk */
	for (i = 0; i < reads; i++) {
		if (pread(fd, buf, BS, (off_t)((i * 7) % blocks) * BS) != BS) {
			fprintf(stderr, "dio: read: %s\n", strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < writes; i++) {
		if (pwrite(fd, buf, BS, (off_t)((i * 7 + 3) % blocks) * BS) != BS) {
			fprintf(stderr, "dio: write: %s\n", strerror(errno));
			return 1;
		}
	}
	close(fd);
	return 0;
}
