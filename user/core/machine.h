/* The machine a run was taken on, as perf's header tells it (perf report --header): the lines
 * bpfprof's pprof files carry as "## " comments (out/pprof.c) and bpfprof report --header prints
 * back (in/pprof_read.c). */
#ifndef BPFPROF_MACHINE_H
#define BPFPROF_MACHINE_H
#include <stddef.h>
#include <linux/types.h>

/* Longest header: the command line is cut to fit */
#define MACHINE_HEADER_MAX 1024

/* Writes "key : value" lines into buf, "\n# " between them as between a report header's notes
 * (the report prints them after a "# ") (size bytes, NUL-terminated): when
 * the run started (captured_ns since the epoch, 0: now), the host name, kernel release,
 * architecture, CPUs online and possible, and this process's command line. */
void machine_header(char *buf, size_t size, __s64 captured_ns);
#endif
