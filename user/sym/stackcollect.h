/* Reads in-kernel stack aggregations (sample_key -> value, stack id -> frames) into symbolized
 * stack_samples for the writers.  Shared by every stack-collecting subcommand. */
#ifndef BPFPROF_STACKCOLLECT_H
#define BPFPROF_STACKCOLLECT_H
#include "out/stack.h"
#include "stacks.h"

struct ksyms;
struct ksyms_store;
struct stack_resolver;
struct syms_cache;
#include "sym/syms.h"

struct stack_resolver *stack_resolver__new(void);
/* Starts loading kernel symbols in a background thread (reading /proc/kallsyms takes ~50 ms of
 * kernel time): call it when a run starts, so the report does not wait.  loaded (may be NULL)
 * is called on that thread with the symbols (NULL when they cannot be read), which nothing else
 * touches until the resolver first needs them, nor keeps: stack_resolver__release() frees them.
 * 0 or -errno. */
int stack_resolver__prefetch(struct stack_resolver *r,
			     void (*loaded)(const struct ksyms *ks, void *ctx), void *ctx);
/* The core kernel's symbols kept between the runs of a boot in st (ksyms__load_kept()), before
 * the prefetch. */
void stack_resolver__keep_ksyms(struct stack_resolver *r, const struct ksyms_store *st);
/* A BPF function of this run's, as /proc/kallsyms names it, before the prefetch: kept kernel
 * symbols then name an address inside it without reading the file.  0 or -ENOMEM. */
int stack_resolver__known_bpf(struct stack_resolver *r, __u64 start, __u32 len, const char *name);
/* Waits for the prefetch to end (it uses the store, which may go first). */
void stack_resolver__join_prefetch(struct stack_resolver *r);
/* The user symbolizer, for capturing processes' mappings while the run goes on. */
struct syms_cache *stack_resolver__syms(struct stack_resolver *r);
/* Frames of stack `id` from the stacks map (cached); NULL when absent.  *nr gets the depth. */
const __u64 *stack_resolver__trace(struct stack_resolver *r, int stacks_fd, __u64 id, __u32 *nr);
/* Symbolizes a raw stack (innermost first, as the kernel gives it) into frames, outermost
 * first, appended at *frames.  Returns the number of frames written. */
__u32 stack_resolver__symbolize(struct stack_resolver *r, __u32 tgid, bool kernel, const __u64 *ips,
				__u32 nr, struct frame *frames);
void stack_resolver__free(struct stack_resolver *r);
/* From here on samples are named their key's cgroup (sample_key.cgroup) through c, which the
 * resolver owns (NULL: none). */
struct cgroup_names;
void stack_resolver__set_cgroups(struct stack_resolver *r, struct cgroup_names *c);
/* From here on, user frames get their source lines from DWARF (sym/srcline.h), looked up on a
 * thread of their own (sym/srcworker.h: a drain through the memo never waits for it, the others
 * wait for each answer), and, with inline_frames, a frame for each function inlined at their
 * address (after it, marked inlined).  Unless every_line, only the inlined frames carry their lines (what a report shows
 * of them), the others none: samples of a function at different lines stay one stack.
 * 0 or -ENOMEM. */
int stack_resolver__set_lines(struct stack_resolver *r, bool inline_frames, bool every_line);
struct disk_cache;
/* Inline chains and lines answered from the persistent cache in dc where it holds them
 * (sym/srccache.h), after stack_resolver__set_lines().  0 or -ENOMEM. */
int stack_resolver__set_line_cache(struct stack_resolver *r, struct disk_cache *dc);
/* What stack_resolver__set_lines() does, on a malloc'd array of *nr frames (reallocated):
 * 0 or -ENOMEM (the frames left as they were). */
int stack_frames_add_lines(struct stack_resolver *r, struct frame **frames, __u32 *nr);
/* The report header's line naming the files whose frames had no debug info: its length, 0
 * when there is none to say. */
size_t stack_resolver__lines_missing(const struct stack_resolver *r, char *buf, size_t size);
/* -v: what source lines cost the run (frames, lookups, time). */
void stack_resolver__print_lines_cost(const struct stack_resolver *r);
/* The keys the last drains read whose frames wait for inline chains (looked up on a thread of
 * its own, so that a drain never waits on DWARF) into agg, once their chains are answered:
 * before the samples of agg are taken.  0 or -errno (said). */
struct stack_agg;
int stack_resolver__settle(struct stack_resolver *r, struct stack_agg *agg);
/* The samples are all symbolized and aggregated (whose frames own their strings): what
 * symbolizing them holds is given back before the outputs are written: the processes, files and
 * their symbols, the kernel's symbols (once loaded: what prefetch's loaded is given must not be
 * kept past the run), the frame memo and the stacks read, what finding lines holds (the worker stopped,
 * srclines__close_files()).  The counts the outputs' notes are made of stay. */
void stack_resolver__release(struct stack_resolver *r);

/* Symbolizes a user and a kernel stack of process tgid (stack ids of the stacks map, 0 for none)
 * into a malloc'd array of frames, user then kernel, outermost first; *frames NULL when both are
 * empty.  Returns 0 or -errno. */
int stack_frames_fill(struct stack_resolver *r, int stacks_fd, __u32 tgid, __u64 user_stack,
		      __u64 kern_stack, struct frame **frames, __u32 *nr);

/* Drops the innermost kernel frames (at the end of an outermost-first array) that belong to the
 * BPF program that took the stack and the tracing machinery that ran it (tracepoint glue,
 * trampolines, kprobe and ftrace handlers).  Returns the new count. */
__u32 stack_frames_trim_bpf(struct frame *frames, __u32 nr);
/* The same for a sample's frames (a drained sample's too): s->nr_frames shrinks. */
void stack_sample_trim_bpf(struct stack_sample *s);

/* A wake-up taken in interrupt context has whatever task the interrupt hit as `current`: when
 * the waker's kernel stack passes through an interrupt entry, keeps only the interrupt's frames
 * (the entry and what it called; the interrupted task's user and kernel frames go) and names
 * the waker "[interrupt]".  Returns whether it did. */
bool stack_waker_from_irq(struct stack_sample *s);

/* Builds a sample's frames (user then kernel, outermost first) from a key. 0 or -errno. */
int stack_sample_fill(struct stack_resolver *r, int stacks_fd, const struct sample_key *key,
		      __u64 value, struct stack_sample *out);

/* Turns one (key, value) entry of a counts map into a sample.  Returns 0 or -errno. */
typedef int (*stack_fill_fn)(struct stack_resolver *r, int stacks_fd, const void *key, __u64 value,
			     struct stack_sample *out, void *ctx);
void stack_samples_free(struct stack_sample *s, size_t n);

/* ---- draining (include/stacks.h): the maps emptied while the run goes on ---- */
struct stack_agg;
struct stack_drain_maps {
	int counts_fd, stacks_fd;
	size_t key_size;  /* the counts map's key: a struct sample_key, or one that begins with one */
	size_t gen_off;   /* offset of its __u32 generation */
	stack_fill_fn fill; /* NULL for a struct sample_key */
	void *fill_ctx;
	void *buf;          /* the batches' buffer, kept from drain to drain */
	size_t buf_size;
};
/* Frees m's buffer. */
void stack_drain_maps_free(struct stack_drain_maps *m);
struct stack_drain_result {
	__u64 value;          /* what the drained keys held (samples, time) */
	__u64 counts_deleted; /* keys deleted from the counts map */
	__u64 stacks_deleted; /* from the stacks map */
};
/* Reads every key of generation gen, which no program may still be writing, into agg
 * (symbolized now), and deletes those keys and the stacks of that generation.  0 or -errno;
 * keys read are deleted even then, so that nothing is counted twice. */
int stacks_drain_gen(struct stack_resolver *r, struct stack_drain_maps *m, __u32 gen,
		     struct stack_agg *agg, struct stack_drain_result *res);
/* The running kernel's vmlinux with DWARF (kernel_debuginfo_find()) into path, and KASLR's
 * offset (running address less the file's, from _stext in ks and in the file).  0 or -ENOENT. */
int kernel_vmlinux_find(const struct ksyms *ks, char *path, size_t size, __u64 *kaslr);
/* Stack ids whose frames were gone when their sample was read. */
__u64 stack_resolver__missing(const struct stack_resolver *r);
/* Heap bytes the resolver holds, by part: for -v's memory lines (source lines apart: the
 * worker's, said at the end). */
struct stack_resolver_mem {
	size_t memo;      /* the frame memo: its tables, runs and id translation */
	size_t known;     /* the memo's frames (tree, table and strings of their aggregation) */
	size_t traces;    /* stacks read and not yet dropped, keys waiting for lines */
	size_t ksyms;     /* kernel symbols */
	size_t lines;     /* inline chains and source lines: the lookup thread's (sym/srcworker.h) */
	struct syms_cache_mem syms;
};
void stack_resolver__mem(const struct stack_resolver *r, struct stack_resolver_mem *m);
/* With -v: how many frames the drains symbolized, and found symbolized before. */
void stack_resolver__print_memo(const struct stack_resolver *r);
#endif
