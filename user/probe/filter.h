/* --filter 'EXPR': perf's / ftrace's filter syntax compiled, per event, into the small postfix
 * program the kernel side interprets (include/evfields.h, bpf/fields.bpf.h) before anything is
 * counted or any stack taken.
 *
 *   EXPR := EXPR || EXPR | EXPR && EXPR | ! EXPR | ( EXPR ) | FIELD OP VALUE
 *   integers:  == != < <= > >= &   (decimal, 0x hex, negative; & is "any bit in common")
 *   strings:   == != ~ !~          ("a", 'a' or a bare word; ~ takes ftrace's globs "a*",
 *                                   "*a", "*a*")
 * Pure: no BPF, no files (the fields come from the caller). */
#ifndef BPFPROF_PROBE_FILTER_H
#define BPFPROF_PROBE_FILTER_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "evfields.h"
#include "probe/fields.h"

/* Compiles expr against the fields of one event into t's filter part (nr_filt, filt, nr_ops,
 * ops, strs; --by's part is left alone).  user_mem: the event's pointers are user memory
 * (:string casts).  Returns 0, or -EINVAL with one line in err: a syntax error (naming where),
 * unbalanced parentheses, a string compared with < (or a number with ~), an unknown field
 * (-ENOENT, naming the fields that exist), or an expression too big for the kernel's tables
 * (-E2BIG). */
int filter_compile(const char *expr, const struct field_list *fields, bool user_mem,
		   struct field_table *t, char *err, size_t err_size);

/* The fields expr names (their text as written, casts included), each once, in order: for
 * callers that check them before compiling.  Returns how many, or -EINVAL (err says why). */
int filter_field_names(const char *expr, char names[][FIELD_NAME_MAX + 16], int max, char *err,
		       size_t err_size);

/* What the kernel side computes, in user space (tests, and a reference for bpf/fields.bpf.h):
 * the value of t's filter for a record whose filter fields hold ints[i] / strs[i].  true when
 * t has no filter. */
bool filter_eval(const struct field_table *t, const __u64 *ints, const char (*strs)[FIELD_STR_LEN]);
#endif
