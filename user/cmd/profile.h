/* profile's run, which top runs too: top is profile refreshing (user/cmd/top.c), on the same BPF
 * object, targets and events.  What top takes from here: the sampling options, the lifecycle
 * hooks and what the run knows at each refresh. */
#ifndef BPFPROF_CMD_PROFILE_H
#define BPFPROF_CMD_PROFILE_H
#include "core/runner.h"
#include "core/stackrun.h"

/* -F, -c and --include-idle: filled by the options, reset by profile_teardown(). */
struct profile_sampling {
	__u64 freq;     /* -F; 0 until given or defaulted */
	__u64 period;   /* -c: a sample every N events of each perf event */
	bool freq_given;
	bool include_idle;
};
extern struct profile_sampling profile_sampling;

/* The sampling options (-F, -c, --include-idle): profile's and top's struct command
 * sampling_opts. */
extern const struct opt profile_sampling_opts[];
/* profile's own options (--event-root, --filter, --by), which record shares */
extern const struct opt profile_opts[];

/* The events -e takes, for profile's --help and top's. */
#define PROFILE_EVENT_NOTES                                                                    \
	"EVENT: cpu-clock (default), task-clock, or another of perf's software and hardware\n"  \
	"events (cycles, instructions, cache-misses, branch-misses...; bpfprof list sw hw;\n"    \
	":u/:k modifiers) sampled at -F HZ (software events other than the clocks: every\n"     \
	"event, or every -c N); or an event spec, every hit a sample:\n"                        \
	"t:CAT:NAME, CAT:NAME, sys:NAME, u:PATH:FUNC, LIB:FUNC, k:FUNC (globs welcome).\n"

/* profile's hooks (core/runner.h), top's too. */
int profile_check(struct runner *r);

/* The hooks of profile's run that a command sampling as profile does shares whole (annotate,
 * record): its own are check, write and what it adds.  In a file with RUNNER_SKELETON(profile). */
#define PROFILE_RUN_HOOKS                                                                      \
	.sampling_opts = profile_sampling_opts, .skel = &profile_skel,                          \
	.configure = profile_configure, .fallback = stack_run_fallback,                         \
	.attach = profile_attach, .started = profile_started, .tick = profile_tick,             \
	.detach = profile_detach, .collect = profile_collect
int profile_configure(struct runner *r);
int profile_attach(struct runner *r);
int profile_started(struct runner *r);
int profile_tick(struct runner *r);
void profile_detach(struct runner *r);
int profile_collect(struct runner *r);
void profile_teardown(struct runner *r);

/* What a refresh shows of the run. */
struct profile_state {
	struct stack_run *sr;  /* its draining: stack_run_take_period() */
	const char *event;     /* the events, as given ("cpu-clock") */
	const char *const *events; /* each event's name, by stack_sample.event */
	int nr_events;
	__u64 freq;            /* Hz; 0 when every hit of an event spec is a sample */
	__u64 lost;            /* samples lost so far: not stored, and runs the kernel skipped */
	bool trim_bpf_frames;  /* event specs: samples end at the code that hit the event
				* (stack_sample_trim_bpf()) */
};
/* Between profile_check() and the end of the run. */
void profile_state(struct runner *r, struct profile_state *out);

/* The texts a profile's outputs point into: they live as long as the outputs. */
struct profile_texts {
	char detail[256], title[384], unwound[512];
};
/* How the run's stacks are written (report header, flame graph, pprof sample types), as
 * profile writes them at its end; out points into t. */
void profile_outputs(struct runner *r, struct profile_texts *t, struct stack_outputs *out);
#endif
