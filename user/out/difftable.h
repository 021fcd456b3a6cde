/* bpfprof diff's table: the frames whose share of the profile changed most between two
 * profiles, as percentages of each one's total (so profiles of different lengths compare). */
#ifndef BPFPROF_DIFFTABLE_H
#define BPFPROF_DIFFTABLE_H
#include "out/stack.h"

struct difftable_opts {
	const char *before_name, *after_name; /* the files, for the header */
	const char *count_name;               /* "samples", "us" */
	int rows;                             /* at most; 0 = 20 */
};

/* Writes a "# ..." header with both totals, then one row per frame (by the name a flame graph
 * shows), sorted by the change of its total share (the frame and what it calls), largest
 * first: share before, after and the change, the same for its self share.  Frames that did not
 * change are left out.  0 or -errno (a failed write included). */
int difftable_write(FILE *out, const struct stack_sample *before, size_t nr_before,
		    const struct stack_sample *after, size_t nr_after,
		    const struct difftable_opts *o);
#endif
