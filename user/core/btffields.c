// SPDX-License-Identifier: GPL-2.0
/* Streams the BTF format (Documentation/bpf/btf.rst): a header, the type section (struct
 * btf_type records, each followed by kind-specific data), then the string section.  Names are
 * found in one pass over the strings, the named structs' members in one pass over the types, which
 * also notes where each anonymous struct or union lies: a member inside one (vm_start is two
 * levels down since 6.x's vm_area_struct union) is then read from there, as is a member of a
 * typedef's anonymous struct (x86's mm_context_t).  Memory: a 64 KB buffer
 * and 16 bytes per anonymous struct or union (~10k in a distribution kernel). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <linux/btf.h>
#include <linux/types.h>
#include "core/btffields.h"

#define CHUNK 65536
#define MAX_NAME 64       /* longer strings are no name we look for */
#define MAX_NAMES 64
#define MAX_PENDING 256
#define MAX_FIELDS 32
#define MAX_DEPTH 4       /* levels of anonymous structs and unions looked into */

struct reader {
	int fd;
	__u64 pos, end; /* file offsets: the next byte to fetch, the end of the section */
	size_t have, at;
	unsigned char *buf; /* store, or the section in the file's mapping */
	unsigned char store[CHUNK];
};

/* map: the whole file mapped, or NULL to read it a chunk at a time.  Mapped, the section is one
 * buffer read to its end already. */
static void reader_start(struct reader *r, int fd, const unsigned char *map, __u64 start,
			 __u64 end)
{
	r->fd = fd;
	r->pos = map ? end : start;
	r->end = end;
	r->at = 0;
	r->have = map ? end - start : 0;
	r->buf = map ? (unsigned char *)map + start : r->store;
}

/* Makes the buffer hold unread bytes.  0, or -EINVAL at the end of the section. */
static int reader_fill(struct reader *r)
{
	size_t want = r->end - r->pos < CHUNK ? r->end - r->pos : CHUNK;
	ssize_t got;

	if (r->at < r->have)
		return 0;
	if (!want)
		return -EINVAL;
	got = pread(r->fd, r->buf, want, r->pos);
	if (got <= 0)
		return got < 0 ? -errno : -EINVAL;
	r->pos += got;
	r->have = got;
	r->at = 0;
	return 0;
}

/* The next len (<= CHUNK) bytes of the section, in the buffer: the ones left are moved to its
 * front before more are read.  NULL past the section's end. */
static const void *reader_need(struct reader *r, size_t len)
{
	while (r->have - r->at < len) {
		size_t left = r->have - r->at, want = CHUNK - left;
		ssize_t got;

		if (want > r->end - r->pos)
			want = r->end - r->pos;
		if (!want)
			return NULL;
		memmove(r->buf, r->buf + r->at, left);
		got = pread(r->fd, r->buf + left, want, r->pos);
		if (got <= 0)
			return NULL;
		r->pos += got;
		r->have = left + got;
		r->at = 0;
	}
	return r->buf + r->at;
}

/* The next len bytes of the section into dst (NULL: skipped).  0, or -EINVAL past its end. */
static int reader_get(struct reader *r, void *dst, size_t len)
{
	unsigned char *out = dst;

	if (!dst && r->have - r->at >= len) {
		r->at += len;
		return 0;
	}

	while (len) {
		int err = reader_fill(r);
		size_t n = r->have - r->at < len ? r->have - r->at : len;

		if (err)
			return err;
		if (out) {
			memcpy(out, r->buf + r->at, n);
			out += n;
		}
		r->at += n;
		len -= n;
	}
	return 0;
}

/* File offset of the next byte. */
static __u64 reader_tell(const struct reader *r)
{
	return r->pos - (r->have - r->at);
}

static bool reader_done(const struct reader *r)
{
	return r->at == r->have && r->pos == r->end;
}

/* Every name asked for (struct and member names), and where the string section has it. */
struct names {
	const char *name[MAX_NAMES];
	size_t len[MAX_NAMES];
	__u32 off[MAX_NAMES]; /* 0: not found (offset 0 is the empty string) */
	__u64 lens;           /* bit L: a name of length L is asked for */
	__u64 firsts[4];      /* bit C: a name begins with byte C */
	size_t nr;
};

static int name_index(struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->nr; i++)
		if (!strcmp(ns->name[i], name))
			return i;
	if (ns->nr == MAX_NAMES || strlen(name) >= MAX_NAME)
		return -1;
	ns->name[ns->nr] = name;
	ns->len[ns->nr] = strlen(name);
	ns->lens |= 1ULL << ns->len[ns->nr];
	ns->firsts[(unsigned char)name[0] / 64] |= 1ULL << ((unsigned char)name[0] % 64);
	ns->off[ns->nr] = 0;
	return ns->nr++;
}

/* Whether the string that ends at (or runs past) the chunk's end is one we look for: the
 * strings are NUL-separated, and a name split across chunks is carried in cur.  Most strings
 * have a length no name has (a quarter of a million strings a kernel). */
static void match_name(struct names *ns, const char *s, size_t len, __u32 start)
{
	unsigned char c = s[0];

	if (!len || len >= MAX_NAME || !(ns->lens >> len & 1) || !(ns->firsts[c / 64] >> (c % 64) & 1))
		return;
	for (size_t i = 0; i < ns->nr; i++)
		if (!ns->off[i] && ns->len[i] == len && !memcmp(s, ns->name[i], len))
			ns->off[i] = start;
}

static int find_names(struct reader *r, struct names *ns)
{
	char cur[MAX_NAME];
	size_t len = 0;       /* of the string carried over from the last chunk */
	__u32 start = 0, off = 0;
	int err;

	while (!reader_done(r)) {
		const char *p, *end, *nul;

		err = reader_fill(r);
		if (err)
			return err;
		p = (const char *)r->buf + r->at;
		end = (const char *)r->buf + r->have;
		while (p < end) {
			nul = memchr(p, '\0', end - p);
			if (!nul) {
				/* the string goes on in the next chunk */
				size_t n = end - p;

				if (len + n < MAX_NAME)
					memcpy(cur + len, p, n);
				len += n;
				off += n;
				break;
			}
			if (len) {
				if (len + (nul - p) < MAX_NAME) {
					memcpy(cur + len, p, nul - p);
					match_name(ns, cur, len + (nul - p), start);
				}
			} else {
				match_name(ns, p, nul - p, start);
			}
			off += nul - p + 1;
			start = off;
			len = 0;
			p = nul + 1;
		}
		r->at = r->have;
	}
	return 0;
}

/* Bytes after a struct btf_type that belong to it. */
static size_t kind_extra(__u32 info)
{
	__u32 vlen = BTF_INFO_VLEN(info);

	switch (BTF_INFO_KIND(info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_ENUM64:
		return vlen * 12; /* struct btf_enum64: name_off, val_lo32, val_hi32 */
	default:
		return 0;       /* PTR, FWD, TYPEDEF, modifiers, FUNC, FLOAT, TYPE_TAG */
	}
}

/* Where an anonymous struct or union's members are in the file. */
struct anon {
	__u32 id;
	__u16 vlen;
	__u8 kflag;
	__u64 members;
};

struct scan {
	struct btf_field *fields;
	size_t n;
	int struct_name[MAX_FIELDS], member_name[MAX_FIELDS]; /* indexes into names */
	struct names names;
	struct anon *anons; /* in id order */
	size_t nr_anons, cap_anons;
};

static int note_anon(struct scan *s, __u32 id, const struct btf_type *t, __u64 members)
{
	if (s->nr_anons == s->cap_anons) {
		size_t cap = s->cap_anons ? s->cap_anons * 2 : 1024;
		struct anon *a = realloc(s->anons, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		s->anons = a;
		s->cap_anons = cap;
	}
	s->anons[s->nr_anons++] = (struct anon){ id, BTF_INFO_VLEN(t->info), BTF_INFO_KFLAG(t->info),
						 members };
	return 0;
}

static const struct anon *find_anon(const struct scan *s, __u32 id)
{
	size_t lo = 0, hi = s->nr_anons;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->anons[mid].id == id)
			return &s->anons[mid];
		if (s->anons[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Byte offset of a member at bit offset `bits`, or -1 for a bitfield or an unaligned one. */
static int member_byte(const struct btf_member *m, bool kflag)
{
	__u32 bits = kflag ? BTF_MEMBER_BIT_OFFSET(m->offset) : m->offset;

	if ((kflag && BTF_MEMBER_BITFIELD_SIZE(m->offset)) || bits % 8)
		return -1;
	return bits / 8;
}

/* Field i in the members of an anonymous struct or union at base, and in those inside it. */
static int search_anon(struct scan *s, int fd, size_t i, __u32 id, int base, int depth)
{
	const struct anon *a = find_anon(s, id);
	struct btf_member m;
	__u32 want = s->names.off[s->member_name[i]];

	if (!a || depth >= MAX_DEPTH)
		return -1;
	for (__u32 j = 0; j < a->vlen; j++) {
		int off;

		if (pread(fd, &m, sizeof(m), a->members + j * sizeof(m)) != sizeof(m))
			return -1;
		off = member_byte(&m, a->kflag);
		if (m.name_off && m.name_off == want)
			return off < 0 ? -1 : base + off;
		if (!m.name_off && off >= 0) {
			off = search_anon(s, fd, i, m.type, base + off, depth + 1);
			if (off >= 0)
				return off;
		}
	}
	return -1;
}

/* The members of a struct a field names: its offset when the member is there by name; an
 * anonymous struct or union, searched once every type has been seen. */
struct pending {
	size_t field;
	__u32 type_id;
	int base;
};

static int scan_members(struct reader *r, struct scan *s, const struct btf_type *t,
			struct pending *pend, size_t *nr_pend)
{
	bool kflag = BTF_INFO_KFLAG(t->info);
	struct btf_member m;
	int err;

	for (__u32 j = 0; j < BTF_INFO_VLEN(t->info); j++) {
		err = reader_get(r, &m, sizeof(m));
		if (err)
			return err;
		for (size_t i = 0; i < s->n; i++) {
			int off = member_byte(&m, kflag);

			if (s->fields[i].offset >= 0 ||
			    t->name_off != s->names.off[s->struct_name[i]])
				continue;
			if (m.name_off && m.name_off == s->names.off[s->member_name[i]])
				s->fields[i].offset = off;
			else if (!m.name_off && off >= 0 && *nr_pend < MAX_PENDING)
				pend[(*nr_pend)++] = (struct pending){ i, m.type, off };
		}
	}
	return 0;
}

static bool wanted_struct(const struct scan *s, __u32 name_off)
{
	for (size_t i = 0; name_off && i < s->n; i++)
		if (name_off == s->names.off[s->struct_name[i]])
			return true;
	return false;
}

/* One pass over the types: the named structs' members, and where the anonymous ones are. */
static int scan_types(struct reader *r, struct scan *s, struct pending *pend, size_t *nr_pend)
{
	struct btf_type t;
	__u32 id = 0;
	int err;

	while (!reader_done(r)) {
		const void *p = reader_need(r, sizeof(t));
		__u32 kind;

		if (!p)
			return -EINVAL;
		/* read in place: a copy and a call per type were a third of the scan */
		memcpy(&t, p, sizeof(t));
		r->at += sizeof(t);
		id++;
		kind = BTF_INFO_KIND(t.info);
		if (kind == BTF_KIND_TYPEDEF && wanted_struct(s, t.name_off)) {
			/* the name of an anonymous struct (x86's mm_context_t): searched as one */
			for (size_t i = 0; i < s->n; i++)
				if (t.name_off == s->names.off[s->struct_name[i]] &&
				    *nr_pend < MAX_PENDING)
					pend[(*nr_pend)++] = (struct pending){ i, t.type, 0 };
		} else if (kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION) {
			if (!t.name_off) {
				err = note_anon(s, id, &t, reader_tell(r));
				if (err)
					return err;
			} else if (wanted_struct(s, t.name_off)) {
				err = scan_members(r, s, &t, pend, nr_pend);
				if (err)
					return err;
				continue;
			}
		}
		err = reader_get(r, NULL, kind_extra(t.info));
		if (err)
			return err;
	}
	return 0;
}

static int read_header(int fd, struct btf_header *h, __u64 *types, __u64 *strs)
{
	struct stat st;
	ssize_t got = pread(fd, h, sizeof(*h), 0);

	if (got < 0)
		return -errno;
	if (got != sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h))
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	*types = (__u64)h->hdr_len + h->type_off;
	*strs = (__u64)h->hdr_len + h->str_off;
	if (*types + h->type_len > (__u64)st.st_size || *strs + h->str_len > (__u64)st.st_size)
		return -EINVAL;
	return 0;
}

int btf_field_offsets(const char *path, struct btf_field *fields, size_t n)
{
	static struct reader r; /* its 64 KB buffer: not on the stack */
	struct scan s = { .fields = fields };
	struct pending pend[MAX_PENDING];
	size_t nr_pend = 0;
	struct btf_header h;
	__u64 types = 0, strs = 0;
	unsigned char *map = MAP_FAILED;
	struct stat st;
	int fd, err;

	for (size_t i = 0; i < n; i++)
		fields[i].offset = -1;
	if (n > MAX_FIELDS)
		return -E2BIG;
	s.n = n;
	for (size_t i = 0; i < n; i++) {
		s.struct_name[i] = name_index(&s.names, fields[i].type);
		s.member_name[i] = name_index(&s.names, fields[i].member);
		if (s.struct_name[i] < 0 || s.member_name[i] < 0)
			return -E2BIG;
	}
	fd = open(path ? path : "/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = read_header(fd, &h, &types, &strs);
	if (err)
		goto cleanup;
	/* the kernel's BTF is read 4 KB a call (kernfs), 1,300 calls; since Linux 6.16 it can be
	 * mapped instead (a539e2a6d51d, "btf: Allow mmap of vmlinux btf"); not a file given by
	 * path, which could shrink under the mapping */
	if (!path && !fstat(fd, &st) && st.st_size > 0)
		map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	reader_start(&r, fd, map == MAP_FAILED ? NULL : map, strs, strs + h.str_len);
	err = find_names(&r, &s.names);
	if (err)
		goto cleanup;
	reader_start(&r, fd, map == MAP_FAILED ? NULL : map, types, types + h.type_len);
	err = scan_types(&r, &s, pend, &nr_pend);
	for (size_t k = 0; !err && k < nr_pend; k++) {
		struct btf_field *f = &fields[pend[k].field];

		if (f->offset < 0)
			f->offset = search_anon(&s, fd, pend[k].field, pend[k].type_id, pend[k].base, 0);
	}
cleanup:
	if (map != MAP_FAILED)
		munmap(map, st.st_size);
	free(s.anons);
	close(fd);
	return err;
}
