// SPDX-License-Identifier: GPL-2.0
/* The fields of events (fields.h): tracefs format files parsed, perf probe's casts, the pseudo
 * fields, and values printed the way perf script prints them. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "core/features.h"
#include "probe/fields.h"
#include "probe/probe.h"

void field_list_free(struct field_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int field_list_add(struct field_list *l, const struct field *f)
{
	if (ARRAY_GROW(l->v, l->cap, (size_t)l->nr + 1))
		return -ENOMEM;
	l->v[l->nr++] = *f;
	return 0;
}

/* ---- print fmt: which conversion prints which field ---- */

enum conv { CONV_NONE, CONV_INT, CONV_HEX, CONV_STR, CONV_PTR, CONV_KSYM };

/* The conversions of a print fmt's quoted format, in order; *end is past the closing quote. */
static int scan_conversions(const char *p, enum conv *convs, int max, const char **end)
{
	int n = 0;

	if (*p != '"')
		return -1;
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		p++;
		while (*p && strchr("-+ #0123456789.*hlLqjzt", *p))
			p++;
		if (!*p || *p == '"')
			break;
		if (n < max) {
			enum conv c = CONV_INT;

			if (*p == 's')
				c = CONV_STR;
			else if (*p == 'x' || *p == 'X')
				c = CONV_HEX;
			else if (*p == 'p')
				c = p[1] && strchr("sSfFB", p[1]) ? CONV_KSYM : CONV_PTR;
			convs[n] = c;
		}
		n++;
		if (*p == 'p')
			while (isalpha((unsigned char)p[1]))
				p++;
	}
	*end = *p == '"' ? p + 1 : p;
	return n < max ? n : max;
}

/* The field an argument of print fmt prints directly: "REC->name" or "__get_str(name)"; else
 * name gets "". */
static void arg_field(const char *a, size_t len, char *name, size_t size)
{
	const char *s = a, *e = a + len;

	name[0] = '\0';
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (e - s > 5 && !strncmp(s, "REC->", 5)) {
		s += 5;
	} else if (e - s > 10 && !strncmp(s, "__get_str(", 10) && e[-1] == ')') {
		s += 10;
		e--;
	} else {
		return;
	}
	for (const char *q = s; q < e; q++)
		if (!isalnum((unsigned char)*q) && *q != '_')
			return;
	if ((size_t)(e - s) < size)
		snprintf(name, size, "%.*s", (int)(e - s), s);
}

/* Marks the fields print fmt prints as kernel symbols (%ps...), strings or hex. */
static void apply_print_fmt(const char *fmt, struct field_list *l, int first)
{
	enum conv convs[64];
	const char *p;
	int n = scan_conversions(fmt, convs, 64, &p), k = 0;

	if (n <= 0)
		return;
	while (*p && k < n) {
		const char *a;
		int depth = 0;
		char name[FIELD_NAME_MAX];

		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		a = p;
		for (; *p && (depth || *p != ','); p++) {
			if (*p == '(' || *p == '[' || *p == '{')
				depth++;
			else if ((*p == ')' || *p == ']' || *p == '}') && depth)
				depth--;
			else if (*p == '"')
				while (p[1] && *++p != '"')
					p += *p == '\\' && p[1];
		}
		arg_field(a, p - a, name, sizeof(name));
		for (int i = first; name[0] && i < l->nr; i++) {
			struct field *f = &l->v[i];

			if (strcmp(f->name, name))
				continue;
			if (convs[k] == CONV_KSYM && (f->kind == FIELD_PTR || f->kind == FIELD_INT) &&
			    f->size == 8)
				f->kind = FIELD_KSYM;
			else if (convs[k] == CONV_STR && f->kind == FIELD_PTR)
				f->kind = FIELD_KSTR;
			else if (convs[k] == CONV_HEX && f->kind == FIELD_INT)
				f->kind = FIELD_HEX;
		}
		k++;
	}
}

/* ---- format files ---- */

/* C types of syscall arguments that are signed (their tracepoint formats say signed:0 for all) */
static const char *const signed_types[] = { "int", "long", "pid_t", "off_t", "loff_t", "ssize_t",
					    "clockid_t", "key_serial_t", "mqd_t", "short",
					    "timer_t", "__s32", "s32", "__s64", "s64" };
/* ...and the widths of the narrow ones (the register holds garbage above them) */
static const struct { const char *type; unsigned size; } narrow_types[] = {
	{ "int", 4 }, { "unsigned int", 4 }, { "unsigned", 4 }, { "pid_t", 4 }, { "uid_t", 4 },
	{ "gid_t", 4 }, { "clockid_t", 4 }, { "key_serial_t", 4 }, { "mqd_t", 4 }, { "__s32", 4 },
	{ "__u32", 4 }, { "u32", 4 }, { "s32", 4 }, { "qid_t", 4 }, { "rwf_t", 4 },
	{ "umode_t", 2 }, { "short", 2 }, { "unsigned short", 2 }, { "__u16", 2 },
};

static void syscall_arg_type(struct field *f)
{
	const char *t = f->type;

	if (!strncmp(t, "const ", 6))
		t += 6;
	for (size_t i = 0; i < sizeof(signed_types) / sizeof(signed_types[0]); i++)
		f->is_signed |= !strcmp(t, signed_types[i]);
	for (size_t i = 0; i < sizeof(narrow_types) / sizeof(narrow_types[0]); i++)
		if (!strcmp(t, narrow_types[i].type))
			f->size = narrow_types[i].size;
}

/* "field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:G;" into f.  0 or -EINVAL. */
static int parse_field_line(const char *line, struct field *f)
{
	const char *decl = strstr(line, "field:"), *semi, *name, *bracket, *o, *s, *g;
	size_t tlen;
	bool dataloc;

	memset(f, 0, sizeof(*f));
	if (!decl)
		return -EINVAL;
	decl += 6;
	semi = strchr(decl, ';');
	o = strstr(line, "offset:");
	s = strstr(line, "size:");
	g = strstr(line, "signed:");
	if (!semi || !o || !s)
		return -EINVAL;
	f->offset = strtoul(o + 7, NULL, 10);
	f->size = strtoul(s + 5, NULL, 10);
	f->is_signed = g && atoi(g + 7) == 1;
	/* the name: the last identifier before ';' (and before an array's [N]) */
	bracket = memchr(decl, '[', semi - decl);
	name = semi;
	if (bracket && !memchr(bracket, ' ', semi - bracket) && bracket > decl)
		name = bracket; /* "char comm[16]" */
	else
		bracket = NULL;
	{
		const char *e = name;

		while (name > decl && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
			name--;
		if (name == e || e - name >= FIELD_NAME_MAX)
			return -EINVAL;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(e - name), name);
	}
	tlen = name - decl;
	while (tlen && decl[tlen - 1] == ' ')
		tlen--;
	if (!tlen)
		return -EINVAL; /* "field:int;": a type without a name */
	if (tlen >= sizeof(f->type))
		tlen = sizeof(f->type) - 1;
	snprintf(f->type, sizeof(f->type), "%.*s", (int)tlen, decl);
	dataloc = !strncmp(f->type, "__data_loc ", 11);
	f->src = FSRC_RECORD;
	f->in_record = true;
	f->common = !strncmp(f->name, "common_", 7);
	if (dataloc)
		f->kind = strstr(f->type, "char") ? FIELD_DATALOC : FIELD_HEX;
	else if (bracket)
		f->kind = strstr(f->type, "char") ? FIELD_CHARS : FIELD_HEX;
	else if (strchr(f->type, '*'))
		f->kind = FIELD_PTR;
	else
		f->kind = FIELD_INT;
	if (f->kind == FIELD_HEX && (dataloc || bracket))
		f->size = 0; /* an array of other than chars: not readable as one value */
	return 0;
}

int fields_parse_format(const char *text, bool syscall, struct field_list *out, char *err,
			size_t err_size)
{
	const char *line = text, *print = NULL;
	int first = out->nr, nr_args = 0, ret;
	bool args = false;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[512];
		struct field f;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (!strncmp(buf, "print fmt: ", 11)) {
			print = line + 11;
			break;
		}
		if (strstr(buf, "field:")) {
			if (parse_field_line(buf, &f)) {
				snprintf(err, err_size, "malformed field line '%.200s'", buf);
				return -EINVAL;
			}
			if (syscall && !strcmp(f.name, "__syscall_nr")) {
				args = true;
				f.common = true; /* the raw tracepoints know it without a field */
			} else if (syscall && args) {
				if (!strcmp(f.name, "ret")) {
					f.src = FSRC_RET;
					f.is_signed = true;
				} else {
					f.src = FSRC_ARG;
					f.arg = nr_args++;
					syscall_arg_type(&f);
					if (f.kind == FIELD_PTR && strstr(f.type, "char"))
						f.kind = FIELD_USTR;
				}
			}
			ret = field_list_add(out, &f);
			if (ret)
				return ret;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (out->nr == first) {
		snprintf(err, err_size, "no fields in the format");
		return -EINVAL;
	}
	/* syscalls' print fmts print every argument in hex: that says nothing of their types */
	if (print && !syscall)
		apply_print_fmt(print, out, first);
	return 0;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap), *grown;
	size_t n;

	if (!f || !buf) {
		int e = errno ?: ENOMEM;

		if (f)
			fclose(f);
		free(buf);
		errno = e;
		return NULL;
	}
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			grown = realloc(buf, cap *= 2);
			if (!grown) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = grown;
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int fields_of_tracepoint(const char *cat, const char *name, struct field_list *out)
{
	static const char *const roots[] = { "/sys/kernel/tracing/events",
					     "/sys/kernel/debug/tracing/events" };
	char path[PROBE_PATH_MAX], why[256];
	char *text = NULL;
	int err = -ENOENT;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]) && !text; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s/format", roots[i], cat, name);
		text = read_text(path);
		if (!text && errno != ENOENT)
			err = -errno;
	}
	if (!text)
		return err;
	err = fields_parse_format(text, !strcmp(cat, "syscalls"), out, why, sizeof(why));
	free(text);
	return err;
}

int fields_add_pseudo(struct field_list *l)
{
	static const struct { const char *name, *type; enum field_src src; bool is_signed; } ps[] = {
		{ "comm", "char[16]", FSRC_COMM, false }, { "pid", "pid_t", FSRC_PID, true },
		{ "tid", "pid_t", FSRC_TID, true },        { "cpu", "u32", FSRC_CPU, false },
		{ "cgroup", "u64", FSRC_CGROUP, false },
	};
	int err = 0;

	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]) && !err; i++) {
		bool shadowed = false;
		struct field f = { .src = ps[i].src, .is_signed = ps[i].is_signed,
				   .kind = ps[i].src == FSRC_COMM	? FIELD_CHARS
					   : ps[i].src == FSRC_CGROUP ? FIELD_CGROUP
								      : FIELD_INT,
				   .size = ps[i].src == FSRC_COMM ? 16 : 8 };

		snprintf(f.name, sizeof(f.name), "%s", ps[i].name);
		snprintf(f.type, sizeof(f.type), "%s", ps[i].type);
		/* an event's own field of the name wins (sched_process_exec's pid, as in perf) */
		for (int k = 0; k < l->nr; k++)
			shadowed |= !strcmp(l->v[k].name, f.name);
		if (!shadowed)
			err = field_list_add(l, &f);
	}
	return err;
}

int fields_add_func_args(struct field_list *l)
{
	int err = 0;

	for (int i = 0; i < 6 && !err; i++) {
		struct field f = { .src = FSRC_ARG, .arg = i, .kind = FIELD_INT, .size = 8,
				   .is_signed = true };

		snprintf(f.name, sizeof(f.name), "arg%d", i);
		snprintf(f.type, sizeof(f.type), "s64");
		err = field_list_add(l, &f);
	}
	return err;
}

int fields_add_func_ret(struct field_list *l)
{
	struct field f = { .name = "retval", .type = "s64", .src = FSRC_RET, .kind = FIELD_INT,
			   .size = 8, .is_signed = true };

	return field_list_add(l, &f);
}

int func_params_of_event(const struct probe_event *e, struct func_params *out)
{
	const char *base, *func;
	char name[PROBE_NAME_MAX];
	size_t len;

	memset(out, 0, sizeof(*out));
	if (e->kind == PROBE_KFUNC)
		return e->btf_id > 0 ? func_params_btf(feat_btf(), e->btf_id, out) : -ENOENT;
	if (e->kind != PROBE_UFUNC || !e->path)
		return -ENOENT;
	/* the name is "FILE:SYMBOL" (resolve.c), "%return" after it at a return */
	base = strrchr(e->path, '/') ? strrchr(e->path, '/') + 1 : e->path;
	len = strlen(base);
	if (strncmp(e->name, base, len) || e->name[len] != ':')
		return -ENOENT;
	func = e->name + len + 1;
	len = strcspn(func, "%");
	snprintf(name, sizeof(name), "%.*s", (int)len, func);
	/* gcc's clones (foo.isra.0, foo.constprop.0, foo.part.0, foo.cold) may have lost or
	 * reordered the parameters their DWARF still lists: no names rather than wrong ones */
	if (strchr(name, '.'))
		return -EOPNOTSUPP;
	return func_params_dwarf(e->path, name, e->offset, out);
}

char *fields_func_hint(const struct probe_event *e, const char *want, char *buf, size_t size)
{
	struct func_params p;
	int err;

	buf[0] = '\0';
	if (e->kind != PROBE_UFUNC && e->kind != PROBE_KFUNC)
		return buf;
	if (!e->ret && !strncmp(want, "retval", 6)) {
		snprintf(buf, size, " (retval is the return's: FUNC%%return)");
		return buf;
	}
	if (e->ret) {
		snprintf(buf, size, " (arguments are the entry's: FUNC without %%return)");
		return buf;
	}
	err = func_params_of_event(e, &p);
	if (err == -EOPNOTSUPP)
		snprintf(buf, size, " (a compiler's clone of a function: its registers may not be its "
			 "prototype's, so arguments by position only)");
	else if (err)
		snprintf(buf, size, " (no prototype known: %s, so arguments by position only)",
			 e->kind == PROBE_UFUNC ? "no DWARF for the function in its file or a debug "
			 "file" : "the kernel's BTF does not describe it");
	else if (p.stop[0])
		snprintf(buf, size, " (%s)", p.stop);
	return buf;
}

int fields_of_event(const struct probe_event *e, struct field_list *out)
{
	struct func_params params;
	char cat[PROBE_NAME_MAX], name[PROBE_NAME_MAX + 16];
	const char *colon;
	int err;

	switch (e->kind) {
	case PROBE_KFUNC:
	case PROBE_UFUNC:
		/* at a return the argument registers hold whatever the function left there */
		err = e->ret ? fields_add_func_ret(out) : fields_add_func_args(out);
		if (!err && !e->ret && !func_params_of_event(e, &params))
			err = fields_add_func_params(out, &params);
		break;
	case PROBE_SYSCALL: /* "sys:NAME": its entry's arguments */
		snprintf(name, sizeof(name), "sys_enter_%s", e->name + 4);
		err = fields_of_tracepoint("syscalls", name, out);
		break;
	case PROBE_TP:
		colon = strchr(e->name, ':');
		if (!colon)
			return -EINVAL;
		snprintf(cat, sizeof(cat), "%.*s", (int)(colon - e->name), e->name);
		err = fields_of_tracepoint(cat, colon + 1, out);
		break;
	default:
		return -EINVAL;
	}
	return err ?: fields_add_pseudo(out);
}

/* ---- names and casts ---- */

static int apply_cast(struct field *f, const char *cast, bool user_mem, char *err, size_t size)
{
	char kind;
	unsigned bits;
	char *end;

	if (!strcmp(cast, "string")) {
		if (f->kind == FIELD_CHARS || f->kind == FIELD_DATALOC || f->kind == FIELD_KSTR ||
		    f->kind == FIELD_USTR)
			return 0;
		if (f->src == FSRC_COMM || f->src == FSRC_PID || f->src == FSRC_TID ||
		    f->src == FSRC_CPU || f->src == FSRC_CGROUP || f->size != 8) {
			snprintf(err, size, "field '%s' is no pointer: it cannot be read as a string",
				 f->name);
			return -EINVAL;
		}
		f->kind = user_mem ? FIELD_USTR : FIELD_KSTR;
		snprintf(f->type, sizeof(f->type), "string");
		return 0;
	}
	kind = cast[0];
	bits = strtoul(cast + 1, &end, 10);
	if (!strchr("usx", kind) || !cast[0] || *end || end == cast + 1 ||
	    (bits != 8 && bits != 16 && bits != 32 && bits != 64)) {
		snprintf(err, size, "unknown cast ':%s' on '%s' (expected :string, :u8..:u64, "
			 ":s8..:s64 or :x8..:x64)", cast, f->name);
		return -EINVAL;
	}
	if (field_is_string(f)) {
		snprintf(err, size, "field '%s' is a string: ':%s' does not apply", f->name, cast);
		return -EINVAL;
	}
	f->size = bits / 8;
	f->is_signed = kind == 's';
	f->kind = kind == 'x' ? FIELD_HEX : FIELD_INT;
	snprintf(f->type, sizeof(f->type), "%s", cast);
	return 0;
}

int fields_lookup(const struct field_list *l, const char *spec, bool user_mem, struct field *f,
		  char *err, size_t err_size)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

	for (int i = 0; i < l->nr; i++) {
		if (strlen(l->v[i].name) != len || strncmp(l->v[i].name, spec, len))
			continue;
		*f = l->v[i];
		if (colon)
			return apply_cast(f, colon + 1, user_mem, err, err_size);
		if (f->kind == FIELD_HEX && !f->size) {
			snprintf(err, err_size, "field '%s' is an array of %s: not supported", f->name,
				 f->type);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(err, err_size, "no field '%.*s'", (int)len, spec);
	return -ENOENT;
}

char *fields_names(const struct field_list *l, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < l->nr && off + 1 < size; i++) {
		int n;

		if (l->v[i].common)
			continue;
		n = snprintf(buf + off, size - off, "%s%s", off ? ", " : "", l->v[i].name);
		if (n < 0 || (size_t)n >= size - off) {
			buf[off] = '\0';
			break;
		}
		off += n;
	}
	return buf;
}

bool field_is_string(const struct field *f)
{
	return f->kind == FIELD_CHARS || f->kind == FIELD_DATALOC || f->kind == FIELD_KSTR ||
	       f->kind == FIELD_USTR;
}

unsigned field_key_size(const struct field *f)
{
	return field_is_string(f) ? FIELD_STR_LEN : 8;
}

struct field_desc field_desc_of(const struct field *f, bool user_mem, unsigned key_off)
{
	struct field_desc d = { .src = f->src, .is_signed = f->is_signed, .key_off = key_off };

	/* syscall arguments and a function's are registers, whatever the record's layout */
	d.offset = f->src == FSRC_ARG ? f->arg : f->offset;
	switch (f->kind) {
	case FIELD_CHARS:
		d.read = FREAD_CHARS;
		d.size = f->size > 255 ? 255 : f->size;
		break;
	case FIELD_DATALOC:
		d.read = FREAD_DATALOC;
		d.size = 4;
		break;
	case FIELD_KSTR:
		d.read = FREAD_KSTR;
		d.size = 8;
		break;
	case FIELD_USTR:
		d.read = user_mem || f->src == FSRC_ARG ? FREAD_USTR : FREAD_KSTR;
		d.size = 8;
		break;
	default:
		d.read = FREAD_INT;
		d.size = f->size && f->size <= 8 ? f->size : 8;
		break;
	}
	return d;
}

/* ---- values as text ---- */

char *field_format_value(const struct field *f, __u64 v, const char *str, field_name_fn name,
			 void *ctx, char *buf, size_t size)
{
	unsigned bits = f->size && f->size < 8 ? f->size * 8 : 64;
	__u64 mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;

	if (field_is_string(f)) {
		snprintf(buf, size, "%s", str ? str : "");
		return buf;
	}
	v &= mask;
	switch (f->kind) {
	case FIELD_CGROUP:
		if (name && name(f, v, buf, size, ctx))
			return buf;
		break;
	case FIELD_KSYM:
		if (name && name(f, v, buf, size, ctx))
			return buf;
		/* fallthrough */
	case FIELD_PTR:
	case FIELD_HEX:
		snprintf(buf, size, "0x%" PRIx64, (uint64_t)v);
		return buf;
	default:
		break;
	}
	if (f->is_signed && bits < 64 && (v >> (bits - 1)) & 1)
		v |= ~mask;
	if (f->is_signed)
		snprintf(buf, size, "%" PRId64, (int64_t)v);
	else
		snprintf(buf, size, "%" PRIu64, (uint64_t)v);
	return buf;
}

int fields_format_record(const struct field_list *l, const void *rec, size_t len,
			 field_name_fn name, void *ctx, char *buf, size_t size)
{
	const unsigned char *r = rec;
	size_t off = 0;

	if (size)
		buf[0] = '\0';
	for (int i = 0; i < l->nr; i++) {
		const struct field *f = &l->v[i];
		char val[256], str[FIELD_STR_LEN * 4];
		const char *s = NULL;
		__u64 v = 0;
		int n;

		if (f->common || !f->in_record)
			continue;
		if ((size_t)f->offset + f->size > len)
			return -EINVAL;
		if (f->kind == FIELD_CHARS) {
			snprintf(str, sizeof(str), "%.*s", (int)f->size, (const char *)r + f->offset);
			s = str;
		} else if (f->kind == FIELD_DATALOC) {
			__u32 loc;
			unsigned at, n_bytes;

			memcpy(&loc, r + f->offset, 4);
			at = loc & 0xffff;
			n_bytes = loc >> 16;
			if (at + n_bytes > len)
				return -EINVAL;
			snprintf(str, sizeof(str), "%.*s", (int)n_bytes, (const char *)r + at);
			s = str;
		} else if (f->size <= 8) {
			/* little- or big-endian alike: the value's own width, then widened */
			switch (f->size) {
			case 1: v = r[f->offset]; break;
			case 2: { __u16 x; memcpy(&x, r + f->offset, 2); v = x; break; }
			case 4: { __u32 x; memcpy(&x, r + f->offset, 4); v = x; break; }
			default: memcpy(&v, r + f->offset, 8); break;
			}
		}
		if (f->kind == FIELD_KSTR || f->kind == FIELD_USTR) {
			/* a pointer in a record: the string is not in it */
			struct field p = *f;

			p.kind = FIELD_PTR;
			field_format_value(&p, v, NULL, NULL, NULL, val, sizeof(val));
		} else {
			field_format_value(f, v, s, name, ctx, val, sizeof(val));
		}
		n = snprintf(buf + off, size > off ? size - off : 0, "%s%s=%s", off ? " " : "",
			     f->name, val);
		if (n < 0)
			return -EINVAL;
		off += n;
	}
	return (int)off;
}
