/* A process whose end takes time in the kernel, without frame pointers: it touches MB megabytes
 * (default 128), then leaves from leave_now() by exit(), or with "exec" from exec_now() by
 * execv() of /bin/true.  Freeing that memory is most of the exit (exit_mmap(), after exit_mm()
 * has cleared the task's mm) and of the exec (the old mm released after exec_mmap() installed the
 * new one): samples there have the registers saved at the syscall's entry, which point into
 * memory that is gone, and must still unwind to main;leave_now (main;exec_now).
 * Usage: bigexit_nofp [MB [exec]] */
// build: -fomit-frame-pointer -momit-leaf-frame-pointer
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static char *touch(size_t bytes)
{
	char *p = malloc(bytes);

	if (p)
		memset(p, 1, bytes);
	return p;
}

__attribute__((noinline)) static void leave_now(void)
{
	exit(0);
}

__attribute__((noinline)) static void exec_now(void)
{
	execl("/bin/true", "true", (char *)NULL);
	exit(1);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;

	if (!touch(mb << 20))
		return 1;
	if (argc > 2 && !strcmp(argv[2], "exec"))
		exec_now();
	leave_now();
	return 0;
}
