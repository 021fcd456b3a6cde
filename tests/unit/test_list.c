// SPDX-License-Identifier: GPL-2.0
/* bpfprof list's pure parts: globs, filtering and sorting, the text and JSON writers, SDT note
 * parsing, perf's event names. */
#include <errno.h>
#include <stdint.h>
#include "test.h"
#include "out/listing.h"
#include "probe/perfevent.h"
#include "probe/usdt.h"

static char why[256];

static void test_glob_check(void)
{
	CHECK_INT(glob_check("sched:*", why, sizeof(why)), 0);
	CHECK_INT(glob_check("[abc]*", why, sizeof(why)), 0);
	CHECK_INT(glob_check("[]x]", why, sizeof(why)), 0);   /* ']' first is a member */
	CHECK_INT(glob_check("[!]x]", why, sizeof(why)), 0);
	CHECK_INT(glob_check("a\\[b", why, sizeof(why)), 0);  /* an escaped '[' */
	CHECK_INT(glob_check("", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "empty") != NULL);
	CHECK_INT(glob_check("[abc", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "']'") != NULL);
	CHECK_INT(glob_check("[]", why, sizeof(why)), -EINVAL);
	CHECK_INT(glob_check("abc\\", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "escapes nothing") != NULL);
}

static void add(struct listing *l, int sec, const char *spec, const char *name, const char *alias,
		const char *match)
{
	CHECK_INT(listing_add(l, &(struct listing_entry){ .section = sec, .spec = (char *)spec,
		  .name = (char *)name, .alias = (char *)alias, .match = (char *)match }), 0);
}

/* Two sections, added out of order, one duplicate. */
static void fill(struct listing *l)
{
	CHECK_INT(listing_add_section(l, "tracepoint", "Tracepoints", "tracefs", "CAT:NAME", NULL), 0);
	CHECK_INT(listing_add_section(l, "software", "Software events", "perf", NULL, "a note"), 1);
	add(l, 1, "page-faults", NULL, "faults", NULL);
	add(l, 0, "sched:sched_switch", "sched_switch", NULL, "t:sched:sched_switch");
	add(l, 1, "context-switches", NULL, "cs", NULL);
	add(l, 0, "block:block_rq_issue", "block_rq_issue", NULL, "t:block:block_rq_issue");
	add(l, 0, "sched:sched_switch", "sched_switch", NULL, "t:sched:sched_switch");
}

static void test_matching(void)
{
	struct listing_entry e = { .spec = "sched:sched_switch", .name = "sched_switch",
				   .match = "t:sched:sched_switch" };
	struct listing_entry cs = { .spec = "context-switches", .name = "context-switches",
				    .alias = "cs" };

	CHECK(listing_entry_matches(&e, "sched:*"));
	CHECK(listing_entry_matches(&e, "sched_sw*"));
	CHECK(listing_entry_matches(&e, "t:sched:*"));
	CHECK(listing_entry_matches(&e, "*:sched_switch"));
	CHECK(!listing_entry_matches(&e, "sched"));       /* whole names only */
	CHECK(!listing_entry_matches(&e, "block:*"));
	CHECK(listing_entry_matches(&cs, "cs"));
	CHECK(listing_entry_matches(&cs, "context-*"));
	CHECK(!listing_entry_matches(&cs, "c"));
}

static void test_finish_sorts_filters_counts(void)
{
	struct listing l = {};
	char *globs[] = { "sched:*", "cs", "nothing*" };
	size_t matched[3];

	fill(&l);
	listing_finish(&l, NULL, 0, NULL);
	CHECK_INT(l.n, 4); /* the duplicate dropped */
	CHECK_STR(l.v[0].spec, "block:block_rq_issue");
	CHECK_STR(l.v[1].spec, "sched:sched_switch");
	CHECK_STR(l.v[2].spec, "context-switches");
	CHECK_STR(l.v[3].spec, "page-faults");
	CHECK_INT(l.sec[0].count, 2);
	CHECK_INT(l.sec[1].count, 2);
	CHECK(!l.filtered);
	listing_free(&l);

	fill(&l);
	listing_finish(&l, globs, 3, matched);
	CHECK(l.filtered);
	CHECK_INT(l.n, 2);
	CHECK_STR(l.v[0].spec, "sched:sched_switch");
	CHECK_STR(l.v[1].spec, "context-switches");
	CHECK_INT(matched[0], 2); /* counted before duplicates go */
	CHECK_INT(matched[1], 1);
	CHECK_INT(matched[2], 0);
	listing_free(&l);
}

static char *write_with(int (*fn)(FILE *, const struct listing *), struct listing *l)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	CHECK_INT(fn(f, l), 0);
	fclose(f);
	return buf;
}

static void test_text(void)
{
	struct listing l = {};
	char *out;

	fill(&l);
	add(&l, 0, "evil:\x1b[2Jname", NULL, NULL, NULL);
	listing_finish(&l, NULL, 0, NULL);
	out = write_with(listing_write_text, &l);
	CHECK(strstr(out, "# Tracepoints (3), from tracefs; as CAT:NAME\n") != NULL);
	CHECK(strstr(out, "\nsched:sched_switch\n") != NULL);
	/* the alias in a column after the longest spec */
	CHECK(strstr(out, "\ncontext-switches  cs\npage-faults       faults\n") != NULL);
	CHECK(strstr(out, "# a note\n") != NULL);
	CHECK(strstr(out, "evil:\\x1b[2Jname") != NULL); /* no escape sequence reaches a terminal */
	CHECK(strchr(out, '\x1b') == NULL);
	CHECK(strstr(out, "\n# 5 listed: Tracepoints 3, Software events 2\n") != NULL);
	free(out);
	listing_free(&l);
}

static void test_json(void)
{
	struct listing l = {};
	char *out;

	CHECK_INT(listing_add_section(&l, "function", "Functions", "/bin/\"x\"", "u:PATH:NAME", NULL), 0);
	CHECK_INT(listing_add(&l, &(struct listing_entry){ .section = 0, .spec = "u:/x:f\\g",
		  .alias = "caf\xc3\xa9 \xff\xfe", .note = "<not supported>", .unsupported = true }), 0);
	listing_finish(&l, NULL, 0, NULL);
	out = write_with(listing_write_json, &l);
	CHECK(strstr(out, "\"source\": \"/bin/\\\"x\\\"\"") != NULL);
	CHECK(strstr(out, "\"spec\": \"u:/x:f\\\\g\"") != NULL);
	/* valid UTF-8 kept, stray bytes replaced: the document stays valid JSON */
	CHECK(strstr(out, "\"alias\": \"caf\xc3\xa9 \\ufffd\\ufffd\"") != NULL);
	CHECK(strstr(out, "\"supported\": false") != NULL);
	CHECK(strstr(out, "\"count\": 1}") != NULL);
	CHECK(strstr(out, "\"note\"") != NULL);
	free(out);
	listing_free(&l);
}

/* ---- SDT notes ---- */

struct note_buf {
	unsigned char b[512];
	size_t len;
};

static void put(struct note_buf *nb, const void *p, size_t n)
{
	memcpy(nb->b + nb->len, p, n);
	nb->len += n;
}

static void put_note(struct note_buf *nb, const char *owner, uint32_t type, uint64_t pc,
		     uint64_t sem, const char *provider, const char *name, const char *args)
{
	unsigned char desc[256];
	size_t dl = 0, pad;
	uint32_t h[3];
	uint64_t base = 0x1000;

	memcpy(desc, &pc, 8), dl += 8;
	memcpy(desc + dl, &base, 8), dl += 8;
	memcpy(desc + dl, &sem, 8), dl += 8;
	memcpy(desc + dl, provider, strlen(provider) + 1), dl += strlen(provider) + 1;
	memcpy(desc + dl, name, strlen(name) + 1), dl += strlen(name) + 1;
	memcpy(desc + dl, args, strlen(args) + 1), dl += strlen(args) + 1;
	h[0] = strlen(owner) + 1;
	h[1] = dl;
	h[2] = type;
	put(nb, h, sizeof(h));
	put(nb, owner, h[0]);
	pad = (4 - h[0] % 4) % 4;
	put(nb, "\0\0\0", pad);
	put(nb, desc, dl);
	pad = (4 - dl % 4) % 4;
	put(nb, "\0\0\0", pad);
}

struct seen {
	char names[8][64];
	uint64_t pc[8], sem[8];
	int n;
};

static int on_note(const struct usdt_note *n, void *ctx)
{
	struct seen *s = ctx;

	snprintf(s->names[s->n], sizeof(s->names[0]), "%s:%s(%s)", n->provider, n->name, n->args);
	s->pc[s->n] = n->pc;
	s->sem[s->n++] = n->semaphore;
	return 0;
}

static void test_usdt_notes(void)
{
	struct note_buf nb = {};
	struct seen s = {};

	put_note(&nb, "stapsdt", 3, 0x1139, 0, "libc", "setjmp", "8@%rdi -4@%esi");
	put_note(&nb, "GNU", 3, 0, 0, "not", "sdt", "");       /* another owner's note */
	put_note(&nb, "stapsdt", 1, 0, 0, "wrong", "type", ""); /* another type */
	put_note(&nb, "stapsdt", 3, 0x2000, 0x4010, "app", "tick", "-8@%rax");
	CHECK_INT(usdt_parse_notes(nb.b, nb.len, 8, on_note, &s), 2);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.names[0], "libc:setjmp(8@%rdi -4@%esi)");
	CHECK_INT(s.pc[0], 0x1139);
	CHECK_INT(s.sem[0], 0);
	CHECK_STR(s.names[1], "app:tick(-8@%rax)");
	CHECK_INT(s.sem[1], 0x4010);

	/* cut anywhere inside the last note's description: refused, never read past the end (the
	 * 41-byte description's 3 bytes of padding may go: a section's end needs none) */
	for (size_t cut = 1; cut < 40; cut++) {
		struct seen t = {};
		int r = usdt_parse_notes(nb.b, nb.len - cut, 8, on_note, &t);

		CHECK_INT(r, cut <= 3 ? 2 : -EINVAL);
		CHECK(t.n <= 2);
	}
	CHECK_INT(usdt_parse_notes(nb.b, 0, 8, on_note, &s), 0);
	CHECK_INT(usdt_parse_notes(nb.b, nb.len, 2, on_note, &s), -EINVAL);
}

static void test_usdt_malformed(void)
{
	struct note_buf nb = {};
	struct seen s = {};
	uint32_t h[3] = { 8, 0xfffffff0, 3 };

	/* a description size past the buffer */
	put(&nb, h, sizeof(h));
	put(&nb, "stapsdt", 8);
	CHECK_INT(usdt_parse_notes(nb.b, nb.len, 8, on_note, &s), -EINVAL);
	/* strings without their NUL inside the description */
	nb.len = 0;
	put_note(&nb, "stapsdt", 3, 1, 0, "p", "n", "");
	nb.b[nb.len - 4] = 'x'; /* the args' NUL (the note pads 28 + 5 bytes to 36) */
	nb.b[nb.len - 3] = 'x';
	nb.b[nb.len - 2] = 'x';
	nb.b[nb.len - 1] = 'x';
	CHECK_INT(usdt_parse_notes(nb.b, nb.len, 8, on_note, &s), -EINVAL);
	CHECK_INT(s.n, 0);
}

/* ---- perf's names ---- */

static void test_perf_names(void)
{
	char name[64];
	__u64 config;
	__u32 type;
	size_t n = 0;

	CHECK_INT(perfev_lookup("cs", &type, &config), 0);
	CHECK_INT(type, 1 /* PERF_TYPE_SOFTWARE */);
	CHECK_INT(config, 3 /* PERF_COUNT_SW_CONTEXT_SWITCHES */);
	CHECK_INT(perfev_lookup("cycles", &type, &config), 0);
	CHECK_INT(type, 0 /* PERF_TYPE_HARDWARE */);
	CHECK_INT(perfev_lookup("L1-dcache-load-misses", &type, &config), 0);
	CHECK_INT(type, 3 /* PERF_TYPE_HW_CACHE */);
	CHECK_INT(config, 0 | 0 << 8 | 1 << 16); /* L1D, read, miss */
	CHECK_INT(perfev_lookup("LLC-prefetches", &type, &config), 0);
	CHECK_INT(config, 2 | 2 << 8 | 0 << 16);
	CHECK_INT(perfev_lookup("iTLB-stores", &type, &config), -ENOENT); /* perf has none */
	CHECK_INT(perfev_lookup("context-switch", &type, &config), -ENOENT);
	while (perfev_cache_event(n, name, sizeof(name), &config))
		n++;
	CHECK_INT(n, 32); /* as perf list prints them on a machine that has them all */
}

int main(void)
{
	RUN(test_glob_check);
	RUN(test_matching);
	RUN(test_finish_sorts_filters_counts);
	RUN(test_text);
	RUN(test_json);
	RUN(test_usdt_notes);
	RUN(test_usdt_malformed);
	RUN(test_perf_names);
	TESTS_DONE();
}
