/* Time spent inside Debian's libc, which has no frame pointers, called from functions that have
 * them: a frame-pointer walk loses the caller (libc's leaf never saved RBP), call-frame tables
 * keep it.
 * Usage: inlibc memset SECONDS  - main -> filler -> memset (on-CPU)
 *        inlibc sleep SECONDS   - main -> sleeper_a -> nanosleep (off-CPU, 1 ms sleeps) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char buf[1 << 20];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void filler(double seconds)
{
	double end = now() + seconds;
	int i = 0;

	while (now() < end)
		memset(buf, i++, sizeof(buf));
}

__attribute__((noinline)) void sleeper_a(double seconds)
{
	struct timespec ms = { 0, 1000000 };
	double end = now() + seconds;

	while (now() < end)
		nanosleep(&ms, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "memset")) {
		filler(atof(argv[2]));
	} else if (argc == 3 && !strcmp(argv[1], "sleep")) {
		sleeper_a(atof(argv[2]));
	} else {
		fprintf(stderr, "usage: inlibc memset SECONDS | sleep SECONDS\n");
		return 2;
	}
	return 0;
}
