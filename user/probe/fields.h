/* The fields of an event, named as perf list / the tracepoint's format names them: a
 * tracepoint's record fields (from tracefs' format file), a syscall's arguments by name and its
 * `ret`, a user or kernel function's arg0..arg5 and `retval` (on return probes), with perf
 * probe's casts (:string, :u8..:s64, :x8..:x64), and the pseudo fields every event has (comm,
 * pid, tid, cpu, cgroup).  Used by --by / --filter (what the kernel reads, include/fields.h) and
 * by trace (formatting a raw record as perf script prints it).  Pure but for
 * fields_of_tracepoint() and fields_of_event(), which read tracefs. */
#ifndef BPFPROF_PROBE_FIELDS_H
#define BPFPROF_PROBE_FIELDS_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "evfields.h"

struct probe_event;
struct btf;
struct func_params;
struct ksyms;
struct cgroup_names;

#define FIELD_NAME_MAX 64
#define FIELD_TYPE_MAX 64

/* What a field holds, for reading and printing it. */
enum field_kind {
	FIELD_INT,       /* an integer (signed or not) */
	FIELD_HEX,       /* an integer printed in hex (:x8..:x64 casts, flags) */
	FIELD_CHARS,     /* char NAME[N] in the record (comm-like) */
	FIELD_DATALOC,   /* __data_loc char[] NAME: a string stored after the record */
	FIELD_PTR,       /* a pointer, printed as 0x... */
	FIELD_KSYM,      /* a pointer to a kernel function (print fmt's %ps / %pS): symbolized */
	FIELD_CGROUP,    /* a cgroup v2 id (the `cgroup` field every event has): printed as its path */
	FIELD_KSTR,      /* a pointer to a kernel string (kprobe args cast :string) */
	FIELD_USTR,      /* a pointer to a user string (syscall char * args, uprobe :string) */
};

struct field {
	char name[FIELD_NAME_MAX];
	char type[FIELD_TYPE_MAX];  /* as the format spells it ("void *", "pid_t"), or the cast */
	enum field_kind kind;
	enum field_src src;         /* include/fields.h: record, argument, return value, pseudo */
	unsigned offset;            /* byte offset in the record, when in_record */
	unsigned arg;               /* FSRC_ARG: argument number (0..5) */
	unsigned size;              /* bytes in the record (or the cast's width; strings: array) */
	bool in_record;             /* in a tracepoint record (syscall arguments are, too) */
	bool is_signed;
	bool common;                /* the common_* header fields every tracepoint record has */
	bool alias;                 /* a function argument's name from its prototype: argN too */
};

struct field_list {
	struct field *v;
	int nr;
	size_t cap;
};

void field_list_free(struct field_list *l);
/* Appends a copy of f.  0 or -ENOMEM. */
int field_list_add(struct field_list *l, const struct field *f);

/* Parses the text of a tracefs format file ("name: ...\nID: ...\nformat:\n\tfield:TYPE NAME;\t
 * offset:N;\tsize:N;\tsigned:N;\n ... print fmt: ...").  Integers, char arrays, __data_loc
 * strings and pointers; a pointer the print fmt prints with %ps / %pS / %pF is FIELD_KSYM.  With
 * syscall set (a syscalls:sys_enter_* / sys_exit_* format) the fields after __syscall_nr are
 * arguments (FSRC_ARG, numbered in order; `char *` ones are FIELD_USTR) and `ret` is FSRC_RET.
 * The common_* fields are kept, marked common.  Returns 0, or -EINVAL with a reason in err. */
int fields_parse_format(const char *text, bool syscall, struct field_list *out, char *err,
			size_t err_size);

/* The format of tracepoint CAT:NAME from tracefs (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing), parsed as above.  Returns 0 or a negative errno (after printing
 * nothing: callers say which event). */
int fields_of_tracepoint(const char *cat, const char *name, struct field_list *out);

/* Every field of a resolved event (the pseudo fields last): a tracepoint's record, a syscall's
 * arguments (sys:NAME and syscalls:sys_enter_NAME) or its ret (sys_exit_NAME), a function's
 * arg0..arg5 and its parameters' names where its DWARF (user) or the kernel's BTF gives them,
 * or retval alone for FUNC%return (e->ret).  0 or a negative errno. */
int fields_of_event(const struct probe_event *e, struct field_list *out);
/* The prototype fields_of_event() names a function event's arguments from: 0, -ENOENT (none
 * known), or -EOPNOTSUPP for a compiler's clone (foo.isra.0, foo.cold), whose DWARF may list
 * parameters it no longer takes. */
int func_params_of_event(const struct probe_event *e, struct func_params *out);
/* For an "unknown field" message on a function event: why a name may be missing (the
 * prototype unknown, its names stopped at a parameter not in an integer register, arguments
 * asked of a return or retval of an entry), as " (...)" in buf, or "" for other events.
 * Returns buf. */
char *fields_func_hint(const struct probe_event *e, const char *want, char *buf, size_t size);

/* Adds comm, pid, tid, cpu and cgroup, but for names the event's own fields have already.  0
 * or -ENOMEM. */
int fields_add_pseudo(struct field_list *l);

/* Adds arg0..arg5 (FIELD_INT, 64-bit signed; :string reads kernel memory for kernel functions,
 * user memory for user functions).  0 or -ENOMEM. */
int fields_add_func_args(struct field_list *l);
/* ---- argument names (user/probe/argnames.c) ---- */

#define FUNC_PARAMS_MAX 6
/* A function's first parameters, as far as each is one integer register: argN's other name. */
struct func_param {
	char name[FIELD_NAME_MAX]; /* "" for an unnamed parameter */
	char type[FIELD_TYPE_MAX]; /* "int", "char *", "size_t" */
	unsigned size;             /* bytes: the register's low ones hold it */
	bool is_signed, is_ptr;
};
struct func_params {
	int nr;                    /* p[0..nr) are arg0..arg(nr-1) */
	struct func_param p[FUNC_PARAMS_MAX];
	char stop[FIELD_NAME_MAX + FIELD_TYPE_MAX + 96]; /* why the names stop before the
							  * prototype's end, or "" */
};
/* Function func's parameters from the DWARF of the ELF file path (its own, else its separate
 * debug file, as the symbolizer finds it): the definition whose code starts at file offset
 * file_off (an alias symbol's function: glibc's malloc is __libc_malloc), else the first
 * named func (DW_AT_name or its linkage name); file_off ~0ULL: by name only.  A float, a struct or union by value or a value wider than 8 bytes ends the
 * mapping (stop says so): the registers after it are no longer the integer sequence arg0..arg5
 * number.  0, or -ENOENT (no debug info, or no such function in it), or another -errno. */
int func_params_dwarf(const char *path, const char *func, __u64 file_off,
		      struct func_params *out);
/* Calls fn with the parameters of every function definition in path's DWARF (by the ELF virtual
 * address its code starts at), in one pass, until fn returns non-zero.  0, -ENOENT (no debug
 * info), fn's value, or another -errno. */
int func_params_dwarf_each(const char *path,
			   int (*fn)(__u64 vaddr, const struct func_params *p, void *ctx),
			   void *ctx);
/* The same from the kernel's BTF: FUNC func_id's FUNC_PROTO.  0 or -ENOENT. */
int func_params_btf(const struct btf *btf, int func_id, struct func_params *out);
/* "(int x, char *label)": the parameters named, ", ...)" after them when the names stop
 * before the prototype's end.  Returns buf. */
char *func_params_text(const struct func_params *p, char *buf, size_t size);
/* Adds p's names as fields (alias set), each reading its argument register with its type's
 * width and signedness (pointers as FIELD_PTR: NAME:string reads the string).  0 or -ENOMEM. */
int fields_add_func_params(struct field_list *l, const struct func_params *p);

/* Adds retval (FSRC_RET, 64-bit signed).  0 or -ENOMEM. */
int fields_add_func_ret(struct field_list *l);

/* The field a --by / --filter name means: "NAME" or "NAME:CAST" (perf probe's casts: string,
 * u8 u16 u32 u64 s8 s16 s32 s64 x8 x16 x32 x64).  user_mem says whether pointers the event
 * gives point into user memory (uprobes, syscalls) for :string.  On success *f is the field
 * with the cast applied; common_* fields are found only by their full name.  Returns 0,
 * -ENOENT (no such field), or -EINVAL (bad cast: reason in err). */
int fields_lookup(const struct field_list *l, const char *spec, bool user_mem, struct field *f,
		  char *err, size_t err_size);

/* "a, b, c": the names of the fields (common_* left out), for "unknown field" messages.  Returns
 * buf. */
char *fields_names(const struct field_list *l, char *buf, size_t size);

/* How the kernel reads f (include/fields.h), its value going to key_off in an aggregation key. */
struct field_desc field_desc_of(const struct field *f, bool user_mem, unsigned key_off);

/* Bytes f takes in an aggregation key: FIELD_STR_LEN for strings, 8 for the rest. */
unsigned field_key_size(const struct field *f);

/* Whether f holds a string (chars, __data_loc, or a pointer read as a string). */
bool field_is_string(const struct field *f);

/* Names a value that stands for something else: a kernel function pointer (FIELD_KSYM) as
 * "symbol" or "symbol+0xoff", a cgroup id (FIELD_CGROUP) as its path.  Returns buf, or NULL when
 * it cannot (the value is then printed as a number: hex for an address, decimal for an id). */
typedef const char *(*field_name_fn)(const struct field *f, __u64 v, char *buf, size_t size,
				     void *ctx);

/* One field's value as text, from the value an aggregation key or a record holds: integers as
 * perf prints them (signed or unsigned decimal; hex for FIELD_HEX and pointers, 0x...), kernel
 * function pointers and cgroup ids through name (if given), strings as they are.  Returns buf. */
char *field_format_value(const struct field *f, __u64 v, const char *str, field_name_fn name,
			 void *ctx, char *buf, size_t size);

/* The fields of a raw tracepoint record rec (len bytes, as a perf tracepoint program sees it)
 * as perf script's "name=value name=value" text, leaving out the common_* fields.  Returns the
 * length written (snprintf's), or -EINVAL for a record too short for its fields. */
int fields_format_record(const struct field_list *l, const void *rec, size_t len,
			 field_name_fn name, void *ctx, char *buf, size_t size);

/* ---- --by and --filter over the events of a run (user/probe/fieldtab.c) ---- */

struct probe_events;

/* What the kernel side of a command needs for --by / --filter, per event. */
struct event_fields {
	int nr_ev;
	struct field_table *tabs;          /* one per event index (bpf/fields.bpf.h's field_tabs) */
	struct field (*by)[FIELDS_MAX];    /* each event's --by fields, for printing */
	int nr_by;
	char by_names[FIELDS_MAX][FIELD_NAME_MAX + 16]; /* as written, casts included */
	unsigned key_size;                 /* bytes of an aggregation key (index + slots) */
	bool filter;                       /* a --filter was given */
	bool records;                      /* a tracepoint field is read from its record: the
					    * command needs perf tracepoint programs, not raw ones */
};

/* Looks --by's comma-separated fields (by, or NULL) up and compiles --filter (filter, or NULL)
 * for every event of evs.  Returns 0, or -EINVAL after printing one line (an unknown field,
 * naming the event's fields; a bad expression; too many fields), -ENOMEM. */
int event_fields_build(const struct probe_events *evs, const char *by, const char *filter,
		       struct event_fields *ef);
/* --filter for a command that decides at a syscall's exit (trace): sys:NAME's `ret` too. */
int event_fields_build_at_exit(const struct probe_events *evs, const char *filter,
			       struct event_fields *ef);
void event_fields_free(struct event_fields *ef);

struct bpf_map;
/* After load: each event's table into map (bpf/fields.bpf.h's field_tabs).  0, or a negative
 * errno after printing one line. */
int event_fields_fill(const struct event_fields *ef, struct bpf_map *map);

/* The fields of an aggregation key of ef (the event index first) as text, one column per --by
 * field into cols (each size bytes); kernel function pointers and cgroup ids through name.
 * Returns the event index. */
__u32 event_fields_key_text(const struct event_fields *ef, const void *key, field_name_fn name,
			    void *ctx, char (*cols)[FIELD_STR_LEN * 2]);

/* Where bpf/fields.bpf.h's --by settings live in a skeleton. */
struct event_fields_rodata {
	bool *by_fixed, *by_ints, *by_rec_ctx;
	__u32 *nr_by, *rows_max;
	__u64 *by_desc; /* FIELDS_MAX of them */
	struct bpf_map *tabs, *rows, *taken;
};
#define EVENT_FIELDS_RODATA(skel)                                                               \
	((struct event_fields_rodata){                                                          \
		.by_fixed = (bool *)&(skel)->rodata->targ_by_fixed,                             \
		.by_ints = (bool *)&(skel)->rodata->targ_by_ints,                               \
		.by_rec_ctx = (bool *)&(skel)->rodata->targ_by_rec_ctx,                         \
		.nr_by = (__u32 *)&(skel)->rodata->targ_nr_by,                                  \
		.rows_max = (__u32 *)&(skel)->rodata->targ_rows_max,                            \
		.by_desc = (__u64 *)(skel)->rodata->targ_by_desc,                               \
		.tabs = (skel)->maps.field_tabs, .rows = (skel)->maps.field_rows,           \
		.taken = (skel)->maps.field_row_taken })

/* Before load: --by's settings (the fields as constants when every event has them at the same
 * places), the field tables' size, and, for commands keeping a row per key (rows_max > 0 with
 * --by), the key-to-row table's.  0 or a negative errno. */
int event_fields_configure(const struct event_fields *ef, struct event_fields_rodata rd,
			   __u32 rows_max);

/* After the run: the key of each row number the kernel handed out (fields_row()), keys[row]
 * NULL where none (nr rows, each key ef->key_size bytes in one allocation, *keys[0]'s block
 * freed with free(*store)).  0 or a negative errno. */
int event_fields_read_rows(const struct event_fields *ef, struct bpf_map *rows, __u32 nr,
			   const char ***keys, char **store);

/* A key as a label: "NAME=VALUE,NAME=VALUE", after the event's name and a space when
 * with_event.  Returns buf. */
char *event_fields_label(const struct event_fields *ef, const struct probe_events *evs,
			 const void *key, bool with_event, field_name_fn name, void *ctx, char *buf,
			 size_t size);

/* What names the values of --by's fields: kallsyms where a field is a kernel function pointer,
 * the cgroup2 hierarchy where one is `cgroup`.  Each is NULL when not needed or not readable. */
struct field_namer {
	struct ksyms *ksyms;
	struct cgroup_names *cgroups;
};
/* Loads what ef's --by fields need; says in one line on stderr what cannot be read (the values
 * are then printed as numbers). */
void field_namer_open(struct field_namer *n, const struct event_fields *ef);
void field_namer_close(struct field_namer *n);
/* field_name_fn over a struct field_namer (ctx). */
const char *field_namer_name(const struct field *f, __u64 v, char *buf, size_t size, void *ctx);
#endif
