/* `-- COMMAND`: the command is forked held at a gate, before its exec, once tracing is in
 * place; the runner then arms the follower with its PID and opens the gate, so not one of its
 * instructions after exec runs untraced, and nothing it did before (waiting at the gate) is
 * counted.  A setup that fails kills it while it is still held: it never runs. */
#ifndef BPFPROF_CHILD_H
#define BPFPROF_CHILD_H
#include <stdbool.h>
#include <sys/types.h>

struct child {
	pid_t pid;     /* -1: none */
	int gate_fd;   /* write end: a byte through it lets the child exec, EOF makes it exit;
			* -1 once released */
	int err_fd;    /* read end: the child writes errno here if exec fails (CLOEXEC otherwise) */
	int status;    /* wait status, once exited */
	bool exited;
};

/* Before tracing: the command can be run (found in PATH, executable).  0, or -errno with the
 * message printed: "cannot run 'x': No such file or directory". */
int child_check(char **argv);
/* Where execvp() finds the program name: itself when it has a '/', else the first executable
 * regular file of that name in PATH, into out.  0 or -errno. */
int child_program_path(const char *name, char *out, size_t size);
/* Forks the child, held before exec, with default signal handling (none of bpfprof's handlers).
 * 0, or -errno with the message printed. */
int child_start(struct child *c, char **argv);
/* Lets the child exec (a byte through the gate); returns 0, or -errno when exec failed (message
 * printed). */
int child_release(struct child *c, const char *name);
/* Non-blocking: true once the child has exited (status saved), or when there is none. */
bool child_poll(struct child *c);
/* Ends the child and reaps it: SIGKILL while it is held (it must never run), else SIGTERM, then
 * SIGKILL if it is still there 2 s later, or as soon as bpfprof is asked to end a second time
 * (exiting > 1: a second Ctrl-C).  Should bpfprof die without calling it, the child gets
 * SIGKILL from the kernel (PR_SET_PDEATHSIG), and one held at its gate exits: it runs only when
 * child_release() says so.  No-op without a child, or once it is reaped. */
void child_stop(struct child *c);
#endif
