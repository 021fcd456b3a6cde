/* pprof profiles (profile.proto, gzip'd): what go tool pprof, Grafana Pyroscope, Parca and
 * speedscope read.  Encoded with protobuf-c from proto/profile.proto; a pure function of the
 * samples and what the run was, like every writer here. */
#ifndef BPFPROF_PPROF_H
#define BPFPROF_PPROF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "out/report.h"
#include "out/stack.h"

/* Sample types at most (profile -e takes up to 8 events, each with a count). */
#define PPROF_MAX_VALUES 16
/* pprof_value.event for a value that every sample counts in. */
#define PPROF_ANY_EVENT (-1)

/* One of the values of every pprof sample: pprof's sample_type, and how it is made from a
 * stack_sample: s->value * scale, for samples of `event` only (0 for the others). */
struct pprof_value {
	const char *type, *unit; /* "samples", "count"; "cpu", "nanoseconds" */
	__u64 scale;             /* 0 is taken as 1 */
	int event;               /* PPROF_ANY_EVENT, or the stack_sample.event counted */
};

/* Labels each sample gets (pprof -tags), from its stack_sample. */
enum pprof_labels {
	PPROF_LABEL_PID = 1 << 0,  /* "pid" (numeric): the samples were kept apart by process */
	PPROF_LABEL_TID = 1 << 1,  /* "tid" (numeric): and by thread */
	PPROF_LABEL_COMM = 1 << 2, /* "comm" (string) */
};

/* What the run was: everything in a profile that does not come from its samples. */
struct pprof_meta {
	struct pprof_value values[PPROF_MAX_VALUES];
	int nr_values;
	int default_value;         /* index of default_sample_type: what pprof shows first */
	const char *period_type, *period_unit; /* "cpu", "nanoseconds"; NULL: none */
	__s64 period;              /* events between samples, in period_unit */
	__s64 time_nanos;          /* when the run started, ns since the epoch (UTC) */
	__s64 duration_nanos;      /* how long it ran */
	unsigned labels;           /* enum pprof_labels; and "cgroup" where a sample has one */
	const char *comment;       /* one line pprof prints with the profile ("bpfprof profile
				    * -F 99"), or NULL */
	/* The run's report header, or NULL: its lines become comments after that one, as the
	 * report prints them ("# Lost samples: 0", "# Call graph: fp"; the event as "# Event:
	 * NAME"), which bpfprof report reads back (in/pprof_read.c); not its source line. */
	const struct report_header *header;
	/* The machine's header (core/machine.h: "key : value" lines, "\n# " between), or NULL: each
	 * line a comment
	 * "## key : value" after the run's line, which bpfprof report --header prints back. */
	const char *machine;
};

/* Fills meta for a profile of the samples of one counted event (values: "samples/count", and
 * TYPE/UNIT at count * period where period is non-zero): profile's "cpu/nanoseconds" at 10101010
 * ns a sample for -F 99.  The caller sets the times, the labels and the comment. */
void pprof_meta_counted(struct pprof_meta *m, const char *type, const char *unit, __u64 period);

/* Encodes n samples into a gzip'd profile.proto in a malloc'd buffer (*buf, *size), so that it
 * can be written whole or sent as it is.  Frames become locations with their addresses in a
 * mapping per file (file name, GNU build-id), and functions with the frames' display names;
 * waker frames (offcpu --waker) sit above a "--" frame, leaf first, as in folded output, the
 * waker's command in a "waker" label.  0, -EINVAL (no value, or more than PPROF_MAX_VALUES),
 * -ENOMEM, or -EOVERFLOW (a value or count beyond int64). */
int pprof_encode(const struct stack_sample *s, size_t n, const struct pprof_meta *m, void **buf,
		 size_t *size);

/* pprof_encode() of the entries of a call-path tree (out/stack.h), in entry order: the same
 * bytes as of the samples the tree's entries are (stack_tree_sample()), no more than one of
 * them made at a time. */
int pprof_encode_tree(const struct stack_tree *t, const struct pprof_meta *m, void **buf,
		      size_t *size);

/* pprof_encode() into out (an outfile's stream: committed whole or not at all by its owner),
 * gzip'd as it is packed: neither the profile nor its samples are held whole.  0 or -errno, a
 * failed write included (out then holds part of the profile). */
int pprof_write(FILE *out, const struct stack_sample *s, size_t n, const struct pprof_meta *m);
/* pprof_write() of the entries of a call-path tree, as pprof_encode_tree() encodes them. */
int pprof_write_tree(FILE *out, const struct stack_tree *t, const struct pprof_meta *m);
#endif
