// SPDX-License-Identifier: GPL-2.0
/* The pprof writer: stack_samples into protobuf-c's Profile message, packed and gzip'd as it is
 * made.  Strings, mappings, functions and locations are interned (stack_names gives dense ids, so
 * id + 1 is the pprof id); every pprof sample is one stack_sample, read one at a time (from an
 * array, or from a call-path tree's entries) and packed at once. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/grow.h"
#include "out/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

/* Lines a location holds at most: its function and the functions inlined into it. */
#define MAX_INLINE_LINES 64

/* Comments a profile gets at most: the run's line, its header's (report.h), lines of notes. */
#define PPROF_MAX_COMMENTS 32

/* Labels a sample gets at most: pid, tid, comm, cgroup, waker. */
#define MAX_LABELS 5

/* A location being built: its frame's identity and where it is. */
struct enc_location {
	__u32 mapping;  /* index, or UINT32_MAX for none ("--") */
	__u32 nr_lines; /* its function, and the functions inlined there */
	size_t lines;   /* where its lines start in enc.lines */
	__u64 address;
};

/* A location's lines, innermost first (pprof's order): a function and its line, 0 unknown. */
struct enc_line {
	__u32 function; /* index */
	__u32 line;
};

struct enc_mapping {
	__u32 file, build_id; /* string ids */
	__u64 lo, hi;         /* addresses of its locations */
	bool kernel;
};

struct enc {
	struct stack_names *strs;      /* the string table: id 0 is "" */
	struct stack_names *map_keys;  /* (kernel, file, build-id) -> mapping index */
	struct stack_names *fn_keys;   /* (name, file) -> function index */
	struct stack_names *loc_keys;  /* (mapping, function, address) -> location index */
	struct enc_mapping *maps;
	size_t maps_cap;
	__u32 *fn_names;               /* by function: its name's string id */
	size_t fns_cap;
	struct enc_location *locs;
	size_t locs_cap;
	struct enc_line *lines;        /* the locations' lines */
	size_t nr_lines, lines_cap;
	__u32 *fn_files;               /* by function: its source file's string id, 0 unknown */
	size_t fn_files_cap;
	__u32 separator;               /* the "--" location + 1, 0 until made */
};

void pprof_meta_counted(struct pprof_meta *m, const char *type, const char *unit, __u64 period)
{
	memset(m, 0, sizeof(*m));
	m->values[0] = (struct pprof_value){ "samples", "count", 1, PPROF_ANY_EVENT };
	m->nr_values = 1;
	if (period) {
		m->values[1] = (struct pprof_value){ type, unit, period, PPROF_ANY_EVENT };
		m->nr_values = 2;
		m->default_value = 1;
		m->period_type = type;
		m->period_unit = unit;
		m->period = period;
	}
}

static int str_id(struct enc *e, const char *s)
{
	return s ? stack_names__intern(e->strs, s, strlen(s)) : 0;
}

/* Grows *arr (of *cap elements of size bytes) to hold index i.  0 or -ENOMEM. */
static int reserve(void **arr, size_t *cap, size_t i, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (i < *cap)
		return 0;
	while (n <= i)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* The index of the key's entry in keys, and whether it is new.  -ENOMEM or the index. */
static long intern_key(struct stack_names *keys, const void *key, size_t len, bool *fresh)
{
	__u32 before = stack_names__count(keys);
	int id = stack_names__intern(keys, key, len);

	*fresh = id >= 0 && (__u32)id == before;
	return id;
}

/* Appends a field and its terminating NUL to a key. */
static size_t key_add(char *key, size_t at, size_t size, const void *field, size_t len)
{
	if (at + len + 1 > size)
		len = size > at + 1 ? size - at - 1 : 0;
	memcpy(key + at, field, len);
	key[at + len] = '\0';
	return at + len + 1;
}

static long mapping_of(struct enc *e, const struct frame *f)
{
	const char *file = f->module && f->module[0] ? f->module : "[unknown]";
	const char *bid = f->build_id ? f->build_id : "";
	char key[4200];
	size_t len = key_add(key, 0, sizeof(key), f->kernel ? "k" : "u", 1);
	bool fresh;
	long id;
	int fs, bs;

	len = key_add(key, len, sizeof(key), file, strlen(file));
	len = key_add(key, len, sizeof(key), bid, strlen(bid));
	id = intern_key(e->map_keys, key, len, &fresh);
	if (id < 0 || !fresh)
		return id;
	fs = str_id(e, file);
	bs = str_id(e, bid);
	if (fs < 0 || bs < 0 || reserve((void **)&e->maps, &e->maps_cap, id, sizeof(*e->maps)))
		return -ENOMEM;
	e->maps[id] = (struct enc_mapping){ .file = fs, .build_id = bs, .lo = UINT64_MAX,
					    .kernel = f->kernel };
	return id;
}

/* Functions are the frames' display names ("[libc.so.6]" for an unresolved frame), per file
 * (and per source file, where DWARF named it: pprof -lines shows it). */
static long function_of(struct enc *e, const char *name, const char *file, const char *src)
{
	char key[4200];
	size_t len = key_add(key, 0, sizeof(key), name, strlen(name));
	bool fresh;
	long id;
	int ns, fs;

	len = key_add(key, len, sizeof(key), file, strlen(file));
	len = key_add(key, len, sizeof(key), src ? src : "", src ? strlen(src) : 0);
	id = intern_key(e->fn_keys, key, len, &fresh);
	if (id < 0 || !fresh)
		return id;
	ns = str_id(e, name);
	fs = str_id(e, src);
	if (ns < 0 || fs < 0 ||
	    reserve((void **)&e->fn_names, &e->fns_cap, id, sizeof(*e->fn_names)) ||
	    reserve((void **)&e->fn_files, &e->fn_files_cap, id, sizeof(*e->fn_files)))
		return -ENOMEM;
	e->fn_names[id] = ns;
	e->fn_files[id] = fs;
	return id;
}

/* The location of nr lines (innermost first) at address: the key is all of them. */
static long location_add(struct enc *e, __u32 mapping, const struct enc_line *lines, __u32 nr,
			 __u64 address)
{
	char key[sizeof(__u32) + sizeof(__u64) + MAX_INLINE_LINES * sizeof(*lines)];
	size_t len = 0;
	bool fresh;
	long id;

	memcpy(key, &mapping, sizeof(mapping));
	memcpy(key + sizeof(mapping), &address, sizeof(address));
	len = sizeof(mapping) + sizeof(address);
	memcpy(key + len, lines, nr * sizeof(*lines));
	len += nr * sizeof(*lines);
	id = intern_key(e->loc_keys, key, len, &fresh);
	if (id < 0 || !fresh)
		return id;
	if (reserve((void **)&e->locs, &e->locs_cap, id, sizeof(*e->locs)) ||
	    reserve((void **)&e->lines, &e->lines_cap, e->nr_lines + nr, sizeof(*e->lines)))
		return -ENOMEM;
	e->locs[id] = (struct enc_location){ mapping, nr, e->nr_lines, address };
	memcpy(e->lines + e->nr_lines, lines, nr * sizeof(*lines));
	e->nr_lines += nr;
	return id;
}

/* A frame's location, with the frames inlined at its address (inl, nr_inl of them, outermost
 * first): user frames at their offset in the file (the same in every process that maps it),
 * kernel frames at their address.  -ENOMEM or the location index. */
static long location_of(struct enc *e, const struct frame *f, const struct frame *const *inl,
			__u32 nr_inl)
{
	struct enc_line lines[MAX_INLINE_LINES];
	char name[512];
	long m = mapping_of(e, f), fn;
	/* the innermost frame's: where the location's lines were looked up */
	const struct frame *at_addr = nr_inl ? inl[nr_inl - 1] : f;
	__u64 address = f->kernel ? at_addr->addr : at_addr->offset;
	__u32 nr = 0;

	if (m < 0)
		return m;
	for (__u32 i = nr_inl + 1; i > 0 && nr < MAX_INLINE_LINES; i--) {
		const struct frame *at = i == 1 ? f : inl[i - 2];

		fn = function_of(e, stack_frame_name(at, false, name, sizeof(name)),
				 stack_names__str(e->strs, e->maps[m].file), at->srcfile);
		if (fn < 0)
			return fn;
		lines[nr++] = (struct enc_line){ fn, at->line };
	}
	if (address < e->maps[m].lo)
		e->maps[m].lo = address;
	if (address > e->maps[m].hi)
		e->maps[m].hi = address;
	return location_add(e, m, lines, nr, address);
}

/* The "--" between a sleeper's stack and its waker's, as folded output has it. */
static long separator_location(struct enc *e)
{
	struct enc_line line = { 0, 0 };
	long fn, id;

	if (e->separator)
		return e->separator - 1;
	fn = function_of(e, "--", "", NULL);
	line.function = fn;
	id = fn < 0 ? fn : location_add(e, UINT32_MAX, &line, 1, 0);
	if (id >= 0)
		e->separator = id + 1;
	return id;
}

/* The locations of n frames got by frame(s, i), leaf first, into ids: a frame and the frames
 * inlined after it are one location.  Returns how many, or -ENOMEM. */
static long frames_locations(struct enc *e, const struct stack_sample *s, __u32 n,
			     const struct frame *(*frame)(const struct stack_sample *, __u32),
			     bool leaf_first, uint64_t *ids)
{
	const struct frame *inl[MAX_INLINE_LINES];
	long k = 0, id;

	for (__u32 step = 0; step < n; step++) {
		__u32 i = leaf_first ? step : n - 1 - step, nr_inl = 0;
		const struct frame *f = frame(s, i);

		/* gather the inlined frames of one location, innermost first, then its frame */
		if (!leaf_first) {
			while (f->inlined && i > 0 && step + 1 < n) {
				if (nr_inl < MAX_INLINE_LINES - 1)
					inl[nr_inl++] = f;
				step++;
				f = frame(s, --i);
			}
			/* outermost first, as location_of() takes them */
			for (__u32 a = 0, b = nr_inl; a + 1 < b; a++, b--) {
				const struct frame *t = inl[a];

				inl[a] = inl[b - 1];
				inl[b - 1] = t;
			}
		}
		if ((id = location_of(e, f, inl, nr_inl)) < 0)
			return id;
		ids[k++] = id + 1;
	}
	return k;
}

static const struct frame *waker_frame_at(const struct stack_sample *s, __u32 i)
{
	return stack_sample_waker_frame(s, i);
}

static const struct frame *frame_at(const struct stack_sample *s, __u32 i)
{
	return stack_sample_frame(s, i);
}

/* The sample's location ids, leaf first: pprof's order, the reverse of ours.  Returns how
 * many, or -ENOMEM. */
static long sample_locations(struct enc *e, const struct stack_sample *s, uint64_t *ids)
{
	long k = 0, n;

	/* a waker's frames are leaf first already, and carry no inlined frames of their own */
	n = frames_locations(e, s, s->nr_waker_frames, waker_frame_at, true, ids);
	if (n < 0)
		return n;
	k = n;
	if (s->nr_waker_frames) {
		if ((n = separator_location(e)) < 0)
			return n;
		ids[k++] = n + 1;
	}
	n = frames_locations(e, s, s->nr_frames, frame_at, false, ids + k);
	return n < 0 ? n : k + n;
}

static int comm_id(struct enc *e, const char comm[16])
{
	return stack_names__intern(e->strs, comm, strnlen(comm, 16));
}

/* The sample's labels into l (MAX_LABELS of them).  -ENOMEM or how many. */
static int sample_labels(struct enc *e, const struct stack_sample *s, const struct pprof_meta *m,
			 Label *l)
{
	unsigned which = m->labels;
	int n = 0, k;

	if (which & PPROF_LABEL_PID) {
		perftools__profiles__label__init(&l[n]);
		if ((l[n].key = str_id(e, "pid")) < 0)
			return -ENOMEM;
		l[n++].num = s->pid;
	}
	if (which & PPROF_LABEL_TID) {
		perftools__profiles__label__init(&l[n]);
		if ((l[n].key = str_id(e, "tid")) < 0)
			return -ENOMEM;
		l[n++].num = s->tid;
	}
	if ((which & PPROF_LABEL_COMM) && s->comm[0]) {
		perftools__profiles__label__init(&l[n]);
		if ((l[n].key = str_id(e, "comm")) < 0 || (k = comm_id(e, s->comm)) < 0)
			return -ENOMEM;
		l[n++].str = k;
	}
	if (s->cgroup) {
		perftools__profiles__label__init(&l[n]);
		if ((l[n].key = str_id(e, "cgroup")) < 0 || (l[n].str = str_id(e, s->cgroup)) < 0)
			return -ENOMEM;
		n++;
	}
	if (s->nr_waker_frames && s->waker_comm[0]) {
		perftools__profiles__label__init(&l[n]);
		if ((l[n].key = str_id(e, "waker")) < 0 || (k = comm_id(e, s->waker_comm)) < 0)
			return -ENOMEM;
		l[n++].str = k;
	}
	return n;
}

static int sample_values(const struct stack_sample *s, const struct pprof_meta *m, int64_t *v)
{
	for (int i = 0; i < m->nr_values; i++) {
		const struct pprof_value *pv = &m->values[i];
		__u64 x = 0;

		if (pv->event == PPROF_ANY_EVENT || (__u32)pv->event == s->event) {
			if (__builtin_mul_overflow(s->value, pv->scale ? pv->scale : 1, &x) ||
			    x > INT64_MAX)
				return -EOVERFLOW;
		}
		v[i] = x;
	}
	return 0;
}

/* What the profile's header points into: its sample types and comments. */
struct enc_out {
	ValueType types[PPROF_MAX_VALUES + 1];
	ValueType *type_ptrs[PPROF_MAX_VALUES];
	int64_t comments[PPROF_MAX_COMMENTS];
};

/* Where the packed profile goes as it is packed: gzip'd, to a stream or into memory.
 * protobuf-c hands it a few bytes at a time; they are deflated 64 KB at a time (the gzip'd bytes
 * do not depend on how the input is cut, only on it and the flush at the end). */
#define SINK_CHUNK (64 << 10)
struct sink {
	ProtobufCBuffer base; /* first: what protobuf-c calls */
	z_stream z;
	bool z_ready;
	FILE *f;              /* or NULL: into buf */
	void *buf;
	size_t len, cap;
	size_t in_len;
	int err;
	unsigned char in[SINK_CHUNK], out[SINK_CHUNK];
};

static int sink_put(struct sink *k, const void *data, size_t len)
{
	if (k->f) {
		if (fwrite(data, 1, len, k->f) != len)
			return -errno ?: -EIO;
		return 0;
	}
	if (reserve(&k->buf, &k->cap, k->len + len, 1))
		return -ENOMEM;
	memcpy((char *)k->buf + k->len, data, len);
	k->len += len;
	return 0;
}

static int sink_deflate(struct sink *k, int flush)
{
	int ret;

	k->z.next_in = k->in;
	k->z.avail_in = k->in_len;
	do {
		k->z.next_out = k->out;
		k->z.avail_out = sizeof(k->out);
		ret = deflate(&k->z, flush);
		if (ret == Z_STREAM_ERROR)
			return -ENOMEM;
		if (sizeof(k->out) > k->z.avail_out) {
			int err = sink_put(k, k->out, sizeof(k->out) - k->z.avail_out);

			if (err)
				return err;
		}
	} while (k->z.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	k->in_len = 0;
	return 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct sink *k = (struct sink *)b;

	while (len && !k->err) {
		size_t n = len < sizeof(k->in) - k->in_len ? len : sizeof(k->in) - k->in_len;

		memcpy(k->in + k->in_len, data, n);
		k->in_len += n;
		data += n;
		len -= n;
		if (k->in_len == sizeof(k->in))
			k->err = sink_deflate(k, Z_NO_FLUSH);
	}
}

static struct sink *sink_new(FILE *f)
{
	struct sink *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->base.append = sink_append;
	k->f = f;
	if (deflateInit2(&k->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY)) {
		free(k);
		return NULL;
	}
	k->z_ready = true;
	return k;
}

static int sink_finish(struct sink *k)
{
	return k->err ?: sink_deflate(k, Z_FINISH);
}

static void sink_free(struct sink *k)
{
	if (!k)
		return;
	if (k->z_ready)
		deflateEnd(&k->z);
	free(k->buf);
	free(k);
}

/* Adds comment line to p (at most PPROF_MAX_COMMENTS).  0 or -ENOMEM. */
static int add_comment(struct enc *e, struct enc_out *o, Profile *p, const char *line)
{
	int id;

	if (p->n_comment == PPROF_MAX_COMMENTS)
		return 0;
	if ((id = str_id(e, line)) < 0)
		return -ENOMEM;
	o->comments[p->n_comment++] = id;
	p->comment = o->comments;
	return 0;
}

/* Notes of the header ("a\n# b": a line each) as comments "PREFIXa", "PREFIXb". */
static int note_comments(struct enc *e, struct enc_out *o, Profile *p, const char *notes,
			 const char *prefix)
{
	struct stack_buf b = {};
	int err = 0;

	while (!err && notes) {
		const char *next = strstr(notes, "\n# ");
		size_t len = next ? (size_t)(next - notes) : strlen(notes);

		b.len = 0;
		err = stack_buf_printf(&b, "%s%.*s", prefix, (int)len, notes);
		err = err ?: add_comment(e, o, p, b.s);
		notes = next ? next + 3 : NULL;
	}
	stack_buf_free(&b);
	return err;
}

/* The run's line, its report header's lines (pprof_meta.header), then the machine's: last,
 * so that at PPROF_MAX_COMMENTS they go first. */
static int header_comments(struct enc *e, struct enc_out *o, const struct pprof_meta *m,
			   Profile *p)
{
	const struct report_header *h = m->header;
	bool detail = h && h->lost_detail && h->lost_detail[0];
	char line[1024];
	int err = m->comment ? add_comment(e, o, p, m->comment) : 0;

	if (err || !h)
		return err ?: note_comments(e, o, p, m->machine, "## ");
	if (h->event) {
		snprintf(line, sizeof(line), "# Event: %s", h->event);
		err = add_comment(e, o, p, line);
	}
	if (!err && h->frequency) {
		snprintf(line, sizeof(line), "# Event frequency: %llu Hz",
			 (unsigned long long)h->frequency);
		err = add_comment(e, o, p, line);
	}
	if (!err && h->period) {
		snprintf(line, sizeof(line), "# Sample period: %llu", (unsigned long long)h->period);
		err = add_comment(e, o, p, line);
	}
	if (!err) {
		snprintf(line, sizeof(line), "# Lost samples: %llu%s%s%s", (unsigned long long)h->lost,
			 detail ? " (" : "", detail ? h->lost_detail : "", detail ? ")" : "");
		err = add_comment(e, o, p, line);
	}
	if (!err && h->unwind) {
		snprintf(line, sizeof(line), "# Call graph: %s", h->unwind);
		err = add_comment(e, o, p, line);
	}
	if (!err && h->excluded) {
		snprintf(line, sizeof(line), "# Excluded: %s", h->excluded);
		err = add_comment(e, o, p, line);
	}
	err = err ?: note_comments(e, o, p, h->extra, "# ");
	err = err ?: note_comments(e, o, p, h->symbols, "# ");
	err = err ?: note_comments(e, o, p, h->lines, "# ");
	err = err ?: note_comments(e, o, p, h->cut, "# ");
	return err ?: note_comments(e, o, p, m->machine, "## ");
}

/* Each sample packed as it is read (a field of a profile of nothing else: the bytes the whole
 * profile's sample field would have for it), its locations and strings interned on the way. */
static int stream_samples(struct enc *e, struct stack_source *src, const struct pprof_meta *m,
			  struct sink *k)
{
	Profile one = PERFTOOLS__PROFILES__PROFILE__INIT;
	Label labels[MAX_LABELS], *label_ptrs[MAX_LABELS];
	int64_t values[PPROF_MAX_VALUES];
	uint64_t *loc_ids = NULL;
	size_t cap = 0, n = stack_source_count(src);
	Sample ps, *ps_ptr = &ps;
	int err = 0;

	one.sample = &ps_ptr;
	one.n_sample = 1;
	for (size_t i = 0; i < n && !err && !k->err; i++) {
		const struct stack_sample *s = stack_source_get(src, i);
		size_t nr;
		long nloc;
		int nl;

		if (!s) {
			err = -ENOMEM;
			break;
		}
		nr = s->nr_frames + s->nr_waker_frames + (s->nr_waker_frames ? 1 : 0);
		if (ARRAY_GROW(loc_ids, cap, nr ?: 1)) {
			err = -ENOMEM;
			break;
		}
		perftools__profiles__sample__init(&ps);
		ps.location_id = loc_ids;
		nloc = sample_locations(e, s, loc_ids);
		if (nloc < 0) {
			err = nloc;
			break;
		}
		ps.n_location_id = nloc;
		ps.value = values;
		ps.n_value = m->nr_values;
		err = sample_values(s, m, values);
		if (err)
			break;
		nl = sample_labels(e, s, m, labels);
		if (nl < 0) {
			err = nl;
			break;
		}
		for (int j = 0; j < nl; j++)
			label_ptrs[j] = &labels[j];
		ps.label = label_ptrs;
		ps.n_label = nl;
		perftools__profiles__profile__pack_to_buffer(&one, &k->base);
	}
	free(loc_ids);
	return err ?: k->err;
}

static int build_header(struct enc *e, struct enc_out *o, const struct pprof_meta *m, Profile *p)
{
	for (int i = 0; i < m->nr_values; i++) {
		ValueType *t = &o->types[i];

		perftools__profiles__value_type__init(t);
		t->type = str_id(e, m->values[i].type);
		t->unit = str_id(e, m->values[i].unit);
		if (t->type < 0 || t->unit < 0)
			return -ENOMEM;
		o->type_ptrs[i] = t;
	}
	p->sample_type = o->type_ptrs;
	p->n_sample_type = m->nr_values;
	if (m->default_value > 0 && m->default_value < m->nr_values)
		p->default_sample_type = o->types[m->default_value].type;
	if (m->period_type) {
		ValueType *t = &o->types[PPROF_MAX_VALUES];

		perftools__profiles__value_type__init(t);
		t->type = str_id(e, m->period_type);
		t->unit = str_id(e, m->period_unit);
		if (t->type < 0 || t->unit < 0)
			return -ENOMEM;
		p->period_type = t;
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	return header_comments(e, o, m, p);
}

/* pprof takes mapping[0] for the main binary (it names the profile's "File:"): executables
 * first, then libraries and other user mappings, the kernel's last, each in order of first
 * sight.  Returns the rank used to sort. */
static int mapping_rank(const struct enc *e, const struct enc_mapping *m)
{
	const char *file = stack_names__str(e->strs, m->file);

	if (m->kernel)
		return 2;
	return file[0] == '/' && !strstr(stack_module_short(file), ".so") ? 0 : 1;
}

/* pos[i]: where mapping i goes. */
static void order_mappings(const struct enc *e, size_t nm, __u32 *pos)
{
	size_t at = 0;

	for (int rank = 0; rank < 3; rank++)
		for (size_t i = 0; i < nm; i++)
			if (mapping_rank(e, &e->maps[i]) == rank)
				pos[i] = at++;
}

/* Mappings, locations and functions, once every sample has named its own: packed one at a
 * time, as stream_samples() packs samples. */
static int stream_tables(struct enc *e, struct sink *k)
{
	size_t nm = stack_names__count(e->map_keys), nl = stack_names__count(e->loc_keys);
	size_t nf = stack_names__count(e->fn_keys);
	__u32 *pos = calloc(nm ?: 1, sizeof(*pos)), *at = calloc(nm ?: 1, sizeof(*at));
	Line lines[MAX_INLINE_LINES], *line_ptrs[MAX_INLINE_LINES];
	Profile one = PERFTOOLS__PROFILES__PROFILE__INIT;
	Mapping pm, *pm_ptr = &pm;
	Location pl, *pl_ptr = &pl;
	Function pf, *pf_ptr = &pf;

	if (!pos || !at) {
		free(pos);
		free(at);
		return -ENOMEM;
	}
	order_mappings(e, nm, pos);
	for (size_t i = 0; i < nm; i++)
		at[pos[i]] = i;
	one.mapping = &pm_ptr;
	one.n_mapping = 1;
	for (size_t j = 0; j < nm && !k->err; j++) {
		const struct enc_mapping *em = &e->maps[at[j]];

		perftools__profiles__mapping__init(&pm);
		pm.id = j + 1;
		pm.memory_start = em->lo == UINT64_MAX ? 0 : em->lo;
		pm.memory_limit = em->lo == UINT64_MAX ? 0 : em->hi + 1;
		/* user addresses are file offsets: the mapping starts where its lowest one is */
		pm.file_offset = em->kernel ? 0 : pm.memory_start;
		pm.filename = em->file;
		pm.build_id = em->build_id;
		/* every location is named: pprof must not symbolize them again */
		pm.has_functions = true;
		perftools__profiles__profile__pack_to_buffer(&one, &k->base);
	}
	one.n_mapping = 0;
	one.location = &pl_ptr;
	one.n_location = 1;
	for (size_t i = 0; i < nl && !k->err; i++) {
		const struct enc_location *el = &e->locs[i];

		perftools__profiles__location__init(&pl);
		pl.id = i + 1;
		pl.mapping_id = el->mapping == UINT32_MAX ? 0 : pos[el->mapping] + 1;
		pl.address = el->address;
		for (__u32 j = 0; j < el->nr_lines; j++) {
			perftools__profiles__line__init(&lines[j]);
			lines[j].function_id = e->lines[el->lines + j].function + 1;
			lines[j].line = e->lines[el->lines + j].line;
			line_ptrs[j] = &lines[j];
		}
		pl.line = line_ptrs;
		pl.n_line = el->nr_lines;
		perftools__profiles__profile__pack_to_buffer(&one, &k->base);
	}
	one.n_location = 0;
	one.function = &pf_ptr;
	one.n_function = 1;
	for (size_t i = 0; i < nf && !k->err; i++) {
		perftools__profiles__function__init(&pf);
		pf.id = i + 1;
		pf.name = pf.system_name = e->fn_names[i];
		pf.filename = e->fn_files[i];
		perftools__profiles__profile__pack_to_buffer(&one, &k->base);
	}
	free(pos);
	free(at);
	return k->err;
}

static void enc_free(struct enc *e)
{
	stack_names__free(e->strs);
	stack_names__free(e->map_keys);
	stack_names__free(e->fn_keys);
	stack_names__free(e->loc_keys);
	free(e->maps);
	free(e->fn_names);
	free(e->fn_files);
	free(e->lines);
	free(e->locs);
}

/* The profile of the stacks of src, packed and gzip'd into k as it is made: the header's sample
 * types (field 1), then each sample, mapping, location and function (fields 2-5, a message at a
 * time), then the string table and the rest of the header (fields 6-14): the bytes
 * perftools__profiles__profile__pack() gives for the whole profile, without the whole profile
 * or its samples held at once. */
static int encode(struct stack_source *src, const struct pprof_meta *m, struct sink *k)
{
	Profile p = PERFTOOLS__PROFILES__PROFILE__INIT, head = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct enc_out o = {};
	struct enc e = {};
	char **strs = NULL;
	size_t ns;
	int err;

	if (m->nr_values < 1 || m->nr_values > PPROF_MAX_VALUES)
		return -EINVAL;
	e.strs = stack_names__new();
	e.map_keys = stack_names__new();
	e.fn_keys = stack_names__new();
	e.loc_keys = stack_names__new();
	if (!e.strs || !e.map_keys || !e.fn_keys || !e.loc_keys || str_id(&e, "") != 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = build_header(&e, &o, m, &p);
	if (err)
		goto cleanup;
	head.sample_type = p.sample_type;
	head.n_sample_type = p.n_sample_type;
	perftools__profiles__profile__pack_to_buffer(&head, &k->base);
	err = stream_samples(&e, src, m, k);
	err = err ?: stream_tables(&e, k);
	if (err)
		goto cleanup;
	/* the last: every string is in by now */
	ns = stack_names__count(e.strs);
	strs = calloc(ns ?: 1, sizeof(*strs));
	if (!strs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < ns; i++)
		strs[i] = (char *)stack_names__str(e.strs, i);
	p.sample_type = NULL;
	p.n_sample_type = 0;
	p.string_table = strs;
	p.n_string_table = ns;
	perftools__profiles__profile__pack_to_buffer(&p, &k->base);
	err = sink_finish(k);
cleanup:
	free(strs);
	enc_free(&e);
	return err;
}

static int encode_to(struct stack_source *src, const struct pprof_meta *m, FILE *out,
		     void **buf, size_t *size)
{
	struct sink *k = sink_new(out);
	int err = k ? encode(src, m, k) : -ENOMEM;

	stack_source_free(src);
	if (!err && buf) {
		*buf = k->buf;
		*size = k->len;
		k->buf = NULL;
	}
	sink_free(k);
	return err;
}

int pprof_encode(const struct stack_sample *s, size_t n, const struct pprof_meta *m, void **buf,
		 size_t *size)
{
	struct stack_source src = { .s = s, .n = n };

	*buf = NULL;
	*size = 0;
	return encode_to(&src, m, NULL, buf, size);
}

int pprof_encode_tree(const struct stack_tree *t, const struct pprof_meta *m, void **buf,
		      size_t *size)
{
	struct stack_source src = { .t = t };

	*buf = NULL;
	*size = 0;
	return encode_to(&src, m, NULL, buf, size);
}

int pprof_write(FILE *out, const struct stack_sample *s, size_t n, const struct pprof_meta *m)
{
	struct stack_source src = { .s = s, .n = n };

	return encode_to(&src, m, out, NULL, NULL) ?: stack_output_done(out);
}

int pprof_write_tree(FILE *out, const struct stack_tree *t, const struct pprof_meta *m)
{
	struct stack_source src = { .t = t };

	return encode_to(&src, m, out, NULL, NULL) ?: stack_output_done(out);
}
