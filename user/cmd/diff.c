// SPDX-License-Identifier: GPL-2.0
/* bpfprof diff: two profiles compared, as difffolded.pl and flamegraph.pl do it: a table of the
 * frames whose share changed most, and --svg a differential flame graph in AFTER's shape. */
#include <errno.h>
#include <string.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/stackrun.h"
#include "in/profile_in.h"
#include "out/difftable.h"

static struct {
	bool normalize, by_comm;
	__u64 rows;
} env;

static const struct opt diff_opts[] = {
	{ 'n', "normalize", NULL, "scale BEFORE to AFTER's total before comparing counts in the\n"
	  "flame graph (difffolded.pl -n): profiles of different lengths", OPT_FLAG,
	  &env.normalize },
	{ 0, "rows", "N", "rows of the table (default 20)", OPT_U64, &env.rows, 1, 100000 },
	/* the stack output options are report's: diff writes its table and this */
	{ 0, "svg", "FILE", "also write the differential flame graph SVG", OPT_OUTPUT,
	  &stack_opts.svg },
	{ 0, "title", "TEXT", "its title", OPT_STR, &stack_opts.title },
	{ 0, "by-comm", NULL, "the command as the flame graph's root frame: stacks compare\n"
	  "only within one command (by default whatever process took them)", OPT_FLAG,
	  &env.by_comm },
	{},
};

static void diff_reset(void)
{
	memset(&env, 0, sizeof(env));
}

static int read_one(const char *path, struct profile_in **out)
{
	*out = profile_in__new();
	if (!*out) {
		p_err("%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return profile_in__read(*out, path);
}

static int write_svg(const struct profile_in *before, const struct stack_sample *b, size_t nb,
		     const struct stack_sample *a, size_t na, char **files)
{
	__u64 tb = stack_samples_total(b, nb), ta = stack_samples_total(a, na);
	char subtitle[640];
	struct flamegraph_opts fo = {
		.title = stack_opts.title ? stack_opts.title : "Differential Flame Graph",
		.subtitle = subtitle,
		.count_name = before->unit == REPORT_TIME_US ? "us" : "samples",
		.before = b,
		.nr_before = nb,
		.before_scale = env.normalize && tb ? (double)ta / tb : 1,
		/* two builds of a program are two commands: compared by default */
		.no_comm = !env.by_comm,
	};
	int err;

	snprintf(subtitle, sizeof(subtitle), "%s -> %s: red grew, blue shrank%s", files[0], files[1],
		 env.normalize ? " (BEFORE scaled to AFTER's total)" : "");
	err = flamegraph_write(stack_opts.svg.of.f, a, na, &fo);
	if (err)
		p_err("cannot write %s: %s", stack_opts.svg.path, strerror(-err));
	return err;
}

static int diff_run(FILE *out, char **files, int nr_files)
{
	struct profile_in *before = NULL, *after = NULL;
	const struct stack_sample *b, *a;
	size_t nb, na;
	int err;

	err = read_one(files[0], &before);
	err = err ?: read_one(files[1], &after);
	if (!err && strcmp(before->value_unit, after->value_unit)) {
		p_err("%s counts %s (%s), %s %s (%s): they do not compare", files[0],
		      before->value_type, before->value_unit, files[1], after->value_type,
		      after->value_unit);
		err = -EINVAL;
	}
	if (err)
		goto cleanup;
	b = profile_in__samples(before, &nb);
	a = profile_in__samples(after, &na);
	if (stack_opts.svg.of.f)
		err = write_svg(before, b, nb, a, na, files);
	err = err ?: difftable_write(out, b, nb, a, na, &(struct difftable_opts){
		.before_name = files[0], .after_name = files[1], .rows = env.rows,
		.count_name = before->unit == REPORT_TIME_US ? "us" : "samples" });
cleanup:
	profile_in__free(before);
	profile_in__free(after);
	return err;
}

const struct file_command diff_cmd = {
	.name = "diff",
	.summary = "compare two profiles: what changed, and a differential flame graph",
	.args = "BEFORE AFTER",
	.description =
		"Compare two profiles (pprof or folded, as bpfprof report reads them): a table of the\n"
		"frames whose share of the total changed most, and with --svg a differential flame\n"
		"graph, AFTER's shape coloured by each frame's change, red where it grew and blue\n"
		"where it shrank (difffolded.pl | flamegraph.pl).",
	.notes =
		"BEFORE, AFTER: a pprof or folded file each (- reads stdin).  Frames are compared by\n"
		"name along their stacks; the hover on a frame gives both counts and the change.\n",
	.min_files = 2,
	.max_files = 2,
	.opts = diff_opts,
	.run = diff_run,
	.reset = diff_reset,
};
