/* What a lookup needs of a function's debug info, in bpfprof's own form (sym/srcline.c's
 * indexes): made from libdw, or read back from the persistent cache (sym/srccache.h).  Private
 * to sym/. */
#ifndef BPFPROF_SRCINDEX_H
#define BPFPROF_SRCINDEX_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* A row of a CU's line table, as libdw sorted it (by address, each sequence's end marked). */
struct line_row {
	__u64 addr;
	__u32 line;
	__u16 file;          /* in its struct lines' files */
	bool end;            /* DW_LNE_end_sequence: the address past a sequence */
};

/* The rows of a line table a lookup in some ranges of addresses can find. */
struct lines {
	struct line_row *rows;
	size_t nr_rows;
	const char **files;  /* interned; [0] NULL (a row whose file libdw could not name) */
	size_t nr_files;
};

/* A scope of a concrete function that a lookup may descend into (may_hold()), in the DIE tree's
 * order: a scope's own scopes follow it, up to next. */
struct scope {
	__u32 next;
	__u32 ranges, nr_ranges; /* its addresses: fn_scopes' ranges [ranges, ranges + nr) */
	__u8 kind;
	__u32 call_line;         /* SCOPE_INLINED: where the scope around it called it */
	const char *name;        /* SCOPE_FUNCTION, SCOPE_INLINED: interned */
	const char *call_file;
};

enum { SCOPE_NONE, SCOPE_ALWAYS, SCOPE_BLOCK, SCOPE_FUNCTION, SCOPE_INLINED };

struct addr_range {
	__u64 lo, hi;
};

struct fn_scopes {
	struct scope *s;
	size_t nr, cap;
	struct addr_range *r;
	size_t nr_r, cap_r;
	struct lines lines;  /* for the function's own ranges (s[0]'s) */
	__u32 cache_entry;   /* its entry in the persistent cache's file + 1, or 0 */
};

#endif
