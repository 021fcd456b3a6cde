/* bpfprof: the command table.  Help is generated from it; names match exactly. */
#include <stdio.h>
#include <string.h>
#include "cmd/cmds.h"
#include "core/common.h"

#define BPFPROF_VERSION "0.1"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "profile", cmd_profile, "sample on-CPU stacks (report, folded, flame graph)" },
	{ "offcpu", cmd_offcpu, "off-CPU time by blocking stack, with wakers (report, folded, flame graph)" },
	{ "funclat", cmd_funclat, "latency histograms of functions and syscalls" },
	{ "count", cmd_count, "count events (tracepoints, functions) in the kernel" },
	{ "runqlat", cmd_runqlat, "run-queue latency histograms (BCC runqlat, in-kernel)" },
	{ "sched", cmd_sched, "per-task scheduler latency table (perf sched latency, in-kernel)" },
	{ "biolat", cmd_biolat, "block I/O latency histograms, percentiles and heat maps" },
	{ "help", cmd_help, "list the commands" },
};

static int cmd_help(int argc, char **argv)
{
	printf("Usage: bpfprof COMMAND [options]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		printf("  %-10s %s\n", cmds[i].name, cmds[i].help);
	printf("\n'bpfprof COMMAND --help' shows a command's options.\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cmd_help(argc, argv);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(argc, argv);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("bpfprof %s\n", BPFPROF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	p_err("unknown command '%s'; 'bpfprof help' lists them", argv[1]);
	return 2;
}
