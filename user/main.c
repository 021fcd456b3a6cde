// SPDX-License-Identifier: GPL-2.0
/* bpfprof: the command table.  `bpfprof help` is generated from it; names match exactly. */
#include <stdio.h>
#include <string.h>
#include "cmd/cmds.h"
#include "core/common.h"

#define BPFPROF_VERSION "0.2"

static const struct command *const cmds[] = {
	&profile_cmd, &record_cmd, &offcpu_cmd, &funclat_cmd, &stat_cmd, &runqlat_cmd, &sched_cmd,
	&biolat_cmd, &list_cmd, &top_cmd, &annotate_cmd, &trace_cmd,
};

/* annotate reads a file instead of running when given -i FILE (before any "--"). */
static bool annotate_of_file(int argc, char **argv)
{
	if (strcmp(argv[1], "annotate"))
		return false;
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-i") || !strncmp(argv[i], "-i", 2) ||
		    !strcmp(argv[i], "--input") || !strncmp(argv[i], "--input=", 8))
			return true;
	return false;
}

static const struct file_command *const file_cmds[] = {
	&report_cmd, &diff_cmd,
};

/* perf's commands that bpfprof answers under other names: the unknown-command line says where. */
static const char *perf_hint(const char *name)
{
	static const struct {
		const char *perf, *hint;
	} hints[] = {
		{ "script", "perf script's lines are 'bpfprof trace' (one line per event) or "
			    "'bpfprof report -f' (folded stacks, for flamegraph.pl)" },
		{ "probe", "no probe is created beforehand: event specs name it where it is used "
			   "(u:PATH:FUNC, k:FUNC in profile -e, stat, funclat, trace)" },
	};

	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (!strcmp(name, hints[i].perf))
			return hints[i].hint;
	return "'bpfprof help' lists them";
}

/* The command list: on stdout when asked for, on stderr with exit 2 when no command was given
 * (a script that forgot its command must not read as a success). */
static int cmd_help(FILE *f)
{
	fprintf(f, "Usage: bpfprof COMMAND [options]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s%s%s%s\n", cmds[i]->name, cmds[i]->summary,
			cmds[i]->alias ? " (also '" : "", cmds[i]->alias ?: "",
			cmds[i]->alias ? "')" : "");
	for (size_t i = 0; i < sizeof(file_cmds) / sizeof(file_cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", file_cmds[i]->name, file_cmds[i]->summary);
	fprintf(f, "  %-10s %s\n", "help", "list the commands");
	fprintf(f, "\n'bpfprof COMMAND --help' shows a command's options.\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cmd_help(stderr);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(stdout);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("bpfprof %s\n", BPFPROF_VERSION);
		return 0;
	}
	if (annotate_of_file(argc, argv))
		return file_command_main(&annotate_file_cmd, argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i]->name) ||
		    (cmds[i]->alias && !strcmp(argv[1], cmds[i]->alias)))
			return runner_main(cmds[i], argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(file_cmds) / sizeof(file_cmds[0]); i++)
		if (!strcmp(argv[1], file_cmds[i]->name))
			return file_command_main(file_cmds[i], argc - 1, argv + 1);
	p_err("unknown command '%s'; %s", argv[1], perf_hint(argv[1]));
	return 2;
}
