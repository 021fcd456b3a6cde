/* Shared library for the funclat tests: the same known-latency functions as tests/workloads/funcs,
 * under their own names (lib_*), loaded by funcs with dlopen. */
#include <time.h>

static volatile unsigned long sink;

/* ~5 ms: a sleep, so the latency does not depend on the CPU */
__attribute__((noinline)) void lib_slow_op(void)
{
	struct timespec ts = { 0, 5000000 };

	nanosleep(&ts, NULL);
}

/* ~1 us of work */
__attribute__((noinline)) void lib_fast_op(void)
{
	for (int i = 0; i < 300; i++)
		sink += i;
}
