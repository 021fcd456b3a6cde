// SPDX-License-Identifier: GPL-2.0
/* Event specs as written: splitting them into kind, target and name, and the near matches that
 * every "not found" message offers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "core/common.h"
#include "probe/internal.h"
#include "probe/probe.h"

static int copy_part(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

static int parse_spec(const char *text, struct probe_spec *spec, char *err, size_t err_size);

/* perf probe's FUNC%return: the function's return, where its return value is */
int probe_spec_parse(const char *text, struct probe_spec *spec, char *err, size_t err_size)
{
	static const char suffix[] = "%return";
	int ret = parse_spec(text, spec, err, err_size);
	size_t len = strlen(spec->name), n = sizeof(suffix) - 1;

	if (ret || len < n || strcmp(spec->name + len - n, suffix))
		return ret;
	if (spec->kind != PROBE_KFUNC && spec->kind != PROBE_UFUNC) {
		snprintf(err, err_size, "'%s': %%return applies to functions (k:FUNC%%return, "
			 "u:PATH:FUNC%%return), not to %s", text,
			 spec->kind == PROBE_TP ? "tracepoints" : "syscalls");
		return -EINVAL;
	}
	if (len == n) {
		snprintf(err, err_size, "'%s' has an empty function name", text);
		return -EINVAL;
	}
	spec->name[len - n] = '\0';
	spec->ret = true;
	return 0;
}

static int parse_spec(const char *text, struct probe_spec *spec, char *err, size_t err_size)
{
	const char *colon = strchr(text, ':'), *rest, *last;
	size_t plen;

	memset(spec, 0, sizeof(*spec));
	spec->text = text;
	if (!*text) {
		snprintf(err, err_size, "empty event spec");
		return -EINVAL;
	}
	if (!colon) {
		/* A bare name is a kernel function, as in funclatency and bpftrace. */
		spec->kind = PROBE_KFUNC;
		goto name_only;
	}
	plen = colon - text;
	rest = colon + 1;
	last = strrchr(text, ':');
	if ((plen == 1 && text[0] == 'k') || (plen == 3 && !strncmp(text, "sys", 3))) {
		spec->kind = text[0] == 'k' ? PROBE_KFUNC : PROBE_SYSCALL;
		text = rest;
		if (strchr(text, ':')) {
			snprintf(err, err_size, "'%s' has too many ':' (expected %s)", spec->text,
				 spec->kind == PROBE_KFUNC ? "k:FUNC" : "sys:NAME");
			return -EINVAL;
		}
		goto name_only;
	}
	if (plen == 1 && (text[0] == 'u' || text[0] == 't')) {
		spec->kind = text[0] == 'u' ? PROBE_UFUNC : PROBE_TP;
		if (last == colon) {
			snprintf(err, err_size, "'%s' needs %s", spec->text,
				 spec->kind == PROBE_UFUNC ? "u:PATH:FUNC or u:LIB:FUNC" : "t:CATEGORY:NAME");
			return -EINVAL;
		}
		if (spec->kind == PROBE_TP && strchr(rest, ':') != last) {
			snprintf(err, err_size, "'%s' has too many ':' (expected t:CATEGORY:NAME)",
				 spec->text);
			return -EINVAL;
		}
		/* A path may hold ':', a function name not: split at the last one. */
		if (copy_part(spec->target, sizeof(spec->target), rest, last - rest) ||
		    copy_part(spec->name, sizeof(spec->name), last + 1, strlen(last + 1)))
			goto too_long;
		if (!spec->target[0] || !spec->name[0]) {
			snprintf(err, err_size, "'%s' has an empty %s", spec->text,
				 !spec->target[0] ? (spec->kind == PROBE_UFUNC ? "path" : "category") :
						    (spec->kind == PROBE_UFUNC ? "function" : "event name"));
			return -EINVAL;
		}
		return 0;
	}
	/* No known prefix: PATH:FUNC when it has a '/', else LIB:FUNC or CATEGORY:NAME. */
	if (last != colon && !memchr(text, '/', last - text)) {
		snprintf(err, err_size, "unknown prefix '%.*s:' in '%s' (expected k:, u:, t: or sys:)",
			 (int)plen, text, spec->text);
		return -EINVAL;
	}
	spec->kind = PROBE_UFUNC;
	spec->lib_or_tp = !memchr(text, '/', last - text);
	if (copy_part(spec->target, sizeof(spec->target), text, last - text) ||
	    copy_part(spec->name, sizeof(spec->name), last + 1, strlen(last + 1)))
		goto too_long;
	if (!spec->target[0] || !spec->name[0]) {
		snprintf(err, err_size, "'%s' has an empty %s", spec->text,
			 spec->target[0] ? "function or event name" : "library, path or category");
		return -EINVAL;
	}
	return 0;

name_only:
	if (!*text) {
		snprintf(err, err_size, "'%s' has an empty name", spec->text);
		return -EINVAL;
	}
	if (copy_part(spec->name, sizeof(spec->name), text, strlen(text)))
		goto too_long;
	return 0;
too_long:
	snprintf(err, err_size, "'%.64s...' is too long", spec->text);
	return -ENAMETOOLONG;
}

/* ---- near matches ------------------------------------------------------------------------ */

/* Levenshtein distance, giving up (returning limit + 1) once it must exceed limit. */
static int edit_distance(const char *a, const char *b, int limit)
{
	int la = strlen(a), lb = strlen(b), prev[PROBE_NAME_MAX + 1], cur[PROBE_NAME_MAX + 1];

	if (la > PROBE_NAME_MAX || lb > PROBE_NAME_MAX || abs(la - lb) > limit)
		return limit + 1;
	for (int j = 0; j <= lb; j++)
		prev[j] = j;
	for (int i = 1; i <= la; i++) {
		int row_min;

		cur[0] = row_min = i;
		for (int j = 1; j <= lb; j++) {
			int d = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
			if (d < row_min)
				row_min = d;
		}
		if (row_min > limit)
			return limit + 1;
		memcpy(prev, cur, (lb + 1) * sizeof(int));
	}
	return prev[lb];
}

struct near {
	const char *name;
	int score;
};

static int near_cmp(const void *a, const void *b)
{
	const struct near *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name);

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

int probe_near_matches(const char *want, const char *const *cands, size_t n, int max, char *buf,
		       size_t size)
{
	int wl = strlen(want), limit = wl < 4 ? 1 : wl < 12 ? 2 : 3, nr = 0, kept = 0;
	struct near best[16];
	size_t off = 0;

	if (max > 16)
		max = 16;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *c = cands[i];
		int d, score;
		bool dup = false;

		if (!strcmp(c, want))
			continue;
		d = edit_distance(want, c, limit);
		score = d <= limit ? 2 * d : -1;
		/* "getpid" for "sys_enter_getpid": a name that contains what was asked */
		if (wl >= 3 && strstr(c, want) && (score < 0 || score > 3))
			score = 3;
		if (score < 0)
			continue;
		for (int k = 0; k < kept; k++)
			dup |= !strcmp(best[k].name, c);
		if (dup)
			continue;
		if (kept < max) {
			best[kept++] = (struct near){ c, score };
		} else {
			struct near cand = { c, score };

			if (near_cmp(&cand, &best[kept - 1]) >= 0)
				continue;
			best[kept - 1] = cand;
		}
		qsort(best, kept, sizeof(best[0]), near_cmp);
	}
	for (int k = 0; k < kept && off + 1 < size; k++) {
		int w = snprintf(buf + off, size - off, "%s%s", k ? ", " : "", best[k].name);

		if (w < 0 || (size_t)w >= size - off) {
			buf[off] = '\0';
			break;
		}
		off += w;
		nr++;
	}
	return nr;
}

/* Prints "bpfprof: MSG" with ", did you mean: a, b?" when something is close. */
void err_with_near(const char *msg, const char *want, const char *const *cands, size_t n)
{
	char near[512];

	if (cands && probe_near_matches(want, cands, n, 5, near, sizeof(near)) > 0)
		p_err("%s; did you mean: %s?", msg, near);
	else
		p_err("%s", msg);
}

/* ---- a growable list of names ---- */

int names_add(struct names *ns, const char *s)
{
	if (ARRAY_GROW(ns->v, ns->cap, ns->n + 1))
		return -ENOMEM;
	ns->v[ns->n] = strdup(s);
	return ns->v[ns->n] ? (ns->n++, 0) : -ENOMEM;
}

void names_sort(struct names *ns)
{
	/* an empty list has no array yet, and qsort may not be given NULL */
	if (ns->n)
		qsort(ns->v, ns->n, sizeof(*ns->v), str_cmp);
}

void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}


int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}
