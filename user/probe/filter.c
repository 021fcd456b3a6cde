// SPDX-License-Identifier: GPL-2.0
/* --filter: a recursive-descent parser of perf's / ftrace's filter syntax that emits the postfix
 * program bpf/fields.bpf.h interprets (filter.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probe/filter.h"

enum tok {
	T_END, T_LPAREN, T_RPAREN, T_AND, T_OR, T_NOT, T_CMP, T_WORD, T_STRING, T_BAD,
};

struct parser {
	const char *expr, *p;
	enum tok tok;
	enum filter_cmp cmp;      /* T_CMP: ==, !=, <..., & ; ~ and !~ as FCMP_STR_EQ / _NE + glob */
	bool glob;                /* T_CMP: ~ or !~ */
	const char *tok_start;
	char text[FIELD_STR_LEN * 2]; /* T_WORD / T_STRING */
	bool too_long;
	int depth;
	/* output */
	const struct field_list *fields;
	bool user_mem;
	struct field_table *t;
	char names[FILTER_FIELDS_MAX][FIELD_NAME_MAX + 16];
	/* only names wanted (filter_field_names): no table */
	char (*want)[FIELD_NAME_MAX + 16];
	int nr_want, max_want;
	char *err;
	size_t err_size;
};

static bool word_char(char c)
{
	return c && (isalnum((unsigned char)c) || strchr("_:./-+*?[]$@%", c));
}

static void next(struct parser *ps)
{
	const char *p = ps->p;

	while (isspace((unsigned char)*p))
		p++;
	ps->tok_start = p;
	ps->glob = false;
	ps->too_long = false;
	if (!*p) {
		ps->tok = T_END;
	} else if (*p == '(') {
		ps->tok = T_LPAREN, p++;
	} else if (*p == ')') {
		ps->tok = T_RPAREN, p++;
	} else if (p[0] == '&' && p[1] == '&') {
		ps->tok = T_AND, p += 2;
	} else if (p[0] == '|' && p[1] == '|') {
		ps->tok = T_OR, p += 2;
	} else if (p[0] == '!' && p[1] == '=') {
		ps->tok = T_CMP, ps->cmp = FCMP_NE, p += 2;
	} else if (p[0] == '!' && p[1] == '~') {
		ps->tok = T_CMP, ps->cmp = FCMP_STR_NE, ps->glob = true, p += 2;
	} else if (*p == '!') {
		ps->tok = T_NOT, p++;
	} else if (p[0] == '=' && p[1] == '=') {
		ps->tok = T_CMP, ps->cmp = FCMP_EQ, p += 2;
	} else if (p[0] == '<' || p[0] == '>') {
		bool eq = p[1] == '=';

		ps->tok = T_CMP;
		ps->cmp = p[0] == '<' ? (eq ? FCMP_LE : FCMP_LT) : (eq ? FCMP_GE : FCMP_GT);
		p += 1 + eq;
	} else if (*p == '&') {
		ps->tok = T_CMP, ps->cmp = FCMP_AND, p++;
	} else if (*p == '~') {
		ps->tok = T_CMP, ps->cmp = FCMP_STR_EQ, ps->glob = true, p++;
	} else if (*p == '"' || *p == '\'') {
		char q = *p++;
		size_t n = 0;

		while (*p && *p != q) {
			if (*p == '\\' && p[1])
				p++;
			if (n + 1 < sizeof(ps->text))
				ps->text[n++] = *p;
			else
				ps->too_long = true;
			p++;
		}
		ps->text[n] = '\0';
		if (*p != q) {
			ps->tok = T_BAD;
		} else {
			ps->tok = T_STRING;
			p++;
		}
	} else if (word_char(*p)) {
		size_t n = 0;

		while (word_char(*p)) {
			if (n + 1 < sizeof(ps->text))
				ps->text[n++] = *p;
			else
				ps->too_long = true;
			p++;
		}
		ps->text[n] = '\0';
		ps->tok = T_WORD;
	} else {
		ps->tok = T_BAD;
	}
	ps->p = p;
}

static int syntax(struct parser *ps, const char *what)
{
	if (ps->tok == T_END)
		snprintf(ps->err, ps->err_size, "filter '%s': %s at its end", ps->expr, what);
	else
		snprintf(ps->err, ps->err_size, "filter '%s': %s at '%.20s'", ps->expr, what,
			 ps->tok_start);
	return -EINVAL;
}

static int unbalanced(struct parser *ps)
{
	snprintf(ps->err, ps->err_size, "filter '%s': unbalanced parentheses", ps->expr);
	return -EINVAL;
}

static int emit(struct parser *ps, struct filter_op op)
{
	if (!ps->t)
		return 0;
	if (ps->t->nr_ops >= (__u32)FILTER_OPS_MAX) {
		snprintf(ps->err, ps->err_size, "filter '%s' is too long for the kernel's table "
			 "(at most %d comparisons and operators)", ps->expr, FILTER_OPS_MAX);
		return -E2BIG;
	}
	ps->t->ops[ps->t->nr_ops++] = op;
	return 0;
}

static bool valid_field_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (s++; *s && *s != ':'; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* Index of the field named (as written) in the table, adding it. */
static int field_index(struct parser *ps, const char *name, struct field *f)
{
	char why[256], names[1024];
	int err, i;

	err = fields_lookup(ps->fields, name, ps->user_mem, f, why, sizeof(why));
	if (err == -ENOENT) {
		snprintf(ps->err, ps->err_size, "filter '%s': unknown field '%s'; the event's fields: "
			 "%s", ps->expr, name, fields_names(ps->fields, names, sizeof(names)));
		return -ENOENT;
	}
	if (err) {
		snprintf(ps->err, ps->err_size, "filter '%s': %s", ps->expr, why);
		return err;
	}
	for (i = 0; i < (int)ps->t->nr_filt; i++)
		if (!strcmp(ps->names[i], name))
			return i;
	if (i == FILTER_FIELDS_MAX) {
		snprintf(ps->err, ps->err_size, "filter '%s' reads too many fields (at most %d)",
			 ps->expr, FILTER_FIELDS_MAX);
		return -E2BIG;
	}
	snprintf(ps->names[i], sizeof(ps->names[i]), "%s", name);
	ps->t->filt[i] = field_desc_of(f, ps->user_mem, 0);
	ps->t->nr_filt++;
	return i;
}

/* A string comparison, with ~'s globs: "a" exact, "a*" prefix, "*a" suffix, "*a*" contains. */
static int string_cmp(struct parser *ps, const char *v, bool neg, bool glob, struct filter_op *op)
{
	size_t len = strlen(v);
	bool lead = glob && len && v[0] == '*', trail = glob && len > lead && v[len - 1] == '*';
	const char *body = v + lead;
	size_t blen = len - lead - trail;
	int idx = -1;

	if (glob && (memchr(body, '*', blen) || memchr(body, '?', blen) || memchr(body, '[', blen))) {
		snprintf(ps->err, ps->err_size, "filter '%s': glob '%s' is not one the kernel side "
			 "matches: use \"abc\", \"abc*\", \"*abc\" or \"*abc*\"", ps->expr, v);
		return -EINVAL;
	}
	if (blen >= FIELD_STR_LEN) {
		snprintf(ps->err, ps->err_size, "filter '%s': string '%.20s...' is longer than the %d "
			 "bytes a field is read to", ps->expr, v, FIELD_STR_LEN - 1);
		return -EINVAL;
	}
	for (int i = 0; i < FILTER_STRS_MAX && idx < 0; i++) {
		bool used = false;

		for (__u32 k = 0; k < ps->t->nr_ops && !used; k++)
			used = ps->t->ops[k].op == FOP_CMP && ps->t->ops[k].cmp >= (int)FCMP_STR_EQ &&
			       ps->t->ops[k].val == (__u64)i;
		if (!used)
			idx = i;
	}
	if (idx < 0) {
		snprintf(ps->err, ps->err_size, "filter '%s' has too many strings (at most %d)",
			 ps->expr, FILTER_STRS_MAX);
		return -E2BIG;
	}
	memset(ps->t->strs[idx], 0, FIELD_STR_LEN);
	memcpy(ps->t->strs[idx], body, blen);
	op->val = idx;
	op->len = blen;
	if (lead && trail)
		op->cmp = neg ? FCMP_NOT_CONTAINS : FCMP_CONTAINS;
	else if (trail)
		op->cmp = neg ? FCMP_NOT_PREFIX : FCMP_PREFIX;
	else if (lead)
		op->cmp = neg ? FCMP_NOT_SUFFIX : FCMP_SUFFIX;
	else
		op->cmp = neg ? FCMP_STR_NE : FCMP_STR_EQ;
	return 0;
}

static int parse_cmp(struct parser *ps)
{
	char name[FIELD_NAME_MAX + 16];
	struct filter_op op = { .op = FOP_CMP };
	enum filter_cmp cmp;
	struct field f;
	bool glob;
	int idx;

	if (ps->tok != T_WORD || !valid_field_name(ps->text))
		return syntax(ps, "expected a field");
	if (ps->too_long || strlen(ps->text) >= sizeof(name))
		return syntax(ps, "field name too long");
	snprintf(name, sizeof(name), "%s", ps->text);
	next(ps);
	if (ps->tok != T_CMP)
		return syntax(ps, "expected ==, !=, <, <=, >, >=, & or ~");
	cmp = ps->cmp;
	glob = ps->glob;
	next(ps);
	if (ps->tok != T_WORD && ps->tok != T_STRING)
		return ps->tok == T_BAD && *ps->tok_start && strchr("\"'", *ps->tok_start) ?
		       syntax(ps, "unterminated string") : syntax(ps, "expected a value");
	if (ps->too_long) {
		snprintf(ps->err, ps->err_size, "filter '%s': value '%.20s...' is too long", ps->expr,
			 ps->text);
		return -EINVAL;
	}
	if (!ps->t) { /* names only */
		for (int i = 0; i < ps->nr_want; i++)
			if (!strcmp(ps->want[i], name))
				goto done;
		if (ps->nr_want < ps->max_want)
			snprintf(ps->want[ps->nr_want++], sizeof(ps->want[0]), "%s", name);
		goto done;
	}
	idx = field_index(ps, name, &f);
	if (idx < 0)
		return idx;
	op.field = idx;
	if (field_is_string(&f)) {
		if (cmp != FCMP_EQ && cmp != FCMP_NE && cmp != FCMP_STR_EQ && cmp != FCMP_STR_NE) {
			snprintf(ps->err, ps->err_size, "filter '%s': field '%s' is a string: it compares "
				 "with ==, != or ~ only", ps->expr, name);
			return -EINVAL;
		}
		if (string_cmp(ps, ps->text, cmp == FCMP_NE || cmp == FCMP_STR_NE, glob, &op))
			return -EINVAL;
	} else {
		char *end;

		if (glob) {
			snprintf(ps->err, ps->err_size, "filter '%s': field '%s' is a number: ~ compares "
				 "strings", ps->expr, name);
			return -EINVAL;
		}
		errno = 0;
		op.val = ps->text[0] == '-' ? (__u64)strtoll(ps->text, &end, 0)
					    : (__u64)strtoull(ps->text, &end, 0);
		if (ps->tok != T_WORD || *end || end == ps->text || errno) {
			snprintf(ps->err, ps->err_size, "filter '%s': field '%s' is a number: '%s' is "
				 "none", ps->expr, name, ps->text);
			return -EINVAL;
		}
		op.cmp = cmp;
	}
	if (emit(ps, op))
		return -E2BIG;
done:
	next(ps);
	return 0;
}

static int parse_or(struct parser *ps);

static int parse_unary(struct parser *ps)
{
	int err;

	if (ps->tok == T_NOT) {
		next(ps);
		err = parse_unary(ps);
		return err ?: emit(ps, (struct filter_op){ .op = FOP_NOT });
	}
	if (ps->tok == T_LPAREN) {
		if (++ps->depth > 16) {
			snprintf(ps->err, ps->err_size, "filter '%s': parentheses nested too deep",
				 ps->expr);
			return -E2BIG;
		}
		next(ps);
		err = parse_or(ps);
		if (err)
			return err;
		if (ps->tok != T_RPAREN)
			return ps->tok == T_END ? unbalanced(ps) : syntax(ps, "expected ')'");
		ps->depth--;
		next(ps);
		return 0;
	}
	if (ps->tok == T_RPAREN)
		return unbalanced(ps);
	return parse_cmp(ps);
}

static int parse_and(struct parser *ps)
{
	int err = parse_unary(ps);

	while (!err && ps->tok == T_AND) {
		next(ps);
		err = parse_unary(ps) ?: emit(ps, (struct filter_op){ .op = FOP_AND });
	}
	return err;
}

static int parse_or(struct parser *ps)
{
	int err = parse_and(ps);

	while (!err && ps->tok == T_OR) {
		next(ps);
		err = parse_and(ps) ?: emit(ps, (struct filter_op){ .op = FOP_OR });
	}
	return err;
}

static int parse_all(struct parser *ps)
{
	int err;

	next(ps);
	if (ps->tok == T_END) {
		snprintf(ps->err, ps->err_size, "empty filter");
		return -EINVAL;
	}
	err = parse_or(ps);
	if (err)
		return err;
	if (ps->tok == T_RPAREN)
		return unbalanced(ps);
	if (ps->tok != T_END)
		return syntax(ps, "expected && or ||");
	return 0;
}

int filter_compile(const char *expr, const struct field_list *fields, bool user_mem,
		   struct field_table *t, char *err, size_t err_size)
{
	struct parser ps = { .expr = expr, .p = expr, .fields = fields, .user_mem = user_mem,
			     .t = t, .err = err, .err_size = err_size };
	int ret;

	t->nr_filt = t->nr_ops = 0;
	ret = parse_all(&ps);
	if (ret)
		t->nr_filt = t->nr_ops = 0;
	return ret;
}

int filter_field_names(const char *expr, char names[][FIELD_NAME_MAX + 16], int max, char *err,
		       size_t err_size)
{
	struct parser ps = { .expr = expr, .p = expr, .want = names, .max_want = max, .err = err,
			     .err_size = err_size };
	int ret = parse_all(&ps);

	return ret ?: ps.nr_want;
}

/* ---- the reference evaluator ---- */

static bool str_match(const char *s, const char *pat, __u32 len, enum filter_cmp cmp)
{
	size_t n = strnlen(s, FIELD_STR_LEN);
	bool r;

	switch (cmp) {
	case FCMP_STR_EQ:
	case FCMP_STR_NE:
		r = n == len && !memcmp(s, pat, len);
		return cmp == FCMP_STR_EQ ? r : !r;
	case FCMP_PREFIX:
	case FCMP_NOT_PREFIX:
		r = n >= len && !memcmp(s, pat, len);
		return cmp == FCMP_PREFIX ? r : !r;
	case FCMP_SUFFIX:
	case FCMP_NOT_SUFFIX:
		r = n >= len && !memcmp(s + n - len, pat, len);
		return cmp == FCMP_SUFFIX ? r : !r;
	default:
		r = memmem(s, n, pat, len) != NULL;
		return cmp == FCMP_CONTAINS ? r : !r;
	}
}

bool filter_eval(const struct field_table *t, const __u64 *ints, const char (*strs)[FIELD_STR_LEN])
{
	bool stack[FILTER_OPS_MAX];
	int sp = 0;

	if (!t->nr_ops)
		return true;
	for (__u32 i = 0; i < t->nr_ops; i++) {
		const struct filter_op *op = &t->ops[i];
		const struct field_desc *d = &t->filt[op->field];
		__u64 v = ints[op->field];
		bool r;

		switch (op->op) {
		case FOP_AND:
			sp--;
			stack[sp - 1] = stack[sp - 1] && stack[sp];
			continue;
		case FOP_OR:
			sp--;
			stack[sp - 1] = stack[sp - 1] || stack[sp];
			continue;
		case FOP_NOT:
			stack[sp - 1] = !stack[sp - 1];
			continue;
		}
		if (op->cmp >= (int)FCMP_STR_EQ) {
			r = str_match(strs[op->field], t->strs[op->val], op->len, op->cmp);
		} else if (op->cmp == FCMP_AND) {
			r = (v & op->val) != 0;
		} else {
			/* -1, 0, 1: the order of the value and the constant, as the field is signed */
			int order = d->is_signed ? ((__s64)v > (__s64)op->val) - ((__s64)v < (__s64)op->val)
						 : (v > op->val) - (v < op->val);

			r = op->cmp == FCMP_EQ ? order == 0 : op->cmp == FCMP_NE ? order != 0 :
			    op->cmp == FCMP_LT ? order < 0 : op->cmp == FCMP_LE ? order <= 0 :
			    op->cmp == FCMP_GT ? order > 0 : order >= 0;
		}
		stack[sp++] = r;
	}
	return sp == 1 && stack[0];
}
