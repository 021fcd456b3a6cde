/* Small helpers every stack writer shares: frame names, a growable string, a string interner. */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "out/stack.h"

const char *stack_module_short(const char *module)
{
	const char *slash;

	if (!module || !module[0])
		return "[unknown]";
	/* "[kernel.kallsyms]", "[vdso]", "[JIT] tid 7": names, not paths */
	if (module[0] == '[')
		return module;
	slash = strrchr(module, '/');
	return slash && slash[1] ? slash + 1 : module;
}

const char *stack_frame_name(const struct frame *f, bool annotate_kernel, char *buf, size_t size)
{
	/* stackcollapse-perf.pl's marks: _[k] kernel, _[i] inlined (flamegraph.pl colours both) */
	const char *suffix = !annotate_kernel ? "" : f->inlined ? "_[i]" : f->kernel ? "_[k]" : "";
	const char *mod = f->module && f->module[0] && strcmp(f->module, "[unknown]") ?
			  stack_module_short(f->module) : NULL;

	if (!size)
		return buf;
	if (f->name && f->name[0])
		snprintf(buf, size, "%s%s", f->name, suffix);
	else if (mod && mod[0] == '[')
		snprintf(buf, size, "%s%s", mod, suffix);   /* "[vdso]", "[kernel.kallsyms]" */
	else if (mod)
		snprintf(buf, size, "[%s]%s", mod, suffix); /* "[libselinux.so.1]", "[ls]" */
	else
		snprintf(buf, size, "[unknown]%s", suffix);
	return buf;
}

int stack_frame_decorate(struct stack_buf *b, const struct frame *f, bool inlined_mark,
			 bool srcline)
{
	const char *base;
	int err = 0;

	if (inlined_mark && f->inlined)
		err = stack_buf_add(b, " (inlined)", 10);
	if (err || !srcline || !f->srcfile || !f->line)
		return err;
	base = strrchr(f->srcfile, '/');
	return stack_buf_printf(b, " %s:%u", base ? base + 1 : f->srcfile, f->line);
}

__u32 stack_tree_nr_frames(const struct stack_tree *t, size_t i)
{
	__u32 len = 0, n;

	for (n = t->entries[i].node; t->nodes[n].parent != STACK_TREE_NONE; n = t->nodes[n].parent)
		len += t->nodes[n].frame != STACK_TREE_WAKER;
	return len;
}

void stack_tree_sample(const struct stack_tree *t, size_t i, __u32 *ids, struct stack_sample *s)
{
	const struct stack_tree_entry *e = &t->entries[i];
	const struct stack_tree_ctx *c;
	__u32 len = stack_tree_nr_frames(t, i), at = len, nw = 0, n;

	/* innermost last, from the end: the waker's frames, then the sample's */
	for (n = e->node; t->nodes[n].parent != STACK_TREE_NONE; n = t->nodes[n].parent) {
		if (t->nodes[n].frame == STACK_TREE_WAKER)
			nw = len - at;
		else
			ids[--at] = t->nodes[n].frame;
	}
	c = &t->ctxs[t->nodes[n].frame];
	memset(s, 0, sizeof(*s));
	memcpy(s->comm, c->comm, sizeof(s->comm));
	memcpy(s->waker_comm, c->waker_comm, sizeof(s->waker_comm));
	s->pid = e->pid;
	s->tid = e->tid;
	s->event = c->event;
	s->value = e->value;
	s->cgroup = c->cgroup;
	s->nr_frames = len - nw;
	s->nr_waker_frames = nw;
	/* not NULL, even for a stack without frames: frame_ids says the frames are ids */
	s->frame_ids = ids;
	s->waker_frame_ids = ids + s->nr_frames;
	s->frame_table = t->frames;
}

size_t stack_source_count(const struct stack_source *src)
{
	return src->t ? src->t->nr_entries : src->n;
}

const struct stack_sample *stack_source_get(struct stack_source *src, size_t i)
{
	__u32 len;

	if (!src->t)
		return &src->s[i];
	len = stack_tree_nr_frames(src->t, i);
	/* never NULL, even for a stack without frames (stack_tree_sample()) */
	if (ARRAY_GROW(src->ids, src->ids_cap, len ?: 1))
		return NULL;
	stack_tree_sample(src->t, i, src->ids, &src->one);
	return &src->one;
}

void stack_source_free(struct stack_source *src)
{
	free(src->ids);
	src->ids = NULL;
	src->ids_cap = 0;
}

__u64 stack_samples_total(const struct stack_sample *s, size_t n)
{
	__u64 total = 0;
	size_t i;

	for (i = 0; i < n; i++)
		total += s[i].value;
	return total;
}

__u64 stack_tree_total(const struct stack_tree *t)
{
	__u64 total = 0;

	for (size_t i = 0; i < t->nr_entries; i++)
		total += t->entries[i].value;
	return total;
}

static int stack_buf_reserve(struct stack_buf *b, size_t more)
{
	return ARRAY_GROW(b->s, b->cap, b->len + more + 1);
}

int stack_buf_add(struct stack_buf *b, const char *s, size_t len)
{
	if (stack_buf_reserve(b, len))
		return -ENOMEM;
	memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
	return 0;
}

int stack_buf_printf(struct stack_buf *b, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0)
		return -EINVAL;
	if (stack_buf_reserve(b, len))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, len + 1, fmt, ap);
	va_end(ap);
	b->len += len;
	return 0;
}

void stack_buf_free(struct stack_buf *b)
{
	if (!b)
		return;
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

struct stack_names {
	char **strs;
	size_t *lens;
	__u64 *hashes;
	size_t count, cap;
	size_t str_bytes; /* the strings' allocations (malloc_usable_size) */
	__u32 *slots; /* id + 1, 0 = empty; open addressing, kept at most half full */
	size_t nr_slots;
};

/* FNV-1a over 8-byte words: names are interned as every drain reads them, and C++ names are
 * long. */
static __u64 names_hash(const char *s, size_t len)
{
	__u64 h = 0xcbf29ce484222325ULL, w;

	for (; len >= 8; len -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, len);
	return (h ^ w ^ (__u64)len << 56) * 0x100000001b3ULL;
}

struct stack_names *stack_names__new(void)
{
	struct stack_names *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nr_slots = 1024;
	t->slots = calloc(t->nr_slots, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

static size_t names_find_slot(const __u32 *slots, size_t nr_slots, const struct stack_names *t,
			      __u64 h, const char *s, size_t len)
{
	size_t i = h & (nr_slots - 1);

	for (;; i = (i + 1) & (nr_slots - 1)) {
		__u32 id = slots[i];

		if (!id)
			return i;
		id--;
		if (t->hashes[id] == h && t->lens[id] == len && !memcmp(t->strs[id], s, len))
			return i;
	}
}

static int names_grow_slots(struct stack_names *t)
{
	size_t nr = t->nr_slots * 2, i;
	__u32 *slots = calloc(nr, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->count; i++) {
		/* every string is distinct, so the probe stops at the first empty slot */
		size_t j = t->hashes[i] & (nr - 1);

		while (slots[j])
			j = (j + 1) & (nr - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nr_slots = nr;
	return 0;
}

static int names_grow_arrays(struct stack_names *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	char **strs;
	size_t *lens;
	__u64 *hashes;

	strs = realloc(t->strs, cap * sizeof(*strs));
	if (!strs)
		return -ENOMEM;
	t->strs = strs;
	lens = realloc(t->lens, cap * sizeof(*lens));
	if (!lens)
		return -ENOMEM;
	t->lens = lens;
	hashes = realloc(t->hashes, cap * sizeof(*hashes));
	if (!hashes)
		return -ENOMEM;
	t->hashes = hashes;
	t->cap = cap;
	return 0;
}

int stack_names__intern(struct stack_names *t, const char *s, size_t len)
{
	__u64 h = names_hash(s, len);
	size_t slot = names_find_slot(t->slots, t->nr_slots, t, h, s, len);
	char *copy;

	if (t->slots[slot])
		return t->slots[slot] - 1;
	if (t->count >= INT32_MAX - 1)
		return -ENOMEM;
	if (t->count == t->cap && names_grow_arrays(t))
		return -ENOMEM;
	if ((t->count + 1) * 2 > t->nr_slots) {
		if (names_grow_slots(t))
			return -ENOMEM;
		slot = names_find_slot(t->slots, t->nr_slots, t, h, s, len);
	}
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->str_bytes += malloc_usable_size(copy);
	t->strs[t->count] = copy;
	t->lens[t->count] = len;
	t->hashes[t->count] = h;
	t->slots[slot] = ++t->count;
	return t->count - 1;
}

const char *stack_names__str(const struct stack_names *t, __u32 id)
{
	return id < t->count ? t->strs[id] : NULL;
}

__u32 stack_names__count(const struct stack_names *t)
{
	return t ? t->count : 0;
}

size_t stack_names__bytes(const struct stack_names *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + t->str_bytes +
	       t->cap * (sizeof(*t->strs) + sizeof(*t->lens) + sizeof(*t->hashes)) +
	       t->nr_slots * sizeof(*t->slots);
}

void stack_names__free(struct stack_names *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->count; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->lens);
	free(t->hashes);
	free(t->slots);
	free(t);
}

int stack_output_done(FILE *out)
{
	errno = 0;
	if (fflush(out))
		return -(errno ? errno : EIO);
	return ferror(out) ? -EIO : 0;
}
