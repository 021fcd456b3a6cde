/* Events with known fields.  Usage: fieldwork [N] (default 5)
 *   work(7) 100 times and work(9) 50 times (work(x) returns 10 * x + 1);
 *   then N execs of /bin/true, one after the other;
 *   waits for a line on stdin first when given "-w" (so a tracer can attach by pid). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

__attribute__((noinline)) int work(int x)
{
	__asm__ volatile("" ::: "memory");
	return 10 * x + 1;
}

int main(int argc, char **argv)
{
	int n = 5, sum = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-w")) {
			char line[16];

			if (!fgets(line, sizeof(line), stdin))
				return 1;
		} else {
			n = atoi(argv[i]);
		}
	}
	for (int i = 0; i < 100; i++)
		sum += work(7);
	for (int i = 0; i < 50; i++)
		sum += work(9);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (!pid) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return sum == 100 * 71 + 50 * 91 ? 0 : 1;
}
