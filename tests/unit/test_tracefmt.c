// SPDX-License-Identifier: GPL-2.0
/* bpfprof trace's lines against perf trace's and perf script's, byte for byte. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "test.h"
#include "out/tracefmt.h"

static void test_openat_line(void)
{
	struct trace_arg args[] = {
		{ .name = "dfd", .val = (__u64)(__s64)AT_FDCWD, .is_signed = true, .size = 4 },
		{ .name = "filename", .val = 0x7f00, .is_str = true, .str = "/etc/ld.so.cache",
		  .size = 8 },
		{ .name = "flags", .val = O_RDONLY | O_CLOEXEC, .is_signed = true, .size = 4 },
		{ .name = "mode", .val = 0x7a90, .size = 2 }, /* junk without O_CREAT: hidden */
	};
	char call[512], ret[64], *out = NULL;
	size_t len = 0;
	FILE *f;

	trace_format_call(call, sizeof(call), "openat", args, 4);
	CHECK_STR(call, "openat(dfd: CWD, filename: \"/etc/ld.so.cache\", flags: RDONLY|CLOEXEC)");
	args[2].val = O_WRONLY | O_CREAT | O_TRUNC;
	args[3].val = 0644;
	trace_format_call(call, sizeof(call), "openat", args, 4);
	CHECK_STR(call, "openat(dfd: CWD, filename: \"/etc/ld.so.cache\", flags: "
			"WRONLY|CREAT|TRUNC, mode: 0644)");
	/* a string not read (fault): its pointer */
	args[1].str = NULL;
	args[2].val = 0;
	trace_format_call(call, sizeof(call), "openat", args, 4);
	CHECK_STR(call, "openat(dfd: CWD, filename: 0x7f00)");
	CHECK_STR(trace_format_ret(ret, sizeof(ret), "openat", 3), "3");
	CHECK_STR(trace_format_ret(ret, sizeof(ret), "openat", -2),
		  "-1 ENOENT (No such file or directory)");
	CHECK_STR(trace_format_ret(ret, sizeof(ret), "mmap", 0x7f0000001000LL), "0x7f0000001000");
	f = open_memstream(&out, &len);
	trace_write_syscall(f, 0.123, 0.005, "ls", 4242, "close(fd: 3)", "0");
	fclose(f);
	CHECK_STR(out, "     0.123 ( 0.005 ms): ls/4242 close(fd: 3)"
		       "                                                           = 0\n");
	free(out);
	/* a call that does not return: no duration, '?' */
	f = open_memstream(&out, &len);
	trace_write_syscall(f, 0.456, -1, "ls", 4242, "exit_group()", "0");
	fclose(f);
	CHECK_STR(out, "     0.456 (         ): ls/4242 exit_group()"
		       "                                                           = ?\n");
	free(out);
}

static void test_signed_and_pointers(void)
{
	struct trace_arg args[] = {
		{ .name = "fd", .val = 0xffffffff, .is_signed = true, .size = 4 },
		{ .name = "buf", .val = 0x1000, .is_ptr = true, .size = 8 },
		{ .name = "count", .val = 0xffffffffffffffffULL, .size = 8 },
	};
	char call[256];

	trace_format_call(call, sizeof(call), "read", args, 3);
	CHECK_STR(call, "read(fd: -1, buf: 0x1000, count: 18446744073709551615)");
}

/* mmap's and mprotect's PROT_* and MAP_* named as perf trace names them; mmap's fd, an unsigned
 * long in its tracepoint, an int (-1 for an anonymous map) */
static void test_mmap_flags(void)
{
	struct trace_arg args[] = {
		{ .name = "len", .val = 8192, .size = 8 },
		{ .name = "prot", .val = PROT_READ | PROT_WRITE, .size = 8 },
		{ .name = "flags", .val = MAP_PRIVATE | MAP_ANONYMOUS, .size = 8 },
		{ .name = "fd", .val = 0xffffffff, .size = 8 },
	};
	char call[256];

	trace_format_call(call, sizeof(call), "mmap", args, 4);
	CHECK_STR(call, "mmap(len: 8192, prot: READ|WRITE, flags: PRIVATE|ANONYMOUS, fd: -1)");
	args[1].val = PROT_READ | PROT_EXEC;
	args[2].val = MAP_SHARED_VALIDATE | MAP_FIXED | 0x8000000;
	args[3].val = 3;
	trace_format_call(call, sizeof(call), "mmap", args, 4);
	CHECK_STR(call, "mmap(len: 8192, prot: READ|EXEC, flags: SHARED_VALIDATE|FIXED|0x8000000, "
			"fd: 3)");
	trace_format_call(call, sizeof(call), "mprotect", args, 2);
	CHECK_STR(call, "mprotect(len: 8192, prot: READ|EXEC)");
	/* another call's flags stay a number; an address the tracepoint types as one is hex */
	trace_format_call(call, sizeof(call), "munmap", args, 3);
	CHECK_STR(call, "munmap(len: 8192, prot: 5, flags: 134217747)");
	args[0].name = "addr";
	args[0].val = 0x7f0000001000ULL;
	trace_format_call(call, sizeof(call), "munmap", args, 1);
	CHECK_STR(call, "munmap(addr: 0x7f0000001000)");
}

static void test_tp_line(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	trace_write_tp(f, "ls", 14784, 0, 971569885123ULL, "sched:sched_process_exec",
		       "filename=/usr/bin/ls pid=14784 old_pid=14784");
	fclose(f);
	/* perf script's own line for the same event */
	CHECK_STR(out, "              ls 14784 [000]   971.569885: sched:sched_process_exec: "
		       "filename=/usr/bin/ls pid=14784 old_pid=14784\n");
	free(out);
}

static void test_summary(void)
{
	struct trace_sum_row rows[] = {
		{ .tgid = 7, .comm = "sh", .sys = "read", .calls = 1, .total_ns = 1000,
		  .min_ns = 1000, .max_ns = 1000, .sumsq = 0 },
		/* 3 calls of 1, 2, 3 ms: stddev 1 ms, its standard error 0.577 ms, over 2 ms */
		{ .tgid = 9, .comm = "ls", .sys = "openat", .calls = 3, .errors = 1,
		  .total_ns = 6000000, .min_ns = 1000000, .max_ns = 3000000,
		  .sumsq = 14000000000000ULL },
		{ .tgid = 9, .comm = "ls", .sys = "close", .calls = 3, .total_ns = 30000,
		  .min_ns = 10000, .max_ns = 10000, .sumsq = 300000000ULL },
	};
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK_INT(trace_write_summary(f, rows, 3, 0), 0);
	fclose(f);
	CHECK_STR(out,
		  "\n Summary of events:\n"
		  "\n ls (9), 12 events, 85.7%\n\n"
		  "   syscall            calls  errors  total       min       avg       max       stddev\n"
		  "                                     (msec)    (msec)    (msec)    (msec)        (%)\n"
		  "   --------------- --------  ------ -------- --------- --------- ---------     ------\n"
		  "   openat                 3      1     6.000     1.000     2.000     3.000     28.87%\n"
		  "   close                  3      0     0.030     0.010     0.010     0.010      0.00%\n"
		  "\n sh (7), 2 events, 14.3%\n\n"
		  "   syscall            calls  errors  total       min       avg       max       stddev\n"
		  "                                     (msec)    (msec)    (msec)    (msec)        (%)\n"
		  "   --------------- --------  ------ -------- --------- --------- ---------     ------\n"
		  "   read                   1      0     0.001     0.001     0.001     0.001      0.00%\n"
		  "\n");
	free(out);
}

int main(void)
{
	RUN(test_openat_line);
	RUN(test_signed_and_pointers);
	RUN(test_mmap_flags);
	RUN(test_tp_line);
	RUN(test_summary);
	TESTS_DONE();
}
