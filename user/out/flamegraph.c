/* Interactive flame graph SVG: the stacks merged into a prefix tree, drawn as rectangles whose
 * width is their share of the total, with a small script for details, zoom and search. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

struct fg_node {
	__u32 name;   /* NO_NAME for the root, "all" */
	__u8 kind;
	__u16 depth;
	__u64 start;  /* sum of the values left of the frame, as in flamegraph.pl */
	__u64 value;
	double before; /* differential: BEFORE's value, scaled */
};

struct fg {
	const struct stack_sample *s;
	size_t n;
	size_t nr_all;   /* n, and the differential's BEFORE samples after them */
	double max_delta; /* differential: the largest change of a frame but the root */
	const struct flamegraph_opts *o;
	struct stack_names *names;
	struct stack_buf buf;
	__u32 *seq;      /* name ids of sample i: seq[off[i]..off[i+1]) */
	__u8 *kinds;
	size_t *off;
	__u32 *rank;     /* rank[name id]: position of the name in strcmp order */
	size_t *order;   /* samples with a value, sorted by their sequences */
	size_t nr_order;
	struct fg_node *nodes;
	size_t nr_nodes, cap_nodes;
	__u64 total;
	int width, height, top, max_depth;
	double scale;    /* pixels per unit of value */
};

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

/* ---- the prefix tree ---- */

/* Sample i: AFTER's (the samples given) first, then BEFORE's. */
static const struct stack_sample *sample_at(const struct fg *g, size_t i)
{
	return i < g->n ? &g->s[i] : &g->o->before[i - g->n];
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

static int push(struct fg *g, size_t *at, int id, enum kind kind)
{
	if (id < 0)
		return id;
	g->seq[*at] = id;
	g->kinds[*at] = kind;
	(*at)++;
	return 0;
}

static int push_frame(struct fg *g, size_t *at, const struct frame *f, bool waker)
{
	char name[512];

	stack_frame_name(f, g->o->annotate_kernel, name, sizeof(name));
	return push(g, at, intern(g, name, strlen(name), ""),
		    waker ? KIND_WAKER : f->kernel ? KIND_KERNEL :
		    f->inlined ? KIND_INLINED : KIND_USER);
}

/* What folded_write() prints for the sample, as name ids: comm, frames outermost first, then
 * for a waker "--", its frames innermost first and its comm. */
static int sample_sequence(struct fg *g, size_t i, size_t *at)
{
	const struct stack_sample *s = sample_at(g, i);
	const char *ev = g->o->event_root ? g->o->event_root[s->event] : NULL;
	__u32 j;
	int err;

	err = ev ? push(g, at, intern(g, ev, strlen(ev), ""), KIND_SEPARATOR) : 0;
	if (!g->o->no_comm)
		err = err ?: push(g, at, intern(g, s->comm, strnlen(s->comm, 16), ""), KIND_USER);
	for (j = 0; !err && j < s->nr_frames; j++)
		err = push_frame(g, at, stack_sample_frame(s, j), false);
	if (err || !s->nr_waker_frames)
		return err;
	err = push(g, at, intern(g, "--", 2, ""), KIND_SEPARATOR);
	for (j = s->nr_waker_frames; !err && j > 0; j--)
		err = push_frame(g, at, stack_sample_waker_frame(s, j - 1), true);
	return err ?: push(g, at, intern(g, s->waker_comm, strnlen(s->waker_comm, 16), ""),
			   KIND_WAKER);
}

static int build_sequences(struct fg *g)
{
	size_t i, len = 0, at = 0;
	int err = 0;

	g->nr_all = g->n + (g->o->before ? g->o->nr_before : 0);
	g->off = calloc(g->nr_all + 1, sizeof(*g->off));
	g->order = calloc(g->nr_all ? g->nr_all : 1, sizeof(*g->order));
	g->names = stack_names__new();
	if (!g->off || !g->order || !g->names)
		return -ENOMEM;
	for (i = 0; i < g->nr_all; i++) {
		const struct stack_sample *s = sample_at(g, i);

		if (s->value)
			len += 2 + s->nr_frames + (s->nr_waker_frames ? 2 + s->nr_waker_frames : 0);
	}
	g->seq = malloc((len ? len : 1) * sizeof(*g->seq));
	g->kinds = malloc(len ? len : 1);
	if (!g->seq || !g->kinds)
		return -ENOMEM;
	for (i = 0; i < g->nr_all && !err; i++) {
		g->off[i] = at;
		if (!sample_at(g, i)->value)
			continue;
		g->order[g->nr_order++] = i;
		if (i < g->n)
			g->total += g->s[i].value;
		err = sample_sequence(g, i, &at);
	}
	g->off[g->nr_all] = at;
	return err;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct stack_names *names = ctx;

	return strcmp(stack_names__str(names, *(const __u32 *)a),
		      stack_names__str(names, *(const __u32 *)b));
}

/* Sorting every name once lets sequences compare as integers. */
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

static int cmp_sample(const void *a, const void *b, void *ctx)
{
	const struct fg *g = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	size_t lx = g->off[x + 1] - g->off[x], ly = g->off[y + 1] - g->off[y], i;
	const __u32 *sx = g->seq + g->off[x], *sy = g->seq + g->off[y];

	for (i = 0; i < lx && i < ly; i++)
		if (sx[i] != sy[i])
			return g->rank[sx[i]] < g->rank[sy[i]] ? -1 : 1;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x < y ? -1 : x > y; /* identical stacks: keep input order, for stable colours */
}

static int add_node(struct fg *g, __u32 name, enum kind kind, int depth, __u64 start)
{
	struct fg_node *nodes;

	if (g->nr_nodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 1024;

		nodes = realloc(g->nodes, cap * sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		g->nodes = nodes;
		g->cap_nodes = cap;
	}
	g->nodes[g->nr_nodes] = (struct fg_node){ name, kind, depth, start, 0 };
	return (int)g->nr_nodes++;
}

/* flamegraph.pl's merge: in sorted order, a stack shares the frames of the previous one up to
 * where they differ; new frames start where the sum of values so far ends.  Nodes come out in
 * depth-first order, children alphabetically. */
static int build_tree(struct fg *g)
{
	size_t k, max_len = 0, *stack = NULL, prev = 0, lcp, d, i, len;
	__u64 start = 0;
	int node, err = 0;

	for (k = 0; k < g->nr_order; k++) {
		i = g->order[k];
		max_len = g->off[i + 1] - g->off[i] > max_len ? g->off[i + 1] - g->off[i] : max_len;
	}
	/* stack[0] is the root */
	stack = calloc(max_len + 1, sizeof(*stack));
	if (!stack || add_node(g, NO_NAME, KIND_USER, 0, 0) < 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	g->nodes[0].value = g->total;
	for (k = 0; k < g->nr_order; k++) {
		i = g->order[k];
		len = g->off[i + 1] - g->off[i];
		lcp = 0;
		while (k && lcp < len && lcp < g->off[prev + 1] - g->off[prev] &&
		       g->seq[g->off[i] + lcp] == g->seq[g->off[prev] + lcp])
			lcp++;
		for (d = lcp; d < len; d++) {
			node = add_node(g, g->seq[g->off[i] + d], g->kinds[g->off[i] + d], d + 1, start);
			if (node < 0) {
				err = node;
				goto cleanup;
			}
			stack[d + 1] = node;
		}
		prev = i;
		if (i >= g->n) {
			/* BEFORE's: counted, not drawn (its frames take no width) */
			double v = sample_at(g, i)->value * (g->o->before_scale ?: 1);

			for (d = 0; d <= len; d++)
				g->nodes[stack[d]].before += v;
			continue;
		}
		for (d = 1; d <= len; d++)
			g->nodes[stack[d]].value += g->s[i].value;
		start += g->s[i].value;
	}
cleanup:
	free(stack);
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
static void write_delta(FILE *out, const struct fg *g, const struct fg_node *n)
{
	double delta = n->value - n->before, root = g->nodes[0].before;
	char count[32];

	fprintf(out, "; before %s ", thousands(llround(n->before), count, sizeof(count)));
	xml_put(out, g->o->count_name ? g->o->count_name : "samples", SIZE_MAX);
	fprintf(out, ", %.2f%%; %s%s", root > 0 ? 100.0 * n->before / root : 0.0,
		delta < 0 ? "-" : "+", thousands(llround(fabs(delta)), count, sizeof(count)));
}

static void write_frame(FILE *out, const struct fg *g, const struct fg_node *n)
{
	const char *name = n->name == NO_NAME ? "all" : stack_names__str(g->names, n->name);
	long long x1 = centi(XPAD + n->start * g->scale);
	long long x2 = centi(XPAD + (n->start + n->value) * g->scale);
	long long share = llround(10000.0 * n->value / g->total);
	int y = g->height - PAD_BOTTOM - (n->depth + 1) * FRAME_H + 1, rgb[3];
	char count[32];

	if (g->o->before)
		delta_color(n->value - n->before, g->max_delta, rgb);
	else
		frame_color(g, name, n->kind, rgb);
	fprintf(out, "<g data-s=\"%llu\" data-v=\"%llu\"><title>", (unsigned long long)n->start,
		(unsigned long long)n->value);
	xml_put(out, name, SIZE_MAX);
	fprintf(out, " (%s ", thousands(n->value, count, sizeof(count)));
	xml_put(out, g->o->count_name ? g->o->count_name : "samples", SIZE_MAX);
	fprintf(out, ", " CENTI_FMT "%%", CENTI(share));
	if (g->o->before)
		write_delta(out, g, n);
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

static void layout(struct fg *g)
{
	size_t i;

	g->width = g->o->width > 0 ? g->o->width : 1200;
	if (g->width < 2 * XPAD + 10)
		g->width = 2 * XPAD + 10;
	g->scale = (double)(g->width - 2 * XPAD) / g->total;
	for (i = 0; i < g->nr_nodes; i++)
		if (drawn(g, &g->nodes[i]) && g->nodes[i].depth > g->max_depth)
			g->max_depth = g->nodes[i].depth;
	/* the root's change is the totals': not a frame's */
	for (i = 1; i < g->nr_nodes; i++)
		if (drawn(g, &g->nodes[i]))
			g->max_delta = fmax(g->max_delta, fabs(g->nodes[i].value - g->nodes[i].before));
	g->top = g->o->subtitle ? 60 : 40;
	g->height = g->top + (g->max_depth + 1) * FRAME_H + PAD_BOTTOM;
}

static void write_svg(FILE *out, struct fg *g)
{
	size_t i;

	layout(g);
	write_head(out, g);
	fprintf(out, "<g id=\"frames\" data-total=\"%llu\">\n", (unsigned long long)g->total);
	for (i = 0; i < g->nr_nodes && !ferror(out); i++)
		if (drawn(g, &g->nodes[i]))
			write_frame(out, g, &g->nodes[i]);
	fputs("</g>\n</svg>\n", out);
}

int flamegraph_write(FILE *out, const struct stack_sample *s, size_t n,
		     const struct flamegraph_opts *o)
{
	static const struct flamegraph_opts defaults = { .title = "Flame Graph" };
	struct fg g = { .s = s, .n = n, .o = o ? o : &defaults };
	int err;

	err = build_sequences(&g);
	if (!err && g.total) {
		err = rank_names(&g);
		if (!err)
			qsort_r(g.order, g.nr_order, sizeof(*g.order), cmp_sample, &g);
		err = err ?: build_tree(&g);
	}
	if (err)
		goto cleanup;
	if (g.total)
		write_svg(out, &g);
	else
		write_empty(out, g.o, g.o->width > 0 ? g.o->width : 1200);
	err = stack_output_done(out);
cleanup:
	stack_names__free(g.names);
	stack_buf_free(&g.buf);
	free(g.seq);
	free(g.kinds);
	free(g.off);
	free(g.rank);
	free(g.order);
	free(g.nodes);
	return err;
}
