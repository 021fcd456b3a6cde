/* Event fields read in the kernel (--by FIELD, --filter EXPR): what user/probe/fields.c and
 * bpf/fields.bpf.h agree on.  Per event, a small table says where each field is (a tracepoint
 * record's offset, a function's or syscall's argument register, the return value, or one of the
 * pseudo fields every event has), how to read it, and where its value goes in the aggregation
 * key; a filter is a postfix program over comparisons of those fields with constants. */
#ifndef BPFPROF_EVFIELDS_H
#define BPFPROF_EVFIELDS_H
#include "events.h"

#define FIELDS_MAX 4         /* --by fields */
#define FIELD_STR_LEN 64     /* strings are cut to this (with their NUL) */
/* an aggregation key: the event index, then each field's slot (8 bytes, or FIELD_STR_LEN) */
#define FIELDS_KEY_MAX (8 + FIELDS_MAX * FIELD_STR_LEN)
#define FILTER_FIELDS_MAX 8  /* fields a filter reads */
#define FILTER_OPS_MAX 32    /* comparisons and operators of a filter, postfix */
#define FILTER_STRS_MAX 8    /* string constants of a filter */

/* Where a field's value comes from. */
enum field_src {
	FSRC_RECORD = 1, /* a tracepoint record (perf tracepoint program): offset, size */
	FSRC_ARG,        /* argument register / syscall argument number `offset` */
	FSRC_RET,        /* a function's or syscall's return value */
	FSRC_COMM,       /* the current task's command name */
	FSRC_PID,        /* process id (tgid) */
	FSRC_TID,        /* thread id */
	FSRC_CPU,        /* the CPU */
	FSRC_CGROUP,     /* cgroup v2 id */
};

/* How the value is read. */
enum field_read {
	FREAD_INT = 1, /* an integer of `size` bytes, sign-extended when is_signed */
	FREAD_CHARS,   /* char[size] in the record */
	FREAD_DATALOC, /* __data_loc char[]: a u32 in the record, offset (low 16) and length */
	FREAD_KSTR,    /* an integer that points to a NUL-terminated kernel string */
	FREAD_USTR,    /* an integer that points to a NUL-terminated user string */
};

struct field_desc {
	__u8 src;       /* enum field_src */
	__u8 read;      /* enum field_read */
	__u8 size;      /* FREAD_INT: 1, 2, 4 or 8; FREAD_CHARS: the array's size, at most 255 */
	__u8 is_signed;
	__u16 offset;   /* FSRC_RECORD: offset in the record; FSRC_ARG: argument number */
	__u16 key_off;  /* --by: where the value goes in the key (8-byte slot or a string) */
};

/* Filter operations (postfix: leaves push a truth, && || ! combine the two or one on top). */
enum filter_opcode {
	FOP_CMP = 1, /* field `field` compared by `cmp` with `val` / string constant `val` */
	FOP_AND,
	FOP_OR,
	FOP_NOT,
};

enum filter_cmp {
	FCMP_EQ = 1, FCMP_NE, FCMP_LT, FCMP_LE, FCMP_GT, FCMP_GE,
	FCMP_AND,      /* (field & val) != 0 */
	FCMP_STR_EQ,   /* strings: equal, differ, or ~ globs: "a*", "*a", "*a*" (ftrace's forms) */
	FCMP_STR_NE,
	FCMP_PREFIX,
	FCMP_SUFFIX,
	FCMP_CONTAINS,
	FCMP_NOT_PREFIX, FCMP_NOT_SUFFIX, FCMP_NOT_CONTAINS,
};

struct filter_op {
	__u8 op;     /* enum filter_opcode */
	__u8 cmp;    /* enum filter_cmp */
	__u8 field;  /* index in field_table.filt */
	__u8 pad;
	__u32 len;   /* string constants: their length */
	__u64 val;   /* integer constant, or the index of a string constant */
};

/* One event's fields: --by's, then the filter's (the BPF map holds one per event index). */
struct field_table {
	__u32 nr_by;
	__u32 nr_filt;
	__u32 nr_ops;  /* 0: no filter */
	__u32 pad;
	struct field_desc by[FIELDS_MAX];
	struct field_desc filt[FILTER_FIELDS_MAX];
	struct filter_op ops[FILTER_OPS_MAX];
	char strs[FILTER_STRS_MAX][FIELD_STR_LEN];
};
#endif
