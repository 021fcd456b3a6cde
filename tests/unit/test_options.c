// SPDX-License-Identifier: GPL-2.0
/* The option tables of every command, through the parser the runner uses: one spelling means one
 * thing everywhere, every option --help shows parses, positional arguments follow each
 * command's grammar, and output files are opened before tracing and left behind by no failure.
 * Needs no root: nothing is loaded. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "cmd/cmds.h"
#include "core/heatmaprun.h"
#include "core/runner.h"
#include "core/stackrun.h"

static const struct command *const cmds[] = {
	&profile_cmd, &offcpu_cmd, &funclat_cmd, &stat_cmd, &runqlat_cmd, &sched_cmd, &biolat_cmd,
	&top_cmd, &trace_cmd,
};
#define NR_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static char tmpdir[] = "/tmp/test_options.XXXXXX";
static char mypid[16];
/* Where cgroup2 is mounted, for --cgroup's sample (its root); "" when it is not. */
static char cgroup2_root[512];

/* Parses "NAME ARGS..." (a command line split at spaces; %P is this process's PID).  The
 * arguments stay valid until the next call: the parsed options point into them. */
static int parse(const struct command *cmd, const char *line)
{
	static char buf[16384];
	char *argv[64], *tok, *save = NULL, *p;
	size_t off;
	int argc = 0;

	off = snprintf(buf, sizeof(buf), "%s ", cmd->name);
	for (const char *s = line; *s && off + 16 < sizeof(buf); s++) {
		if (s[0] == '%' && s[1] == 'P') {
			off += snprintf(buf + off, sizeof(buf) - off, "%s", mypid);
			s++;
		} else {
			buf[off++] = *s;
		}
	}
	buf[off] = '\0';
	for (p = buf; (tok = strtok_r(p, " ", &save)) && argc < 63; p = NULL)
		argv[argc++] = tok;
	argv[argc] = NULL;
	return runner_parse(cmd, argc, argv);
}

/* What a command needs beside the option under test: an event for count and funclat. */
static const char *required(const struct command *cmd)
{
	return cmd->positional == POS_EVENTS ? "sched:sched_switch" : "";
}

struct collected {
	const struct opt *v[128];
	int n;
};

static void collect(const struct opt *o, void *ctx)
{
	struct collected *c = ctx;

	if (c->n < 128)
		c->v[c->n++] = o;
}

static void options_of(const struct command *cmd, struct collected *c)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	int n = runner_option_groups(cmd, groups, RUNNER_GROUPS_MAX);

	c->n = 0;
	opts_for_each(groups, n, cmd->caps, collect, c);
}

/* An argument each option accepts, by the name --help gives it. */
static const char *sample_arg(const struct opt *o)
{
	static char path[300];
	static const struct { const char *arg, *value; } samples[] = {
		{ "HZ", "99" }, { "N", "2" }, { "SEC", "1.5" }, { "MS", "100" }, { "MB", "16" },
		{ "PID[,PID...]", "%P" }, { "TID[,TID...]", "%P" }, { "CPU-LIST", "0" },
		{ "EVENT[,EVENT...]", "sched:sched_switch" }, { "TEXT", "title" }, { "P", "1" },
		{ "US", "10" }, { "STATE", "SD" }, { "KEY", "avg" }, { "DISK", "vda" },
		{ "STEP[,N]", "10,20" }, { "K", "3" }, { "S", "0.5" }, { "KEYS", "comm,dso,sym" },
		{ "URL", "http://127.0.0.1:4040" }, { "NAME", "app" }, { "KEY=VALUE", "env=test" },
		{ "SEP", "," }, { "FIELD[,FIELD...]", "comm" }, { "EXPR", "pid>0" },
	};

	if (o->type == OPT_OUTPUT) {
		snprintf(path, sizeof(path), "%s/%s.out", tmpdir, o->long_name ?: "o");
		return path;
	}
	if (o->long_name && (!strcmp(o->long_name, "unwind") || !strcmp(o->long_name, "call-graph")))
		return "fp";
	if (o->long_name && !strcmp(o->long_name, "cgroup"))
		return cgroup2_root;
	if (o->arg && !strcmp(o->arg, "DIR"))
		return tmpdir;
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		if (!strcmp(samples[i].arg, o->arg))
			return samples[i].value;
	return NULL;
}

/* Options that are only valid with another one. */
static const char *companion(const struct opt *o)
{
	if (o->short_name == 'T')
		return "-i 1";
	if (o->long_name && !strcmp(o->long_name, "heatmap-interval"))
		return "--heatmap /tmp/x.svg";
	if (o->long_name && (!strcmp(o->long_name, "pprof-dir") || !strcmp(o->long_name, "push")))
		return "--every 1";
	if (o->long_name && !strcmp(o->long_name, "keep"))
		return "--every 1 --pprof-dir /tmp";
	if (o->long_name && (!strcmp(o->long_name, "app") || !strcmp(o->long_name, "label")))
		return "--every 1 --push http://127.0.0.1:4040";
	return "";
}

static bool cgroup2_mounted(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %511s", cgroup2_root) == 1)
			break;
	if (f)
		fclose(f);
	return cgroup2_root[0];
}

/* Every option of every command's help parses, in its short and its long spelling. */
static void test_every_option_parses(void)
{
	struct collected c;
	bool cgroups = cgroup2_mounted();

	for (size_t k = 0; k < NR_CMDS; k++) {
		options_of(cmds[k], &c);
		for (int i = 0; i < c.n; i++) {
			const struct opt *o = c.v[i];
			const char *arg = o->arg ? sample_arg(o) : "";
			char line[1024];

			if (o->type == OPT_RETIRED || (!o->dest && o->type == OPT_FLAG))
				continue; /* an old spelling's hint; -h prints the help */
			if (!arg) {
				printf("    no sample argument for %s's %s %s\n", cmds[k]->name,
				       o->long_name ?: "", o->arg);
				CHECK(arg);
				continue;
			}
			if (o->short_name == 'G' && !cgroups)
				continue;
			if (o->short_name) {
				snprintf(line, sizeof(line), "-%c %s %s %s", o->short_name, arg,
					 companion(o), required(cmds[k]));
				if (parse(cmds[k], line))
					printf("    %s: '%s' does not parse\n", cmds[k]->name, line);
				CHECK_INT(parse(cmds[k], line), 0);
			}
			if (o->long_name) {
				snprintf(line, sizeof(line), "--%s%s%s %s %s", o->long_name,
					 o->arg ? "=" : "", arg, companion(o), required(cmds[k]));
				if (parse(cmds[k], line))
					printf("    %s: '%s' does not parse\n", cmds[k]->name, line);
				CHECK_INT(parse(cmds[k], line), 0);
			}
		}
	}
}

/* --help is printed from the same tables: every option is in it, under its own names. */
static void test_help_shows_every_option(void)
{
	struct opt_group groups[RUNNER_GROUPS_MAX];
	struct collected c;

	for (size_t k = 0; k < NR_CMDS; k++) {
		int n = runner_option_groups(cmds[k], groups, RUNNER_GROUPS_MAX);
		char *text = NULL, name[64];
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		opts_print_help(f, groups, n, cmds[k]->caps);
		fclose(f);
		options_of(cmds[k], &c);
		for (int i = 0; i < c.n; i++) {
			if (c.v[i]->type == OPT_RETIRED)
				continue;
			if (c.v[i]->long_name) {
				snprintf(name, sizeof(name), "--%s", c.v[i]->long_name);
				CHECK(strstr(text, name));
			}
			if (c.v[i]->short_name) {
				snprintf(name, sizeof(name), "  -%c", c.v[i]->short_name);
				CHECK(strstr(text, name));
			}
		}
		free(text);
	}
}

static bool same_spelling(const struct opt *a, const struct opt *b)
{
	return (a->short_name && a->short_name == b->short_name) ||
	       (a->long_name && b->long_name && !strcmp(a->long_name, b->long_name));
}

/* Short letters that BCC's tools gave other meanings before bpfprof had one grammar, each kept
 * in its command and documented: offcpu -m/-M (block time, offcputime), biolat -F (flags,
 * biolatency), runqlat -L and -P (per thread / process, runqlat), funclat -L (log-linear), and
 * -m milliseconds; and perf top's: top -d (the refresh delay; --duration stays) and -s (its
 * sort keys, as sched -s has its own); perf's own: sched --timehist -M (migrations, perf sched
 * timehist), trace -s (perf trace's summary) and trace -g (each event's stacks, perf trace and
 * perf script; the stack commands accept -g and always take stacks).  A new clash must be added
 * here on purpose. */
static bool known_legacy(const struct opt *a, const struct opt *b)
{
	return strchr("mFLPdsMg", a->short_name) && a->short_name == b->short_name &&
	       !(a->long_name && b->long_name && !strcmp(a->long_name, b->long_name) &&
		 a->type != b->type);
}

/* perf's --sort: what perf report's rows are (comm, dso, sym) in the stack commands, the
 * latency table's order (max, avg...) in sched, as perf sched latency --sort has it. */
static bool known_perf_sort(const struct opt *a, const struct opt *b)
{
	return a->long_name && b->long_name && !strcmp(a->long_name, "sort") &&
	       !strcmp(b->long_name, "sort");
}

/* Options with one meaning that each command stores in its own settings: the same long name,
 * argument and type.  --filter (the fields model's filter: stat, trace), --buffer-size (the ring
 * buffer in MB: sched --timehist, trace). */
static bool known_same_meaning(const struct opt *a, const struct opt *b)
{
	static const char *const names[] = { "filter", "buffer-size" };

	if (!a->long_name || !b->long_name || strcmp(a->long_name, b->long_name) ||
	    a->short_name != b->short_name || a->type != b->type ||
	    !a->arg || !b->arg || strcmp(a->arg, b->arg))
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a->long_name, names[i]))
			return true;
	return false;
}

/* --summary: a summary instead of the events, as perf spells it in each: trace's -s (perf trace
 * -s, syscalls per process), sched --timehist's (perf sched timehist -s, tasks; -s is sched's
 * --sort, as perf sched latency's). */
static bool known_summary(const struct opt *a, const struct opt *b)
{
	return a->long_name && b->long_name && !strcmp(a->long_name, "summary") &&
	       !strcmp(b->long_name, "summary") && a->type == OPT_FLAG && b->type == OPT_FLAG;
}

/* One spelling, one option: wherever two commands accept the same name it is the same table
 * entry (the shared groups), except the legacy letters above and perf's --sort. */
static void test_one_spelling_one_meaning(void)
{
	struct collected a, b;

	for (size_t i = 0; i < NR_CMDS; i++) {
		options_of(cmds[i], &a);
		for (size_t j = i + 1; j < NR_CMDS; j++) {
			options_of(cmds[j], &b);
			for (int x = 0; x < a.n; x++) {
				for (int y = 0; y < b.n; y++) {
					/* an old spelling refused with a hint means nothing */
					if (!same_spelling(a.v[x], b.v[y]) || a.v[x] == b.v[y] ||
					    known_legacy(a.v[x], b.v[y]) || known_perf_sort(a.v[x], b.v[y]) ||
					    known_same_meaning(a.v[x], b.v[y]) ||
					    known_summary(a.v[x], b.v[y]) ||
					    a.v[x]->type == OPT_RETIRED ||
					    b.v[y]->type == OPT_RETIRED)
						continue;
					printf("    %s and %s: -%c/--%s means two things\n",
					       cmds[i]->name, cmds[j]->name, a.v[x]->short_name ?: '-',
					       a.v[x]->long_name ?: "");
					CHECK(0);
				}
			}
		}
	}
}

/* The shared spellings, by value, in every command. */
static void test_shared_meanings(void)
{
	char line[512];

	for (size_t k = 0; k < NR_CMDS; k++) {
		const struct command *cmd = cmds[k];

		/* top's -d is perf top's refresh delay: its duration is --duration */
		snprintf(line, sizeof(line), "-p %%P -p 1 %s 2.5 -o %s/x %s",
			 cmd == &top_cmd ? "--duration" : "-d", tmpdir, required(cmd));
		CHECK_INT(parse(cmd, line), 0);
		CHECK_INT(targets.nr_pids, 2);
		CHECK(run_opts.duration == 2.5);
		CHECK(run_opts.out.path && strstr(run_opts.out.path, "/x"));
		snprintf(line, sizeof(line), "--pid=%%P,1 --duration 3 %s", required(cmd));
		CHECK_INT(parse(cmd, line), 0);
		CHECK_INT(targets.nr_pids, 2);
		CHECK(run_opts.duration == 3);
		snprintf(line, sizeof(line), "-t %%P %s", required(cmd));
		CHECK_INT(parse(cmd, line), 0);
		CHECK_INT(targets.nr_tids, 1);

		/* -i means seconds wherever a command reports intervals, -I milliseconds */
		snprintf(line, sizeof(line), "-i 0.5 %s", required(cmd));
		if (cmd->caps & CAP_INTERVALS) {
			CHECK_INT(parse(cmd, line), 0);
			CHECK(run_opts.interval == 0.5);
			snprintf(line, sizeof(line), "-I 250 %s", required(cmd));
			CHECK_INT(parse(cmd, line), 0);
			CHECK(run_opts.interval == 0.25);
		} else {
			printf("    (expected: -i does not apply to %s)\n", cmd->name);
			CHECK_INT(parse(cmd, line), -EINVAL);
		}
		/* -e: comma-separated, repeatable */
		if (cmd->caps & CAP_EVENTS) {
			CHECK_INT(parse(cmd, "-e sched:sched_switch,sched:sched_wakeup -e sys:read"), 0);
			CHECK_INT(run_opts.nr_events, 3);
			CHECK_STR(run_opts.events[1], "sched:sched_wakeup");
		}
		/* -- COMMAND alone is the target; with -a it bounds the run */
		snprintf(line, sizeof(line), "%s -- true", required(cmd));
		CHECK_INT(parse(cmd, line), 0);
		CHECK(targets.follow);
		snprintf(line, sizeof(line), "-a %s -- true", required(cmd));
		CHECK_INT(parse(cmd, line), 0);
		CHECK(!targets.follow && targets.command);
	}
}

/* DURATION, INTERVAL [COUNT], EVENT... [DURATION]. */
static void test_positional_grammar(void)
{
	CHECK_INT(parse(&profile_cmd, "5"), 0);
	CHECK(run_opts.duration == 5);
	printf("    (expected: two errors)\n");
	CHECK_INT(parse(&profile_cmd, "5 6"), -EINVAL);
	CHECK_INT(parse(&profile_cmd, "-d 1 5"), -EINVAL);
	CHECK_INT(parse(&runqlat_cmd, "0.5 4"), 0);
	CHECK(run_opts.interval == 0.5 && run_opts.count == 4);
	CHECK(runner_planned_seconds() == 2);
	CHECK_INT(parse(&stat_cmd, "sched:sched_switch sched:sched_wakeup 2"), 0);
	CHECK(run_opts.duration == 2 && run_opts.nr_events == 2);
	CHECK_INT(parse(&stat_cmd, "sched:a,sched:b"), 0);
	CHECK_INT(run_opts.nr_events, 2);
	/* options after arguments, as GNU getopt allows */
	CHECK_INT(parse(&sched_cmd, "2 -s avg"), 0);
	CHECK(run_opts.duration == 2);
	printf("    (expected: two errors)\n");
	CHECK_INT(parse(&biolat_cmd, "-i 2 5"), -EINVAL);
	CHECK_INT(parse(&runqlat_cmd, "-I 100 1"), -EINVAL);
}

/* -p lists of any length; an empty file name is no file. */
static void test_lists_and_names(void)
{
	char line[8192];
	size_t off = snprintf(line, sizeof(line), "-p ");

	for (int i = 0; i < 600; i++)
		off += snprintf(line + off, sizeof(line) - off, "%s%s", i ? "," : "", mypid);
	CHECK_INT(parse(&stat_cmd, strcat(line, " sched:sched_switch")), 0);
	CHECK_INT(targets.nr_pids, 600);
	printf("    (expected: two errors)\n");
	CHECK_INT(parse(&profile_cmd, "--svg= 1"), -EINVAL);
	CHECK_INT(parse(&stat_cmd, "-p 1,,x sys:read"), -EINVAL);
}

/* perf's spellings: -g, --call-graph fp|dwarf, and no abbreviation swallowing them. */
static void test_perf_spellings(void)
{
	CHECK_INT(parse(&profile_cmd, "-F 99 -a -g -- sleep 5"), 0);
	CHECK(stack_opts.call_graph && targets.all && !targets.follow);
#if defined(__x86_64__)
	CHECK_INT(parse(&profile_cmd, "--call-graph dwarf"), 0);
	CHECK_INT(stack_opts.unwind, UNWIND_EH);
	CHECK_INT(parse(&offcpu_cmd, "--call-graph=dwarf,8192"), 0);
	CHECK_INT(stack_opts.unwind, UNWIND_EH);
#endif
	CHECK_INT(parse(&profile_cmd, "--call-graph fp --call-graph-limit 2"), 0);
	CHECK_INT(stack_opts.unwind, UNWIND_FP);
	CHECK(stack_opts.call_graph_limit == 2);
	printf("    (expected: five errors)\n");
	CHECK_INT(parse(&profile_cmd, "--call-graph lbr"), -EINVAL);
	CHECK_INT(parse(&profile_cmd, "--call-graph-lim 2"), -EINVAL);
	CHECK_INT(parse(&profile_cmd, "--call 2"), -EINVAL);
	/* old spellings refused with what to type instead */
	CHECK_INT(parse(&profile_cmd, "-I"), -EINVAL);
	CHECK_INT(parse(&biolat_cmd, "-C 0"), -EINVAL);
}

static int dir_entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Output files are opened before tracing as temporary files, and a failure leaves none. */
static void test_outputs_open_early(void)
{
	char line[1024], svg[300];

	snprintf(svg, sizeof(svg), "%s/h.svg", tmpdir);
	snprintf(line, sizeof(line), "--heatmap %s --heatmap-data %s/h.tsv -o %s/o.txt 1 1", svg,
		 tmpdir, tmpdir);
	CHECK_INT(parse(&runqlat_cmd, line), 0);
	CHECK_INT(runner_open_outputs(&runqlat_cmd), 0);
	CHECK(heatmap_opts.svg.of.f && heatmap_opts.tsv.of.f && run_opts.out.of.f);
	CHECK(access(svg, F_OK) != 0);
	CHECK_INT(dir_entries(tmpdir), 3);
	runner_abort_outputs(&runqlat_cmd);
	CHECK_INT(dir_entries(tmpdir), 0);

	/* one unwritable path: an error before the run, and the others are not left either */
	snprintf(line, sizeof(line), "--heatmap %s --heatmap-data %s/no-such-dir/h.tsv 1 1", svg,
		 tmpdir);
	CHECK_INT(parse(&runqlat_cmd, line), 0);
	printf("    (the next line is the expected error)\n");
	CHECK_INT(runner_open_outputs(&runqlat_cmd), -ENOENT);
	CHECK_INT(dir_entries(tmpdir), 0);

	/* nothing asked for: nothing opened */
	CHECK_INT(parse(&runqlat_cmd, "1 1"), 0);
	CHECK_INT(runner_open_outputs(&runqlat_cmd), 0);
	CHECK(!heatmap_run_enabled(&heatmap_opts) && !run_opts.out.of.f);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(mypid, sizeof(mypid), "%d", getpid());
	RUN(test_every_option_parses);
	RUN(test_help_shows_every_option);
	RUN(test_one_spelling_one_meaning);
	RUN(test_shared_meanings);
	RUN(test_positional_grammar);
	RUN(test_lists_and_names);
	RUN(test_perf_spellings);
	RUN(test_outputs_open_early);
	runner_reset_options();
	rmdir(tmpdir);
	TESTS_DONE();
}
