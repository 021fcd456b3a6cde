/* Commands that read profiles instead of tracing (bpfprof report, diff): no BPF and no
 * privileges, but the same grammar, --help and outputs (written whole or not at all) as the
 * tracing commands: parse -> check the files named -> open outputs -> run -> commit. */
#ifndef BPFPROF_FILERUN_H
#define BPFPROF_FILERUN_H
#include <stdio.h>
#include "core/options.h"

struct file_command {
	const char *name;
	const char *summary;     /* one line, for `bpfprof help` */
	const char *args;        /* the positional arguments in the usage line: "FILE..." */
	const char *description; /* printed under the usage line */
	const char *notes;       /* printed after the options; may be NULL */
	int min_files, max_files; /* how many positional FILEs (max 0: any number) */
	const struct opt *opts;  /* the command's own options */
	unsigned int caps;       /* CAP_STACKS: the stack output options (-f, --svg, --pprof...) */
	/* Reads the files and writes to out (stdout or -o) and the other outputs: 0, -EINVAL for
	 * bad input (exit 2 for usage, 1 for files), or -errno; messages printed. */
	int (*run)(FILE *out, char **files, int nr_files);
	void (*reset)(void);     /* the command's option values to their defaults */
};

/* Runs a file command on argv (argv[0] is its name); the process exit status: 0, 1 when a file
 * or an output failed, 2 for bad usage. */
int file_command_main(const struct file_command *cmd, int argc, char **argv);
#endif
