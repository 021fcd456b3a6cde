// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "out/tracefmt.h"

struct flag_name {
	unsigned long flag;
	const char *name;
};
#define FLAGS(t) t, sizeof(t) / sizeof(t[0])

/* open(2)'s flags as perf trace's beautifier names them, the access mode apart */
static const struct flag_name open_flags[] = {
	/* the flags that contain others first: O_SYNC holds O_DSYNC, O_TMPFILE O_DIRECTORY */
	{ O_SYNC, "SYNC" },	    { O_TMPFILE, "TMPFILE" },	{ O_CREAT, "CREAT" },
	{ O_EXCL, "EXCL" },	    { O_NOCTTY, "NOCTTY" },	{ O_TRUNC, "TRUNC" },
	{ O_APPEND, "APPEND" },	    { O_NONBLOCK, "NONBLOCK" },	{ O_DSYNC, "DSYNC" },
	{ O_DIRECT, "DIRECT" },	    { O_LARGEFILE, "LARGEFILE" }, { O_DIRECTORY, "DIRECTORY" },
	{ O_NOFOLLOW, "NOFOLLOW" }, { O_NOATIME, "NOATIME" },	{ O_CLOEXEC, "CLOEXEC" },
	{ O_PATH, "PATH" },
};

/* PROT_SEM: the kernel's (asm-generic/mman-common.h), not in the C library's header */
#define PROT_SEM_KERNEL 0x8

/* mmap(2), mprotect(2): PROT_* */
static const struct flag_name prot_flags[] = {
	{ PROT_READ, "READ" },		 { PROT_WRITE, "WRITE" },     { PROT_EXEC, "EXEC" },
	{ PROT_SEM_KERNEL, "SEM" },	 { PROT_GROWSDOWN, "GROWSDOWN" }, { PROT_GROWSUP, "GROWSUP" },
};

/* mmap(2): MAP_* (the type first: SHARED_VALIDATE holds SHARED and PRIVATE's bits) */
static const struct flag_name map_flags[] = {
	{ MAP_SHARED_VALIDATE, "SHARED_VALIDATE" }, { MAP_SHARED, "SHARED" },
	{ MAP_PRIVATE, "PRIVATE" }, { MAP_FIXED_NOREPLACE, "FIXED_NOREPLACE" }, { MAP_FIXED, "FIXED" },
	{ MAP_ANONYMOUS, "ANONYMOUS" }, { MAP_GROWSDOWN, "GROWSDOWN" }, { MAP_DENYWRITE, "DENYWRITE" },
	{ MAP_EXECUTABLE, "EXECUTABLE" }, { MAP_LOCKED, "LOCKED" }, { MAP_NORESERVE, "NORESERVE" },
	{ MAP_POPULATE, "POPULATE" }, { MAP_NONBLOCK, "NONBLOCK" }, { MAP_STACK, "STACK" },
	{ MAP_HUGETLB, "HUGETLB" }, { MAP_SYNC, "SYNC" },
};

/* v's flags by name, '|' between, after what buf holds at off; bits no name covers in hex. */
static int flags_str(char *buf, size_t size, int off, unsigned long v, const struct flag_name *t,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		/* O_LARGEFILE is 0 in a 64-bit C library: never shown */
		if (!t[i].flag || (v & t[i].flag) != t[i].flag)
			continue;
		off += snprintf(buf + off, size > (size_t)off ? size - off : 0, "%s%s",
				off ? "|" : "", t[i].name);
		v &= ~t[i].flag;
	}
	if (v)
		off += snprintf(buf + off, size > (size_t)off ? size - off : 0, "%s%#lx",
				off ? "|" : "", v);
	return off;
}

static int open_flags_str(char *buf, size_t size, unsigned v)
{
	static const char *const acc[] = { "RDONLY", "WRONLY", "RDWR", "ACCMODE" };
	int off = snprintf(buf, size, "%s", acc[v & O_ACCMODE]);

	return flags_str(buf, size, off, v & ~O_ACCMODE, FLAGS(open_flags));
}

/* O_TMPFILE without O_DIRECTORY (the kernel's __O_TMPFILE) */
#define __O_TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)

static bool is_open_call(const char *sys)
{
	return !strcmp(sys, "open") || !strcmp(sys, "openat") || !strcmp(sys, "open_by_handle_at");
}

static __s64 sign_extend(__u64 v, unsigned size)
{
	switch (size) {
	case 1: return (__s8)v;
	case 2: return (__s16)v;
	case 4: return (__s32)v;
	default: return (__s64)v;
	}
}

static void format_arg(char *buf, size_t size, const char *sys, const struct trace_arg *a)
{
	size_t nlen = strlen(a->name);
	__s64 s = sign_extend(a->val, a->size);

	if (a->is_str && a->str)
		snprintf(buf, size, "\"%s\"", a->str);
	/* an address the tracepoint types as a number (munmap's unsigned long addr, brk's brk) */
	else if (a->is_str || a->is_ptr || (nlen >= 4 && !strcmp(a->name + nlen - 4, "addr")) ||
		 !strcmp(a->name, "brk"))
		snprintf(buf, size, "%#llx", (unsigned long long)a->val);
	else if (nlen >= 2 && !strcmp(a->name + nlen - 2, "fd") && (int)a->val == AT_FDCWD)
		snprintf(buf, size, "CWD");
	/* a descriptor is an int, whatever the width the tracepoint gives it (mmap's long fd) */
	else if (nlen >= 2 && !strcmp(a->name + nlen - 2, "fd"))
		snprintf(buf, size, "%d", (int)a->val);
	else if (!strcmp(a->name, "flags") && is_open_call(sys))
		open_flags_str(buf, size, (unsigned)a->val);
	else if (!strcmp(a->name, "prot") && (!strcmp(sys, "mmap") || strstr(sys, "mprotect")))
		flags_str(buf, size, 0, a->val, FLAGS(prot_flags));
	else if (!strcmp(a->name, "flags") && !strcmp(sys, "mmap"))
		flags_str(buf, size, 0, a->val, FLAGS(map_flags));
	else if (!strcmp(a->name, "mode") && is_open_call(sys))
		snprintf(buf, size, "%#llo", (unsigned long long)a->val);
	else if (a->is_signed)
		snprintf(buf, size, "%lld", (long long)s);
	else
		snprintf(buf, size, "%llu", (unsigned long long)(a->size < 8 ?
				a->val & ((1ULL << (a->size * 8)) - 1) : a->val));
}

int trace_format_call(char *buf, size_t size, const char *sys, const struct trace_arg *args,
		      int n)
{
	int off = snprintf(buf, size, "%s(", sys);
	bool first = true, creates = false;
	char val[512];

	/* open's mode means something only with O_CREAT or O_TMPFILE: perf hides it otherwise */
	for (int i = 0; i < n && is_open_call(sys); i++)
		if (!strcmp(args[i].name, "flags"))
			creates = args[i].val & (O_CREAT | __O_TMPFILE_BIT);
	for (int i = 0; i < n; i++) {
		/* perf leaves out an argument that is zero, unless it is a string */
		if (!args[i].val && !(args[i].is_str && args[i].str))
			continue;
		if (is_open_call(sys) && !creates && !strcmp(args[i].name, "mode"))
			continue;
		format_arg(val, sizeof(val), sys, &args[i]);
		off += snprintf(buf + off, size > (size_t)off ? size - off : 0, "%s%s: %s",
				first ? "" : ", ", args[i].name, val);
		first = false;
	}
	off += snprintf(buf + off, size > (size_t)off ? size - off : 0, ")");
	return off;
}

/* syscalls whose return value is an address: perf trace prints it in hex */
static bool returns_address(const char *sys)
{
	static const char *const names[] = { "mmap", "mremap", "brk", "shmat" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(sys, names[i]))
			return true;
	return false;
}

char *trace_format_ret(char *buf, size_t size, const char *sys, __s64 ret)
{
	const char *name;

	if (ret < 0 && ret >= -4095) {
		name = strerrorname_np((int)-ret);
		if (name)
			snprintf(buf, size, "-1 %s (%s)", name, strerror((int)-ret));
		else
			snprintf(buf, size, "-1 errno %lld", (long long)-ret);
	} else if (returns_address(sys)) {
		snprintf(buf, size, "%#llx", (unsigned long long)ret);
	} else {
		snprintf(buf, size, "%lld", (long long)ret);
	}
	return buf;
}

void trace_write_syscall(FILE *f, double t_ms, double dur_ms, const char *comm, __u32 tid,
			 const char *call, const char *ret)
{
	if (dur_ms < 0) /* a call that does not return: perf trace's blank duration and '?' */
		fprintf(f, "%10.3f (         ): %s/%u %-70s = ?\n", t_ms, comm, tid, call);
	else
		fprintf(f, "%10.3f (%6.3f ms): %s/%u %-70s = %s\n", t_ms, dur_ms, comm, tid, call,
			ret);
}

void trace_write_tp(FILE *f, const char *comm, __u32 tid, __u32 cpu, __u64 ts_ns,
		    const char *event, const char *fields)
{
	fprintf(f, "%16s %5u [%03u] %5llu.%06llu: %s: %s\n", comm, tid, cpu,
		(unsigned long long)(ts_ns / 1000000000ULL),
		(unsigned long long)(ts_ns % 1000000000ULL / 1000), event, fields);
}

/* processes by their total calls (then pid), within one by total time (then name) */
static __u64 proc_calls(const struct trace_sum_row *rows, size_t n, __u32 tgid)
{
	__u64 c = 0;

	for (size_t i = 0; i < n; i++)
		if (rows[i].tgid == tgid)
			c += rows[i].calls;
	return c;
}

struct sort_row {
	struct trace_sum_row *r;
	__u64 proc_calls;
};

static int cmp_rows(const void *pa, const void *pb)
{
	const struct sort_row *a = pa, *b = pb;
	int c;

	if (a->proc_calls != b->proc_calls)
		return a->proc_calls > b->proc_calls ? -1 : 1;
	if (a->r->tgid != b->r->tgid)
		return a->r->tgid < b->r->tgid ? -1 : 1;
	if (a->r->total_ns != b->r->total_ns)
		return a->r->total_ns > b->r->total_ns ? -1 : 1;
	c = strcmp(a->r->sys, b->r->sys);
	return c;
}

int trace_write_summary(FILE *f, struct trace_sum_row *rows, size_t n, unsigned sumsq_shift)
{
	struct sort_row *s = calloc(n ? n : 1, sizeof(*s));
	struct trace_sum_row *sorted = calloc(n ? n : 1, sizeof(*sorted));
	__u64 all = 0;

	if (!s || !sorted) {
		free(s);
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		s[i].r = &rows[i];
		s[i].proc_calls = proc_calls(rows, n, rows[i].tgid);
		all += rows[i].calls;
	}
	qsort(s, n, sizeof(*s), cmp_rows);
	for (size_t i = 0; i < n; i++)
		sorted[i] = *s[i].r;
	memcpy(rows, sorted, n * sizeof(*rows));
	free(s);
	free(sorted);
	fprintf(f, "\n Summary of events:\n");
	for (size_t i = 0; i < n; i++) {
		const struct trace_sum_row *r = &rows[i];
		double avg;

		if (!i || rows[i - 1].tgid != r->tgid) {
			__u64 pc = proc_calls(rows, n, r->tgid);

			/* perf counts an entry and an exit event per call */
			fprintf(f, "\n %s (%u), %llu events, %.1f%%\n\n", r->comm, r->tgid,
				(unsigned long long)pc * 2, all ? 100.0 * pc / all : 0.0);
			fprintf(f, "   syscall            calls  errors  total       min       avg"
				   "       max       stddev\n");
			fprintf(f, "                                     (msec)    (msec)    (msec)"
				   "    (msec)        (%%)\n");
			fprintf(f, "   --------------- --------  ------ -------- --------- ---------"
				   " ---------     ------\n");
		}
		avg = r->calls ? (double)r->total_ns / r->calls : 0;
		fprintf(f, "   %-15s %8llu %6llu %9.3f %9.3f %9.3f %9.3f %9.2f%%\n", r->sys,
			(unsigned long long)r->calls, (unsigned long long)r->errors,
			r->total_ns / 1e6, r->calls ? r->min_ns / 1e6 : 0.0, avg / 1e6,
			r->max_ns / 1e6, rel_stddev_pct(r->calls, r->total_ns, r->sumsq, sumsq_shift));
	}
	fprintf(f, "\n");
	return ferror(f) ? -EIO : 0;
}

double rel_stddev_pct(__u64 n, double total, __u64 sumsq, unsigned shift)
{
	double q = (double)(1ULL << shift), avg = n ? total / n : 0, m = avg / q, var;

	if (n < 2 || !avg)
		return 0;
	var = ((double)sumsq - n * m * m) / (n - 1);
	return var > 0 ? 100.0 * sqrt(var / n) * q / avg : 0;
}
