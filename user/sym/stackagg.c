// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/hashtab.h"
#include "stacks.h"
#include "sym/stackagg.h"

/* A merged stack, its frames as ids in the frame table: 4 bytes a frame while the run goes on
 * (a struct frame is 40), which is what keeps a long run's memory to its distinct stacks. */
struct agg_entry {
	char comm[TASK_COMM_LEN], waker_comm[TASK_COMM_LEN];
	__u32 pid, tid, event;
	__u32 nr_frames, nr_waker_frames;
	size_t ids; /* index in the id arena: frames, then waker frames */
	const char *cgroup; /* from strs, or NULL */
	__u64 value;
};

struct stack_agg {
	__u64 serial;              /* stack_agg__serial() */
	bool by_tid;
	bool leaf_addrs;           /* stack_agg__keep_leaf_addrs() */
	struct stack_names *strs;  /* every name and module, stored once */
	struct frame *frames;      /* distinct frames, by id; strings from strs */
	size_t nr_frames, frames_cap;
	struct hashtab frame_index; /* (frame hash, probe) -> id + 1 */
	__u32 *ids;                /* the entries' frame ids */
	size_t nr_ids, ids_cap;
	struct agg_entry *entries;
	size_t nr, cap;
	struct hashtab index;      /* (entry hash, probe) -> entry index + 1 */
	struct stack_sample *out;  /* stack_agg__samples(): made on demand */
	size_t nr_out;
};

void stack_agg__keep_leaf_addrs(struct stack_agg *a)
{
	a->leaf_addrs = true;
}

struct stack_agg *stack_agg__new(bool by_tid)
{
	struct stack_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	static __u64 made;

	a->serial = __atomic_add_fetch(&made, 1, __ATOMIC_RELAXED);
	a->by_tid = by_tid;
	a->strs = stack_names__new();
	if (!a->strs) {
		free(a);
		return NULL;
	}
	return a;
}

static __u64 mix(__u64 h, __u64 v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

/* Eight bytes a step: a drain hashes every frame of every stack it reads, and C++ names run to
 * hundreds of bytes (a byte a step, this was a tenth of bpfprof's CPU under a compiler loop). */
static __u64 hash_str(__u64 h, const char *s)
{
	size_t len;
	__u64 w = 0;

	if (!s)
		return mix(h, 0);
	len = strlen(s);
	for (; len >= 8; len -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = mix(h, w);
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, len);
	return mix(mix(h, w), 1 + len);
}

/* Frames are the same frame when they name the same function in the same file.  Unresolved
 * frames are one frame per file, as folded output and flame graphs show them ("[cc1]"): in a
 * stripped program every return address would be a frame of its own, and a long run would hold
 * a stack per address chain (a 10-minute churn run: over 100,000, most in stripped compilers).
 * They keep neither address nor offset (the report prints them "[cc1]"); named frames keep the
 * first address seen. */
static bool same_str(const char *x, const char *y)
{
	return x ? y && !strcmp(x, y) : !y;
}

/* The build-id too: a file rebuilt under the same name while the run goes on is another file.
 * Source lines, where DWARF gave them, tell frames of one function apart: a line a frame. */
static bool same_frame(const struct frame *x, const struct frame *y)
{
	return x->kernel == y->kernel && same_str(x->name, y->name) &&
	       same_str(x->module, y->module) && same_str(x->build_id, y->build_id) &&
	       x->inlined == y->inlined && x->line == y->line && same_str(x->srcfile, y->srcfile);
}

static __u64 frame_hash(const struct frame *f)
{
	__u64 h = mix(0xcbf29ce484222325ULL, f->kernel);

	h = hash_str(h, f->name);
	h = hash_str(h, f->module);
	h = mix(mix(h, f->inlined), f->line);
	h = hash_str(h, f->srcfile);
	return hash_str(h, f->build_id);
}

/* The aggregation's copy of s (NULL stays NULL); NULL with *err set on ENOMEM. */
static const char *intern(struct stack_agg *a, const char *s, int *err)
{
	int id;

	if (!s || *err)
		return NULL;
	id = stack_names__intern(a->strs, s, strlen(s));
	if (id < 0) {
		*err = id;
		return NULL;
	}
	return stack_names__str(a->strs, id);
}

/* The id of frame f in the frame table, added on first sight; exact: told apart by address
 * too.  -ENOMEM or the id. */
static long frame_id(struct stack_agg *a, const struct frame *f, bool exact)
{
	__u64 h = exact ? mix(frame_hash(f) ^ 0x5a5a, f->addr) : frame_hash(f), probe;
	struct frame copy = *f;
	void *slot;
	int err = 0;

	for (probe = 0; (slot = hashtab_get(&a->frame_index, h, probe)); probe++)
		if (same_frame(&a->frames[(uintptr_t)slot - 1], f) &&
		    (!exact || (a->frames[(uintptr_t)slot - 1].addr == f->addr &&
				a->frames[(uintptr_t)slot - 1].offset == f->offset)))
			return (uintptr_t)slot - 1;
	if (a->nr_frames == a->frames_cap) {
		size_t cap = a->frames_cap ? a->frames_cap * 2 : 1024;
		struct frame *n = realloc(a->frames, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->frames = n;
		a->frames_cap = cap;
	}
	copy.name = intern(a, f->name, &err);
	copy.module = intern(a, f->module, &err);
	copy.build_id = intern(a, f->build_id, &err);
	copy.srcfile = intern(a, f->srcfile, &err);
	if (!copy.name && !exact)
		copy.addr = copy.offset = 0;
	if (err || hashtab_put(&a->frame_index, h, probe, (void *)(uintptr_t)(a->nr_frames + 1)))
		return -ENOMEM;
	a->frames[a->nr_frames] = copy;
	return a->nr_frames++;
}

/* Appends the ids of s's frames (its waker's when waker) to the arena, frames given inline or
 * as ids into another aggregation's table; a sample's own last frame is its leaf.  0 or -ENOMEM
 * (the arena is left as it was). */
static int add_ids(struct stack_agg *a, const struct stack_sample *s, bool waker, bool own)
{
	__u32 n = waker ? s->nr_waker_frames : s->nr_frames;
	size_t start = a->nr_ids;
	__u32 exact_from = n;
	bool leaf = !waker;

	if (a->nr_ids + n > a->ids_cap) {
		size_t cap = a->ids_cap ? a->ids_cap : 4096;
		__u32 *ids;

		while (cap < a->nr_ids + n)
			cap *= 2;
		ids = realloc(a->ids, cap * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		a->ids = ids;
		a->ids_cap = cap;
	}
	/* ids of this aggregation's own table (stack_agg__add_own()): nothing to look up */
	if (own) {
		if (n)
			memcpy(&a->ids[a->nr_ids], waker ? s->waker_frame_ids : s->frame_ids,
			       n * sizeof(*a->ids));
		a->nr_ids += n;
		return 0;
	}
	/* the leaf and the frames it is inlined into: all at the leaf's address */
	if (leaf && a->leaf_addrs && n)
		for (exact_from = n - 1; exact_from > 0 && stack_sample_frame(s, exact_from)->inlined;
		     exact_from--)
			;
	for (__u32 i = 0; i < n; i++) {
		long id = frame_id(a, waker ? stack_sample_waker_frame(s, i) : stack_sample_frame(s, i),
				   i >= exact_from);

		if (id < 0) {
			a->nr_ids = start;
			return id;
		}
		a->ids[a->nr_ids++] = id;
	}
	return 0;
}

static __u64 entry_hash(const struct stack_agg *a, const struct agg_entry *e)
{
	__u64 h = mix(0xcbf29ce484222325ULL, e->event);
	__u32 n = e->nr_frames + e->nr_waker_frames;

	h = hash_str(h, e->comm);
	h = hash_str(h, e->waker_comm);
	h = hash_str(h, e->cgroup);
	h = mix(h, a->by_tid ? e->tid : 0);
	h = mix(h, e->nr_frames);
	for (__u32 i = 0; i < n; i++)
		h = mix(h, a->ids[e->ids + i]);
	return h;
}

static bool same_entry(const struct stack_agg *a, const struct agg_entry *x,
		       const struct agg_entry *y)
{
	return x->event == y->event && !strcmp(x->comm, y->comm) &&
	       !strcmp(x->waker_comm, y->waker_comm) && (!a->by_tid || x->tid == y->tid) &&
	       x->cgroup == y->cgroup && /* interned */
	       x->nr_frames == y->nr_frames && x->nr_waker_frames == y->nr_waker_frames &&
	       /* no frame yet, no arena: nothing to compare */
	       (!(x->nr_frames + x->nr_waker_frames) ||
		!memcmp(&a->ids[x->ids], &a->ids[y->ids],
			(x->nr_frames + x->nr_waker_frames) * sizeof(__u32)));
}

static void drop_output(struct stack_agg *a)
{
	free(a->out);
	a->out = NULL;
	a->nr_out = 0;
}

static int add_sample(struct stack_agg *a, const struct stack_sample *s, bool own)
{
	struct agg_entry e = { .pid = s->pid, .tid = s->tid, .event = s->event, .value = s->value,
			       .nr_frames = s->nr_frames, .nr_waker_frames = s->nr_waker_frames,
			       .ids = a->nr_ids };
	__u64 h, probe;
	void *slot;
	int err = 0;

	drop_output(a);
	memcpy(e.comm, s->comm, TASK_COMM_LEN - 1);
	memcpy(e.waker_comm, s->waker_comm, TASK_COMM_LEN - 1);
	e.cgroup = intern(a, s->cgroup, &err);
	err = err ?: add_ids(a, s, false, own);
	if (!err && (err = add_ids(a, s, true, own)))
		a->nr_ids = e.ids;
	if (err)
		return err;
	h = entry_hash(a, &e);
	/* distinct entries with the same hash take the next probe number */
	for (probe = 0; (slot = hashtab_get(&a->index, h, probe)); probe++) {
		struct agg_entry *old = &a->entries[(uintptr_t)slot - 1];

		if (same_entry(a, old, &e)) {
			old->value += e.value;
			a->nr_ids = e.ids; /* the ids just added are the old entry's */
			return 0;
		}
	}
	if (a->nr == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct agg_entry *n = realloc(a->entries, cap * sizeof(*n));

		if (!n)
			goto nomem;
		a->entries = n;
		a->cap = cap;
	}
	if (hashtab_put(&a->index, h, probe, (void *)(uintptr_t)(a->nr + 1)))
		goto nomem;
	a->entries[a->nr++] = e;
	return 0;
nomem:
	a->nr_ids = e.ids;
	return -ENOMEM;
}

int stack_agg__add(struct stack_agg *a, const struct stack_sample *s)
{
	return add_sample(a, s, false);
}

int stack_agg__add_own(struct stack_agg *a, const struct stack_sample *s)
{
	return add_sample(a, s, true);
}

bool stack_agg__exact_leaves(const struct stack_agg *a)
{
	return a->leaf_addrs;
}

long stack_agg__frame_id(struct stack_agg *a, const struct frame *f)
{
	drop_output(a); /* the table may move */
	return frame_id(a, f, false);
}

const struct frame *stack_agg__frames(const struct stack_agg *a)
{
	return a->frames;
}

size_t stack_agg__nr_frames(const struct stack_agg *a)
{
	return a->nr_frames;
}

__u64 stack_agg__serial(const struct stack_agg *a)
{
	return a->serial;
}

const struct stack_sample *stack_agg__samples(struct stack_agg *a, size_t *nr)
{
	if (a->out || !a->nr) {
		*nr = a->nr_out;
		return a->out;
	}
	a->out = calloc(a->nr, sizeof(*a->out));
	if (!a->out)
		return *nr = 0, NULL;
	/* the entries' ids and the frame table as they are: no frame is copied */
	for (size_t i = 0; i < a->nr; i++) {
		const struct agg_entry *e = &a->entries[i];
		struct stack_sample *s = &a->out[i];

		memcpy(s->comm, e->comm, TASK_COMM_LEN);
		memcpy(s->waker_comm, e->waker_comm, TASK_COMM_LEN);
		s->pid = e->pid;
		s->tid = e->tid;
		s->event = e->event;
		s->value = e->value;
		s->cgroup = e->cgroup;
		s->nr_frames = e->nr_frames;
		s->nr_waker_frames = e->nr_waker_frames;
		/* not NULL, even for a stack without frames: frame_ids says the frames are ids */
		s->frame_ids = a->ids ? &a->ids[e->ids] : (const __u32 *)a;
		s->waker_frame_ids = a->ids ? &a->ids[e->ids + e->nr_frames] : (const __u32 *)a;
		s->frame_table = a->frames;
	}
	a->nr_out = a->nr;
	*nr = a->nr_out;
	return a->out;
}

size_t stack_agg__bytes(const struct stack_agg *a)
{
	return a->frames_cap * sizeof(*a->frames) + a->ids_cap * sizeof(*a->ids) +
	       a->cap * sizeof(*a->entries) +
	       (a->index.cap + a->frame_index.cap) * sizeof(struct hashtab_entry);
}

void stack_agg__free(struct stack_agg *a)
{
	if (!a)
		return;
	drop_output(a);
	free(a->entries);
	free(a->ids);
	free(a->frames);
	hashtab_clear(&a->index, NULL);
	hashtab_clear(&a->frame_index, NULL);
	stack_names__free(a->strs);
	free(a);
}
