/* perf-report-like text: a (Command, Shared Object, Symbol) table with Children and Self, each row
 * followed by perf's call-graph tree, drawn the way `perf report --stdio` draws it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/hashtab.h"
#include "out/report.h"

#define NO_NODE UINT32_MAX
#define GRAPH_MARGIN 12 /* perf indents every call-graph line by 12 columns */

struct entry {
	char comm[17];
	const char *dso;     /* short module name, from the samples */
	const char *sym;     /* display name, inside the interned key */
	size_t sym_len;
	bool kernel;
	bool row;            /* in a sampled stack, not only in a waker's */
	__u64 self, children;
	size_t last_sample;  /* 1 + index of the last sample counted: recursion counts once */
	size_t occ_start, nr_occ;
	const char *src;     /* an inlined function's source file (base name), or NULL */
	__u32 line_lo, line_hi;
};


struct report {
	const struct stack_sample *s;
	size_t n;
	struct report_opts o;
	__u64 total;
	struct stack_names *keys; /* "comm\x1fk\x1fmodule\x1fsymbol" -> entry id */
	struct stack_buf key;
	struct entry *entries;
	size_t nr_entries, cap_entries;
	__u32 *ids;   /* entry id of each frame, outermost first: ids[off[i]..off[i+1]) */
	__u32 *rids;  /* the same, innermost first (callee-ordered trees; --no-children only) */
	size_t *off;
	__u32 *wids;  /* "woken by" entry then waker frames innermost first: wids[woff[i]..woff[i+1]) */
	size_t *woff;
	/* the samples each entry is in, entries[k].occ_start on: 4 bytes for nearly every frame of
	 * every sample (2 million at the end of a 2-minute system-wide run under process churn);
	 * where in the sample its tree starts is found again when the tree is made */
	__u32 *occ;
	/* entry ids of samples' frames given as ids (drained runs): (frame id, command id) -> entry
	 * id + 1, for frames of the table `table`; commands by their ids in `comms` */
	struct hashtab by_frame;
	const struct frame *table;
	struct stack_names *comms;
};

struct path {
	const __u32 *ids;
	__u32 len;
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

/* Id of the entry (comm, frame), created on first sight; kind 'k', 'u' or 'w' ("woken by").
 * Commands or files that --sort leaves out are not told apart. */
static int entry_id(struct report *r, const char comm[16], const struct frame *f, char kind,
		    const char *pseudo, bool row)
{
	size_t comm_len = sort_keys(r) & REPORT_SORT_COMM ? strnlen(comm, 16) : 0, prefix;
	bool dso = sort_keys(r) & REPORT_SORT_DSO;
	struct entry *e;
	int id, err;

	r->key.len = 0;
	err = stack_buf_add(&r->key, comm, comm_len);
	err = err ?: stack_buf_printf(&r->key, "\x1f%c\x1f%s\x1f", kind,
				      f && dso ? module_key(f) : "");
	prefix = r->key.len;
	if (!err)
		err = pseudo ? stack_buf_printf(&r->key, "%s%.*s", pseudo, (int)strnlen(comm, 16),
						comm)
			     : display_name(&r->key, f, r->o.srcline);
	if (err)
		return err;
	id = stack_names__intern(r->keys, r->key.s, r->key.len);
	if (id < 0)
		return id;
	if ((size_t)id < r->nr_entries) {
		r->entries[id].row |= row;
		add_lines(&r->entries[id], f);
		return id;
	}
	if (r->nr_entries == r->cap_entries) {
		size_t cap = r->cap_entries ? r->cap_entries * 2 : 256;

		e = realloc(r->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->entries = e;
		r->cap_entries = cap;
	}
	e = &r->entries[r->nr_entries++];
	memset(e, 0, sizeof(*e));
	memcpy(e->comm, comm, comm_len);
	e->dso = f ? stack_module_short(f->module) : "";
	e->sym = stack_names__str(r->keys, id) + prefix;
	e->sym_len = r->key.len - prefix;
	e->kernel = kind == 'k';
	e->row = row;
	add_lines(e, f);
	return id;
}

static __u32 nr_frames(const struct stack_sample *s)
{
	return s->value ? (s->nr_frames ? s->nr_frames : 1) : 0;
}

static const struct frame *frame_at(const struct stack_sample *s, __u32 i)
{
	return s->nr_frames ? stack_sample_frame(s, i) : &unknown_frame;
}

/* entry_id() of frame j of s, through r->by_frame where s's frames are ids into the table of
 * the samples before it: a drained run's frames recur in most samples (the outer ones of a
 * program's stacks, the kernel's paths), and making an entry's key (printf) and interning it
 * was half of writing the report.  comm_id: s's command in r->comms, or -1 for none yet. */
static int sample_entry_id(struct report *r, const struct stack_sample *s, __u32 j, int *comm_id)
{
	const struct frame *f = frame_at(s, j);
	void *hit;
	int id;

	if (!s->nr_frames || !s->frame_ids || (r->table && r->table != s->frame_table))
		return entry_id(r, s->comm, f, f->kernel ? 'k' : 'u', NULL, true);
	r->table = s->frame_table;
	if (*comm_id < 0) {
		/* --sort without comm: one command for all */
		size_t len = sort_keys(r) & REPORT_SORT_COMM ? strnlen(s->comm, 16) : 0;

		*comm_id = stack_names__intern(r->comms, s->comm, len);
		if (*comm_id < 0)
			return *comm_id;
	}
	hit = hashtab_get(&r->by_frame, s->frame_ids[j], *comm_id);
	if (hit) {
		id = (uintptr_t)hit - 1;
		r->entries[id].row = true;
		return id;
	}
	id = entry_id(r, s->comm, f, f->kernel ? 'k' : 'u', NULL, true);
	if (id >= 0 && hashtab_put(&r->by_frame, s->frame_ids[j], *comm_id, (void *)(uintptr_t)(id + 1)))
		id = -ENOMEM;
	return id;
}

static int index_sample(struct report *r, size_t i)
{
	const struct stack_sample *s = &r->s[i];
	__u32 j, nf = nr_frames(s);
	int id, comm_id = -1;
	size_t at;

	for (j = 0; j < nf; j++) {
		id = sample_entry_id(r, s, j, &comm_id);
		if (id < 0)
			return id;
		r->ids[r->off[i] + j] = id;
		if (r->rids)
			r->rids[r->off[i] + nf - 1 - j] = id;
	}
	if (!nf || !s->nr_waker_frames)
		return 0;
	at = r->woff[i];
	id = entry_id(r, s->waker_comm, NULL, 'w', "woken by ", false);
	if (id < 0)
		return id;
	r->wids[at++] = id;
	for (j = s->nr_waker_frames; j > 0; j--) {
		const struct frame *f = stack_sample_waker_frame(s, j - 1);

		id = entry_id(r, s->waker_comm, f, f->kernel ? 'k' : 'u', NULL, false);
		if (id < 0)
			return id;
		r->wids[at++] = id;
	}
	return 0;
}

/* Frame and waker arrays sized up front, so indexing never reallocates them. */
static int alloc_index(struct report *r)
{
	size_t i, nf = 0, nw = 0;

	r->off = calloc(r->n + 1, sizeof(*r->off));
	r->woff = calloc(r->n + 1, sizeof(*r->woff));
	if (!r->off || !r->woff)
		return -ENOMEM;
	for (i = 0; i < r->n; i++) {
		r->off[i] = nf;
		r->woff[i] = nw;
		nf += nr_frames(&r->s[i]);
		if (nr_frames(&r->s[i]) && r->s[i].nr_waker_frames)
			nw += 1 + (size_t)r->s[i].nr_waker_frames;
		r->total += r->s[i].value;
	}
	r->off[r->n] = nf;
	r->woff[r->n] = nw;
	r->ids = malloc((nf ? nf : 1) * sizeof(*r->ids));
	/* callee-ordered paths are only walked by --no-children trees */
	r->rids = r->o.children ? NULL : malloc((nf ? nf : 1) * sizeof(*r->rids));
	r->wids = malloc((nw ? nw : 1) * sizeof(*r->wids));
	r->keys = stack_names__new();
	r->comms = stack_names__new();
	return r->ids && (r->rids || r->o.children) && r->wids && r->keys && r->comms ? 0 : -ENOMEM;
}

/* Children: once per sample whose stack holds the entry, however often it recurses; self: where
 * it is the innermost frame.  With record set, notes where each counted entry's tree starts. */
static void count_sample(struct report *r, size_t i, bool record)
{
	const __u32 *ids = r->ids + r->off[i];
	__u32 j, nf = r->off[i + 1] - r->off[i];
	__u64 v = r->s[i].value;
	struct entry *e;

	if (!nf)
		return;
	if (!record)
		r->entries[ids[nf - 1]].self += v;
	if (!r->o.children) {
		/* --no-children: trees start at the innermost frame and go towards callers */
		e = &r->entries[ids[nf - 1]];
		if (record)
			r->occ[e->occ_start + e->nr_occ] = i;
		e->nr_occ++;
		return;
	}
	for (j = 0; j < nf; j++) {
		e = &r->entries[ids[j]];
		if (e->last_sample == i + 1)
			continue;
		/* outermost occurrence first: its tree holds the recursion below it */
		e->last_sample = i + 1;
		if (record)
			r->occ[e->occ_start + e->nr_occ] = i;
		else
			e->children += v;
		e->nr_occ++;
	}
}

static int build_report(struct report *r)
{
	size_t i, at = 0;
	int err;

	if (r->n > UINT32_MAX)
		return -E2BIG; /* occ's sample indices */
	err = alloc_index(r);
	for (i = 0; !err && i < r->n; i++)
		err = index_sample(r, i);
	if (err)
		return err;
	for (i = 0; i < r->n; i++)
		count_sample(r, i, false);
	for (i = 0; i < r->nr_entries; i++) {
		r->entries[i].occ_start = at;
		at += r->entries[i].nr_occ;
		r->entries[i].nr_occ = 0;
		r->entries[i].last_sample = 0;
	}
	r->occ = malloc((at ? at : 1) * sizeof(*r->occ));
	if (!r->occ)
		return -ENOMEM;
	for (i = 0; i < r->n; i++)
		count_sample(r, i, true);
	return 0;
}

static void free_report(struct report *r)
{
	stack_names__free(r->keys);
	stack_names__free(r->comms);
	hashtab_clear(&r->by_frame, NULL);
	stack_buf_free(&r->key);
	free(r->entries);
	free(r->ids);
	free(r->rids);
	free(r->off);
	free(r->wids);
	free(r->woff);
	free(r->occ);
}

/* ---- trees ---- */

/* Path p's id at depth d, or -1 past its end: a path sorts before those it is a prefix of. */
static __s64 path_key(const struct path *p, __u32 d)
{
	return d < p->len ? (__s64)p->ids[d] : -1;
}

static void swap_paths(struct path *p, size_t a, size_t b)
{
	struct path t = p[a];

	p[a] = p[b];
	p[b] = t;
}

static int tree_add(struct tree *t, __u32 id, __u32 parent)
{
	struct tnode *nodes;

	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;

		nodes = realloc(t->nodes, cap * sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		t->nodes = nodes;
		t->cap = cap;
	}
	t->nodes[t->nr] = (struct tnode){ id, NO_NODE, NO_NODE, 0 };
	if (parent != NO_NODE) {
		t->nodes[t->nr].next_sibling = t->nodes[parent].first_child;
		t->nodes[parent].first_child = t->nr;
	}
	return (int)t->nr++;
}

/* Adds the n paths of p, equal up to depth d, under node parent of t: a node for each distinct
 * id at d, with the paths that have it below it.  The paths are split by their id at d as a
 * three-way radix quicksort (Bentley and Sedgewick's multikey quicksort) splits strings, whose
 * groups are the prefix tree's nodes: each id of a shared prefix is looked at once per split,
 * where sorting whole paths and then finding each one's common prefix with the one before
 * compared the prefix at every comparison (the paths through an entry near the root share
 * most of their frames: that was two thirds of writing the report).  *value gets the paths'
 * sum.  0 or -ENOMEM. */
static int grow_tree(const struct report *r, struct tree *t, struct path *p, size_t n, __u32 d,
		     __u32 parent, __u64 *value)
{
	__u64 sum = 0, all = 0;
	int err;

	for (size_t i = 0; i < n; i++)
		all += p[i].value;

	while (n) {
		size_t lt = 0, gt = n, i = 0;
		__s64 a = path_key(&p[0], d), b = path_key(&p[n / 2], d), c = path_key(&p[n - 1], d);
		/* the median of three */
		__s64 v = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		__u64 below = 0;
		int node;

		while (i < gt) {
			__s64 k = path_key(&p[i], d);

			if (k < v)
				swap_paths(p, lt++, i++);
			else if (k > v)
				swap_paths(p, i, --gt);
			else
				i++;
		}
		err = grow_tree(r, t, p, lt, d, parent, &below);
		if (err)
			return err;
		sum += below;
		for (i = lt, below = 0; i < gt; i++)
			below += p[i].value;
		if (v < 0 || (parent && below < all && branch_hidden(r, below))) {
			/* these end at parent; or they are a branch no one sees: hidden, and less than
			 * parent, so not the rest of its chain (run_next()).  Not made, a long run's
			 * rarest stacks (nearly all of them) do not make the trees of the rows near
			 * the root as big as every stack */
			sum += below;
		} else {
			node = tree_add(t, v, parent);
			if (node < 0)
				return node;
			err = grow_tree(r, t, p + lt, gt - lt, d + 1, node, &below);
			if (err)
				return err;
			t->nodes[node].value = below;
			sum += below;
		}
		/* the rest, above v, at the same depth */
		p += gt;
		n -= gt;
	}
	*value = sum;
	return 0;
}

/* A prefix tree of the paths under a virtual root (node 0). */
static int tree_build(const struct report *r, struct tree *t, struct path *p, size_t np)
{
	__u64 total;
	int err;

	t->nr = 0;
	if (tree_add(t, NO_NODE, NO_NODE) < 0)
		return -ENOMEM;
	err = grow_tree(r, t, p, np, 0, 0, &total);
	if (!err)
		t->nodes[0].value = total; /* the nodes may have moved as they grew */
	return err;
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
	const struct entry *e = &p->r->entries[n->id];
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
	add(p, e->sym, e->sym_len);
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

	c = c ?: strcmp(p->r->entries[x->id].sym, p->r->entries[y->id].sym);
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
	add(p, e->sym, e->sym_len);
	emit_line(p);
	p->margin += 3;
	while (run_next(p->t, c) != NO_NODE) {
		c = run_next(p->t, c);
		e = &p->r->entries[p->t->nodes[c].id];
		add_margin(p);
		add(p, e->sym, e->sym_len);
		emit_line(p);
	}
	p->mask[0] = true;
	print_level(p, c, 1);
}

/* Fills paths for entry e: its call graph, or with waker set, the stacks of its wakers. */
static size_t entry_paths(const struct report *r, const struct entry *e, struct path *paths,
			  bool waker, __u32 *max_len)
{
	size_t k, np = 0;

	*max_len = 0;
	for (k = 0; k < e->nr_occ; k++) {
		size_t i = r->occ[e->occ_start + k];
		struct path path = { .value = r->s[i].value };

		if (waker) {
			path.ids = r->wids + r->woff[i];
			path.len = r->woff[i + 1] - r->woff[i];
		} else if (r->o.children) {
			/* from its outermost occurrence: its tree holds the recursion below it */
			__u32 pos = 0, id = e - r->entries;

			while (r->ids[r->off[i] + pos] != id)
				pos++;
			path.ids = r->ids + r->off[i] + pos;
			path.len = r->off[i + 1] - r->off[i] - pos;
		} else {
			path.ids = r->rids + r->off[i];
			path.len = r->off[i + 1] - r->off[i];
		}
		if (!path.len)
			continue;
		paths[np++] = path;
		if (path.len > *max_len)
			*max_len = path.len;
	}
	return np;
}

/* One tree of entry e: its call graph, or with waker set, who woke it.  Prints nothing when no
 * sample has such a path. */
static int print_tree(struct printer *p, const struct entry *e, struct path *paths, bool waker)
{
	struct tree t = {};
	__u32 max_len;
	size_t np = entry_paths(p->r, e, paths, waker, &max_len);
	int err = 0;

	if (!np)
		return 0;
	p->mask = calloc(max_len + 2, sizeof(*p->mask));
	if (!p->mask) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = tree_build(p->r, &t, paths, np);
	if (err)
		goto cleanup;
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
	free(t.nodes);
	return err;
}

static int print_trees(FILE *out, const struct report *r, const struct entry *e)
{
	struct printer p = { .out = out, .r = r };
	struct path *paths = malloc((e->nr_occ ? e->nr_occ : 1) * sizeof(*paths));
	int err;

	if (!paths) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = print_tree(&p, e, paths, false);
	err = err ?: print_tree(&p, e, paths, true);
	if (!err)
		fputc('\n', out);
cleanup:
	free(paths);
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

	c = c ?: strcmp(x->sym, y->sym);
	c = c ?: strcmp(x->comm, y->comm);
	c = c ?: strcmp(x->dso, y->dso);
	return c ?: (int)y->kernel - (int)x->kernel;
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

		len = strlen(e->comm);
		w->comm = len > w->comm ? len : w->comm;
		len = strlen(e->dso);
		w->dso = len > w->dso ? len : w->dso;
		len = 4 + strlen(e->sym);
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
	fprintf(out, "  Symbol\n");
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
	print_column(out, w->comm, e->comm);
	print_column(out, w->dso, e->dso);
	fprintf(out, "  [%c] %s", e->kernel ? 'k' : '.', e->sym);
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
	if (h && h->source)
		fprintf(out, "# %s\n", h->source);
	fprintf(out, "#\n");
}

int report_write(FILE *out, const struct report_header *h, const struct stack_sample *s, size_t n,
		 const struct report_opts *o)
{
	static const struct report_opts defaults = { .children = true, .call_graph = true };
	struct report r = { .s = s, .n = n, .o = o ? *o : defaults };
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
