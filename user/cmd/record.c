// SPDX-License-Identifier: GPL-2.0
/* bpfprof record: perf record's habit, sample now and report later.  profile's run (its BPF
 * object, targets, events and runner hooks), whose output is a pprof profile in a file, -o FILE
 * or ./bpfprof.pb.gz as perf's is ./perf.data, and no report; `bpfprof report` with no FILE
 * reads ./bpfprof.pb.gz.  The file is what --pprof writes: go tool pprof, Pyroscope and
 * bpfprof annotate -i read it too.  An existing FILE becomes FILE.old, as perf.data does. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cmd/cmds.h"
#include "cmd/profile.h"
#include "core/common.h"
#include "core/stackrun.h"
#include "out/stack.h"
#include "sym/stackagg.h"
#include "profile.skel.h"

RUNNER_SKELETON(profile);

/* -o FILE is the profile's path: the pprof output's, set before the outputs are opened (before
 * tracing starts, so that a path that cannot be written fails at once). */
static int record_check(struct runner *r)
{
	if (stack_opts.pprof.path) {
		p_err("record writes its profile to -o FILE (default %s); --pprof is profile's",
		      RECORD_DEFAULT_FILE);
		return -EINVAL;
	}
	if (stack_opts.no_children || stack_opts.sort || stack_opts.percent_limit) {
		p_err("--no-children, --sort and --percent-limit are the report's: give them to "
		      "bpfprof report");
		return -EINVAL;
	}
	stack_opts.pprof.path = run_opts.out.path ?: RECORD_DEFAULT_FILE;
	run_opts.out.path = NULL;
	return profile_check(r);
}

/* perf record's backup: a profile already at path (a regular file, not followed if a link)
 * is kept as path.old rather than replaced. */
static void keep_previous(const char *path)
{
	char old[4096];
	struct stat st;

	if (lstat(path, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return;
	if (snprintf(old, sizeof(old), "%s.old", path) >= (int)sizeof(old))
		return;
	if (rename(path, old))
		p_info("cannot keep the previous %s as %s: %s", path, old, strerror(errno));
}

/* The samples the profile holds (perf record's last line counts them). */
static __u64 samples_of(const struct stack_run *sr)
{
	struct stack_tree t;

	if (sr->samples || !sr->agg)
		return stack_samples_total(sr->samples, sr->nr_samples);
	stack_agg__tree(sr->agg, &t);
	return stack_tree_total(&t);
}

static int record_write(struct runner *r)
{
	struct profile_texts texts;
	struct profile_state st;
	struct stack_outputs o;
	bool dflt = !strcmp(stack_opts.pprof.path, RECORD_DEFAULT_FILE);
	long size;
	int err;

	profile_state(r, &st);
	profile_outputs(r, &texts, &o);
	o.files_only = true;
	err = stack_outputs_write(r->out, &o, st.sr);
	if (err || !stack_opts.pprof.of.f)
		return err;
	keep_previous(stack_opts.pprof.path);
	size = fflush(stack_opts.pprof.of.f) ? -1 : ftell(stack_opts.pprof.of.f);
	fprintf(stderr, "bpfprof record: %llu samples, %.1f KB, in %s ('bpfprof report%s%s' reads it)\n",
		(unsigned long long)samples_of(st.sr), size > 0 ? size / 1024.0 : 0.0,
		stack_opts.pprof.path, dflt ? "" : " ", dflt ? "" : stack_opts.pprof.path);
	return 0;
}

const struct command record_cmd = {
	.name = "record",
	.summary = "sample on-CPU stacks into a file (./bpfprof.pb.gz) for report",
	.description =
		"Sample as profile does and write the samples to a pprof profile, -o FILE or\n"
		"./bpfprof.pb.gz (an existing one is kept as FILE.old), instead of a report:\n"
		"`bpfprof report` reads it back (as perf record and perf report), as do go tool\n"
		"pprof and bpfprof annotate -i.",
	.notes = PROFILE_EVENT_NOTES,
	.caps = CAP_SYMBOLS | CAP_CPUS | CAP_THREAD_KIND | CAP_STACKS | CAP_STACK_FILES |
		CAP_EVENTS,
	.positional = POS_DURATION,
	.opts = profile_opts,
	PROFILE_RUN_HOOKS,
	.check = record_check,
	.write = record_write,
	.teardown = profile_teardown,
};
