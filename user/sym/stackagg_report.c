// SPDX-License-Identifier: GPL-2.0
/* The report of a sample array: out/report.c reads call-path trees only, and samples become one
 * here, in sym/, which may call out/ (out/ calls nothing above it).  A file of its own, so that
 * what links stackagg.c (the fuzz harnesses) needs no report. */
#include <errno.h>
#include "out/report.h"
#include "sym/stackagg.h"

int stack_agg_report_write(FILE *out, const struct report_header *h, const struct stack_sample *s,
			   size_t n, const struct report_opts *o)
{
	/* frames as they are, addresses too: the tree only merges what the report would merge */
	struct stack_agg *a = stack_agg__new(false);
	struct stack_tree t;
	int err = 0;

	if (!a)
		return -ENOMEM;
	stack_agg__keep_addrs(a);
	for (size_t i = 0; i < n && !err; i++)
		err = stack_agg__add(a, &s[i]);
	stack_agg__tree(a, &t);
	err = err ?: report_write_tree(out, h, &t, -1, o);
	stack_agg__free(a);
	return err;
}
