/* JIT symbol maps (/tmp/perf-PID.map, written by V8, the JVM's perf-map-agent, LuaJIT...).
 * JITs reuse code memory, so entries overlap and the later (newer) one is right: loading turns
 * the entries into disjoint segments, each naming the newest entry covering it, and lookups are a
 * binary search over those segments.
 *
 * The map is the JIT's to write, in its own /tmp: a file any user (or a container) controls,
 * read by root.  perf_map__open() finds it in the process's mount namespace under its own pid,
 * and reads it only when it is a regular file that its owner (the process's user or root) wrote,
 * reached without following a single symbolic link (sym/untrusted.h). */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/sorted.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

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

struct perf_map *perf_map__load_fd(int fd)
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
	/* bounded: a JIT may still be appending */
	err = untrusted_read(fd, FILE_JIT_MAP, &pm->text, &len);
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

struct perf_map *perf_map__load(const char *path)
{
	static const struct file_rules any_owner;
	enum file_refusal why;
	struct perf_map *pm;
	struct stat st;
	int fd, err;

	fd = untrusted_open(AT_FDCWD, path, FILE_JIT_MAP, &any_owner, &st, &why);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	pm = perf_map__load_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return pm;
}

const char *perf_map__find(const struct perf_map *pm, __u64 addr, __u64 *sym_off)
{
	const struct pm_ent *e;
	size_t lo;

	if (!pm)
		return NULL;
	lo = FIRST_ABOVE(pm->segs, pm->nr_segs, start, addr);
	if (!lo || addr >= pm->segs[lo - 1].end)
		return NULL;
	e = &pm->ents[pm->segs[lo - 1].ent];
	if (sym_off)
		*sym_off = addr - e->start;
	return e->name;
}

size_t perf_map__bytes(const struct perf_map *pm)
{
	if (!pm)
		return 0;
	return malloc_usable_size((void *)pm) + malloc_usable_size(pm->text) +
	       malloc_usable_size(pm->ents) + malloc_usable_size(pm->segs);
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

/* ---- finding a process's map ---- */

/* From /proc/PID/status, read through the pinned /proc/PID: the pid in the process's own (the
 * innermost) namespace, last on the NSpid line, and its real and effective uids. */
static int read_status(int piddir, __u32 *nspid, uid_t uids[2])
{
	char buf[8192], *line, *next, *p;
	size_t n = 0;
	ssize_t r;
	int fd;

	fd = openat(piddir, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "Uid:", 4)) {
			sscanf(line + 4, "%u %u", &uids[0], &uids[1]);
		} else if (!strncmp(line, "NSpid:", 6)) {
			p = strrchr(line, '\t') ?: strrchr(line, ' ');
			if (p)
				*nspid = strtoul(p + 1, NULL, 10);
		}
	}
	return 0;
}

/* The directory the map is in: the process's own /tmp, through /proc/PID/root (the kernel's link
 * into its mount namespace), or ours when the process is gone: a JIT's map outlives it. */
static int open_tmp_dir(__u32 tgid, __u32 *nspid, uid_t uids[2], enum file_refusal *why)
{
	int piddir, root, tmp, err = 0;
	struct stat st;
	char path[32];

	snprintf(path, sizeof(path), "/proc/%u", tgid);
	piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = piddir < 0 ? -errno : read_status(piddir, nspid, uids);
	root = err ? -1 : openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		/* gone, or a zombie whose root is gone: only our /tmp, under the pid we know */
		*nspid = tgid;
		uids[0] = uids[1] = 0;
		root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (piddir >= 0)
		close(piddir);
	if (root < 0)
		return -errno;
	tmp = openat(root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = tmp < 0 ? -errno : 0;
	if ((err == -ENOTDIR || err == -ELOOP) && !fstatat(root, "tmp", &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISLNK(st.st_mode))
		*why = FILE_SYMLINK;
	close(root);
	return err ? err : tmp;
}

int perf_map__open(__u32 tgid, struct stat *st, enum file_refusal *why, char *path, size_t size)
{
	struct file_rules rules = { .one_name = true, .check_owner = true };
	uid_t uids[2] = { 0, 0 };
	__u32 nspid = tgid;
	char name[32];
	int tmp, fd;

	*why = FILE_OK;
	tmp = open_tmp_dir(tgid, &nspid, uids, why);
	snprintf(name, sizeof(name), "perf-%u.map", nspid);
	snprintf(path, size, "/proc/%u/root/tmp/%s", tgid, name);
	if (tmp < 0)
		return *why ? -EPERM : tmp;
	/* the process's real and effective users wrote it, or root */
	rules.owners[0] = uids[0];
	rules.owners[1] = uids[1];
	fd = untrusted_open(tmp, name, FILE_JIT_MAP, &rules, st, why);
	close(tmp);
	return fd;
}
