/* JIT symbol maps (/tmp/perf-PID.map, written by V8, the JVM's perf-map-agent, LuaJIT...).
 * JITs reuse code memory, so entries overlap and the later (newer) one is right: loading turns
 * the entries into disjoint segments, each naming the newest entry covering it, and lookups are a
 * binary search over those segments. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sym/syms.h"

struct pm_ent {
	__u64 start;
	__u64 end;
	const char *name; /* points into perf_map.text */
};

struct pm_seg {
	__u64 start;
	__u64 end;
	size_t ent; /* the newest entry covering [start, end) */
};

struct perf_map {
	char *text;
	struct pm_ent *ents; /* file order: a higher index is newer */
	size_t nr_ents;
	struct pm_seg *segs; /* sorted, disjoint */
	size_t nr_segs;
};

static int read_file(const char *path, char **text, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL, *tmp;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (!buf || cap - n < 4096) {
			cap *= 2;
			tmp = realloc(buf, cap);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* "START SIZE name": hex with or without 0x; the name is the rest of the line, spaces included. */
static bool parse_line(char *p, struct pm_ent *e)
{
	__u64 start, size;
	char *q, *end;

	start = strtoull(p, &q, 16);
	if (q == p || !is_blank(*q))
		return false;
	size = strtoull(q, &p, 16);
	if (p == q || !is_blank(*p) || !size)
		return false;
	while (is_blank(*p))
		p++;
	end = p + strlen(p);
	while (end > p && end[-1] == '\r')
		*--end = '\0';
	if (end == p)
		return false;
	e->start = start;
	e->end = start + size < start ? UINT64_MAX : start + size;
	e->name = p;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int cmp_by_start(const void *a, const void *b, void *ents)
{
	const struct pm_ent *x = (const struct pm_ent *)ents + *(const size_t *)a;
	const struct pm_ent *y = (const struct pm_ent *)ents + *(const size_t *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Max-heap of entry indices: the top is the newest entry. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++, parent;

	while (i && h[parent = (i - 1) / 2] < v) {
		h[i] = h[parent];
		i = parent;
	}
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t i = 0, child, v = h[--(*n)];

	while ((child = 2 * i + 1) < *n) {
		if (child + 1 < *n && h[child + 1] > h[child])
			child++;
		if (h[child] <= v)
			break;
		h[i] = h[child];
		i = child;
	}
	h[i] = v;
}

static void add_segment(struct perf_map *pm, __u64 start, __u64 end, size_t ent)
{
	struct pm_seg *last = pm->nr_segs ? &pm->segs[pm->nr_segs - 1] : NULL;

	if (last && last->ent == ent && last->end == start) {
		last->end = end;
		return;
	}
	pm->segs[pm->nr_segs].start = start;
	pm->segs[pm->nr_segs].end = end;
	pm->segs[pm->nr_segs].ent = ent;
	pm->nr_segs++;
}

/* Sweeps every entry boundary in address order, keeping the entries alive at that point in a
 * heap by age: between two boundaries the newest live entry wins.  O(n log n). */
static int build_segments(struct perf_map *pm)
{
	size_t n = pm->nr_ents, nr_points = 0, i, j = 0, k, nheap = 0;
	size_t *order = NULL, *heap = NULL;
	__u64 *points = NULL;
	int err = 0;

	points = malloc((2 * n + 1) * sizeof(*points));
	order = malloc((n + 1) * sizeof(*order));
	heap = malloc((n + 1) * sizeof(*heap));
	pm->segs = malloc((2 * n + 1) * sizeof(*pm->segs));
	if (!points || !order || !heap || !pm->segs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		points[nr_points++] = pm->ents[i].start;
		points[nr_points++] = pm->ents[i].end;
		order[i] = i;
	}
	qsort(points, nr_points, sizeof(*points), cmp_u64);
	for (i = k = 0; i < nr_points; i++)
		if (!k || points[i] != points[k - 1])
			points[k++] = points[i];
	nr_points = k;
	qsort_r(order, n, sizeof(*order), cmp_by_start, pm->ents);
	for (k = 0; k < nr_points; k++) {
		while (j < n && pm->ents[order[j]].start <= points[k])
			heap_push(heap, &nheap, order[j++]);
		while (nheap && pm->ents[heap[0]].end <= points[k])
			heap_pop(heap, &nheap);
		if (nheap && k + 1 < nr_points)
			add_segment(pm, points[k], points[k + 1], heap[0]);
	}
cleanup:
	free(points);
	free(order);
	free(heap);
	return err;
}

struct perf_map *perf_map__load(const char *path)
{
	struct perf_map *pm;
	char *p, *nl, *end;
	size_t len = 0, lines = 1;
	int err;

	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = read_file(path, &pm->text, &len);
	if (err)
		goto cleanup;
	end = pm->text + len;
	for (p = pm->text; (p = memchr(p, '\n', end - p)); p++)
		lines++;
	pm->ents = malloc(lines * sizeof(*pm->ents));
	if (!pm->ents) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (p = pm->text; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end; /* text[len] is already '\0' */
		*nl = '\0';
		if (parse_line(p, &pm->ents[pm->nr_ents]))
			pm->nr_ents++;
	}
	err = build_segments(pm);
cleanup:
	if (err) {
		perf_map__free(pm);
		errno = -err;
		return NULL;
	}
	return pm;
}

const char *perf_map__find(const struct perf_map *pm, __u64 addr, __u64 *sym_off)
{
	size_t lo = 0, hi, mid;
	const struct pm_ent *e;

	if (!pm)
		return NULL;
	hi = pm->nr_segs;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pm->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= pm->segs[lo - 1].end)
		return NULL;
	e = &pm->ents[pm->segs[lo - 1].ent];
	if (sym_off)
		*sym_off = addr - e->start;
	return e->name;
}

void perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return;
	free(pm->text);
	free(pm->ents);
	free(pm->segs);
	free(pm);
}
