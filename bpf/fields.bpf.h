/* Event fields in the kernel (--by FIELD, --filter EXPR): each event's table (include/evfields.h,
 * filled by user/probe/fields.c and filter.c) says where its fields are; field_read() reads one,
 * filter_pass() runs the event's postfix filter, fields_key() builds the aggregation key.  One
 * generic, bounded reader for every event kind: tracepoint records, argument registers (functions'
 * and syscalls'), return values and the pseudo fields. */
#ifndef BPFPROF_FIELDS_BPF_H
#define BPFPROF_FIELDS_BPF_H
#include "evfields.h"

/* event index -> its field table */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* one per event, set by the loader */
	__type(key, __u32);
	__type(value, struct field_table);
} field_tabs SEC(".maps");

/* A string buffer as a type of its own: global functions take it as FIELD_STR_LEN bytes. */
struct fstr {
	char b[FIELD_STR_LEN];
};

struct field_scratch {
	char key[FIELDS_KEY_MAX];
	struct fstr str;
	/* the filter's truths (bit 0 on top) and their number: in a map, not on the stack, so
	 * the verifier sees unknown values and bpf_loop's callback converges at once */
	__u64 stack;
	__u32 sp;
};

/* too big for the stack: the key being built and a filter's string, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct field_scratch);
} field_scratch SEC(".maps");

/* What a program knows of the event that fired. */
enum { ARGS_NONE, ARGS_READY, ARGS_FUNC_REGS, ARGS_SYSCALL_REGS };
struct field_ctx {
	void *rec;            /* a perf tracepoint's record, or NULL */
	struct pt_regs *regs; /* ARGS_*_REGS: where the arguments are */
	__u64 args[6];        /* ARGS_READY: fentry's arguments */
	__u64 ret;            /* return value (return probes, sys_exit) */
	int args_from;
};

/* Argument i from the registers, by the function or the syscall calling convention. */
static __always_inline __u64 reg_arg(const struct field_ctx *fc, __u32 i)
{
	__u64 v = 0;
	unsigned long off;

#if defined(__TARGET_ARCH_x86)
	switch (i) {
	case 0: off = __builtin_offsetof(struct pt_regs, di); break;
	case 1: off = __builtin_offsetof(struct pt_regs, si); break;
	case 2: off = __builtin_offsetof(struct pt_regs, dx); break;
	case 3: /* the syscall instruction clobbers rcx: syscalls pass their 4th in r10 */
		off = fc->args_from == ARGS_SYSCALL_REGS ? __builtin_offsetof(struct pt_regs, r10)
							 : __builtin_offsetof(struct pt_regs, cx);
		break;
	case 4: off = __builtin_offsetof(struct pt_regs, r8); break;
	default: off = __builtin_offsetof(struct pt_regs, r9); break;
	}
#elif defined(__TARGET_ARCH_arm64)
	off = __builtin_offsetof(struct pt_regs, regs) + 8 * (i & 7);
#else
	return 0;
#endif
	bpf_probe_read_kernel(&v, sizeof(v), (void *)fc->regs + off);
	return v;
}

/* A string into str (FIELD_STR_LEN bytes, zero-padded so that equal strings make equal keys).
 * Returns its length. */
static __always_inline __u32 read_str(char *str, const void *p, int user, __u32 max)
{
	long n;

	__builtin_memset(str, 0, FIELD_STR_LEN);
	if (max > FIELD_STR_LEN)
		max = FIELD_STR_LEN;
	if (!max)
		return 0;
	n = user ? bpf_probe_read_user_str(str, max, p) : bpf_probe_read_kernel_str(str, max, p);
	return n > 0 ? n - 1 : 0;
}

/* A perf tracepoint record's integer of size bytes at off, loaded straight from the context:
 * a context load takes its offset as an immediate, so one asm load per place, which the
 * verifier prunes to the one the read-only field settings name.  Loads of the field's own size
 * (the kernel refuses a program that reads past the record's fixed part), 8- and 4-byte
 * fields in the first 64 bytes, where most are.  A helper call costs more than the rest of a
 * --by count.  false: not here (read it with bpf_probe_read_kernel()). */
#define REC_LOAD(bits, k)                                                                      \
	case k:                                                                                 \
		asm volatile("%[w] = *(u" #bits " *)(%[r] + " #k " * " #bits " / 8)"            \
			     : [w] "=r"(w) : [r] "r"(rec));                                     \
		break;
static __always_inline bool rec_direct(void *rec, __u32 off, __u32 size, __u64 *raw)
{
	__u64 w;

	if (size == 8 && !(off & 7)) {
		switch (off >> 3) {
		REC_LOAD(64, 0) REC_LOAD(64, 1) REC_LOAD(64, 2) REC_LOAD(64, 3)
		REC_LOAD(64, 4) REC_LOAD(64, 5) REC_LOAD(64, 6) REC_LOAD(64, 7)
		default:
			return false;
		}
	} else if (size == 4 && !(off & 3)) {
		switch (off >> 2) {
		REC_LOAD(32, 0) REC_LOAD(32, 1) REC_LOAD(32, 2) REC_LOAD(32, 3)
		REC_LOAD(32, 4) REC_LOAD(32, 5) REC_LOAD(32, 6) REC_LOAD(32, 7)
		REC_LOAD(32, 8) REC_LOAD(32, 9) REC_LOAD(32, 10) REC_LOAD(32, 11)
		REC_LOAD(32, 12) REC_LOAD(32, 13) REC_LOAD(32, 14) REC_LOAD(32, 15)
		default:
			return false;
		}
	} else {
		return false;
	}
	*raw = w;
	return true;
}

/* Field d of the event: an integer into *v (sign-extended as the field is signed), or a string
 * into str and its length into *v.  Returns 1 for a string, 0 for an integer. */
static __always_inline int read_field(const struct field_ctx *fc, const struct field_desc *d,
				      __u64 *v, struct fstr *fs, bool direct)
{
	char *str;
	__u64 raw = 0;
	__u32 size = d->size, off = d->offset;
	void *rec;

	/* fs is NULL for fields known to be numbers (fixed_key() on the stack) */
	str = fs ? fs->b : NULL;
	rec = fc->rec;
	switch (d->src) {
	case FSRC_COMM:
		__builtin_memset(str, 0, FIELD_STR_LEN);
		bpf_get_current_comm(str, 16);
		*v = 0;
		for (int i = 0; i < 16 && str[i]; i++)
			*v = i + 1;
		return 1;
	case FSRC_PID:
		*v = bpf_get_current_pid_tgid() >> 32;
		return 0;
	case FSRC_TID:
		*v = (__u32)bpf_get_current_pid_tgid();
		return 0;
	case FSRC_CPU:
		*v = bpf_get_smp_processor_id();
		return 0;
	case FSRC_CGROUP:
		*v = bpf_get_current_cgroup_id();
		return 0;
	case FSRC_RET:
		/* a perf tracepoint's sys_exit_* record holds ret after __syscall_nr */
		if (rec)
			bpf_probe_read_kernel(&raw, 8, rec + 16);
		else
			raw = fc->ret;
		break;
	case FSRC_ARG:
		if (rec) /* a sys_enter_* record: the arguments, 8 bytes each from offset 16 */
			bpf_probe_read_kernel(&raw, 8, rec + 16 + 8 * (off & 7));
		else if (fc->args_from == ARGS_READY)
			raw = fc->args[off < 6 ? off : 5];
		else if (fc->args_from != ARGS_NONE)
			raw = reg_arg(fc, off);
		break;
	default: /* FSRC_RECORD */
		if (!rec)
			return 0;
		if (d->read == FREAD_CHARS) {
			*v = read_str(str, rec + off, 0, size);
			return 1;
		}
		if (d->read == FREAD_DATALOC) {
			__u32 loc = 0;

			bpf_probe_read_kernel(&loc, 4, rec + off);
			*v = read_str(str, rec + (loc & 0xffff), 0, FIELD_STR_LEN);
			return 1;
		}
		size &= 15;
		if (size > 8)
			size = 8;
		/* direct: rec is the program's own context (not a global function's argument) */
		if (!direct || !rec_direct(rec, off, size, &raw))
			bpf_probe_read_kernel(&raw, size, rec + off);
		break;
	}
	if (d->read == FREAD_KSTR || d->read == FREAD_USTR) {
		*v = read_str(str, (void *)raw, d->read == FREAD_USTR, FIELD_STR_LEN);
		return 1;
	}
	/* the field's width, then its sign */
	if (size && size < 8) {
		__u32 shift = 64 - 8 * size;

		raw <<= shift;
		raw = d->is_signed ? (__u64)((__s64)raw >> shift) : raw >> shift;
	}
	*v = raw;
	return 0;
}

/* Global (not inlined, verified once on its own, not at every call): the readers and the string
 * matcher multiply each other's paths otherwise, past the verifier's limits. */
__noinline int field_read(const struct field_ctx *fc, const struct field_desc *d, __u64 *v,
			  struct fstr *fs)
{
	if (!fc || !d || !v || !fs)
		return 0;
	return read_field(fc, d, v, fs, false);
}

/* Whether len bytes of s from at equal c's (the bytes past a string are NUL: no early exit). */
static __always_inline bool str_at(const char *s, __u32 at, const char *c, __u32 len)
{
	char diff = 0;

	for (__u32 i = 0; i < FIELD_STR_LEN - 1; i++) {
		if (i >= len)
			break;
		diff |= s[(at + i) & (FIELD_STR_LEN - 1)] ^ c[i];
	}
	return !diff;
}

struct contains_run {
	const char *s, *c;
	__u32 len;
	bool found;
};

static long contains_step(__u32 j, void *ctx)
{
	struct contains_run *cr = ctx;

	cr->found = str_at(cr->s, j, cr->c, cr->len);
	return cr->found;
}

/* Whether string s (n bytes, NUL-padded) matches constant c (len bytes, NUL-padded) by cmp. */
__noinline bool str_cmp(const struct fstr *fs, __u32 n, const struct fstr *fc, __u32 len, __u32 cmp)
{
	struct contains_run cr = { .len = len };
	const char *s, *c;
	bool r;

	if (!fs || !fc)
		return false;
	s = cr.s = fs->b;
	c = cr.c = fc->b;
	switch (cmp) {
	case FCMP_STR_EQ:
	case FCMP_STR_NE:
		r = n == len && str_at(s, 0, c, len);
		return cmp == FCMP_STR_EQ ? r : !r;
	case FCMP_PREFIX:
	case FCMP_NOT_PREFIX:
		r = n >= len && str_at(s, 0, c, len);
		return cmp == FCMP_PREFIX ? r : !r;
	case FCMP_SUFFIX:
	case FCMP_NOT_SUFFIX:
		r = n >= len && str_at(s, n - len, c, len);
		return cmp == FCMP_SUFFIX ? r : !r;
	default: /* CONTAINS: each start in turn, one bpf_loop step each */
		if (n >= len)
			bpf_loop(n - len + 1, contains_step, &cr, 0);
		return cmp == FCMP_CONTAINS ? cr.found : !cr.found;
	}
}

static __always_inline bool int_cmp(__u64 v, __u64 c, __u8 cmp, bool is_signed)
{
	int order = is_signed ? ((__s64)v > (__s64)c) - ((__s64)v < (__s64)c) : (v > c) - (v < c);

	switch (cmp) {
	case FCMP_EQ: return order == 0;
	case FCMP_NE: return order != 0;
	case FCMP_LT: return order < 0;
	case FCMP_LE: return order <= 0;
	case FCMP_GT: return order > 0;
	case FCMP_GE: return order >= 0;
	default: return (v & c) != 0; /* FCMP_AND */
	}
}

struct filter_run {
	const struct field_table *t;
	const struct field_ctx *fc;
	struct field_scratch *s;
};

static long filter_step(__u32 i, void *ctx)
{
	struct filter_run *fr = ctx;
	const struct field_table *t = fr->t;
	struct field_scratch *s = fr->s;
	const struct filter_op *op;
	const struct field_desc *d;
	__u64 v = 0, top;
	__u32 f;
	bool r;

	if (i >= t->nr_ops)
		return 1;
	/* masked behind a barrier: clang would index with an unchecked copy of i */
	barrier_var(i);
	op = &t->ops[i & (FILTER_OPS_MAX - 1)];
	top = s->stack & 1;
	switch (op->op) {
	case FOP_AND:
	case FOP_OR:
		s->stack >>= 1;
		s->sp--;
		r = op->op == FOP_AND ? top && (s->stack & 1) : top || (s->stack & 1);
		s->stack = (s->stack & ~1ULL) | r;
		return 0;
	case FOP_NOT:
		s->stack ^= 1;
		return 0;
	}
	f = op->field;
	barrier_var(f);
	d = &t->filt[f & (FILTER_FIELDS_MAX - 1)];
	if (field_read(fr->fc, d, &v, &s->str)) {
		__u64 k = op->val;

		barrier_var(k);
		r = str_cmp(&s->str, v, (const struct fstr *)t->strs[k & (FILTER_STRS_MAX - 1)],
			    op->len, op->cmp);
	} else {
		r = int_cmp(v, op->val, op->cmp, d->is_signed);
	}
	s->stack = (s->stack << 1) | r;
	s->sp++;
	return 0;
}

/* The event's filter: true when it passes (or has none). */
static __always_inline bool filter_pass(const struct field_table *t, const struct field_ctx *fc)
{
	struct filter_run fr = { .t = t, .fc = fc };
	__u32 zero = 0;
	struct field_scratch *s;

	if (!t->nr_ops)
		return true;
	s = bpf_map_lookup_elem(&field_scratch, &zero);
	if (!s)
		return false;
	fr.s = s;
	s->stack = 0;
	s->sp = 0;
	/* bpf_loop (5.17): the interpreter is verified once, whatever the program's length */
	bpf_loop(FILTER_OPS_MAX, filter_step, &fr, 0);
	return s->sp == 1 && (s->stack & 1);
}

/* --by's fields when every event has them at the same places (one event, or a glob over events
 * of one format): read-only, so the verifier sees them as constants, keeps one path of the
 * reader per field and drops the rest.  A sparse event (a work queued now and then) finds
 * little of this in the caches: the less code and memory it touches, the less it costs. */
const volatile bool targ_by_fixed = false;
const volatile bool targ_by_ints = false; /* ...and all of them numbers: the key fits the stack */
/* a perf tracepoint program's context is the record: its fields load straight from it */
const volatile bool targ_by_rec_ctx = false;
const volatile __u32 targ_nr_by = 0;
/* struct field_desc as the loader's memcpy lays it out: a plain type keeps the skeleton free of
 * ours (every user of the object would need include/evfields.h first) */
const volatile __u64 targ_by_desc[FIELDS_MAX] = {};

/* The key of event idx from the fixed fields, into key (strings read through str). */
static __always_inline void *fixed_key(const struct field_ctx *fc, __u32 idx, char *key,
				       struct fstr *str)
{
	*(__u64 *)key = idx;
	/* unrolled: a constant index makes each read of targ_by_desc a known constant */
#pragma clang loop unroll(full)
	for (int i = 0; i < FIELDS_MAX; i++) {
		/* one volatile load, taken apart in registers, where the verifier sees the
		 * constants (a struct copy through the stack loses them byte by byte) */
		__u64 raw = targ_by_desc[i];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		struct field_desc d = { .src = raw, .read = raw >> 8, .size = raw >> 16,
					.is_signed = raw >> 24, .offset = raw >> 32,
					.key_off = raw >> 48 };
#else
		struct field_desc d = { .src = raw >> 56, .read = raw >> 48, .size = raw >> 40,
					.is_signed = raw >> 32, .offset = raw >> 16, .key_off = raw };
#endif
		__u32 off = d.key_off;
		__u64 v = 0;

		if (i >= targ_nr_by)
			break;
		if (off > FIELDS_KEY_MAX - FIELD_STR_LEN)
			return NULL;
		if (read_field(fc, &d, &v, str, targ_by_rec_ctx))
			__builtin_memcpy(key + off, str->b, FIELD_STR_LEN);
		else
			*(__u64 *)(key + off) = v;
	}
	return key;
}

/* The aggregation key of event idx in the per-CPU scratch: the index, then each --by field's
 * slot (from t, or the fixed fields when t is NULL).  NULL when there is no room. */
static __always_inline void *fields_key(const struct field_table *t, const struct field_ctx *fc,
					__u32 idx)
{
	struct field_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&field_scratch, &zero);
	if (!s)
		return NULL;
	if (targ_by_fixed)
		return fixed_key(fc, idx, s->key, &s->str);
	if (!t)
		return NULL;
	*(__u64 *)s->key = idx;
	for (int i = 0; i < FIELDS_MAX; i++) {
		const struct field_desc *d = &t->by[i];
		__u32 off = d->key_off;
		__u64 v = 0;

		if (i >= t->nr_by)
			break;
		if (off > FIELDS_KEY_MAX - FIELD_STR_LEN)
			return NULL;
		if (field_read(fc, d, &v, &s->str))
			__builtin_memcpy(s->key + off, s->str.b, FIELD_STR_LEN);
		else
			*(__u64 *)(s->key + off) = v;
	}
	return s->key;
}

/* --by where a command keeps its own kind of row per key (funclat's histogram, a profile
 * report's section): each key's dense row number, handed out in the kernel on first sight.
 * The loader raises max_entries and sets the key's size when --by is given. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(key_size, FIELDS_KEY_MAX);
	__uint(value_size, sizeof(__u32));
} field_rows SEC(".maps");

/* the row numbers taken: a claim is an insert that fails when another CPU made it first (the
 * atomic add that would return a number needs BPF's v3 instruction set, 5.12) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} field_row_taken SEC(".maps");

const volatile __u32 targ_rows_max = 0; /* rows the command's own tables have room for */
__u32 field_rows_next;                  /* the next row number to try */
__u64 field_rows_lost;                  /* events whose key found no row */

/* The row of event idx's --by key (see fields_key()), or -1 (counted) when there is none. */
static __always_inline int fields_row(const struct field_table *t, const struct field_ctx *fc,
				      __u32 idx)
{
	void *key = fields_key(t, fc, idx);
	__u32 *row, id = 0;
	__u8 one = 1;
	int i;

	if (!key)
		goto lost;
	row = bpf_map_lookup_elem(&field_rows, key);
	if (row)
		return *row;
	/* a new key: the next free row number, a few tries when CPUs race for it */
	for (i = 0; i < 8; i++) {
		id = *(volatile __u32 *)&field_rows_next + i;
		if (id >= targ_rows_max)
			goto lost;
		if (!bpf_map_update_elem(&field_row_taken, &id, &one, BPF_NOEXIST))
			break;
	}
	if (i == 8)
		goto lost;
	field_rows_next = id + 1;
	if (!bpf_map_update_elem(&field_rows, key, &id, BPF_NOEXIST))
		return id;
	/* another CPU made the key's row meanwhile: its number wins, ours stays an empty row */
	row = bpf_map_lookup_elem(&field_rows, key);
	if (row)
		return *row;
lost:
	__sync_fetch_and_add(&field_rows_lost, 1);
	return -1;
}
#endif
