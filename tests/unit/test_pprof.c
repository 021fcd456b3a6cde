/* The pprof writer (user/out/pprof.c): what it encodes, read back with protobuf-c's own unpacker
 * after gunzip, so the test does not trust our decoder to check our encoder. */
#include <errno.h>
#include <stdint.h>
#include <zlib.h>
#include "in/profile_in.h"
#include "out/difftable.h"
#include "out/flamegraph.h"
#include "out/pprof.h"
#include "profile.pb-c.h"
#include "test.h"

typedef Perftools__Profiles__Profile Profile;

static Profile *unpack_gz(const void *buf, size_t size)
{
	size_t cap = 1 << 20;
	unsigned char *raw = malloc(cap);
	z_stream z = { .next_in = (Bytef *)buf, .avail_in = size, .next_out = raw,
		       .avail_out = cap };
	Profile *p = NULL;

	if (raw && inflateInit2(&z, 15 + 16) == Z_OK) {
		if (inflate(&z, Z_FINISH) == Z_STREAM_END)
			p = perftools__profiles__profile__unpack(NULL, z.total_out, raw);
		inflateEnd(&z);
	}
	free(raw);
	return p;
}

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : NULL;
}

static const Perftools__Profiles__Location *loc(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static const char *loc_fn(const Profile *p, uint64_t id)
{
	const Perftools__Profiles__Location *l = loc(p, id);

	if (!l || l->n_line != 1)
		return NULL;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == l->line[0]->function_id)
			return str(p, p->function[i]->name);
	return NULL;
}

static const Perftools__Profiles__Mapping *loc_map(const Profile *p, uint64_t id)
{
	const Perftools__Profiles__Location *l = loc(p, id);

	for (size_t i = 0; l && i < p->n_mapping; i++)
		if (p->mapping[i]->id == l->mapping_id)
			return p->mapping[i];
	return NULL;
}

static const char *label_str(const Profile *p, const Perftools__Profiles__Sample *s, const char *k)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), k))
			return str(p, s->label[i]->str);
	return NULL;
}

static int64_t label_num(const Profile *p, const Perftools__Profiles__Sample *s, const char *k)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), k))
			return s->label[i]->num;
	return -1;
}

/* profile's layout: samples/count and cpu/nanoseconds (count x period), period_type, times,
 * stacks leaf first with functions, file mappings with build-ids and file offsets, labels. */
static void test_pprof_encodes_cpu_profile(void)
{
	struct frame f[] = {
		{ .name = "main", .module = "/usr/bin/app", .addr = 0x401000, .offset = 0x1000,
		  .build_id = "0123456789abcdef0123456789abcdef01234567" },
		{ .name = "hot_a", .module = "/usr/bin/app", .addr = 0x401100, .offset = 0x1100,
		  .build_id = "0123456789abcdef0123456789abcdef01234567" },
		{ .name = "asm_sysvec_apic_timer_interrupt", .module = "[kernel.kallsyms]",
		  .addr = 0xffffffff81000000ULL, .kernel = true },
	};
	struct frame g[] = { f[0], { .module = "/usr/lib/libc.so.6", .offset = 0x2345,
				     .addr = 0x7f0000002345ULL } };
	struct stack_sample s[2] = {
		{ .comm = "app", .pid = 42, .tid = 43, .value = 200, .frames = f, .nr_frames = 3 },
		{ .comm = "app", .pid = 42, .tid = 42, .value = 100, .frames = g, .nr_frames = 2 },
	};
	struct pprof_meta m;
	void *buf = NULL;
	size_t size = 0;
	Profile *p;

	pprof_meta_counted(&m, "cpu", "nanoseconds", 10101010);
	m.time_nanos = 1700000000000000000LL;
	m.duration_nanos = 2000000000;
	m.labels = PPROF_LABEL_PID | PPROF_LABEL_TID | PPROF_LABEL_COMM;
	m.comment = "bpfprof profile -F 99";
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), 0);
	CHECK(size > 20 && ((unsigned char *)buf)[0] == 0x1f && ((unsigned char *)buf)[1] == 0x8b);
	p = unpack_gz(buf, size);
	CHECK(p);
	if (!p)
		goto out;
	CHECK_STR(str(p, 0), "");
	CHECK_INT(p->n_sample_type, 2);
	CHECK_STR(str(p, p->sample_type[0]->type), "samples");
	CHECK_STR(str(p, p->sample_type[0]->unit), "count");
	CHECK_STR(str(p, p->sample_type[1]->type), "cpu");
	CHECK_STR(str(p, p->sample_type[1]->unit), "nanoseconds");
	CHECK_STR(str(p, p->default_sample_type), "cpu");
	CHECK(p->period_type);
	CHECK_STR(str(p, p->period_type->type), "cpu");
	CHECK_INT(p->period, 10101010);
	CHECK_INT(p->time_nanos, 1700000000000000000LL);
	CHECK_INT(p->duration_nanos, 2000000000);
	CHECK_INT(p->n_comment, 1);
	CHECK_STR(str(p, p->comment[0]), "bpfprof profile -F 99");
	CHECK_INT(p->n_sample, 2);
	CHECK_INT(p->sample[0]->n_value, 2);
	CHECK_INT(p->sample[0]->value[0], 200);
	CHECK_INT(p->sample[0]->value[1], 200LL * 10101010);
	CHECK_INT(p->sample[1]->value[0], 100);
	/* leaf first */
	CHECK_INT(p->sample[0]->n_location_id, 3);
	CHECK_STR(loc_fn(p, p->sample[0]->location_id[0]), "asm_sysvec_apic_timer_interrupt");
	CHECK_STR(loc_fn(p, p->sample[0]->location_id[1]), "hot_a");
	CHECK_STR(loc_fn(p, p->sample[0]->location_id[2]), "main");
	/* the same frame is the same location */
	CHECK_INT(p->sample[0]->location_id[2], p->sample[1]->location_id[1]);
	/* an unresolved frame is named by its file, as folded output names it */
	CHECK_STR(loc_fn(p, p->sample[1]->location_id[0]), "[libc.so.6]");
	CHECK_INT(loc(p, p->sample[1]->location_id[0])->address, 0x2345);
	CHECK_INT(loc(p, p->sample[0]->location_id[1])->address, 0x1100);
	CHECK_INT(loc(p, p->sample[0]->location_id[0])->address, 0xffffffff81000000ULL);
	const Perftools__Profiles__Mapping *app = loc_map(p, p->sample[0]->location_id[1]);
	CHECK(app);
	if (app) {
		CHECK_STR(str(p, app->filename), "/usr/bin/app");
		CHECK_STR(str(p, app->build_id), "0123456789abcdef0123456789abcdef01234567");
		CHECK_INT(app->memory_start, 0x1000);
		CHECK_INT(app->memory_limit, 0x1101);
		CHECK_INT(app->file_offset, 0x1000);
		CHECK(app->has_functions);
		/* the main binary first: pprof names the profile after it */
		CHECK(p->mapping[0] == app);
	}
	CHECK_STR(str(p, loc_map(p, p->sample[0]->location_id[0])->filename), "[kernel.kallsyms]");
	CHECK_INT(label_num(p, p->sample[0], "pid"), 42);
	CHECK_INT(label_num(p, p->sample[0], "tid"), 43);
	CHECK_STR(label_str(p, p->sample[0], "comm"), "app");
	CHECK_INT(label_num(p, p->sample[1], "tid"), 42);
	perftools__profiles__profile__free_unpacked(p, NULL);
out:
	free(buf);
}

/* profile -e A,B: a value per event, each sample counting in its own; offcpu --waker: the waker's
 * frames above "--", its command a label. */
static void test_pprof_events_and_wakers(void)
{
	struct frame f[] = { { .name = "read", .module = "/lib/libc.so.6", .offset = 0x10 } };
	struct frame w[] = { { .name = "write", .module = "/lib/libc.so.6", .offset = 0x20 } };
	struct stack_sample s[2] = {
		{ .comm = "a", .event = 0, .value = 3, .frames = f, .nr_frames = 1 },
		{ .comm = "b", .event = 1, .value = 5, .frames = f, .nr_frames = 1,
		  .waker_comm = "c", .waker_frames = w, .nr_waker_frames = 1 },
	};
	struct pprof_meta m = { .nr_values = 2, .labels = PPROF_LABEL_COMM };
	void *buf;
	size_t size;
	Profile *p;

	m.values[0] = (struct pprof_value){ "page-faults", "count", 1, 0 };
	m.values[1] = (struct pprof_value){ "context-switches", "count", 1, 1 };
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), 0);
	p = unpack_gz(buf, size);
	CHECK(p);
	if (p) {
		CHECK_INT(p->sample[0]->value[0], 3);
		CHECK_INT(p->sample[0]->value[1], 0);
		CHECK_INT(p->sample[1]->value[0], 0);
		CHECK_INT(p->sample[1]->value[1], 5);
		CHECK_INT(p->sample[1]->n_location_id, 3);
		CHECK_STR(loc_fn(p, p->sample[1]->location_id[0]), "write");
		CHECK_STR(loc_fn(p, p->sample[1]->location_id[1]), "--");
		CHECK_STR(loc_fn(p, p->sample[1]->location_id[2]), "read");
		CHECK_STR(label_str(p, p->sample[1], "waker"), "c");
		CHECK_INT(label_num(p, p->sample[1], "pid"), -1);
		CHECK(!p->period_type);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(buf);
	/* an empty run is a valid profile; a meta without values is refused */
	CHECK_INT(pprof_encode(NULL, 0, &m, &buf, &size), 0);
	p = unpack_gz(buf, size);
	CHECK(p && p->n_sample == 0 && p->n_sample_type == 2);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	m.nr_values = 0;
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), -EINVAL);
	m.nr_values = 1;
	m.values[0].scale = UINT64_MAX / 2;
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), -EOVERFLOW);
}

static const struct stack_sample *read_back(struct profile_in *in, const void *buf, size_t size,
					    size_t *n)
{
	*n = 0;
	return profile_in__read_mem(in, buf, size, "test") ? NULL : profile_in__samples(in, n);
}

/* What the writer encodes the reader decodes: frames (names, files, build-ids, kernel or not,
 * unresolved ones unnamed again), labels, wakers, values in the unit read. */
static void test_pprof_round_trip(void)
{
	struct frame f[] = {
		{ .name = "main", .module = "/usr/bin/app", .offset = 0x1000,
		  .build_id = "0123456789abcdef0123456789abcdef01234567" },
		{ .module = "/usr/lib/libc.so.6", .offset = 0x2345 },
		{ .name = "schedule", .module = "[kernel.kallsyms]", .addr = 0xffffffff81000000ULL,
		  .kernel = true },
	};
	struct frame w[] = { { .name = "waker_fn", .module = "/usr/bin/app", .offset = 0x1200 },
			     { .name = "try_to_wake_up", .module = "[kernel.kallsyms]",
			       .addr = 0xffffffff81000100ULL, .kernel = true } };
	struct stack_sample s[2] = {
		{ .comm = "app", .pid = 42, .tid = 43, .value = 1500, .frames = f, .nr_frames = 3 },
		{ .comm = "app", .pid = 42, .tid = 44, .value = 7, .frames = f, .nr_frames = 1,
		  .waker_comm = "wk", .waker_frames = w, .nr_waker_frames = 2 },
	};
	struct pprof_meta m = { .nr_values = 1, .labels = 7 };
	struct profile_in *in = profile_in__new();
	const struct stack_sample *r;
	void *buf;
	size_t size, n;

	m.values[0] = (struct pprof_value){ "offcpu", "nanoseconds", 1000, PPROF_ANY_EVENT };
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), 0);
	r = read_back(in, buf, size, &n);
	CHECK_INT(n, 2);
	if (n == 2) {
		const struct stack_sample *a = r[0].tid == 43 ? &r[0] : &r[1];
		const struct stack_sample *b = a == &r[0] ? &r[1] : &r[0];

		CHECK_INT(in->unit, REPORT_TIME_US);
		CHECK_STR(in->value_type, "offcpu");
		CHECK_INT(a->value, 1500);
		CHECK_INT(a->pid, 42);
		CHECK_STR(a->comm, "app");
		CHECK_INT(a->nr_frames, 3);
		CHECK_STR(stack_sample_frame(a, 0)->name, "main");
		CHECK_STR(stack_sample_frame(a, 0)->module, "/usr/bin/app");
		CHECK_STR(stack_sample_frame(a, 0)->build_id, "0123456789abcdef0123456789abcdef01234567");
		CHECK_INT(stack_sample_frame(a, 0)->offset, 0x1000);
		CHECK(!stack_sample_frame(a, 1)->name);
		CHECK_STR(stack_sample_frame(a, 1)->module, "/usr/lib/libc.so.6");
		/* merged by file, as drained runs merge them: "[libc.so.6]" */
		CHECK_INT(stack_sample_frame(a, 1)->offset, 0);
		CHECK(stack_sample_frame(a, 2)->kernel);
		CHECK(!stack_sample_frame(a, 0)->kernel);
		CHECK_INT(b->value, 7);
		CHECK_INT(b->nr_frames, 1);
		CHECK_INT(b->nr_waker_frames, 2);
		CHECK_STR(b->waker_comm, "wk");
		CHECK_STR(stack_sample_waker_frame(b, 0)->name, "waker_fn");
		CHECK_STR(stack_sample_waker_frame(b, 1)->name, "try_to_wake_up");
	}
	/* a second file merges: the same stacks add up */
	CHECK_INT(profile_in__read_mem(in, buf, size, "again"), 0);
	r = profile_in__samples(in, &n);
	CHECK_INT(n, 2);
	CHECK_INT(r[0].value + r[1].value, 2 * 1507);
	/* a count does not merge with a time */
	m.values[0] = (struct pprof_value){ "samples", "count", 1, PPROF_ANY_EVENT };
	free(buf);
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), 0);
	CHECK_INT(profile_in__read_mem(in, buf, size, "counts"), -EINVAL);
	free(buf);
	profile_in__free(in);
}

/* profile -e A,B: each sample type an event, and back. */
static void test_pprof_events_round_trip(void)
{
	struct frame f[] = { { .name = "read", .module = "/lib/libc.so.6", .offset = 0x10 } };
	struct stack_sample s[2] = {
		{ .comm = "a", .event = 0, .value = 3, .frames = f, .nr_frames = 1 },
		{ .comm = "a", .event = 1, .value = 5, .frames = f, .nr_frames = 1 },
	};
	struct pprof_meta m = { .nr_values = 2, .labels = PPROF_LABEL_COMM };
	struct profile_in *in = profile_in__new();
	const struct stack_sample *r;
	void *buf;
	size_t size, n;

	m.values[0] = (struct pprof_value){ "page-faults", "count", 1, 0 };
	m.values[1] = (struct pprof_value){ "sched:sched_switch", "count", 1, 1 };
	CHECK_INT(pprof_encode(s, 2, &m, &buf, &size), 0);
	r = read_back(in, buf, size, &n);
	CHECK_INT(n, 2);
	CHECK_INT(in->nr_events, 2);
	CHECK_STR(in->event_names[1], "sched:sched_switch");
	for (size_t i = 0; i < n; i++)
		CHECK_INT(r[i].value, r[i].event ? 5 : 3);
	free(buf);
	profile_in__free(in);
}

/* A sample's cgroup is its "cgroup" label, where it has one, and is read back; samples of two
 * cgroups stay apart in the aggregation the reader makes. */
static void test_pprof_cgroup_labels(void)
{
	struct frame f[] = { { .name = "spin", .module = "/usr/bin/app", .offset = 0x10 } };
	struct stack_sample s[3] = {
		{ .comm = "app", .pid = 1, .tid = 1, .value = 3, .frames = f, .nr_frames = 1,
		  .cgroup = "/system.slice/app.service" },
		{ .comm = "app", .pid = 1, .tid = 1, .value = 5, .frames = f, .nr_frames = 1,
		  .cgroup = "4242" },
		{ .comm = "app", .pid = 1, .tid = 1, .value = 7, .frames = f, .nr_frames = 1 },
	};
	struct pprof_meta m = { .nr_values = 1, .labels = 7 };
	struct profile_in *in = profile_in__new();
	const struct stack_sample *r;
	void *buf;
	size_t size, n;
	Profile *p;

	m.values[0] = (struct pprof_value){ "samples", "count", 1, PPROF_ANY_EVENT };
	CHECK_INT(pprof_encode(s, 3, &m, &buf, &size), 0);
	p = unpack_gz(buf, size);
	CHECK(p && p->n_sample == 3);
	if (p && p->n_sample == 3) {
		CHECK_STR(label_str(p, p->sample[0], "cgroup"), "/system.slice/app.service");
		CHECK_STR(label_str(p, p->sample[1], "cgroup"), "4242");
		CHECK(!label_str(p, p->sample[2], "cgroup"));
	}
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	r = read_back(in, buf, size, &n);
	CHECK_INT(n, 3);
	for (size_t i = 0; i < n; i++) {
		if (r[i].value == 3)
			CHECK_STR(r[i].cgroup, "/system.slice/app.service");
		else if (r[i].value == 5)
			CHECK_STR(r[i].cgroup, "4242");
		else
			CHECK(!r[i].cgroup);
	}
	free(buf);
	profile_in__free(in);
}

/* The run's report header rides in the comments, as the report prints it, and is read back:
 * what bpfprof report needs to print the live run's header again. */
static void test_pprof_header_comments(void)
{
	struct frame f[] = { { .name = "spin", .module = "/usr/bin/app", .offset = 0x10 } };
	struct stack_sample s[1] = {
		{ .comm = "app", .pid = 1, .tid = 1, .value = 3, .frames = f, .nr_frames = 1 },
	};
	struct report_header h = {
		.event = "cpu-clock", .frequency = 99, .lost = 12,
		.lost_detail = "stack capture failed 2, stack table full 10", .unwind = "auto",
		.excluded = "the idle task", .extra = "first note\n# second note",
		.symbols = "JIT maps not read", .source = "never written",
	};
	struct pprof_meta m;
	struct profile_in *in = profile_in__new();
	void *buf;
	size_t size, n;
	Profile *p;

	pprof_meta_counted(&m, "cpu", "nanoseconds", 10101010);
	m.comment = "cpu-clock at 99 Hz, 1.0 s";
	m.header = &h;
	m.machine = "captured on    : Fri Nov 27 20:43:51 2026\n# hostname : box";
	CHECK_INT(pprof_encode(s, 1, &m, &buf, &size), 0);
	p = unpack_gz(buf, size);
	CHECK(p && p->n_comment == 11);
	if (p && p->n_comment == 11) {
		CHECK_STR(str(p, p->comment[0]), "cpu-clock at 99 Hz, 1.0 s");
		CHECK_STR(str(p, p->comment[1]), "# Event: cpu-clock");
		CHECK_STR(str(p, p->comment[2]), "# Event frequency: 99 Hz");
		CHECK_STR(str(p, p->comment[3]),
			  "# Lost samples: 12 (stack capture failed 2, stack table full 10)");
		CHECK_STR(str(p, p->comment[4]), "# Call graph: auto");
		CHECK_STR(str(p, p->comment[5]), "# Excluded: the idle task");
		CHECK_STR(str(p, p->comment[6]), "# first note");
		CHECK_STR(str(p, p->comment[7]), "# second note");
		CHECK_STR(str(p, p->comment[8]), "# JIT maps not read");
		/* the machine's lines last, "## " (report --header alone prints them) */
		CHECK_STR(str(p, p->comment[9]), "## captured on    : Fri Nov 27 20:43:51 2026");
		CHECK_STR(str(p, p->comment[10]), "## hostname : box");
	}
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	read_back(in, buf, size, &n);
	CHECK_INT(n, 1);
	CHECK_STR(in->header.event, "cpu-clock");
	CHECK_INT(in->header.frequency, 99);
	CHECK_INT(in->lost, 12);
	CHECK_STR(in->header.lost_detail, "stack capture failed 2, stack table full 10");
	CHECK_STR(in->header.unwind, "auto");
	CHECK_STR(in->header.excluded, "the idle task");
	/* the notes, printed as the live run printed them: a "# " line each */
	CHECK_STR(in->header.extra, "first note\n# second note\n# JIT maps not read");
	CHECK_STR(in->machine, "captured on    : Fri Nov 27 20:43:51 2026\n# hostname : box");
	CHECK(!in->header.source);
	/* a second file adds its losses, not its header */
	h.lost = 3;
	h.event = "other";
	free(buf);
	CHECK_INT(pprof_encode(s, 1, &m, &buf, &size), 0);
	CHECK_INT(profile_in__read_mem(in, buf, size, "second"), 0);
	CHECK_INT(in->lost, 15);
	CHECK_STR(in->header.event, "cpu-clock");
	free(buf);
	profile_in__free(in);
}

/* Folded stacks: comm first, "_[k]" kernel frames, "[file]" unresolved ones, the waker after
 * "--" innermost first; a bad line named by its number. */
static void test_folded_read(void)
{
	const char text[] = "app;main;[libc.so.6];do_syscall_64_[k] 5\r\n"
			    "\n"
			    "app;main;--;wake_fn;waker_main;wk 2\n";
	struct profile_in *in = profile_in__new();
	const struct stack_sample *r;
	size_t n;

	r = read_back(in, text, sizeof(text) - 1, &n);
	CHECK_INT(n, 2);
	if (n == 2) {
		const struct stack_sample *a = r[0].value == 5 ? &r[0] : &r[1];
		const struct stack_sample *b = a == &r[0] ? &r[1] : &r[0];

		CHECK_STR(a->comm, "app");
		CHECK_INT(a->nr_frames, 3);
		CHECK(!stack_sample_frame(a, 1)->name);
		CHECK_STR(stack_sample_frame(a, 1)->module, "libc.so.6");
		CHECK(stack_sample_frame(a, 2)->kernel);
		CHECK_STR(stack_sample_frame(a, 2)->name, "do_syscall_64");
		CHECK_INT(b->nr_frames, 1);
		CHECK_INT(b->nr_waker_frames, 2);
		CHECK_STR(b->waker_comm, "wk");
		CHECK_STR(stack_sample_waker_frame(b, 0)->name, "waker_main");
		CHECK_STR(stack_sample_waker_frame(b, 1)->name, "wake_fn");
	}
	profile_in__free(in);
	in = profile_in__new();
	CHECK_INT(profile_in__read_mem(in, "a;b 1\na;b x\n", 12, "bad"), -EINVAL);
	CHECK_INT(profile_in__read_mem(in, "a;b -1\n", 7, "neg"), -EINVAL);
	profile_in__free(in);
}

/* Broken input: one error, no crash, for truncated gzip, garbage, and a profile whose indexes
 * point outside its tables. */
static void test_pprof_bad_input(void)
{
	struct frame f[] = { { .name = "main", .module = "/usr/bin/app", .offset = 0x10 } };
	struct stack_sample s = { .comm = "a", .value = 1, .frames = f, .nr_frames = 1 };
	struct pprof_meta m;
	struct profile_in *in = profile_in__new();
	Profile *p;
	void *buf;
	size_t size;
	unsigned char *raw;

	pprof_meta_counted(&m, "cpu", "nanoseconds", 100);
	CHECK_INT(pprof_encode(&s, 1, &m, &buf, &size), 0);
	CHECK_INT(profile_in__read_mem(in, buf, size / 2, "half"), -EINVAL);
	CHECK_INT(profile_in__read_mem(in, "\x1f\x8bxxxxxxxx", 10, "badgz"), -EINVAL);
	CHECK_INT(profile_in__read_mem(in, "\xff\xff\xff\xff", 4, "garbage"), -EINVAL);
	CHECK_INT(profile_in__read_mem(in, "", 0, "empty"), -EINVAL);
	/* a function name index past the string table */
	p = unpack_gz(buf, size);
	CHECK(p);
	if (p) {
		p->function[0]->name = 1000;
		raw = malloc(perftools__profiles__profile__get_packed_size(p));
		size_t len = perftools__profiles__profile__pack(p, raw);

		CHECK_INT(profile_in__read_mem(in, raw, len, "index"), -EINVAL);
		/* a sample naming a location that is not there */
		p->function[0]->name = 0;
		p->sample[0]->location_id[0] = 999;
		len = perftools__profiles__profile__pack(p, raw);
		CHECK_INT(profile_in__read_mem(in, raw, len, "location"), -EINVAL);
		free(raw);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(buf);
	profile_in__free(in);
}

/* A stack deeper than the reader keeps, with "--" in it three times: one waker, the frames
 * past the limit dropped, nothing written outside the frames' buffer (ASan in make asan). */
static void test_pprof_deep_separators(void)
{
	struct frame f[] = { { .name = "deep", .module = "/usr/bin/app", .offset = 0x10 } };
	struct frame w[] = { { .name = "wk", .module = "/usr/bin/app", .offset = 0x20 } };
	struct stack_sample s = { .comm = "a", .value = 1, .frames = f, .nr_frames = 1,
				  .waker_comm = "b", .waker_frames = w, .nr_waker_frames = 1 };
	struct pprof_meta m;
	struct profile_in *in = profile_in__new();
	const struct stack_sample *r;
	uint64_t deep = 0, sep = 0, *ids, *orig;
	size_t orig_n;
	size_t size, n, nr = 3 * 4000 + 2, len;
	unsigned char *raw;
	void *buf;
	Profile *p;

	pprof_meta_counted(&m, "cpu", "nanoseconds", 100);
	CHECK_INT(pprof_encode(&s, 1, &m, &buf, &size), 0);
	p = unpack_gz(buf, size);
	CHECK(p);
	if (!p)
		return;
	/* the sample is [wk, --, deep]: ids of "--" and "deep" */
	sep = p->sample[0]->location_id[1];
	deep = p->sample[0]->location_id[2];
	ids = calloc(nr, sizeof(*ids));
	for (size_t i = 0; i < nr; i++)
		ids[i] = i == 4000 || i == 8001 ? sep : deep;
	orig = p->sample[0]->location_id;
	orig_n = p->sample[0]->n_location_id;
	p->sample[0]->location_id = ids;
	p->sample[0]->n_location_id = nr;
	raw = malloc(perftools__profiles__profile__get_packed_size(p));
	len = perftools__profiles__profile__pack(p, raw);
	r = read_back(in, raw, len, &n);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK(r[0].nr_frames + r[0].nr_waker_frames <= 2 * PROFILE_IN_MAX_FRAMES + 1);
		CHECK(r[0].nr_waker_frames > 0);
	}
	CHECK(in->dropped >= 1);
	p->sample[0]->location_id = orig;
	p->sample[0]->n_location_id = orig_n;
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(ids);
	free(raw);
	free(buf);
	profile_in__free(in);
}

/* diff's pieces: the differential flame graph's colours and the table's order. */
static void test_diff_writers(void)
{
	struct frame fa[] = { { .name = "main" }, { .name = "hot_a" } };
	struct frame fb[] = { { .name = "main" }, { .name = "hot_b" } };
	struct stack_sample before[2] = { { .comm = "x", .value = 200, .frames = fa, .nr_frames = 2 },
					  { .comm = "x", .value = 100, .frames = fb, .nr_frames = 2 } };
	struct stack_sample after[2] = { { .comm = "y", .value = 100, .frames = fa, .nr_frames = 2 },
					 { .comm = "y", .value = 200, .frames = fb, .nr_frames = 2 } };
	struct flamegraph_opts o = { .title = "d", .before = before, .nr_before = 2,
				     .no_comm = true };
	FILE *f = tmpfile();
	char *svg, *txt;

	CHECK_INT(flamegraph_write(f, after, 2, &o), 0);
	svg = test_slurp(f);
	fclose(f);
	CHECK(svg && strstr(svg, "<title>hot_a (100 samples, 33.33%; before 200 samples, 66.67%; -100)"
			    "</title><rect x=\"10.00\" y=\"41\" width=\"393.33\" height=\"15\" "
			    "fill=\"rgb(0,0,255)\""));
	CHECK(svg && strstr(svg, "<title>hot_b (200 samples, 66.67%; before 100 samples, 33.33%; +100)"));
	CHECK(svg && strstr(svg, "fill=\"rgb(255,0,0)\""));
	/* main: the same in both, white; no command frame */
	CHECK(svg && strstr(svg, "<title>main (300 samples, 100.00%; before 300 samples, 100.00%; +0)"
			    "</title><rect x=\"10.00\" y=\"57\" width=\"1180.00\" height=\"15\" "
			    "fill=\"rgb(255,255,255)\""));
	CHECK(svg && !strstr(svg, "<title>y "));
	free(svg);
	f = tmpfile();
	CHECK_INT(difftable_write(f, before, 2, after, 2, &(struct difftable_opts){ .rows = 5 }), 0);
	txt = test_slurp(f);
	fclose(f);
	CHECK(txt && strstr(txt, "   66.67%   33.33%   -33.33%   66.67%   33.33%   -33.33%  hot_a\n"));
	CHECK(txt && strstr(txt, "  +33.33%  hot_b\n"));
	CHECK(txt && !strstr(txt, "main\n"));
	free(txt);
}

int main(void)
{
	RUN(test_pprof_encodes_cpu_profile);
	RUN(test_pprof_events_and_wakers);
	RUN(test_pprof_round_trip);
	RUN(test_pprof_events_round_trip);
	RUN(test_pprof_cgroup_labels);
	RUN(test_pprof_header_comments);
	RUN(test_folded_read);
	RUN(test_pprof_bad_input);
	RUN(test_pprof_deep_separators);
	RUN(test_diff_writers);
	TESTS_DONE();
}
