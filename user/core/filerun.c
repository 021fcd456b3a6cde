// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <string.h>
#include "core/common.h"
#include "core/filerun.h"
#include "core/runner.h"
#include "core/stackrun.h"

static struct output out_file;

static const struct opt file_opts_table[] = {
	{ 'o', "output", "FILE", "write the output to FILE (whole, or not at all)", OPT_OUTPUT,
	  &out_file },
	{ 'v', "verbose", NULL, "say more about the files read", OPT_FLAG, &verbose },
	{ 'h', "help", NULL, "this help", OPT_FLAG, NULL },
	{},
};

/* An output given up on while writing (runner_output_failed() removed it): the run failed. */
static void count_given_up(const struct opt *o, void *ctx)
{
	const struct output *out = o->dest;

	if (o->type == OPT_OUTPUT && out->path && !out->of.f)
		(*(int *)ctx)++;
}

static int option_groups(const struct file_command *cmd, struct opt_group *groups)
{
	groups[0] = (struct opt_group){ "Options", cmd->opts };
	groups[1] = (struct opt_group){ "Output", stack_output_opts_table };
	groups[2] = (struct opt_group){ "General", file_opts_table };
	return 3;
}

static void print_help(const struct file_command *cmd, const char *usage)
{
	struct opt_group groups[3];
	int n = option_groups(cmd, groups);

	printf("%s\n%s\n", usage, cmd->description);
	opts_print_help(stdout, groups, n, cmd->caps);
	if (cmd->notes)
		printf("\n%s", cmd->notes);
}

int file_command_main(const struct file_command *cmd, int argc, char **argv)
{
	struct opt_group groups[3];
	int n = option_groups(cmd, groups), err, given_up = 0;
	struct opt_args args;
	char usage[256];

	memset(&out_file, 0, sizeof(out_file));
	stack_opts_reset(&stack_opts);
	verbose = false;
	if (cmd->reset)
		cmd->reset();
	snprintf(usage, sizeof(usage), "Usage: bpfprof %s [options] %s", cmd->name, cmd->args);
	err = opts_parse(argc, argv, groups, n, cmd->caps, usage, &args);
	if (err == 1) {
		print_help(cmd, usage);
		return 0;
	}
	if (err)
		return 2;
	if (args.command) {
		p_err("%s runs no command: '--' is not taken", cmd->name);
		return 2;
	}
	if (args.nr_pos < cmd->min_files || (cmd->max_files && args.nr_pos > cmd->max_files)) {
		p_err("%s takes %s (see bpfprof %s --help)", cmd->name, cmd->args, cmd->name);
		return 2;
	}
	if (outputs_distinct(groups, n, cmd->caps))
		return 2;
	/* a closed output pipe is a write error, not a silent death */
	signal(SIGPIPE, SIG_IGN);
	err = outputs_open(groups, n, cmd->caps);
	if (err)
		return 1;
	runner_set_report_output(out_file.of.f ? &out_file : NULL);
	err = cmd->run(out_file.of.f ?: stdout, args.pos, args.nr_pos);
	if (err) {
		outputs_abort(groups, n, cmd->caps);
		return err == -EINVAL && !args.nr_pos ? 2 : 1;
	}
	opts_for_each(groups, n, cmd->caps, count_given_up, &given_up);
	err = outputs_commit(groups, n, cmd->caps);
	if (!err && !out_file.path && (err = stream_flush_check(stdout)))
		runner_report_failed(err);
	return err || given_up || runner_output_error() ? 1 : 0;
}
