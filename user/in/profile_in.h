/* Profiles read back: pprof files (profile.proto, gzip'd or not: bpfprof's, Go's runtime/pprof,
 * any producer's) and folded stacks, told apart by their content, merged into one set of
 * stack_samples for the writers (bpfprof report and diff).  Files are input from anywhere: every
 * size is bounded, every index checked, and a bad file is one line naming it. */
#ifndef BPFPROF_PROFILE_IN_H
#define BPFPROF_PROFILE_IN_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "out/report.h"
#include "out/stack.h"

/* The largest file read, and the most a compressed one may grow to. */
#define PROFILE_IN_MAX_FILE (256ULL << 20)
#define PROFILE_IN_MAX_DECOMPRESSED (256ULL << 20)
#define PROFILE_IN_MAX_STR "256 MiB"
/* Frames kept per stack (the leaf's side; deeper callers are dropped). */
#define PROFILE_IN_MAX_FRAMES 4096
/* Events told apart (pprof sample types that each count one event: profile -e A,B). */
#define PROFILE_IN_MAX_EVENTS 16

enum profile_format { PROFILE_PPROF, PROFILE_FOLDED };

struct profile_in {
	struct stack_agg *agg;      /* the samples of every file, merged; owns frames and strings */
	int nr_files;
	char first[256];            /* the first file, for messages */
	/* what a sample's value is, as the first file had it (the others must agree) */
	char value_type[64], value_unit[32];
	enum report_unit unit;      /* REPORT_TIME_US for times (values in microseconds) */
	char *event_names[PROFILE_IN_MAX_EVENTS]; /* by stack_sample.event */
	int nr_events;
	__u64 frequency;            /* Hz, where the period says (a clock sampled at -F) */
	double duration_s;          /* the files' durations, summed */
	__u64 dropped;              /* samples left out: values not positive, frames beyond
				     * PROFILE_IN_MAX_FRAMES (counted once per sample) */
	/* The run's report header, as bpfprof's pprof files carry it in their comments ("# Lost
	 * samples: 0"; out/pprof.h): the first file's, each field NULL or 0 where it says none. */
	struct report_header header;
	__u64 lost;                 /* "# Lost samples:" of every file, summed */
	char *machine;              /* the first file's machine header (core/machine.h: "## "
				     * comments, as "key : value" lines, "\n# " between), or NULL */
	int nr_headers;             /* files that had a "# Lost samples:" line */
};

/* NULL on ENOMEM. */
struct profile_in *profile_in__new(void);
/* Reads the file at path ("-" for stdin) and merges its samples.  0, or -errno after printing
 * one line that names the file (-EINVAL: not a profile, or a broken one). */
int profile_in__read(struct profile_in *in, const char *path);
/* The same for a file's content in memory; name is for messages. */
int profile_in__read_mem(struct profile_in *in, const void *data, size_t size, const char *name);
/* Every sample read so far, valid until the next read or free; NULL with *n 0 when none. */
const struct stack_sample *profile_in__samples(struct profile_in *in, size_t *n);
void profile_in__free(struct profile_in *in);

/* ---- the formats (profile_in.c chooses) ---- */
struct stack_sample;
/* One sample of a file, as a format's reader hands it over (frames outermost first), with the
 * value's meaning; -errno to stop. */
struct profile_sink {
	struct profile_in *in;
	const char *name;
	bool typed; /* the value's meaning was set (profile_in_set_type()) */
};
/* Sets what a file's values are (type and unit as pprof names them, "samples"/"count" for
 * folded stacks) and the names of its events; fails, printing why, when they disagree with the
 * files before.  0 or -EINVAL. */
int profile_in_set_type(struct profile_sink *k, const char *type, const char *unit,
			const char *const *events, int nr_events);
/* Adds a sample.  0 or -ENOMEM (printed). */
int profile_in_add(struct profile_sink *k, const struct stack_sample *s);
/* The readers: 0, or -errno after printing one line naming k->name. */
int pprof_read(struct profile_sink *k, const void *data, size_t size);
int folded_read(struct profile_sink *k, const char *text, size_t size);
#endif
