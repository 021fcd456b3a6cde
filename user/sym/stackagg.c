// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "core/hashtab.h"
#include "core/slotidx.h"
#include "stacks.h"
#include "sym/stackagg.h"

/* Merged stacks are paths of a call-path tree (a trie): a node is a frame id under its caller's
 * node, so a new stack adds only the frames where it leaves the stacks before it (a 2-minute
 * system-wide run under process churn: 65,000 stacks of 1.5 million frames in 204,000 nodes).  A
 * path starts at a context node (command, waker command, event, cgroup and, by thread, thread:
 * what tells stacks apart besides frames), then the frames outermost first, then, for a stack
 * with a waker, the WAKER_MARK and the waker's frames. */
#define NO_NODE STACK_TREE_NONE
#define WAKER_MARK STACK_TREE_WAKER


struct stack_agg {
	__u64 serial;              /* stack_agg__serial() */
	bool by_tid;
	bool leaf_addrs;           /* stack_agg__keep_leaf_addrs() */
	bool all_addrs;            /* stack_agg__keep_addrs() */
	bool sealed;               /* stack_agg__seal(): no index to add with */
	size_t max_nodes;          /* stack_agg__bound(), 0 for none */
	__u64 cut_samples, cut_adds; /* samples kept at a caller's path at the bound */
	struct stack_names *strs;  /* every name and module, stored once */
	struct frame *frames;      /* distinct frames, by id; strings from strs */
	size_t nr_frames, frames_cap;
	struct hashtab frame_index; /* (frame hash, probe) -> id + 1 */
	struct stack_tree_ctx *ctxs;
	size_t nr_ctxs, ctxs_cap;
	struct hashtab ctx_index;  /* (context hash, probe) -> context node + 1 */
	struct stack_tree_node *nodes;
	size_t nr_nodes, nodes_cap;
	struct slotidx children;   /* (parent, frame) -> node */
	struct stack_tree_entry *entries; /* in the order first seen */
	size_t nr, cap;
	size_t nr_ids;             /* frames of every entry, waker frames too */
	/* stack_agg__samples(): made on demand */
	struct stack_sample *out;
	__u32 *out_ids;
	size_t nr_out;
};

void stack_agg__keep_leaf_addrs(struct stack_agg *a)
{
	a->leaf_addrs = true;
}

void stack_agg__keep_addrs(struct stack_agg *a)
{
	a->all_addrs = true;
}

void stack_agg__bound(struct stack_agg *a, size_t max_nodes)
{
	a->max_nodes = max_nodes;
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

	if (a->sealed)
		return -EROFS;
	for (probe = 0; (slot = hashtab_get(&a->frame_index, h, probe)); probe++)
		if (same_frame(&a->frames[(uintptr_t)slot - 1], f) &&
		    (!exact || (a->frames[(uintptr_t)slot - 1].addr == f->addr &&
				a->frames[(uintptr_t)slot - 1].offset == f->offset)))
			return (uintptr_t)slot - 1;
	/* at the bound no node can hold a new frame: the frame table and the strings stop growing
	 * with the tree (they grew on by the frames of stacks cut anyway) */
	if (a->max_nodes && a->nr_nodes >= a->max_nodes)
		return -ENOSPC;
	if (ARRAY_GROW(a->frames, a->frames_cap, a->nr_frames + 1))
		return -ENOMEM;
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

/* Grows an array of *cap elements of size to hold need: doubling while small, by an eighth once
 * it is large, so that a long run's biggest arrays do not hold half their size unused.  0 or
 * -ENOMEM (the array left as it was). */
static int grow_array(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;
	void *n;

	while (c < need)
		c += c < 65536 ? c : c / 8;
	if (c == *cap)
		return 0;
	n = realloc(*v, c * size);
	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

/* A child's key: its parent and frame. */
struct child_key {
	__u32 parent, frame;
};

static bool child_eq(const void *ctx, __u32 row, const void *key)
{
	const struct stack_tree_node *n = &((const struct stack_agg *)ctx)->nodes[row];
	const struct child_key *k = key;

	return n->parent == k->parent && n->frame == k->frame;
}

/* Every node but the roots (context nodes), which have no parent. */
static bool child_rehash(const void *ctx, __u32 row, __u64 *h)
{
	const struct stack_tree_node *n = &((const struct stack_agg *)ctx)->nodes[row];

	*h = slotidx_hash2(n->parent, n->frame);
	return n->parent != NO_NODE;
}

static long new_node(struct stack_agg *a, __u32 parent, __u32 frame)
{
	if (a->nr_nodes >= NO_NODE - 1)
		return -ENOMEM;
	if (grow_array((void **)&a->nodes, &a->nodes_cap, a->nr_nodes + 1, sizeof(*a->nodes), 4096))
		return -ENOMEM;
	a->nodes[a->nr_nodes] = (struct stack_tree_node){ .parent = parent, .frame = frame,
						   .entry = NO_NODE };
	return a->nr_nodes++;
}

/* The node of frame under parent, made on first sight.  -ENOSPC at the bound, -ENOMEM or the
 * node. */
static long child(struct stack_agg *a, __u32 parent, __u32 frame)
{
	struct child_key k = { parent, frame };
	size_t i;
	long n;

	/* three quarters full at most: 4 bytes a slot, 5.3 to 8 bytes a node */
	if (slotidx_reserve(&a->children, a->nr_nodes, 3, 4096, child_rehash, a))
		return -ENOMEM;
	i = slotidx_find(&a->children, slotidx_hash2(parent, frame), child_eq, a, &k);
	if (a->children.slots[i])
		return a->children.slots[i] - 1;
	if (a->max_nodes && a->nr_nodes >= a->max_nodes)
		return -ENOSPC;
	n = new_node(a, parent, frame);
	if (n >= 0)
		a->children.slots[i] = n + 1;
	return n;
}

static __u64 ctx_hash(const struct stack_tree_ctx *c)
{
	__u64 h = mix(0xcbf29ce484222325ULL, c->event);

	h = hash_str(h, c->comm);
	h = hash_str(h, c->waker_comm);
	h = hash_str(h, c->cgroup);
	return mix(h, c->tid);
}

static bool same_ctx(const struct stack_tree_ctx *x, const struct stack_tree_ctx *y)
{
	return x->event == y->event && x->tid == y->tid && !strcmp(x->comm, y->comm) &&
	       !strcmp(x->waker_comm, y->waker_comm) && x->cgroup == y->cgroup; /* interned */
}

/* The context node of s, made on first sight.  -ENOMEM or the node. */
static long ctx_node(struct stack_agg *a, const struct stack_sample *s)
{
	struct stack_tree_ctx c = { .event = s->event, .tid = a->by_tid ? s->tid : 0 };
	__u64 h, probe;
	void *slot;
	int err = 0;
	long n;

	memcpy(c.comm, s->comm, TASK_COMM_LEN - 1);
	memcpy(c.waker_comm, s->waker_comm, TASK_COMM_LEN - 1);
	c.cgroup = intern(a, s->cgroup, &err);
	if (err)
		return err;
	h = ctx_hash(&c);
	for (probe = 0; (slot = hashtab_get(&a->ctx_index, h, probe)); probe++) {
		__u32 node = (uintptr_t)slot - 1;

		if (same_ctx(&a->ctxs[a->nodes[node].frame], &c))
			return node;
	}
	if (grow_array((void **)&a->ctxs, &a->ctxs_cap, a->nr_ctxs + 1, sizeof(*a->ctxs), 64))
		return -ENOMEM;
	n = new_node(a, NO_NODE, a->nr_ctxs);
	if (n < 0 || hashtab_put(&a->ctx_index, h, probe, (void *)(uintptr_t)(n + 1)))
		return -ENOMEM;
	a->ctxs[a->nr_ctxs++] = c;
	return n;
}

/* Follows s's frames (its waker's when waker) from node, frames given inline or as ids into
 * another aggregation's table, or as ids of a's own (own); a sample's own last frame is its
 * leaf.  -ENOMEM, -ENOSPC where the bound left no room for a node the path needs (*last: the
 * node it got to), or the node the frames end at (nodes made on the way stay: they are only
 * unused). */
static long add_path(struct stack_agg *a, long node, const struct stack_sample *s, bool waker,
		     bool own, long *last)
{
	__u32 n = waker ? s->nr_waker_frames : s->nr_frames;
	__u32 exact_from = n;

	*last = node;
	if (node < 0 || !n)
		return node;
	if (waker && (node = child(a, node, WAKER_MARK)) < 0)
		return node;
	/* the leaf and the frames it is inlined into: all at the leaf's address */
	if (!own && a->all_addrs)
		exact_from = 0;
	else if (!own && !waker && a->leaf_addrs)
		for (exact_from = n - 1; exact_from > 0 && stack_sample_frame(s, exact_from)->inlined;
		     exact_from--)
			;
	for (__u32 i = 0; i < n && node >= 0; i++) {
		long id;

		if (own)
			id = waker ? s->waker_frame_ids[i] : s->frame_ids[i];
		else
			id = frame_id(a, waker ? stack_sample_waker_frame(s, i) :
						 stack_sample_frame(s, i), i >= exact_from);
		if (own && id == STACK_AGG_NO_FRAME)
			id = -ENOSPC;
		*last = node;
		node = id < 0 ? id : child(a, node, id);
	}
	return node;
}

static void drop_output(struct stack_agg *a)
{
	free(a->out);
	free(a->out_ids);
	a->out = NULL;
	a->out_ids = NULL;
	a->nr_out = 0;
}

static int add_sample(struct stack_agg *a, const struct stack_sample *s, bool own)
{
	long node, last, waker;
	bool cut;

	if (a->sealed)
		return -EROFS;
	drop_output(a);
	node = add_path(a, ctx_node(a, s), s, false, own, &last);
	/* at the bound: kept under the longest path known (its waker's dropped), and counted */
	cut = node == -ENOSPC;
	if (cut)
		node = last;
	else if ((waker = add_path(a, node, s, true, own, &last)) != -ENOSPC)
		node = waker;
	else
		cut = true;
	if (node < 0)
		return node;
	if (cut) {
		a->cut_samples += s->value;
		a->cut_adds++;
	}
	if (a->nodes[node].entry != NO_NODE) {
		a->entries[a->nodes[node].entry].value += s->value;
		return 0;
	}
	if (a->nr >= NO_NODE - 1 ||
	    grow_array((void **)&a->entries, &a->cap, a->nr + 1, sizeof(*a->entries), 256))
		return -ENOMEM;
	a->entries[a->nr] = (struct stack_tree_entry){ .node = node, .pid = s->pid, .tid = s->tid,
						.value = s->value };
	a->nodes[node].entry = a->nr++;
	a->nr_ids += s->nr_frames + s->nr_waker_frames;
	return 0;
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

size_t stack_agg__nr_nodes(const struct stack_agg *a)
{
	return a->nr_nodes;
}

__u64 stack_agg__serial(const struct stack_agg *a)
{
	return a->serial;
}

const struct stack_sample *stack_agg__samples(struct stack_agg *a, size_t *nr)
{
	struct stack_tree t;
	size_t at = 0;

	if (a->out || !a->nr) {
		*nr = a->nr_out;
		return a->out;
	}
	a->out = calloc(a->nr, sizeof(*a->out));
	a->out_ids = malloc((a->nr_ids ? a->nr_ids : 1) * sizeof(*a->out_ids));
	if (!a->out || !a->out_ids) {
		drop_output(a);
		return *nr = 0, NULL;
	}
	/* the paths' frame ids and the frame table as they are: no frame is copied */
	stack_agg__tree(a, &t);
	for (size_t i = 0; i < a->nr; i++) {
		stack_tree_sample(&t, i, &a->out_ids[at], &a->out[i]);
		at += a->out[i].nr_frames + a->out[i].nr_waker_frames;
	}
	a->nr_out = a->nr;
	*nr = a->nr_out;
	return a->out;
}

void stack_agg__tree(const struct stack_agg *a, struct stack_tree *t)
{
	*t = (struct stack_tree){ .nodes = a->nodes, .nr_nodes = a->nr_nodes,
				  .entries = a->entries, .nr_entries = a->nr,
				  .ctxs = a->ctxs, .frames = a->frames };
}

void stack_agg__stats(const struct stack_agg *a, struct stack_agg_stats *st)
{
	st->entries = a->nr;
	st->nodes = a->nr_nodes;
	st->frames = a->nr_frames;
	st->ids = a->nr_ids;
	st->strings = stack_names__count(a->strs);
	st->max_nodes = a->max_nodes;
	st->cut_samples = a->cut_samples;
	st->cut_adds = a->cut_adds;
}

size_t stack_agg__bytes(const struct stack_agg *a)
{
	return a->frames_cap * sizeof(*a->frames) + a->nodes_cap * sizeof(*a->nodes) +
	       slotidx_bytes(&a->children) + a->cap * sizeof(*a->entries) +
	       a->ctxs_cap * sizeof(*a->ctxs) +
	       (a->ctx_index.cap + a->frame_index.cap) * sizeof(struct hashtab_entry);
}

void stack_agg__mem(const struct stack_agg *a, struct stack_agg_mem *m)
{
	*m = (struct stack_agg_mem){};
	if (!a)
		return;
	m->tree = sizeof(*a) + a->nodes_cap * sizeof(*a->nodes) + slotidx_bytes(&a->children) +
		  a->cap * sizeof(*a->entries) + a->ctxs_cap * sizeof(*a->ctxs) +
		  a->ctx_index.cap * sizeof(struct hashtab_entry);
	m->frames = a->frames_cap * sizeof(*a->frames) +
		    a->frame_index.cap * sizeof(struct hashtab_entry);
	m->strings = stack_names__bytes(a->strs);
	m->samples = a->out ? a->nr_out * sizeof(*a->out) + a->nr_ids * sizeof(*a->out_ids) : 0;
}

void stack_agg__seal(struct stack_agg *a)
{
	if (!a)
		return;
	a->sealed = true;
	slotidx_free(&a->children);
	hashtab_clear(&a->ctx_index, NULL);
	hashtab_clear(&a->frame_index, NULL);
}

void stack_agg__free(struct stack_agg *a)
{
	if (!a)
		return;
	drop_output(a);
	free(a->entries);
	free(a->nodes);
	slotidx_free(&a->children);
	free(a->ctxs);
	free(a->frames);
	hashtab_clear(&a->ctx_index, NULL);
	hashtab_clear(&a->frame_index, NULL);
	stack_names__free(a->strs);
	free(a);
}
