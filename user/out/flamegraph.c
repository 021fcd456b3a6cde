/* Interactive flame graph SVG: the stacks merged into a prefix tree, drawn as rectangles whose
 * width is their share of the total, with a small script for details, zoom and search. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/grow.h"
#include "core/slotidx.h"
#include "out/flamegraph.h"

#define XPAD 10           /* left and right margins */
#define FRAME_H 16        /* one stack level, 1 px of which is the gap between levels */
#define FONT_SIZE 12
#define CHAR_W 7.08       /* average glyph width of a 12 px Verdana: 0.59 em */
#define MIN_WIDTH 0.1     /* narrower frames are not drawn; their time stays in the parent */
#define PAD_BOTTOM 34     /* the details line */
#define NO_NAME UINT32_MAX
#define STR(x) #x
#define XSTR(x) STR(x)

enum kind {
	KIND_USER,
	KIND_KERNEL,
	KIND_SEPARATOR, /* "--" between a sleeper's stack and its waker's */
	KIND_WAKER,
	KIND_INLINED,   /* an inlined function (sym/srcline.h), named NAME_[i] */
};

/* A frame of the graph: a path of names from the root, as every stack through it spells it. */
struct fg_node {
	__u64 value;  /* AFTER's samples through it */
	__u32 name;   /* NO_NAME for the root, "all" */
	/* its first child, its next sibling (NO_NODE: none), by name once sorted; while the tree
	 * grows, next is its parent */
	__u32 first, next;
	/* the first sample (by index; AFTER's before BEFORE's) that ends here, + 1; 0 for none */
	__u32 term : 28;
	__u32 kind : 3;  /* the kind the first stack through it gave it... */
	__u32 mixed : 1; /* ...unless stacks gave it others too: then that of the first in name
			  * order */
};
/* 24 bytes a frame of the graph: term's bits bound the stacks a graph is made of */
#define MAX_SAMPLES ((1U << 28) - 2)

struct fg {
	struct stack_source src; /* AFTER's stacks */
	size_t n;
	double max_delta; /* differential: the largest change of a frame but the root */
	const struct flamegraph_opts *o;
	struct stack_names *names;
	struct stack_buf buf;
	__u32 *seq;      /* one sample's name ids and kinds (sample_sequence()) */
	__u8 *kinds;
	size_t seq_len, seq_cap, kinds_cap;
	__u32 *rank;     /* rank[name id]: position of the name in strcmp order */
	struct fg_node *nodes;
	size_t nr_nodes, cap_nodes;
	struct slotidx children; /* (parent, name) -> node */
	/* differential: BEFORE's values by node, and the samples that end at each node, in index
	 * order (the order flamegraph.pl's sort adds them in, which rounding may tell) */
	double *before;
	__u32 *before_head, *before_next;
	__u64 total;
	int width, height, top, max_depth;
	double scale;    /* pixels per unit of value */
	struct fg_write *writing;
};

#define NO_NODE UINT32_MAX

/* ---- XML text ---- */

/* Length of the UTF-8 sequence at s if it encodes a character XML allows, else 0. */
static size_t utf8_char(const unsigned char *s)
{
	__u32 cp;

	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] != 0x7f ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		cp = (s[0] & 0x0f) << 12 | (s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		/* overlong forms, UTF-16 surrogates and U+FFFE/U+FFFF are not characters */
		return cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) || cp >= 0xfffe ? 0 : 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		cp = (s[0] & 0x07) << 18 | (s[1] & 0x3f) << 12 | (s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		return cp < 0x10000 || cp > 0x10ffff ? 0 : 4;
	}
	return 0;
}

static size_t utf8_count(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, len;

	for (; *p; n++) {
		len = utf8_char(p);
		p += len ? len : 1;
	}
	return n;
}

/* Writes at most max characters of s as XML text or attribute value: markup characters escaped,
 * bytes that are not valid UTF-8 or not allowed in XML written as '?'. */
static void xml_put(FILE *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;

	for (; *p && max; max--) {
		len = utf8_char(p);
		if (!len) {
			fputc('?', out);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fwrite(p, 1, len, out);
		}
		p += len;
	}
}

/* "1234567" -> "1,234,567", as flamegraph.pl prints counts. */
static const char *thousands(__u64 v, char *buf, size_t size)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), i, j = 0;

	for (i = 0; i < len && (size_t)j + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

/* ---- colours ---- */

static __u32 name_hash(const char *s)
{
	__u32 h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Deterministic: the same name gets the same colour in every graph. */
static void frame_color(const struct fg *g, const char *name, enum kind kind, int rgb[3])
{
	__u32 h = name_hash(name);
	double v1 = (h & 0xff) / 255.0, v2 = (h >> 8 & 0xff) / 255.0, v3 = (h >> 16 & 0xff) / 255.0;
	bool cool = g->o->palette == PALETTE_COOL;

	if (kind == KIND_SEPARATOR) {
		rgb[0] = rgb[1] = rgb[2] = 160;
	} else if (kind == KIND_WAKER) {            /* greens */
		rgb[0] = 50 + 60 * v1;
		rgb[1] = 190 + 60 * v2;
		rgb[2] = 50 + 60 * v1;
	} else if (kind == KIND_INLINED && g->o->annotate_kernel) { /* limes: inlined */
		rgb[0] = 150 + 60 * v1;
		rgb[1] = 210 + 40 * v2;
		rgb[2] = 60 + 60 * v1;
	} else if (kind == KIND_KERNEL && g->o->annotate_kernel && !cool) { /* aqua */
		rgb[0] = 50 + 60 * v1;
		rgb[1] = 165 + 55 * v2;
		rgb[2] = 165 + 55 * v2;
	} else if (kind == KIND_KERNEL && g->o->annotate_kernel) {          /* purple */
		rgb[0] = 190 + 65 * v1;
		rgb[1] = 80 + 60 * v1;
		rgb[2] = 190 + 65 * v2;
	} else if (cool) {                          /* blues */
		rgb[0] = 60 + 50 * v1;
		rgb[1] = 110 + 90 * v2;
		rgb[2] = 200 + 55 * v3;
	} else {                                    /* reds, oranges, yellows */
		rgb[0] = 205 + 50 * v3;
		rgb[1] = 230 * v1;
		rgb[2] = 55 * v2;
	}
}

/* flamegraph.pl's differential colours: white for no change, to full red (grew) or blue
 * (shrank) for the largest change. */
static void delta_color(double delta, double max, int rgb[3])
{
	double ratio = max > 0 ? fmin(fabs(delta) / max, 1) : 0;
	int fade = (int)(210 * (1 - ratio));

	rgb[0] = rgb[1] = rgb[2] = 255;
	if (fabs(delta) < 0.5) /* less than half a sample: the same */
		return;
	if (delta > 0)
		rgb[1] = rgb[2] = fade;
	else
		rgb[0] = rgb[1] = fade;
}

/* ---- the prefix tree ----
 * flamegraph.pl sorts the folded stacks by name and merges each with the one before it; this
 * tree of names is what that merge makes, grown a stack at a time (so no stack is held but the
 * one being read), then its children put in name order: read depth first, own samples before
 * children's, it gives the frames in flamegraph.pl's order, each starting where it would. */

/* Sample i: AFTER's (the source's) first, then BEFORE's. */
static const struct stack_sample *sample_at(struct fg *g, size_t i)
{
	return i < g->n ? stack_source_get(&g->src, i) : &g->o->before[i - g->n];
}

static int intern(struct fg *g, const char *name, size_t len, const char *suffix)
{
	if (!len) {
		name = "[unknown]";
		len = strlen(name);
	}
	g->buf.len = 0;
	if (stack_buf_add(&g->buf, name, len) || stack_buf_add(&g->buf, suffix, strlen(suffix)))
		return -ENOMEM;
	return stack_names__intern(g->names, g->buf.s, g->buf.len);
}

static int push(struct fg *g, int id, enum kind kind)
{
	if (id < 0)
		return id;
	if (ARRAY_GROW(g->seq, g->seq_cap, g->seq_len + 1) ||
	    ARRAY_GROW(g->kinds, g->kinds_cap, g->seq_len + 1))
		return -ENOMEM;
	g->seq[g->seq_len] = id;
	g->kinds[g->seq_len++] = kind;
	return 0;
}

static int push_frame(struct fg *g, const struct frame *f, bool waker)
{
	char name[512];

	stack_frame_name(f, g->o->annotate_kernel, name, sizeof(name));
	return push(g, intern(g, name, strlen(name), ""),
		    waker ? KIND_WAKER : f->kernel ? KIND_KERNEL :
		    f->inlined ? KIND_INLINED : KIND_USER);
}

/* What folded_write() prints for the sample, as name ids into g->seq: comm, frames outermost
 * first, then for a waker "--", its frames innermost first and its comm. */
static int sample_sequence(struct fg *g, const struct stack_sample *s)
{
	const char *ev = g->o->event_root ? g->o->event_root[s->event] : NULL;
	__u32 j;
	int err;

	g->seq_len = 0;
	err = ev ? push(g, intern(g, ev, strlen(ev), ""), KIND_SEPARATOR) : 0;
	if (!g->o->no_comm)
		err = err ?: push(g, intern(g, s->comm, strnlen(s->comm, 16), ""), KIND_USER);
	for (j = 0; !err && j < s->nr_frames; j++)
		err = push_frame(g, stack_sample_frame(s, j), false);
	if (err || !s->nr_waker_frames)
		return err;
	err = push(g, intern(g, "--", 2, ""), KIND_SEPARATOR);
	for (j = s->nr_waker_frames; !err && j > 0; j--)
		err = push_frame(g, stack_sample_waker_frame(s, j - 1), true);
	return err ?: push(g, intern(g, s->waker_comm, strnlen(s->waker_comm, 16), ""),
			   KIND_WAKER);
}

static int add_node(struct fg *g, __u32 name, enum kind kind)
{
	struct fg_node *nodes;

	if (g->nr_nodes >= NO_NODE - 1)
		return -ENOMEM;
	if (g->nr_nodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 16384;

		/* mapped and moved, not copied: a heap block grown by realloc() would hold its old
		 * copy's pages besides it (a 90 s churn run's graph: 3 MB more at the peak) */
		nodes = g->nodes ? mremap(g->nodes, g->cap_nodes * sizeof(*nodes),
					  cap * sizeof(*nodes), MREMAP_MAYMOVE) :
				   mmap(NULL, cap * sizeof(*nodes), PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (nodes == MAP_FAILED)
			return -ENOMEM;
		g->nodes = nodes;
		g->cap_nodes = cap;
	}
	g->nodes[g->nr_nodes] = (struct fg_node){ .name = name, .first = NO_NODE, .next = NO_NODE,
						  .kind = kind };
	return (int)g->nr_nodes++;
}

/* A child's key: its parent and name. */
struct child_key {
	__u32 parent, name;
};

static bool child_eq(const void *ctx, __u32 row, const void *key)
{
	const struct fg_node *n = &((const struct fg *)ctx)->nodes[row];
	const struct child_key *k = key;

	return n->next == k->parent && n->name == k->name;
}

/* Every node but the root, which has no parent. */
static bool child_rehash(const void *ctx, __u32 row, __u64 *h)
{
	const struct fg_node *n = &((const struct fg *)ctx)->nodes[row];

	*h = slotidx_hash2(n->next, n->name);
	return row != 0;
}

/* The child of parent named name, made on first sight.  -ENOMEM or the node. */
static long child(struct fg *g, __u32 parent, __u32 name, enum kind kind)
{
	struct child_key k = { parent, name };
	size_t i;
	int n;

	/* three quarters full at most */
	if (slotidx_reserve(&g->children, g->nr_nodes, 3, 4096, child_rehash, g))
		return -ENOMEM;
	i = slotidx_find(&g->children, slotidx_hash2(parent, name), child_eq, g, &k);
	if (g->children.slots[i]) {
		n = g->children.slots[i] - 1;
		g->nodes[n].mixed |= g->nodes[n].kind != (__u32)kind;
		return n;
	}
	n = add_node(g, name, kind);
	if (n < 0)
		return n;
	g->nodes[n].next = parent;
	g->children.slots[i] = n + 1;
	return n;
}

/* Sample i's stack into the tree: the node it ends at, or -errno. */
static long add_sample(struct fg *g, size_t i, const struct stack_sample *s)
{
	long node = 0;
	int err = sample_sequence(g, s);

	if (err)
		return err;
	for (size_t d = 0; d < g->seq_len && node >= 0; d++) {
		node = child(g, node, g->seq[d], g->kinds[d]);
		if (node >= 0 && i < g->n)
			g->nodes[node].value += s->value;
	}
	if (node >= 0 && !g->nodes[node].term)
		g->nodes[node].term = i + 1;
	return node;
}

static int build_tree(struct fg *g)
{
	size_t nr_before = g->o->before ? g->o->nr_before : 0;
	int err = add_node(g, NO_NAME, KIND_USER);

	if (err < 0 || !(g->names = stack_names__new()))
		return -ENOMEM;
	if (nr_before) {
		g->before_next = malloc(nr_before * sizeof(*g->before_next));
		if (!g->before_next)
			return -ENOMEM;
	}
	if (g->n + nr_before > MAX_SAMPLES)
		return -E2BIG;
	for (size_t i = 0; i < g->n + nr_before; i++) {
		const struct stack_sample *s = sample_at(g, i);
		long node;

		if (!s)
			return -ENOMEM;
		/* flamegraph.pl's input has no line for a stack without samples */
		if (!s->value)
			continue;
		if (i < g->n)
			g->total += s->value;
		node = add_sample(g, i, s);
		if (node < 0)
			return node;
		if (i >= g->n)
			g->before_next[i - g->n] = node; /* linked by node below */
	}
	g->nodes[0].value = g->total;
	slotidx_free(&g->children);
	/* children lists from the parents: a node comes after its parent */
	for (size_t i = g->nr_nodes - 1; i > 0; i--) {
		__u32 parent = g->nodes[i].next;

		g->nodes[i].next = g->nodes[parent].first;
		g->nodes[parent].first = i;
	}
	if (!g->o->before)
		return 0;
	g->before = calloc(g->nr_nodes, sizeof(*g->before));
	if (!g->before)
		return -ENOMEM;
	if (!nr_before)
		return 0;
	/* each node's BEFORE samples, in index order */
	g->before_head = malloc(g->nr_nodes * sizeof(*g->before_head));
	if (!g->before_head)
		return -ENOMEM;
	memset(g->before_head, 0xff, g->nr_nodes * sizeof(*g->before_head));
	for (size_t j = nr_before; j > 0; j--) {
		__u32 node;

		if (!g->o->before[j - 1].value) {
			g->before_next[j - 1] = NO_NODE;
			continue;
		}
		node = g->before_next[j - 1];
		g->before_next[j - 1] = g->before_head[node];
		g->before_head[node] = j - 1;
	}
	return 0;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct stack_names *names = ctx;

	return strcmp(stack_names__str(names, *(const __u32 *)a),
		      stack_names__str(names, *(const __u32 *)b));
}

/* Sorting every name once lets children be sorted by integers. */
static int rank_names(struct fg *g)
{
	__u32 i, nr = stack_names__count(g->names), *ids = malloc((nr ? nr : 1) * sizeof(*ids));

	g->rank = malloc((nr ? nr : 1) * sizeof(*g->rank));
	if (!ids || !g->rank) {
		free(ids);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		ids[i] = i;
	qsort_r(ids, nr, sizeof(*ids), cmp_name, g->names);
	for (i = 0; i < nr; i++)
		g->rank[ids[i]] = i;
	free(ids);
	return 0;
}

static int cmp_child(const void *a, const void *b, void *ctx)
{
	const struct fg *g = ctx;
	__u32 x = g->rank[g->nodes[*(const __u32 *)a].name];
	__u32 y = g->rank[g->nodes[*(const __u32 *)b].name];

	return x < y ? -1 : x > y;
}

/* Every node's children in name order. */
static int sort_children(struct fg *g)
{
	__u32 *kids = NULL, c;
	size_t cap = 0, nr;

	for (size_t i = 0; i < g->nr_nodes; i++) {
		for (nr = 0, c = g->nodes[i].first; c != NO_NODE; c = g->nodes[c].next, nr++) {
			if (ARRAY_GROW(kids, cap, nr + 1)) {
				free(kids);
				return -ENOMEM;
			}
			kids[nr] = c;
		}
		if (nr < 2)
			continue;
		qsort_r(kids, nr, sizeof(*kids), cmp_child, g);
		g->nodes[i].first = kids[0];
		for (size_t k = 0; k < nr; k++)
			g->nodes[kids[k]].next = k + 1 < nr ? kids[k + 1] : NO_NODE;
	}
	free(kids);
	return 0;
}

/* A node some stacks gave another kind than others: flamegraph.pl's merge keeps the kind of the
 * first stack through it in sorted order, the node's own first, else its first child's. */
static int resolve_kind(struct fg *g, __u32 node, int depth)
{
	__u32 at = node;
	const struct stack_sample *s;
	int err;

	while (!g->nodes[at].term && g->nodes[at].first != NO_NODE)
		at = g->nodes[at].first;
	if (!g->nodes[at].term)
		return 0;
	s = sample_at(g, g->nodes[at].term - 1);
	err = s ? sample_sequence(g, s) : -ENOMEM;
	if (!err && depth >= 1 && (size_t)depth <= g->seq_len)
		g->nodes[node].kind = g->kinds[depth - 1];
	return err;
}

/* Depth first in name order, a node before its children: visit(g, node, depth, path) for each,
 * path[0..depth] the nodes from the root to it.  0 or -errno (visit's, or -ENOMEM). */
static int walk(struct fg *g, int (*visit)(struct fg *g, __u32 node, int depth, const __u32 *path))
{
	__u32 *path = NULL;
	size_t cap = 0;
	int depth = 0, err = 0;
	__u32 n = 0;

	while (!err) {
		if (ARRAY_GROW(path, cap, (size_t)depth + 1)) {
			err = -ENOMEM;
			break;
		}
		path[depth] = n;
		err = visit(g, n, depth, path);
		if (err)
			break;
		if (g->nodes[n].first != NO_NODE) {
			n = g->nodes[n].first;
			depth++;
			continue;
		}
		/* up to the first ancestor with a next sibling */
		while (depth > 0 && g->nodes[n].next == NO_NODE)
			n = path[--depth];
		if (!depth)
			break;
		n = g->nodes[n].next;
	}
	free(path);
	return err;
}

/* ---- the SVG ---- */

static const char script[] =
"\"use strict\";\n"
"var fg = { frames: [], xpad: " XSTR(XPAD) ", charw: " XSTR(CHAR_W) ", searching: false };\n"
"function init(evt) {\n"
"\tvar root = document.getElementById(\"frames\"), gs = root.getElementsByTagName(\"g\"), i;\n"
"\tfg.total = +root.getAttribute(\"data-total\");\n"
"\tfg.fullw = +document.documentElement.getAttribute(\"width\") - 2 * fg.xpad;\n"
"\tfor (i = 0; i < gs.length; i++) {\n"
"\t\tvar g = gs[i], rect = g.getElementsByTagName(\"rect\")[0];\n"
"\t\tvar info = g.getElementsByTagName(\"title\")[0].textContent;\n"
"\t\tg.fgIndex = i;\n"
"\t\tfg.frames.push({ g: g, rect: rect, text: g.getElementsByTagName(\"text\")[0], info: info,\n"
"\t\t\tname: info.substring(0, info.lastIndexOf(\" (\")),\n"
"\t\t\ts: +g.getAttribute(\"data-s\"), v: +g.getAttribute(\"data-v\"),\n"
"\t\t\ty: +rect.getAttribute(\"y\"), fill: rect.getAttribute(\"fill\") });\n"
"\t}\n"
"\tfg.details = document.getElementById(\"details\").firstChild;\n"
"\tfg.matched = document.getElementById(\"matched\").firstChild;\n"
"\tfg.unzoom = document.getElementById(\"unzoom\");\n"
"\tfg.search = document.getElementById(\"search\");\n"
"\troot.addEventListener(\"click\", function (e) {\n"
"\t\tvar f = frameOf(e.target);\n"
"\t\tif (f)\n"
"\t\t\tzoom(f);\n"
"\t});\n"
"\troot.addEventListener(\"mouseover\", function (e) {\n"
"\t\tvar f = frameOf(e.target);\n"
"\t\tfg.details.nodeValue = f ? \"Function: \" + f.info : \" \";\n"
"\t});\n"
"\troot.addEventListener(\"mouseout\", function () { fg.details.nodeValue = \" \"; });\n"
"\tfg.unzoom.addEventListener(\"click\", unzoom);\n"
"\tfg.search.addEventListener(\"click\", function () {\n"
"\t\tif (fg.searching)\n"
"\t\t\tresetSearch();\n"
"\t\telse\n"
"\t\t\taskSearch();\n"
"\t});\n"
"\twindow.addEventListener(\"keydown\", function (e) {\n"
"\t\tif (e.keyCode === 70 && (e.ctrlKey || e.metaKey)) {\n"
"\t\t\te.preventDefault();\n"
"\t\t\taskSearch();\n"
"\t\t} else if (e.keyCode === 27) {\n"
"\t\t\tresetSearch();\n"
"\t\t\tunzoom();\n"
"\t\t}\n"
"\t});\n"
"}\n"
"function frameOf(el) {\n"
"\twhile (el && el.fgIndex === undefined)\n"
"\t\tel = el.parentNode;\n"
"\treturn el ? fg.frames[el.fgIndex] : null;\n"
"}\n"
"// Same rule as the writer: 3 px of padding each side, \"..\" when the name is cut.\n"
"function label(name, w) {\n"
"\tvar fit = Math.floor((w - 6) / fg.charw);\n"
"\tif (fit < 3)\n"
"\t\treturn \"\";\n"
"\treturn name.length <= fit ? name : name.substring(0, fit - 2) + \"..\";\n"
"}\n"
"function place(f, x, w) {\n"
"\tf.rect.setAttribute(\"x\", x.toFixed(2));\n"
"\tf.rect.setAttribute(\"width\", w.toFixed(2));\n"
"\tf.text.setAttribute(\"x\", (x + 3).toFixed(2));\n"
"\tf.text.textContent = label(f.name, w);\n"
"}\n"
"// Positions come from sample counts, not from pixels: deep zooms stay exact.\n"
"function zoom(z) {\n"
"\tvar scale = fg.fullw / z.v, i, f;\n"
"\tfor (i = 0; i < fg.frames.length; i++) {\n"
"\t\tf = fg.frames[i];\n"
"\t\tif (f.y > z.y && f.s <= z.s && f.s + f.v >= z.s + z.v) {\n"
"\t\t\tplace(f, fg.xpad, fg.fullw);\n"
"\t\t\tf.g.setAttribute(\"class\", \"parent\");\n"
"\t\t} else if (f.y <= z.y && f.s >= z.s && f.s + f.v <= z.s + z.v) {\n"
"\t\t\tplace(f, fg.xpad + (f.s - z.s) * scale, f.v * scale);\n"
"\t\t\tf.g.removeAttribute(\"class\");\n"
"\t\t} else {\n"
"\t\t\tf.g.setAttribute(\"class\", \"hide\");\n"
"\t\t}\n"
"\t}\n"
"\tfg.unzoom.removeAttribute(\"class\");\n"
"}\n"
"function unzoom() {\n"
"\tvar scale = fg.fullw / fg.total, i, f;\n"
"\tfor (i = 0; i < fg.frames.length; i++) {\n"
"\t\tf = fg.frames[i];\n"
"\t\tplace(f, fg.xpad + f.s * scale, f.v * scale);\n"
"\t\tf.g.removeAttribute(\"class\");\n"
"\t}\n"
"\tfg.unzoom.setAttribute(\"class\", \"hide\");\n"
"}\n"
"function askSearch() {\n"
"\tvar term = window.prompt(\"Search frames (regular expression)\", \"\");\n"
"\tif (term)\n"
"\t\tsearch(term);\n"
"}\n"
"function search(term) {\n"
"\tvar re, hits = [], i, f, sum = 0, end = 0;\n"
"\ttry {\n"
"\t\tre = new RegExp(term);\n"
"\t} catch (err) {\n"
"\t\twindow.alert(\"Not a regular expression: \" + term);\n"
"\t\treturn;\n"
"\t}\n"
"\t// frame 0 is \"all\": it would match every search for \"a\"\n"
"\tfor (i = 1; i < fg.frames.length; i++) {\n"
"\t\tf = fg.frames[i];\n"
"\t\tif (re.test(f.name)) {\n"
"\t\t\tf.rect.setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
"\t\t\thits.push(f);\n"
"\t\t} else {\n"
"\t\t\tf.rect.setAttribute(\"fill\", f.fill);\n"
"\t\t}\n"
"\t}\n"
"\t// a match inside another match is already counted in it\n"
"\thits.sort(function (a, b) { return a.s - b.s || b.v - a.v; });\n"
"\tfor (i = 0; i < hits.length; i++) {\n"
"\t\tf = hits[i];\n"
"\t\tif (f.s + f.v <= end)\n"
"\t\t\tcontinue;\n"
"\t\tsum += f.s + f.v - Math.max(f.s, end);\n"
"\t\tend = f.s + f.v;\n"
"\t}\n"
"\tfg.matched.nodeValue = \"Matched: \" + (100 * sum / fg.total).toFixed(2) + \"%\";\n"
"\tfg.search.firstChild.nodeValue = \"Reset Search\";\n"
"\tfg.searching = true;\n"
"}\n"
"function resetSearch() {\n"
"\tfor (var i = 0; i < fg.frames.length; i++)\n"
"\t\tfg.frames[i].rect.setAttribute(\"fill\", fg.frames[i].fill);\n"
"\tfg.matched.nodeValue = \" \";\n"
"\tfg.search.firstChild.nodeValue = \"Search\";\n"
"\tfg.searching = false;\n"
"}\n";

static void svg_open(FILE *out, int width, int height)
{
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\"", width, height, width, height);
}

static void svg_text(FILE *out, const char *attrs, const char *text)
{
	fprintf(out, "<text %s>", attrs);
	xml_put(out, text, SIZE_MAX);
	fputs("</text>\n", out);
}

/* An empty profile still gives a valid picture that says so. */
static void write_empty(FILE *out, const struct flamegraph_opts *o, int width)
{
	char attrs[128];

	svg_open(out, width, 80);
	fputs(">\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#eeeeee\"/>\n", out);
	snprintf(attrs, sizeof(attrs), "x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"17\" "
		 "font-family=\"Verdana, sans-serif\"", width / 2);
	svg_text(out, attrs, o->title ? o->title : "Flame Graph");
	snprintf(attrs, sizeof(attrs), "x=\"%d\" y=\"56\" text-anchor=\"middle\" font-size=\"12\" "
		 "font-family=\"Verdana, sans-serif\"", width / 2);
	svg_text(out, attrs, "No samples");
	fputs("</svg>\n", out);
}

static void write_head(FILE *out, const struct fg *g)
{
	const char *bg = g->o->palette == PALETTE_COOL ? "#e0e0ff" : "#eeeeb0";
	char attrs[160];

	svg_open(out, g->width, g->height);
	fprintf(out, " onload=\"init(evt)\">\n"
		"<defs>\n<linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">\n"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/>\n"
		"<stop stop-color=\"%s\" offset=\"95%%\"/>\n</linearGradient>\n</defs>\n", bg);
	fputs("<style type=\"text/css\"><![CDATA[\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "#title { text-anchor: middle; font-size: 17px; }\n"
	      "#subtitle { text-anchor: middle; fill: rgb(100,100,100); }\n"
	      "#search, #unzoom { cursor: pointer; }\n"
	      "#frames > g { cursor: pointer; }\n"
	      "#frames > g:hover > rect { stroke: black; stroke-width: 0.5; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "]]></style>\n<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fputs(script, out);
	fputs("]]></script>\n", out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#background)\"/>\n",
		g->width, g->height);
	snprintf(attrs, sizeof(attrs), "id=\"title\" x=\"%d\" y=\"24\"", g->width / 2);
	svg_text(out, attrs, g->o->title ? g->o->title : "Flame Graph");
	if (g->o->subtitle) {
		snprintf(attrs, sizeof(attrs), "id=\"subtitle\" x=\"%d\" y=\"44\"", g->width / 2);
		svg_text(out, attrs, g->o->subtitle);
	}
	svg_text(out, "id=\"unzoom\" class=\"hide\" x=\"10\" y=\"24\"", "Reset Zoom");
	snprintf(attrs, sizeof(attrs), "id=\"search\" x=\"%d\" y=\"24\" text-anchor=\"end\"",
		 g->width - XPAD);
	svg_text(out, attrs, "Search");
	snprintf(attrs, sizeof(attrs), "id=\"details\" x=\"%d\" y=\"%d\"", XPAD,
		 g->height - PAD_BOTTOM / 2);
	svg_text(out, attrs, " ");
	snprintf(attrs, sizeof(attrs), "id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"",
		 g->width - XPAD, g->height - PAD_BOTTOM / 2);
	svg_text(out, attrs, " ");
}

/* Pixels in hundredths, as integers: a child's ends round like its parent's, so it never sticks
 * out of it, and integers print faster than doubles in a file of 100,000 frames. */
static long long centi(double px)
{
	return llround(px * 100);
}

#define CENTI_FMT "%lld.%02lld"
#define CENTI(v) (v) / 100, (v) % 100

/* The frame's label: its name, cut with ".." to what fits the width, or nothing. */
static void write_label(FILE *out, const char *name, double width)
{
	double fit = floor((width - 6) / CHAR_W);
	size_t chars = fit > 0 ? (size_t)fit : 0;

	if (chars < 3)
		return;
	if (utf8_count(name) <= chars) {
		xml_put(out, name, SIZE_MAX);
		return;
	}
	xml_put(out, name, chars - 2);
	fputs("..", out);
}

/* Differential: "; before N samples, X%; +D" in the frame's details. */
static void write_delta(FILE *out, const struct fg *g, __u32 node)
{
	double before = g->before[node], delta = g->nodes[node].value - before;
	double root = g->before[0];
	char count[32];

	fprintf(out, "; before %s ", thousands(llround(before), count, sizeof(count)));
	xml_put(out, g->o->count_name ? g->o->count_name : "samples", SIZE_MAX);
	fprintf(out, ", %.2f%%; %s%s", root > 0 ? 100.0 * before / root : 0.0,
		delta < 0 ? "-" : "+", thousands(llround(fabs(delta)), count, sizeof(count)));
}

static void write_frame(FILE *out, const struct fg *g, __u32 node, int depth, __u64 start)
{
	const struct fg_node *n = &g->nodes[node];
	const char *name = n->name == NO_NAME ? "all" : stack_names__str(g->names, n->name);
	long long x1 = centi(XPAD + start * g->scale);
	long long x2 = centi(XPAD + (start + n->value) * g->scale);
	long long share = llround(10000.0 * n->value / g->total);
	int y = g->height - PAD_BOTTOM - (depth + 1) * FRAME_H + 1, rgb[3];
	char count[32];

	if (g->o->before)
		delta_color(n->value - g->before[node], g->max_delta, rgb);
	else
		frame_color(g, name, n->kind, rgb);
	fprintf(out, "<g data-s=\"%llu\" data-v=\"%llu\"><title>", (unsigned long long)start,
		(unsigned long long)n->value);
	xml_put(out, name, SIZE_MAX);
	fprintf(out, " (%s ", thousands(n->value, count, sizeof(count)));
	xml_put(out, g->o->count_name ? g->o->count_name : "samples", SIZE_MAX);
	fprintf(out, ", " CENTI_FMT "%%", CENTI(share));
	if (g->o->before)
		write_delta(out, g, node);
	fprintf(out, ")</title><rect x=\"" CENTI_FMT "\" y=\"%d\" width=\""
		CENTI_FMT "\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>"
		"<text x=\"" CENTI_FMT "\" y=\"%d.5\">", CENTI(x1), y, CENTI(x2 - x1),
		FRAME_H - 1, rgb[0], rgb[1], rgb[2], CENTI(x1 + 300), y + 10);
	write_label(out, name, (x2 - x1) / 100.0);
	fputs("</text></g>\n", out);
}

static bool drawn(const struct fg *g, const struct fg_node *n)
{
	return n->value * g->scale >= MIN_WIDTH;
}

/* Before the frames are written: the kind of nodes stacks disagreed on, BEFORE's values added
 * up as flamegraph.pl's merge adds them, the depth drawn. */
static int visit_prepare(struct fg *g, __u32 node, int depth, const __u32 *path)
{
	const struct fg_node *n = &g->nodes[node];
	int err = n->mixed ? resolve_kind(g, node, depth) : 0;

	if (g->before_head) {
		for (__u32 j = g->before_head[node]; j != NO_NODE; j = g->before_next[j]) {
			double v = g->o->before[j].value * (g->o->before_scale ?: 1);

			for (int d = 0; d <= depth; d++)
				g->before[path[d]] += v;
		}
	}
	if (drawn(g, n) && depth > g->max_depth)
		g->max_depth = depth;
	return err;
}

static int layout(struct fg *g)
{
	int err;

	g->width = g->o->width > 0 ? g->o->width : 1200;
	if (g->width < 2 * XPAD + 10)
		g->width = 2 * XPAD + 10;
	g->scale = (double)(g->width - 2 * XPAD) / g->total;
	err = walk(g, visit_prepare);
	/* the root's change is the totals': not a frame's */
	for (size_t i = 1; g->before && i < g->nr_nodes; i++)
		if (drawn(g, &g->nodes[i]))
			g->max_delta = fmax(g->max_delta, fabs(g->nodes[i].value - g->before[i]));
	g->top = g->o->subtitle ? 60 : 40;
	g->height = g->top + (g->max_depth + 1) * FRAME_H + PAD_BOTTOM;
	return err;
}

/* Where the next frame at each depth starts, while the frames are written. */
struct fg_write {
	FILE *out;
	__u64 *next;
	size_t cap;
};

static int visit_write(struct fg *g, __u32 node, int depth, const __u32 *path)
{
	struct fg_write *w = g->writing;
	const struct fg_node *n = &g->nodes[node];
	__u64 start, children = 0;

	if (ARRAY_GROW(w->next, w->cap, (size_t)depth + 2))
		return -ENOMEM;
	start = depth ? w->next[depth] : 0;
	for (__u32 c = n->first; c != NO_NODE; c = g->nodes[c].next)
		children += g->nodes[c].value;
	/* its own samples first, then its children's; then its next sibling */
	w->next[depth] = start + n->value;
	w->next[depth + 1] = start + n->value - children;
	if (ferror(w->out))
		return 1;
	if (drawn(g, n))
		write_frame(w->out, g, node, depth, start);
	return 0;
}

static int write_svg(FILE *out, struct fg *g)
{
	struct fg_write w = { .out = out };
	int err;

	write_head(out, g);
	fprintf(out, "<g id=\"frames\" data-total=\"%llu\">\n", (unsigned long long)g->total);
	g->writing = &w;
	err = walk(g, visit_write);
	g->writing = NULL;
	free(w.next);
	fputs("</g>\n</svg>\n", out);
	return err < 0 ? err : 0;
}

static int write_graph(FILE *out, struct fg *g)
{
	int err = build_tree(g);

	if (!err && g->total) {
		err = rank_names(g);
		err = err ?: sort_children(g);
		err = err ?: layout(g);
		err = err ?: write_svg(out, g);
	}
	if (err)
		goto cleanup;
	if (!g->total)
		write_empty(out, g->o, g->o->width > 0 ? g->o->width : 1200);
	err = stack_output_done(out);
cleanup:
	stack_source_free(&g->src);
	stack_names__free(g->names);
	stack_buf_free(&g->buf);
	free(g->seq);
	free(g->kinds);
	free(g->rank);
	if (g->nodes)
		munmap(g->nodes, g->cap_nodes * sizeof(*g->nodes));
	slotidx_free(&g->children);
	free(g->before);
	free(g->before_head);
	free(g->before_next);
	return err;
}

static const struct flamegraph_opts defaults = { .title = "Flame Graph" };

int flamegraph_write(FILE *out, const struct stack_sample *s, size_t n,
		     const struct flamegraph_opts *o)
{
	struct fg g = { .src = { .s = s, .n = n }, .n = n, .o = o ? o : &defaults };

	return write_graph(out, &g);
}

int flamegraph_write_tree(FILE *out, const struct stack_tree *t, const struct flamegraph_opts *o)
{
	struct fg g = { .src = { .t = t }, .n = t->nr_entries, .o = o ? o : &defaults };

	return write_graph(out, &g);
}
