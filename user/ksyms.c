/* Kernel symbols from /proc/kallsyms.  The whole file is read into one buffer that also holds
 * every name (parsed in place, no malloc per symbol), then sorted once: lookups are a binary
 * search. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "syms.h"

struct kent {
	struct ksym sym; /* first member: ksyms__find hands out &kent->sym */
	int rank;        /* 2 global, 1 local, 0 weak: which alias to show at a shared address */
};

struct ksyms {
	struct kent *ents;
	size_t nr;
	char *text; /* the file; names and "[module]" strings point into it */
};

static const char kernel_module[] = "[kernel.kallsyms]";

/* Reads a whole file, NUL-terminated; /proc files report size 0, so the buffer grows. */
static int read_file(const char *path, char **text, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = NULL, *tmp;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		if (cap - n < (1 << 16)) {
			tmp = realloc(buf, cap * 2);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
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

/* Parses "ADDR TYPE NAME[<blank>[MODULE]]" in place (the real file uses a tab before the module,
 * hand-written fixtures often a space).  Returns false for lines to skip; *zero is set for lines
 * whose address is hidden (kptr_restrict prints zeros). */
static bool parse_line(char *p, struct kent *e, bool *zero)
{
	char *name, *mod = NULL, *close;
	__u64 addr = 0;
	int v, digits = 0;
	char type;

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
	while (*p && !is_blank(*p))
		p++;
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
	e->sym.addr = addr;
	e->sym.name = name;
	e->sym.module = mod ? mod : kernel_module;
	e->rank = type_rank(type);
	return true;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Address order; among aliases, perf's choice first: global over local over weak, fewer leading
 * underscores, longer name (so "_text" loses to "srso_alias_untrain_ret" at _stext). */
static int cmp_kent(const void *a, const void *b)
{
	const struct kent *x = a, *y = b;
	size_t lx, ly;
	int ux, uy;

	if (x->sym.addr != y->sym.addr)
		return x->sym.addr < y->sym.addr ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	ux = leading_underscores(x->sym.name);
	uy = leading_underscores(y->sym.name);
	if (ux != uy)
		return ux - uy;
	lx = strlen(x->sym.name);
	ly = strlen(y->sym.name);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->sym.name, y->sym.name);
}

static void sort_ents(struct kent *ents, size_t nr)
{
	size_t i, j;

	for (i = 1; i < nr; i++)
		if (ents[i - 1].sym.addr > ents[i].sym.addr)
			break;
	if (i < nr) {
		qsort(ents, nr, sizeof(*ents), cmp_kent);
		return;
	}
	/* The common case: the kernel lists symbols in address order already, so only the few
	 * aliases sharing an address need ordering. */
	for (i = 0; i < nr; i = j) {
		for (j = i + 1; j < nr && ents[j].sym.addr == ents[i].sym.addr; j++)
			;
		if (j - i > 1)
			qsort(ents + i, j - i, sizeof(*ents), cmp_kent);
	}
}

/* Appends one entry slot, growing the array (from a guess of one symbol per 32 bytes). */
static struct kent *next_slot(struct ksyms *ks, size_t *cap, size_t len)
{
	struct kent *tmp;
	size_t want;

	if (ks->nr < *cap)
		return &ks->ents[ks->nr];
	want = *cap ? *cap * 2 : len / 32 + 64;
	tmp = realloc(ks->ents, want * sizeof(*tmp));
	if (!tmp)
		return NULL;
	ks->ents = tmp;
	*cap = want;
	return &ks->ents[ks->nr];
}

struct ksyms *ksyms__load_file(const char *path)
{
	struct ksyms *ks = NULL;
	size_t len = 0, cap = 0;
	char *p, *nl, *end;
	bool zero = false;
	struct kent *e;
	int err;

	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = read_file(path, &ks->text, &len);
	if (err)
		goto cleanup;
	end = ks->text + len;
	for (p = ks->text; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end; /* text[len] is already '\0' */
		*nl = '\0';
		e = next_slot(ks, &cap, len);
		if (!e) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (parse_line(p, e, &zero))
			ks->nr++;
	}
	/* Every address zero: kptr_restrict hides them from us; an empty table would only make
	 * every kernel frame silently unresolved. */
	if (!ks->nr && zero) {
		err = -EPERM;
		goto cleanup;
	}
	sort_ents(ks->ents, ks->nr);
cleanup:
	if (err) {
		ksyms__free(ks);
		errno = -err;
		return NULL;
	}
	return ks;
}

struct ksyms *ksyms__load(void)
{
	return ksyms__load_file("/proc/kallsyms");
}

const struct ksym *ksyms__find(const struct ksyms *ks, __u64 addr)
{
	size_t lo = 0, hi, mid;

	if (!ks)
		return NULL;
	hi = ks->nr;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ks->ents[mid].sym.addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* the best-ranked alias sorts first among equal addresses */
	for (mid = lo - 1; mid && ks->ents[mid - 1].sym.addr == ks->ents[mid].sym.addr; mid--)
		;
	return &ks->ents[mid].sym;
}

__u64 ksyms__addr(const struct ksyms *ks, const char *name)
{
	size_t i;

	/* A linear scan (~1 ms): name lookups are rare (probe setup), not per sample. */
	for (i = 0; ks && i < ks->nr; i++)
		if (!strcmp(ks->ents[i].sym.name, name))
			return ks->ents[i].sym.addr;
	return 0;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->ents);
	free(ks->text);
	free(ks);
}
