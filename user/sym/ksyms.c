/* Kernel symbols from /proc/kallsyms, kept compact: a system-wide profile must stay within a few
 * MB of RSS, and the file is 5 MB of text with 120k+ lines.  Only code symbols are kept (frames
 * never point into data), as 16-byte entries plus one arena of names; the file is streamed, never
 * held whole.  Sorted once; lookups are a binary search.  A kernel built with function padding
 * (CONFIG_FUNCTION_PADDING_BYTES: IBT, call depth tracking) lists a __pfx_NAME before almost every
 * NAME, nearly half the lines (57,846 of 122,183 here): such a prefix is no entry of its own but
 * a size on the function's, and its name is made when an address falls in it.  A few data symbols
 * are kept by name (ksyms__data_addr()): where the kernel's ORC tables are. */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "core/common.h"
#include "core/grow.h"
#include "core/sorted.h"
#include "sym/syms.h"

struct kent {
	__u64 addr;
	__u32 name;   /* offset in names */
	__u16 module; /* index in modules; 0 is the core kernel */
	__u8 rank;    /* 2 global, 1 local, 0 weak: which alias to show at a shared address */
	__u8 pfx;     /* bytes of its __pfx_ symbol just before it (0: none) */
};

struct ksyms {
	struct kent *ents;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	char **modules; /* "[kernel.kallsyms]", "[ext4]", ... */
	size_t nr_modules;
	struct ksym found; /* what ksyms__find hands out */
	char pfx_name[600]; /* the found name of a __pfx_ symbol (KSYM_NAME_LEN is 512) */
	__u32 *by_name;    /* entry indexes in name order, one per name; built on first use */
	size_t nr_names;
	__u64 data[3];     /* the addresses of kept_data[] (0: absent) */
	/* Only the core kernel's symbols, kept from an earlier run of this boot (ksyms__load_kept):
	 * addresses in [lo, hi) are answered from them, any other first reads the whole file. */
	bool partial;
	__u64 lo, hi;
	char *old_names;   /* the core names, still pointed to by symbols found before */
	/* The file's symbols outside the core kernel (modules', trampolines', other tools' BPF
	 * programs'), read once beside the kept core's (find_outside()) */
	struct ksyms *outside;
	bool outside_read;
	/* BPF programs' functions known without the file (ksyms__add_bpf()), by start */
	struct bpf_sym {
		__u64 start;
		__u32 len;
		char *name;
	} *bpf;
	size_t nr_bpf;
};

/* The data symbols kept, for the BPF kernel-stack walker (user/unwind/kstack.c). */
static const char *const kept_data[] = {
	"__start_orc_unwind_ip", "__stop_orc_unwind_ip", "__start_orc_unwind",
};

static const char kernel_module[] = "[kernel.kallsyms]";

/* A hex digit's value plus one, 0 for any other byte: the addresses are most of a line (16
 * digits), and a branch per digit class was the parse's hottest code. */
static const unsigned char hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
	['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hexval(char c)
{
	return (int)hex1[(unsigned char)c] - 1;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int type_rank(char type)
{
	if (type == 'W' || type == 'w' || type == 'V' || type == 'v')
		return 0;
	return type >= 'A' && type <= 'Z' ? 2 : 1;
}

struct kline {
	__u64 addr;
	const char *name, *module; /* module NULL for the core kernel */
	char type;
};

static bool is_code(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* 16 lowercase hex digits at p (a 64-bit kernel's every address in the file) as a number, all at
 * once: digit by digit, the addresses were a third of the parse.  false for anything else (upper
 * case, fewer digits: hand-written fixtures), which is then read digit by digit. */
static bool hex16(const char *p, __u64 *out)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const __u64 ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	__u64 w[2], v[2];

	memcpy(w, p, 16);
	for (int i = 0; i < 2; i++) {
		__u64 x = w[i], n, over9;

		/* each byte's value as a hex digit, right only for hex digits (up to 24 otherwise) */
		n = (x & 0x0f0f0f0f0f0f0f0fULL) + 9 * ((x >> 6) & ones);
		/* a hex digit is the one byte that value is written as: reject the rest */
		over9 = ((n + 0x76 * ones) & high) >> 7;
		if (((n + 0x70 * ones) & high) || n + 0x30 * ones + 0x27 * over9 != x)
			return false;
		/* the first digit is the lowest byte: eight nibbles, most significant first */
		n = __builtin_bswap64(n);
		n = (n | n >> 4) & 0x00ff00ff00ff00ffULL;
		n = (n | n >> 8) & 0x0000ffff0000ffffULL;
		v[i] = (n | n >> 16) & 0xffffffffULL;
	}
	*out = v[0] << 32 | v[1];
	return true;
#else
	return false;
#endif
}

/* Parses "ADDR TYPE NAME[<blank>[MODULE]]" in place, len bytes before its NUL (the real file uses
 * a tab before the module, hand-written fixtures often a space).  Returns false for lines to skip;
 * *zero is set for lines whose address is hidden (kptr_restrict prints zeros). */
static bool parse_line(char *p, size_t len, struct kline *l, bool *zero)
{
	char *name, *mod = NULL, *close;
	__u64 addr = 0;
	int v, digits = 0;
	char type;

	if (len > 16 && hex16(p, &addr)) {
		p += 16;
		digits = 16;
	}
	for (; (v = hexval(*p)) >= 0; p++, digits++)
		addr = addr << 4 | v;
	if (!digits || !is_blank(*p))
		return false;
	while (is_blank(*p))
		p++;
	type = *p++;
	if (!type || !is_blank(*p))
		return false;
	while (is_blank(*p))
		p++;
	name = p;
	p += strcspn(p, " \t");
	if (p == name)
		return false;
	if (*p) {
		*p++ = '\0';
		while (is_blank(*p))
			p++;
		close = *p == '[' ? strchr(p, ']') : NULL;
		if (close) {
			close[1] = '\0';
			mod = p;
		}
	}
	if (!addr) {
		*zero = true;
		return false;
	}
	l->addr = addr;
	l->name = name;
	l->module = mod;
	l->type = type;
	return is_code(type);
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static const char *ent_name(const struct ksyms *ks, const struct kent *e)
{
	return ks->names + e->name;
}

/* qsort has no context argument in C99: the table being sorted. */
static const struct ksyms *sorting;

/* Address order; among aliases, perf's choice first: global over local over weak, fewer leading
 * underscores, longer name (so "_text" loses to "srso_alias_untrain_ret" at _stext). */
static int cmp_kent(const void *a, const void *b)
{
	const struct kent *x = a, *y = b;
	const char *nx, *ny;
	size_t lx, ly;
	int ux, uy;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	nx = ent_name(sorting, x);
	ny = ent_name(sorting, y);
	ux = leading_underscores(nx);
	uy = leading_underscores(ny);
	if (ux != uy)
		return ux - uy;
	lx = strlen(nx);
	ly = strlen(ny);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(nx, ny);
}

/* Merges the sorted runs ents[0, mid) and ents[mid, nr) (by address), through a copy of the
 * second: false when there is no memory for it. */
static bool merge_tail(struct kent *ents, size_t mid, size_t nr)
{
	struct kent *tail = malloc((nr - mid) * sizeof(*tail));
	size_t a = mid, b = nr - mid, out = nr;

	if (!tail)
		return false;
	memcpy(tail, ents + mid, (nr - mid) * sizeof(*tail));
	while (b) {
		if (a && ents[a - 1].addr > tail[b - 1].addr)
			ents[--out] = ents[--a];
		else
			ents[--out] = tail[--b];
	}
	free(tail);
	return true;
}

static void sort_ents(struct ksyms *ks)
{
	struct kent *ents = ks->ents;
	size_t i, j, nr = ks->nr;

	sorting = ks;
	for (i = 1; i < nr; i++)
		if (ents[i - 1].addr > ents[i].addr)
			break;
	/* The kernel lists its own symbols in address order, then modules', BPF programs' and
	 * trampolines' (where a module or program loaded at a lower address comes later): the
	 * rest is sorted alone and merged in, the full sort was a tenth of the load. */
	if (i < nr) {
		qsort(ents + i, nr - i, sizeof(*ents), cmp_kent);
		if (!merge_tail(ents, i, nr)) {
			qsort(ents, nr, sizeof(*ents), cmp_kent);
			return;
		}
	}
	/* in address order now: only the aliases sharing an address need ordering */
	for (i = 0; i < nr; i = j) {
		for (j = i + 1; j < nr && ents[j].addr == ents[i].addr; j++)
			;
		if (j - i > 1)
			qsort(ents + i, j - i, sizeof(*ents), cmp_kent);
	}
}

/* Index of a module name, added on first sight (modules are few: a linear scan is enough,
 * and lines of one module come together, so the last one is checked first). */
static int module_index(struct ksyms *ks, const char *mod, __u16 *idx)
{
	char **tmp;
	size_t i;

	if (!mod) {
		*idx = 0;
		return 0;
	}
	for (i = ks->nr_modules; i-- > 1;) {
		if (!strcmp(ks->modules[i], mod)) {
			*idx = i;
			return 0;
		}
	}
	if (ks->nr_modules >= 0xffff)
		return -E2BIG;
	tmp = realloc(ks->modules, (ks->nr_modules + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	ks->modules = tmp;
	ks->modules[ks->nr_modules] = strdup(mod);
	if (!ks->modules[ks->nr_modules])
		return -ENOMEM;
	*idx = ks->nr_modules++;
	return 0;
}

static const char pfx_prefix[] = "__pfx_";
#define PFX_LEN (sizeof(pfx_prefix) - 1)

static int add_line(struct ksyms *ks, const struct kline *l, __u8 pfx)
{
	size_t len = strlen(l->name) + 1;
	struct kent *e;
	int err;

	err = ARRAY_GROW(ks->ents, ks->cap, ks->nr + 1);
	err = err ?: ARRAY_GROW(ks->names, ks->names_cap, ks->names_len + len);
	if (err)
		return err;
	if (ks->names_len + len > 0xffffffffUL)
		return -E2BIG;
	e = &ks->ents[ks->nr];
	err = module_index(ks, l->module, &e->module);
	if (err)
		return err;
	e->addr = l->addr;
	e->name = ks->names_len;
	e->rank = type_rank(l->type);
	e->pfx = pfx;
	memcpy(ks->names + ks->names_len, l->name, len);
	ks->names_len += len;
	ks->nr++;
	return 0;
}

static bool same_module(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* A parsed line: a __pfx_NAME waits for the next line, which is NAME in the same module a few
 * bytes on (the padding's size, at most 64); when it is not, the prefix is an entry after all.
 * held: storage for the waiting line's strings. */
static int take_line(struct ksyms *ks, const struct kline *l, struct kline *held, char *held_name,
		     char *held_mod, bool *have)
{
	int err = 0;

	if (*have) {
		if (!strcmp(l->name, held->name + PFX_LEN) && same_module(l->module, held->module) &&
		    l->addr > held->addr && l->addr - held->addr <= 255) {
			*have = false;
			return add_line(ks, l, l->addr - held->addr);
		}
		*have = false;
		err = add_line(ks, held, 0);
		if (err)
			return err;
	}
	if (strncmp(l->name, pfx_prefix, PFX_LEN) || strlen(l->name) >= 512 ||
	    (l->module && strlen(l->module) >= 256))
		return add_line(ks, l, 0);
	*held = *l;
	held->name = strcpy(held_name, l->name);
	held->module = l->module ? strcpy(held_mod, l->module) : NULL;
	*have = true;
	return 0;
}

/* Among aliases at one address, the prefix size is the group's: the first of it (where a lookup
 * lands) carries it whichever alias the sort put first. */
static void spread_pfx(struct ksyms *ks)
{
	for (size_t i = 0, j; i < ks->nr; i = j) {
		__u8 pfx = 0;

		for (j = i; j < ks->nr && ks->ents[j].addr == ks->ents[i].addr; j++)
			pfx = ks->ents[j].pfx > pfx ? ks->ents[j].pfx : pfx;
		ks->ents[i].pfx = pfx;
	}
}

/* A data line of kept_data[]'s (parse_line() fills l for it before refusing it; name stays NULL
 * for a line it could not parse).  All of them start with "__st": a test, not three compares, for
 * each of the file's data lines. */
static void keep_data(struct ksyms *ks, const struct kline *l)
{
	if (!l->name || strncmp(l->name, "__st", 4) || is_code(l->type) || l->module)
		return;
	for (size_t i = 0; i < sizeof(kept_data) / sizeof(kept_data[0]); i++)
		if (!strcmp(l->name, kept_data[i]))
			ks->data[i] = l->addr;
}

/* The buffer the file is read through: /proc/kallsyms is produced a page at a time, and a
 * line is well under a KB (names stop at 512 bytes). */
#define READ_BUF (1 << 16)

/* The file's code symbols (outside only: those of a module, "[bpf]", "[__builtin__ftrace]"...,
 * not the core kernel's), sorted; NULL with errno set when it cannot be read. */
static struct ksyms *load_file(const char *path, bool outside)
{
	struct ksyms *ks = NULL;
	bool zero = false, have = false, skipping = false;
	struct kline l, held;
	char held_name[512], held_mod[256];
	char *buf = NULL;
	size_t fill = 0;
	int fd = -1, err = 0;
	ssize_t got;

	ks = calloc(1, sizeof(*ks));
	buf = malloc(READ_BUF + 1);
	if (!ks || !buf || module_index(ks, "", &(__u16){ 0 })) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	/* lines parsed where they were read, not copied out one by one */
	do {
		char *p = buf, *end, *nl;

		got = read(fd, buf + fill, READ_BUF - fill);
		if (got < 0 && errno == EINTR)
			continue; /* got is not 0: read again */
		if (got < 0) {
			err = -EIO;
			break;
		}
		fill += got;
		end = buf + fill;
		while (!err && p < end) {
			nl = memchr(p, '\n', end - p);
			if (!nl && got && (p > buf || fill < READ_BUF))
				break; /* the line goes on in the next read */
			/* the last line, or one longer than the buffer (no kallsyms line: its names
			 * stop at 512 bytes), which is dropped up to its newline */
			if (!nl)
				nl = end;
			*nl = '\0';
			if (!skipping && (nl < end || !got)) {
				l.name = NULL;
				if (parse_line(p, nl - p, &l, &zero)) {
					if (!outside || l.module)
						err = take_line(ks, &l, &held, held_name,
								held_mod, &have);
				} else
					keep_data(ks, &l);
			}
			skipping = nl == end && got;
			p = nl + 1;
		}
		fill = p < end ? end - p : 0;
		memmove(buf, p < end ? p : buf, fill);
	} while (!err && got > 0);
	err = err ?: have ? add_line(ks, &held, 0) : 0;
	if (err)
		goto cleanup;
	/* Every address zero: kptr_restrict hides them from us; an empty table would only make
	 * every kernel frame silently unresolved. */
	if (!ks->nr && zero) {
		err = -EPERM;
		goto cleanup;
	}
	sort_ents(ks);
	spread_pfx(ks);
cleanup:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (err) {
		ksyms__free(ks);
		errno = -err;
		return NULL;
	}
	return ks;
}

struct ksyms *ksyms__load_file(const char *path)
{
	return load_file(path, false);
}

struct ksyms *ksyms__load(void)
{
	return ksyms__load_file("/proc/kallsyms");
}

static size_t entries_up_to(const struct ksyms *ks, __u64 addr);
#define KSYM_NAME 600 /* KSYM_NAME_LEN is 512 */

/* ---- the core kernel's symbols, kept across the runs of one boot ----
 *
 * The core kernel's symbols (the image's own, module index 0) are fixed from boot to shutdown:
 * KASLR places the image once.  Modules', BPF programs' and trampolines' come and go.  Reading
 * /proc/kallsyms is the largest part of a system-wide profile's own CPU (the kernel formats its
 * 122k lines: 45-60 ms of CPU here; the kallsyms BPF iterator, without the formatting, costs as
 * much per symbol), so the core part is kept in the cache directory under the boot's id and the
 * kernel's build-id, and read back (2.5 MB) instead: an address in its range is answered from
 * it, any other (a module's, a BPF program's) first reads the whole file as before.  That needs
 * no other symbol within the core's range, which holds where modules, BPF programs and
 * trampolines are placed above the image (x86-64: MODULES_VADDR follows the 1 GB of the kernel
 * image's mapping); it is checked against the file whenever it is read whole.  The kept table is
 * checked again against the first lines of /proc/kallsyms at every use (one page of it: the same
 * addresses, so the same boot and layout, and addresses the reader may see). */
struct core_img {
	char magic[8];
	__u32 version, ent_size;
	__u64 nr, names_len;
	__u64 lo, hi;
	__u64 data[3];
};
#define CORE_MAGIC   "BPFPKSY"
#define CORE_VERSION 1

/* The core kernel's part of a whole table, as a cache file's content (malloc'd): 0, or -errno
 * (-ENOTSUP where another symbol lies within its range, or off x86-64). */
static int core_image(const struct ksyms *ks, void **img, size_t *len)
{
#if defined(__x86_64__)
	struct core_img h = { .magic = CORE_MAGIC, .version = CORE_VERSION,
			      .ent_size = sizeof(struct kent) };
	size_t first = ks->nr, last = 0, at;
	struct kent *ents;
	char *names, *buf;

	for (size_t i = 0; i < ks->nr; i++) {
		if (ks->ents[i].module)
			continue;
		first = first < i ? first : i;
		last = i;
		h.nr++;
		h.names_len += strlen(ent_name(ks, &ks->ents[i])) + 1;
	}
	if (h.nr < 2)
		return -ENOENT;
	h.lo = ks->ents[first].addr - ks->ents[first].pfx;
	h.hi = ks->ents[last].addr;
	/* every other symbol above the core's (nor just after the last, where its __pfx_ padding
	 * would reach back) */
	for (size_t i = 0; i < ks->nr; i++)
		if (ks->ents[i].module && ks->ents[i].addr <= h.hi + 256)
			return -ENOTSUP;
	memcpy(h.data, ks->data, sizeof(h.data));
	*len = sizeof(h) + h.nr * sizeof(*ents) + h.names_len;
	buf = malloc(*len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	ents = (struct kent *)(buf + sizeof(h));
	names = (char *)(ents + h.nr);
	at = 0;
	for (size_t i = first; i <= last; i++) {
		const char *n = ent_name(ks, &ks->ents[i]);
		size_t l = strlen(n) + 1;

		ents[i - first] = ks->ents[i];
		ents[i - first].name = at;
		memcpy(names + at, n, l);
		at += l;
	}
	*img = buf;
	return 0;
#else
	return -ENOTSUP;
#endif
}

/* A kept core table back, checked as input from outside: NULL when it is not one. */
static struct ksyms *from_core_image(const void *img, size_t len)
{
	const struct kent *ents;
	struct ksyms *ks = NULL;
	struct core_img h;

	if (len < sizeof(h))
		return NULL;
	memcpy(&h, img, sizeof(h));
	if (memcmp(h.magic, CORE_MAGIC, sizeof(CORE_MAGIC)) || h.version != CORE_VERSION ||
	    h.ent_size != sizeof(struct kent) || h.nr < 2 || h.nr > (1u << 24) ||
	    h.names_len > 0xffffffffULL || len != sizeof(h) + h.nr * sizeof(*ents) + h.names_len ||
	    !h.names_len || ((const char *)img)[len - 1])
		return NULL;
	ents = (const struct kent *)((const char *)img + sizeof(h));
	ks = calloc(1, sizeof(*ks));
	if (!ks || module_index(ks, "", &(__u16){ 0 }))
		goto bad;
	ks->ents = malloc(h.nr * sizeof(*ents));
	ks->names = malloc(h.names_len);
	if (!ks->ents || !ks->names)
		goto bad;
	memcpy(ks->ents, ents, h.nr * sizeof(*ents));
	memcpy(ks->names, ents + h.nr, h.names_len);
	ks->nr = ks->cap = h.nr;
	ks->names_len = ks->names_cap = h.names_len;
	sorting = ks;
	/* the shape lookups rely on: names inside the arena, the core's, in the sort's order */
	for (size_t i = 0; i < ks->nr; i++) {
		const struct kent *e = &ks->ents[i];

		if (e->name >= h.names_len || e->module || e->rank > 2 ||
		    (i && cmp_kent(&ks->ents[i - 1], e) > 0))
			goto bad;
	}
	if (h.lo != ks->ents[0].addr - ks->ents[0].pfx || h.hi != ks->ents[ks->nr - 1].addr)
		goto bad;
	memcpy(ks->data, h.data, sizeof(ks->data));
	ks->lo = h.lo;
	ks->hi = h.hi;
	ks->partial = true;
	return ks;
bad:
	ksyms__free(ks);
	return NULL;
}

/* Whether the first lines of /proc/kallsyms (one read of a page: only those are formatted) are in
 * the kept table at the same addresses. */
static bool first_lines_match(const struct ksyms *ks)
{
	char buf[4097];
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC), matched = 0;
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *p = buf, *nl;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (; (nl = strchr(p, '\n')); p = nl + 1) {
		struct kline l = { 0 };
		bool zero = false, found = false;
		size_t i;

		*nl = '\0';
		if (!parse_line(p, nl - p, &l, &zero)) {
			if (zero)
				return false; /* addresses hidden from this reader now */
			continue;
		}
		if (l.module)
			break;
		if (!strncmp(l.name, pfx_prefix, PFX_LEN))
			continue; /* no entry of its own */
		for (i = entries_up_to(ks, l.addr); i-- > 0 && ks->ents[i].addr == l.addr;)
			found |= !strcmp(ent_name(ks, &ks->ents[i]), l.name);
		if (!found)
			return false;
		matched++;
	}
	return matched >= 8;
}

/* The kept table's name: this boot's, this kernel's. */
static int kept_name(char *name, size_t size)
{
	const char *id = kernel_build_id("[kernel.kallsyms]");
	char boot[64];

	if (!id || boot_id(boot, sizeof(boot)))
		return -ENOENT;
	snprintf(name, size, "k-%s-%.40s.v%d.ksym", boot, id, CORE_VERSION);
	return 0;
}

struct ksyms *ksyms__load_kept(const struct ksyms_store *st)
{
	char name[128];
	struct ksyms *ks = NULL;
	void *img = NULL;
	size_t len;

	if (!st || kept_name(name, sizeof(name)))
		return ksyms__load();
	if (!st->read(st->ctx, name, 64 << 20, &img, &len)) {
		ks = from_core_image(img, len);
		free(img);
		img = NULL;
		if (ks && first_lines_match(ks))
			return ks;
		ksyms__free(ks);
	}
	ks = ksyms__load();
	if (ks && !core_image(ks, &img, &len)) {
		st->write(st->ctx, name, img, len);
		free(img);
	}
	return ks;
}

int bpf_prog_ksyms(int fd, const struct btf *btf,
		   int (*fn)(__u64 start, __u32 len, const char *name, void *ctx), void *ctx)
{
	__u64 starts[64];
	__u32 lens[64], n, nfi, len;
	__u8 tags[64][8];
	struct bpf_func_info fi[64];
	struct bpf_prog_info info = {};
	struct btf *own = NULL;
	int err = 0;

	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	n = info.nr_jited_ksyms;
	nfi = info.nr_func_info;
	if (!n || n > 64 || info.nr_jited_func_lens != n || info.nr_prog_tags != n ||
	    (nfi && (nfi != n || info.func_info_rec_size != sizeof(fi[0]))))
		return -ENOENT; /* not JITed (no symbol), or a shape not met here */
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = n;
	info.jited_ksyms = (__u64)(unsigned long)starts;
	info.nr_jited_func_lens = n;
	info.jited_func_lens = (__u64)(unsigned long)lens;
	info.nr_prog_tags = n;
	info.prog_tags = (__u64)(unsigned long)tags;
	info.nr_func_info = nfi;
	info.func_info_rec_size = nfi ? sizeof(fi[0]) : 0;
	info.func_info = nfi ? (__u64)(unsigned long)fi : 0;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (nfi && !btf)
		btf = own = btf__load_from_kernel_by_id(info.btf_id);
	if (nfi && !btf)
		return -ENOENT;
	for (__u32 i = 0; !err && i < n; i++) {
		const struct btf_type *t = nfi ? btf__type_by_id(btf, fi[i].type_id) : NULL;
		const char *func = t ? btf__name_by_offset(btf, t->name_off) : info.name;
		char name[KSYM_NAME];
		int k = snprintf(name, sizeof(name), "bpf_prog_");

		if (nfi && !t) {
			err = -ENOENT;
			break;
		}
		/* the main function is listed under the program's tag (of its instructions before
		 * the verifier split the others off), each other one under its own */
		for (int b = 0; b < 8; b++)
			k += snprintf(name + k, sizeof(name) - k, "%02x", i ? tags[i][b] : info.tag[b]);
		if (func && func[0])
			snprintf(name + k, sizeof(name) - k, "_%s", func);
		err = fn(starts[i], lens[i], name, ctx);
	}
	btf__free(own);
	return err;
}

static int add_bpf_fn(__u64 start, __u32 len, const char *name, void *ctx)
{
	return ksyms__add_bpf(ctx, start, len, name);
}

/* The BPF program whose code holds addr, its functions added to ks's: 0, or -ENOENT when none
 * does (addr is a module's, a trampoline's...) or they cannot be asked (no CAP_SYS_ADMIN). */
static int add_bpf_at(struct ksyms *ks, __u64 addr)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {};
		__u64 starts[64];
		__u32 lens[64], n, len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id), err = -ENOENT;

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && (n = info.nr_jited_ksyms) &&
		    n <= 64 && info.nr_jited_func_lens == n) {
			memset(&info, 0, sizeof(info));
			info.nr_jited_ksyms = n;
			info.jited_ksyms = (__u64)(unsigned long)starts;
			info.nr_jited_func_lens = n;
			info.jited_func_lens = (__u64)(unsigned long)lens;
			len = sizeof(info);
			if (bpf_obj_get_info_by_fd(fd, &info, &len))
				n = 0;
			for (__u32 i = 0; i < n; i++)
				if (addr >= starts[i] && addr - starts[i] < lens[i]) {
					err = bpf_prog_ksyms(fd, NULL, add_bpf_fn, ks);
					break;
				}
		}
		close(fd);
		if (!err)
			return 0;
	}
	return -ENOENT;
}

int ksyms__add_bpf(struct ksyms *ks, __u64 start, __u32 len, const char *name)
{
	struct bpf_sym *tmp;

	if (!ks->partial)
		return 0; /* the file's table has them */
	tmp = realloc(ks->bpf, (ks->nr_bpf + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	ks->bpf = tmp;
	tmp[ks->nr_bpf].start = start;
	tmp[ks->nr_bpf].len = len;
	tmp[ks->nr_bpf].name = strdup(name);
	if (!tmp[ks->nr_bpf].name)
		return -ENOMEM;
	ks->nr_bpf++;
	return 0;
}

bool ksyms__partial(const struct ksyms *ks)
{
	return ks && ks->partial;
}

bool ksyms__outside(const struct ksyms *ks, size_t *nr)
{
	*nr = ks && ks->outside ? ks->outside->nr : 0;
	return ks && ks->partial && ks->outside_read;
}

/* How many entries start at or below addr (sorted by address): a binary search. */
static size_t entries_up_to(const struct ksyms *ks, __u64 addr)
{
	return FIRST_ABOVE(ks->ents, ks->nr, addr, addr);
}

/* A table of the core kernel's symbols made whole from /proc/kallsyms, the first time a lookup
 * needs more (a module's, a BPF program's address; every name).  The names handed out before
 * stay valid.  false when the file cannot be read: the core symbols are all there is then. */
static bool complete(struct ksyms *ks)
{
	struct ksyms *full;

	if (!ks->partial)
		return true;
	full = ksyms__load();
	if (!full)
		return false;
	for (size_t i = 0; i < ks->nr_modules; i++)
		free(ks->modules[i]);
	free(ks->modules);
	free(ks->by_name);
	free(ks->ents);
	ks->old_names = ks->names;
	ks->ents = full->ents;
	ks->nr = full->nr;
	ks->cap = full->cap;
	ks->names = full->names;
	ks->names_len = full->names_len;
	ks->names_cap = full->names_cap;
	ks->modules = full->modules;
	ks->nr_modules = full->nr_modules;
	ks->by_name = NULL;
	ks->nr_names = 0;
	memcpy(ks->data, full->data, sizeof(ks->data));
	ks->partial = false;
	free(full);
	return true;
}

/* The symbol of table t at addr, into out's `found` slot (and pfx_name: a __pfx_ symbol's name),
 * or NULL when t has none at or below it. */
static const struct ksym *find_in(const struct ksyms *t, __u64 addr, struct ksyms *out)
{
	size_t lo = entries_up_to(t, addr), mid;
	const struct kent *e;

	/* in the padding before the next function: its __pfx_ symbol */
	if (lo < t->nr && t->ents[lo].pfx && addr >= t->ents[lo].addr - t->ents[lo].pfx) {
		e = &t->ents[lo];
		snprintf(out->pfx_name, sizeof(out->pfx_name), "%s%s", pfx_prefix, ent_name(t, e));
		out->found.addr = e->addr - e->pfx;
		out->found.name = out->pfx_name;
		out->found.module = e->module ? t->modules[e->module] : kernel_module;
		return &out->found;
	}
	if (!lo)
		return NULL;
	/* the best-ranked alias sorts first among equal addresses */
	for (mid = lo - 1; mid && t->ents[mid - 1].addr == t->ents[mid].addr; mid--)
		;
	e = &t->ents[mid];
	out->found.addr = e->addr;
	out->found.name = ent_name(t, e);
	out->found.module = e->module ? t->modules[e->module] : kernel_module;
	return &out->found;
}

/* An address outside the kept core's range that no BPF program of this run's or another's
 * holds (a module's, a trampoline's): the file's symbols outside the core kernel read once,
 * beside the core's kept (36 here), not the whole file again, which held 2 MB more
 * for the rest of a system-wide run (the core's names twice: those handed out stay valid).
 * They all lie above the core's (core_image()): an address below the first of them is the
 * last core function's, as in the whole table.  NULL when the file cannot be read. */
static const struct ksym *find_outside(struct ksyms *ks, __u64 addr)
{
	const struct ksym *k;

	if (!ks->outside_read) {
		ks->outside_read = true;
		ks->outside = load_file("/proc/kallsyms", true);
	}
	if (!ks->outside)
		return NULL;
	k = find_in(ks->outside, addr, ks);
	return k ?: find_in(ks, addr, ks);
}

const struct ksym *ksyms__find(const struct ksyms *ks, __u64 addr)
{
	struct ksyms *mut = (struct ksyms *)ks; /* only the `found` slot is written */

	if (!ks)
		return NULL;
	if (ks->partial && (addr < ks->lo || addr >= ks->hi)) {
		/* a BPF program's function: named as the file names it, from the program's info
		 * (this run's own are known from the start; another's asked for at its first
		 * address); anything else reads the file's symbols outside the core */
		for (int pass = 0; pass < 2; pass++) {
			for (size_t i = 0; i < ks->nr_bpf; i++)
				if (addr >= ks->bpf[i].start && addr - ks->bpf[i].start < ks->bpf[i].len) {
					mut->found.addr = ks->bpf[i].start;
					mut->found.name = ks->bpf[i].name;
					mut->found.module = "[bpf]";
					return &mut->found;
				}
			if (pass || add_bpf_at(mut, addr))
				break;
		}
		if (addr >= ks->hi)
			return find_outside(mut, addr);
		/* below the core: nothing is (core_image()) */
		return NULL;
	}
	return find_in(ks, addr, mut);
}

__u64 ksyms__end(const struct ksyms *ks, __u64 addr)
{
	size_t lo = ks && complete((struct ksyms *)ks) ? entries_up_to(ks, addr) : 0;
	const struct kent *e = ks && lo < ks->nr ? &ks->ents[lo] : NULL;

	/* a function ends where the next one's __pfx_ symbol begins */
	if (e && e->pfx && addr < e->addr - e->pfx)
		return e->addr - e->pfx;
	return e ? e->addr : 0;
}

/* Name order; among entries of one name (static functions of several files), the lowest
 * address first. */
static int cmp_by_name(const void *a, const void *b)
{
	const struct kent *x = &sorting->ents[*(const __u32 *)a], *y = &sorting->ents[*(const __u32 *)b];
	int c = strcmp(ent_name(sorting, x), ent_name(sorting, y));

	return c ? c : x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* IBT/CFI padding and prefix symbols are not functions one can trace or call. */
static bool traceable(const char *name)
{
	return strncmp(name, "__pfx_", 6) && strncmp(name, "__cfi_", 6);
}

static int build_by_name(struct ksyms *ks)
{
	size_t n = 0, w = 0;

	if (ks->by_name)
		return 0;
	ks->by_name = malloc((ks->nr ?: 1) * sizeof(*ks->by_name));
	if (!ks->by_name)
		return -ENOMEM;
	for (size_t i = 0; i < ks->nr; i++)
		if (traceable(ent_name(ks, &ks->ents[i])))
			ks->by_name[n++] = i;
	sorting = ks;
	qsort(ks->by_name, n, sizeof(*ks->by_name), cmp_by_name);
	/* one per name: the first, at the lowest address */
	for (size_t i = 0; i < n; i++)
		if (!w || strcmp(ent_name(ks, &ks->ents[ks->by_name[w - 1]]),
				 ent_name(ks, &ks->ents[ks->by_name[i]])))
			ks->by_name[w++] = ks->by_name[i];
	ks->nr_names = w;
	return 0;
}

__u64 ksyms__addr(const struct ksyms *ks, const char *name)
{
	struct ksyms *mut = (struct ksyms *)ks; /* only the lazily built name index is written */
	size_t lo = 0, hi;

	if (!ks || build_by_name(mut))
		return 0;
	hi = ks->nr_names;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ent_name(ks, &ks->ents[ks->by_name[mid]]), name);

		if (!c)
			return ks->ents[ks->by_name[mid]].addr;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* not a core kernel's name: perhaps a module's (the core's lie below: ksyms__load_kept()) */
	if (ks->partial && complete(mut))
		return ksyms__addr(ks, name);
	return 0;
}

int ksyms__for_each_name(const struct ksyms *ks, int (*fn)(const char *name, __u64 addr, void *ctx),
			 void *ctx)
{
	struct ksyms *mut = (struct ksyms *)ks;
	int err = !ks ? -ENOENT : !complete(mut) ? -EIO : build_by_name(mut);

	for (size_t i = 0; !err && i < ks->nr_names; i++) {
		const struct kent *e = &ks->ents[ks->by_name[i]];

		err = fn(ent_name(ks, e), e->addr, ctx);
	}
	return err;
}

__u64 ksyms__data_addr(const struct ksyms *ks, const char *name)
{
	for (size_t i = 0; ks && i < sizeof(kept_data) / sizeof(kept_data[0]); i++)
		if (!strcmp(name, kept_data[i]))
			return ks->data[i];
	return 0;
}

size_t ksyms__nr_names(const struct ksyms *ks)
{
	return ks && complete((struct ksyms *)ks) && !build_by_name((struct ksyms *)ks) ?
	       ks->nr_names : 0;
}

size_t ksyms__bytes(const struct ksyms *ks)
{
	size_t n;

	if (!ks)
		return 0;
	n = malloc_usable_size((void *)ks) + malloc_usable_size(ks->ents) +
	    malloc_usable_size(ks->names) + malloc_usable_size(ks->old_names) +
	    malloc_usable_size(ks->by_name) + malloc_usable_size(ks->modules) +
	    malloc_usable_size(ks->bpf) + ksyms__bytes(ks->outside);
	for (size_t i = 0; i < ks->nr_modules; i++)
		n += malloc_usable_size(ks->modules[i]);
	for (size_t i = 0; i < ks->nr_bpf; i++)
		n += malloc_usable_size(ks->bpf[i].name);
	return n;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->nr_modules; i++)
		free(ks->modules[i]);
	free(ks->modules);
	free(ks->by_name);
	free(ks->ents);
	free(ks->names);
	free(ks->old_names);
	for (size_t i = 0; i < ks->nr_bpf; i++)
		free(ks->bpf[i].name);
	free(ks->bpf);
	ksyms__free(ks->outside);
	free(ks);
}

/* The GNU build-id note in a notes file (/sys/kernel/notes: the kernel's notes as they are in
 * memory) into hex; "" when there is none. */
static void read_notes_build_id(const char *path, char *hex, size_t size)
{
	unsigned char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	size_t off = 0;

	hex[0] = '\0';
	if (fd >= 0)
		close(fd);
	while (n > 0 && off + 12 <= (size_t)n) {
		__u32 namesz, descsz, type;
		size_t name_off = off + 12, desc_off;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc_off = name_off + ((namesz + 3) & ~3U);
		if (namesz > sizeof(buf) || descsz > sizeof(buf) || desc_off + descsz > (size_t)n)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    !memcmp(buf + name_off, "GNU", 4) && descsz * 2 < size) {
			for (__u32 i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", buf[desc_off + i]);
			return;
		}
		off = desc_off + ((descsz + 3) & ~3U);
	}
}

const char *kernel_build_id(const char *module)
{
	/* the kernel and a few hundred modules at most: a small table, read once each */
	static struct {
		char module[64];
		char id[129];
	} known[512];
	static size_t nr_known;
	char path[128], *id;
	size_t len = module ? strlen(module) : 0;

	if (len < 3 || len >= sizeof(known[0].module) || module[0] != '[' || module[len - 1] != ']')
		return NULL;
	for (size_t i = 0; i < nr_known; i++)
		if (!strcmp(known[i].module, module))
			return known[i].id[0] ? known[i].id : NULL;
	if (nr_known == sizeof(known) / sizeof(known[0]))
		return NULL;
	if (!strcmp(module, "[kernel.kallsyms]"))
		snprintf(path, sizeof(path), "/sys/kernel/notes");
	else
		snprintf(path, sizeof(path), "/sys/module/%.*s/notes/.note.gnu.build-id",
			 (int)len - 2, module + 1);
	snprintf(known[nr_known].module, sizeof(known[0].module), "%s", module);
	read_notes_build_id(path, known[nr_known].id, sizeof(known[0].id));
	id = known[nr_known++].id;
	return id[0] ? id : NULL;
}
