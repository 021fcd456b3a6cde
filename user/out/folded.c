/* Folded stacks, one "comm;outer;...;inner COUNT" line per distinct stack, for flamegraph.pl. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"
#include "out/folded.h"

/* A line as the ids of its frames' names (interned: "comm", "func", "func_[k]"...) at seq[off],
 * joined by ';' only when printed: a long system-wide run has millions of frames in hundreds of
 * thousands of distinct stacks, and their text (40 bytes a frame) was most of its peak memory. */
struct folded_line {
	size_t off;
	__u32 len;
	__u64 value;
};

struct folded {
	const struct folded_opts *o;
	struct stack_names *names; /* sanitized frame names, with their suffixes */
	struct stack_buf name;     /* the one being made */
	__u32 *seq;
	size_t nr_seq, cap_seq;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Start of a number ending s ("12", "12.", "12.5"), or len when s does not end with one. */
static size_t trailing_number(const char *s, size_t len)
{
	size_t p = len, q;

	while (p && is_digit(s[p - 1]))
		p--;
	if (p && s[p - 1] == '.') {
		q = p - 1;
		while (q && is_digit(s[q - 1]))
			q--;
		return q < p - 1 ? q : len;
	}
	return p;
}

/* Makes one frame safe for flamegraph.pl and difffolded.pl, which split the stack on ';', read a
 * line per stack, and take a trailing "<space>NUMBER" on the stack for a second count. */
static void sanitize_frame(char *s, size_t len)
{
	size_t i, num;

	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c == ';')
			s[i] = ':';
		else if (c < 0x20 || c == 0x7f)
			s[i] = '?';
	}
	num = trailing_number(s, len);
	if (num < len && num > 0 && s[num - 1] == ' ')
		s[num - 1] = '_';
}

/* Appends the id of a frame named name (with its suffix, made safe) to the line being made. */
static int add_frame(struct folded *f, const char *name, const char *suffix)
{
	int id;

	if (!name || !name[0])
		name = "[unknown]";
	f->name.len = 0;
	if (stack_buf_add(&f->name, name, strlen(name)) ||
	    stack_buf_add(&f->name, suffix, strlen(suffix)))
		return -ENOMEM;
	sanitize_frame(f->name.s, f->name.len);
	id = stack_names__intern(f->names, f->name.s, f->name.len);
	if (id < 0)
		return id;
	if (ARRAY_GROW(f->seq, f->cap_seq, f->nr_seq + 1))
		return -ENOMEM;
	f->seq[f->nr_seq++] = id;
	return 0;
}

/* comm[16] from the kernel is NUL-terminated, but a caller's may fill all 16 bytes. */
static int add_comm(struct folded *f, const char comm[16], const char *suffix)
{
	char name[17];
	size_t len = strnlen(comm, 16);

	memcpy(name, comm, len);
	name[len] = '\0';
	return add_frame(f, name, suffix);
}

static int add_user_kernel_frame(struct folded *f, const struct frame *fr)
{
	char name[512], line[16] = "";

	/* without --inline the inlined frames go: the stack is the one of compiled functions */
	if (fr->inlined && !f->o->inline_frames)
		return 0;
	if (f->o->srcline && fr->line)
		snprintf(line, sizeof(line), ":%u", fr->line);
	return add_frame(f, stack_frame_name(fr, f->o->annotate_kernel, name, sizeof(name)), line);
}

/* Appends the frames' name ids of one sample's folded stack. */
static int fold_sample(struct folded *f, const struct stack_sample *s)
{
	const struct folded_opts *o = f->o;
	char tid[16] = "";
	__u32 i;
	int err;

	if (o->with_tid)
		snprintf(tid, sizeof(tid), "-%u", s->tid);
	/* the event as the root frame, so that one file holds several events apart */
	err = o->event_root ? add_frame(f, o->event_root[s->event], "") : 0;
	err = err ?: add_comm(f, s->comm, tid);
	for (i = 0; !err && i < s->nr_frames; i++)
		err = add_user_kernel_frame(f, stack_sample_frame(s, i));
	if (!err && s->nr_waker_frames) {
		/* BCC offwaketime's chain: the waker's stack hangs upside down above the sleeper's */
		err = add_frame(f, "--", "");
		for (i = s->nr_waker_frames; !err && i > 0; i--)
			err = add_user_kernel_frame(f, stack_sample_waker_frame(s, i - 1));
		err = err ?: add_comm(f, s->waker_comm, "");
	}
	return err;
}

/* strcmp() of the two lines as printed (names joined by ';'), without printing them: names
 * hold no ';' (sanitize_frame()), so after a name comes ';' when another follows, the end
 * otherwise. */
static int cmp_line(const void *a, const void *b, void *ctx)
{
	const struct folded_line *x = a, *y = b;
	const struct folded *f = ctx;
	const __u32 *p = f->seq + x->off, *q = f->seq + y->off;
	const unsigned char *s, *t;
	unsigned char cs, ct;
	__u32 i = 0;

	while (i < x->len && i < y->len && p[i] == q[i])
		i++;
	if (i == x->len || i == y->len)
		return (i < x->len) - (i < y->len);
	s = (const unsigned char *)stack_names__str(f->names, p[i]);
	t = (const unsigned char *)stack_names__str(f->names, q[i]);
	while (*s && *s == *t)
		s++, t++;
	cs = *s ? *s : i + 1 < x->len ? ';' : '\0';
	ct = *t ? *t : i + 1 < y->len ? ';' : '\0';
	return (cs > ct) - (cs < ct);
}

static bool same_line(const struct folded *f, const struct folded_line *x,
		      const struct folded_line *y)
{
	return x->len == y->len && !memcmp(f->seq + x->off, f->seq + y->off, x->len * sizeof(__u32));
}

static void print_line(FILE *out, const struct folded *f, const struct folded_line *l, __u64 sum)
{
	for (__u32 i = 0; i < l->len; i++) {
		if (i)
			fputc(';', out);
		fputs(stack_names__str(f->names, f->seq[l->off + i]), out);
	}
	fprintf(out, " %llu\n", (unsigned long long)sum);
}

/* The lines of n samples s, or of the stacks of tree t (read one at a time: none is copied). */
static int fold(FILE *out, const struct stack_sample *s, size_t n, const struct stack_tree *t,
		const struct folded_opts *o)
{
	static const struct folded_opts defaults;
	struct folded f = { .o = o ? o : &defaults };
	struct folded_line *lines = NULL;
	struct stack_sample view;
	__u32 *ids = NULL;
	size_t i, nr = 0, room = 0;
	int err = 0;

	n = t ? t->nr_entries : n;
	lines = calloc(n ? n : 1, sizeof(*lines));
	f.names = stack_names__new();
	if (!lines || !f.names) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		const struct stack_sample *x = t ? &view : &s[i]; /* no s with a tree */

		if (t) {
			__u32 len = stack_tree_nr_frames(t, i);

			if (len > room) {
				__u32 *p = realloc(ids, len * sizeof(*p));

				if (!p) {
					err = -ENOMEM;
					goto cleanup;
				}
				ids = p;
				room = len;
			}
			stack_tree_sample(t, i, ids, &view);
		}
		if (!x->value)
			continue;
		lines[nr].off = f.nr_seq;
		lines[nr].value = x->value;
		err = fold_sample(&f, x);
		if (err)
			goto cleanup;
		lines[nr].len = f.nr_seq - lines[nr].off;
		nr++;
	}
	qsort_r(lines, nr, sizeof(*lines), cmp_line, &f);
	for (i = 0; i < nr;) {
		__u64 sum = 0;
		size_t j;

		for (j = i; j < nr && same_line(&f, &lines[j], &lines[i]); j++)
			sum += lines[j].value;
		print_line(out, &f, &lines[i], sum);
		i = j;
	}
	err = stack_output_done(out);
cleanup:
	free(ids);
	free(lines);
	free(f.seq);
	stack_buf_free(&f.name);
	stack_names__free(f.names);
	return err;
}

int folded_write(FILE *out, const struct stack_sample *s, size_t n, const struct folded_opts *o)
{
	return fold(out, s, n, NULL, o);
}

int folded_write_tree(FILE *out, const struct stack_tree *t, const struct folded_opts *o)
{
	return fold(out, NULL, 0, t, o);
}
