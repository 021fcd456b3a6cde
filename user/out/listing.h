/* `bpfprof list`'s output: named things (events, functions, probes) in sections, filtered by
 * globs, sorted, and written as text or as one JSON document.  Pure: no kernel, no files. */
#ifndef BPFPROF_LISTING_H
#define BPFPROF_LISTING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct listing_entry {
	int section;      /* index of its section: sections print in the order they were added */
	char *spec;       /* printed: what bpfprof takes ("sched:sched_switch", "sys:read") */
	char *name;       /* the bare name, which globs also match ("sched_switch", "read") */
	char *alias;      /* printed after the spec, matched too (perf's "cs", a demangled name) */
	char *match;      /* one more name globs match, not printed ("t:sched:sched_switch") */
	const char *note; /* printed after it ("<not supported>", a function's arguments), or NULL */
	bool unsupported; /* this machine cannot trace or count it (--json "supported": false) */
};

struct listing_section {
	char *kind;   /* --json's "kind": "tracepoint", "syscall", "function"... */
	char *title;  /* "Tracepoints" */
	char *source; /* where the names came from: "tracefs (/sys/kernel/tracing)", a file */
	char *usage;  /* how to use a name: "t:CATEGORY:NAME or CATEGORY:NAME" */
	char *note;   /* one line about the whole section ("fentry: no (...)"), or NULL */
	size_t count; /* its entries, after listing_finish() */
	bool show_empty; /* the text shows it with no entries (unless globs filtered them) */
};

struct listing {
	struct listing_entry *v;
	size_t n, cap;
	struct listing_section *sec;
	size_t nr_sec;
	bool filtered; /* by globs: empty sections are left out of the text, not shown as empty */
};

/* Adds a section (strings copied; note may be NULL): its index, or -ENOMEM. */
int listing_add_section(struct listing *l, const char *kind, const char *title, const char *source,
			const char *usage, const char *note);
/* Adds an entry (strings copied, NULL ones stay NULL; name defaults to spec).  0 or -ENOMEM. */
int listing_add(struct listing *l, const struct listing_entry *e);

/* Whether a GLOB is one fnmatch reads as meant: 0, or -EINVAL with the reason in why ("empty",
 * "'[' without ']'", "ends in '\'"). */
int glob_check(const char *glob, char *why, size_t size);
/* Whether an entry's spec, name, alias or extra name matches the glob. */
bool listing_entry_matches(const struct listing_entry *e, const char *glob);

/* Keeps the entries that some glob matches (all of them without globs), sorts each section by
 * spec, drops duplicates, and counts each section's entries; matched[i] (when not NULL) gets
 * how many entries glob i matched. */
void listing_finish(struct listing *l, char **globs, int nr_globs, size_t *matched);

/* Text: a "# TITLE" header line per section with entries (or show_empty, unless filtered) (its source, its usage and its note),
 * one entry a line, and a last "# N listed: ..." line.  Control characters in names (from a
 * binary's symbol table) are written as \xNN.  0 or -errno of the stream. */
int listing_write_text(FILE *f, const struct listing *l);
/* One JSON document: {"sections": [{"kind", "title", "source", "usage", "note", "count",
 * "events": [{"spec", "name", "alias", "note", "supported"}]}], "count": N}.  Bytes that are
 * not UTF-8 become U+FFFD. */
int listing_write_json(FILE *f, const struct listing *l);

void listing_free(struct listing *l);
#endif
