/* The unwinder's user side: process mappings and per-file unwind tables in the BPF maps of
 * bpf/unwind.bpf.h.
 *
 * Tables are built on a worker thread: a large file (libLLVM: a second) must neither stall the
 * ring buffers nor delay the end of a run, which cancels a build in progress.
 *
 * Publication protocol (rows and descriptors are written through mmap while BPF programs read
 * them): a table's rows are written first, then its descriptor's `loc` word with a release store,
 * so a reader that sees the new loc sees the rows.  Eviction clears loc, then waits for a grace
 * period (membarrier(MEMBARRIER_CMD_GLOBAL) is synchronize_rcu(), which every BPF program run
 * lies inside) before the rows are reused.  The row array is mapped only while rows are written:
 * kept mapped, all of --unwind-mem would count in bpfprof's RSS. */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "core/grow.h"
#include "unwind/cfi.h"
#include "unwind/tcache.h"
#include "sym/untrusted.h"
#include "core/btffields.h"
#include "core/common.h"
#include "core/diskcache.h"
#include "core/hashtab.h"
#include "core/features.h"
#include "stacks.h"
#include "sym/syms.h"
#include "unwind/unwinder.h"

#define VDSO_KEY UNW_VDSO_KEY /* (dev, ino) of the [vdso], here and on the BPF side */
/* A table used this recently is never evicted: the samples of the process running it would walk
 * by frame pointers while it is rebuilt, and two tables in use that do not fit together would
 * evict each other at every load. */
#define UNWIND_HOT_NS 5000000000ULL
/* How often loads put off for want of room are tried again. */
#define UNWIND_RETRY_NS 1000000000ULL

int unwind_parse_method(const char *s, enum unwind_method *out)
{
	static const char *const names[] = { [UNWIND_FP] = "fp", [UNWIND_EH] = "eh",
					     [UNWIND_AUTO] = "auto" };

	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int unwind_opt_method(const char *arg, enum unwind_method *out)
{
	if (unwind_parse_method(arg, out)) {
		p_err("invalid --unwind '%s' (fp, eh or auto)", arg);
		return -EINVAL;
	}
	if (*out != UNWIND_FP && UNWIND_DEFAULT_METHOD == UNWIND_FP) {
		p_err("--unwind %s works on x86-64 only; use --unwind fp", arg);
		return -EINVAL;
	}
	return 0;
}

const char *unwind_method_name(enum unwind_method m)
{
	return m == UNWIND_EH ? "eh" : m == UNWIND_AUTO ? "auto" : "fp";
}

int unwind_bpf_configure(const struct unwind_bpf *ub, enum unwind_method m, __u64 mem_bytes,
			 bool *task_regs)
{
	__u64 rows = mem_bytes / sizeof(struct unw_row);

	*task_regs = feat_task_pt_regs();
	if (m == UNWIND_FP) {
		/* the walk is compiled out: keep the maps minimal */
		bpf_map__set_max_entries(ub->rows, 1);
		bpf_map__set_max_entries(ub->tables, 1);
		bpf_map__set_max_entries(ub->procs, 1);
		bpf_map__set_max_entries(ub->sysstacks, 1);
		return 0;
	}
	if (rows < 1024 || rows > UINT32_MAX)
		return -EINVAL;
	bpf_map__set_max_entries(ub->rows, rows);
	/* the file ids are allocated as files come, where the walk can insert in NMI (6.1):
	 * preallocated, their 16,384 entries cost 0.6 ms of every start */
	if (feat_nmi_alloc())
		bpf_map__set_map_flags(ub->files, bpf_map__map_flags(ub->files) | BPF_F_NO_PREALLOC);
	p_info("unwind: %s, tables up to %llu MB (%llu rows); user registers of kernel-mode samples %s",
	       unwind_method_name(m), (unsigned long long)(mem_bytes >> 20), (unsigned long long)rows,
	       *task_regs ? "from bpf_task_pt_regs()" : "unavailable (kernel < 5.15): frame pointers");
	return 0;
}

/* ---- row space: first fit over a sorted free list ---- */
struct extent {
	__u32 start, len;
};

struct uw_file {
	__u64 dev, ino;
	char *path;
	__u32 id;
	__u32 tgid;          /* a process mapping it: the symbolizer holds the file open for it */
	__u32 first, count;  /* rows, when loaded */
	bool loaded, no_cfi;
	bool queued;         /* a build is waiting for, or running on, the worker */
	bool pinned;         /* never evicted: the [vdso]'s, loaded before sampling starts */
	bool deferred;       /* no room but by evicting tables in use: retried as they cool */
	__u32 need;          /* rows of its table, once built (0: not known yet) */
	const char *source;  /* ".eh_frame"... */
	size_t unsupported;  /* rows the BPF side cannot evaluate */
	char why[200];       /* no_cfi: the reason */
};

struct uw_proc_rec {
	__u32 tgid;
	bool in_map;
	__u64 hash;            /* of the list stored last (record_hash()) */
	__u64 write_ns, written_ns; /* when that write began and was done (mono_ns()) */
	struct unw_proc *copy; /* in-memory unwinders */
};

struct job {
	__u32 id;
	int fd;    /* dup of the symbolizer's fd of the file, or -1: open by path */
	__u64 size; /* of the file: the smallest is built first */
};

struct unwinder {
	enum unwind_method method;
	struct syms_cache *sc;
	struct unw_row *rows; /* in-memory unwinders; the BPF map is mapped only to write */
	__u32 nr_rows;
	struct unw_table *tables;
	size_t tables_len; /* mmapped length; 0 when malloc'd */
	int rows_fd, procs_fd, walks_fd, files_fd;
	/* everything below, and the files, under lock: the worker installs tables */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t worker;
	bool have_worker;
	volatile int stopping;
	struct job *jobs;
	size_t nr_jobs, cap_jobs;
	struct hashtab files_by_key; /* (dev, ino) -> uw_file */
	struct uw_file *files[UNWIND_MAX_TABLES];
	__u32 nr_files;
	struct extent *free;
	size_t nr_free, cap_free;
	struct hashtab procs; /* tgid -> uw_proc_rec */
	__u32 nr_procs;
	__u32 proc_gen;       /* mapping lists stored (struct unw_proc gen) */
	__u64 procs_stored, refreshes_same; /* mapping lists written; asked, the same as held */
	__u64 announcements_stale;         /* announcements made before an exec told since */
	__u64 rows_used, loads, evictions;
	__u64 loads_cached;   /* of loads, tables read back from the cache */
	__u64 deferrals;      /* loads put off for want of room */
	__u64 last_retry_ns;
	struct unw_cache *cache; /* NULL: --no-unwind-cache, or no usable directory */
	struct uw_file **sorted; /* scratch: the loaded tables by first row */
	struct unw_proc scratch;
};

static int free_insert(struct unwinder *u, size_t at, __u32 start, __u32 len)
{
	if (ARRAY_GROW(u->free, u->cap_free, u->nr_free + 1))
		return -ENOMEM;
	memmove(&u->free[at + 1], &u->free[at], (u->nr_free - at) * sizeof(*u->free));
	u->free[at].start = start;
	u->free[at].len = len;
	u->nr_free++;
	return 0;
}

/* Best fit: the large extents stay whole for the large tables (libLLVM's is 6 MB). */
static int rows_alloc(struct unwinder *u, __u32 n, __u32 *start)
{
	size_t best = u->nr_free;

	for (size_t i = 0; i < u->nr_free; i++)
		if (u->free[i].len >= n && (best == u->nr_free || u->free[i].len < u->free[best].len))
			best = i;
	if (best == u->nr_free)
		return -ENOSPC;
	*start = u->free[best].start;
	u->free[best].start += n;
	u->free[best].len -= n;
	if (!u->free[best].len) {
		memmove(&u->free[best], &u->free[best + 1],
			(u->nr_free - best - 1) * sizeof(*u->free));
		u->nr_free--;
	}
	return 0;
}

/* Returns rows to the free list, merging with the neighbours. */
static int rows_release(struct unwinder *u, __u32 start, __u32 n)
{
	size_t i = 0;

	while (i < u->nr_free && u->free[i].start < start)
		i++;
	if (i > 0 && u->free[i - 1].start + u->free[i - 1].len == start) {
		u->free[i - 1].len += n;
		if (i < u->nr_free && start + n == u->free[i].start) {
			u->free[i - 1].len += u->free[i].len;
			memmove(&u->free[i], &u->free[i + 1], (u->nr_free - i - 1) * sizeof(*u->free));
			u->nr_free--;
		}
		return 0;
	}
	if (i < u->nr_free && start + n == u->free[i].start) {
		u->free[i].start = start;
		u->free[i].len += n;
		return 0;
	}
	return free_insert(u, i, start, n);
}

/* ---- construction ---- */

static void *map_array(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t page_round(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

static struct unwinder *unwinder_alloc(struct syms_cache *sc, __u32 nr_rows)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->sc = sc;
	u->nr_rows = nr_rows;
	u->rows_fd = u->procs_fd = u->walks_fd = u->files_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->wake, NULL);
	if (free_insert(u, 0, 0, nr_rows)) {
		free(u);
		return NULL;
	}
	return u;
}

static void *worker_main(void *arg);

struct unwinder *unwinder__new(const struct unwind_bpf *ub, struct syms_cache *sc,
			       enum unwind_method m)
{
	struct unwinder *u = unwinder_alloc(sc, bpf_map__max_entries(ub->rows));
	int err;

	if (!u)
		return NULL;
	u->method = m;
	u->tables_len = page_round((size_t)UNWIND_MAX_TABLES * sizeof(struct unw_table));
	u->tables = map_array(bpf_map__fd(ub->tables), u->tables_len);
	if (!u->tables || bpf_map__max_entries(ub->tables) != UNWIND_MAX_TABLES) {
		err = errno ? -errno : -EINVAL;
		goto fail;
	}
	u->rows_fd = bpf_map__fd(ub->rows);
	u->procs_fd = bpf_map__fd(ub->procs);
	u->walks_fd = bpf_map__fd(ub->walks);
	u->files_fd = ub->files ? bpf_map__fd(ub->files) : -1;
	err = -pthread_create(&u->worker, NULL, worker_main, u);
	if (err)
		goto fail;
	u->have_worker = true;
	return u;
fail:
	unwinder__free(u);
	errno = -err;
	return NULL;
}

struct unwinder *unwinder__new_mem(struct syms_cache *sc, __u32 nr_rows)
{
	struct unwinder *u = unwinder_alloc(sc, nr_rows);

	if (!u)
		return NULL;
	u->method = UNWIND_AUTO;
	u->rows = calloc(nr_rows ? nr_rows : 1, sizeof(*u->rows));
	u->tables = calloc(UNWIND_MAX_TABLES, sizeof(*u->tables));
	if (!u->rows || !u->tables) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

static void free_proc_rec(void *p)
{
	struct uw_proc_rec *r = p;

	free(r->copy);
	free(r);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->have_worker) {
		pthread_mutex_lock(&u->lock);
		u->stopping = 1;
		pthread_cond_broadcast(&u->wake);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->worker, NULL);
	}
	for (size_t i = 0; i < u->nr_jobs; i++)
		if (u->jobs[i].fd >= 0)
			close(u->jobs[i].fd);
	free(u->jobs);
	free(u->rows);
	if (u->tables_len && u->tables)
		munmap(u->tables, u->tables_len);
	else
		free(u->tables);
	for (__u32 i = 0; i < u->nr_files; i++) {
		free(u->files[i]->path);
		free(u->files[i]);
	}
	hashtab_clear(&u->files_by_key, NULL);
	hashtab_clear(&u->procs, free_proc_rec);
	free(u->free);
	free(u->sorted);
	unw_cache__free(u->cache);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->wake);
	free(u);
}

/* ---- files ---- */

/* The BPF side's key of a file, from a device number as stat() gives it. */
static struct unw_file_key bpf_file_key(__u64 dev, __u64 ino)
{
	return (struct unw_file_key){ .dev = (__u64)major(dev) << 32 | minor(dev), .ino = ino };
}

/* Tells the walks through the kernel's mappings (bpf/unwind.bpf.h: unwind_vma_mapping()) which
 * table a file has. */
static void tell_file_key(struct unwinder *u, const struct unw_file_key *key, __u32 id)
{
	struct unw_file_ref ref = { .table = id };

	if (u->files_fd >= 0)
		bpf_map_update_elem(u->files_fd, key, &ref, BPF_ANY);
}

static void tell_file(struct unwinder *u, __u64 dev, __u64 ino, __u32 id)
{
	struct unw_file_key key = bpf_file_key(dev, ino);

	tell_file_key(u, &key, id);
}

static struct uw_file *file_get(struct unwinder *u, __u64 dev, __u64 ino, const char *path,
				__u32 tgid)
{
	struct uw_file *f = hashtab_get(&u->files_by_key, dev, ino);

	if (f) {
		f->tgid = tgid;
		return f;
	}
	if (u->nr_files == UNWIND_MAX_TABLES)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = dev;
	f->ino = ino;
	f->tgid = tgid;
	f->id = u->nr_files;
	f->path = strdup(path);
	if (!f->path || hashtab_put(&u->files_by_key, dev, ino, f)) {
		free(f->path);
		free(f);
		return NULL;
	}
	u->files[u->nr_files++] = f;
	if (dev == VDSO_KEY)
		tell_file_key(u, &(struct unw_file_key){ .dev = VDSO_KEY, .ino = VDSO_KEY }, f->id);
	else
		tell_file(u, dev, ino, f->id);
	return f;
}

struct fd_search {
	__u64 dev, ino;
	int fd;
};

static int find_fd(const struct syms_mapping *m, void *ctx)
{
	struct fd_search *s = ctx;

	if (m->path && m->dev == s->dev && m->ino == s->ino && m->fd >= 0) {
		s->fd = m->fd;
		return 1;
	}
	return 0;
}

/* The symbolizer's fd of the file, duplicated: it reaches deleted files and other mount
 * namespaces.  -1 when there is none (the file is then opened by path).  Main thread only: the
 * symbolizer is not thread-safe. */
static int file_fd(struct unwinder *u, const struct uw_file *f)
{
	struct fd_search s = { .dev = f->dev, .ino = f->ino, .fd = -1 };

	if (!u->sc || (f->dev == VDSO_KEY && f->ino == VDSO_KEY))
		return -1;
	syms_cache__for_each_mapping(u->sc, f->tgid, find_fd, &s);
	return s.fd >= 0 ? fcntl(s.fd, F_DUPFD_CLOEXEC, 0) : -1;
}

/* The rows of the file through the persistent cache: read back when cached, else built and
 * stored.  The key comes from the open file, so the rows are the file's that was opened. */
static int build_rows_cached(struct unwinder *u, const struct uw_file *f, int fd,
			     struct cfi_rows *rows, char *why, size_t size)
{
	/* opened as cfi_build_file() would by name: a file other users may control */
	static const struct file_rules by_name;
	struct unw_cache_key key;
	enum file_refusal refusal;
	struct stat st;
	int own_fd = -1, err;

	if (fd < 0)
		fd = own_fd = untrusted_open(AT_FDCWD, f->path, FILE_MAPPED, &by_name, &st, &refusal);
	if (fd < 0 || unw_cache_key(fd, &key))
		key.name[0] = '\0';
	if (key.name[0] && !unw_cache__get(u->cache, &key, rows)) {
		err = 0;
		goto out;
	}
	err = cfi_build_file(f->path, own_fd >= 0 ? own_fd : fd, &u->stopping, rows, why, size);
	if (!err && key.name[0])
		unw_cache__put(u->cache, &key, rows);
out:
	if (own_fd >= 0)
		close(own_fd);
	return err;
}

/* Builds a file's rows; needs no lock (path, dev and ino never change). */
static int build_rows(struct unwinder *u, const struct uw_file *f, int fd, struct cfi_rows *rows,
		      char *why, size_t size)
{
	const void *image;
	size_t len;

	if (f->dev == VDSO_KEY && f->ino == VDSO_KEY) {
		image = syms_vdso_image(&len);
		if (!image) {
			snprintf(why, size, "no vdso image");
			memset(rows, 0, sizeof(*rows));
			return -ENOENT;
		}
		return cfi_build_mem(image, len, rows, why, size);
	}
	if (!u->cache)
		return cfi_build_file(f->path, fd, &u->stopping, rows, why, size);
	return build_rows_cached(u, f, fd, rows, why, size);
}

/* Rows written through one mapping of the BPF array at most: every page of a mapping written
 * counts in bpfprof's RSS until it is unmapped (libclang-cpp's table is 7 MB). */
#define WRITE_WINDOW (1u << 20)

/* Copies rows into the BPF array (mapped just for this, a window at a time) or the in-memory
 * one. */
static int write_rows(struct unwinder *u, __u32 start, const struct unw_row *rows, __u32 n)
{
	size_t page = sysconf(_SC_PAGESIZE), off = (size_t)start * sizeof(*rows);
	size_t left = (size_t)n * sizeof(*rows);
	const char *src = (const char *)rows;

	if (u->rows) {
		memcpy(&u->rows[start], rows, left);
		return 0;
	}
	while (left) {
		size_t pg = off / page * page, chunk = left < WRITE_WINDOW ? left : WRITE_WINDOW;
		size_t len = page_round(off + chunk - pg);
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, pg);

		if (p == MAP_FAILED)
			return -errno;
		memcpy((char *)p + (off - pg), src, chunk);
		munmap(p, len);
		off += chunk;
		src += chunk;
		left -= chunk;
	}
	return 0;
}

static void publish(struct unw_table *t, __u32 state, __u64 loc)
{
	t->state = state;
	t->requested = 0;
	__atomic_store_n(&t->loc, loc, __ATOMIC_RELEASE);
}

/* Waits until no BPF program can still be reading rows that were just unpublished. */
static void wait_readers(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20000); /* nohz_full kernels refuse it: outlast any BPF program run */
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static bool table_hot(const struct unwinder *u, const struct uw_file *f, __u64 now)
{
	__u64 used = __atomic_load_n(&u->tables[f->id].last_used, __ATOMIC_RELAXED);

	return f->pinned || used + UNWIND_HOT_NS > now;
}

static int by_first(const void *a, const void *b)
{
	const struct uw_file *x = *(struct uw_file *const *)a, *y = *(struct uw_file *const *)b;

	return x->first < y->first ? -1 : x->first > y->first;
}

struct window {
	size_t from, to;    /* loaded tables [from, to) of the sorted list are evicted */
	__u64 evict_rows;   /* their rows */
	__u64 newest;       /* the most recent use among them */
};

/* The cheapest run of n contiguous rows made of free rows and cold tables (none used within
 * UNWIND_HOT_NS): the fewest rows evicted, then the least recently used.  Evicting by age alone
 * frees rows scattered between the tables still held, and a large table (libLLVM: 800k rows)
 * then evicts nearly everything before one gap is wide enough; the tables of a working set
 * larger than the budget then evict each other on every load (measured: 3742 evictions in 30 s
 * under a clang loop, 85% of bpfprof's CPU).  Tables in use are never evicted: the newcomer
 * waits (its frames use frame pointers) until some table cools.  sorted: the loaded tables by
 * first row.  false when no such run exists. */
static bool find_window(const struct unwinder *u, struct uw_file **sorted, size_t nr, __u32 n,
			__u64 now, struct window *best)
{
	bool found = false;
	size_t i = 0;

	/* the row space is [0, nr_rows): free extents and loaded tables, sorted; a window starts
	 * at a table or at the start of the space and runs over tables and the gaps between them */
	while (i <= nr) {
		__u64 start = i ? sorted[i - 1]->first + sorted[i - 1]->count : 0;
		struct window w = { .from = i, .to = i };
		__u64 end = start;

		/* grow [start, end) table by table until n rows fit */
		for (;;) {
			__u64 limit = w.to < nr ? sorted[w.to]->first : u->nr_rows;

			if (limit - start >= n) {
				end = start + n;
				break;
			}
			if (w.to == nr)
				return found; /* later windows start later: none fits either */
			if (table_hot(u, sorted[w.to], now))
				break;
			w.evict_rows += sorted[w.to]->count;
			if (u->tables[sorted[w.to]->id].last_used > w.newest)
				w.newest = u->tables[sorted[w.to]->id].last_used;
			w.to++;
		}
		if (end - start == n && (!found || w.evict_rows < best->evict_rows ||
					  (w.evict_rows == best->evict_rows && w.newest < best->newest))) {
			*best = w;
			found = true;
		}
		/* the next window starts after the next table; a hot table ends every window
		 * that starts before it, so the next one starts after it */
		i = end - start == n ? i + 1 : w.to + 1;
	}
	return found;
}

/* The loaded tables sorted by first row, in u->sorted.  0 or -ENOMEM. */
static int sort_loaded(struct unwinder *u, size_t *nr)
{
	size_t k = 0;

	if (!u->sorted && !(u->sorted = malloc(sizeof(*u->sorted) * UNWIND_MAX_TABLES)))
		return -ENOMEM;
	for (__u32 i = 0; i < u->nr_files; i++)
		if (u->files[i]->loaded)
			u->sorted[k++] = u->files[i];
	qsort(u->sorted, k, sizeof(*u->sorted), by_first);
	*nr = k;
	return 0;
}

/* Whether n rows could be made room for now, without evicting a table in use. */
static bool room_possible(struct unwinder *u, __u32 n)
{
	struct window w;
	size_t nr;

	if (n > u->nr_rows || sort_loaded(u, &nr))
		return false;
	return find_window(u, u->sorted, nr, n, mono_ns(), &w);
}

/* Makes room for n rows by evicting the cold tables of the cheapest window.  0, -EBUSY (only by
 * evicting tables in use: the caller defers the load) or -errno. */
static int rows_make_room(struct unwinder *u, __u32 n, __u32 *start)
{
	struct window w;
	size_t nr;
	int err;

	if (rows_alloc(u, n, start) == 0)
		return 0;
	err = sort_loaded(u, &nr);
	if (err)
		return err;
	if (!find_window(u, u->sorted, nr, n, mono_ns(), &w))
		return -EBUSY;
	for (size_t i = w.from; i < w.to; i++) {
		struct uw_file *victim = u->sorted[i];

		publish(&u->tables[victim->id], UNW_TABLE_EMPTY, 0);
		err = rows_release(u, victim->first, victim->count);
		if (err)
			return err;
		victim->loaded = false;
		u->rows_used -= victim->count;
		u->evictions++;
		p_info("unwind: evicted the table of %s (%u rows) to make room", victim->path,
		       victim->count);
	}
	if (w.to > w.from)
		wait_readers();
	return rows_alloc(u, n, start);
}

/* Installs built rows (or the failure) as table f; under lock. */
static int install(struct unwinder *u, struct uw_file *f, struct cfi_rows *rows, int err,
		   const char *why)
{
	struct unw_table *t = &u->tables[f->id];
	__u32 start;

	f->queued = false;
	if (err == -ECANCELED)
		return err;
	if (f->loaded || f->no_cfi)
		return f->loaded ? 0 : -ENOENT; /* built twice (a direct load raced the worker) */
	if (!err && rows->nr > u->nr_rows) {
		snprintf(f->why, sizeof(f->why), "its table needs %zu KB, more than --unwind-mem",
			 rows->nr * sizeof(struct unw_row) >> 10);
		err = -E2BIG;
	} else if (err) {
		snprintf(f->why, sizeof(f->why), "%s", why);
	}
	if (!err)
		f->need = rows->nr;
	err = err ?: rows_make_room(u, rows->nr, &start);
	if (err == -EBUSY) {
		/* t->requested stays set: the BPF side does not ask again, unwinder__tick()
		 * retries once some table has cooled */
		if (!f->deferred)
			p_info("unwind: %s: no room for its table (%u rows) without evicting tables "
			       "in use; its frames use frame pointers until there is", f->path, f->need);
		f->deferred = true;
		u->deferrals++;
		return err;
	}
	f->deferred = false;
	err = err ?: write_rows(u, start, rows->rows, rows->nr);
	if (err) {
		if (err == -ENOMEM || err == -ENOSPC)
			snprintf(f->why, sizeof(f->why), "%s", strerror(-err));
		f->no_cfi = true;
		publish(t, UNW_TABLE_NO_CFI, 0);
		p_info("unwind: %s: %s; its frames use frame pointers", f->path, f->why);
		return err;
	}
	f->first = start;
	f->count = rows->nr;
	f->loaded = true;
	f->source = rows->source;
	f->unsupported = rows->unsupported;
	u->rows_used += rows->nr;
	u->loads++;
	u->loads_cached += rows->cached;
	t->last_used = mono_ns();
	publish(t, UNW_TABLE_LOADED, UNW_LOC(start, rows->nr));
	p_info("unwind: loaded %s: %zu rows (%zu KB) from %s%s, %zu FDEs%s", f->path, rows->nr,
	       rows->nr * sizeof(struct unw_row) >> 10, rows->source,
	       rows->cached ? " (cached)" : "", rows->fdes,
	       rows->unsupported ? ", some rules unsupported" : "");
	return 0;
}

int unwinder__load_table(struct unwinder *u, __u32 id)
{
	struct cfi_rows rows;
	struct uw_file *f;
	char why[200];
	int fd, err;

	bool done;

	pthread_mutex_lock(&u->lock);
	f = id < u->nr_files ? u->files[id] : NULL;
	done = !f || f->loaded || f->no_cfi;
	err = f && f->loaded ? 0 : -ENOENT;
	if (done && f)
		u->tables[id].requested = 0;
	pthread_mutex_unlock(&u->lock);
	if (done)
		return err;
	fd = file_fd(u, f);
	err = build_rows(u, f, fd, &rows, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&u->lock);
	err = install(u, f, &rows, err, why);
	pthread_mutex_unlock(&u->lock);
	cfi_rows_free(&rows);
	return err;
}

/* Builds queued tables one at a time, the lock released while building. */
/* Shortest job first: a small program's table (built in microseconds) must not wait behind a
 * compiler's (a second) when both are met at once on a busy machine, or every short run of the
 * small program is walked by frame pointers meanwhile. */
static struct job take_smallest_job(struct unwinder *u)
{
	size_t best = 0;
	struct job job;

	for (size_t i = 1; i < u->nr_jobs; i++)
		if (u->jobs[i].size < u->jobs[best].size)
			best = i;
	job = u->jobs[best];
	memmove(u->jobs + best, u->jobs + best + 1, (--u->nr_jobs - best) * sizeof(*u->jobs));
	return job;
}

static void *worker_main(void *arg)
{
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct cfi_rows rows;
		struct uw_file *f;
		struct job job;
		char why[200];
		int err;

		while (!u->nr_jobs && !u->stopping)
			pthread_cond_wait(&u->wake, &u->lock);
		if (u->stopping)
			break;
		job = take_smallest_job(u);
		f = u->files[job.id];
		if (f->deferred && !room_possible(u, f->need)) {
			/* the room it was queued for went to another table meanwhile */
			f->queued = false;
			if (job.fd >= 0)
				close(job.fd);
			continue;
		}
		pthread_mutex_unlock(&u->lock);
		err = build_rows(u, f, job.fd, &rows, why, sizeof(why));
		if (job.fd >= 0)
			close(job.fd);
		pthread_mutex_lock(&u->lock);
		install(u, f, &rows, err, why);
		cfi_rows_free(&rows);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* Hands a table to the worker (to the caller's thread without one). */
static int queue_load(struct unwinder *u, __u32 id)
{
	struct uw_file *f;
	struct stat st;
	__u64 size;
	int fd, err = 0;

	if (!u->have_worker)
		return unwinder__load_table(u, id);
	pthread_mutex_lock(&u->lock);
	f = u->files[id];
	if (f->loaded || f->no_cfi || f->queued) {
		if (!f->queued)
			u->tables[id].requested = 0;
		pthread_mutex_unlock(&u->lock);
		return 0;
	}
	if (f->deferred && !room_possible(u, f->need)) {
		/* still no room: no read of its table for nothing */
		pthread_mutex_unlock(&u->lock);
		return 0;
	}
	f->queued = true;
	pthread_mutex_unlock(&u->lock);
	fd = file_fd(u, f);
	if (fd >= 0 ? fstat(fd, &st) : stat(f->path, &st))
		st.st_size = INT64_MAX; /* built by path, if at all: last */
	size = st.st_size;
	pthread_mutex_lock(&u->lock);
	if (ARRAY_GROW(u->jobs, u->cap_jobs, u->nr_jobs + 1)) {
		err = -ENOMEM;
		goto unlock;
	}
	u->jobs[u->nr_jobs].id = id;
	u->jobs[u->nr_jobs].fd = fd;
	u->jobs[u->nr_jobs].size = size;
	u->nr_jobs++;
	fd = -1;
	pthread_cond_signal(&u->wake);
unlock:
	if (err) {
		f->queued = false;
		u->tables[id].requested = 0; /* the BPF side asks again */
	}
	pthread_mutex_unlock(&u->lock);
	if (fd >= 0)
		close(fd);
	return err;
}

void unwinder__tick(struct unwinder *u)
{
	__u64 now = mono_ns();

	if (!u || now - u->last_retry_ns < UNWIND_RETRY_NS)
		return;
	u->last_retry_ns = now;
	/* queue_load() checks the room of each: without it, nothing is read */
	for (__u32 id = 0; id < u->nr_files; id++) {
		bool deferred;

		pthread_mutex_lock(&u->lock);
		deferred = u->files[id]->deferred;
		pthread_mutex_unlock(&u->lock);
		if (deferred)
			queue_load(u, id);
	}
}

/* ---- processes ---- */

struct proc_build {
	struct unwinder *u;
	struct unw_proc *p;
	__u32 tgid;
	int err;
	bool truncated;
};

/* The file of a mapping and its bias (file offset = pc - bias): the [vdso] (no device) is
 * this kernel's vdso image, which starts the mapping.  NULL for anonymous code, or when the
 * files are too many; under lock. */
static struct uw_file *mapping_file(struct unwinder *u, const struct syms_mapping *m, __u32 tgid,
				    __u64 *bias)
{
	if (!m->path)
		return NULL;
	if (!strcmp(m->path, "[vdso]") && !m->dev) {
		*bias = m->start;
		return file_get(u, VDSO_KEY, VDSO_KEY, "[vdso]", tgid);
	}
	*bias = m->start - m->pgoff;
	return file_get(u, m->dev, m->ino, m->path, tgid);
}

static int add_mapping(const struct syms_mapping *m, void *ctx)
{
	struct proc_build *b = ctx;
	struct unw_mapping *um;
	struct uw_file *f = NULL;

	if (b->p->nr == UNWIND_MAX_MAPPINGS - 1) {
		b->truncated = true;
		return 1;
	}
	um = &b->p->maps[b->p->nr];
	memset(um, 0, sizeof(*um));
	um->start = m->start;
	um->end = m->end;
	um->table = UNW_NO_TABLE;
	f = mapping_file(b->u, m, b->tgid, &um->bias);
	if (m->path && !f)
		b->err = -ENOMEM; /* or too many files: that mapping gets no table */
	if (f)
		um->table = f->id;
	b->p->nr++;
	return 0;
}

/* Drops the entries of processes that have exited, to make room in the map. */
static void purge_dead(struct unwinder *u)
{
	for (size_t i = 0; i < u->procs.cap; i++) {
		struct uw_proc_rec *r = u->procs.slots[i].val;

		if (r && r->in_map && !process_exists(r->tgid)) {
			bpf_map_delete_elem(u->procs_fd, &r->tgid);
			r->in_map = false;
			u->nr_procs--;
		}
	}
}

/* FNV-1a of a mapping list as far as it is used. */
static __u64 record_hash(const struct unw_proc *p)
{
	const unsigned char *c = (const void *)p->maps;
	size_t len = (size_t)p->nr * sizeof(p->maps[0]);
	__u64 h = 0xcbf29ce484222325ULL ^ p->nr;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

static int store_proc(struct unwinder *u, struct uw_proc_rec *r, const struct unw_proc *p)
{
	__u64 start = mono_ns();
	int err;

	if (u->procs_fd < 0) {
		if (!r->copy && !(r->copy = malloc(sizeof(*r->copy))))
			return -ENOMEM;
		*r->copy = *p;
	} else {
		err = bpf_map_update_elem(u->procs_fd, &r->tgid, p, BPF_ANY);
		if (err && errno == E2BIG) {
			purge_dead(u);
			err = bpf_map_update_elem(u->procs_fd, &r->tgid, p, BPF_ANY);
		}
		if (err)
			return -errno;
	}
	if (!r->in_map)
		u->nr_procs++;
	r->in_map = true;
	r->write_ns = start;
	r->written_ns = mono_ns();
	u->procs_stored++;
	return 0;
}

/* The list is not written again when it is the one the map holds (an 8 KB element replaced:
 * under process churn half of the lists were written twice or more), as known from a write
 * begun after held_since (CLOCK_MONOTONIC ns; 0: any).  A refresh (held_since 0) is asked by
 * the BPF side's walk for a pc outside every mapping it holds, most often a garbage return
 * address, or for a process it holds no list of (announced, its list not read yet); an exec
 * drops the list the BPF side held, and then asks for the next one (note_process()), so
 * that an announcement (held_since: its sample's time) finds a list held only if it was
 * written after that.  Not writing it again also keeps the walk's one-a-second limit on
 * asking, which a write starts afresh. */
static int add_process_locked(struct unwinder *u, __u32 tgid, struct proc_build *b,
			      __u64 held_since)
{
	struct uw_proc_rec *r;
	__u64 hash;
	int err;

	memset(&u->scratch, 0, offsetof(struct unw_proc, maps));
	err = syms_cache__for_each_mapping(u->sc, tgid, add_mapping, b);
	if (err < 0)
		return err;
	/* the BPF search reads every entry: the unused ones start above any address */
	memset(&b->p->maps[b->p->nr], 0xff, (UNWIND_MAX_MAPPINGS - b->p->nr) * sizeof(b->p->maps[0]));
	if (b->truncated)
		p_info("unwind: pid %u has more than %d executable mappings; the rest use frame pointers",
		       tgid, UNWIND_MAX_MAPPINGS - 1);
	if (b->p->nr == 0)
		return 0; /* a kernel thread, or already gone: the frame-pointer walk handles it */
	r = hashtab_get(&u->procs, tgid, 0);
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r || hashtab_put(&u->procs, tgid, 0, r)) {
			free(r);
			return -ENOMEM;
		}
		r->tgid = tgid;
	}
	hash = record_hash(b->p);
	if (r->in_map && r->hash == hash && r->write_ns > held_since) {
		u->refreshes_same++;
		return b->err;
	}
	r->hash = hash;
	/* the BPF walks' cached mappings of the process hold while it is the same list */
	b->p->gen = ++u->proc_gen;
	err = store_proc(u, r, b->p);
	if (err)
		p_info("unwind: cannot load the mappings of pid %u: %s; its stacks use frame pointers",
		       tgid, strerror(-err));
	return err ?: b->err;
}

static int add_process(struct unwinder *u, __u32 tgid, __u64 held_since)
{
	struct proc_build b = { .u = u, .p = &u->scratch, .tgid = tgid };
	int err;

	pthread_mutex_lock(&u->lock);
	err = add_process_locked(u, tgid, &b, held_since);
	pthread_mutex_unlock(&u->lock);
	return err;
}

int unwinder__add_process(struct unwinder *u, __u32 tgid)
{
	return add_process(u, tgid, UINT64_MAX);
}

void unwinder__forget_process(struct unwinder *u, __u32 tgid, __u64 gone_ns)
{
	struct uw_proc_rec *r;

	pthread_mutex_lock(&u->lock);
	r = hashtab_del(&u->procs, tgid, 0);
	if (r && r->in_map) {
		/* the BPF side deleted its entry after gone_ns: only a list written since (a
		 * request read after the exit) is left for this delete, which otherwise is a
		 * syscall that finds nothing */
		if (u->procs_fd >= 0 && r->written_ns >= gone_ns)
			bpf_map_delete_elem(u->procs_fd, &tgid);
		u->nr_procs--;
	}
	pthread_mutex_unlock(&u->lock);
	if (r)
		free_proc_rec(r);
}

struct addr_search {
	struct unwinder *u;
	__u32 tgid;
	__u64 addr;
	struct uw_file *f;
};

static int find_addr(const struct syms_mapping *m, void *ctx)
{
	struct addr_search *s = ctx;
	__u64 bias;

	if (s->addr < m->start || s->addr >= m->end)
		return 0;
	pthread_mutex_lock(&s->u->lock);
	s->f = mapping_file(s->u, m, s->tgid, &bias);
	pthread_mutex_unlock(&s->u->lock);
	return 1;
}

/* A walk through the kernel's mappings met a file without an id (UNW_EV_FILE): the process is
 * snapshotted as at its first sample, which names every file it maps, and the BPF side learns the
 * file's id under the key it saw (the kernel's inode, which stat() may not show: overlayfs). */
static void name_file(struct unwinder *u, const struct unw_event *e)
{
	struct addr_search s = { .u = u, .tgid = e->tgid, .addr = e->addr };

	if (!syms_cache__snapshot(u->sc, e->tgid)) {
		unwinder__add_process(u, e->tgid);
		syms_cache__for_each_mapping(u->sc, e->tgid, find_addr, &s);
	}
	if (!s.f) {
		/* gone already: the next process to run the file asks again, at once (a short
		 * program run in a loop would otherwise wait out the BPF side's pause) */
		if (u->files_fd >= 0)
			bpf_map_delete_elem(u->files_fd, &e->file);
		return;
	}
	tell_file_key(u, &e->file, s.f->id);
	queue_load(u, s.f->id);
}

void unwinder__set_cache(struct unwinder *u, struct unw_cache *c)
{
	u->cache = c;
}

int unwinder__preload_file(struct unwinder *u, const char *path, bool wait)
{
	char *real = realpath(path, NULL); /* tables are built from the file, never a symlink */
	struct uw_file *f = NULL;
	struct stat st;
	int err = 0;

	if (!real || stat(real, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	if (!err) {
		pthread_mutex_lock(&u->lock);
		f = file_get(u, st.st_dev, st.st_ino, real, 0);
		pthread_mutex_unlock(&u->lock);
		err = f ? 0 : -ENOMEM;
	}
	if (f)
		wait ? unwinder__load_table(u, f->id) : queue_load(u, f->id);
	free(real);
	return err;
}

int unwinder__preload_vdso(struct unwinder *u)
{
	struct uw_file *f;
	size_t len;

	if (!syms_vdso_image(&len))
		return -ENOENT;
	pthread_mutex_lock(&u->lock);
	f = file_get(u, VDSO_KEY, VDSO_KEY, "[vdso]", 0);
	if (f)
		f->pinned = true;
	pthread_mutex_unlock(&u->lock);
	/* built from memory: a few hundred rows, in microseconds */
	return f ? unwinder__load_table(u, f->id) : -ENOMEM;
}

static int preload_mapping(const struct syms_mapping *m, void *ctx)
{
	struct unwinder *u = ctx;
	int id = m->path ? unwinder__table_of(u, m->dev, m->ino) : -1;

	if (id >= 0)
		unwinder__load_table(u, id);
	return 0;
}

int unwinder__preload_process(struct unwinder *u, __u32 tgid)
{
	int err = syms_cache__snapshot(u->sc, tgid);

	err = err ?: unwinder__add_process(u, tgid);
	if (err)
		return err;
	return syms_cache__for_each_mapping(u->sc, tgid, preload_mapping, u);
}

/* The mmap() exit tracepoint exists where the kernel traces syscalls (CONFIG_FTRACE_SYSCALLS):
 * mappings found ahead of the first sample need it. */
static bool mmap_exit_traced(void)
{
	return !access("/sys/kernel/tracing/events/syscalls/sys_exit_mmap", F_OK) ||
	       !access("/sys/kernel/debug/tracing/events/syscalls/sys_exit_mmap", F_OK);
}

const struct unwind_vma_support *unwind_vma_support(void)
{
	static struct unwind_vma_support v;
	static bool probed;

	if (probed)
		return &v;
	probed = true;
	v.on = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma, NULL) == 1;
	v.prefill = v.on && mmap_exit_traced();
	return &v;
}

void unwind_kernel_fields(struct unw_kfields *out)
{
	/* one pass over the BTF: the walk's fields, then those the exec, mmap() and fork programs
	 * read besides (optional: without them mappings are only searched by walks), then those
	 * that tell the [vdso] (optional: without them a walk through the kernel's mappings ends
	 * there) */
	struct btf_field f[] = {
		{ "vm_area_struct", "vm_start" }, { "vm_area_struct", "vm_end" },
		{ "vm_area_struct", "vm_pgoff" }, { "vm_area_struct", "vm_file" },
		{ "file", "f_inode" },            { "inode", "i_ino" },
		{ "inode", "i_sb" },              { "super_block", "s_dev" },
		/* the exec, mmap() and fork programs' */
		{ "vm_area_struct", "vm_flags" }, { "task_struct", "mm" },
		{ "mm_struct", "start_code" },    { "task_struct", "pid" },
		{ "task_struct", "tgid" },
		/* VDSO (and task_struct.mm): mm_struct.context is x86's mm_context_t, a typedef
		 * of an anonymous struct */
		{ "mm_struct", "context" },       { "mm_context_t", "vdso" },
	};
	enum { WALK = 8, PREFILL = 13, VDSO = 15 }; /* where each group ends */
	__u32 *to[] = { &out->vma_start, &out->vma_end, &out->vma_pgoff, &out->vma_file,
			&out->file_inode, &out->inode_ino, &out->inode_sb, &out->sb_dev,
			&out->vma_flags, &out->task_mm, &out->mm_start_code, &out->task_pid,
			&out->task_tgid, &out->mm_vdso, &out->mm_vdso };
	bool vdso = true;

	_Static_assert(sizeof(f) / sizeof(f[0]) == VDSO && sizeof(to) / sizeof(to[0]) == VDSO,
		       "one offset for each field");
	memset(out, 0, sizeof(*out));
	if (btf_field_offsets(NULL, f, VDSO))
		return; /* no kernel BTF */
	out->ok = out->prefill = 1;
	for (size_t i = 0; i < VDSO; i++) {
		if (f[i].offset < 0 && i < WALK)
			out->ok = 0;
		else if (f[i].offset < 0 && i < PREFILL)
			out->prefill = 0;
		else if (f[i].offset < 0)
			vdso = false;
		/* mm_vdso is context's offset plus vdso's in it */
		*to[i] += f[i].offset < 0 ? 0 : f[i].offset;
	}
	out->prefill &= out->ok;
	if (!vdso || !out->ok || !out->task_mm)
		out->mm_vdso = 0;
}

/* Format of the kept offsets: struct unw_kfields as it is, under a name of this version (bump it
 * with any change of the struct or of the fields unwind_kernel_fields() looks for). */
#define KFIELDS_VERSION 1

/* The kept offsets' name: this boot's. */
static int kfields_name(char *name, size_t size)
{
	char boot[64];

	if (boot_id(boot, sizeof(boot)))
		return -ENOENT;
	snprintf(name, size, "kf-%s.v%d.kfld", boot, KFIELDS_VERSION);
	return 0;
}

void unwind_kernel_fields_kept(struct disk_cache *c, struct unw_kfields *out, bool *kept)
{
	char name[96];
	void *buf = NULL;
	size_t len = 0;

	*kept = false;
	if (!c || kfields_name(name, sizeof(name))) {
		unwind_kernel_fields(out);
		return;
	}
	/* checked by the cache (its header, a checksum of the whole); a size of another struct is
	 * rejected as well, and the offsets made again */
	if (!disk_cache__read_file(c, name, sizeof(*out), &buf, &len) && len == sizeof(*out)) {
		memcpy(out, buf, sizeof(*out));
		free(buf);
		*kept = true;
		return;
	}
	free(buf);
	unwind_kernel_fields(out);
	/* none found (no kernel BTF): nothing worth keeping */
	if (out->ok)
		disk_cache__write_file(c, name, out, sizeof(*out));
}

void unwind_attach_syscalls(struct bpf_program *prog, struct bpf_link **link)
{
	/* not loaded: frame pointers, or no saved user registers to walk from; or attached by
	 * the skeleton (libbpf's own raw_tp handler, where ours was not registered) */
	if (bpf_program__fd(prog) < 0 || *link)
		return;
	*link = bpf_program__attach_raw_tracepoint(prog, "sys_enter");
	if (!*link)
		p_info("unwind: cannot trace sys_enter (%s): samples inside execve() or exit() "
		       "keep their leaf alone", strerror(errno));
}

int unwinder__handle_event(void *ctx, void *data, size_t size)
{
	struct unwinder *u = ctx;
	const struct unw_event *e = data;

	if (size < sizeof(*e))
		return 0;
	if (e->type == UNW_EV_LOAD_TABLE && e->table < u->nr_files) {
		u->files[e->table]->tgid = e->tgid;
		queue_load(u, e->table);
	} else if (e->type == UNW_EV_REFRESH_PROC) {
		if (!syms_cache__snapshot(u->sc, e->tgid))
			add_process(u, e->tgid, 0);
	} else if (e->type == UNW_EV_FILE) {
		name_file(u, e);
	}
	return 0;
}

int unwinder__proc_event(void *ctx, void *data, size_t size)
{
	struct unwinder *u = ctx;
	const struct proc_seen_event *e = data;

	if (size < sizeof(*e))
		return 0;
	/* announced by a sample before an exec told since (a shell's child, read after it ran
	 * ls): the exec dropped the list the BPF side held, and the exec's next sample announces
	 * the process again, for the list written then to stay.  Written now, it would be
	 * written twice (under process churn, half of the announcements). */
	if (syms_cache__execed_after(u->sc, e->tgid, e->time)) {
		u->announcements_stale++;
		return 0;
	}
	if (!syms_cache__snapshot(u->sc, e->tgid))
		add_process(u, e->tgid, e->time);
	return 0;
}

void unwind_summary_line(const struct unwinder *u, bool folded, char *buf, size_t size)
{
	buf[0] = '\0';
	if (u)
		unwinder__summary(u, buf, size);
	if (buf[0] && folded && (verbose || strstr(buf, "no CFI in")))
		fprintf(stderr, "bpfprof: unwind: %s\n", buf);
}

/* ---- inspection ---- */

int unwinder__table_of(const struct unwinder *u, __u64 dev, __u64 ino)
{
	struct uw_file *f = hashtab_get(&u->files_by_key, dev, ino);

	return f ? (int)f->id : -ENOENT;
}

const struct unw_table *unwinder__table(const struct unwinder *u, __u32 id)
{
	return id < UNWIND_MAX_TABLES ? &u->tables[id] : NULL;
}

const struct unw_row *unwinder__rows(const struct unwinder *u)
{
	return u->rows;
}

const struct unw_proc *unwinder__proc(const struct unwinder *u, __u32 tgid)
{
	struct uw_proc_rec *r = hashtab_get(&u->procs, tgid, 0);

	return r && r->in_map ? r->copy : NULL;
}

void unwinder__touch(struct unwinder *u, __u32 id, __u64 ns)
{
	if (id < UNWIND_MAX_TABLES)
		u->tables[id].last_used = ns;
}

static void usage_locked(const struct unwinder *u, struct unwind_usage *out)
{
	memset(out, 0, sizeof(*out));
	out->rows_used = u->rows_used;
	out->rows_cap = u->nr_rows;
	out->files = u->nr_files;
	out->loads = u->loads;
	out->loads_cached = u->loads_cached;
	out->evictions = u->evictions;
	out->deferrals = u->deferrals;
	out->procs = u->nr_procs;
	out->procs_written = u->procs_stored;
	out->refreshes_same = u->refreshes_same;
	out->announcements_stale = u->announcements_stale;
	out->heap_bytes = sizeof(*u) + u->cap_jobs * sizeof(*u->jobs) +
			  u->cap_free * sizeof(*u->free) +
			  (u->files_by_key.cap + u->procs.cap) * sizeof(struct hashtab_entry) +
			  (u->sorted ? UNWIND_MAX_TABLES * sizeof(*u->sorted) : 0) +
			  (u->tables_len ? 0 : malloc_usable_size(u->tables)) +
			  malloc_usable_size(u->rows);
	for (__u32 i = 0; i < u->nr_files; i++) {
		out->tables_loaded += u->files[i]->loaded;
		out->tables_no_cfi += u->files[i]->no_cfi;
		out->heap_bytes += malloc_usable_size(u->files[i]) +
				   malloc_usable_size(u->files[i]->path);
	}
	for (size_t i = 0; i < u->procs.cap; i++) {
		const struct uw_proc_rec *r = u->procs.slots[i].val;

		if (r)
			out->heap_bytes += malloc_usable_size((void *)r) +
					   malloc_usable_size(r->copy);
	}
	if (u->walks_fd >= 0) {
		int ncpu = libbpf_num_possible_cpus(), zero = 0;
		struct unw_walk *w = ncpu > 0 ? calloc(ncpu, sizeof(*w)) : NULL;

		if (w && !bpf_map_lookup_elem(u->walks_fd, &zero, w))
			for (int c = 0; c < ncpu; c++)
				for (int i = 0; i < UNW_STAT_NR; i++)
					out->stats[i] += w[c].stats[i];
		free(w);
	}
}

/* The lock guards mutable state inside a logically read-only call. */
static void lock_const(const struct unwinder *u)
{
	pthread_mutex_lock((pthread_mutex_t *)&u->lock);
}

static void unlock_const(const struct unwinder *u)
{
	pthread_mutex_unlock((pthread_mutex_t *)&u->lock);
}

void unwinder__usage(const struct unwinder *u, struct unwind_usage *out)
{
	lock_const(u);
	usage_locked(u, out);
	unlock_const(u);
}

static int add_count(char *buf, size_t size, int n, const char *what, __u64 v, bool *first)
{
	if (!v || n < 0 || (size_t)n >= size)
		return n;
	n += snprintf(buf + n, size - n, "%s%s %llu", *first ? "" : ", ", what,
		      (unsigned long long)v);
	*first = false;
	return n;
}

void unwinder__summary(const struct unwinder *u, char *buf, size_t size)
{
	struct unwind_usage us;
	const __u64 *s = us.stats;
	__u64 frames;
	bool first = true;
	int n = 0, shown = 0;

	lock_const(u);
	usage_locked(u, &us);
	buf[0] = '\0';
	frames = s[UNW_STAT_FRAMES_EH] + s[UNW_STAT_FRAMES_SIGNAL] + s[UNW_STAT_FRAMES_FP] +
		 s[UNW_STAT_FRAMES_PENDING];
	if (!s[UNW_STAT_STACKS] && !s[UNW_STAT_NO_PROC] && !s[UNW_STAT_NO_REGS])
		goto unlock;
	n = snprintf(buf, size, "%llu stacks walked, %llu frames: %.1f%% from tables, %.1f%% by frame pointer",
		     (unsigned long long)s[UNW_STAT_STACKS], (unsigned long long)frames,
		     frames ? 100.0 * (s[UNW_STAT_FRAMES_EH] + s[UNW_STAT_FRAMES_SIGNAL]) / frames : 0.0,
		     frames ? 100.0 * (s[UNW_STAT_FRAMES_FP] + s[UNW_STAT_FRAMES_PENDING]) / frames : 0.0);
	if (s[UNW_STAT_FRAMES_SIGNAL] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " (%llu through signal frames)",
			      (unsigned long long)s[UNW_STAT_FRAMES_SIGNAL]);
	if (s[UNW_STAT_FRAMES_PENDING] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " (%llu while tables loaded)",
			      (unsigned long long)s[UNW_STAT_FRAMES_PENDING]);
	if (s[UNW_STAT_SYSCALL] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, "; %llu stacks inside execve() or exit() as walked at "
			      "its entry (the memory since replaced or released)",
			      (unsigned long long)s[UNW_STAT_SYSCALL]);
	if (s[UNW_STAT_EARLY] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, "; %llu stacks walked before the process was loaded, "
			      "through the kernel's mappings", (unsigned long long)s[UNW_STAT_EARLY]);
	if (s[UNW_STAT_NO_PROC] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, "; %llu stacks %s before the process was known",
			      (unsigned long long)s[UNW_STAT_NO_PROC],
			      u->method == UNWIND_EH ? "cut to the leaf" : "by frame pointer");
	if (s[UNW_STAT_NO_REGS] && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, "; %llu stacks by frame pointer for want of user "
			      "registers (kernel without bpf_task_pt_regs)",
			      (unsigned long long)s[UNW_STAT_NO_REGS]);
	if (s[UNW_STAT_END_NO_CFI] + s[UNW_STAT_END_PENDING] + s[UNW_STAT_END_UNSUPPORTED] +
	    s[UNW_STAT_END_READ] + s[UNW_STAT_END_BAD_FRAME] + s[UNW_STAT_END_UNMAPPED] +
	    s[UNW_STAT_END_MAX_DEPTH] + s[UNW_STAT_REQ_LOST] + s[UNW_STAT_END_VMA_BUSY] +
	    s[UNW_STAT_END_EXITED] && n > 0 &&
	    (size_t)n < size) {
		n += snprintf(buf + n, size - n, "; ended early: ");
		n = add_count(buf, size, n, "no CFI", s[UNW_STAT_END_NO_CFI], &first);
		n = add_count(buf, size, n, "table loading", s[UNW_STAT_END_PENDING], &first);
		n = add_count(buf, size, n, "unsupported CFI", s[UNW_STAT_END_UNSUPPORTED], &first);
		n = add_count(buf, size, n, "unreadable stack", s[UNW_STAT_END_READ], &first);
		n = add_count(buf, size, n, "process exiting (its memory released)",
			      s[UNW_STAT_END_EXITED], &first);
		n = add_count(buf, size, n, "bad frame", s[UNW_STAT_END_BAD_FRAME], &first);
		n = add_count(buf, size, n, "unmapped pc", s[UNW_STAT_END_UNMAPPED], &first);
		n = add_count(buf, size, n, "process not loaded yet (one kernel mapping lookup per "
			      "timer sample)", s[UNW_STAT_END_VMA_BUSY], &first);
		n = add_count(buf, size, n, "max depth", s[UNW_STAT_END_MAX_DEPTH], &first);
		n = add_count(buf, size, n, "lost table requests", s[UNW_STAT_REQ_LOST], &first);
	}
	for (__u32 i = 0; i < u->nr_files && shown < 3; i++) {
		const struct uw_file *f = u->files[i];
		const char *base = strrchr(f->path, '/');

		if (!f->no_cfi || n < 0 || (size_t)n >= size)
			continue;
		n += snprintf(buf + n, size - n, "%s%s (%s)", shown ? ", " : "; no CFI in: ",
			      base ? base + 1 : f->path, f->why);
		shown++;
	}
unlock:
	unlock_const(u);
}

void unwinder__print_usage(const struct unwinder *u, FILE *out)
{
	struct unwind_usage us;

	lock_const(u);
	usage_locked(u, &us);
	fprintf(out, "bpfprof: unwind tables: %llu of %llu KB used by %u tables (%u files seen, %u "
		"without usable CFI); %llu loads, %llu evictions, %llu loads put off (no room but tables "
		"in use); %u processes (%u KB of mappings; %llu lists written, not: %llu the same as "
		"held, %llu announced before an exec)\n",
		(unsigned long long)(us.rows_used * sizeof(struct unw_row) >> 10),
		(unsigned long long)(us.rows_cap * sizeof(struct unw_row) >> 10), us.tables_loaded,
		us.files, us.tables_no_cfi, (unsigned long long)us.loads,
		(unsigned long long)us.evictions, (unsigned long long)us.deferrals, us.procs,
		(unsigned)(us.procs * sizeof(struct unw_proc) >> 10),
		(unsigned long long)us.procs_written, (unsigned long long)us.refreshes_same,
		(unsigned long long)us.announcements_stale);
	if (u->cache) {
		struct unw_cache_stats cs;

		unw_cache__stats(u->cache, &cs);
		fprintf(out, "bpfprof: unwind cache %s: %llu tables from the cache, %llu built and "
			"stored, %llu rejected (corrupt or foreign) and rebuilt, %llu evicted\n",
			unw_cache__dir(u->cache), (unsigned long long)us.loads_cached,
			(unsigned long long)cs.stores, (unsigned long long)cs.rejected,
			(unsigned long long)cs.evicted);
	} else {
		fprintf(out, "bpfprof: unwind cache: not used\n");
	}
	for (__u32 i = 0; i < u->nr_files; i++)
		if (u->files[i]->no_cfi)
			fprintf(out, "bpfprof: unwind: no table for %s: %s\n", u->files[i]->path,
				u->files[i]->why);
	unlock_const(u);
}
