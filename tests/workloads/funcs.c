/* Functions of known latency, called a known number of times (for funclat):
 *   funcs calls NSLOW NFAST   slow_op (5 ms sleep) NSLOW times and fast_op (~1 us) NFAST times,
 *                             then lib_slow_op / lib_fast_op of libfuncs.so as often
 *   funcs recurse DEPTH N     N times recurse(DEPTH): each level sleeps 2 ms then recurses,
 *                             so level d returns after 2*d ms
 *   funcs loop N              N calls of fast_op in a tight loop (benchmarks), prints ns per call
 * WL_WAIT_USR1=1 waits for SIGUSR1 (after loading the library) before the calls: a tracer
 * attached with -p signals when ready.  WL_LATE=1 (calls) says on stderr how many of each slow
 * function's calls took 8192 us or more by its own clock (a loaded machine wakes a sleep late):
 * a tracer's time for a call is within the caller's, so the rest are in funclat's 4096 bucket. */
// build: -ldl
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void slow_op(void)
{
	struct timespec ts = { 0, 5000000 };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void fast_op(void)
{
	for (int i = 0; i < 300; i++)
		sink += i;
}

__attribute__((noinline)) void recurse(int depth)
{
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
	if (depth > 1)
		recurse(depth - 1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* NCALLS calls of FN, timed around each call for WL_LATE: how many took 8192 us or more, and
 * their median as the caller saw it (what a tracer's median, timed inside the call, is at most:
 * a host that wakes a 5 ms sleep late makes both late) */
static void slow_calls(const char *name, void (*fn)(void), long ncalls)
{
	double *took = calloc(ncalls > 0 ? ncalls : 1, sizeof(*took));
	long late = 0;

	for (long i = 0; i < ncalls; i++) {
		double t0 = now();

		fn();
		if (took)
			took[i] = now() - t0;
		if (now() - t0 >= 8192e-6)
			late++;
	}
	if (getenv("WL_LATE") && took && ncalls > 0) {
		qsort(took, ncalls, sizeof(*took), cmp_double);
		fprintf(stderr, "funcs: %s: %ld of %ld calls took 8192 us or more; median %.0f us\n",
			name, late, ncalls,
			1e6 * (ncalls % 2 ? took[ncalls / 2] : (took[ncalls / 2 - 1] + took[ncalls / 2]) / 2));
	}
	free(took);
}

static void wait_for_tracer(void)
{
	sigset_t set;
	int sig;

	if (!getenv("WL_WAIT_USR1"))
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigwait(&set, &sig);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], *slash;
	void (*lib_slow)(void), (*lib_fast)(void);
	sigset_t set;
	void *lib;
	long a, b;

	/* blocked before anything, so an early SIGUSR1 waits for sigwait() */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (argc != 4 && !(argc == 3 && !strcmp(argv[1], "loop"))) {
		fprintf(stderr, "usage: funcs calls NSLOW NFAST | recurse DEPTH N | loop N\n");
		return 2;
	}
	a = atol(argv[2]);
	b = argc == 4 ? atol(argv[3]) : 0;
	if (!strcmp(argv[1], "calls")) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);

		if (n < 0)
			return 1;
		path[n] = '\0';
		slash = strrchr(path, '/');
		strcpy(slash + 1, "libfuncs.so");
		lib = dlopen(path, RTLD_NOW);
		lib_slow = lib ? (void (*)(void))dlsym(lib, "lib_slow_op") : NULL;
		lib_fast = lib ? (void (*)(void))dlsym(lib, "lib_fast_op") : NULL;
		if (!lib_slow || !lib_fast) {
			fprintf(stderr, "funcs: %s\n", dlerror());
			return 1;
		}
		wait_for_tracer();
		slow_calls("slow_op", slow_op, a);
		for (long i = 0; i < b; i++)
			fast_op();
		slow_calls("lib_slow_op", lib_slow, a);
		for (long i = 0; i < b; i++)
			lib_fast();
	} else if (!strcmp(argv[1], "recurse")) {
		wait_for_tracer();
		for (long i = 0; i < b; i++)
			recurse(a);
	} else if (!strcmp(argv[1], "loop")) {
		double t0;

		wait_for_tracer();
		t0 = now();
		for (long i = 0; i < a; i++)
			fast_op();
		printf("%.1f\n", (now() - t0) * 1e9 / (a ? a : 1));
	} else {
		fprintf(stderr, "funcs: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	return 0;
}
