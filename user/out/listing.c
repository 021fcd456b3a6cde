// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "out/listing.h"

/* Specs longer than this push their annotations out of the column instead of widening it. */
#define SPEC_COLUMN_MAX 56

static char *dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	*failed |= !d;
	return d;
}

int listing_add_section(struct listing *l, const char *kind, const char *title, const char *source,
			const char *usage, const char *note)
{
	struct listing_section *v = realloc(l->sec, (l->nr_sec + 1) * sizeof(*v)), *s;
	bool failed = false;

	if (!v)
		return -ENOMEM;
	l->sec = v;
	s = &l->sec[l->nr_sec];
	memset(s, 0, sizeof(*s));
	s->kind = dup_or_null(kind, &failed);
	s->title = dup_or_null(title, &failed);
	s->source = dup_or_null(source, &failed);
	s->usage = dup_or_null(usage, &failed);
	s->note = dup_or_null(note, &failed);
	l->nr_sec++;
	return failed ? -ENOMEM : (int)l->nr_sec - 1;
}

static void entry_free(struct listing_entry *e)
{
	free(e->spec);
	free(e->name);
	free(e->alias);
	free(e->match);
	free((char *)e->note);
}

int listing_add(struct listing *l, const struct listing_entry *e)
{
	struct listing_entry *d;
	bool failed = false;

	if (ARRAY_GROW(l->v, l->cap, l->n + 1))
		return -ENOMEM;
	d = &l->v[l->n];
	*d = *e;
	d->spec = dup_or_null(e->spec, &failed);
	d->name = dup_or_null(e->name ?: e->spec, &failed);
	d->alias = dup_or_null(e->alias, &failed);
	d->match = dup_or_null(e->match, &failed);
	d->note = dup_or_null(e->note, &failed);
	if (failed || !d->spec) {
		entry_free(d);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

int glob_check(const char *glob, char *why, size_t size)
{
	const char *p;

	if (!*glob) {
		snprintf(why, size, "an empty glob matches nothing");
		return -EINVAL;
	}
	for (p = glob; *p; p++) {
		if (*p == '\\') {
			if (!p[1]) {
				snprintf(why, size, "it ends in '\\', which escapes nothing");
				return -EINVAL;
			}
			p++;
		} else if (*p == '[') {
			/* fnmatch: "[]" and "[!]" take the ']' right after them as a member */
			const char *q = p + 1 + (p[1] == '!' || p[1] == '^');

			q += *q == ']';
			q = strchr(q, ']');
			if (!q) {
				snprintf(why, size, "'[' without a closing ']' (write '\\[' for a '[')");
				return -EINVAL;
			}
			p = q;
		}
	}
	return 0;
}

static bool matches(const char *glob, const char *s)
{
	return s && !fnmatch(glob, s, 0);
}

bool listing_entry_matches(const struct listing_entry *e, const char *glob)
{
	return matches(glob, e->spec) || matches(glob, e->name) || matches(glob, e->alias) ||
	       matches(glob, e->match);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct listing_entry *x = a, *y = b;
	int c;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	c = strcmp(x->spec, y->spec);
	return c ?: strcmp(x->alias ?: "", y->alias ?: "");
}

void listing_finish(struct listing *l, char **globs, int nr_globs, size_t *matched)
{
	size_t out = 0;

	l->filtered = nr_globs > 0;
	if (matched && nr_globs)
		memset(matched, 0, nr_globs * sizeof(*matched));
	for (size_t i = 0; i < l->n; i++) {
		bool keep = !nr_globs;

		for (int g = 0; g < nr_globs; g++) {
			if (!listing_entry_matches(&l->v[i], globs[g]))
				continue;
			keep = true;
			if (matched)
				matched[g]++;
		}
		if (keep)
			l->v[out++] = l->v[i];
		else
			entry_free(&l->v[i]);
	}
	l->n = out;
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_entry);
	/* one spec once per section: a static function of one name in two files, say */
	out = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (out && l->v[out - 1].section == l->v[i].section &&
		    !strcmp(l->v[out - 1].spec, l->v[i].spec)) {
			entry_free(&l->v[i]);
			continue;
		}
		l->v[out++] = l->v[i];
	}
	l->n = out;
	for (size_t s = 0; s < l->nr_sec; s++)
		l->sec[s].count = 0;
	for (size_t i = 0; i < l->n; i++)
		l->sec[l->v[i].section].count++;
}

/* ---- text ---- */

/* A name as it came (a binary's symbols are anyone's bytes): control characters as \xNN, so that
 * none reaches the terminal.  Returns the columns written. */
static int put_safe(FILE *f, const char *s)
{
	int cols = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			cols += fprintf(f, "\\x%02x", *p);
		else
			cols += fputc(*p, f) != EOF;
	}
	return cols;
}

/* The widths of the spec and alias columns: their longest (capped) in the section. */
static void section_widths(const struct listing *l, size_t first, size_t n, int *spec, int *alias)
{
	size_t ws = 0, wa = 0;

	for (size_t i = first; i < first + n; i++) {
		if (strlen(l->v[i].spec) > ws)
			ws = strlen(l->v[i].spec);
		if (l->v[i].alias && strlen(l->v[i].alias) > wa)
			wa = strlen(l->v[i].alias);
	}
	*spec = ws > SPEC_COLUMN_MAX ? SPEC_COLUMN_MAX : (int)ws;
	*alias = wa > SPEC_COLUMN_MAX ? SPEC_COLUMN_MAX : (int)wa;
}

static void write_section_header(FILE *f, const struct listing_section *s)
{
	fprintf(f, "# %s (%zu), from ", s->title, s->count);
	put_safe(f, s->source);
	fprintf(f, "%s%s\n", s->usage ? "; as " : "", s->usage ?: "");
	if (s->note) {
		fprintf(f, "# ");
		put_safe(f, s->note);
		fputc('\n', f);
	}
}

static void pad(FILE *f, int cols, int width)
{
	fprintf(f, "%*s", cols < width ? width - cols + 2 : 2, "");
}

static void write_entry(FILE *f, const struct listing_entry *e, int spec_width, int alias_width)
{
	int cols = put_safe(f, e->spec);

	if (e->alias || e->note)
		pad(f, cols, spec_width);
	cols = e->alias ? put_safe(f, e->alias) : 0;
	if (e->note && alias_width)
		pad(f, cols, alias_width);
	if (e->note)
		fputs(e->note, f);
	fputc('\n', f);
}

/* ": Tracepoints 2305, Syscalls 360", one figure per title (-p lists functions file by file). */
static void write_totals(FILE *f, const struct listing *l)
{
	size_t shown = 0;

	for (size_t s = 0; s < l->nr_sec; s++) {
		size_t n = 0;
		bool seen = false;

		for (size_t p = 0; p < s && !seen; p++)
			seen = !strcmp(l->sec[p].title, l->sec[s].title);
		for (size_t p = s; p < l->nr_sec && !seen; p++)
			n += strcmp(l->sec[p].title, l->sec[s].title) ? 0 : l->sec[p].count;
		if (seen || !n)
			continue;
		fprintf(f, "%s%s %zu", shown++ ? ", " : ": ", l->sec[s].title, n);
	}
}

int listing_write_text(FILE *f, const struct listing *l)
{
	size_t i = 0, total = 0;
	bool first = true;

	for (size_t s = 0; s < l->nr_sec; s++) {
		const struct listing_section *sec = &l->sec[s];
		int spec_width, alias_width;

		if (!sec->count && (l->filtered || !sec->show_empty))
			continue;
		fprintf(f, "%s", first ? "" : "\n");
		first = false;
		write_section_header(f, sec);
		section_widths(l, i, sec->count, &spec_width, &alias_width);
		for (size_t k = 0; k < sec->count; k++, i++)
			write_entry(f, &l->v[i], spec_width, alias_width);
		total += sec->count;
	}
	fprintf(f, "%s# %zu listed", first ? "" : "\n", total);
	write_totals(f, l);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON ---- */

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 when it is not one. */
static int utf8_len(const unsigned char *p)
{
	int n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* overlong three-byte forms, UTF-16 surrogates, and code points past U+10FFFF */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

static void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		int n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else if (!n)
			fputs("\\ufffd", f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
	fputc('"', f);
}

static void json_field(FILE *f, const char *key, const char *val, bool *first)
{
	if (!val)
		return;
	fprintf(f, "%s\"%s\": ", *first ? "" : ", ", key);
	json_str(f, val);
	*first = false;
}

int listing_write_json(FILE *f, const struct listing *l)
{
	size_t i = 0;

	fprintf(f, "{\"sections\": [");
	for (size_t s = 0; s < l->nr_sec; s++) {
		const struct listing_section *sec = &l->sec[s];
		bool first = true;

		fprintf(f, "%s\n {", s ? "," : "");
		json_field(f, "kind", sec->kind, &first);
		json_field(f, "title", sec->title, &first);
		json_field(f, "source", sec->source, &first);
		json_field(f, "usage", sec->usage, &first);
		json_field(f, "note", sec->note, &first);
		fprintf(f, ", \"count\": %zu, \"events\": [", sec->count);
		for (size_t k = 0; k < sec->count; k++, i++) {
			const struct listing_entry *e = &l->v[i];

			first = true;
			fprintf(f, "%s\n  {", k ? "," : "");
			json_field(f, "spec", e->spec, &first);
			json_field(f, "name", e->name, &first);
			json_field(f, "alias", e->alias, &first);
			json_field(f, "note", e->note, &first);
			fprintf(f, ", \"supported\": %s}", e->unsupported ? "false" : "true");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n], \"count\": %zu}\n", l->n);
	return ferror(f) ? -EIO : 0;
}

void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		entry_free(&l->v[i]);
	for (size_t s = 0; s < l->nr_sec; s++) {
		free(l->sec[s].kind);
		free(l->sec[s].title);
		free(l->sec[s].source);
		free(l->sec[s].usage);
		free(l->sec[s].note);
	}
	free(l->v);
	free(l->sec);
	memset(l, 0, sizeof(*l));
}
