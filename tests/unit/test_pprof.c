/* The pprof writer (user/out/pprof.c): what it encodes, read back with protobuf-c's own unpacker
 * after gunzip, so the test does not trust our decoder to check our encoder. */
#include <errno.h>
#include <stdint.h>
#include <zlib.h>
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

int main(void)
{
	RUN(test_pprof_encodes_cpu_profile);
	RUN(test_pprof_events_and_wakers);
	TESTS_DONE();
}
