// SPDX-License-Identifier: GPL-2.0
/* The pprof reader: protobuf-c unpacks profile.proto (its own bounds: every length within the
 * input), then every id and string index a message holds is checked before it is followed. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/common.h"
#include "core/hashtab.h"
#include "in/profile_in.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;

/* x86-64, arm64 and most 64-bit kernels live in the top half of the address space. */
#define KERNEL_START 0xffff800000000000ULL

struct pp {
	const Profile *p;
	const char *name;
	struct hashtab locs, fns, maps; /* id -> index + 1 */
	int value;                      /* the sample value reported */
	double scale;                   /* to the unit reported (ns -> us) */
	bool per_event;                 /* each sample type is an event (profile -e A,B) */
	const char *comm;               /* for samples without a comm label: the main binary */
	struct frame *frames;           /* one sample's: the deepest's frames, twice */
	size_t max_frames;              /* the deepest sample's, at most PROFILE_IN_MAX_FRAMES */
	__u64 dropped;
};

static int bad(const struct pp *r, const char *what)
{
	p_err("%s: broken pprof profile: %s", r->name, what);
	return -EINVAL;
}

/* String i of the table, or NULL when i is out of it. */
static const char *str(const struct pp *r, int64_t i)
{
	return i >= 0 && (uint64_t)i < r->p->n_string_table ? r->p->string_table[i] : NULL;
}

/* ids -> index + 1, each id non-zero and once. */
static int index_ids(struct pp *r, struct hashtab *h, size_t n, uint64_t (*id_of)(const Profile *, size_t),
		     const char *what)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_of(r->p, i);

		if (!id || hashtab_get(h, id, 0)) {
			p_err("%s: broken pprof profile: %s id %llu is 0 or not unique", r->name, what,
			      (unsigned long long)id);
			return -EINVAL;
		}
		if (hashtab_put(h, id, 0, (void *)(uintptr_t)(i + 1)))
			return -ENOMEM;
	}
	return 0;
}

static uint64_t loc_id(const Profile *p, size_t i) { return p->location[i]->id; }
static uint64_t fn_id(const Profile *p, size_t i) { return p->function[i]->id; }
static uint64_t map_id(const Profile *p, size_t i) { return p->mapping[i]->id; }

static void *lookup(const struct hashtab *h, uint64_t id, void *const *arr)
{
	uintptr_t at = id ? (uintptr_t)hashtab_get(h, id, 0) : 0;

	return at ? arr[at - 1] : NULL;
}

/* Time units are reported in microseconds; anything else as a count. */
static double time_scale(const char *unit)
{
	static const struct { const char *unit; double to_us; } units[] = {
		{ "nanoseconds", 1e-3 }, { "microseconds", 1 }, { "milliseconds", 1e3 },
		{ "seconds", 1e6 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].unit))
			return units[i].to_us;
	return 0;
}

/* Which value to report: the sample count where there is one ("samples"/"count" first, as Go's
 * CPU profiles and bpfprof's have it), else the default type, else the last (pprof's rule);
 * with several count types and no "samples", one event each.  0 or -EINVAL (printed). */
static int choose_value(struct pp *r, struct profile_sink *k)
{
	const Profile *p = r->p;
	const char *names[PROFILE_IN_MAX_EVENTS] = {}, *type, *unit;
	int n = p->n_sample_type, counts = 0, chosen = -1;

	if (!n)
		return bad(r, "no sample types");
	for (int i = 0; i < n; i++) {
		type = str(r, p->sample_type[i]->type);
		unit = str(r, p->sample_type[i]->unit);
		if (!type || !unit)
			return bad(r, "sample type names out of the string table");
		if (!strcmp(unit, "count")) {
			if (counts < PROFILE_IN_MAX_EVENTS)
				names[counts] = type;
			counts++;
		}
		if (chosen < 0 && !strcmp(type, "samples") && !strcmp(unit, "count"))
			chosen = i;
	}
	if (chosen < 0 && counts > 1 && counts == n && n <= PROFILE_IN_MAX_EVENTS) {
		r->per_event = true;
		r->scale = 1;
		return profile_in_set_type(k, "events", "count", names, n);
	}
	for (int i = 0; chosen < 0 && p->default_sample_type && i < n; i++)
		if (p->sample_type[i]->type == p->default_sample_type)
			chosen = i;
	if (chosen < 0)
		chosen = n - 1;
	r->value = chosen;
	type = str(r, p->sample_type[chosen]->type);
	unit = str(r, p->sample_type[chosen]->unit);
	r->scale = time_scale(unit);
	if (r->scale)
		unit = "microseconds";
	else
		r->scale = 1;
	/* a count beside a time: the event is the time's ("cpu", as Go and bpfprof write it) */
	for (int i = 0; !strcmp(type, "samples") && i < n; i++)
		if (time_scale(str(r, p->sample_type[i]->unit)))
			names[0] = str(r, p->sample_type[i]->type);
	if (strcmp(type, "samples") || !names[0])
		names[0] = type;
	return profile_in_set_type(k, type, unit, names, 1);
}

static bool is_kernel(const char *file, uint64_t address)
{
	return !strcmp(file, "[kernel.kallsyms]") || address >= KERNEL_START;
}

/* The frames of one location into f, outermost first (its last line is the caller the others
 * were inlined into).  Returns how many, 0 for "--" (the waker separator), -EINVAL. */
static int location_frames(const struct pp *r, const Location *l, struct frame *f, size_t room,
			   bool *separator)
{
	const Mapping *m = lookup(&r->maps, l->mapping_id, (void *const *)r->p->mapping);
	const char *file = m ? str(r, m->filename) : "[unknown]";
	const char *bid = m ? str(r, m->build_id) : "";
	struct frame base = { .addr = l->address };
	size_t n = 0;

	if ((l->mapping_id && !m) || !file || !bid)
		return bad(r, "a location names a mapping or string that is not there");
	base.module = file[0] ? file : "[unknown]";
	base.build_id = bid[0] ? bid : NULL;
	base.kernel = is_kernel(base.module, l->address);
	/* addresses are the process's: the file offset is where the mapping says */
	base.offset = m && !base.kernel && l->address >= m->memory_start ?
		      l->address - m->memory_start + m->file_offset : l->address;
	*separator = false;
	if (!l->n_line) {
		f[0] = base;
		return 1;
	}
	for (size_t i = l->n_line; i > 0 && n < room; i--) {
		const Function *fn = lookup(&r->fns, l->line[i - 1]->function_id,
					    (void *const *)r->p->function);
		const char *name = fn ? str(r, fn->name) : NULL;
		const char *src = fn ? str(r, fn->filename) : NULL;
		char unresolved[300];

		if (!name || !src)
			return bad(r, "a line names a function or string that is not there");
		if (!m && !strcmp(name, "--") && l->n_line == 1) {
			*separator = true;
			return 0;
		}
		f[n] = base;
		/* bpfprof names an unresolved frame by its file ("[libc.so.6]"): unnamed again */
		stack_frame_name(&(struct frame){ .module = base.module }, false, unresolved,
				 sizeof(unresolved));
		f[n].name = name[0] && strcmp(name, unresolved) ? name : NULL;
		/* the lines after the last were inlined into it (pprof's order: innermost first) */
		f[n].inlined = i < l->n_line;
		f[n].srcfile = src[0] ? src : NULL;
		f[n].line = l->line[i - 1]->line > 0 && l->line[i - 1]->line <= UINT32_MAX ?
			    l->line[i - 1]->line : 0;
		n++;
	}
	return n;
}

static int label_value(const struct pp *r, const Sample *s, const char *key, int64_t *num,
		       const char **text)
{
	for (size_t i = 0; i < s->n_label; i++) {
		const char *k = str(r, s->label[i]->key);

		if (!k)
			return bad(r, "a label key out of the string table");
		if (strcmp(k, key))
			continue;
		if (num)
			*num = s->label[i]->num;
		if (text && s->label[i]->str && !(*text = str(r, s->label[i]->str)))
			return bad(r, "a label value out of the string table");
		return 1;
	}
	return 0;
}

static void set_comm(char comm[16], const char *name)
{
	snprintf(comm, 16, "%s", name ? name : "[unknown]");
}

/* The sample's frames (outermost first) and labels into out; its value is the caller's. */
static int sample_fill(struct pp *r, const Sample *s, struct stack_sample *out)
{
	struct frame *f = r->frames, *w = NULL;
	size_t room = r->max_frames;
	const char *comm = r->comm, *waker = NULL;
	size_t n = 0, nw = 0;
	int64_t num;
	int err;

	memset(out, 0, sizeof(*out));
	/* leaf first: read backwards, so frames come out outermost first */
	for (size_t i = s->n_location_id; i > 0; i--) {
		const Location *l = lookup(&r->locs, s->location_id[i - 1],
					   (void *const *)r->p->location);
		bool sep;
		int k;

		if (!l)
			return bad(r, "a sample names a location that is not there");
		if (n >= room) {
			r->dropped++;
			break;
		}
		k = location_frames(r, l, f + n, room - n, &sep);
		if (k < 0)
			return k;
		if (sep && w) {
			/* a second "--" is a frame of that name: one waker a stack */
			f[n++] = (struct frame){ .name = "--", .module = "[unknown]" };
			continue;
		}
		if (sep) {
			/* what follows, toward the leaf, is the waker's: folded order */
			w = f + n;
			f = w;
			nw = n;
			n = 0;
			continue;
		}
		n += k;
	}
	if (nw) {
		/* before the separator: the sleeper's; after it: the waker's, innermost first */
		out->frames = r->frames;
		out->nr_frames = nw;
		out->waker_frames = w;
		out->nr_waker_frames = n;
		for (size_t i = 0; i < n / 2; i++) {
			struct frame t = w[i];

			w[i] = w[n - 1 - i];
			w[n - 1 - i] = t;
		}
	} else {
		out->frames = r->frames;
		out->nr_frames = n;
	}
	if ((err = label_value(r, s, "pid", &num, NULL)) < 0)
		return err;
	out->pid = err ? num : 0;
	if ((err = label_value(r, s, "tid", &num, NULL)) < 0)
		return err;
	out->tid = err ? num : out->pid;
	if ((err = label_value(r, s, "comm", NULL, &comm)) < 0 ||
	    (err = label_value(r, s, "waker", NULL, &waker)) < 0 ||
	    (err = label_value(r, s, "cgroup", NULL, &out->cgroup)) < 0)
		return err;
	set_comm(out->comm, comm);
	if (out->nr_waker_frames)
		set_comm(out->waker_comm, waker);
	return 0;
}

static __u64 scaled(const struct pp *r, int64_t v)
{
	double x = v * r->scale;

	return v <= 0 ? 0 : x >= 1.8e19 ? UINT64_MAX : (__u64)llround(x);
}

static int add_samples(struct pp *r, struct profile_sink *k)
{
	const Profile *p = r->p;
	struct stack_sample s;
	int err;

	for (size_t i = 0; i < p->n_sample; i++) {
		const Sample *ps = p->sample[i];

		if (ps->n_value != p->n_sample_type)
			return bad(r, "a sample's values do not match the sample types");
		err = sample_fill(r, ps, &s);
		for (size_t e = 0; !err && e < (r->per_event ? ps->n_value : 1); e++) {
			s.value = scaled(r, ps->value[r->per_event ? e : (size_t)r->value]);
			s.event = e;
			if (!s.value) {
				r->dropped += !r->per_event;
				continue;
			}
			err = profile_in_add(k, &s);
		}
		if (err)
			return err;
	}
	return 0;
}

/* Notes of a header kept at most, and their bytes: comments come from anywhere. */
#define MAX_NOTES 16
#define MAX_NOTES_BYTES 4096

/* What follows prefix at the start of s, or NULL. */
static const char *after(const char *s, const char *prefix)
{
	size_t len = strlen(prefix);

	return strncmp(s, prefix, len) ? NULL : s + len;
}

/* *field set to a copy of value, unless it is set already.  0 or -ENOMEM. */
static int keep_str(const char **field, const char *value)
{
	if (*field)
		return 0;
	*field = strdup(value);
	return *field ? 0 : -ENOMEM;
}

/* "N (detail)": N, and the detail into h where keep. */
static __u64 lost_line(const char *v, struct report_header *h, bool keep, int *err)
{
	char *end;
	__u64 n = strtoull(v, &end, 10);
	size_t len = strlen(end);

	if (keep && len > 3 && !strncmp(end, " (", 2) && end[len - 1] == ')' && !h->lost_detail) {
		h->lost_detail = strndup(end + 2, len - 3);
		if (!h->lost_detail)
			*err = -ENOMEM;
	}
	return n;
}

/* The run's report header that bpfprof writes as comments ("# Key: value", out/pprof.h): the
 * first file's kept whole, the losses of every file summed; other comments are left alone.
 * 0, -EINVAL (printed) or -ENOMEM. */
static int read_header(const struct pp *r, struct profile_in *in)
{
	struct report_header *h = &in->header;
	bool first = in->nr_files == 1, lost_seen = false;
	struct stack_buf notes = {}, machine = {};
	int nr_notes = 0, nr_machine = 0, err = 0;
	const char *v;

	for (size_t i = 0; !err && i < r->p->n_comment; i++) {
		const char *c = str(r, r->p->comment[i]);

		if (!c) {
			err = bad(r, "a comment out of the string table");
			break;
		}
		/* the machine's header (core/machine.h), printed by report --header alone */
		if ((v = after(c, "## "))) {
			if (first && nr_machine < MAX_NOTES &&
			    machine.len + strlen(v) + 2 < MAX_NOTES_BYTES)
				err = stack_buf_printf(&machine, "%s%s", nr_machine++ ? "\n# " : "", v);
			continue;
		}
		if (!(c = after(c, "# ")))
			continue;
		if ((v = after(c, "Lost samples: "))) {
			__u64 n = lost_line(v, h, first && !lost_seen, &err);

			if (!lost_seen) {
				in->lost = in->lost + n < in->lost ? UINT64_MAX : in->lost + n;
				h->lost = first ? n : h->lost;
			}
			lost_seen = true;
		} else if ((v = after(c, "Event frequency: "))) {
			h->frequency = first && !h->frequency ? strtoull(v, NULL, 10) : h->frequency;
		} else if ((v = after(c, "Sample period: "))) {
			h->period = first && !h->period ? strtoull(v, NULL, 10) : h->period;
		} else if ((v = after(c, "Event: "))) {
			err = first ? keep_str(&h->event, v) : 0;
		} else if ((v = after(c, "Call graph: "))) {
			err = first ? keep_str(&h->unwind, v) : 0;
		} else if ((v = after(c, "Excluded: "))) {
			err = first ? keep_str(&h->excluded, v) : 0;
		} else if (first && nr_notes < MAX_NOTES &&
			   notes.len + strlen(c) + 3 < MAX_NOTES_BYTES) {
			err = stack_buf_printf(&notes, "%s%s", nr_notes++ ? "\n# " : "", c);
		}
	}
	in->nr_headers += lost_seen;
	if (!err && notes.len && !h->extra) {
		h->extra = notes.s;
		notes.s = NULL;
	}
	if (!err && machine.len && !in->machine) {
		in->machine = machine.s;
		machine.s = NULL;
	}
	stack_buf_free(&notes);
	stack_buf_free(&machine);
	return err;
}

/* The main binary's name, for samples without a comm label (Go's profiles have none). */
static const char *main_binary(const struct pp *r)
{
	const char *file = r->p->n_mapping ? str(r, r->p->mapping[0]->filename) : NULL;

	return file && file[0] ? stack_module_short(file) : NULL;
}

/* Frames the deepest sample can have (a location is as many frames as lines, or one), at most
 * PROFILE_IN_MAX_FRAMES: what one sample's frames take, sized once.  Unknown locations count
 * one; they are refused when the sample is read. */
static size_t deepest(const Profile *p)
{
	size_t max = 1, most_lines = 1;

	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->n_line > most_lines)
			most_lines = p->location[i]->n_line;
	for (size_t i = 0; i < p->n_sample && max < PROFILE_IN_MAX_FRAMES; i++) {
		size_t n = p->sample[i]->n_location_id;

		n = n > PROFILE_IN_MAX_FRAMES / most_lines ? PROFILE_IN_MAX_FRAMES : n * most_lines;
		if (n > max)
			max = n;
	}
	return max < PROFILE_IN_MAX_FRAMES ? max : PROFILE_IN_MAX_FRAMES;
}

int pprof_read(struct profile_sink *k, const void *data, size_t size)
{
	struct pp r = { .name = k->name };
	__u64 hz = 0;
	int err;

	r.p = perftools__profiles__profile__unpack(NULL, size, data);
	if (!r.p) {
		p_err("%s: not a pprof profile (profile.proto) nor folded stacks", k->name);
		return -EINVAL;
	}
	r.max_frames = deepest(r.p);
	r.frames = calloc(2 * r.max_frames, sizeof(*r.frames));
	if (!r.frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (r.p->n_string_table && r.p->string_table[0][0]) {
		err = bad(&r, "the string table does not start with \"\"");
		goto cleanup;
	}
	err = index_ids(&r, &r.locs, r.p->n_location, loc_id, "location");
	err = err ?: index_ids(&r, &r.fns, r.p->n_function, fn_id, "function");
	err = err ?: index_ids(&r, &r.maps, r.p->n_mapping, map_id, "mapping");
	err = err ?: choose_value(&r, k);
	if (err)
		goto cleanup;
	err = read_header(&r, k->in);
	if (err)
		goto cleanup;
	r.comm = main_binary(&r);
	/* the frequency of the files, where they agree */
	if (r.p->period_type && r.p->period > 0 &&
	    !strcmp(str(&r, r.p->period_type->unit) ?: "", "nanoseconds"))
		hz = llround(1e9 / r.p->period);
	k->in->frequency = k->in->nr_files == 1 || k->in->frequency == hz ? hz : 0;
	if (r.p->duration_nanos > 0)
		k->in->duration_s += r.p->duration_nanos / 1e9;
	err = add_samples(&r, k);
	k->in->dropped += r.dropped;
cleanup:
	if (err == -ENOMEM)
		p_err("%s: %s", k->name, strerror(ENOMEM));
	free(r.frames);
	hashtab_clear(&r.locs, NULL);
	hashtab_clear(&r.fns, NULL);
	hashtab_clear(&r.maps, NULL);
	perftools__profiles__profile__free_unpacked((Profile *)r.p, NULL);
	return err;
}
