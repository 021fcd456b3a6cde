/* Symbolized stacks as plain data: what subcommands hand to the writers (report, folded, SVG).
 * Writers never touch BPF; this split keeps them unit-testable without root. */
#ifndef BPFPROF_STACK_H
#define BPFPROF_STACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

struct frame {
	const char *name;   /* symbol (demangled), or NULL when unresolved */
	const char *module; /* "[kernel.kallsyms]", "[ext4]", "/usr/lib/.../libc.so.6", "[vdso]",
			     * "[unknown]" */
	__u64 addr;         /* absolute instruction address */
	__u64 offset;       /* offset in module, for unresolved frames ("libc.so.6+0x1234") */
	const char *build_id; /* the module's GNU build-id in hex, as readelf -n prints it, or NULL */
	bool kernel;
	/* From DWARF (sym/srcline.h), where the file has it: an inlined function's frame follows
	 * the frame it was inlined into, with the same address; srcfile:line is where the
	 * address is in this frame's function (the call site, for a frame with an inlined one
	 * after it). */
	bool inlined;
	__u32 line;           /* 0: unknown */
	const char *srcfile;  /* NULL: unknown */
};

struct stack_sample {
	char comm[16];
	__u32 pid;          /* tgid */
	__u32 tid;
	__u32 event;        /* index of the run's event that took it (profile -e A,B), else 0 */
	__u64 value;        /* sample count, or time in microseconds (offcpu) */
	const char *cgroup; /* the task's cgroup v2 as its path under the mount ("/a/b"), or its
			     * id in decimal when gone; NULL unknown (pprof's cgroup label) */
	__u32 nr_frames;
	struct frame *frames; /* outermost first: user frames, then kernel frames */
	/* offcpu --waker: who woke this thread; nr_waker_frames == 0 when not recorded */
	char waker_comm[16];
	__u32 nr_waker_frames;
	struct frame *waker_frames; /* outermost first, like frames */
	/* Instead of frames and waker_frames (both NULL then), drained runs' samples name their
	 * frames as ids in a shared table, 4 bytes a frame: read frames with stack_sample_frame()
	 * and stack_sample_waker_frame(). */
	const __u32 *frame_ids, *waker_frame_ids;
	const struct frame *frame_table;
};

/* Stacks merged into a call-path tree (sym/stackagg.h makes them): what writers walk instead of
 * a stack per sample.  Nodes come after their parent (a node's index is above its parent's).  A path is a
 * context node (parent STACK_TREE_NONE, frame the index of its context in ctxs), then the
 * frames outermost first (frame: an id into frames), then, for a stack with a waker, a node of
 * frame STACK_TREE_WAKER and the waker's frames outermost first.  A stack that samples ended at
 * is an entry, in the order first seen; an empty stack's entry is at its context node. */
#define STACK_TREE_NONE UINT32_MAX
#define STACK_TREE_WAKER UINT32_MAX /* a frame id no table reaches */
struct stack_tree_node {
	__u32 parent; /* STACK_TREE_NONE for a context node */
	__u32 frame;  /* frame id, STACK_TREE_WAKER, or a context node's context */
	__u32 entry;  /* the stack that ends here, STACK_TREE_NONE for none */
};
struct stack_tree_ctx {
	char comm[16], waker_comm[16];
	__u32 tid, event; /* tid 0 unless by thread */
	const char *cgroup; /* or NULL */
};
/* A stack that samples ended at: the first sample's process and thread, and the value. */
struct stack_tree_entry {
	__u32 node;
	__u32 pid, tid;
	__u64 value;
};
struct stack_tree {
	const struct stack_tree_node *nodes;
	size_t nr_nodes;
	const struct stack_tree_entry *entries;
	size_t nr_entries;
	const struct stack_tree_ctx *ctxs;
	const struct frame *frames;
};

/* How many frames entry i of t has, its waker's too. */
__u32 stack_tree_nr_frames(const struct stack_tree *t, size_t i);
/* Entry i of t as a sample, its frames as ids written to ids (room for
 * stack_tree_nr_frames()): for writers that read a tree's stacks one at a time. */
void stack_tree_sample(const struct stack_tree *t, size_t i, __u32 *ids, struct stack_sample *s);

/* Stacks a writer reads one at a time: n samples s, or the entries of tree t (when t is given),
 * each made a sample in turn with its frames as ids in a buffer of the source's: a tree's stacks
 * are never all expanded at once.  Start it zeroed but for s, n or t. */
struct stack_source {
	const struct stack_sample *s;
	size_t n;
	const struct stack_tree *t;
	/* the tree's entry read last */
	struct stack_sample one;
	__u32 *ids;
	size_t ids_cap;
};
/* How many stacks src has. */
size_t stack_source_count(const struct stack_source *src);
/* Stack i of src, valid until the next call; NULL on ENOMEM. */
const struct stack_sample *stack_source_get(struct stack_source *src, size_t i);
void stack_source_free(struct stack_source *src);

static inline const struct frame *stack_sample_frame(const struct stack_sample *s, __u32 i)
{
	return s->frame_ids ? &s->frame_table[s->frame_ids[i]] : &s->frames[i];
}

static inline const struct frame *stack_sample_waker_frame(const struct stack_sample *s, __u32 i)
{
	return s->frame_ids ? &s->frame_table[s->waker_frame_ids[i]] : &s->waker_frames[i];
}

/* Short name of a module for display: basename of a path, "[kernel.kallsyms]" as is. */
const char *stack_module_short(const char *module);

/* Display name of a frame, as stackcollapse-perf.pl names it: the symbol; else the file it is in,
 * in brackets ("[libselinux.so.1]", "[vdso]"), so that flame graphs stay readable; "[unknown]"
 * only where the file is unknown too.  With annotate_kernel, kernel frames get the "_[k]"
 * suffix of stackcollapse-perf.pl --kernel.  Returns buf. */
const char *stack_frame_name(const struct frame *f, bool annotate_kernel, char *buf, size_t size);

/* A frame's name with " (inlined)" for an inlined one, and its " FILE:LINE" (the file's base
 * name) with srcline where the line is known: what the report and folded output show.  Appended
 * to b: 0 or -ENOMEM. */
struct stack_buf;
int stack_frame_decorate(struct stack_buf *b, const struct frame *f, bool inlined_mark,
			 bool srcline);

/* Sum of values. */
__u64 stack_samples_total(const struct stack_sample *s, size_t n);
/* Sum of the values of t's entries. */
__u64 stack_tree_total(const struct stack_tree *t);

/* ---- helpers shared by the writers ---- */

/* A growable NUL-terminated string; start it zeroed. */
struct stack_buf {
	char *s;
	size_t len, cap;
};
/* Appends len bytes of s.  Returns 0 or -ENOMEM (the buffer is left as it was). */
int stack_buf_add(struct stack_buf *b, const char *s, size_t len);
/* Appends formatted text.  Returns 0 or -ENOMEM. */
int stack_buf_printf(struct stack_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void stack_buf_free(struct stack_buf *b);

/* Interned strings with dense ids 0, 1, 2...: how writers group frames by name in O(1). */
struct stack_names;
/* NULL when out of memory. */
struct stack_names *stack_names__new(void);
/* Id of the first len bytes of s, copied on first sight.  Returns the id or -ENOMEM. */
int stack_names__intern(struct stack_names *t, const char *s, size_t len);
const char *stack_names__str(const struct stack_names *t, __u32 id);
__u32 stack_names__count(const struct stack_names *t);
/* Heap bytes t holds (its strings and its index): for -v. */
size_t stack_names__bytes(const struct stack_names *t);
void stack_names__free(struct stack_names *t);

/* Flushes out and reports any write that failed on it: a full disk or a closed pipe is an error.
 * Returns 0, or -errno (-EIO when the error flag was set by an earlier write). */
int stack_output_done(FILE *out);
#endif
