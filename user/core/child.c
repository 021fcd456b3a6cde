// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "core/child.h"
#include "core/common.h"

/* Between SIGTERM and SIGKILL: a command that cleans up on SIGTERM has this long. */
#define GRACE_NS (2ULL * 1000000000ULL)
/* The byte that opens the gate: EOF there means bpfprof died during setup. */
#define GATE_GO 'g'

int child_program_path(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH") ?: "/usr/local/bin:/usr/bin:/bin";
	char buf[PATH_MAX];
	struct stat st;
	int err = -ENOENT;

	if (strchr(name, '/')) {
		if (stat(name, &st))
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (access(name, X_OK))
			return -errno;
		snprintf(out, size, "%s", name);
		return 0;
	}
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)len, path, len ? "/" : "", name);
		if (!stat(buf, &st) && S_ISREG(st.st_mode)) {
			if (!access(buf, X_OK)) {
				snprintf(out, size, "%s", buf);
				return 0;
			}
			err = -EACCES;
		}
		path += len + (path[len] == ':');
	}
	return err;
}

static int find_in_path(const char *name)
{
	char path[PATH_MAX];

	return child_program_path(name, path, sizeof(path));
}

int child_check(char **argv)
{
	int err = find_in_path(argv[0]);

	if (err)
		p_err("cannot run '%s': %s", argv[0], strerror(-err));
	return err;
}

static void child_exec(char **argv, pid_t parent, int gate, int errp)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGQUIT, SIGHUP };
	sigset_t none;
	char byte = 0;
	ssize_t n;
	int err;

	/* bpfprof killed or crashed (no teardown to stop us): we die with it, at the gate or not */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	/* the command gets the signal handling a shell would give it, not bpfprof's */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* held until the parent says go; EOF is a setup that died: never run untraced */
	while ((n = read(gate, &byte, 1)) < 0 && errno == EINTR)
		;
	if (n != 1 || byte != GATE_GO)
		_exit(127);
	execvp(argv[0], argv);
	err = errno;
	if (write(errp, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

int child_start(struct child *c, char **argv)
{
	int gate[2] = { -1, -1 }, errp[2] = { -1, -1 }, err;
	pid_t parent = getpid();

	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->gate_fd = c->err_fd = -1;
	if (pipe2(gate, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	c->pid = fork();
	if (c->pid < 0) {
		err = -errno;
		goto fail;
	}
	if (c->pid == 0) {
		close(gate[1]);
		close(errp[0]);
		child_exec(argv, parent, gate[0], errp[1]);
	}
	close(gate[0]);
	close(errp[1]);
	c->gate_fd = gate[1];
	c->err_fd = errp[0];
	return 0;
fail:
	p_err("cannot start '%s': %s", argv[0], strerror(-err));
	for (int i = 0; i < 2; i++) {
		if (gate[i] >= 0)
			close(gate[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	c->pid = -1;
	return err;
}

int child_release(struct child *c, const char *name)
{
	char go = GATE_GO;
	int child_errno = 0;
	ssize_t n;

	/* a child that died at the gate (killed by someone) gets EPIPE here: its exec says so */
	do {
		n = write(c->gate_fd, &go, 1);
	} while (n < 0 && errno == EINTR);
	close(c->gate_fd);
	c->gate_fd = -1;
	/* EOF (exec succeeded, CLOEXEC closed it) or the errno of a failed exec */
	do {
		n = read(c->err_fd, &child_errno, sizeof(child_errno));
	} while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	if (n == sizeof(child_errno)) {
		p_err("cannot run '%s': %s", name, strerror(child_errno));
		waitpid(c->pid, &c->status, 0);
		c->exited = true;
		return -child_errno;
	}
	return 0;
}

bool child_poll(struct child *c)
{
	if (c->pid <= 0 || c->exited)
		return true;
	if (waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->exited = true;
	return c->exited;
}

void child_stop(struct child *c)
{
	__u64 deadline;

	if (c->pid <= 0)
		return;
	if (c->gate_fd >= 0) {
		/* still held: kill it before the gate opens, so that it never runs */
		kill(c->pid, SIGKILL);
		close(c->gate_fd);
		c->gate_fd = -1;
	} else if (!child_poll(c)) {
		/* a second Ctrl-C (or SIGTERM), before or during the grace period: no more waiting */
		kill(c->pid, exiting > 1 ? SIGKILL : SIGTERM);
		deadline = now_ns() + GRACE_NS;
		while (!child_poll(c) && now_ns() < deadline && exiting <= 1)
			usleep(10000);
		if (!c->exited)
			kill(c->pid, SIGKILL);
	}
	if (c->err_fd >= 0) {
		close(c->err_fd);
		c->err_fd = -1;
	}
	if (!c->exited) {
		while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
			;
		c->exited = true;
	}
}
