/* All its work in one burst at the start: 500 getppid() calls from ppid_caller(), through libc's
 * wrapper (no frame pointer), right after exec, or when a line arrives on stdin ("wait" as the
 * argument: the test attaches to the waiting process first).  A profiler that learns of the
 * process only after its first samples walks none of them with unwind tables.  It stays 300 ms
 * after the burst, idle, so that its mappings can still be read for symbols.
 * Usage: burst [wait] */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void ppid_caller(void)
{
	for (int i = 0; i < 500; i++)
		getppid();
}

int main(int argc, char **argv)
{
	char line[16];

	if (argc > 1 && !strcmp(argv[1], "wait") && !fgets(line, sizeof(line), stdin))
		return 1;
	ppid_caller();
	usleep(300000);
	return 0;
}
