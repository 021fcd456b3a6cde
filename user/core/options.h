/* Option tables: each command has one, and the runner adds the shared groups (targets, run,
 * output, stacks, heat map, events).  One parser reads the tables and one printer writes --help
 * from them, so the help cannot disagree with what parses.  Long names match exactly: no
 * abbreviations, so that `--call-graph` can never be taken for `--call-graph-limit`. */
#ifndef BPFPROF_OPTIONS_H
#define BPFPROF_OPTIONS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "out/outfile.h"

enum opt_type {
	OPT_FLAG,    /* bool: set to true */
	OPT_STR,     /* const char *: the argument as given */
	OPT_U64,     /* __u64 within [min, max] */
	OPT_SECONDS, /* double: seconds > 0, fractions allowed */
	OPT_PERCENT, /* double: 0 to 100 */
	OPT_OUTPUT,  /* struct output: a file opened before tracing starts, written whole or not at all */
	OPT_FN,      /* fn(arg) parses and stores it, and prints its own error */
	OPT_RETIRED, /* an old spelling: refused with .help, which says what to type instead */
};

/* What a command takes beyond the options every command has; an option of a shared group that
 * needs a capability the command lacks is neither parsed nor shown. */
enum cmd_caps {
	CAP_CPUS = 1 << 0,        /* -C CPU-LIST */
	CAP_THREAD_KIND = 1 << 1, /* -u / -k */
	CAP_INTERVALS = 1 << 2,   /* -i, -I, -T: reports every interval */
	CAP_STACKS = 1 << 3,      /* the stack group: -g, --call-graph, -f, --svg... */
	CAP_HEATMAP = 1 << 4,     /* --heatmap, --heatmap-data, --heatmap-interval */
	CAP_EVENTS = 1 << 5,      /* -e EVENT[,EVENT...] */
	CAP_SYMBOLS = 1 << 6,     /* reads symbols of user binaries: --no-debuginfod */
	CAP_PERIODS = 1 << 7,     /* --every, --pprof-dir, --push: continuous profiling */
	/* with CAP_STACKS: the stack outputs in place of the report (-f, --annotate,
	 * --call-graph-limit); top, which shows its table instead, lacks it */
	CAP_STACK_OUTPUTS = 1 << 12,
	/* with CAP_STACKS: the files the whole run's stacks are written to (--svg, --title,
	 * --pprof), top's too */
	CAP_STACK_FILES = 1 << 13,
};

struct opt {
	char short_name;       /* 0: long only */
	const char *long_name; /* NULL: short only */
	const char *arg;       /* the argument's name in --help ("HZ"); NULL: takes none */
	const char *help;      /* "\n" starts a continuation line */
	enum opt_type type;
	void *dest;
	__u64 min, max;        /* OPT_U64 */
	int (*fn)(const char *arg); /* OPT_FN: 0 or -EINVAL (message printed) */
	const char *what;      /* in error messages: "invalid WHAT 'x' (HINT)"; default the option */
	const char *hint;      /* the expected form; default from min/max or the type */
	unsigned int needs;    /* enum cmd_caps the command must have */
};

/* A file named on the command line, opened (outfile_open) before tracing starts. */
struct output {
	const char *path;   /* NULL: not asked for */
	struct outfile of;  /* open while the run goes on */
};

struct opt_group {
	const char *title;  /* heading in --help */
	const struct opt *opts; /* ends with an entry whose short and long names are both unset */
};

/* What is not an option: the arguments before "--" in order, and the command after it. */
struct opt_args {
	char **pos;
	int nr_pos;
	char **command; /* NULL without "--" */
};

/* Parses argv[1..argc) (argv[0] is the command's name) against the groups' options that `caps`
 * allows.  Options and arguments may be mixed until "--".  Returns 0; 1 for -h/--help (an
 * OPT_FLAG entry without dest), which the caller prints; or -EINVAL after printing one line (and, for an unknown option, the usage on
 * stderr).  args->pos points into argv. */
int opts_parse(int argc, char **argv, const struct opt_group *groups, int nr_groups,
	       unsigned int caps, const char *usage_line, struct opt_args *args);

/* As opts_parse, and a positional argument for which starts_command() is true begins the command
 * as "--" does (perf's "perf record -a sleep 5"): it and everything after it are the command's,
 * options included. */
int opts_parse_cmd(int argc, char **argv, const struct opt_group *groups, int nr_groups,
		   unsigned int caps, const char *usage_line, bool (*starts_command)(const char *arg),
		   struct opt_args *args);

/* Writes the options of the groups that `caps` allows, under their titles, aligned. */
void opts_print_help(FILE *out, const struct opt_group *groups, int nr_groups, unsigned int caps);

/* Calls fn on each option of the groups that caps allows (tests, and the runner's outputs). */
void opts_for_each(const struct opt_group *groups, int nr_groups, unsigned int caps,
		   void (*fn)(const struct opt *o, void *ctx), void *ctx);

/* The option's display name: "-F" or "--freq" (the long one when it has both). */
const char *opt_name(const struct opt *o, char *buf, size_t size);
#endif
