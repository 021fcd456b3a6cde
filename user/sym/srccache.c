// SPDX-License-Identifier: GPL-2.0
/* The persistent cache of inline chains and lines (sym/srccache.h).
 *
 * Layout of a cache file: struct src_hdr, nr_regions struct region (sorted, not overlapping),
 * nr_entries struct ent (where each entry is in the data, its size and checksum), then the data.
 * An entry: struct ent_hdr, its scopes (struct ent_scope), their ranges, its line rows
 * (struct ent_row), its files (a string reference each), then its strings, NUL-terminated; a
 * string reference is its offset in them plus one, 0 for none.  Every entry holds its own
 * strings, so a later store copies it as it is.  All little-endian, as the machine that wrote
 * it: a file from another byte order fails its checks. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/grow.h"
#include "core/common.h"
#include "core/diskcache.h"
#include "core/hashtab.h"
#include "core/sorted.h"
#include "out/stack.h"
#include "sym/srccache.h"

#define SRC_MAGIC "BPFPSRC"
/* A file at most (what a store writes, what a read accepts): libc's every function is ~4 MB. */
#define SRC_FILE_MAX (64ULL << 20)
/* Counts an entry holds at most: more is not an entry a lookup wrote. */
#define ENT_MAX (1u << 24)

struct src_hdr {
	char magic[8];
	__u32 version;
	__u32 pad;
	char key[DISK_CACHE_KEY_MAX];  /* NUL-terminated; must match the file's name */
	__u64 nr_regions, nr_entries, data_size;
	__u64 checksum;                /* of the header (this field 0), regions and entries */
	/* build-id keys: the file it was made from (struct disk_cache_src); 0 otherwise */
	__u64 ident[7];
	__u64 cfi_hash;
};

struct region {
	__u64 lo, hi;                  /* [lo, hi) */
	__u32 entry;                   /* SRC_FUNCTION, SRC_NO_FUNCTION: an entry's number */
	__u32 kind;                    /* enum src_region */
};

struct ent {
	__u64 off, size;               /* in the data */
	__u64 checksum;                /* of its bytes */
};

struct ent_hdr {
	__u32 nr_scopes, nr_ranges, nr_rows, nr_files, str_size, pad;
};

struct ent_scope {
	__u32 next, ranges, nr_ranges, call_line;
	__u32 name, call_file;         /* string references */
	__u32 kind;
};

struct ent_row {
	__u64 addr;
	__u32 line;
	__u16 file;
	__u8 end, pad;
};

struct src_cache {
	struct disk_cache *dc;
	struct src_cache_stats st;
};

struct src_file {
	struct src_cache *c;
	char name[DISK_CACHE_KEY_MAX + 16];
	char key[DISK_CACHE_KEY_MAX];
	__u64 ident[7], cfi_hash;      /* what the header is written with (struct src_hdr) */
	bool unhashed;                 /* a build-id key with no hash: nothing stored */
	int fd;                        /* the file read, or -1 */
	bool dirty;                    /* an entry of it was found corrupt, or the header's
					* identity is the file's no more: written again */
	__u64 data_off;                /* where its data begins */
	struct region *r;              /* read */
	size_t nr_r;
	struct ent *e;
	size_t nr_e;
	/* added by this run: regions, entries (their offsets in buf) */
	struct region *ar;
	size_t nr_ar, cap_ar;
	struct ent *ae;
	size_t nr_ae, cap_ae;
	char *buf;
	size_t len, cap;
};

struct src_cache *src_cache__new(struct disk_cache *dc)
{
	struct src_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->dc = disk_cache__get(dc);
	return c;
}

void src_cache__free(struct src_cache *c)
{
	if (!c)
		return;
	disk_cache__put(c->dc);
	free(c);
}

void src_cache__stats(const struct src_cache *c, struct src_cache_stats *out)
{
	*out = c->st;
}

const char *src_cache__dir(const struct src_cache *c)
{
	return disk_cache__dir(c->dc);
}

static __u64 hdr_checksum(const struct src_hdr *h, const struct region *r, const struct ent *e)
{
	struct src_hdr copy = *h;
	__u64 sum;

	copy.checksum = 0;
	sum = disk_cache_hash(0, &copy, sizeof(copy));
	sum = disk_cache_hash(sum, r, h->nr_regions * sizeof(*r));
	return disk_cache_hash(sum, e, h->nr_entries * sizeof(*e));
}

/* The regions' shape a lookup relies on: sorted, not overlapping, their entries there. */
static bool regions_valid(const struct region *r, size_t nr, size_t nr_e)
{
	for (size_t i = 0; i < nr; i++) {
		if (r[i].lo >= r[i].hi || (i && r[i].lo < r[i - 1].hi) ||
		    r[i].kind < SRC_FUNCTION || r[i].kind > SRC_UNCOVERED ||
		    (r[i].kind != SRC_UNCOVERED && r[i].entry >= nr_e))
			return false;
	}
	return true;
}

/* Drops what was read of the file: nothing more is answered from it. */
static void forget_read(struct src_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->r);
	free(f->e);
	f->r = NULL;
	f->e = NULL;
	f->nr_r = f->nr_e = 0;
}

static void reject(struct src_file *f)
{
	forget_read(f);
	f->c->st.rejected++;
	disk_cache__reject(f->c->dc, f->name, "inline cache");
}

/* The header, regions and entries of the cache file, if there is a sound one of src's file
 * (src NULL: the file this run just stored, its identity f's). */
static void read_file(struct src_file *f, struct disk_cache_src *src)
{
	bool moved = false;

	struct src_hdr h;
	struct stat st;
	__u64 size;

	f->fd = disk_cache__open_file(f->c->dc, f->name, sizeof(h), SRC_FILE_MAX, &st,
				      "inline cache");
	if (f->fd == -EBADMSG)
		f->c->st.rejected++;
	if (f->fd < 0) {
		f->fd = -1;
		return;
	}
	if (disk_cache_read(f->fd, &h, sizeof(h), 0) || memcmp(h.magic, SRC_MAGIC, sizeof(SRC_MAGIC)) ||
	    h.version != SRC_CACHE_VERSION || !memchr(h.key, 0, sizeof(h.key)) ||
	    strcmp(h.key, f->key) || h.nr_regions > SRC_FILE_MAX / sizeof(struct region) ||
	    h.nr_entries > SRC_FILE_MAX / sizeof(struct ent) || h.data_size > SRC_FILE_MAX)
		goto bad;
	size = sizeof(h) + h.nr_regions * sizeof(struct region) + h.nr_entries * sizeof(struct ent);
	if (size + h.data_size != (__u64)st.st_size)
		goto bad;
	/* another build's bytes under the same build-id and size (a binary patched in place):
	 * not this file's, and written over at the store */
	if (src && !disk_cache_src_same(src, h.ident, h.cfi_hash, &moved)) {
		forget_read(f);
		return;
	}
	f->r = malloc((h.nr_regions ?: 1) * sizeof(*f->r));
	f->e = malloc((h.nr_entries ?: 1) * sizeof(*f->e));
	if (!f->r || !f->e) {
		forget_read(f);
		return;
	}
	if (disk_cache_read(f->fd, f->r, h.nr_regions * sizeof(*f->r), sizeof(h)) ||
	    disk_cache_read(f->fd, f->e, h.nr_entries * sizeof(*f->e),
		      sizeof(h) + h.nr_regions * sizeof(*f->r)) ||
	    hdr_checksum(&h, f->r, f->e) != h.checksum ||
	    !regions_valid(f->r, h.nr_regions, h.nr_entries))
		goto bad;
	for (size_t i = 0; i < h.nr_entries; i++)
		if (f->e[i].size < sizeof(struct ent_hdr) || f->e[i].off > h.data_size ||
		    f->e[i].size > h.data_size - f->e[i].off)
			goto bad;
	f->nr_r = h.nr_regions;
	f->nr_e = h.nr_entries;
	f->data_off = size;
	f->cfi_hash = h.cfi_hash;
	f->dirty = moved; /* the next run takes it by identity, unhashed */
	f->c->st.files_read++;
	disk_cache__touch(f->fd); /* eviction takes the least recently used first */
	return;
bad:
	reject(f);
}

struct src_file *src_file__open(struct src_cache *c, const char *key, struct disk_cache_src *src)
{
	struct src_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->c = c;
	f->fd = -1;
	snprintf(f->key, sizeof(f->key), "%s", key);
	snprintf(f->name, sizeof(f->name), "%s" SRC_CACHE_SUFFIX, key);
	if (disk_cache_key_ok(key))
		read_file(f, src);
	/* what a store writes in the header: hashed now, while src->fd is there, only where
	 * no file of the same bytes was read (a build-id key whose sections cannot be hashed
	 * stores nothing) */
	if (src->fd >= 0) {
		memcpy(f->ident, src->ident, sizeof(f->ident));
		if (!f->cfi_hash)
			f->cfi_hash = disk_cache_src_hash(src);
		f->unhashed = !f->cfi_hash;
	}
	return f;
}

bool src_file__loaded(const struct src_file *f)
{
	return f->nr_r > 0;
}

enum src_region src_file__find(struct src_file *f, __u64 vaddr, __u32 *entry)
{
	/* the last region starting at or below vaddr */
	size_t lo = FIRST_ABOVE(f->r, f->nr_r, lo, vaddr);

	if (!lo || vaddr >= f->r[lo - 1].hi)
		return SRC_NONE;
	*entry = f->r[lo - 1].entry;
	return f->r[lo - 1].kind;
}

/* A string reference of an entry's strings str (size bytes, NUL-terminated), interned. */
static const char *string_at(const char *str, __u32 size, __u32 ref, struct stack_names *strs,
			     bool *bad)
{
	int id;

	if (!ref)
		return NULL;
	if (ref > size) {
		*bad = true;
		return NULL;
	}
	id = stack_names__intern(strs, str + ref - 1, strlen(str + ref - 1));
	return id < 0 ? NULL : stack_names__str(strs, id);
}

static void free_scopes(struct fn_scopes *x)
{
	if (!x)
		return;
	free(x->s);
	free(x->r);
	free(x->lines.rows);
	free(x->lines.files);
	free(x);
}

/* The entry's bytes b (size) made a struct fn_scopes, every index checked.  0, -ENOMEM or
 * -EBADMSG. */
static int parse_entry(const char *b, __u64 size, struct stack_names *strs, struct fn_scopes **out)
{
	struct ent_hdr h;
	struct fn_scopes *x = NULL;
	const char *p = b + sizeof(h), *str;
	bool bad = false;
	__u64 need;

	memcpy(&h, b, sizeof(h));
	if (h.nr_scopes > ENT_MAX || h.nr_ranges > ENT_MAX || h.nr_rows > ENT_MAX ||
	    h.nr_files > UINT16_MAX + 1u || h.str_size > ENT_MAX)
		return -EBADMSG;
	need = sizeof(h) + (__u64)h.nr_scopes * sizeof(struct ent_scope) +
	       (__u64)h.nr_ranges * sizeof(struct addr_range) +
	       (__u64)h.nr_rows * sizeof(struct ent_row) + (__u64)h.nr_files * sizeof(__u32) +
	       h.str_size;
	if (need != size || (h.str_size && b[size - 1]))
		return -EBADMSG;
	str = b + size - h.str_size;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->s = malloc((h.nr_scopes ?: 1) * sizeof(*x->s));
	x->r = malloc((h.nr_ranges ?: 1) * sizeof(*x->r));
	x->lines.rows = malloc((h.nr_rows ?: 1) * sizeof(*x->lines.rows));
	x->lines.files = malloc((h.nr_files ?: 1) * sizeof(*x->lines.files));
	if (!x->s || !x->r || !x->lines.rows || !x->lines.files) {
		free_scopes(x);
		return -ENOMEM;
	}
	x->nr = x->cap = h.nr_scopes;
	x->nr_r = x->cap_r = h.nr_ranges;
	x->lines.nr_rows = h.nr_rows;
	x->lines.nr_files = h.nr_files;
	for (__u32 i = 0; i < h.nr_scopes; i++, p += sizeof(struct ent_scope)) {
		struct ent_scope e;

		memcpy(&e, p, sizeof(e));
		/* a scope's own scopes follow it, up to next: a descent always moves on */
		if (e.next <= i || e.next > h.nr_scopes || e.ranges > h.nr_ranges ||
		    e.nr_ranges > h.nr_ranges - e.ranges || e.kind < SCOPE_ALWAYS ||
		    e.kind > SCOPE_INLINED || (i == 0 && e.kind != SCOPE_FUNCTION))
			bad = true;
		x->s[i] = (struct scope){ e.next, e.ranges, e.nr_ranges, e.kind, e.call_line,
					  string_at(str, h.str_size, e.name, strs, &bad),
					  string_at(str, h.str_size, e.call_file, strs, &bad) };
	}
	memcpy(x->r, p, h.nr_ranges * sizeof(*x->r));
	p += h.nr_ranges * sizeof(*x->r);
	for (__u32 i = 0; i < h.nr_rows; i++, p += sizeof(struct ent_row)) {
		struct ent_row e;

		memcpy(&e, p, sizeof(e));
		if (e.file >= h.nr_files || e.end > 1 || (i && e.addr < x->lines.rows[i - 1].addr))
			bad = true;
		x->lines.rows[i] = (struct line_row){ e.addr, e.line, e.file, e.end };
	}
	for (__u32 i = 0; i < h.nr_files; i++, p += sizeof(__u32)) {
		__u32 ref;

		memcpy(&ref, p, sizeof(ref));
		x->lines.files[i] = string_at(str, h.str_size, ref, strs, &bad);
	}
	if (bad) {
		free_scopes(x);
		return -EBADMSG;
	}
	*out = x;
	return 0;
}

int src_file__entry(struct src_file *f, __u32 entry, enum src_region kind,
		    struct stack_names *strs, struct fn_scopes **x)
{
	char *b;
	int err;

	if (entry >= f->nr_e)
		return -ENOENT;
	b = malloc(f->e[entry].size);
	if (!b)
		return -ENOMEM;
	err = disk_cache_read(f->fd, b, f->e[entry].size, f->data_off + f->e[entry].off);
	if (!err && disk_cache_hash(0, b, f->e[entry].size) != f->e[entry].checksum)
		err = -EBADMSG;
	err = err ?: parse_entry(b, f->e[entry].size, strs, x);
	free(b);
	/* a function's entry has its scopes, code of no function's none */
	if (!err && (kind == SRC_FUNCTION) != ((*x)->nr > 0)) {
		free_scopes(*x);
		err = -EBADMSG;
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		/* the other entries hold: this one's regions are looked up in the debug info
		 * again, and the next store writes the file without it */
		for (size_t i = 0; i < f->nr_r; i++)
			if (f->r[i].kind != SRC_UNCOVERED && f->r[i].entry == entry)
				f->r[i].kind = SRC_NONE;
		f->c->st.rejected++;
		f->dirty = true;
		p_info("inline cache: an entry of %s/%s rejected (corrupt); looked up again",
		       disk_cache__dir(f->c->dc), f->name);
		return -EBADMSG;
	}
	f->c->st.entries_read++;
	return 0;
}

/* Room for n more bytes in f->buf.  0 or -ENOMEM. */
static int buf_room(struct src_file *f, size_t n)
{
	char *b;
	size_t cap;

	if (f->len + n <= f->cap)
		return 0;
	cap = (f->len + n) * 2;
	b = realloc(f->buf, cap);
	if (!b)
		return -ENOMEM;
	f->buf = b;
	f->cap = cap;
	return 0;
}

/* The strings of an entry being written: each once, by its interned address. */
struct strtab {
	struct hashtab seen;   /* string address -> reference */
	char *s;
	size_t len, cap;
};

static __u32 str_ref(struct strtab *t, const char *str, int *err)
{
	void *hit;
	size_t n;

	if (!str)
		return 0;
	hit = hashtab_get(&t->seen, (uintptr_t)str, 0);
	if (hit)
		return (uintptr_t)hit;
	n = strlen(str) + 1;
	if (t->len + n > t->cap) {
		size_t cap = (t->len + n) * 2;
		char *m = realloc(t->s, cap);

		if (!m) {
			*err = -ENOMEM;
			return 0;
		}
		t->s = m;
		t->cap = cap;
	}
	memcpy(t->s + t->len, str, n);
	t->len += n;
	if (hashtab_put(&t->seen, (uintptr_t)str, 0, (void *)(uintptr_t)(t->len - n + 1)))
		*err = -ENOMEM;
	return t->len - n + 1;
}

/* Entry x (its scopes unless lines_only) appended to f->buf.  0 or -errno. */
static int write_entry(struct src_file *f, const struct fn_scopes *x, bool lines_only)
{
	struct strtab t = { 0 };
	struct ent_hdr h = { 0 };
	size_t nr_scopes = lines_only ? 0 : x->nr, nr_ranges = lines_only ? 0 : x->nr_r;
	size_t at = f->len, size;
	char *p;
	int err = 0;

	if (nr_scopes > ENT_MAX || nr_ranges > ENT_MAX || x->lines.nr_rows > ENT_MAX ||
	    x->lines.nr_files > UINT16_MAX + 1u)
		return -E2BIG;
	h.nr_scopes = nr_scopes;
	h.nr_ranges = nr_ranges;
	h.nr_rows = x->lines.nr_rows;
	h.nr_files = x->lines.nr_files;
	size = sizeof(h) + nr_scopes * sizeof(struct ent_scope) +
	       nr_ranges * sizeof(struct addr_range) + h.nr_rows * sizeof(struct ent_row) +
	       h.nr_files * sizeof(__u32);
	if (buf_room(f, size))
		return -ENOMEM;
	p = f->buf + at + sizeof(h);
	for (size_t i = 0; i < nr_scopes; i++, p += sizeof(struct ent_scope)) {
		const struct scope *s = &x->s[i];
		struct ent_scope e = { s->next, s->ranges, s->nr_ranges, s->call_line,
				       str_ref(&t, s->name, &err), str_ref(&t, s->call_file, &err),
				       s->kind };

		memcpy(p, &e, sizeof(e));
	}
	if (nr_ranges) /* (a lines-only entry's x has none) */
		memcpy(p, x->r, nr_ranges * sizeof(*x->r));
	p += nr_ranges * sizeof(*x->r);
	for (size_t i = 0; i < h.nr_rows; i++, p += sizeof(struct ent_row)) {
		const struct line_row *r = &x->lines.rows[i];
		struct ent_row e = { r->addr, r->line, r->file, r->end, 0 };

		memcpy(p, &e, sizeof(e));
	}
	for (size_t i = 0; i < h.nr_files; i++, p += sizeof(__u32)) {
		__u32 ref = str_ref(&t, x->lines.files[i], &err);

		memcpy(p, &ref, sizeof(ref));
	}
	h.str_size = t.len;
	if (!err && t.len > ENT_MAX)
		err = -E2BIG;
	if (!err && buf_room(f, size + t.len))
		err = -ENOMEM;
	if (!err) {
		memcpy(f->buf + at, &h, sizeof(h));
		if (t.len)
			memcpy(f->buf + at + size, t.s, t.len);
		f->len = at + size + t.len;
	}
	hashtab_clear(&t.seen, NULL);
	free(t.s);
	return err;
}

long src_file__add_entry(struct src_file *f, const struct fn_scopes *x, bool lines_only)
{
	size_t at = f->len;
	int err;

	if (f->unhashed)
		return -EINVAL; /* never stored: not held either */
	if (f->len > SRC_FILE_MAX / 2)
		return -E2BIG; /* enough for a file: the rest is looked up in its debug info */
	if (ARRAY_GROW(f->ae, f->cap_ae, f->nr_ae + 1))
		return -ENOMEM;
	err = write_entry(f, x, lines_only);
	if (err)
		return err;
	f->ae[f->nr_ae] = (struct ent){ at, f->len - at, disk_cache_hash(0, f->buf + at, f->len - at) };
	return f->nr_ae++;
}

int src_file__add_region(struct src_file *f, enum src_region kind, __u64 lo, __u64 hi,
			 __u32 entry)
{
	__u32 e;

	if (lo >= hi || (kind != SRC_UNCOVERED && entry >= f->nr_ae))
		return -EINVAL;
	if (f->unhashed)
		return 0;
	/* held already (a file put in the cache whole, opened again for an address it could not
	 * hold): nothing to store, and the file is not written again for it */
	if (src_file__find(f, lo, &e) != SRC_NONE)
		return 0;
	/* a function's other addresses looked up meanwhile find the same region */
	if (f->nr_ar && f->ar[f->nr_ar - 1].lo == lo && f->ar[f->nr_ar - 1].hi == hi)
		return 0;
	if (ARRAY_GROW(f->ar, f->cap_ar, f->nr_ar + 1))
		return -ENOMEM;
	f->ar[f->nr_ar++] = (struct region){ lo, hi, kind == SRC_UNCOVERED ? 0 : entry, kind };
	f->c->st.regions_added++;
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether [lo, hi) overlaps one of the nr regions r (sorted). */
static bool overlaps(const struct region *r, size_t nr, __u64 lo, __u64 hi)
{
	size_t a = FIRST_AT(r, nr, lo, hi);

	/* r[a - 1] is the last whose lo is below hi */
	return a && r[a - 1].hi > lo;
}

/* Where each entry of a file being stored comes from: one read (an offset in the data of the
 * file read), or this run's (in buf). */
struct ent_from {
	__u64 off;
	bool added;
};

struct store_job {
	struct src_file *f;
	const struct src_hdr *h;
	const struct region *r;
	const struct ent *e;
	const struct ent_from *from;
	char *scratch;               /* the largest entry read, at most */
};

/* The file a store writes: its header, regions and entries, then the entries' bytes, one at a
 * time (those read copied through scratch and checked again: a file replaced under us is not
 * copied blindly), so that what a store holds is its largest entry, not the file. */
static int write_store(int fd, void *ctx)
{
	const struct store_job *j = ctx;
	const struct src_file *f = j->f;
	int err;

	err = disk_cache_write(fd, j->h, sizeof(*j->h));
	err = err ?: disk_cache_write(fd, j->r, j->h->nr_regions * sizeof(*j->r));
	err = err ?: disk_cache_write(fd, j->e, j->h->nr_entries * sizeof(*j->e));
	for (size_t i = 0; i < j->h->nr_entries && !err; i++) {
		/* this run's entries are in buf; a file with none added has no buf at all */
		const char *b = j->from[i].added ? f->buf + j->from[i].off : j->scratch;

		if (!j->from[i].added) {
			err = disk_cache_read(f->fd, j->scratch, j->e[i].size,
					      f->data_off + j->from[i].off);
			if (!err && disk_cache_hash(0, j->scratch, j->e[i].size) != j->e[i].checksum)
				err = -EBADMSG;
		}
		err = err ?: disk_cache_write(fd, b, j->e[i].size);
	}
	return err;
}

int src_file__store(struct src_file *f)
{
	struct src_hdr h = { .magic = SRC_MAGIC, .version = SRC_CACHE_VERSION };
	struct region *r = NULL;
	struct ent *e = NULL;
	struct ent_from *from = NULL;
	__u32 *old_to_new = NULL, *add_to_new = NULL;
	char *scratch = NULL;
	size_t nr_r = 0, nr_e = 0, len = 0, scratch_cap = 0;
	struct store_job job;
	int err = -ENOMEM;

	if (!f->nr_ar && !f->dirty)
		return 0;
	if (f->unhashed)
		return -EINVAL;
	r = malloc((f->nr_r + f->nr_ar) * sizeof(*r));
	e = malloc((f->nr_e + f->nr_ae + 1) * sizeof(*e));
	from = malloc((f->nr_e + f->nr_ae + 1) * sizeof(*from));
	old_to_new = malloc((f->nr_e + 1) * sizeof(*old_to_new));
	add_to_new = malloc((f->nr_ae + 1) * sizeof(*add_to_new));
	if (!r || !e || !from || !old_to_new || !add_to_new)
		goto cleanup;
	memset(old_to_new, 0xff, (f->nr_e + 1) * sizeof(*old_to_new));
	memset(add_to_new, 0xff, (f->nr_ae + 1) * sizeof(*add_to_new));
	/* the regions read, their entries copied as they are, those that still check */
	for (size_t i = 0; i < f->nr_r; i++) {
		struct region x = f->r[i];

		if (x.kind == SRC_NONE)
			continue; /* its entry was corrupt */
		if (x.kind != SRC_UNCOVERED && old_to_new[x.entry] == UINT32_MAX) {
			const struct ent *o = &f->e[x.entry];

			if (o->size > scratch_cap) {
				char *s = realloc(scratch, o->size);

				if (!s)
					goto cleanup;
				scratch = s;
				scratch_cap = o->size;
			}
			if (disk_cache_read(f->fd, scratch, o->size, f->data_off + o->off) ||
			    disk_cache_hash(0, scratch, o->size) != o->checksum)
				continue;
			e[nr_e] = (struct ent){ len, o->size, o->checksum };
			from[nr_e] = (struct ent_from){ o->off, false };
			old_to_new[x.entry] = nr_e++;
			len += o->size;
		}
		if (x.kind != SRC_UNCOVERED)
			x.entry = old_to_new[x.entry];
		r[nr_r++] = x;
	}
	/* then this run's, where they overlap none of those (nor each other) */
	if (f->nr_ar) /* (none: a file written again for its header) */
		qsort(f->ar, f->nr_ar, sizeof(*f->ar), by_lo);
	for (size_t i = 0, kept = nr_r; i < f->nr_ar; i++) {
		struct region x = f->ar[i];

		if (overlaps(r, kept, x.lo, x.hi) ||
		    (nr_r > kept && r[nr_r - 1].hi > x.lo))
			continue;
		if (x.kind != SRC_UNCOVERED && add_to_new[x.entry] == UINT32_MAX) {
			const struct ent *a = &f->ae[x.entry];

			e[nr_e] = (struct ent){ len, a->size, a->checksum };
			from[nr_e] = (struct ent_from){ a->off, true };
			add_to_new[x.entry] = nr_e++;
			len += a->size;
		}
		if (x.kind != SRC_UNCOVERED)
			x.entry = add_to_new[x.entry];
		r[nr_r++] = x;
	}
	qsort(r, nr_r, sizeof(*r), by_lo);
	snprintf(h.key, sizeof(h.key), "%s", f->key);
	memcpy(h.ident, f->ident, sizeof(h.ident));
	h.cfi_hash = f->cfi_hash;
	h.nr_regions = nr_r;
	h.nr_entries = nr_e;
	h.data_size = len;
	h.checksum = hdr_checksum(&h, r, e);
	job = (struct store_job){ f, &h, r, e, from, scratch };
	err = sizeof(h) + nr_r * sizeof(*r) + nr_e * sizeof(*e) + len > SRC_FILE_MAX ? -E2BIG :
	      disk_cache__store_with(f->c->dc, f->name,
				     sizeof(h) + nr_r * sizeof(*r) + nr_e * sizeof(*e) + len,
				     write_store, &job);
	if (!err) {
		f->c->st.files_stored++;
		f->nr_ar = f->nr_ae = f->len = 0;
		f->dirty = false;
	}
cleanup:
	free(r);
	free(e);
	free(from);
	free(old_to_new);
	free(add_to_new);
	free(scratch);
	return err;
}

size_t src_file__pending(const struct src_file *f)
{
	return f->cap + f->cap_ar * sizeof(*f->ar) + f->cap_ae * sizeof(*f->ae);
}

/* What this run added, given back (stored or not). */
static void forget_added(struct src_file *f)
{
	free(f->ar);
	free(f->ae);
	free(f->buf);
	f->ar = NULL;
	f->ae = NULL;
	f->buf = NULL;
	f->nr_ar = f->cap_ar = f->nr_ae = f->cap_ae = f->len = f->cap = 0;
}

int src_file__flush(struct src_file *f)
{
	int err = src_file__store(f);

	if (err) {
		f->c->st.flush_dropped += f->nr_ar;
	} else {
		forget_read(f);
		read_file(f, NULL);
		f->c->st.flushes++;
	}
	forget_added(f);
	return err;
}

void src_file__free(struct src_file *f)
{
	if (!f)
		return;
	forget_read(f);
	free(f->ar);
	free(f->ae);
	free(f->buf);
	free(f);
}
