/* Folded stacks for flamegraph.pl / difffolded.pl: "comm;outer;...;inner COUNT". */
#ifndef BPFPROF_FOLDED_H
#define BPFPROF_FOLDED_H
#include "out/stack.h"

struct folded_opts {
	bool annotate_kernel; /* "_[k]" suffix on kernel frames (stackcollapse-perf.pl --kernel) */
	bool with_tid;        /* "comm-tid" as the first frame instead of "comm" */
	bool inline_frames;   /* --inline: inlined functions' frames (marked _[i] with annotate) */
	bool srcline;         /* --srcline: ":LINE" after each frame whose line is known */
	const char *const *event_root; /* names by sample event: "EVENT;comm;..."; NULL: none */
};

/* Writes one line per distinct folded stack (identical stacks merged, counts summed), sorted by
 * stack string.  With waker frames, BCC offwaketime's layout: the stack, then "--", then the
 * waker's frames innermost first, then the waker comm.  Returns 0 or -errno (write error). */
int folded_write(FILE *out, const struct stack_sample *s, size_t n, const struct folded_opts *o);
/* folded_write() of the stacks of a call-path tree, read where they are. */
int folded_write_tree(FILE *out, const struct stack_tree *t, const struct folded_opts *o);
#endif
