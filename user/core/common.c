#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "core/common.h"

bool verbose;
volatile sig_atomic_t exiting;

void p_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("bpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fputs("bpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_percent(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !(v >= 0 && v <= 100))
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || v != v)
		return -EINVAL;
	if (v <= 0 || v > 365.0 * 24 * 3600)
		return -ERANGE;
	*out = v;
	return 0;
}

bool is_negative_number(const char *s)
{
	return s && s[0] == '-' && strspn(s + 1, "0123456789.") == strlen(s + 1) && s[1];
}

int parse_id_list(const char *s, __u32 *ids, int max)
{
	char *copy, *tok, *save = NULL;
	int n = 0, err = 0;
	__u64 v;

	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			err = -E2BIG;
			goto cleanup;
		}
		err = parse_u64(tok, 1, INT_MAX, &v);
		if (err)
			goto cleanup;
		ids[n++] = v;
	}
	err = n ? n : -EINVAL;
cleanup:
	free(copy);
	return err;
}

int parse_task_ids(const char *arg, __u32 *ids, int max, bool threads, int *nr)
{
	int n = parse_id_list(arg, ids, max);

	if (n < 0) {
		p_err("invalid %s list '%s'", threads ? "TID" : "PID", arg);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (threads ? !thread_exists(ids[i]) : !process_exists(ids[i])) {
			p_err("%s %u does not exist", threads ? "thread" : "pid", ids[i]);
			return -ESRCH;
		}
	}
	*nr = n;
	return 0;
}

int parse_cpu_list(const char *s, bool *cpus, int nr_cpus)
{
	char *copy, *tok, *save = NULL, *dash;
	__u64 lo, hi;
	int err = -EINVAL;

	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		dash = strchr(tok, '-');
		if (dash)
			*dash = '\0';
		err = parse_u64(tok, 0, INT_MAX, &lo);
		if (!err)
			err = dash ? parse_u64(dash + 1, 0, INT_MAX, &hi) : (hi = lo, 0);
		if (!err && hi < lo)
			err = -EINVAL;
		if (!err && hi >= (__u64)nr_cpus)
			err = -ERANGE;
		if (err)
			goto cleanup;
		for (__u64 c = lo; c <= hi; c++)
			cpus[c] = true;
	}
cleanup:
	free(copy);
	return err;
}

bool process_exists(__u32 pid)
{
	char path[64];
	struct stat st;

	/* /proc/TID exists for threads too; a process is a thread group leader. */
	snprintf(path, sizeof(path), "/proc/%u/task/%u", pid, pid);
	return stat(path, &st) == 0;
}

bool thread_exists(__u32 tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", tid);
	return stat(path, &st) == 0;
}

int nr_cpus_possible(void)
{
	return libbpf_num_possible_cpus();
}

bool cpu_online(int cpu)
{
	char path[80], c = '1';
	int fd;

	/* CPU 0 usually has no "online" file: it cannot be offlined. */
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
		return access(path, F_OK) == 0;
	}
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c == '1';
}

static void on_signal(int sig)
{
	exiting = 1;
}

void install_signal_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed output pipe is reported as a write error, not a silent death. */
	signal(SIGPIPE, SIG_IGN);
}

int child_start(struct child *c, char **argv)
{
	int gate[2] = { -1, -1 }, errp[2] = { -1, -1 }, err;
	char byte;

	memset(c, 0, sizeof(*c));
	c->pid = -1;
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
		signal(SIGPIPE, SIG_DFL);
		/* Wait for the parent to attach: read returns 0 when it closes the gate. */
		while (read(gate[0], &byte, 1) < 0 && errno == EINTR)
			;
		execvp(argv[0], argv);
		err = errno;
		if (write(errp[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
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
	return err;
}

int child_release(struct child *c, const char *name)
{
	int child_errno = 0;
	ssize_t n;

	close(c->gate_fd);
	c->gate_fd = -1;
	/* EOF (exec succeeded, CLOEXEC closed it) or the errno of a failed exec. */
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
	if (c->pid <= 0)
		return;
	if (c->gate_fd >= 0) {
		close(c->gate_fd);
		c->gate_fd = -1;
	}
	if (c->err_fd >= 0) {
		close(c->err_fd);
		c->err_fd = -1;
	}
	if (!c->exited) {
		kill(c->pid, SIGTERM);
		waitpid(c->pid, &c->status, 0);
		c->exited = true;
	}
}

int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	/* libbpf's own warnings are noise when we handle the failure with a clear message. */
	if (level == LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

void explain_bpf_error(const char *what, int err)
{
	if (err < 0)
		err = -err;
	if ((err == EPERM || err == EACCES) && geteuid() != 0)
		p_err("%s: %s (run as root, or with CAP_BPF and CAP_PERFMON)", what, strerror(err));
	else if (err == EACCES)
		p_err("%s: rejected by the kernel's verifier (run with -v for its log)", what);
	else if (access("/sys/kernel/btf/vmlinux", R_OK))
		p_err("%s: %s (this kernel has no BTF at /sys/kernel/btf/vmlinux: "
		      "CONFIG_DEBUG_INFO_BTF=y is required)", what, strerror(err));
	else
		p_err("%s: %s (run with -v for the verifier's log)", what, strerror(err));
}

int split_command(int argc, char **argv, char ***command)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--"))
			continue;
		if (i + 1 == argc) {
			p_err("'--' must be followed by a command");
			return -EINVAL;
		}
		*command = &argv[i + 1];
		return i;
	}
	*command = NULL;
	return argc;
}

int getopt_error(int opt, char **argv, const char *usage)
{
	const char *arg = argv[optind - 1] ? argv[optind - 1] : "";

	if (opt == ':')
		p_err("option '%s' needs an argument", arg);
	else if (is_negative_number(arg))
		p_err("invalid duration '%s' (expected seconds > 0)", arg);
	else
		p_err("unknown option '%s'", arg);
	if (opt == ':' || !is_negative_number(arg))
		fputs(usage, stderr);
	return -EINVAL;
}

int parse_pid(const char *arg, pid_t *pid)
{
	__u64 v;

	if (parse_u64(arg, 1, INT_MAX, &v)) {
		p_err("invalid PID '%s'", arg);
		return -EINVAL;
	}
	if (!process_exists(v)) {
		p_err("pid %llu does not exist", (unsigned long long)v);
		return -ESRCH;
	}
	*pid = v;
	return 0;
}

__u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}
