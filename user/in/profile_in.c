// SPDX-License-Identifier: GPL-2.0
/* Reading profiles back: the file read whole (bounded), gunzipped (bounded), told apart (pprof
 * or folded stacks) and merged into one aggregation; and the folded stacks reader. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "core/common.h"
#include "in/profile_in.h"
#include "sym/stackagg.h"

struct profile_in *profile_in__new(void)
{
	struct profile_in *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	/* threads apart: -p filters and --pprof's labels need them */
	in->agg = stack_agg__new(true);
	if (!in->agg) {
		free(in);
		return NULL;
	}
	return in;
}

void profile_in__free(struct profile_in *in)
{
	if (!in)
		return;
	stack_agg__free(in->agg);
	for (int i = 0; i < in->nr_events; i++)
		free(in->event_names[i]);
	free((char *)in->header.event);
	free((char *)in->header.lost_detail);
	free((char *)in->header.unwind);
	free((char *)in->header.excluded);
	free((char *)in->header.extra);
	free(in->machine);
	free(in);
}

const struct stack_sample *profile_in__samples(struct profile_in *in, size_t *n)
{
	return stack_agg__samples(in->agg, n);
}

static bool same_events(const struct profile_in *in, const char *const *events, int n)
{
	if (n != in->nr_events)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(events[i], in->event_names[i]))
			return false;
	return true;
}

int profile_in_set_type(struct profile_sink *k, const char *type, const char *unit,
			const char *const *events, int nr_events)
{
	struct profile_in *in = k->in;

	k->typed = true;
	if (!in->value_type[0]) {
		snprintf(in->value_type, sizeof(in->value_type), "%s", type);
		snprintf(in->value_unit, sizeof(in->value_unit), "%s", unit);
		in->unit = !strcmp(unit, "microseconds") ? REPORT_TIME_US : REPORT_SAMPLES;
		for (int i = 0; i < nr_events && i < PROFILE_IN_MAX_EVENTS; i++) {
			in->event_names[i] = strdup(events[i]);
			if (!in->event_names[i]) {
				p_err("%s: %s", k->name, strerror(ENOMEM));
				return -ENOMEM;
			}
			in->nr_events = i + 1;
		}
		return 0;
	}
	/* counts of one kind merge with counts of another (a Go CPU profile's samples with
	 * bpfprof's), times with times; a count never with a time */
	if (strcmp(in->value_unit, unit) ||
	    ((nr_events > 1 || in->nr_events > 1) && !same_events(in, events, nr_events))) {
		p_err("%s: its samples count %s (%s), %s's %s (%s): they do not add up", k->name, type,
		      unit, in->first, in->value_type, in->value_unit);
		return -EINVAL;
	}
	return 0;
}

int profile_in_add(struct profile_sink *k, const struct stack_sample *s)
{
	int err = stack_agg__add(k->in->agg, s);

	if (err)
		p_err("%s: %s", k->name, strerror(-err));
	return err;
}

/* ---- folded stacks: "comm;outer;...;inner COUNT" ---- */

/* A frame of a folded line: "name_[k]" a kernel frame (--annotate), "[file]" a frame only its
 * file is known of, as stackcollapse-perf.pl and bpfprof write them. */
static void folded_frame(char *name, struct frame *f)
{
	size_t len = strlen(name);

	memset(f, 0, sizeof(*f));
	if (len > 4 && !strcmp(name + len - 4, "_[k]")) {
		name[len -= 4] = '\0';
		f->kernel = true;
	}
	if (len > 2 && name[0] == '[' && name[len - 1] == ']') {
		name[len - 1] = '\0';
		f->module = name + 1;
		return;
	}
	f->name = name;
	f->module = f->kernel ? "[kernel.kallsyms]" : "[unknown]";
}

/* One line, split in place, into at most max frames.  0, 1 for a line to skip (empty),
 * -EINVAL. */
static int folded_line(char *line, struct frame *frames, size_t max, struct stack_sample *s,
		       __u64 *dropped)
{
	char *space = strrchr(line, ' '), *end, *field, *save = NULL;
	unsigned long long count;
	__u32 n = 0, waker_at = 0;
	bool waker = false;

	if (!line[0])
		return 1;
	if (!space || space == line || !space[1])
		return -EINVAL;
	errno = 0;
	count = strtoull(space + 1, &end, 10);
	if (errno || *end || space[1] == '-' || space[1] == '+')
		return -EINVAL;
	*space = '\0';
	memset(s, 0, sizeof(*s));
	s->value = count;
	field = strtok_r(line, ";", &save);
	snprintf(s->comm, sizeof(s->comm), "%s", field ? field : "[unknown]");
	while ((field = strtok_r(NULL, ";", &save))) {
		if (!waker && !strcmp(field, "--")) {
			waker = true;
			waker_at = n;
			continue;
		}
		if (n == max) {
			(*dropped)++;
			break;
		}
		folded_frame(field, &frames[n++]);
	}
	s->frames = frames;
	s->nr_frames = waker ? waker_at : n;
	if (waker && n > waker_at) {
		/* BCC offwaketime's layout: the waker's frames innermost first, then its comm */
		struct frame *w = frames + waker_at;
		__u32 nw = n - waker_at - 1;

		snprintf(s->waker_comm, sizeof(s->waker_comm), "%s",
			 w[nw].name ? w[nw].name : w[nw].module);
		for (__u32 i = 0; i < nw / 2; i++) {
			struct frame t = w[i];

			w[i] = w[nw - 1 - i];
			w[nw - 1 - i] = t;
		}
		s->waker_frames = w;
		s->nr_waker_frames = nw;
	}
	return 0;
}

/* Frames the longest line can have: its fields, at most twice PROFILE_IN_MAX_FRAMES (the
 * sleeper's and the waker's). */
static size_t most_fields(const char *text, size_t size)
{
	size_t max = 1, n = 1;

	for (size_t i = 0; i < size; i++) {
		if (text[i] == ';')
			n++;
		else if (text[i] == '\n')
			n = 1;
		if (n > max)
			max = n;
	}
	return max < 2 * PROFILE_IN_MAX_FRAMES ? max : 2 * PROFILE_IN_MAX_FRAMES;
}

int folded_read(struct profile_sink *k, const char *text, size_t size)
{
	size_t max = most_fields(text, size), lineno = 0;
	struct frame *frames = calloc(max, sizeof(*frames));
	char *copy = malloc(size + 1), *line, *next;
	int err = frames && copy ? 0 : -ENOMEM;

	err = err ?: profile_in_set_type(k, "samples", "count", (const char *const[]){ "samples" },
					 1);
	if (err)
		goto cleanup;
	memcpy(copy, text, size);
	copy[size] = '\0';
	for (line = copy; line && !err; line = next) {
		struct stack_sample s;
		int ret;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		line[strcspn(line, "\r")] = '\0';
		ret = folded_line(line, frames, max, &s, &k->in->dropped);
		if (ret < 0) {
			p_err("%s:%zu: not a folded stack (\"frame;frame;... COUNT\")", k->name, lineno);
			err = -EINVAL;
		} else if (ret == 0 && s.value) {
			err = profile_in_add(k, &s);
		}
	}
cleanup:
	if (err == -ENOMEM)
		p_err("%s: %s", k->name, strerror(ENOMEM));
	free(frames);
	free(copy);
	return err;
}

/* ---- files ---- */

/* Folded stacks are text whose first line ends in a space and a count. */
static bool looks_folded(const unsigned char *d, size_t size)
{
	size_t i, end;

	for (end = 0; end < size && d[end] != '\n'; end++)
		if (d[end] < 0x20 && d[end] != '\t' && d[end] != '\r')
			return false;
	while (end && d[end - 1] == '\r')
		end--;
	for (i = end; i > 0 && d[i - 1] >= '0' && d[i - 1] <= '9'; i--)
		;
	return i < end && i > 1 && d[i - 1] == ' ';
}

/* gunzip into a malloc'd buffer, up to PROFILE_IN_MAX_DECOMPRESSED.  0 or -errno (printed). */
static int gunzip(const void *in, size_t len, const char *name, unsigned char **out, size_t *size)
{
	z_stream z = { .next_in = (Bytef *)in, .avail_in = len };
	size_t cap = len * 4 > 4096 ? len * 4 : 4096;
	unsigned char *buf = NULL, *tmp;
	int ret = Z_OK, err = 0;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -ENOMEM;
	while (ret != Z_STREAM_END) {
		if (cap > PROFILE_IN_MAX_DECOMPRESSED)
			cap = PROFILE_IN_MAX_DECOMPRESSED;
		tmp = realloc(buf, cap);
		if (!tmp) {
			err = -ENOMEM;
			p_err("%s: %s", name, strerror(ENOMEM));
			break;
		}
		buf = tmp;
		z.next_out = buf + z.total_out;
		z.avail_out = cap - z.total_out;
		ret = inflate(&z, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			break;
		if (ret != Z_OK && ret != Z_BUF_ERROR) {
			p_err("%s: broken gzip data (%s)", name, z.msg ? z.msg : "inflate failed");
			err = -EINVAL;
			break;
		}
		if (z.avail_out) {
			/* no output room missing: the input ended first */
			p_err("%s: truncated gzip data", name);
			err = -EINVAL;
			break;
		}
		if (cap == PROFILE_IN_MAX_DECOMPRESSED) {
			p_err("%s: more than %s once decompressed", name, PROFILE_IN_MAX_STR);
			err = -EFBIG;
			break;
		}
		cap *= 2;
	}
	*size = z.total_out;
	inflateEnd(&z);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

int profile_in__read_mem(struct profile_in *in, const void *data, size_t size, const char *name)
{
	struct profile_sink k = { .in = in, .name = name };
	const unsigned char *d = data;
	unsigned char *plain = NULL;
	int err;

	if (!in->nr_files++)
		snprintf(in->first, sizeof(in->first), "%s", name);
	if (size >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
		err = gunzip(data, size, name, &plain, &size);
		if (err)
			return err;
		d = plain;
	}
	if (!size) {
		p_err("%s: empty file", name);
		err = -EINVAL;
	} else if (looks_folded(d, size)) {
		err = folded_read(&k, (const char *)d, size);
		p_info("%s: folded stacks%s", name, plain ? ", gzip'd" : "");
	} else {
		err = pprof_read(&k, d, size);
		p_info("%s: pprof%s, %zu bytes, values %s/%s", name, plain ? ", gzip'd" : "", size,
		       in->value_type, in->value_unit);
	}
	free(plain);
	return err;
}

/* The whole file, up to PROFILE_IN_MAX_FILE.  0 or -errno (printed). */
static int read_all(int fd, const char *name, unsigned char **out, size_t *size)
{
	size_t len = 0, cap = 1 << 16;
	unsigned char *buf = NULL, *tmp;
	ssize_t n;

	for (;;) {
		if (len == cap)
			cap *= 2;
		if (cap > PROFILE_IN_MAX_FILE + 1)
			cap = PROFILE_IN_MAX_FILE + 1;
		tmp = realloc(buf, cap);
		if (!tmp) {
			free(buf);
			p_err("%s: %s", name, strerror(ENOMEM));
			return -ENOMEM;
		}
		buf = tmp;
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		if (len > PROFILE_IN_MAX_FILE) {
			free(buf);
			p_err("%s: larger than %s", name, PROFILE_IN_MAX_STR);
			return -EFBIG;
		}
	}
	if (n < 0) {
		int err = -errno;

		free(buf);
		p_err("cannot read %s: %s", name, strerror(-err));
		return err;
	}
	*out = buf;
	*size = len;
	return 0;
}

int profile_in__read(struct profile_in *in, const char *path)
{
	bool std_in = !strcmp(path, "-");
	int fd = std_in ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	const char *name = std_in ? "<stdin>" : path;
	unsigned char *data = NULL;
	size_t size = 0;
	int err;

	if (fd < 0) {
		err = -errno;
		p_err("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	err = read_all(fd, name, &data, &size);
	if (!std_in)
		close(fd);
	err = err ?: profile_in__read_mem(in, data, size, name);
	free(data);
	return err;
}
