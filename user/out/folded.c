/* Folded stacks, one "comm;outer;...;inner COUNT" line per distinct stack, for flamegraph.pl. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "out/folded.h"

struct folded_line {
	union {
		size_t off;        /* into the arena while it may still move */
		const char *stack; /* once it is complete */
	};
	__u64 value;
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

static int add_frame(struct stack_buf *b, const char *name, const char *suffix, bool separate)
{
	size_t start;
	int err;

	if (!name || !name[0])
		name = "[unknown]";
	if (separate && stack_buf_add(b, ";", 1))
		return -ENOMEM;
	start = b->len;
	err = stack_buf_add(b, name, strlen(name));
	err = err ?: stack_buf_add(b, suffix, strlen(suffix));
	if (err)
		return err;
	sanitize_frame(b->s + start, b->len - start);
	return 0;
}

/* comm[16] from the kernel is NUL-terminated, but a caller's may fill all 16 bytes. */
static int add_comm(struct stack_buf *b, const char comm[16], const char *suffix, bool separate)
{
	char name[17];
	size_t len = strnlen(comm, 16);

	memcpy(name, comm, len);
	name[len] = '\0';
	return add_frame(b, name, suffix, separate);
}

static int add_user_kernel_frame(struct stack_buf *b, const struct frame *f,
				 const struct folded_opts *o)
{
	char name[512], line[16] = "";

	/* without --inline the inlined frames go: the stack is the one of compiled functions */
	if (f->inlined && !o->inline_frames)
		return 0;
	if (o->srcline && f->line)
		snprintf(line, sizeof(line), ":%u", f->line);
	return add_frame(b, stack_frame_name(f, o->annotate_kernel, name, sizeof(name)), line, true);
}

/* Appends the NUL-terminated folded stack of one sample (without its count) to the arena. */
static int fold_sample(struct stack_buf *b, const struct stack_sample *s,
		       const struct folded_opts *o)
{
	char tid[16] = "";
	__u32 i;
	int err;

	if (o->with_tid)
		snprintf(tid, sizeof(tid), "-%u", s->tid);
	/* the event as the root frame, so that one file holds several events apart */
	err = o->event_root ? add_frame(b, o->event_root[s->event], "", false) : 0;
	err = err ?: add_comm(b, s->comm, tid, o->event_root != NULL);
	for (i = 0; !err && i < s->nr_frames; i++)
		err = add_user_kernel_frame(b, stack_sample_frame(s, i), o);
	if (!err && s->nr_waker_frames) {
		/* BCC offwaketime's chain: the waker's stack hangs upside down above the sleeper's */
		err = add_frame(b, "--", "", true);
		for (i = s->nr_waker_frames; !err && i > 0; i--)
			err = add_user_kernel_frame(b, stack_sample_waker_frame(s, i - 1), o);
		err = err ?: add_comm(b, s->waker_comm, "", true);
	}
	return err ?: stack_buf_add(b, "", 1);
}

static int cmp_line(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;

	return strcmp(x->stack, y->stack);
}

int folded_write(FILE *out, const struct stack_sample *s, size_t n, const struct folded_opts *o)
{
	static const struct folded_opts defaults;
	struct stack_buf arena = {};
	struct folded_line *lines = NULL;
	size_t i, nr = 0;
	int err = 0;

	if (!o)
		o = &defaults;
	lines = calloc(n ? n : 1, sizeof(*lines));
	if (!lines) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		if (!s[i].value)
			continue;
		lines[nr].off = arena.len;
		lines[nr].value = s[i].value;
		err = fold_sample(&arena, &s[i], o);
		if (err)
			goto cleanup;
		nr++;
	}
	for (i = 0; i < nr; i++)
		lines[i].stack = arena.s + lines[i].off;
	qsort(lines, nr, sizeof(*lines), cmp_line);
	for (i = 0; i < nr;) {
		__u64 sum = 0;
		size_t j;

		for (j = i; j < nr && !strcmp(lines[j].stack, lines[i].stack); j++)
			sum += lines[j].value;
		fprintf(out, "%s %llu\n", lines[i].stack, (unsigned long long)sum);
		i = j;
	}
	err = stack_output_done(out);
cleanup:
	free(lines);
	stack_buf_free(&arena);
	return err;
}
