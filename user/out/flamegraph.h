/* Interactive flame graph SVG, like flamegraph.pl's: hover, click to zoom, search. */
#ifndef BPFPROF_FLAMEGRAPH_H
#define BPFPROF_FLAMEGRAPH_H
#include "out/stack.h"

enum flamegraph_palette {
	PALETTE_HOT,  /* CPU: red/orange/yellow */
	PALETTE_COOL, /* off-CPU: blue/green */
};

struct flamegraph_opts {
	const char *title;      /* "Flame Graph" */
	const char *subtitle;   /* or NULL */
	const char *count_name; /* "samples", "us" */
	enum flamegraph_palette palette;
	int width;              /* pixels; 0 = 1200 */
	bool annotate_kernel;   /* kernel frames coloured apart, as flamegraph.pl --color=java does */
	const char *const *event_root; /* names by sample event, as the root frames; or NULL */
	/* Differential (bpfprof diff, as difffolded.pl and flamegraph.pl draw it): the samples
	 * given are AFTER, whose shape is drawn; these are BEFORE, each frame coloured by how its
	 * value changed, red where it grew, blue where it shrank, by the difference over the
	 * largest one; white where it did not change.  NULL: an ordinary flame graph. */
	const struct stack_sample *before;
	size_t nr_before;
	double before_scale; /* BEFORE's values times this (diff -n); 0 is taken as 1 */
	bool no_comm;        /* stacks start at their outermost frame, not at their command */
};

/* Writes a complete, valid XML SVG document.  Frames narrower than 0.1 px are elided, their
 * time still counted in their parent.  Returns 0 or -errno (-E2BIG beyond 268 million stacks,
 * AFTER's and BEFORE's). */
int flamegraph_write(FILE *out, const struct stack_sample *s, size_t n,
		     const struct flamegraph_opts *o);
/* flamegraph_write() of the entries of a call-path tree (out/stack.h): the same SVG as of the
 * samples they are (stack_tree_sample()), made from one stack at a time. */
int flamegraph_write_tree(FILE *out, const struct stack_tree *t, const struct flamegraph_opts *o);
#endif
