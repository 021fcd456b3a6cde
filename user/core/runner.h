/* The one lifecycle every command runs through, in one order:
 *
 *   parse (one grammar) -> privileges -> check -> open outputs -> open BPF -> configure -> load
 *   (one fallback policy) -> fill target filters -> follower -> prepare -> attach -> fork
 *   COMMAND (held) -> started -> release COMMAND -> run loop -> detach -> stop COMMAND -> drain
 *   -> collect / last report -> write -> commit outputs -> teardown (the command's workers, then
 *   the maps they use)
 *
 * and one run loop for all: DURATION, intervals (INTERVAL [COUNT], -i, -I), SIGINT/SIGTERM
 * (what was collected is still written), the command's exit, every -p/-t target gone, and ring
 * buffers.  A command supplies only what is its own: its BPF skeleton, its options, and hooks. */
#ifndef BPFPROF_RUNNER_H
#define BPFPROF_RUNNER_H
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include <pthread.h>
#include <bpf/libbpf.h>
#include "core/child.h"
#include "core/options.h"
#include "core/targets.h"
#include "probe/probe.h"

/* A command's skeleton behind generic calls; RUNNER_SKELETON(name) defines `name_skel` for
 * name.skel.h, whose object must include bpf/target.bpf.h. */
struct skel_ops {
	void *(*open)(void);
	int (*load)(void *skel);
	int (*attach)(void *skel);
	void (*detach)(void *skel);
	void (*destroy)(void *skel);
	struct bpf_object *(*obj)(void *skel);
	void (*target)(void *skel, struct target_bpf *out);
	const void *(*elf)(size_t *size); /* the object embedded in the binary */
};

#define RUNNER_SKELETON(name)                                                                   \
	static void *name##_skel_open(void) { return name##_bpf__open(); }                      \
	static int name##_skel_load(void *s) { return name##_bpf__load(s); }                    \
	static int name##_skel_attach(void *s) { return name##_bpf__attach(s); }                \
	static void name##_skel_detach(void *s) { name##_bpf__detach(s); }                      \
	static void name##_skel_destroy(void *s) { name##_bpf__destroy(s); }                    \
	static struct bpf_object *name##_skel_obj(void *s)                                      \
	{                                                                                       \
		return ((struct name##_bpf *)s)->obj;                                           \
	}                                                                                       \
	static void name##_skel_target(void *s, struct target_bpf *t)                           \
	{                                                                                       \
		struct name##_bpf *k = s;                                                       \
		t->cfg = (struct target_cfg *)&k->rodata->target;                               \
		t->tgids = k->maps.tgids;                                                       \
		t->pids = k->maps.pids;                                                         \
		t->cpus = k->maps.cpus;                                                         \
		t->cgroup = k->maps.cgroup_filter;                                              \
	}                                                                                       \
	static const struct skel_ops name##_skel = {                                            \
		name##_skel_open, name##_skel_load, name##_skel_attach, name##_skel_detach,     \
		name##_skel_destroy, name##_skel_obj, name##_skel_target, name##_bpf__elf_bytes, \
	}

/* What the positional arguments before "--" are. */
enum run_positional {
	POS_DURATION, /* [DURATION] */
	POS_INTERVAL, /* [INTERVAL [COUNT]] */
	POS_EVENTS,   /* EVENT... [DURATION] */
	POS_SYMBOL_DURATION, /* [SYMBOL] [DURATION]: annotate; DURATION begins with a digit */
};

/* The run group: filled by the options every command takes. */
struct run_opts {
	double duration;  /* -d / DURATION seconds; 0: until Ctrl-C, COMMAND's end, targets gone */
	double interval;  /* -i / INTERVAL seconds (or -I MS); 0: one report at the end */
	__u64 interval_ms; /* -I */
	__u64 count;      /* COUNT reports; 0: until the run ends */
	bool timestamp;   /* -T: the time before each report */
	struct output out; /* -o */
	char **events;    /* -e (split at commas) and, for POS_EVENTS, the positional ones */
	int nr_events;
	const char *symbol; /* POS_SYMBOL_DURATION's SYMBOL, or NULL */
};
extern struct run_opts run_opts;

struct runner;

struct command {
	const char *name;
	const char *alias;       /* another name it answers to (stat's "count"); may be NULL */
	const char *summary;     /* one line, for `bpfprof help` */
	const char *description; /* printed under the usage line */
	const char *notes;       /* printed after the options; may be NULL */
	const char *no_events;   /* POS_EVENTS: the error when none is given */
	const char *banner;      /* printed on stdout once tracing has started (BCC's "Tracing...");
				  * scripts wait for it */
	bool stderr_beside_command; /* with a COMMAND and no -o, the output goes to stderr, apart
				     * from the command's own (perf stat, perf trace) */
	unsigned int caps;       /* enum cmd_caps */
	enum run_positional positional;
	const struct opt *opts;  /* the command's own options */
	/* how perf events are sampled (-F, -c, --include-idle): profile's table, which top
	 * shares; NULL for the others */
	const struct opt *sampling_opts;
	const struct skel_ops *skel;

	/* Every hook is optional; each returns 0 or a negative errno after printing why. */
	/* After parsing, before anything is opened: checks across options, and what must be found
	 * before tracing (event specs, disks).  -EINVAL is bad usage (exit 2). */
	int (*check)(struct runner *r);
	/* After check: false when this run needs no BPF at all (stat counting perf events only):
	 * nothing is opened or loaded and a COMMAND is not followed in the kernel; the hooks
	 * after it still run, with r->skel NULL. */
	bool (*uses_bpf)(const struct runner *r);
	/* Between open and load: read-only settings, map sizes, program choices. */
	int (*configure)(struct runner *r);
	/* The load failed, and not for lack of permission: true when the configuration was changed
	 * for one more try (e.g. --unwind auto falling back to frame pointers). */
	bool (*fallback)(struct runner *r, int err);
	/* After load and the target filters, before attach: the command's own maps, iterators. */
	int (*prepare)(struct runner *r);
	/* Default: the skeleton's attach. */
	int (*attach)(struct runner *r);
	/* Attached, COMMAND forked and held: what must run before it starts (unwinder, banner). */
	int (*started)(struct runner *r);
	/* About every 100 ms during the run: > 0 ends it (set r->end_ns for an end in the past). */
	int (*tick)(struct runner *r);
	/* CAP_PERIODS, --every: a period ends (its last one ends with the run: `write` has it). */
	int (*period)(struct runner *r);
	/* CAP_INTERVALS: at each interval (last = false), and once after detach (last = true). */
	int (*report)(struct runner *r, bool last);
	/* Default: the skeleton's detach.  Counting stops here. */
	void (*detach)(struct runner *r);
	/* After detach and the last ring-buffer records: read the maps. */
	int (*collect)(struct runner *r);
	/* Writes the results to r->out (and the command's own files: one that fails goes through
	 * runner_output_failed(), so that the others are still written). */
	int (*write)(struct runner *r);
	/* Frees what the command made, before the skeleton whose maps it may use is destroyed. */
	void (*teardown)(struct runner *r);
	/* After parsing: how many times the whole lifecycle runs (stat -r N: COMMAND N times);
	 * default once.  A Ctrl-C ends the repetitions after the run it interrupts. */
	unsigned (*runs)(void);

	/* A command that loads no BPF object (list) runs this instead of the lifecycle, on argv
	 * (argv[0] is its name), and returns the exit status; nothing above is used. */
	int (*main)(int argc, char **argv);
};

#define RUNNER_LATE_LINKS 4

struct runner {
	const struct command *cmd;
	void *skel;                /* the command's skeleton */
	struct bpf_object *obj;
	struct target_bpf target;
	struct ring_buffer *rb;    /* every ring buffer of the run, polled by the run loop */
	struct ring_buffer *rb_ticks; /* those read at its ticks only (runner_add_ringbuf_ticks()) */
	struct probe_links links;  /* event specs (probe/), detached with the skeleton */
	struct follow_bpf *follow; /* -- COMMAND as the target */
	struct child child;
	FILE *out;                 /* -o FILE, or stdout */
	__u64 start_ns, end_ns;    /* CLOCK_MONOTONIC: attach, and the end of the traced run */
	__u64 reports;             /* interval reports printed */
	unsigned run, runs;        /* this run of cmd->runs(), from 0 */
	struct bpf_link *late_links[RUNNER_LATE_LINKS]; /* runner_detach_later() */
	pthread_t late_threads[RUNNER_LATE_LINKS]; /* each destroying its link; 0: none */
	bool late_started;
	/* Set by the command (at any hook): while the rings bring nothing, its tick may wait this
	 * long instead of the runner's 100 ms (less, or 0, keeps 100 ms).  Each wake-up costs a live view
	 * such as top as much as the work it finds on a quiet machine. */
	__u64 idle_tick_ns;
	bool ring_activity;        /* the rings brought something since the last tick */
	bool lazy_rings;           /* set by the command: the rings are read at its ticks, not as
				    * they fill (nothing in them is urgent: no wake-up for each) */
	int wake_epfd;             /* runner_wake_on(): the rings and those fds; 0 until then */
	bool woken;                /* a runner_wake_on() fd is ready: the tick runs now */
};

/* Runs a command on argv (argv[0] is its name); returns the process exit status: 0, 1 for a
 * failure at run time, 2 for bad usage. */
int runner_main(const struct command *cmd, int argc, char **argv);

/* The skeleton's own attach, for a command's attach hook that adds to it; explains a failure.
 * 0 or -errno. */
int runner_attach_skeleton(struct runner *r);

/* For a command's detach: *link, whose program counts nothing the report shows (it prepares, as
 * the unwinder's mmap() tracepoint does), is destroyed on a thread while the run is collected
 * and written (a perf tracepoint's release waits out RCU grace periods: tens of ms), and *link
 * cleared.  At most RUNNER_LATE_LINKS; the rest at once. */
void runner_detach_later(struct runner *r, struct bpf_link **link);
/* The same before the run ends, for a command's tick as a planned end nears: that thread starts
 * now, and the release is over before the report (the exit waited 15-45 ms for it). */
void runner_detach_early(struct runner *r, struct bpf_link **link);

/* The command's tick runs as soon as fd has one of events (EPOLLIN for keys typed; 0 for
 * EPOLLERR/EPOLLHUP alone: a pipe whose reader is gone), not at the next tick.  After the ring
 * buffers are added.  0, or -errno where fd cannot be polled (a regular file: nothing to wait
 * for). */
int runner_wake_on(struct runner *r, int fd, __u32 events);

/* Adds a ring buffer the run loop polls (and drains once more after detach).  0 or -errno
 * (message printed). */
int runner_add_ringbuf(struct runner *r, struct bpf_map *map, ring_buffer_sample_fn fn, void *ctx);
/* The same for a ring whose records can wait for the run loop's next tick (100 ms at most):
 * read there (and once more after detach), never woken for. */
int runner_add_ringbuf_ticks(struct runner *r, struct bpf_map *map, ring_buffer_sample_fn fn,
			     void *ctx);

/* The -e / positional event specs resolved to attach points (libraries through the first -p
 * process's mappings).  0, or -EINVAL for a malformed spec, or what resolution did not find
 * (printed). */
int runner_resolve_events(struct probe_events *evs);
/* Attaches them to p's programs, uprobes to each -p process; detached with the skeleton. */
int runner_attach_events(struct runner *r, const struct probe_progs *p,
			 const struct probe_events *evs);

/* Program runs the kernel skipped because a BPF program was already running on that CPU (the
 * programs' recursion_misses): events no map could count.  The runner reports them after every
 * run; a command may add them to its own accounting. */
__u64 runner_missed_runs(const struct runner *r);

/* The traced run's length in seconds (start to end, or to now while it runs). */
double runner_elapsed(const struct runner *r);

/* The run's length when known in advance: DURATION, or INTERVAL x COUNT; 0 otherwise. */
double runner_planned_seconds(void);

/* Option groups at most: the command's own and the shared ones. */
#define RUNNER_GROUPS_MAX 12

/* The option tables a command parses (its own, then the shared groups it takes), for the
 * unit tests; returns how many groups were written to `groups` (at most `max`). */
int runner_option_groups(const struct command *cmd, struct opt_group *groups, int max);

/* Resets every shared option group to its defaults (tests parse several times). */
void runner_reset_options(void);

/* An output of the command's own (--svg, --heatmap) that could not be written: says so in one
 * line and removes the file (never left half written); the run then exits 1, while every other
 * output, the report first, is still written and committed. */
void runner_output_failed(struct output *out, int err);
/* The report (-o FILE, else stdout) could not be written: a file is removed as
 * runner_output_failed() removes one, the other outputs are still written and committed, and the
 * run exits 1.  A pipe whose reader has gone (EPIPE: `| head`) is said by no line, as perf and
 * git die of SIGPIPE without one. */
void runner_report_failed(int err);
/* Where the report goes, for runner_report_failed(): -o's output, NULL for stdout (set by
 * runner_main() and by the file commands). */
void runner_set_report_output(struct output *out);
/* The first error of an output given up (runner_output_failed(), runner_report_failed()), or 0. */
int runner_output_error(void);

/* The output files of cmd's options (-o, --svg, --heatmap...), opened before tracing as
 * runner_main() does: 0, or -errno after printing which one failed and removing the others. */
int runner_open_outputs(const struct command *cmd);
/* Removes the files opened and not committed. */
void runner_abort_outputs(const struct command *cmd);
/* The same for any option groups (bpfprof report and diff, which trace nothing): open every
 * output named (0 or -errno, printed, the others removed); commit them all (0 or the first
 * -errno, each failure printed); remove those not committed. */
/* -EINVAL (printed) when two output options name one regular file */
int outputs_distinct(const struct opt_group *groups, int n, unsigned int caps);
int outputs_open(const struct opt_group *groups, int n, unsigned int caps);
int outputs_commit(const struct opt_group *groups, int n, unsigned int caps);
void outputs_abort(const struct opt_group *groups, int n, unsigned int caps);

/* Parses argv as runner_main() does, without running anything: 0, 1 (--help) or -EINVAL. */
int runner_parse(const struct command *cmd, int argc, char **argv);
#endif
