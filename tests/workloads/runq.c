/* Run-queue contention with a known shape: NBUSY threads ("rq-busy-0".."rq-busy-N") spin pinned
 * to one CPU, so each waits for the others' slices on that CPU's run queue, and one thread
 * ("rq-waker") pinned to the same CPU sleeps WAKE_MS, then spins ~100 us, over and over: short
 * sleeps and wakeups into a busy run queue.  The main thread ("rq-main") prints "ready" once every
 * thread is named and pinned, then sleeps until SECONDS have passed.  On SIGUSR1 it starts a
 * thread "rq-short" on the same CPU that spins SHORT_MS and exits (a task that exits during a
 * trace); it prints "short TID done" once that thread has been joined.
 *
 * Usage: runq [-b NBUSY] [-c CPU] [-w WAKE_MS] [-s SHORT_MS] SECONDS */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define MAX_BUSY 16

static volatile int stop;
static volatile sig_atomic_t short_requested;
static int cpu, wake_ms = 3, short_ms = 100;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin_and_name(const char *name)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

static void spin_for(double seconds)
{
	double end = now_s() + seconds;

	while (!stop && now_s() < end)
		;
}

static void *busy(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "rq-busy-%ld", (long)arg);
	pin_and_name(name);
	while (!stop)
		;
	return NULL;
}

static void *waker(void *arg)
{
	struct timespec ts = { 0, wake_ms * 1000000L };

	pin_and_name("rq-waker");
	while (!stop) {
		nanosleep(&ts, NULL);
		spin_for(0.0001);
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	pin_and_name("rq-short");
	*(long *)arg = syscall(SYS_gettid);
	spin_for(short_ms / 1000.0);
	return NULL;
}

static void on_usr1(int sig)
{
	short_requested = 1;
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_BUSY + 1], sh;
	int nbusy = 3, opt, i;
	struct sigaction sa = { .sa_handler = on_usr1 };
	double seconds, end;
	long short_tid;

	while ((opt = getopt(argc, argv, "b:c:w:s:")) != -1) {
		switch (opt) {
		case 'b':
			nbusy = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'w':
			wake_ms = atoi(optarg);
			break;
		case 's':
			short_ms = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || nbusy < 0 || nbusy > MAX_BUSY || wake_ms <= 0 || short_ms <= 0)
		goto usage;
	seconds = atof(argv[optind]);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	prctl(PR_SET_NAME, "rq-main", 0, 0, 0);
	for (i = 0; i < nbusy; i++)
		pthread_create(&threads[i], NULL, busy, (void *)(long)i);
	pthread_create(&threads[nbusy], NULL, waker, NULL);
	usleep(100000); /* every thread has named and pinned itself */
	printf("ready %d\n", getpid());
	fflush(stdout);
	end = now_s() + seconds;
	while (now_s() < end) {
		usleep(10000);
		if (short_requested) {
			short_requested = 0;
			pthread_create(&sh, NULL, short_lived, &short_tid);
			pthread_join(sh, NULL);
			printf("short %ld done\n", short_tid);
			fflush(stdout);
		}
	}
	stop = 1;
	for (i = 0; i <= nbusy; i++)
		pthread_join(threads[i], NULL);
	return 0;
usage:
	fprintf(stderr, "usage: runq [-b NBUSY] [-c CPU] [-w WAKE_MS] [-s SHORT_MS] SECONDS\n");
	return 2;
}
