/* What the stack commands (profile, offcpu) share: the stack option group (perf's -g and
 * --call-graph, -U/-K, unwinding, folded / report / flame graph output) and the pieces of their
 * lifecycle around the runner: unwinder and symbolizer while the run goes on, then reading,
 * symbolizing and writing the stacks. */
#ifndef BPFPROF_STACKRUN_H
#define BPFPROF_STACKRUN_H
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "core/options.h"
#include "out/flamegraph.h"
#include "out/folded.h"
#include "out/pprof.h"
#include "out/report.h"
#include "sym/stackcollect.h"
#include "unwind/unwinder.h"

struct stack_opts {
	bool call_graph;                 /* -g: accepted; stacks are always captured */
	bool user_only, kernel_only;     /* -U, -K */
	__u64 max_stack, max_stacks;     /* --max-stack, --max-stacks */
	bool max_stacks_auto;            /* --max-stacks not given: the default, which a command
					  * may size to what it drains (top) */
	enum unwind_method unwind;       /* --unwind, --call-graph */
	bool unwind_given;               /* --unwind or --call-graph was given (top's default differs) */
	__u64 unwind_mem_mb;             /* --unwind-mem */
	bool no_unwind_cache;            /* --no-unwind-cache */
	__u64 unwind_cache_mb;           /* --unwind-cache-mb */
	bool folded, annotate, no_children; /* -f, --annotate, --no-children */
	double percent_limit, call_graph_limit;
	unsigned sort;                   /* --sort: enum report_sort, 0 for all keys */
	struct output svg;               /* --svg */
	struct output pprof;             /* --pprof */
	const char *title;               /* --title */
	bool inline_frames, no_inline;   /* --inline, --no-inline */
	bool srcline;                    /* --srcline, --sort srcline */
	bool leaf_addrs;                 /* annotate: samples keep their leaf's address */
};

/* What the stack options fill; reset by stack_opts_reset(). */
extern struct stack_opts stack_opts;
extern const struct opt stack_opts_table[];
/* -f, --svg, --pprof, the report's limits: what is written (bpfprof report takes them too). */
extern const struct opt stack_output_opts_table[];

void stack_opts_reset(struct stack_opts *o);
/* Whether stacks get their inlined frames (--inline; by default without -f, unless
 * --no-inline), and whether frames get source lines at all (that, or --srcline): DWARF is
 * read only then. */
bool stack_opts_inline(void);
bool stack_opts_lines(void);
/* After parsing: -U with -K, --max-stack above kernel.perf_event_max_stack (the default is the
 * lower of 127 and that).  0 or -EINVAL (printed). */
int stack_opts_check(struct stack_opts *o);

/* Before load, after stack_run_init(): the stack settings (samples keyed by cgroup too where a
 * pprof names them) and the sizes of the `stacks` (stacks_per_key stacks for each of
 * --max-stacks keys, each sized to --max-stack), `counts` and `seen` (seen_procs, by the CPUs)
 * maps.  reads_old_gen: the programs read stacks of the generation being drained (offcpu's
 * stack_in_gen()), which a preallocated map would hand to another key as soon as the drain
 * deletes them: never preallocated then.
 * targ_loop: the programs' loops are bpf_loop()'s (feat_bpf_loop()). */
void stack_maps_configure(struct bpf_map *stacks, struct bpf_map *counts, struct bpf_map *seen,
			  __u32 stacks_per_key, bool reads_old_gen, __u32 *targ_max_stack,
			  __u32 *targ_stack_mask, bool *targ_cgroup_key, bool *targ_loop);
#define STACK_MAPS_CONFIGURE(skel, stacks_per_key, reads_old_gen)                             \
	stack_maps_configure((skel)->maps.stacks, (skel)->maps.counts, (skel)->maps.seen_procs, \
			     (stacks_per_key), (reads_old_gen),                                 \
			     (__u32 *)&(skel)->rodata->targ_max_stack,                          \
			     (__u32 *)&(skel)->rodata->targ_stack_mask,                         \
			     (bool *)&(skel)->rodata->targ_cgroup_key,                           \
			     (bool *)&(skel)->rodata->targ_loop)

/* After load, before attach: the allocator of maps made without preallocation holds elements
 * ready on every CPU (see stackrun.c). */
void stack_maps_warm(struct bpf_map *stacks, struct bpf_map *counts);
#define STACK_MAPS_WARM(skel) stack_maps_warm((skel)->maps.stacks, (skel)->maps.counts)

/* Before load, before UNWIND_CONFIGURE: the row array stack_run_init() started making on a
 * thread is handed to libbpf: waited for now, or, where only SEC("perf_event") programs read
 * it (only_sampling), just before the first of them loads. */
void stack_run_adopt_early(struct bpf_map *rows, bool only_sampling);
/* After load, before attach: the kernel struct fields stack_run_init() started reading on a
 * thread are waited for, and written to the object's unwind_kfields (zero where they were not
 * read: frame pointers, or no BTF). */
void stack_run_adopt_kfields(struct unw_kfields *out);
#define STACK_RUN_KFIELDS(skel) stack_run_adopt_kfields(&(skel)->bss->unwind_kfields)

struct kstack_cfg;
struct stack_drain;
struct stack_agg;

/* A stack command's run: symbolizer, unwinder, and the stacks read at the end (or drained while
 * the run goes on). */
struct stack_run {
	struct stack_resolver *resolver;
	struct unwinder *unwinder;      /* --unwind eh/auto; NULL with frame pointers */
	struct stack_drain *drain;      /* NULL where the maps are read once, at the end */
	bool by_tid;                    /* drained aggregations keep threads apart (and so know
					 * each sample's process: top zooms into one); set before
					 * stack_run_drain_init() */
	struct stack_sample *samples;   /* read once at the end; or the drained aggregation's
					 * (the run's or a period's) once stack_run_samples() made
					 * them */
	size_t nr_samples;
	struct stack_agg *agg;          /* after stack_run_finish() of a drained run, or while a
					 * period is written (--every): its stacks, which the
					 * writers read as they are */
	__u64 period_start_ns, period_end_ns; /* --every: the period written (monotonic) */
	__u64 planned_end_ns;           /* the run's end by DURATION (0: none) */
	bool stopped_in_sync;           /* set at detach: no program run that writes the maps can
					 * still be under way (see stack_run_finish()) */
	__u64 drain_every_ns;           /* drains between periods at most this often (0: each
					 * second); top drains at its refreshes */
	bool trim_on_interval;          /* memory given back every 10 s only, not after each drain
					 * that forgot processes: top's, whose next refresh takes
					 * the memory again */
	__u64 quiet_ns;                 /* how long the next tick may wait (runner.idle_tick_ns):
					 * 0 while a process waits for its second snapshot, or
					 * processes come as fast as the mmap record rings hold */
	__u64 last_tick_ns;
	struct kstack_cfg *kstack;      /* the BPF object's kernel-stack walker (bpf/kstack.bpf.h),
					 * told where the kernel's ORC tables are once the kernel
					 * symbols are loaded; NULL: none */
	struct disk_cache *cache;       /* the persistent cache (--no-cache: NULL) */
	bool cache_tried;
};

struct runner;

/* Before anything is opened: the symbolizer.  0 or -ENOMEM (printed). */
int stack_run_init(struct stack_run *s);
/* Once attached (the runner's `started`): the unwinder on the skeleton's maps (eh/auto), the
 * ring buffers that tell of new processes and of unwind tables to build, and kernel symbols
 * loading in the background.  0 or -errno (printed). */
int stack_run_start(struct stack_run *s, struct runner *r, const struct unwind_bpf *ub,
		    struct bpf_map *proc_events);
/* The runner's `fallback`: --unwind auto that does not load (the unwinder needs BPF global
 * functions, 5.6+, and the most verifier budget) is tried once more with the frame-pointer
 * walk; the runner never retries after EPERM, and reports the second error if that fails. */
bool stack_run_fallback(struct runner *r, int err);
/* Before the run starts (after load): the kernel maps become a cache that the run loop empties
 * into a user-space aggregation by (command, symbolized stack), every DRAIN_INTERVAL and
 * whenever one of them is a quarter full, so that a long run loses nothing to full tables and holds
 * only distinct stacks; processes that exited are forgotten once their samples are read.  The
 * BPF side keys every count and stack by generation (bpf/stacks.bpf.h: drain_gen_begin(),
 * targ_exit_events).  0 or -ENOMEM (printed). */
int stack_run_drain_init(struct stack_run *s, struct bpf_map *counts, struct bpf_map *stacks,
			 __u32 *drain_gen, const __u64 *counts_stored, const __u64 *stacks_stored);
#define STACK_RUN_DRAIN(s, skel)                                                                \
	stack_run_drain_init((s), (skel)->maps.counts, (skel)->maps.stacks,                     \
			     (__u32 *)&(skel)->bss->drain_gen,                                  \
			     (const __u64 *)&(skel)->bss->counts_stored,                        \
			     (const __u64 *)&(skel)->bss->stacks_stored)
/* Draining where the counts map's keys begin with a struct sample_key and hold more (offcpu's
 * waker): fill() makes each drained sample.  keep(), where given, runs after each flip, before
 * the old generation is read and deleted, with the generation programs write now: what must
 * outlive the old one (the stacks of offcpu's threads still blocked) is copied there.  After
 * stack_run_drain_init(). */
void stack_run_drain_keys(struct stack_run *s, stack_fill_fn fill, void *fill_ctx,
			  int (*keep)(void *ctx, __u32 gen), void *keep_ctx);
/* While the run goes on (the runner's `tick`): second snapshots of new processes; draining.
 * 0 or -errno (printed). */
int stack_run_tick(struct stack_run *s);
/* The run's planned end (DURATION) is at most a tick and a half away. */
bool stack_run_ending(const struct stack_run *s);
/* A period ends (top's refresh, --every): the samples the kernel holds are drained, and the
 * aggregation so far is handed over (the caller frees it with stack_agg__free()); the next
 * period starts empty.  A sample belongs to the period in which the generation it was written
 * under was drained, so none is lost at the boundary and none is counted twice.  Needs draining
 * (stack_run_drain_init()).  NULL with errno set (ENOMEM and read errors printed). */
struct stack_agg *stack_run_take_period(struct stack_run *s);
/* --every (the command's `period` hook): a period ends; its aggregation becomes s->agg for
 * write (the command's `write` hook, which stack_outputs_write()s it: to --pprof-dir and
 * --push, or printed; stack_run_samples() where it needs an array), then goes.  0 or -errno
 * (printed). */
int stack_run_period(struct stack_run *s, struct runner *r, int (*write)(struct runner *r));
/* What the samples being written cover, in seconds: the period with --every, else the run. */
double stack_run_seconds(const struct stack_run *s, const struct runner *r);
/* After detach: the processes seen last, while they may still be alive; the last drain, whose
 * aggregation becomes s->samples.  0 or -errno (printed). */
int stack_run_finish(struct stack_run *s);
/* The drained run's samples as an array in s->samples, for what reads or changes samples (-e's
 * trimming, top, annotate, offcpu's units); the report reads s->agg instead.  0 or -ENOMEM
 * (printed). */
int stack_run_samples(struct stack_run *s);
/* The unwinder first (its worker reads the skeleton's maps), then the rest. */
void stack_run_free(struct stack_run *s);

/* What to write and how. */
struct stack_outputs {
	bool folded;           /* -f: folded stacks instead of the report */
	bool files_only;       /* the --svg and --pprof files alone, no report or folded stacks
				* (record); what folded stacks say on stderr is said */
	struct folded_opts folded_opts;
	struct flamegraph_opts flamegraph;
	struct report_header header; /* with -f, its lost count and detail go to stderr */
	struct report_opts report;
	const char *lost_what; /* "samples", "blocks": for the stderr line */
	const char *const *event_names; /* by sample event; with more than one, the report has a
					 * section per event, as perf report does */
	int nr_events;
	struct pprof_meta pprof; /* --pprof: its sample types and period (stack_pprof_meta()) */
};

/* What the stack options (stack_opts) say of every stack command's outputs: folded stacks or the
 * report and its shape, the flame graph's title (default_title unless --title), the unwinding
 * the header names; values in unit, lost ones called samples.  The command adds its own. */
struct stack_outputs stack_outputs_from_opts(const char *default_title, enum report_unit unit);

/* --pprof's description of the run r: the values of o->pprof kept, with the times of the run,
 * the labels the samples carry (pid, tid, comm) and comment as its comment. */
void stack_pprof_meta(struct stack_outputs *o, const struct runner *r, const char *comment);

/* Whether --svg or --pprof asked for a file of the run's stacks. */
bool stack_files_wanted(void);
/* The --svg and --pprof files of the n samples s, or of the entries of t where t is given, as o
 * describes them; a file that fails is named on stderr and dropped (runner_output_failed()),
 * the rest still written. */
void stack_files_write(const struct stack_outputs *o, const struct stack_sample *s, size_t n,
		       const struct stack_tree *t);

/* The SVG and pprof files (when asked for) and the report or folded stacks of the run's samples
 * on out.  Files are committed by the runner.  A report that cannot be written costs only itself
 * (runner_report_failed(): the run exits 1, the files are still committed); returns 0, or
 * -errno (printed) of --every's periods. */
int stack_outputs_write(FILE *out, const struct stack_outputs *o, const struct stack_run *sr);
#endif
