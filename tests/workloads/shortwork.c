/* A short-lived process: 20 ms of CPU in short_work(), then exit.  Sixty of them in a row under
 * `profile -a` give one stack shape only if every process is unwound the same way from its first
 * sample.  With FORKS, that many children forked one after another (no exec: each runs its
 * parent's code, as a shell's subshell does) do the work instead.  WL_COMM=NAME renames the
 * process (a first run whose samples a test tells apart).  Usage: shortwork [MS [FORKS]] */
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

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
	double ms = argc > 1 ? atof(argv[1]) : 20;
	int forks = argc > 2 ? atoi(argv[2]) : 0;

	if (getenv("WL_COMM"))
		prctl(PR_SET_NAME, getenv("WL_COMM"));
	if (!forks)
		short_work(ms);
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			short_work(ms);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return 0;
}
