// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include "core/common.h"
#include "core/options.h"

#define HELP_COLUMN 27

static bool opt_end(const struct opt *o)
{
	return !o->short_name && !o->long_name;
}

static bool opt_allowed(const struct opt *o, unsigned int caps)
{
	return (o->needs & caps) == o->needs;
}

const char *opt_name(const struct opt *o, char *buf, size_t size)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
	return buf;
}

void opts_for_each(const struct opt_group *groups, int nr_groups, unsigned int caps,
		   void (*fn)(const struct opt *o, void *ctx), void *ctx)
{
	for (int g = 0; g < nr_groups; g++)
		for (const struct opt *o = groups[g].opts; o && !opt_end(o); o++)
			if (opt_allowed(o, caps))
				fn(o, ctx);
}

/* The option named `name` (a long name, or one character for a short one), or NULL.  *denied
 * tells apart an option this command does not take from one no command knows. */
static const struct opt *find_opt(const struct opt_group *groups, int nr_groups, unsigned int caps,
				  const char *name, size_t len, bool is_long, bool *denied)
{
	const struct opt *found = NULL;

	*denied = false;
	for (int g = 0; g < nr_groups && !found; g++) {
		for (const struct opt *o = groups[g].opts; o && !opt_end(o); o++) {
			bool match = is_long ? o->long_name && strlen(o->long_name) == len &&
						       !strncmp(o->long_name, name, len)
					     : o->short_name == name[0];

			if (!match)
				continue;
			if (opt_allowed(o, caps)) {
				found = o;
				break;
			}
			*denied = true;
		}
	}
	return found;
}


/* The default hint of a numeric option: its range. */
static const char *range_hint(const struct opt *o, char *buf, size_t size)
{
	if (o->hint)
		return o->hint;
	switch (o->type) {
	case OPT_U64:
		if (o->max == UINT64_MAX || o->max == 0)
			snprintf(buf, size, "a whole number, at least %llu", (unsigned long long)o->min);
		else
			snprintf(buf, size, "%llu to %llu", (unsigned long long)o->min,
				 (unsigned long long)o->max);
		return buf;
	case OPT_SECONDS:
		return "expected seconds > 0";
	case OPT_PERCENT:
		return "0 to 100";
	default:
		return "";
	}
}

/* Stores one option's value.  0 or -EINVAL (message printed). */
static int opt_store(const struct opt *o, const char *arg)
{
	char name[64], hint[64];
	int err = 0;

	switch (o->type) {
	case OPT_FLAG:
		*(bool *)o->dest = true;
		return 0;
	case OPT_STR:
		*(const char **)o->dest = arg;
		return 0;
	case OPT_OUTPUT:
		if (!*arg) {
			p_err("%s needs a file name", o->what ?: opt_name(o, name, sizeof(name)));
			return -EINVAL;
		}
		((struct output *)o->dest)->path = arg;
		return 0;
	case OPT_FN:
		return o->fn(arg) ? -EINVAL : 0;
	case OPT_RETIRED:
		p_err("%s", o->help);
		return -EINVAL;
	case OPT_U64:
		err = parse_u64(arg, o->min, o->max ?: UINT64_MAX, o->dest);
		break;
	case OPT_SECONDS:
		err = parse_seconds(arg, o->dest);
		break;
	case OPT_PERCENT:
		err = parse_percent(arg, o->dest);
		break;
	}
	if (err)
		p_err("invalid %s '%s' (%s)", o->what ?: opt_name(o, name, sizeof(name)), arg,
		      range_hint(o, hint, sizeof(hint)));
	return err ? -EINVAL : 0;
}

struct parse_state {
	int argc;
	char **argv;
	int i; /* the argument being read */
	const struct opt_group *groups;
	int nr_groups;
	unsigned int caps;
	const char *usage_line;
};

/* One line; for a misspelling, the usage and where the options are listed. */
static int unknown_option(const struct parse_state *ps, const char *shown, bool denied)
{
	const char *cmd = ps->argv[0];

	if (denied) {
		p_err("option '%s' does not apply to %s", shown, cmd);
		return -EINVAL;
	}
	p_err("unknown option '%s'", shown);
	fprintf(stderr, "%s\n'bpfprof %s --help' lists the options.\n", ps->usage_line, cmd);
	return -EINVAL;
}

static bool wants_help(const struct opt *o)
{
	return o->type == OPT_FLAG && o->dest == NULL;
}

/* "--name", "--name=value", "--name value". */
static int parse_long(struct parse_state *ps)
{
	const char *a = ps->argv[ps->i] + 2, *eq = strchr(a, '=');
	size_t len = eq ? (size_t)(eq - a) : strlen(a);
	const struct opt *o;
	bool denied;
	char shown[128];

	snprintf(shown, sizeof(shown), "--%.*s", (int)len, a);
	o = find_opt(ps->groups, ps->nr_groups, ps->caps, a, len, true, &denied);
	if (!o)
		return unknown_option(ps, shown, denied);
	if (wants_help(o))
		return 1;
	if (!o->arg && o->type != OPT_RETIRED) {
		if (eq) {
			p_err("option '%s' takes no argument", shown);
			return -EINVAL;
		}
		return opt_store(o, NULL);
	}
	if (eq)
		return opt_store(o, eq + 1);
	if (o->type == OPT_RETIRED)
		return opt_store(o, NULL);
	if (ps->i + 1 >= ps->argc || !strcmp(ps->argv[ps->i + 1], "--")) {
		p_err("option '%s' needs an argument", shown);
		return -EINVAL;
	}
	return opt_store(o, ps->argv[++ps->i]);
}

/* "-x", "-xyz" (flags), "-Fvalue", "-F value". */
static int parse_short(struct parse_state *ps)
{
	const char *a = ps->argv[ps->i] + 1;

	for (; *a; a++) {
		const struct opt *o;
		bool denied;
		char shown[3] = { '-', *a, 0 };

		o = find_opt(ps->groups, ps->nr_groups, ps->caps, a, 1, false, &denied);
		if (!o)
			return unknown_option(ps, shown, denied);
		if (wants_help(o))
			return 1;
		if (o->type == OPT_RETIRED)
			return opt_store(o, NULL);
		if (!o->arg) {
			if (opt_store(o, NULL))
				return -EINVAL;
			continue;
		}
		if (a[1])
			return opt_store(o, a + 1);
		if (ps->i + 1 >= ps->argc || !strcmp(ps->argv[ps->i + 1], "--")) {
			p_err("option '%s' needs an argument", shown);
			return -EINVAL;
		}
		return opt_store(o, ps->argv[++ps->i]);
	}
	return 0;
}

int opts_parse(int argc, char **argv, const struct opt_group *groups, int nr_groups,
	       unsigned int caps, const char *usage_line, struct opt_args *args)
{
	return opts_parse_cmd(argc, argv, groups, nr_groups, caps, usage_line, NULL, args);
}

int opts_parse_cmd(int argc, char **argv, const struct opt_group *groups, int nr_groups,
		   unsigned int caps, const char *usage_line, bool (*starts_command)(const char *arg),
		   struct opt_args *args)
{
	struct parse_state ps = { argc, argv, 1, groups, nr_groups, caps, usage_line };
	int err;

	memset(args, 0, sizeof(*args));
	args->pos = argv + 1;
	for (; ps.i < argc; ps.i++) {
		const char *a = argv[ps.i];

		if (!strcmp(a, "--")) {
			if (ps.i + 1 == argc) {
				p_err("'--' must be followed by a command");
				return -EINVAL;
			}
			args->command = &argv[ps.i + 1];
			break;
		}
		if (a[0] == '-' && a[1] == '-')
			err = parse_long(&ps);
		else if (a[0] == '-' && a[1] && !is_negative_number(a))
			err = parse_short(&ps);
		else if (starts_command && starts_command(a)) {
			args->command = &argv[ps.i];
			break;
		} else /* kept in order, packed at the front of argv */
			err = (args->pos[args->nr_pos++] = (char *)a, 0);
		if (err) /* 1: -h, the caller prints the help */
			return err;
	}
	return 0;
}

/* Continuation lines ("\n" in the help) start at the help column. */
static void print_wrapped(FILE *out, const char *help)
{
	const char *nl;

	while ((nl = strchr(help, '\n'))) {
		fprintf(out, "%.*s\n%*s", (int)(nl - help), help, HELP_COLUMN, "");
		help = nl + 1;
	}
	fprintf(out, "%s\n", help);
}

/* An earlier option with o's letter takes it (the parser matches the first): a command's own
 * -d (top's delay) leaves the shared --duration long-only. */
static bool letter_taken(const struct opt_group *groups, int g, const struct opt *o,
			 unsigned int caps)
{
	for (int i = 0; i <= g && o->short_name; i++)
		for (const struct opt *p = groups[i].opts; p && !opt_end(p) && p != o; p++)
			if (p->short_name == o->short_name && opt_allowed(p, caps))
				return true;
	return false;
}

static void print_opt(FILE *out, const struct opt *o, bool letter)
{
	char left[96];
	int n;

	if (!letter && o->long_name)
		n = snprintf(left, sizeof(left), "      --%s", o->long_name);
	else if (o->short_name && o->long_name)
		n = snprintf(left, sizeof(left), "  -%c, --%s", o->short_name, o->long_name);
	else if (o->short_name)
		n = snprintf(left, sizeof(left), "  -%c", o->short_name);
	else
		n = snprintf(left, sizeof(left), "      --%s", o->long_name);
	if (o->arg)
		n += snprintf(left + n, sizeof(left) - n, " %s", o->arg);
	if (n < HELP_COLUMN - 1)
		fprintf(out, "%-*s", HELP_COLUMN, left);
	else
		fprintf(out, "%s\n%*s", left, HELP_COLUMN, "");
	print_wrapped(out, o->help);
}

void opts_print_help(FILE *out, const struct opt_group *groups, int nr_groups, unsigned int caps)
{
	for (int g = 0; g < nr_groups; g++) {
		bool titled = false;

		for (const struct opt *o = groups[g].opts; o && !opt_end(o); o++) {
			if (!opt_allowed(o, caps) || o->type == OPT_RETIRED)
				continue;
			if (!titled)
				fprintf(out, "\n%s:\n", groups[g].title);
			titled = true;
			print_opt(out, o, !letter_taken(groups, g, o, caps));
		}
	}
}
