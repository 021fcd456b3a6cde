/* A short-lived process: 20 ms of CPU in short_work(), then exit.  Sixty of them in a row under
 * `profile -a` give one stack shape only if every process is unwound the same way from its first
 * sample.  Usage: shortwork [MS] */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void short_work(double ms)
{
	struct timespec now, end;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
	end.tv_nsec += (long)(ms * 1e6);
	end.tv_sec += end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	do {
		for (int i = 0; i < 20000; i++)
			sink += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}

int main(int argc, char **argv)
{
	short_work(argc > 1 ? atof(argv[1]) : 20);
	return 0;
}
