/* Symbolized stacks merged in user space: what draining feeds (core/stackrun.c).  Samples that
 * agree on event, command (and thread, when asked) and every frame's name and file are one
 * entry, so memory grows with distinct stacks, not with processes: a fork storm of `ls` is one
 * entry per stack of ls.  The aggregation owns its strings, so the processes and files that
 * named the frames can be dropped once they are gone.  Pure data: no BPF, unit-tested. */
#ifndef BPFPROF_STACKAGG_H
#define BPFPROF_STACKAGG_H
#include <stdbool.h>
#include <stdio.h>
#include "out/stack.h"

struct stack_agg;

/* by_tid: threads apart (folded --tid), else merged across threads and processes.  NULL on
 * ENOMEM. */
struct stack_agg *stack_agg__new(bool by_tid);
/* From here on a sample's leaf frame keeps its address (and offset): samples at different
 * instructions of a function are entries apart, as annotation needs. */
void stack_agg__keep_leaf_addrs(struct stack_agg *a);
/* Every frame keeps its address and offset, as the samples added have them: frames are told
 * apart by address too, and unresolved frames are not merged by file (for writers fed
 * stack_samples, whose output must not change by going through an aggregation). */
void stack_agg__keep_addrs(struct stack_agg *a);
/* At most max_nodes nodes (0: no bound): once they are made, a sample whose stack needs another
 * is kept under the longest path of its stack there is, its waker's dropped, and counted
 * (stack_agg_stats' cut_samples): memory stops growing with the distinct stacks of a long run,
 * whose new stacks are by then mostly rare ones. */
void stack_agg__bound(struct stack_agg *a, size_t max_nodes);
/* Adds s's value to its entry, made on first sight with copies of s's frames and strings (s
 * stays the caller's; its frames inline or ids, as another aggregation's samples have them).
 * 0 or -ENOMEM. */
int stack_agg__add(struct stack_agg *a, const struct stack_sample *s);
/* The id in a's frame table of frame f (added on first sight, copying its strings), as
 * stack_agg__add() would find it: for callers that memoize the frames they meet again.  -ENOMEM,
 * -ENOSPC when f is new and the bound's nodes are all made (no node could hold it: a sample
 * with it is kept at a caller's path, STACK_AGG_NO_FRAME in stack_agg__add_own()), or the id. */
long stack_agg__frame_id(struct stack_agg *a, const struct frame *f);
/* A frame id of stack_agg__add_own()'s samples: a frame stack_agg__frame_id() refused at the
 * bound, where the stack is cut. */
#define STACK_AGG_NO_FRAME (UINT32_MAX - 1)
/* The frame table the ids index; valid until the next add. */
const struct frame *stack_agg__frames(const struct stack_agg *a);
/* How many frames the table holds. */
size_t stack_agg__nr_frames(const struct stack_agg *a);
/* How many nodes the tree holds. */
size_t stack_agg__nr_nodes(const struct stack_agg *a);
/* A number no other aggregation of this process has, even once a is freed: for callers that
 * keep ids of one aggregation and must notice another (allocated where a freed one was). */
__u64 stack_agg__serial(const struct stack_agg *a);
/* stack_agg__add() for a sample whose frame_ids (and waker_frame_ids) are ids of a's own table
 * (stack_agg__frame_id(); frame_table stack_agg__frames(a)): the ids are taken as they are, no
 * frame hashed again.  Not where leaves are exact (stack_agg__exact_leaves()): an id keeps the
 * first address seen, not the sample's.  0 or -ENOMEM. */
int stack_agg__add_own(struct stack_agg *a, const struct stack_sample *s);
/* Whether stack_agg__keep_leaf_addrs() was asked. */
bool stack_agg__exact_leaves(const struct stack_agg *a);
/* The entries so far as samples, for what reads or changes them as an array (the writers read
 * the tree), their frames as ids into the aggregation's frame table (stack_sample_frame());
 * valid until the next add or free.  NULL with *nr 0 when
 * there is none, or on ENOMEM. */
const struct stack_sample *stack_agg__samples(struct stack_agg *a, size_t *nr);
/* The aggregation as its call-path tree (out/stack.h's struct stack_tree), for writers that walk
 * it instead of reading a stack per sample: stack_agg__samples() copies every stack's frames, 4
 * bytes a frame and a stack_sample a stack.  Valid until the next add or free. */
void stack_agg__tree(const struct stack_agg *a, struct stack_tree *t);
/* Nothing more is added (adds fail with -EROFS from here on): the indexes that find a stack's
 * nodes, frames and context as it is added are freed (at the bound, 2 MB of a run's 10), for
 * the writers that read the tree after. */
void stack_agg__seal(struct stack_agg *a);
/* Bytes held, strings apart: for -v. */
size_t stack_agg__bytes(const struct stack_agg *a);
/* Heap bytes held, by part: for -v's memory lines. */
struct stack_agg_mem {
	size_t tree;    /* nodes, their index, entries, contexts */
	size_t frames;  /* the frame table and its index */
	size_t strings; /* names, modules, build-ids, source files, cgroups */
	size_t samples; /* stack_agg__samples()' arrays, while made */
};
void stack_agg__mem(const struct stack_agg *a, struct stack_agg_mem *m);
struct stack_agg_stats {
	size_t entries, nodes, frames, ids, strings;
	size_t max_nodes;                /* stack_agg__bound() */
	__u64 cut_samples, cut_adds;     /* kept at a caller's path at the bound */
};
/* What a holds, counted: for -v. */
void stack_agg__stats(const struct stack_agg *a, struct stack_agg_stats *st);
void stack_agg__free(struct stack_agg *a);

struct report_header;
struct report_opts;
/* out/report.h's report_write_tree() of samples (n of them, frames inline or ids): their tree,
 * every frame's address kept, made first and freed after.  0 or -errno. */
int stack_agg_report_write(FILE *out, const struct report_header *h, const struct stack_sample *s,
			   size_t n, const struct report_opts *o);
#endif
