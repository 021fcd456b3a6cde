// SPDX-License-Identifier: GPL-2.0
/* Processes told by perf's mmap, comm and task records (sym/mmaprec.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/perf_event.h>
#include "core/grow.h"
#include "core/common.h"
#include "sym/mmaprec.h"
#include "sym/syms.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14) /* 5.12: a build-id instead of dev and inode */
#endif

/* The rings' data, all CPUs together: a churn of 500 processes a second writes about 400 KB/s of
 * records, read at least every 100 ms (the run loop's tick); the more CPUs, the less each one's
 * ring gets of it.  Mapped rings count in RSS. */
#define RINGS_BYTES  (512 << 10)
#define RING_MIN_PAGES 4
#define RING_MAX_PAGES 64

/* What sample_id_all appends to every record with PERF_SAMPLE_TID | PERF_SAMPLE_TIME. */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
};

/* The record layouts of include/uapi/linux/perf_event.h, which gives them only in comments. */
struct rec_mmap2 {
	struct perf_event_header h;
	__u32 pid, tid;
	__u64 addr, len, pgoff;
	__u32 maj, min;
	__u64 ino, ino_generation;
	__u32 prot, flags;
	char filename[];
};

struct rec_comm {
	struct perf_event_header h;
	__u32 pid, tid;
	char comm[];
};

struct rec_task { /* PERF_RECORD_FORK, PERF_RECORD_EXIT */
	struct perf_event_header h;
	__u32 pid, ppid, tid, ptid;
	__u64 time;
};

struct rec_lost {
	struct perf_event_header h;
	__u64 id, lost;
};

struct ring {
	int fd;
	void *base;  /* the control page (struct perf_event_mmap_page), then the data */
	size_t size; /* of the data: a power of two */
};

/* A record of the batch being read: where it is, and its place in time. */
struct rec_ref {
	__u64 time;
	size_t off;
	size_t seq; /* ties keep each CPU's order */
};

struct mmaprec {
	struct syms_cache *sc;
	void (*exited)(void *ctx, __u32 tgid);
	void *ctx;
	struct ring *rings;
	int nr_rings;
	size_t page_size;
	char *batch; /* every ring's new records, copied out */
	size_t batch_cap;
	struct rec_ref *refs, *refs_tmp; /* refs_tmp: merge_runs()'s, as large */
	size_t refs_cap;
	size_t *runs; /* where each ring's records begin in refs, and where they end */
	struct mmaprec_stats st;
};

/* open_event(): whether the records' times are CLOCK_MONOTONIC's (4.1). */
static bool clock_monotonic = true;

static int open_event(int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.mmap = 1,     /* executable mappings only: data mappings would be mmap_data */
		.mmap2 = 1,    /* with device and inode, to check the file opened by name */
		.comm = 1,
		.comm_exec = 1, /* 3.16: an exec tells itself by a COMM record's misc flag */
		.task = 1,      /* FORK and EXIT */
		.sample_id_all = 1,
		/* one clock on every CPU (4.1), so that the rings' records can be put in order */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	int fd;

	/* build_id (5.12) is left off: it takes the place of the device and inode, which the
	 * symbolizer keys its files by and checks a file opened by name against */
	fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		/* before 4.1: perf's own clock, close enough across CPUs for the order needed */
		attr.use_clockid = 0;
		attr.clockid = 0;
		clock_monotonic = false;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* Maps the ring of fd with pages data pages, fewer when the locked-memory allowance
 * (kernel.perf_event_mlock_kb) runs short. */
static int map_ring(struct mmaprec *mr, struct ring *r, size_t pages)
{
	for (; pages >= RING_MIN_PAGES; pages /= 2) {
		r->base = mmap(NULL, (pages + 1) * mr->page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       r->fd, 0);
		if (r->base != MAP_FAILED) {
			r->size = pages * mr->page_size;
			return 0;
		}
		if (errno != EPERM && errno != ENOMEM)
			break;
	}
	r->base = NULL;
	return -errno;
}

static size_t ring_pages(size_t page_size, int cpus)
{
	size_t want = RINGS_BYTES / page_size / (cpus > 0 ? cpus : 1), pages = RING_MIN_PAGES;

	while (pages < want && pages < RING_MAX_PAGES)
		pages *= 2;
	return pages;
}

struct mmaprec *mmaprec__open(struct syms_cache *sc, void (*exited)(void *ctx, __u32 tgid),
			      void *ctx)
{
	int ncpus = nr_cpus_possible(), online = 0, err = 0;
	struct mmaprec *mr = calloc(1, sizeof(*mr));
	size_t pages;

	if (!mr || ncpus <= 0) {
		err = mr ? -EINVAL : -ENOMEM;
		goto cleanup;
	}
	mr->sc = sc;
	mr->exited = exited;
	mr->ctx = ctx;
	mr->page_size = sysconf(_SC_PAGESIZE);
	mr->rings = calloc(ncpus, sizeof(*mr->rings));
	mr->runs = calloc(ncpus + 1, sizeof(*mr->runs));
	if (!mr->rings || !mr->runs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int cpu = 0; cpu < ncpus; cpu++)
		online += cpu_online(cpu);
	pages = ring_pages(mr->page_size, online);
	/* every CPU or none: a CPU's execs and mappings missed would leave processes known
	 * only in part, and taken as complete */
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct ring *r = &mr->rings[mr->nr_rings];

		if (!cpu_online(cpu))
			continue;
		r->fd = open_event(cpu);
		if (r->fd < 0) {
			err = r->fd;
			goto cleanup;
		}
		mr->nr_rings++;
		err = map_ring(mr, r, pages);
		if (err)
			goto cleanup;
	}
	mr->st.cpus = mr->nr_rings;
	mr->st.ring_bytes = mr->nr_rings ? mr->rings[0].size : 0;
	syms_cache__records_on(sc, clock_monotonic);
	return mr;
cleanup:
	mmaprec__free(mr);
	errno = -err;
	return NULL;
}

/* Copies a ring's new records to the batch at *used and releases them to the kernel. */
static int take_ring(struct mmaprec *mr, struct ring *r, size_t *used, size_t *len)
{
	struct perf_event_mmap_page *pg = r->base;
	const char *data = (const char *)r->base + mr->page_size;
	__u64 head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
	size_t n = head - tail, off = tail & (r->size - 1), first;

	*len = 0;
	if (!n)
		return 0;
	if (ARRAY_GROW(mr->batch, mr->batch_cap, *used + n))
		return -ENOMEM;
	first = n < r->size - off ? n : r->size - off;
	memcpy(mr->batch + *used, data + off, first);
	memcpy(mr->batch + *used + first, data, n - first);
	/* the kernel may write over them from here on */
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	*len = n;
	return 0;
}

static bool record_wanted(const struct perf_event_header *h)
{
	switch (h->type) {
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
		return h->size >= sizeof(*h) + sizeof(struct sample_id);
	default:
		return false;
	}
}

/* Indexes the records of batch[from, from + len). */
static int index_records(struct mmaprec *mr, size_t from, size_t len, size_t *nr)
{
	size_t off = from, end = from + len;

	while (off + sizeof(struct perf_event_header) <= end) {
		const struct perf_event_header *h = (const void *)(mr->batch + off);
		struct sample_id id;

		if (h->size < sizeof(*h) || off + h->size > end)
			break; /* cannot happen: the kernel writes whole records */
		if (record_wanted(h)) {
			if (*nr == mr->refs_cap) {
				if (ARRAY_GROW(mr->refs, mr->refs_cap, *nr + 1))
					return -ENOMEM;
				free(mr->refs_tmp); /* made again at this size when needed */
				mr->refs_tmp = NULL;
			}
			memcpy(&id, mr->batch + off + h->size - sizeof(id), sizeof(id));
			mr->refs[*nr].time = id.time;
			mr->refs[*nr].off = off;
			mr->refs[*nr].seq = *nr;
			(*nr)++;
		}
		off += h->size;
	}
	return 0;
}

static bool ref_before(const struct rec_ref *x, const struct rec_ref *y)
{
	return x->time != y->time ? x->time < y->time : x->seq < y->seq;
}

static int cmp_ref(const void *a, const void *b)
{
	return ref_before(a, b) ? -1 : ref_before(b, a);
}

/* Puts mr->refs in time order (ties in batch order): each ring's records are in time order
 * already, so its nr runs (mr->runs[0..nr], the last the end) are merged pairwise, a pass per
 * doubling, rather than sorted as a whole (a fifth of reading the records under churn).
 * -EINVAL where a run is not in order, or -ENOMEM: left in batch order. */
static int merge_runs(struct mmaprec *mr, size_t nr)
{
	struct rec_ref *from = mr->refs, *to, *t;
	size_t n = mr->runs[nr];

	for (size_t r = 0; r < nr; r++)
		for (size_t i = mr->runs[r] + 1; i < mr->runs[r + 1]; i++)
			if (ref_before(&from[i], &from[i - 1]))
				return -EINVAL;
	if (!mr->refs_tmp && !(mr->refs_tmp = malloc(mr->refs_cap * sizeof(*mr->refs_tmp))))
		return -ENOMEM;
	to = mr->refs_tmp;
	for (size_t width = 1; width < nr; width *= 2) {
		for (size_t r = 0; r < nr; r += 2 * width) {
			size_t a = mr->runs[r], mid = mr->runs[r + width < nr ? r + width : nr];
			size_t end = mr->runs[r + 2 * width < nr ? r + 2 * width : nr], b = mid, k = a;

			while (a < mid && b < end)
				to[k++] = ref_before(&from[b], &from[a]) ? from[b++] : from[a++];
			while (a < mid)
				to[k++] = from[a++];
			while (b < end)
				to[k++] = from[b++];
		}
		t = from;
		from = to;
		to = t;
	}
	if (from != mr->refs)
		memcpy(mr->refs, from, n * sizeof(*from));
	return 0;
}

static void apply_mmap2(struct mmaprec *mr, const struct rec_mmap2 *r, __u64 time)
{
	size_t name_max = r->h.size - sizeof(*r) - sizeof(struct sample_id);
	struct syms_mmap m;

	if (r->h.size < sizeof(*r) + sizeof(struct sample_id) ||
	    (r->h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || !(r->prot & PROT_EXEC) ||
	    !memchr(r->filename, '\0', name_max))
		return;
	m.start = r->addr;
	m.len = r->len;
	m.pgoff = r->pgoff;
	m.dev = makedev(r->maj, r->min);
	m.ino = r->ino;
	m.path = r->filename;
	mr->st.mmaps++;
	syms_cache__record_mmap(mr->sc, r->pid, time, &m);
}

static void apply(struct mmaprec *mr, const struct perf_event_header *h, __u64 time, bool *lost)
{
	const struct rec_task *t = (const void *)h;
	const struct rec_comm *c = (const void *)h;

	switch (h->type) {
	case PERF_RECORD_MMAP2:
		apply_mmap2(mr, (const void *)h, time);
		break;
	case PERF_RECORD_COMM:
		/* a comm change of a thread (prctl) changes no mapping */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && c->pid == c->tid) {
			mr->st.execs++;
			syms_cache__record_exec(mr->sc, c->pid, time);
		}
		break;
	case PERF_RECORD_FORK:
		if (h->size < sizeof(*t) + sizeof(struct sample_id))
			break;
		/* a new thread has its parent's pid */
		if (t->pid != t->ppid && t->pid == t->tid) {
			mr->st.forks++;
			syms_cache__record_fork(mr->sc, t->pid, t->ppid, time);
		}
		break;
	case PERF_RECORD_EXIT:
		if (h->size < sizeof(*t) + sizeof(struct sample_id))
			break;
		/* the leader's exit frees the pid (what the BPF side's exit event tells too) */
		if (t->pid == t->tid) {
			mr->st.exits++;
			if (syms_cache__record_exit(mr->sc, t->pid, time))
				mr->exited(mr->ctx, t->pid);
		}
		break;
	case PERF_RECORD_LOST:
		if (h->size >= sizeof(struct rec_lost) + sizeof(struct sample_id)) {
			mr->st.lost += ((const struct rec_lost *)h)->lost;
			*lost = true;
		}
		break;
	}
}

size_t mmaprec__consume(struct mmaprec *mr)
{
	size_t used = 0, nr = 0, len;
	bool lost = false;

	if (!mr)
		return 0;
	for (int i = 0; i < mr->nr_rings; i++) {
		mr->runs[i] = nr;
		if (take_ring(mr, &mr->rings[i], &used, &len) ||
		    index_records(mr, used, len, &nr)) {
			/* no memory to read them: as good as lost (the ring is left as it is, or
			 * read in part) */
			lost = true;
			continue;
		}
		used += len;
	}
	mr->runs[mr->nr_rings] = nr;
	/* each ring is in time order; together they are not */
	if (nr > 1 && mr->nr_rings > 1 && merge_runs(mr, mr->nr_rings))
		qsort(mr->refs, nr, sizeof(*mr->refs), cmp_ref);
	for (size_t i = 0; i < nr; i++)
		apply(mr, (const void *)(mr->batch + mr->refs[i].off), mr->refs[i].time, &lost);
	mr->st.records += nr;
	if (lost)
		syms_cache__records_lost(mr->sc, mr->exited, mr->ctx);
	/* a burst's batch is not kept for the rest of the run */
	if (mr->batch_cap > (1 << 20)) {
		free(mr->batch);
		mr->batch = NULL;
		mr->batch_cap = 0;
	}
	return nr;
}

void mmaprec__stats(const struct mmaprec *mr, struct mmaprec_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!mr)
		return;
	*out = mr->st;
	out->heap_bytes = mr->batch_cap + 2 * mr->refs_cap * sizeof(*mr->refs) +
			  (mr->nr_rings + 1) * (sizeof(*mr->runs) + sizeof(*mr->rings));
}

void mmaprec__free(struct mmaprec *mr)
{
	if (!mr)
		return;
	for (int i = 0; mr->rings && i < mr->nr_rings; i++) {
		if (mr->rings[i].base)
			munmap(mr->rings[i].base, mr->rings[i].size + mr->page_size);
		close(mr->rings[i].fd);
	}
	free(mr->rings);
	free(mr->runs);
	free(mr->batch);
	free(mr->refs);
	free(mr->refs_tmp);
	free(mr);
}
