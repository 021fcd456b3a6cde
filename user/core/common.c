#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include "core/common.h"

bool verbose;
volatile sig_atomic_t exiting;

void p_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	/* one line, whole, whichever thread writes beside this one */
	flockfile(stderr);
	fputs("bpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	flockfile(stderr);
	fputs("bpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
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

	/* a stat, cheap enough for every tick: pid is known to be a process (thread_group_of()),
	 * since /proc/TID/task/TID exists for any thread too */
	snprintf(path, sizeof(path), "/proc/%u/task/%u", pid, pid);
	return stat(path, &st) == 0;
}

bool process_exited(__u32 pid)
{
	char path[64], line[256];
	bool zombie = false;
	int threads = 0;
	FILE *f;

	/* a zombie keeps its /proc entry until its parent reaps it; a leader that called
	 * pthread_exit() is a zombie too, but its other threads still run: Threads says so */
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6))
			zombie = strchr(line, 'Z') || strchr(line, 'X');
		else
			sscanf(line, "Threads: %d", &threads);
	}
	fclose(f);
	return zombie && threads <= 1;
}

int thread_group_of(__u32 tid, __u32 *tgid)
{
	char path[64], line[256];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", tgid) == 1) {
			err = 0;
			break;
		}
	fclose(f);
	return err;
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

long read_sysfs_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return v;
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

int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	/* libbpf's own warnings are noise when we handle the failure with a clear message. */
	if (level == LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

const char *bpf_privileges_missing(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
	bool admin, bpf, perfmon;

	if (syscall(SYS_capget, &hdr, caps))
		return NULL; /* cannot tell: the kernel will say */
#define HAS_CAP(c) (caps[(c) / 32].effective & (1U << ((c) % 32)))
	admin = HAS_CAP(CAP_SYS_ADMIN);
	bpf = admin || HAS_CAP(CAP_BPF);
	perfmon = admin || HAS_CAP(CAP_PERFMON);
#undef HAS_CAP
	if (bpf && perfmon)
		return NULL;
	return !bpf && !perfmon ? "neither" : bpf ? "no CAP_PERFMON" : "no CAP_BPF";
}

int check_bpf_privileges(void)
{
	const char *missing = bpf_privileges_missing();

	if (!missing)
		return 0;
	p_err("loading BPF programs needs root or CAP_BPF+CAP_PERFMON: this process has %s",
	      missing);
	return -EPERM;
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

int boot_id(char *buf, size_t size)
{
	char id[64] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, id, sizeof(id) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 32)
		return -ENOENT;
	id[n] = '\0';
	id[strcspn(id, "\n")] = '\0';
	for (char *c = id; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
			return -ENOENT;
	snprintf(buf, size, "%s", id);
	return 0;
}

__u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}
