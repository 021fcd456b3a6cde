// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "core/hashtab.h"
#include "out/toptable.h"

static const char *const key_names[TOP_NR_KEYS] = { "comm", "pid", "dso", "sym" };

int top_sort_parse(const char *arg, struct top_sort *out)
{
	struct top_sort s = {};

	for (const char *p = arg; *p; p += *p == ',') {
		size_t len = strcspn(p, ",");
		int k;

		for (k = 0; k < TOP_NR_KEYS; k++)
			if (strlen(key_names[k]) == len && !strncmp(p, key_names[k], len))
				break;
		if (k == TOP_NR_KEYS || top_sort_has(&s, k))
			return -EINVAL;
		s.keys[s.nr++] = k;
		p += len;
	}
	if (!s.nr)
		return -EINVAL;
	*out = s;
	return 0;
}

bool top_sort_has(const struct top_sort *s, enum top_key k)
{
	for (int i = 0; i < s->nr; i++)
		if (s->keys[i] == k)
			return true;
	return false;
}

const char *top_mode_name(enum top_mode m)
{
	static const char *const names[TOP_NR_MODES] = { "decaying", "accumulating",
							 "per refresh" };

	return m < TOP_NR_MODES ? names[m] : "?";
}

/* ---- the table ---- */

#define NO_FUNC UINT32_MAX

/* What a row shows of a frame, by the function id the names table gives its key. */
struct top_func {
	const char *dso, *sym;
	bool kernel;
};

/* Counts of one function (or file) in one process under one command. */
struct top_entry {
	__u32 pid, comm, func; /* comm and func: ids in names */
	bool faded;            /* below half a sample: out of the index, its slot free */
	double self, children; /* decayed by 7/8: fractions kept, so Children <= the total */
	__u64 last_sample;     /* the sample that counted it last: Children once a sample */
};

struct top_table {
	struct top_sort sort;
	bool by_sym, by_dso;
	struct stack_names *names;  /* commands and function keys */
	struct top_func *funcs;     /* by names id (commands' slots unused) */
	size_t funcs_cap;
	struct top_entry *entries;
	size_t nr, cap;
	/* faded entries' slots, taken again by new ones: under process churn each refresh fades
	 * and makes as many entries as its new processes have functions, a sixth of the table
	 * (rebuilding the index each refresh was a fifth of a refresh's table work) */
	size_t *free_slots;
	size_t nr_free, free_cap;
	struct hashtab index;       /* (pid << 32 | comm, func) -> entry index + 1 */
	/* kept from refresh to refresh, emptied but not freed: filled again to about their size,
	 * they need not grow (rebuilt from nothing, growing was a tenth of a refresh) */
	struct hashtab seen;        /* a fold's frames: address -> func id + 1 */
	__u32 *seen_ids;            /* the same by frame id, for samples of one frame table */
	size_t seen_cap, seen_used;
	const struct frame *seen_table;
	struct hashtab groups;      /* the rows' grouping: (pid << 32 | comm + 1, func) -> row + 1 */
	__u32 *row_of_func;         /* the same by func id + 1 where rows group by function alone */
	size_t row_of_func_cap;
	/* the grouping's room, a row per entry at most (megabytes under churn: malloc'd afresh,
	 * its pages faulted in at each refresh) */
	struct top_row *group_rows;
	double *group_count;
	__u32 *group_func;
	size_t group_cap;
	struct stack_buf key;
	__u64 samples_seen;
};

struct top_table *top_table__new(const struct top_sort *sort)
{
	struct top_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->sort = *sort;
	t->by_sym = top_sort_has(sort, TOP_KEY_SYM);
	t->by_dso = t->by_sym || top_sort_has(sort, TOP_KEY_DSO);
	t->names = stack_names__new();
	if (!t->names) {
		free(t);
		return NULL;
	}
	return t;
}

void top_table__free(struct top_table *t)
{
	if (!t)
		return;
	hashtab_clear(&t->index, NULL);
	hashtab_clear(&t->seen, NULL);
	hashtab_clear(&t->groups, NULL);
	stack_names__free(t->names);
	stack_buf_free(&t->key);
	free(t->funcs);
	free(t->entries);
	free(t->free_slots);
	free(t->seen_ids);
	free(t->row_of_func);
	free(t->group_rows);
	free(t->group_count);
	free(t->group_func);
	free(t);
}

size_t top_table__entries(const struct top_table *t)
{
	return t->nr - t->nr_free;
}

static const struct frame unknown_frame = { .module = "[unknown]" };

/* The frame's name as the report shows it: the symbol, else file+offset, or [file] where
 * unresolved frames of a file were merged. */
static int frame_label(struct stack_buf *b, const struct frame *f)
{
	const char *mod = stack_module_short(f->module ? f->module : "[unknown]");

	if (f->name && f->name[0])
		return stack_buf_add(b, f->name, strlen(f->name));
	if (!strcmp(mod, "[unknown]") || (!f->addr && !f->offset))
		return stack_buf_printf(b, "[%s]", strcmp(mod, "[unknown]") ? mod : "unknown");
	return stack_buf_printf(b, "%s+0x%llx", mod, (unsigned long long)f->offset);
}

/* The id of what the sort keys need of frame f (its function, or only its file), added on
 * first sight; NO_FUNC when they need nothing of it.  -ENOMEM or the id. */
static long func_id(struct top_table *t, const struct frame *f)
{
	const char *module = f->module && f->module[0] ? f->module : "[unknown]";
	size_t prefix;
	int id, err;

	if (!t->by_dso)
		return NO_FUNC;
	t->key.len = 0;
	/* "\x1f" k or u, the module, "\x1f": added, not printed (a refresh makes thousands) */
	err = stack_buf_add(&t->key, f->kernel ? "\x1fk" : "\x1fu", 2);
	err = err ?: stack_buf_add(&t->key, module, strlen(module));
	err = err ?: stack_buf_add(&t->key, "\x1f", 1);
	prefix = t->key.len;
	err = err ?: (t->by_sym ? frame_label(&t->key, f) : 0);
	id = err ?: stack_names__intern(t->names, t->key.s, t->key.len);
	if (id < 0)
		return id;
	if (ARRAY_GROW_ZEROED(t->funcs, t->funcs_cap, (size_t)id + 1))
		return -ENOMEM;
	if (!t->funcs[id].dso) {
		int mod = stack_names__intern(t->names, module, strlen(module));

		if (mod < 0)
			return mod;
		t->funcs[id] = (struct top_func){
			.dso = stack_module_short(stack_names__str(t->names, mod)),
			.sym = t->by_sym ? stack_names__str(t->names, id) + prefix : NULL,
			.kernel = f->kernel,
		};
	}
	return id;
}

/* The entry of (pid, comm, func), made on first sight.  NULL on ENOMEM. */
static struct top_entry *entry_of(struct top_table *t, __u32 pid, __u32 comm, __u32 func)
{
	__u64 k1 = (__u64)pid << 32 | comm;
	void *slot = hashtab_get(&t->index, k1, func);
	struct top_entry *e;

	size_t at;

	if (slot)
		return &t->entries[(uintptr_t)slot - 1];
	if (!t->nr_free && ARRAY_GROW(t->entries, t->cap, t->nr + 1))
		return NULL;
	at = t->nr_free ? t->free_slots[t->nr_free - 1] : t->nr;
	if (hashtab_put(&t->index, k1, func, (void *)(uintptr_t)(at + 1)))
		return NULL;
	if (t->nr_free)
		t->nr_free--;
	else
		t->nr++;
	e = &t->entries[at];
	*e = (struct top_entry){ .pid = pid, .comm = comm, .func = func };
	return e;
}

/* Per fold: frames already looked up, by address (a drained period's frames are one table). */
static long cached_func(struct top_table *t, const struct frame *f)
{
	void *slot = hashtab_get(&t->seen, (uintptr_t)f, 0);
	long id;

	if (slot)
		return (long)((uintptr_t)slot - 1);
	id = func_id(t, f);
	if (id >= 0 && hashtab_put(&t->seen, (uintptr_t)f, 0, (void *)(uintptr_t)(id + 1)))
		return -ENOMEM;
	return id;
}

/* The same for frame i of s, by its id where the fold's samples share one frame table (a
 * drained period's): an array, not a hash lookup, for each of its frames. */
static long sample_func(struct top_table *t, const struct stack_sample *s, __u32 i)
{
	__u32 fid;
	long id;

	if (!s->frame_ids || s->frame_table != t->seen_table)
		return cached_func(t, stack_sample_frame(s, i));
	fid = s->frame_ids[i];
	if (ARRAY_GROW_ZEROED(t->seen_ids, t->seen_cap, (size_t)fid + 1))
		return -ENOMEM;
	if (t->seen_ids[fid])
		return (long)t->seen_ids[fid] - 1;
	id = func_id(t, &s->frame_table[fid]);
	if (id >= 0 && (__u64)id < UINT32_MAX)
		t->seen_ids[fid] = id + 1;
	if (fid >= t->seen_used)
		t->seen_used = fid + 1;
	return id;
}

static int fold_sample(struct top_table *t, const struct stack_sample *s)
{
	__u32 nf = s->nr_frames ? s->nr_frames : 1;
	int comm = stack_names__intern(t->names, s->comm, strnlen(s->comm, sizeof(s->comm)));

	if (comm < 0)
		return comm;
	t->samples_seen++;
	for (__u32 i = 0; i < nf; i++) {
		long func = s->nr_frames ? sample_func(t, s, i) : cached_func(t, &unknown_frame);
		struct top_entry *e;

		if (func < 0)
			return func;
		e = entry_of(t, s->pid, comm, func);
		if (!e)
			return -ENOMEM;
		/* innermost frame: the sample's own function */
		if (i == nf - 1)
			e->self += s->value;
		/* recursion, or several frames of one file: once a sample */
		if (e->last_sample != t->samples_seen) {
			e->last_sample = t->samples_seen;
			e->children += s->value;
		}
	}
	return 0;
}

/* Entries whose counts reached zero go: a decaying table holds what is recent, not every
 * function ever seen.  Their slots are taken by the next new entries; once most are free, the
 * table is packed and its index rebuilt. */
static int compact(struct top_table *t)
{
	size_t k = 0;

	if (t->nr_free * 2 <= t->nr)
		return 0;
	t->nr_free = 0;
	hashtab_reset(&t->index);
	for (size_t i = 0; i < t->nr; i++) {
		struct top_entry *e = &t->entries[i];

		if (e->faded)
			continue;
		t->entries[k] = *e;
		if (hashtab_put(&t->index, (__u64)e->pid << 32 | e->comm, e->func,
				(void *)(uintptr_t)(k + 1)))
			return -ENOMEM;
		k++;
	}
	t->nr = k;
	return 0;
}

/* Older counts weigh 7/8 less; entries that decayed below half a sample leave the index (what
 * is left of a sample is nothing), their slots free.  One pass over the table (a second was as
 * much again under churn: ten thousand entries).  0 or -ENOMEM. */
static int decay_and_fade(struct top_table *t)
{
	for (size_t i = 0; i < t->nr; i++) {
		struct top_entry *e = &t->entries[i];

		if (e->faded)
			continue;
		e->self *= 7.0 / 8;
		e->children *= 7.0 / 8;
		if (e->self >= 0.5 || e->children >= 0.5)
			continue;
		if (ARRAY_GROW(t->free_slots, t->free_cap, t->nr_free + 1))
			return -ENOMEM;
		hashtab_del(&t->index, (__u64)e->pid << 32 | e->comm, e->func);
		e->faded = true;
		t->free_slots[t->nr_free++] = i;
	}
	return compact(t);
}

void top_table__clear(struct top_table *t)
{
	t->nr = 0;
	t->nr_free = 0;
	hashtab_clear(&t->index, NULL);
}

int top_table__refresh(struct top_table *t, enum top_mode mode, const struct stack_sample *s,
		       size_t n, struct top_period_stats *stats)
{
	int err = 0;

	memset(stats, 0, sizeof(*stats));
	if (mode == TOP_PER_REFRESH) {
		top_table__clear(t);
	} else if (mode == TOP_DECAY) {
		err = decay_and_fade(t);
	}
	t->seen_table = n ? s[0].frame_table : NULL;
	for (size_t i = 0; i < n && !err; i++) {
		const struct frame *leaf;

		if (!s[i].value)
			continue;
		err = fold_sample(t, &s[i]);
		leaf = s[i].nr_frames ? stack_sample_frame(&s[i], s[i].nr_frames - 1) : NULL;
		stats->samples += s[i].value;
		if (leaf && leaf->kernel)
			stats->kernel_samples += s[i].value;
	}
	/* the frames' addresses are the period's, freed after it */
	hashtab_reset(&t->seen);
	if (t->seen_used)
		memset(t->seen_ids, 0, t->seen_used * sizeof(*t->seen_ids));
	t->seen_used = 0;
	t->seen_table = NULL;
	return err;
}

/* ---- rows ---- */

struct grouping {
	const struct top_table *t;
	bool children;
	bool by_pid, by_comm;
	struct top_row *rows;
	double *main_count; /* per row: the count of its main process */
	__u32 *func;        /* per row: its function's id + 1 (by_func) */
	size_t nr;
	struct hashtab *index; /* the table's groups */
	__u32 *by_func;     /* rows by function id + 1 where neither pid nor comm groups them */
};

static bool zoomed_out(const struct top_table *t, const struct top_zoom *z,
		       const struct top_entry *e)
{
	if (!z)
		return false;
	if (z->pid && e->pid != z->pid)
		return true;
	return z->comm[0] && strcmp(stack_names__str(t->names, e->comm), z->comm);
}

static int group_entry(struct grouping *g, const struct top_entry *e)
{
	const struct top_table *t = g->t;
	bool by_pid = g->by_pid, by_comm = g->by_comm;
	__u64 k1 = (__u64)(by_pid ? e->pid : 0) << 32 | (by_comm ? e->comm + 1 : 0);
	/* NO_FUNC + 1 is 0: its row is kept in slot 0 */
	__u32 fslot = e->func + 1;
	void *slot = g->by_func ? (void *)(uintptr_t)g->by_func[fslot] :
				  hashtab_get(g->index, k1, e->func);
	double count = g->children ? e->children : e->self;
	struct top_row *r;

	if (slot) {
		r = &g->rows[(uintptr_t)slot - 1];
	} else {
		const struct top_func *f = e->func == NO_FUNC ? NULL : &t->funcs[e->func];

		if (g->by_func) {
			g->by_func[fslot] = g->nr + 1;
			g->func[g->nr] = fslot;
		} else if (hashtab_put(g->index, k1, e->func, (void *)(uintptr_t)(g->nr + 1))) {
			return -ENOMEM;
		}
		r = &g->rows[g->nr++];
		*r = (struct top_row){
			.comm = by_comm ? stack_names__str(t->names, e->comm) : NULL,
			.pid = by_pid ? e->pid : 0,
			.dso = f ? f->dso : NULL,
			.sym = f ? f->sym : NULL,
			.kernel = f && f->kernel,
		};
	}
	r->self += e->self;
	r->children += e->children;
	if (!r->main_comm || count > g->main_count[r - g->rows]) {
		g->main_count[r - g->rows] = count;
		r->main_pid = e->pid;
		r->main_comm = stack_names__str(t->names, e->comm);
	}
	return 0;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_row(const void *a, const void *b, void *ctx)
{
	const struct top_row *x = a, *y = b;
	bool children = *(const bool *)ctx;
	double vx = children ? x->children : x->self, vy = children ? y->children : y->self;
	int c;

	if (vx != vy)
		return vx < vy ? 1 : -1;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	c = cmp_str(x->sym, y->sym);
	c = c ?: cmp_str(x->dso, y->dso);
	c = c ?: cmp_str(x->comm, y->comm);
	return c ?: (x->pid > y->pid) - (x->pid < y->pid);
}

static void swap_rows(struct top_row *a, struct top_row *b)
{
	struct top_row t = *a;

	*a = *b;
	*b = t;
}

/* Heap of rows[0..n) with the last in order at the root. */
static void sift_down(struct top_row *rows, size_t n, size_t i, bool *children)
{
	for (;;) {
		size_t worst = i, l = 2 * i + 1, r = l + 1;

		if (l < n && cmp_row(&rows[l], &rows[worst], children) > 0)
			worst = l;
		if (r < n && cmp_row(&rows[r], &rows[worst], children) > 0)
			worst = r;
		if (worst == i)
			return;
		swap_rows(&rows[i], &rows[worst]);
		i = worst;
	}
}

/* The first `first` rows in order (all where 0), the rest after them in no order: a plain-text
 * refresh shows 40 of a thousand rows, and sorting them all was most of making the rows. */
static void sort_rows(struct top_row *rows, size_t n, size_t first, bool children)
{
	if (first && first < n) {
		/* the best `first` seen so far kept in a heap at the front, the worst at its root */
		for (size_t i = first / 2; i-- > 0;)
			sift_down(rows, first, i, &children);
		for (size_t i = first; i < n; i++)
			if (cmp_row(&rows[i], &rows[0], &children) < 0) {
				swap_rows(&rows[0], &rows[i]);
				sift_down(rows, first, 0, &children);
			}
		n = first;
	}
	qsort_r(rows, n, sizeof(*rows), cmp_row, &children);
}

/* Room for n rows to group into.  0 or -ENOMEM. */
static int group_room(struct top_table *t, size_t n)
{
	struct top_row *r;
	double *c;
	__u32 *f;

	if (n <= t->group_cap)
		return 0;
	n = n > 2 * t->group_cap ? n : 2 * t->group_cap;
	r = realloc(t->group_rows, n * sizeof(*r));
	if (r)
		t->group_rows = r;
	c = realloc(t->group_count, n * sizeof(*c));
	if (c)
		t->group_count = c;
	f = realloc(t->group_func, n * sizeof(*f));
	if (f)
		t->group_func = f;
	if (!r || !c || !f)
		return -ENOMEM;
	t->group_cap = n;
	return 0;
}

int top_table__rows(struct top_table *t, const struct top_zoom *zoom, bool children,
		    double percent_limit, struct top_row **rows, size_t *nr, double *total)
{
	return top_table__rows_first(t, zoom, children, percent_limit, 0, rows, nr, total);
}

int top_table__rows_view(struct top_table *t, const struct top_zoom *zoom, bool children,
			 double percent_limit, size_t first, const struct top_row **rows, size_t *nr,
			 double *total)
{
	struct grouping g = { .t = t, .children = children, .index = &t->groups };
	size_t k = 0;
	int err = 0;

	*rows = NULL;
	*nr = 0;
	*total = 0;
	if (!t->nr)
		return 0;
	g.by_pid = top_sort_has(&t->sort, TOP_KEY_PID);
	g.by_comm = g.by_pid || top_sort_has(&t->sort, TOP_KEY_COMM);
	err = group_room(t, t->nr);
	g.rows = t->group_rows;
	g.main_count = t->group_count;
	g.func = t->group_func;
	/* rows by function alone (perf top's dso,sym): an array by the functions' ids, kept from
	 * refresh to refresh and emptied by the rows it held */
	if (!err && !g.by_comm) {
		size_t need = t->funcs_cap + 1;

		if (!ARRAY_GROW_ZEROED(t->row_of_func, t->row_of_func_cap, need))
			g.by_func = t->row_of_func;
	}
	for (size_t i = 0; i < t->nr && !err; i++) {
		if (t->entries[i].faded || zoomed_out(t, zoom, &t->entries[i]))
			continue;
		*total += t->entries[i].self;
		err = group_entry(&g, &t->entries[i]);
	}
	for (size_t i = 0; g.by_func && i < g.nr; i++)
		g.by_func[g.func[i]] = 0;
	hashtab_reset(&t->groups);
	if (err) {
		*total = 0;
		return err;
	}
	for (size_t i = 0; i < g.nr; i++) {
		double v = children ? g.rows[i].children : g.rows[i].self;

		if (!v || (percent_limit > 0 && *total && 100.0 * v / *total < percent_limit))
			continue;
		g.rows[k++] = g.rows[i];
	}
	sort_rows(g.rows, k, first, children);
	*rows = k ? g.rows : NULL;
	*nr = k;
	return 0;
}

int top_table__rows_first(struct top_table *t, const struct top_zoom *zoom, bool children,
			  double percent_limit, size_t first, struct top_row **rows, size_t *nr,
			  double *total)
{
	const struct top_row *view;
	int err = top_table__rows_view(t, zoom, children, percent_limit, first, &view, nr, total);

	*rows = NULL;
	if (err || !*nr)
		return err;
	*rows = malloc(*nr * sizeof(**rows));
	if (!*rows) {
		*nr = 0;
		*total = 0;
		return -ENOMEM;
	}
	memcpy(*rows, view, *nr * sizeof(**rows));
	return 0;
}

/* ---- layout ---- */

#define NARROW_COMM 16
#define NARROW_DSO 24

struct widths {
	int comm, pid, dso;
};

static int str_width(const char *s, int min, int max)
{
	int len = s ? (int)strlen(s) : 0;

	len = len > min ? len : min;
	return max && len > max ? max : len;
}

static struct widths measure(const struct top_row *rows, size_t first, size_t end, bool narrow)
{
	struct widths w = { .comm = 7, .pid = 7, .dso = 13 };

	for (size_t i = first; i < end; i++) {
		w.comm = str_width(rows[i].comm, w.comm, narrow ? NARROW_COMM : 0);
		w.dso = str_width(rows[i].dso, w.dso, narrow ? NARROW_DSO : 0);
	}
	return w;
}

/* Ends the line begun at `start`: cut to width, in reverse video when highlighted. */
static int end_line(struct stack_buf *b, size_t start, int width, bool highlight)
{
	int err = 0;

	if (width > 0 && b->len - start > (size_t)width) {
		b->len = start + width;
		b->s[b->len] = '\0';
	}
	if (highlight) {
		/* pad so the whole bar is reverse video, as perf top's cursor line */
		while (!err && width > 0 && b->len - start < (size_t)width)
			err = stack_buf_add(b, " ", 1);
		err = err ?: stack_buf_add(b, "\x1b[0m", 4);
	}
	return err ?: stack_buf_add(b, "\n", 1);
}

static int key_header(struct stack_buf *b, enum top_key k, const struct widths *w)
{
	switch (k) {
	case TOP_KEY_COMM:
		return stack_buf_printf(b, "  %-*s", w->comm, "Command");
	case TOP_KEY_PID:
		return stack_buf_printf(b, "  %*s", w->pid, "Pid");
	case TOP_KEY_DSO:
		return stack_buf_printf(b, "  %-*s", w->dso, "Shared Object");
	default:
		return stack_buf_printf(b, "  %s", "Symbol");
	}
}

static int key_cell(struct stack_buf *b, enum top_key k, const struct widths *w,
		    const struct top_row *r)
{
	switch (k) {
	case TOP_KEY_COMM:
		return stack_buf_printf(b, "  %-*.*s", w->comm, w->comm, r->comm ? r->comm : "");
	case TOP_KEY_PID:
		return stack_buf_printf(b, "  %*u", w->pid, r->pid);
	case TOP_KEY_DSO:
		return stack_buf_printf(b, "  %-*.*s", w->dso, w->dso, r->dso ? r->dso : "");
	default:
		return stack_buf_printf(b, "  [%c] %s", r->kernel ? 'k' : '.', r->sym ? r->sym : "");
	}
}

static double pct(double v, double total)
{
	return total ? 100.0 * v / total : 0.0;
}

int top_render_rows(struct stack_buf *b, const struct top_row *rows, size_t nr, double total,
		    const struct top_layout *l)
{
	size_t first = l->first > 0 && (size_t)l->first < nr ? l->first : 0;
	size_t end = l->max_rows > 0 && first + l->max_rows < nr ? first + l->max_rows : nr;
	struct widths w = measure(rows, first, end, l->narrow);
	size_t start = b->len;
	int err;

	err = stack_buf_add(b, l->children ? "  Children      Self" : "  Overhead",
			    l->children ? 20 : 10);
	for (int k = 0; k < l->sort->nr && !err; k++)
		err = key_header(b, l->sort->keys[k], &w);
	err = err ?: end_line(b, start, l->width, false);
	for (size_t i = first; i < end && !err; i++) {
		bool hl = l->selected >= 0 && (size_t)l->selected == i;

		start = b->len;
		if (hl)
			err = stack_buf_add(b, "\x1b[7m", 4);
		if (l->children)
			err = err ?: stack_buf_printf(b, "  %7.2f%%  %7.2f%%", pct(rows[i].children, total),
						      pct(rows[i].self, total));
		else
			err = err ?: stack_buf_printf(b, "  %7.2f%%", pct(rows[i].self, total));
		for (int k = 0; k < l->sort->nr && !err; k++)
			err = key_cell(b, l->sort->keys[k], &w, &rows[i]);
		/* the escape takes no column */
		err = err ?: end_line(b, start, l->width > 0 && hl ? l->width + 4 : l->width, hl);
	}
	return err;
}

int top_render_status(struct stack_buf *b, const struct top_status *s, int width)
{
	double rate = s->seconds > 0 ? s->period.samples / s->seconds : 0;
	const struct top_zoom *z = s->zoom;
	size_t start = b->len;
	int err, rule = width > 0 ? width : 80;

	err = stack_buf_printf(b, "   bpfprof top: %8.1f samples/s  kernel: %4.1f%%  lost: %llu/%llu  ",
			       rate, pct(s->period.kernel_samples, s->period.samples),
			       (unsigned long long)s->lost, (unsigned long long)s->lost_total);
	if (s->freq)
		err = err ?: stack_buf_printf(b, "[%s at %llu Hz]", s->event,
					      (unsigned long long)s->freq);
	else
		err = err ?: stack_buf_printf(b, "[every %s]", s->event);
	err = err ?: stack_buf_printf(b, "  (%s)  %llu samples in %.1f s, %s%s", s->target,
				      (unsigned long long)s->period.samples, s->seconds,
				      top_mode_name(s->mode), s->paused ? ", PAUSED" : "");
	if (!err && z && z->pid)
		err = stack_buf_printf(b, ", zoom: pid %u", z->pid);
	else if (!err && z && z->comm[0])
		err = stack_buf_printf(b, ", zoom: %s", z->comm);
	err = err ?: end_line(b, start, width, false);
	start = b->len;
	if (!err && s->own_cpu) {
		err = stack_buf_printf(b, "   own CPU: %.1f ms this refresh, %.2f ms/s (%.2f%% of a CPU)",
				       s->cpu_ms, s->cpu_ms_per_s, s->cpu_ms_per_s / 10.0);
		err = err ?: end_line(b, start, width, false);
	}
	for (int i = 0; i < rule && !err; i++)
		err = stack_buf_add(b, "-", 1);
	return err ?: stack_buf_add(b, "\n", 1);
}
