// SPDX-License-Identifier: GPL-2.0
/* bpfprof report: profiles written before (pprof, folded) read back and written as a run
 * writes them: the perf-style report, folded stacks, a flame graph, a pprof of the merge. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/stackrun.h"
#include "in/profile_in.h"
#include "sym/cgroups.h"

#define MAX_FILTERS 64

static struct {
	__u32 pids[MAX_FILTERS];
	int nr_pids;
	char *comms[MAX_FILTERS];
	int nr_comms;
	char *cgroups[MAX_FILTERS]; /* as the labels write them: "/a/b", no trailing "/" */
	int nr_cgroups;
	char *inputs[MAX_FILTERS]; /* -i FILE: perf report's spelling of a FILE */
	int nr_inputs;
	bool stdio;
	bool header, header_only; /* the machine's header (perf report --header, --header-only) */
} env;

static int opt_input(const char *arg)
{
	if (env.nr_inputs == MAX_FILTERS) {
		p_err("too many -i files (at most %d)", MAX_FILTERS);
		return -EINVAL;
	}
	env.inputs[env.nr_inputs++] = (char *)arg;
	return 0;
}

static int opt_pid(const char *arg)
{
	int n = parse_id_list(arg, env.pids + env.nr_pids, MAX_FILTERS - env.nr_pids);

	if (n < 0) {
		p_err("invalid pid list '%s' (expected PID[,PID...], at most %d)", arg, MAX_FILTERS);
		return -EINVAL;
	}
	env.nr_pids += n;
	return 0;
}

/* Appends the comma-separated names of arg to list, each as norm() makes it. */
static int add_names(const char *arg, const char *opt, char **list, int *nr,
		     char *(*norm)(const char *name))
{
	char *copy = strdup(arg), *save = NULL, *c;

	if (!copy)
		return -ENOMEM;
	for (c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
		if (*nr == MAX_FILTERS) {
			p_err("too many %s names (at most %d)", opt, MAX_FILTERS);
			free(copy);
			return -EINVAL;
		}
		list[*nr] = norm(c);
		if (!list[(*nr)++]) {
			free(copy);
			return -ENOMEM;
		}
	}
	free(copy);
	return 0;
}

static char *comm_name(const char *name)
{
	return strdup(name);
}

static int opt_comm(const char *arg)
{
	return add_names(arg, "--comm", env.comms, &env.nr_comms, comm_name);
}

/* A cgroup as the labels name it: under the cgroup2 mount, with a leading "/" and no trailing
 * one ("/" the root); a path under this machine's mount is taken as the same. */
static char *cgroup_name(const char *name)
{
	char mnt[PATH_MAX], *out;
	size_t len;

	if (!cgroup2_mount(mnt, sizeof(mnt)) && (len = strlen(mnt)) > 1 &&
	    !strncmp(name, mnt, len) && (name[len] == '/' || !name[len]))
		name += len;
	while (*name == '/')
		name++;
	if (asprintf(&out, "/%s", name) < 0)
		return NULL;
	for (len = strlen(out); len > 1 && out[len - 1] == '/'; len--)
		out[len - 1] = '\0';
	return out;
}

static int opt_cgroup(const char *arg)
{
	return add_names(arg, "--cgroup", env.cgroups, &env.nr_cgroups, cgroup_name);
}

static const struct opt report_opts[] = {
	{ 'p', "pid", "PID[,PID...]", "only the samples of these processes (their pid label);\n"
	  "repeatable", OPT_FN, .fn = opt_pid },
	{ 0, "comm", "NAME[,NAME...]", "only the samples of these commands (comm label, or the\n"
	  "first frame of folded stacks); repeatable", OPT_FN, .fn = opt_comm },
	{ 'G', "cgroup", "PATH[,PATH...]", "only the samples of these cgroups v2 or below them\n"
	  "(cgroup label: a path under the cgroup2 mount); repeatable", OPT_FN, .fn = opt_cgroup },
	{ 'i', "input", "FILE", "a file to read, as a FILE argument (perf report -i);\n"
	  "repeatable", OPT_FN, .fn = opt_input },
	{ 0, "stdio", NULL, "accepted: the report is text (perf report --stdio)", OPT_FLAG,
	  &env.stdio },
	{ 0, "header", NULL, "first the machine the profile was taken on, as perf report\n"
	  "--header: when, host, kernel, CPUs, command line (from\n"
	  "bpfprof record's and --pprof files)", OPT_FLAG, &env.header },
	{ 0, "header-only", NULL, "that header alone, no report", OPT_FLAG, &env.header_only },
	{},
};

static void report_reset(void)
{
	for (int i = 0; i < env.nr_comms; i++)
		free(env.comms[i]);
	for (int i = 0; i < env.nr_cgroups; i++)
		free(env.cgroups[i]);
	memset(&env, 0, sizeof(env));
}

/* Whether cgroup path is cg or below it. */
static bool in_cgroup(const char *path, const char *cg)
{
	size_t len = strlen(cg);

	if (!path)
		return false;
	if (len == 1) /* the root: every cgroup, those gone (a number) too */
		return true;
	return !strncmp(path, cg, len) && (path[len] == '/' || !path[len]);
}

static bool wanted(const struct stack_sample *s)
{
	bool pid = !env.nr_pids, comm = !env.nr_comms, cgroup = !env.nr_cgroups;

	for (int i = 0; !pid && i < env.nr_pids; i++)
		pid = s->pid == env.pids[i];
	for (int i = 0; !comm && i < env.nr_comms; i++)
		comm = !strncmp(s->comm, env.comms[i], sizeof(s->comm) - 1);
	for (int i = 0; !cgroup && i < env.nr_cgroups; i++)
		cgroup = in_cgroup(s->cgroup, env.cgroups[i]);
	return pid && comm && cgroup;
}

/* The header of a report of files: the run's own where bpfprof wrote it in the file (one file;
 * of several, the first one's event, and every file's losses summed), else what the first file
 * says of its run; then the files. */
static void describe(const struct profile_in *in, char **files, int nr, char *what, size_t size,
		     struct stack_outputs *o)
{
	snprintf(what, size, "%d file%s: %s%s", nr, nr > 1 ? "s" : "", files[0],
		 nr > 1 ? ", ..." : "");
	if (nr == 1)
		o->header = in->header;
	o->header.event = in->header.event ?: in->event_names[0] ?: in->value_type;
	/* a clock sampled every N ns (-c N) was no frequency, whatever pprof's period says */
	if (!o->header.period)
		o->header.frequency = o->header.frequency ?: in->frequency;
	o->header.duration_s = in->duration_s;
	o->header.lost = in->lost;
	o->header.source = what;
	o->report.unit = in->unit;
	o->flamegraph.count_name = in->unit == REPORT_TIME_US ? "us" : "samples";
	o->flamegraph.palette = in->unit == REPORT_TIME_US ? PALETTE_COOL : PALETTE_HOT;
	o->flamegraph.subtitle = what;
	if (in->nr_events > 1) {
		o->event_names = (const char *const *)in->event_names;
		o->nr_events = in->nr_events;
	}
}

/* --pprof of what was read: the values as read (microseconds back to nanoseconds). */
static void pprof_meta(const struct profile_in *in, struct pprof_meta *m)
{
	memset(m, 0, sizeof(*m));
	if (in->nr_events > 1) {
		for (int i = 0; i < in->nr_events; i++)
			m->values[i] = (struct pprof_value){ in->event_names[i], "count", 1, i };
		m->nr_values = in->nr_events;
	} else if (in->unit == REPORT_TIME_US) {
		m->values[0] = (struct pprof_value){ in->value_type, "nanoseconds", 1000,
						     PPROF_ANY_EVENT };
		m->nr_values = 1;
	} else {
		m->values[0] = (struct pprof_value){ in->value_type, in->value_unit, 1,
						     PPROF_ANY_EVENT };
		m->nr_values = 1;
	}
	m->duration_nanos = in->duration_s * 1e9;
	m->labels = PPROF_LABEL_PID | PPROF_LABEL_TID | PPROF_LABEL_COMM;
	m->machine = in->machine; /* where the samples were taken, not where they are read */
}

/* --no-inline: the samples' inlined frames (pprof lines) left out, in frames of their own
 * (*frames, freed by the caller); waker frames are copied as they are. */
static int drop_inlined(struct stack_sample *s, size_t n, struct frame **frames)
{
	size_t total = 0, at = 0;

	for (size_t i = 0; i < n; i++)
		total += s[i].nr_frames + s[i].nr_waker_frames;
	*frames = calloc(total ?: 1, sizeof(**frames));
	if (!*frames)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct frame *start = *frames + at, *waker;
		__u32 k = 0;

		for (__u32 j = 0; j < s[i].nr_frames; j++)
			if (!stack_sample_frame(&s[i], j)->inlined)
				start[k++] = *stack_sample_frame(&s[i], j);
		waker = start + k;
		for (__u32 j = 0; j < s[i].nr_waker_frames; j++)
			waker[j] = *stack_sample_waker_frame(&s[i], j);
		s[i].frames = start;
		s[i].nr_frames = k;
		s[i].waker_frames = s[i].nr_waker_frames ? waker : NULL;
		s[i].frame_ids = s[i].waker_frame_ids = NULL;
		at += k + s[i].nr_waker_frames;
	}
	return 0;
}

static int report_files(FILE *out, char **files, int nr_files);

/* perf report --header's block: the machine the first file was taken on. */
static void print_machine(FILE *out, const struct profile_in *in, const char *file)
{
	fprintf(out, "# ========\n");
	if (in->machine)
		fprintf(out, "# %s\n", in->machine);
	else
		fprintf(out, "# no machine header in %s (bpfprof record and --pprof files carry "
			"one)\n", file);
	fprintf(out, "# ========\n#\n");
}

/* FILE arguments and -i FILEs, in that order. */
static int report_run(FILE *out, char **args, int nr_args)
{
	static char *recorded[] = { RECORD_DEFAULT_FILE };
	char **files;
	int err;

	/* as perf report reads ./perf.data: what bpfprof record wrote here by default */
	if (!nr_args && !env.nr_inputs && !access(RECORD_DEFAULT_FILE, F_OK)) {
		args = recorded;
		nr_args = 1;
	}
	if (!nr_args && !env.nr_inputs) {
		p_err("report takes FILE... : a pprof or folded file a run wrote (bpfprof record, "
		      "profile --pprof FILE, -f); no ./%s here", RECORD_DEFAULT_FILE);
		return -EINVAL;
	}
	if ((env.header || env.header_only) && stack_opts.folded) {
		p_err("--header goes with the text report, not with -f (folded stacks have no "
		      "header lines)");
		return -EINVAL;
	}
	files = calloc(nr_args + env.nr_inputs, sizeof(*files));
	if (!files)
		return -ENOMEM;
	memcpy(files, args, nr_args * sizeof(*files));
	memcpy(files + nr_args, env.inputs, env.nr_inputs * sizeof(*files));
	err = report_files(out, files, nr_args + env.nr_inputs);
	free(files);
	return err;
}

static int report_files(FILE *out, char **files, int nr_files)
{
	struct profile_in *in = profile_in__new();
	struct stack_run sr = {};
	struct frame *own_frames = NULL;
	const struct stack_sample *all;
	char what[512];
	size_t n;
	int err = in ? 0 : -ENOMEM;
	struct stack_outputs o = stack_outputs_from_opts("Flame Graph", REPORT_SAMPLES);

	o.header.unwind = NULL; /* the recorded run's, from its file (describe()) */
	for (int i = 0; !err && i < nr_files; i++)
		err = profile_in__read(in, files[i]);
	if (err)
		goto cleanup;
	if (env.header || env.header_only)
		print_machine(out, in, files[0]);
	if (env.header_only)
		goto cleanup;
	all = profile_in__samples(in, &n);
	sr.samples = calloc(n ?: 1, sizeof(*sr.samples));
	if (!sr.samples) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		if (wanted(&all[i]))
			sr.samples[sr.nr_samples++] = all[i]; /* shallow: frames stay the reader's */
	if (in->dropped)
		p_err("%llu samples or stacks left out (values not above 0, or deeper than %d "
		      "frames)", (unsigned long long)in->dropped, PROFILE_IN_MAX_FRAMES);
	if (stack_opts.no_inline)
		err = drop_inlined(sr.samples, sr.nr_samples, &own_frames);
	if (err)
		goto cleanup;
	describe(in, files, nr_files, what, sizeof(what), &o);
	pprof_meta(in, &o.pprof);
	err = stack_outputs_write(out, &o, &sr);
cleanup:
	if (err == -ENOMEM)
		p_err("%s", strerror(ENOMEM));
	free(sr.samples);
	free(own_frames);
	profile_in__free(in);
	return err;
}

const struct file_command report_cmd = {
	.name = "report",
	.summary = "read profiles back (pprof, folded): report, folded, flame graph",
	.args = "[FILE...]",
	.description =
		"Read pprof profiles (bpfprof record's and --pprof, Go's runtime/pprof or go test\n"
		"-cpuprofile, any profile.proto, gzip'd or not) and folded stacks, merge them, and\n"
		"write what a run writes: the perf-style report, or -f folded stacks; --svg, --pprof\n"
		"besides.",
	.notes =
		"FILE: a pprof or folded file, told apart by content; - reads stdin.  Several files\n"
		"are merged: they must count the same thing (samples with samples, time with time).\n"
		"Without FILE: ./bpfprof.pb.gz, which bpfprof record writes (perf report's perf.data).\n",
	.opts = report_opts,
	.caps = CAP_STACKS | CAP_STACK_OUTPUTS | CAP_STACK_FILES,
	.run = report_run,
	.reset = report_reset,
};
