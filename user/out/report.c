/* perf-report-like text: a (Command, Shared Object, Symbol) table with Children and Self, each row
 * followed by perf's call-graph tree, drawn the way `perf report --stdio` draws it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "core/slotidx.h"
#include "out/report.h"

#define NO_NODE UINT32_MAX
#define GRAPH_MARGIN 12 /* perf indents every call-graph line by 12 columns */

/* A row (or a call-graph frame, or a waker's "woken by"): what tells it apart is its command,
 * kind, file and name, each an id of an interned string (a name is held once, however many
 * commands have it).  72 bytes: a long run's report has an entry for each (command, frame). */
struct entry {
	__u64 self, children;
	const char *dso;     /* short module name, from the samples */
	const char *src;     /* an inlined function's source file (base name), or NULL */
	__u32 last_sample;   /* 1 + index of the last sample counted: recursion counts once */
	__u32 occ_start, nr_occ;
	__u32 name;          /* display name: an id in report.names */
	__u32 comm;          /* command as --sort tells them apart: an id in report.comms */
	__u32 module;        /* file as --sort tells them apart: an id in report.modules */
	__u32 line_lo, line_hi;
	char kind;           /* 'k' kernel, 'u' user, 'w' "woken by" */
	bool row;            /* in a sampled stack, not only in a waker's */
};

/* The report reads the stacks as a call-path tree (sym/stackagg.h): what it keeps is sized by the
 * tree's nodes, not by the frames of every stack (a drained run's 1.5 million frames are 200,000
 * nodes), and no stack is copied out of the tree.  Samples given as an array are made into such a
 * tree first. */
struct report {
	const struct stack_tree *t;
	int event;            /* only the stacks of this event, or -1 */
	struct report_opts o;
	__u64 total;
	/* what entries are told apart by, interned: display names, commands (empty where --sort
	 * leaves them out, as entries' comm), files (empty likewise) */
	struct stack_names *names, *comms, *modules;
	struct stack_buf key; /* a name being made */
	struct entry *entries;
	size_t nr_entries, cap_entries;
	/* entries by (kind, comm, module, name) while they are made: entry id + 1, open
	 * addressing, half full at most */
	struct slotidx by_key;
	/* by tree frame id, while entries are made: its name's and file's ids, NO_NODE until met
	 * (making a frame's name, printf and interning, was half of writing the report) */
	__u32 *frame_name, *frame_module;
	size_t nr_frames;
	/* by tree node: its entry (a context node: its empty stack's "[unknown]"), NO_NODE for a
	 * node no stack of the report goes through */
	__u32 *ent;
	/* by tree node: the value of the samples whose own stack (not the waker's) goes through
	 * it; a context node's: of its empty stack only (node_sum()).  4 bytes a node where the
	 * tree's total fits (a long run's samples), else 8 (offcpu's microseconds) */
	__u32 *sum32;
	__u64 *sum64;
	__u32 *first_child, *next_sibling; /* the nodes with a sum, under their parent */
	/* the tree's entries: where the sampled stack ends (before a waker's, or at the context
	 * node for an empty one; --no-children only), and the context (wakers only) */
	__u32 *leaf, *ectx;
	/* wakers (offcpu --waker), NULL without: by node, the first tree entry + 1 whose stack ends
	 * there and has a waker, by tree entry the next one; by context its "woken by" entry */
	__u32 *wfirst, *wnext, *woken;
	/* children: the nodes where each entry is the outermost on a stack, entries[k].occ_start
	 * on; --no-children: the tree entries whose stack ends in it */
	__u32 *occ;
	__u32 *path;          /* a stack's nodes, innermost first, as index_entry() walks it */
	size_t path_cap;
};

/* One group of a tree being grown: tree nodes (downwards) or cursors (upwards). */
struct item {
	__u32 node;  /* the tree node at this depth, NO_NODE past the path's end */
	__u32 key;   /* its entry, sorted by */
	__u64 value;
};

struct tnode {
	__u32 id;
	__u32 first_child, next_sibling;
	__u64 value;
};

struct tree {
	struct tnode *nodes;
	size_t nr, cap;
};

struct printer {
	FILE *out;
	const struct report *r;
	const struct tree *t;
	bool *mask;   /* per depth: more siblings follow, so draw its "|" */
	int margin;
	struct stack_buf line;
	int err;
};

static const struct frame unknown_frame = { .module = "[unknown]" };

static double pct(const struct report *r, __u64 v)
{
	return r->total ? 100.0 * v / r->total : 0.0;
}

static bool hidden(const struct report *r, __u64 v)
{
	return r->o.percent_limit > 0 && pct(r, v) < r->o.percent_limit;
}

static bool branch_hidden(const struct report *r, __u64 v)
{
	double limit = r->o.call_graph_limit > r->o.percent_limit ? r->o.call_graph_limit :
								     r->o.percent_limit;

	return limit > 0 && pct(r, v) < limit;
}

static int cmp_u64_desc(__u64 a, __u64 b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

/* ---- entries ---- */

static int display_name(struct stack_buf *b, const struct frame *f, bool srcline)
{
	const char *mod;

	if (f->name && f->name[0])
		return stack_buf_add(b, f->name, strlen(f->name)) ?:
		       stack_frame_decorate(b, f, true, srcline);
	mod = stack_module_short(f->module);
	if (!strcmp(mod, "[unknown]"))
		return stack_buf_add(b, "[unknown]", 9);
	/* no address: unresolved frames of a file merged into one (drained runs) */
	if (!f->addr && !f->offset)
		return stack_buf_printf(b, "[%s]", mod);
	return stack_buf_printf(b, "%s+0x%llx", mod, (unsigned long long)f->offset);
}

/* A missing module is "[unknown]" like an unknown one: one entry, not two. */
static const char *module_key(const struct frame *f)
{
	return f->module && f->module[0] ? f->module : "[unknown]";
}

static unsigned sort_keys(const struct report *r)
{
	return r->o.sort ? r->o.sort | REPORT_SORT_SYM : REPORT_SORT_ALL;
}

/* The lines of an inlined function's frames, as one range where they are all in one file: an
 * inlined function has no symbol, and its lines are where to look for it. */
static void add_lines(struct entry *e, const struct frame *f)
{
	const char *base;

	if (!f || !f->inlined || !f->srcfile || !f->line)
		return;
	base = strrchr(f->srcfile, '/');
	base = base ? base + 1 : f->srcfile;
	if (!e->src) {
		e->src = base;
		e->line_lo = e->line_hi = f->line;
	} else if (!strcmp(e->src, base)) {
		e->line_lo = f->line < e->line_lo ? f->line : e->line_lo;
		e->line_hi = f->line > e->line_hi ? f->line : e->line_hi;
	}
}

static const char *entry_sym(const struct report *r, const struct entry *e)
{
	return stack_names__str(r->names, e->name);
}

static const char *entry_comm(const struct report *r, const struct entry *e)
{
	return stack_names__str(r->comms, e->comm);
}

/* What an entry is told apart by. */
struct entry_key {
	__u32 name, comm, module;
	char kind;
};

static __u64 entry_hash(const struct entry_key *k)
{
	return ((__u64)k->name << 32 | k->comm) * 0x9e3779b97f4a7c15ULL ^
	       ((__u64)k->module << 8 | (unsigned char)k->kind) * 0xc2b2ae3d27d4eb4fULL;
}

static bool entry_eq(const void *ctx, __u32 row, const void *key)
{
	const struct entry *e = &((const struct report *)ctx)->entries[row];
	const struct entry_key *k = key;

	return e->name == k->name && e->comm == k->comm && e->module == k->module &&
	       e->kind == k->kind;
}

static bool entry_rehash(const void *ctx, __u32 row, __u64 *h)
{
	const struct entry *e = &((const struct report *)ctx)->entries[row];

	*h = entry_hash(&(struct entry_key){ e->name, e->comm, e->module, e->kind });
	return true;
}

/* Id of the entry (kind, comm id, module id, name id), created on first sight for frame f (NULL
 * for a "woken by"). */
static int entry_of(struct report *r, char kind, int comm, int module, int name,
		    const struct frame *f, bool row)
{
	struct entry_key k = { name, comm, module, kind };
	struct entry *e;
	size_t slot;

	if (comm < 0 || module < 0 || name < 0)
		return comm < 0 ? comm : module < 0 ? module : name;
	if (slotidx_reserve(&r->by_key, r->nr_entries, 2, 1024, entry_rehash, r))
		return -ENOMEM;
	slot = slotidx_find(&r->by_key, entry_hash(&k), entry_eq, r, &k);
	if (r->by_key.slots[slot]) {
		e = &r->entries[r->by_key.slots[slot] - 1];
		e->row |= row;
		add_lines(e, f);
		return r->by_key.slots[slot] - 1;
	}
	if (r->nr_entries >= NO_NODE - 1 || ARRAY_GROW(r->entries, r->cap_entries, r->nr_entries + 1))
		return -ENOMEM;
	e = &r->entries[r->nr_entries];
	*e = (struct entry){ .dso = f ? stack_module_short(f->module) : "", .name = name,
			     .comm = comm, .module = module, .kind = kind, .row = row };
	add_lines(e, f);
	r->by_key.slots[slot] = ++r->nr_entries;
	return r->nr_entries - 1;
}

/* The id of command comm as entries tell commands apart: --sort without comm has one for all. */
static int comm_id(struct report *r, const char comm[16])
{
	return stack_names__intern(r->comms, comm,
				   sort_keys(r) & REPORT_SORT_COMM ? strnlen(comm, 16) : 0);
}

/* The ids of frame f's display name and file as entries tell them apart. */
static int frame_ids(struct report *r, const struct frame *f, int *module, int *name)
{
	const char *mod = sort_keys(r) & REPORT_SORT_DSO ? module_key(f) : "";
	int err;

	r->key.len = 0;
	err = display_name(&r->key, f, r->o.srcline);
	*name = err ?: stack_names__intern(r->names, r->key.s, r->key.len);
	*module = stack_names__intern(r->modules, mod, strlen(mod));
	return *name < 0 ? *name : *module < 0 ? *module : 0;
}

/* Id of the entry of frame f in a stack of command comm (its comm_id() cid), created on first
 * sight.  Commands or files that --sort leaves out are not told apart. */
static int entry_id(struct report *r, int cid, const struct frame *f, bool row)
{
	int module, name, err = frame_ids(r, f, &module, &name);

	return err ?: entry_of(r, f->kernel ? 'k' : 'u', cid, module, name, f, row);
}

/* The "woken by COMM" entry of waker command comm. */
static int woken_id(struct report *r, const char comm[16])
{
	int err;

	r->key.len = 0;
	err = stack_buf_printf(&r->key, "woken by %.*s", (int)strnlen(comm, 16), comm);
	return err ?: entry_of(r, 'w', comm_id(r, comm), stack_names__intern(r->modules, "", 0),
			       stack_names__intern(r->names, r->key.s, r->key.len), NULL, false);
}

static bool is_ctx(const struct report *r, __u32 n)
{
	return r->t->nodes[n].parent == NO_NODE;
}

static __u64 node_sum(const struct report *r, __u32 n)
{
	return r->sum32 ? r->sum32[n] : r->sum64[n];
}

/* No sum overflows its width: none is above the tree's total. */
static void add_sum(struct report *r, __u32 n, __u64 v)
{
	if (r->sum32)
		r->sum32[n] += v;
	else
		r->sum64[n] += v;
}

/* entry_id() of node n's frame in a stack of command cid, its name and file through
 * r->frame_name and frame_module: a frame recurs in many nodes (the outer ones of a program's
 * stacks, the kernel's paths). */
static int frame_entry_id(struct report *r, __u32 n, int cid, bool row)
{
	__u32 fid = r->t->nodes[n].frame;
	const struct frame *f = &r->t->frames[fid];
	int module, name, err;

	if (r->frame_name[fid] == NO_NODE) {
		err = frame_ids(r, f, &module, &name);
		if (err)
			return err;
		r->frame_name[fid] = name;
		r->frame_module[fid] = module;
	}
	return entry_of(r, f->kernel ? 'k' : 'u', cid, r->frame_module[fid], r->frame_name[fid],
			f, row);
}

/* Tree entry i: its frames' entries (in the order the stacks and their frames come, outermost
 * first, as entries are numbered), its value counted into its nodes and entries.  Children:
 * once per stack that holds the entry, however often it recurses; self: where it is the
 * innermost frame. */
static int index_entry(struct report *r, size_t i)
{
	const struct stack_tree *t = r->t;
	const struct stack_tree_ctx *ctx;
	__u64 v = t->entries[i].value;
	size_t len = 0, k, first = 0;
	__u32 n, c, leaf;
	int id, cid;

	if (r->leaf)
		r->leaf[i] = NO_NODE;
	if (!v)
		return 0;
	/* the path, innermost first, up to its context node */
	for (n = t->entries[i].node;; n = t->nodes[n].parent) {
		if (ARRAY_GROW(r->path, r->path_cap, len + 1))
			return -ENOMEM;
		r->path[len++] = n;
		if (is_ctx(r, n))
			break;
	}
	c = r->path[len - 1];
	ctx = &t->ctxs[t->nodes[c].frame];
	if (r->event >= 0 && ctx->event != (__u32)r->event)
		return 0;
	for (k = 0; k + 1 < len; k++)
		if (t->nodes[r->path[k]].frame == STACK_TREE_WAKER) {
			first = k + 1;
			break;
		}
	/* the sampled stack is path[first..len - 1), its leaf first; an empty one is "[unknown]" */
	leaf = first + 1 < len ? r->path[first] : c;
	if (r->leaf)
		r->leaf[i] = leaf;
	if (r->ectx)
		r->ectx[i] = t->nodes[c].frame;
	/* --sort without comm: one command for all */
	cid = comm_id(r, ctx->comm);
	if (cid < 0)
		return cid;
	if (leaf == c) {
		id = entry_id(r, cid, &unknown_frame, true);
		if (id < 0)
			return id;
		r->ent[c] = id;
		add_sum(r, c, v);
	}
	for (k = len - 1; k-- > first;) {
		n = r->path[k];
		if (r->ent[n] == NO_NODE) {
			id = frame_entry_id(r, n, cid, true);
			if (id < 0)
				return id;
			r->ent[n] = id;
		}
		add_sum(r, n, v);
	}
	r->total += v;
	r->entries[r->ent[leaf]].self += v;
	for (k = first; k < (leaf == c ? len : len - 1); k++) {
		struct entry *e = &r->entries[r->ent[r->path[k]]];

		if (e->last_sample == i + 1)
			continue;
		e->last_sample = i + 1;
		e->children += v;
	}
	if (!first)
		return 0;
	/* the waker's: "woken by COMM", then its frames innermost first */
	id = woken_id(r, ctx->waker_comm);
	if (id < 0)
		return id;
	r->woken[t->nodes[c].frame] = id;
	cid = comm_id(r, ctx->waker_comm);
	for (k = 0; k + 1 < first && cid >= 0; k++) {
		id = frame_entry_id(r, r->path[k], cid, false);
		if (id < 0)
			return id;
		r->ent[r->path[k]] = id;
	}
	if (cid < 0)
		return cid;
	r->wnext[i] = r->wfirst[leaf];
	r->wfirst[leaf] = i + 1;
	return 0;
}

/* Arrays by node and by tree entry; the waker's only where there is one. */
static int alloc_index(struct report *r)
{
	const struct stack_tree *t = r->t;
	size_t nn = t->nr_nodes ?: 1, ne = t->nr_entries ?: 1, nc = 1, nf = 1, i;
	bool wakers = false;

	for (i = 0; i < t->nr_nodes; i++) {
		__u32 f = t->nodes[i].frame;

		if (is_ctx(r, i))
			nc = f + 1 > nc ? f + 1 : nc;
		else if (f == STACK_TREE_WAKER)
			wakers = true;
		else
			nf = f + 1 > nf ? f + 1 : nf;
	}
	r->ent = malloc(nn * sizeof(*r->ent));
	if (stack_tree_total(t) <= UINT32_MAX)
		r->sum32 = calloc(nn, sizeof(*r->sum32));
	else
		r->sum64 = calloc(nn, sizeof(*r->sum64));
	r->first_child = malloc(nn * sizeof(*r->first_child));
	r->next_sibling = malloc(nn * sizeof(*r->next_sibling));
	if (!r->o.children)
		r->leaf = malloc(ne * sizeof(*r->leaf));
	if (wakers) {
		r->ectx = malloc(ne * sizeof(*r->ectx));
		r->wfirst = calloc(nn, sizeof(*r->wfirst));
		r->wnext = calloc(ne, sizeof(*r->wnext));
		r->woken = calloc(nc, sizeof(*r->woken));
	}
	r->frame_name = malloc(nf * sizeof(*r->frame_name));
	r->frame_module = malloc(nf * sizeof(*r->frame_module));
	r->nr_frames = nf;
	r->names = stack_names__new();
	r->comms = stack_names__new();
	r->modules = stack_names__new();
	if (!r->ent || (!r->sum32 && !r->sum64) || !r->first_child || !r->next_sibling ||
	    (!r->o.children && !r->leaf) ||
	    (wakers && (!r->ectx || !r->wfirst || !r->wnext || !r->woken)) || !r->frame_name ||
	    !r->frame_module || !r->names || !r->comms || !r->modules)
		return -ENOMEM;
	memset(r->frame_name, 0xff, nf * sizeof(*r->frame_name));
	memset(r->ent, 0xff, nn * sizeof(*r->ent));
	memset(r->first_child, 0xff, nn * sizeof(*r->first_child));
	return 0;
}

/* The next node of a subtree below root, depth first, n's children first unless skip; NO_NODE
 * at the end. */
static __u32 walk_next(const struct report *r, __u32 root, __u32 n, bool skip)
{
	if (!skip && r->first_child[n] != NO_NODE)
		return r->first_child[n];
	for (; n != root; n = r->t->nodes[n].parent)
		if (r->next_sibling[n] != NO_NODE)
			return r->next_sibling[n];
	return NO_NODE;
}

/* Children: each entry's outermost nodes on the stacks (their subtrees are its call graph), found
 * depth first with the entries on the path counted; with record set, noted in r->occ.
 * --no-children: the tree entries whose stack ends in the entry. */
static void find_occurrences(struct report *r, bool record)
{
	const struct stack_tree *t = r->t;
	struct entry *e;
	size_t i;
	__u32 n;

	if (!r->o.children) {
		for (i = 0; i < t->nr_entries; i++) {
			if (r->leaf[i] == NO_NODE)
				continue;
			e = &r->entries[r->ent[r->leaf[i]]];
			if (record)
				r->occ[e->occ_start + e->nr_occ] = i;
			e->nr_occ++;
		}
		return;
	}
	for (i = 0; i < t->nr_nodes; i++) {
		if (!is_ctx(r, i))
			continue;
		/* an empty stack: "[unknown]" alone */
		if (node_sum(r, i)) {
			e = &r->entries[r->ent[i]];
			if (record)
				r->occ[e->occ_start + e->nr_occ] = i;
			e->nr_occ++;
		}
		/* last_sample counts the entry's nodes on the path */
		for (n = r->first_child[i]; n != NO_NODE;) {
			__u32 next;

			e = &r->entries[r->ent[n]];
			if (!e->last_sample++) {
				if (record)
					r->occ[e->occ_start + e->nr_occ] = n;
				e->nr_occ++;
			}
			if (r->first_child[n] != NO_NODE) {
				n = r->first_child[n];
				continue;
			}
			/* leaving n, and each parent whose last child it was */
			for (next = NO_NODE; n != i; n = t->nodes[n].parent) {
				r->entries[r->ent[n]].last_sample--;
				if (r->next_sibling[n] != NO_NODE) {
					next = r->next_sibling[n];
					break;
				}
			}
			n = next;
		}
	}
}

/* The index of entries, the frames' ids, the path and the name being made: not needed once every
 * entry is made.  The entries' array keeps no room it will not use. */
static void drop_making(struct report *r)
{
	struct entry *fit;

	slotidx_free(&r->by_key);
	free(r->frame_name);
	free(r->frame_module);
	free(r->path);
	stack_buf_free(&r->key);
	r->frame_name = r->frame_module = r->path = NULL;
	r->nr_frames = r->path_cap = 0;
	if (r->nr_entries && r->nr_entries < r->cap_entries &&
	    (fit = realloc(r->entries, r->nr_entries * sizeof(*fit)))) {
		r->entries = fit;
		r->cap_entries = r->nr_entries;
	}
}

static int build_report(struct report *r)
{
	const struct stack_tree *t = r->t;
	size_t i, at = 0;
	int err;

	err = alloc_index(r);
	for (i = 0; !err && i < t->nr_entries; i++)
		err = index_entry(r, i);
	if (err)
		return err;
	/* what only making the entries needed goes before the call graphs are drawn */
	drop_making(r);
	/* the nodes of the samples' own stacks under their parents (a waker's have no sum) */
	for (i = t->nr_nodes; i-- > 0;) {
		__u32 p = t->nodes[i].parent;

		r->next_sibling[i] = NO_NODE;
		if (node_sum(r, i) && p != NO_NODE) {
			r->next_sibling[i] = r->first_child[p];
			r->first_child[p] = i;
		}
	}
	for (i = 0; i < r->nr_entries; i++)
		r->entries[i].last_sample = 0;
	find_occurrences(r, false);
	for (i = 0; i < r->nr_entries; i++) {
		r->entries[i].occ_start = at;
		at += r->entries[i].nr_occ;
		r->entries[i].nr_occ = 0;
	}
	r->occ = malloc((at ? at : 1) * sizeof(*r->occ));
	if (!r->occ)
		return -ENOMEM;
	find_occurrences(r, true);
	return 0;
}

static void free_report(struct report *r)
{
	drop_making(r);
	stack_names__free(r->names);
	stack_names__free(r->comms);
	stack_names__free(r->modules);
	free(r->entries);
	free(r->ent);
	free(r->sum32);
	free(r->sum64);
	free(r->first_child);
	free(r->next_sibling);
	free(r->leaf);
	free(r->ectx);
	free(r->wfirst);
	free(r->wnext);
	free(r->woken);
	free(r->occ);
}

/* ---- drawing trees like perf ---- */

/* Lines are built whole and their trailing blanks cut: perf pads with spaces nobody can see. */
static void emit_line(struct printer *p)
{
	while (p->line.len && p->line.s[p->line.len - 1] == ' ')
		p->line.len--;
	if (p->line.len)
		fwrite(p->line.s, 1, p->line.len, p->out);
	fputc('\n', p->out);
	p->line.len = 0;
}

static void add(struct printer *p, const char *s, size_t len)
{
	if (!p->err)
		p->err = stack_buf_add(&p->line, s, len);
}

#define ADD(p, lit) add(p, lit, sizeof(lit) - 1)

static void add_margin(struct printer *p)
{
	static const char blanks[] = "                                ";

	p->line.len = 0;
	add(p, blanks, p->margin < (int)sizeof(blanks) - 1 ? p->margin : (int)sizeof(blanks) - 1);
}

/* The line perf draws before each branch: the "|" of every level still open. */
static void graph_line(struct printer *p, int depth)
{
	int i;

	add_margin(p);
	for (i = 0; i < depth; i++) {
		if (p->mask[i])
			ADD(p, "|          ");
		else
			ADD(p, "           ");
	}
	emit_line(p);
}

/* One frame of a branch; the first frame of a branch carries "--PCT%--". */
static void chain_line(struct printer *p, int depth, __u32 node, bool first)
{
	const struct tnode *n = &p->t->nodes[node];
	const char *sym = entry_sym(p->r, &p->r->entries[n->id]);
	int i;

	add_margin(p);
	for (i = 0; i < depth; i++) {
		if (p->mask[i])
			ADD(p, "|");
		else
			ADD(p, " ");
		if (first && i == depth - 1) {
			if (!p->err)
				p->err = stack_buf_printf(&p->line, "--%.2f%%--", pct(p->r, n->value));
		} else {
			ADD(p, "          ");
		}
	}
	add(p, sym, strlen(sym));
	emit_line(p);
}

/* perf folds a chain into one branch while nothing else happens: a single child, and no sample
 * ending in the frame. */
static __u32 run_next(const struct tree *t, __u32 node)
{
	const struct tnode *n = &t->nodes[node];
	__u32 c = n->first_child;

	if (c == NO_NODE || t->nodes[c].next_sibling != NO_NODE || t->nodes[c].value != n->value)
		return NO_NODE;
	return c;
}

static int cmp_node(const void *a, const void *b, void *ctx)
{
	const struct printer *p = ctx;
	const struct tnode *x = &p->t->nodes[*(const __u32 *)a], *y = &p->t->nodes[*(const __u32 *)b];
	int c = cmp_u64_desc(x->value, y->value);

	c = c ?: strcmp(entry_sym(p->r, &p->r->entries[x->id]),
			entry_sym(p->r, &p->r->entries[y->id]));
	return c ?: (x->id > y->id) - (x->id < y->id);
}

/* The visible children of node, largest first; *nr gets their count.  NULL on no memory. */
static __u32 *sorted_children(struct printer *p, __u32 node, size_t *nr)
{
	size_t cnt = 0;
	__u32 c, *kids;

	for (c = p->t->nodes[node].first_child; c != NO_NODE; c = p->t->nodes[c].next_sibling)
		cnt++;
	kids = malloc((cnt ? cnt : 1) * sizeof(*kids));
	if (!kids)
		return NULL;
	cnt = 0;
	for (c = p->t->nodes[node].first_child; c != NO_NODE; c = p->t->nodes[c].next_sibling)
		if (!branch_hidden(p->r, p->t->nodes[c].value))
			kids[cnt++] = c;
	qsort_r(kids, cnt, sizeof(*kids), cmp_node, p);
	*nr = cnt;
	return kids;
}

/* perf's __callchain__fprintf_graph: each child branch of node, one 11-column step per depth. */
static void print_level(struct printer *p, __u32 node, int depth)
{
	size_t k, nr;
	__u32 *kids = sorted_children(p, node, &nr), c;

	if (!kids) {
		p->err = -ENOMEM;
		return;
	}
	for (k = 0; k < nr && !p->err; k++) {
		graph_line(p, depth);
		if (k == nr - 1)
			p->mask[depth - 1] = false;
		c = kids[k];
		chain_line(p, depth, c, true);
		while (run_next(p->t, c) != NO_NODE) {
			c = run_next(p->t, c);
			chain_line(p, depth, c, false);
		}
		p->mask[depth] = true;
		print_level(p, c, depth + 1);
	}
	free(kids);
}

/* The tree of an entry: "---ENTRY" and its unbranched chain, then the branches below. */
static void print_rooted(struct printer *p)
{
	__u32 c = p->t->nodes[0].first_child;
	const struct entry *e;

	p->margin = GRAPH_MARGIN;
	add_margin(p);
	ADD(p, "|");
	emit_line(p);
	add_margin(p);
	ADD(p, "---");
	e = &p->r->entries[p->t->nodes[c].id];
	add(p, entry_sym(p->r, e), strlen(entry_sym(p->r, e)));
	emit_line(p);
	p->margin += 3;
	while (run_next(p->t, c) != NO_NODE) {
		c = run_next(p->t, c);
		e = &p->r->entries[p->t->nodes[c].id];
		add_margin(p);
		add(p, entry_sym(p->r, e), strlen(entry_sym(p->r, e)));
		emit_line(p);
	}
	p->mask[0] = true;
	print_level(p, c, 1);
}

/* ---- trees ---- */

static int tree_add(struct tree *t, __u32 id, __u32 parent, __u64 value)
{
	if (ARRAY_GROW(t->nodes, t->cap, t->nr + 1))
		return -ENOMEM;
	t->nodes[t->nr] = (struct tnode){ id, NO_NODE, NO_NODE, value };
	if (parent != NO_NODE) {
		t->nodes[t->nr].next_sibling = t->nodes[parent].first_child;
		t->nodes[parent].first_child = t->nr;
	}
	return (int)t->nr++;
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

/* A group of n items of one key under tree node parent (of value all), sorted by key: its tree
 * node, unless it is a branch no one sees: hidden, and less than parent, so not the rest of its
 * chain (run_next()).  Not made, a long run's rarest stacks (nearly all of them) do not make the
 * trees of the rows near the root as big as every stack.  The node, NO_NODE for none, or
 * -ENOMEM. */
static long group_node(const struct report *r, struct tree *t, const struct item *g, size_t n,
		       __u32 parent, __u64 all)
{
	__u64 below = 0;

	for (size_t i = 0; i < n; i++)
		below += g[i].value;
	if (parent && below < all && branch_hidden(r, below))
		return NO_NODE;
	return tree_add(t, g[0].key, parent, below);
}

/* Children: the tree below tree node parent (of value all), whose entry the n nodes of g hold:
 * a tree node for each entry among their children, with the children that have it below it.
 * *depth: the deepest level so far. */
static int grow_down(const struct report *r, struct tree *t, const struct item *g, size_t n,
		     __u32 parent, __u64 all, int level, int *depth)
{
	struct item *kids;
	size_t nr = 0, i, j;
	int err = 0;
	long node;
	__u32 c;

	for (i = 0; i < n; i++)
		for (c = is_ctx(r, g[i].node) ? NO_NODE : r->first_child[g[i].node]; c != NO_NODE;
		     c = r->next_sibling[c])
			nr++;
	if (!nr)
		return 0;
	kids = malloc(nr * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	nr = 0;
	for (i = 0; i < n; i++)
		for (c = is_ctx(r, g[i].node) ? NO_NODE : r->first_child[g[i].node]; c != NO_NODE;
		     c = r->next_sibling[c])
			kids[nr++] = (struct item){ c, r->ent[c], node_sum(r, c) };
	qsort(kids, nr, sizeof(*kids), cmp_item);
	*depth = level + 1 > *depth ? level + 1 : *depth;
	for (i = 0; i < nr && !err; i = j) {
		for (j = i; j < nr && kids[j].key == kids[i].key; j++)
			;
		node = group_node(r, t, kids + i, j - i, parent, all);
		if (node < 0)
			err = node;
		else if (node != NO_NODE)
			err = grow_down(r, t, kids + i, j - i, node, t->nodes[node].value, level + 1,
					depth);
	}
	free(kids);
	return err;
}

/* The next node up from n on its path: NO_NODE at the path's end (the stack's outermost frame,
 * or a waker's). */
static __u32 up_from(const struct report *r, __u32 n)
{
	__u32 p = r->t->nodes[n].parent;

	if (p == NO_NODE || is_ctx(r, p) || r->t->nodes[p].frame == STACK_TREE_WAKER)
		return NO_NODE;
	return p;
}

/* --no-children and wakers: the tree below tree node parent (of value all) of the n paths of g
 * read upwards, g's nodes the paths' nodes at this level (NO_NODE past their end). */
static int grow_up(const struct report *r, struct tree *t, struct item *g, size_t n, __u32 parent,
		   __u64 all, int level, int *depth)
{
	size_t i, j, k;
	int err = 0;
	long node;

	for (i = 0; i < n; i++)
		g[i].key = g[i].node == NO_NODE ? NO_NODE : r->ent[g[i].node];
	qsort(g, n, sizeof(*g), cmp_item);
	*depth = level + 1 > *depth ? level + 1 : *depth;
	for (i = 0; i < n && !err; i = j) {
		for (j = i; j < n && g[j].key == g[i].key; j++)
			;
		if (g[i].key == NO_NODE)
			continue; /* these end at parent */
		node = group_node(r, t, g + i, j - i, parent, all);
		if (node < 0) {
			err = node;
		} else if (node != NO_NODE) {
			for (k = i; k < j; k++)
				g[k].node = up_from(r, g[k].node);
			err = grow_up(r, t, g + i, j - i, node, t->nodes[node].value, level + 1, depth);
		}
	}
	return err;
}

/* The waker stacks of the samples of tree entries first + 1, wnext[] on, as items: keyed by
 * their "woken by", at their innermost frame. */
static int waker_items(const struct report *r, __u32 first, struct item **v, size_t *nr,
		       size_t *cap)
{
	for (__u32 x = first; x; x = r->wnext[x - 1]) {
		if (array_grow(v, cap, *nr + 1, sizeof(**v), false))
			return -ENOMEM;
		(*v)[(*nr)++] = (struct item){ r->t->entries[x - 1].node, r->woken[r->ectx[x - 1]],
					       r->t->entries[x - 1].value };
	}
	return 0;
}

/* The paths of entry e's tree: its call graph, or with waker set, the stacks of its wakers. */
static int entry_items(const struct report *r, const struct entry *e, bool waker, struct item **v,
		       size_t *nr)
{
	size_t cap = 0;
	int err = 0;

	*nr = 0;
	for (size_t k = 0; k < e->nr_occ && !err; k++) {
		__u32 o = r->occ[e->occ_start + k], n;

		if (!waker) {
			err = array_grow(v, &cap, *nr + 1, sizeof(**v), false);
			if (!err && r->o.children)
				(*v)[(*nr)++] = (struct item){ o, e - r->entries,
							       node_sum(r, o) };
			else if (!err)
				(*v)[(*nr)++] = (struct item){ r->leaf[o], 0,
							       r->t->entries[o].value };
		} else if (!r->wfirst) {
			break;
		} else if (!r->o.children) {
			if (r->leaf[o] == r->t->entries[o].node)
				continue; /* no waker */
			err = array_grow(v, &cap, *nr + 1, sizeof(**v), false);
			if (!err)
				(*v)[(*nr)++] = (struct item){ r->t->entries[o].node,
							       r->woken[r->ectx[o]],
							       r->t->entries[o].value };
		} else if (is_ctx(r, o)) {
			err = waker_items(r, r->wfirst[o], v, nr, &cap);
		} else {
			/* every stack below the outermost occurrence holds e */
			for (n = o; n != NO_NODE && !err; n = walk_next(r, o, n, false))
				err = waker_items(r, r->wfirst[n], v, nr, &cap);
		}
	}
	return err;
}

/* One tree of entry e: its call graph, or with waker set, who woke it, under a virtual root
 * (node 0).  Prints nothing when no sample has such a path. */
static int print_tree(struct printer *p, const struct entry *e, bool waker)
{
	const struct report *r = p->r;
	struct item *items = NULL;
	struct tree t = {};
	size_t n = 0, i, j;
	__u64 total = 0;
	int depth = 0, err;
	long node;

	err = entry_items(r, e, waker, &items, &n);
	if (err || !n)
		goto cleanup;
	for (i = 0; i < n; i++)
		total += items[i].value;
	if (tree_add(&t, NO_NODE, NO_NODE, total) < 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!waker && r->o.children) {
		/* the entry, then what its outermost occurrences call */
		node = tree_add(&t, e - r->entries, 0, total);
		err = node < 0 ? node : grow_down(r, &t, items, n, node, total, 1, &depth);
	} else if (!waker) {
		/* from the innermost frame towards callers */
		err = grow_up(r, &t, items, n, 0, total, 0, &depth);
	} else {
		/* the "woken by" entries as the first level (never hidden), their stacks below */
		qsort(items, n, sizeof(*items), cmp_item);
		for (i = 0; i < n && !err; i = j) {
			for (j = i; j < n && items[j].key == items[i].key; j++)
				;
			node = group_node(r, &t, items + i, j - i, 0, total);
			err = node < 0 ? node : grow_up(r, &t, items + i, j - i, node,
							t.nodes[node].value, 1, &depth);
		}
	}
	if (err)
		goto cleanup;
	p->mask = calloc(depth + 2, sizeof(*p->mask));
	if (!p->mask) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->t = &t;
	if (!waker) {
		print_rooted(p);
	} else {
		/* wakers as branches, each with its share, even when there is only one */
		p->margin = GRAPH_MARGIN;
		p->mask[0] = true;
		print_level(p, 0, 1);
	}
	err = p->err;
cleanup:
	free(p->mask);
	p->mask = NULL;
	free(items);
	free(t.nodes);
	return err;
}

static int print_trees(FILE *out, const struct report *r, const struct entry *e)
{
	struct printer p = { .out = out, .r = r };
	int err;

	err = print_tree(&p, e, false);
	err = err ?: print_tree(&p, e, true);
	if (!err)
		fputc('\n', out);
	stack_buf_free(&p.line);
	return err;
}

/* ---- the table ---- */

struct columns {
	int comm, dso, sym, ms;
};

static __u64 sort_value(const struct report *r, const struct entry *e)
{
	return r->o.children ? e->children : e->self;
}

static int cmp_entry(const void *a, const void *b, void *ctx)
{
	const struct report *r = ctx;
	const struct entry *x = &r->entries[*(const __u32 *)a], *y = &r->entries[*(const __u32 *)b];
	int c = cmp_u64_desc(sort_value(r, x), sort_value(r, y));

	c = c ?: strcmp(entry_sym(r, x), entry_sym(r, y));
	c = c ?: strcmp(entry_comm(r, x), entry_comm(r, y));
	c = c ?: strcmp(x->dso, y->dso);
	return c ?: (int)(y->kind == 'k') - (int)(x->kind == 'k');
}

/* The rows to show, in order; *nr gets their count.  NULL on no memory. */
static __u32 *select_rows(const struct report *r, size_t *nr)
{
	__u32 *rows = malloc((r->nr_entries ? r->nr_entries : 1) * sizeof(*rows));
	size_t i, cnt = 0;

	if (!rows)
		return NULL;
	for (i = 0; i < r->nr_entries; i++) {
		const struct entry *e = &r->entries[i];

		if (e->row && sort_value(r, e) && !hidden(r, sort_value(r, e)))
			rows[cnt++] = i;
	}
	qsort_r(rows, cnt, sizeof(*rows), cmp_entry, (void *)r);
	*nr = cnt;
	return rows;
}

static void measure(const struct report *r, const __u32 *rows, size_t nr, struct columns *w)
{
	char buf[64];
	size_t i;
	int len;

	*w = (struct columns){ .comm = 7, .dso = 13, .sym = 6, .ms = r->o.children ? 12 : 8 };
	for (i = 0; i < nr; i++) {
		const struct entry *e = &r->entries[rows[i]];

		len = strlen(entry_comm(r, e));
		w->comm = len > w->comm ? len : w->comm;
		len = strlen(e->dso);
		w->dso = len > w->dso ? len : w->dso;
		len = 4 + strlen(entry_sym(r, e));
		w->sym = len > w->sym ? len : w->sym;
		len = snprintf(buf, sizeof(buf), "%.3f", sort_value(r, e) / 1000.0);
		w->ms = len > w->ms ? len : w->ms;
	}
	/* columns --sort leaves out are not printed */
	if (!(sort_keys(r) & REPORT_SORT_COMM))
		w->comm = -1;
	if (!(sort_keys(r) & REPORT_SORT_DSO))
		w->dso = -1;
}

static void print_dots(FILE *out, int n)
{
	fprintf(out, "  %.*s", n, "................................................................");
	for (n -= 64; n > 0; n -= 64)
		fprintf(out, "%.*s", n < 64 ? n : 64,
			"................................................................");
}

/* A column of width w, or nothing for a column left out (w < 0). */
static void print_column(FILE *out, int w, const char *text)
{
	if (w >= 0)
		fprintf(out, "  %-*s", w, text);
}

static void print_table_header(FILE *out, const struct report *r, const __u32 *rows, size_t nr,
			       struct columns *w)
{
	bool ms = r->o.unit == REPORT_TIME_US;

	measure(r, rows, nr, w);

	if (r->o.children)
		fprintf(out, "# Children      Self");
	else
		fprintf(out, "# Overhead");
	if (ms && r->o.children)
		fprintf(out, "  %*s  %*s", w->ms, "Children(ms)", w->ms, "Self(ms)");
	else if (ms)
		fprintf(out, "  %*s", w->ms, "Self(ms)");
	print_column(out, w->comm, "Command");
	print_column(out, w->dso, "Shared Object");
	/* perf names the column of --sort srcline Source:Line; ours keeps the symbol before it */
	fprintf(out, "  %s\n", r->o.srcline ? "Symbol and Source:Line" : "Symbol");
	fprintf(out, "# ........");
	if (r->o.children)
		fprintf(out, "  ........");
	if (ms)
		print_dots(out, w->ms);
	if (ms && r->o.children)
		print_dots(out, w->ms);
	if (w->comm >= 0)
		print_dots(out, w->comm);
	if (w->dso >= 0)
		print_dots(out, w->dso);
	print_dots(out, w->sym);
	fprintf(out, "\n#\n");
}

static void print_row(FILE *out, const struct report *r, const struct entry *e,
		      const struct columns *w)
{
	bool ms = r->o.unit == REPORT_TIME_US;

	if (r->o.children)
		fprintf(out, "  %7.2f%%  %7.2f%%", pct(r, e->children), pct(r, e->self));
	else
		fprintf(out, "  %7.2f%%", pct(r, e->self));
	if (ms && r->o.children)
		fprintf(out, "  %*.3f  %*.3f", w->ms, e->children / 1000.0, w->ms, e->self / 1000.0);
	else if (ms)
		fprintf(out, "  %*.3f", w->ms, e->self / 1000.0);
	print_column(out, w->comm, entry_comm(r, e));
	print_column(out, w->dso, e->dso);
	fprintf(out, "  [%c] %s", e->kind == 'k' ? 'k' : '.', entry_sym(r, e));
	/* where an inlined function's samples are: its lines, unless each row is a line already */
	if (e->src && !r->o.srcline && e->line_lo != e->line_hi)
		fprintf(out, "  %s:%u-%u", e->src, e->line_lo, e->line_hi);
	else if (e->src && !r->o.srcline)
		fprintf(out, "  %s:%u", e->src, e->line_lo);
	fputc('\n', out);
}

static void print_header(FILE *out, const struct report_header *h, const struct report *r)
{
	const char *event = h && h->event ? h->event : NULL;

	if (r->o.unit == REPORT_TIME_US) {
		if (event)
			fprintf(out, "# Event: '%s'\n", event);
		fprintf(out, "# Total off-CPU time: %.3f ms\n", r->total / 1000.0);
	} else {
		fprintf(out, "# Samples: %llu", (unsigned long long)r->total);
		if (event)
			fprintf(out, " of event '%s'", event);
		fputc('\n', out);
	}
	if (h && h->frequency)
		fprintf(out, "# Event frequency: %llu Hz\n", (unsigned long long)h->frequency);
	if (h && h->period)
		fprintf(out, "# Sample period: %llu event%s\n", (unsigned long long)h->period,
			h->period == 1 ? " (every event)" : "s");
	fprintf(out, "# Lost samples: %llu", (unsigned long long)(h ? h->lost : 0));
	if (h && h->lost_detail && h->lost_detail[0])
		fprintf(out, " (%s)", h->lost_detail);
	fputc('\n', out);
	if (h && h->duration_s > 0)
		fprintf(out, "# Duration: %.2f s\n", h->duration_s);
	if (h && h->unwind)
		fprintf(out, "# Call graph: %s\n", h->unwind);
	if (h && h->excluded)
		fprintf(out, "# Excluded: %s\n", h->excluded);
	if (h && h->extra)
		fprintf(out, "# %s\n", h->extra);
	if (h && h->symbols)
		fprintf(out, "# %s\n", h->symbols);
	if (h && h->lines)
		fprintf(out, "# %s\n", h->lines);
	if (h && h->cut)
		fprintf(out, "# %s\n", h->cut);
	if (h && h->source)
		fprintf(out, "# %s\n", h->source);
	fprintf(out, "#\n");
}

int report_write_tree(FILE *out, const struct report_header *h, const struct stack_tree *t,
		      int event, const struct report_opts *o)
{
	static const struct report_opts defaults = { .children = true, .call_graph = true };
	struct report r = { .t = t, .event = event, .o = o ? *o : defaults };
	struct columns w = {};
	__u32 *rows = NULL;
	size_t i, nr = 0;
	int err;

	err = build_report(&r);
	if (err)
		goto cleanup;
	rows = select_rows(&r, &nr);
	if (!rows) {
		err = -ENOMEM;
		goto cleanup;
	}
	print_header(out, h, &r);
	if (!r.total)
		fprintf(out, "# No samples.\n");
	else
		print_table_header(out, &r, rows, nr, &w);
	/* stop at the first failed write: a closed pipe needs no 100 MB more */
	for (i = 0; i < nr && !err && !ferror(out); i++) {
		print_row(out, &r, &r.entries[rows[i]], &w);
		if (r.o.call_graph)
			err = print_trees(out, &r, &r.entries[rows[i]]);
	}
	if (!err)
		err = stack_output_done(out);
cleanup:
	free(rows);
	free_report(&r);
	return err;
}
