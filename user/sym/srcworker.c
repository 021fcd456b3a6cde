// SPDX-License-Identifier: GPL-2.0
/* The questions are kept in an array (a ticket is an index in it) under one lock; the worker
 * takes them in the order asked, looks each up without the lock (libdw's parse of a unit not
 * seen before takes up to a millisecond) and publishes a copy of the chain under it.  The
 * chain's strings are the srclines' own, which stay until srclines__free(). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "core/common.h"
#include "core/grow.h"
#include "core/hashtab.h"
#include "out/stack.h"
#include "sym/srcworker.h"

/* The worker's nice value above the process's: under CPU contention the draining thread
 * (nice 0 beside it) gets three times its share. */
#define WORKER_NICE 5

struct question {
	const char *path;            /* interned in paths */
	int path_id;
	__u64 at;
	bool vaddr;
	int err;                     /* -EAGAIN until answered */
	struct srcline_chain *chain; /* the answer's copy, or NULL */
};

struct srcworker {
	struct srclines *lines;
	pthread_mutex_t lock;
	pthread_cond_t asked, answered;
	pthread_t thread;
	bool running, stopping;
	bool held;                   /* questions queued, the thread not woken (srcworker__hold()) */
	struct question *q;
	size_t nr, cap;
	struct hashtab index;        /* (at, path | vaddr) -> ticket + 1 */
	struct stack_names *paths;
	bool *no_debug;              /* by path id: the file has no debug info (answered so) */
	size_t no_debug_cap;
	__u32 *queue;                /* tickets to answer: [head, tail) */
	size_t head, tail, queue_cap;
	size_t pending;              /* asked, not answered */
	bool harvest;                /* srclines__harvest() has more to do */
	size_t answer_bytes;         /* the answers' chains held */
	size_t lines_bytes;          /* srclines__bytes(), as the thread last saw it */
	__u64 cpu_ns;                /* the thread's, once it ended */
	pid_t tid;                   /* the thread's, once it set its nice value */
	int nice_base;               /* the process's nice value then */
};

struct srcworker *srcworker__new(struct srclines *s)
{
	struct srcworker *w = calloc(1, sizeof(*w));
	pthread_condattr_t monotonic;

	if (!w)
		return NULL;
	w->paths = stack_names__new();
	if (!w->paths) {
		free(w);
		return NULL;
	}
	w->lines = s;
	pthread_mutex_init(&w->lock, NULL);
	/* (the idle wait's deadline: a clock that no one sets) */
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&w->asked, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_cond_init(&w->answered, NULL);
	return w;
}

/* The answer to a question: a copy of the chain the srclines gave.  0 or -errno. */
static int look_up(struct srclines *s, const char *path, bool vaddr, __u64 at,
		   struct srcline_chain **out)
{
	const struct srcline_chain *c;
	size_t size;
	int err;

	*out = NULL;
	err = vaddr ? srclines__lookup(s, path, at, &c) : srclines__lookup_offset(s, path, at, &c);
	if (err)
		return err;
	size = srcline_chain_size(c);
	*out = malloc(size);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, c, size);
	return 0;
}

static void answer(struct srcworker *w, __u32 t, int err, struct srcline_chain *c)
{
	size_t id = w->q[t].path_id;

	/* the file's other addresses are answered at once (a stripped compiler's thousands) */
	if (err == -ENOENT && !ARRAY_GROW_ZEROED(w->no_debug, w->no_debug_cap, id + 1))
		w->no_debug[id] = true;
	w->q[t].err = err;
	w->q[t].chain = c;
	w->answer_bytes += c ? srcline_chain_size(c) : 0;
	w->lines_bytes = srclines__bytes(w->lines);
	w->pending--;
	pthread_cond_broadcast(&w->answered);
}

/* Whether what libdw parsed went unread since stale (srclines__stale_at(); 0: never). */
static bool stale_now(__u64 stale)
{
	return stale && now_ns() >= stale;
}

static void *work(void *arg)
{
	struct srcworker *w = arg;
	struct srcline_chain *c;
	struct timespec ts;
	const char *path;
	int nice_now;
	bool vaddr, more;
	__u64 at;
	__u32 t;
	int err;

	/* named for top and perf: its CPU is what inline chains cost */
	pthread_setname_np(pthread_self(), "bpfprof-lines");
	/* below the draining thread, which loses samples when it falls behind; the keys that
	 * wait for answers only wait longer */
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	pthread_mutex_lock(&w->lock);
	if (!errno && !setpriority(PRIO_PROCESS, syscall(SYS_gettid), nice_now + WORKER_NICE)) {
		w->tid = syscall(SYS_gettid);
		w->nice_base = nice_now;
	}
	for (;;) {
		/* idle: the files dear to open put in the persistent cache, a unit at a time */
		while (w->head == w->tail && !w->stopping && w->harvest) {
			pthread_mutex_unlock(&w->lock);
			more = srclines__harvest(w->lines);
			pthread_mutex_lock(&w->lock);
			w->harvest = more;
		}
		/* idle: what libdw parsed given back once it went unread a while */
		while (w->head == w->tail && !w->stopping) {
			__u64 stale = srclines__stale_at(w->lines);

			if (!stale) {
				pthread_cond_wait(&w->asked, &w->lock);
			} else if (stale_now(stale)) {
				pthread_mutex_unlock(&w->lock);
				srclines__release(w->lines);
				pthread_mutex_lock(&w->lock);
			} else {
				ts.tv_sec = stale / 1000000000;
				ts.tv_nsec = stale % 1000000000;
				pthread_cond_timedwait(&w->asked, &w->lock, &ts);
			}
		}
		if (w->head == w->tail)
			break; /* stopping, and every question answered */
		t = w->queue[w->head++];
		if (w->head == w->tail)
			w->head = w->tail = 0;
		path = w->q[t].path;
		vaddr = w->q[t].vaddr;
		at = w->q[t].at;
		pthread_mutex_unlock(&w->lock);
		err = look_up(w->lines, path, vaddr, at, &c);
		if (stale_now(srclines__stale_at(w->lines)))
			srclines__release(w->lines);
		pthread_mutex_lock(&w->lock);
		answer(w, t, err, c);
		w->harvest = true; /* (a lookup may have opened a file) */
	}
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		w->cpu_ns += ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	w->tid = 0; /* (its number may name another thread soon) */
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Question t queued for the thread (started if it is not running): 0 or -errno. */
static int queue_question(struct srcworker *w, __u32 t)
{
	int err;

	if (ARRAY_GROW(w->queue, w->queue_cap, w->tail + 1))
		return -ENOMEM;
	if (!w->running) {
		err = pthread_create(&w->thread, NULL, work, w);
		if (err)
			return -err;
		w->running = true;
	}
	w->queue[w->tail++] = t;
	if (!w->held)
		pthread_cond_signal(&w->asked);
	return 0;
}

/* The ticket of a new question of path (interned), asked of the thread (or answered here when
 * no thread can start).  Under the lock.  -ENOMEM or the ticket. */
static long new_question(struct srcworker *w, const char *path, int path_id, bool vaddr,
			 __u64 at)
{
	struct srcline_chain *c;
	int err;

	if (ARRAY_GROW(w->q, w->cap, w->nr + 1))
		return -ENOMEM;
	if (hashtab_put(&w->index, at, (uintptr_t)path | vaddr, (void *)(uintptr_t)(w->nr + 1)))
		return -ENOMEM;
	w->q[w->nr] = (struct question){ path, path_id, at, vaddr, -EAGAIN, NULL };
	w->pending++;
	err = queue_question(w, w->nr);
	if (err && w->running) {
		/* the thread looks up in w->lines: never here beside it */
		answer(w, w->nr, err, NULL);
	} else if (err) {
		pthread_mutex_unlock(&w->lock);
		err = look_up(w->lines, path, vaddr, at, &c);
		pthread_mutex_lock(&w->lock);
		answer(w, w->nr, err, c);
	}
	return w->nr++;
}

int srcworker__ask(struct srcworker *w, const char *path, bool vaddr, __u64 at, bool wait,
		   const struct srcline_chain **chain, __u32 *ticket)
{
	const char *ipath;
	void *hit;
	long t;
	int id, err;

	pthread_mutex_lock(&w->lock);
	/* the interned copy is the one key a file has (its address, its low bit vaddr) */
	id = stack_names__intern(w->paths, path, strlen(path));
	ipath = id < 0 ? NULL : stack_names__str(w->paths, id);
	if (ipath && (size_t)id < w->no_debug_cap && w->no_debug[id]) {
		pthread_mutex_unlock(&w->lock);
		return -ENOENT;
	}
	hit = ipath ? hashtab_get(&w->index, at, (uintptr_t)ipath | vaddr) : NULL;
	t = !ipath ? -ENOMEM :
	    hit ? (long)((uintptr_t)hit - 1) : new_question(w, ipath, id, vaddr, at);
	if (t < 0) {
		pthread_mutex_unlock(&w->lock);
		return t;
	}
	/* a caller that waits (a drain without the memo: --pprof, offcpu) has the thread at its
	 * own nice value meanwhile, or under load each answer waits for a thread that gets a
	 * third of the CPU its asker would (raising a thread's priority needs CAP_SYS_NICE: else
	 * the wait is as long as before) */
	if (wait && w->q[t].err == -EAGAIN)
		pthread_cond_signal(&w->asked); /* (queued while held) */
	if (wait && w->q[t].err == -EAGAIN && w->tid &&
	    !setpriority(PRIO_PROCESS, w->tid, w->nice_base)) {
		while (w->q[t].err == -EAGAIN)
			pthread_cond_wait(&w->answered, &w->lock);
		setpriority(PRIO_PROCESS, w->tid, w->nice_base + WORKER_NICE);
	}
	while (wait && w->q[t].err == -EAGAIN)
		pthread_cond_wait(&w->answered, &w->lock);
	err = w->q[t].err;
	*chain = w->q[t].chain;
	pthread_mutex_unlock(&w->lock);
	if (ticket)
		*ticket = t;
	return err;
}

int srcworker__answer(struct srcworker *w, __u32 ticket, const struct srcline_chain **chain)
{
	int err = -ENOENT;

	pthread_mutex_lock(&w->lock);
	if (ticket < w->nr) {
		err = w->q[ticket].err;
		*chain = w->q[ticket].chain;
	}
	pthread_mutex_unlock(&w->lock);
	return err;
}

void srcworker__hold(struct srcworker *w, bool hold)
{
	pthread_mutex_lock(&w->lock);
	w->held = hold;
	if (!hold && w->head != w->tail)
		pthread_cond_signal(&w->asked);
	pthread_mutex_unlock(&w->lock);
}

void srcworker__settle(struct srcworker *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->pending)
		pthread_cond_signal(&w->asked); /* (queued while held) */
	while (w->pending)
		pthread_cond_wait(&w->answered, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

bool srcworker__trim(struct srcworker *w, size_t max)
{
	bool trim;

	pthread_mutex_lock(&w->lock);
	trim = w->nr > max && !w->pending;
	if (trim) {
		for (size_t i = 0; i < w->nr; i++)
			free(w->q[i].chain);
		w->nr = w->answer_bytes = 0;
		hashtab_reset(&w->index);
	}
	pthread_mutex_unlock(&w->lock);
	return trim;
}

void srcworker__stop(struct srcworker *w, __u64 *cpu_ns)
{
	bool running;

	pthread_mutex_lock(&w->lock);
	running = w->running;
	w->stopping = true;
	pthread_cond_signal(&w->asked);
	pthread_mutex_unlock(&w->lock);
	if (running)
		pthread_join(w->thread, NULL);
	w->running = w->stopping = false;
	if (cpu_ns)
		*cpu_ns = w->cpu_ns;
}

void srcworker__held(struct srcworker *w, size_t *answers, size_t *bytes)
{
	pthread_mutex_lock(&w->lock);
	*answers = w->nr;
	*bytes = w->answer_bytes;
	pthread_mutex_unlock(&w->lock);
}

size_t srcworker__bytes(struct srcworker *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = sizeof(*w) + w->answer_bytes + w->cap * sizeof(*w->q) +
	    w->index.cap * sizeof(struct hashtab_entry) + w->queue_cap * sizeof(*w->queue) +
	    w->no_debug_cap * sizeof(*w->no_debug) + stack_names__bytes(w->paths) + w->lines_bytes;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void srcworker__free(struct srcworker *w)
{
	if (!w)
		return;
	srcworker__stop(w, NULL);
	for (size_t i = 0; i < w->nr; i++)
		free(w->q[i].chain);
	free(w->q);
	free(w->queue);
	hashtab_clear(&w->index, NULL);
	stack_names__free(w->paths);
	free(w->no_debug);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->asked);
	pthread_cond_destroy(&w->answered);
	free(w);
}
