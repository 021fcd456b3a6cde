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
};

/* Writes a complete, valid XML SVG document.  Frames narrower than 0.1 px are elided, their
 * time still counted in their parent.  Returns 0 or -errno. */
int flamegraph_write(FILE *out, const struct stack_sample *s, size_t n,
		     const struct flamegraph_opts *o);
#endif
