/* The event field model (user/probe/fields.c) on tracefs format files as this kernel writes
 * them (fixtures: no root, no tracefs), perf probe's casts, the pseudo fields, and records
 * printed as perf script prints them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probe/fields.h"
#include "test.h"

static const char wq_format[] =
	"name: workqueue_queue_work\n"
	"ID: 337\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:void * work;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:__data_loc char[] workqueue;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:int req_cpu;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"work struct=%p function=%ps workqueue=%s req_cpu=%d cpu=%d\", REC->work, "
	"REC->function, __get_str(workqueue), REC->req_cpu, REC->cpu\n";

static const char switch_format[] =
	"name: sched_switch\nID: 370\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s "
	"next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, "
	"(REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", { 0x01, \"S\" }, "
	"{ 0x02, \"D\" }) : \"R\", REC->prev_state & 0x100 ? \"+\" : \"\", REC->next_comm, "
	"REC->next_pid, REC->next_prio\n";

static const char openat_format[] =
	"name: sys_enter_openat\nID: 782\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"dfd: 0x%08lx, filename: 0x%08lx, flags: 0x%08lx, mode: 0x%08lx\", "
	"((unsigned long)(REC->dfd)), ((unsigned long)(REC->filename)), "
	"((unsigned long)(REC->flags)), ((unsigned long)(REC->mode))\n";

static const char openat_exit_format[] =
	"name: sys_exit_openat\nID: 781\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n\n"
	"print fmt: \"0x%lx\", REC->ret\n";

static const struct field *get(const struct field_list *l, const char *name)
{
	for (int i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

static void test_tracepoint_format(void)
{
	struct field_list l = {};
	const struct field *f;
	char err[256], names[256];

	CHECK_INT(fields_parse_format(wq_format, false, &l, err, sizeof(err)), 0);
	CHECK_INT(l.nr, 9);
	f = get(&l, "common_pid");
	CHECK(f && f->common && f->is_signed && f->offset == 4 && f->size == 4);
	f = get(&l, "work");
	CHECK(f && f->kind == FIELD_PTR && f->offset == 8 && f->size == 8 && !f->common);
	f = get(&l, "function");
	CHECK(f && f->kind == FIELD_KSYM && f->offset == 16);
	f = get(&l, "workqueue");
	CHECK(f && f->kind == FIELD_DATALOC && f->offset == 24 && f->size == 4);
	f = get(&l, "req_cpu");
	CHECK(f && f->kind == FIELD_INT && f->is_signed && f->offset == 28 && f->src == FSRC_RECORD);
	CHECK_STR(fields_names(&l, names, sizeof(names)), "work, function, workqueue, req_cpu, cpu");
	field_list_free(&l);

	CHECK_INT(fields_parse_format(switch_format, false, &l, err, sizeof(err)), 0);
	f = get(&l, "prev_comm");
	CHECK(f && f->kind == FIELD_CHARS && f->size == 16 && f->offset == 8);
	CHECK_STR(f ? f->type : NULL, "char");
	f = get(&l, "prev_state");
	CHECK(f && f->kind == FIELD_INT && f->size == 8 && f->is_signed);
	f = get(&l, "next_pid");
	CHECK(f && f->offset == 56 && f->size == 4);
	CHECK_STR(f ? f->type : NULL, "pid_t");
	field_list_free(&l);

	CHECK_INT(fields_parse_format("name: x\nformat:\n\tfield:int;\toffset:0;\tsize:4;\n", false,
				      &l, err, sizeof(err)), -EINVAL);
	field_list_free(&l);
	CHECK_INT(fields_parse_format("name: x\nformat:\n", false, &l, err, sizeof(err)), -EINVAL);
	field_list_free(&l);
}

static void test_syscall_format(void)
{
	struct field_list l = {};
	const struct field *f;
	char err[256];

	CHECK_INT(fields_parse_format(openat_format, true, &l, err, sizeof(err)), 0);
	f = get(&l, "__syscall_nr");
	CHECK(f && f->common);
	f = get(&l, "dfd");
	CHECK(f && f->src == FSRC_ARG && f->arg == 0 && f->is_signed && f->size == 4 && f->in_record &&
	      f->offset == 16);
	f = get(&l, "filename");
	CHECK(f && f->src == FSRC_ARG && f->arg == 1 && f->kind == FIELD_USTR);
	f = get(&l, "flags");
	CHECK(f && f->arg == 2 && f->kind == FIELD_INT);
	f = get(&l, "mode");
	CHECK(f && f->arg == 3 && f->size == 2 && !f->is_signed);
	field_list_free(&l);

	CHECK_INT(fields_parse_format(openat_exit_format, true, &l, err, sizeof(err)), 0);
	f = get(&l, "ret");
	CHECK(f && f->src == FSRC_RET && f->is_signed && f->size == 8);
	field_list_free(&l);
}

static void test_func_args_and_casts(void)
{
	struct field_list l = {};
	struct field f;
	struct field_desc d;
	char err[256], names[256];

	CHECK_INT(fields_add_func_args(&l), 0);
	CHECK_INT(fields_add_pseudo(&l), 0);
	CHECK_STR(fields_names(&l, names, sizeof(names)),
		  "arg0, arg1, arg2, arg3, arg4, arg5, comm, pid, tid, cpu, cgroup");
	CHECK_INT(fields_lookup(&l, "retval", true, &f, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "no field 'retval'");
	CHECK_INT(fields_lookup(&l, "arg0", true, &f, err, sizeof(err)), 0);
	CHECK(f.src == FSRC_ARG && f.arg == 0 && f.kind == FIELD_INT && f.is_signed);
	CHECK_INT(fields_lookup(&l, "arg1:string", true, &f, err, sizeof(err)), 0);
	CHECK(f.kind == FIELD_USTR && field_is_string(&f) && field_key_size(&f) == FIELD_STR_LEN);
	d = field_desc_of(&f, true, 8);
	CHECK(d.read == FREAD_USTR && d.src == FSRC_ARG && d.offset == 1 && d.key_off == 8);
	CHECK_INT(fields_lookup(&l, "arg1:string", false, &f, err, sizeof(err)), 0);
	CHECK(f.kind == FIELD_KSTR);
	CHECK_INT(fields_lookup(&l, "arg2:u8", true, &f, err, sizeof(err)), 0);
	CHECK(f.size == 1 && !f.is_signed && f.kind == FIELD_INT);
	CHECK_INT(fields_lookup(&l, "arg2:s16", true, &f, err, sizeof(err)), 0);
	CHECK(f.size == 2 && f.is_signed);
	CHECK_INT(fields_lookup(&l, "arg2:x64", true, &f, err, sizeof(err)), 0);
	CHECK(f.size == 8 && f.kind == FIELD_HEX);
	CHECK_INT(fields_lookup(&l, "arg2:u7", true, &f, err, sizeof(err)), -EINVAL);
	CHECK_INT(fields_lookup(&l, "arg2:", true, &f, err, sizeof(err)), -EINVAL);
	CHECK_INT(fields_lookup(&l, "pid:string", true, &f, err, sizeof(err)), -EINVAL);
	CHECK_INT(fields_lookup(&l, "comm:u32", true, &f, err, sizeof(err)), -EINVAL);
	CHECK_INT(fields_lookup(&l, "comm", true, &f, err, sizeof(err)), 0);
	CHECK(f.src == FSRC_COMM && field_is_string(&f));
	field_list_free(&l);

	CHECK_INT(fields_add_func_ret(&l), 0);
	CHECK_INT(fields_lookup(&l, "retval", true, &f, err, sizeof(err)), 0);
	CHECK(f.src == FSRC_RET);
	field_list_free(&l);
}

/* A namer that knows one function and one cgroup. */
static const char *fake_name(const struct field *f, __u64 v, char *buf, size_t size, void *ctx)
{
	if (f->kind == FIELD_KSYM && v == 0xffffffff81234560ULL)
		snprintf(buf, size, "vmstat_update");
	else if (f->kind == FIELD_CGROUP && v == 4242)
		snprintf(buf, size, "/system.slice/app.service");
	else
		return NULL;
	return buf;
}

static void test_format_values(void)
{
	struct field_list l = {};
	unsigned char rec[64] = {};
	char err[256], out[512], buf[64];
	__u64 work = 0xffff888001234500ULL, fn = 0xffffffff81234560ULL;
	__u32 loc = (5u << 16) | 36; /* "events" would be longer: 4 chars + NUL at 36 */
	int req = -1, cpu = 1;
	struct field f = { .kind = FIELD_INT, .size = 4, .is_signed = true };

	CHECK_INT(fields_parse_format(wq_format, false, &l, err, sizeof(err)), 0);
	memcpy(rec + 8, &work, 8);
	memcpy(rec + 16, &fn, 8);
	memcpy(rec + 24, &loc, 4);
	memcpy(rec + 28, &req, 4);
	memcpy(rec + 32, &cpu, 4);
	memcpy(rec + 36, "mm_p", 5);
	CHECK(fields_format_record(&l, rec, 41, fake_name, NULL, out, sizeof(out)) > 0);
	CHECK_STR(out, "work=0xffff888001234500 function=vmstat_update workqueue=mm_p req_cpu=-1 "
		       "cpu=1");
	CHECK_INT(fields_format_record(&l, rec, 30, fake_name, NULL, out, sizeof(out)), -EINVAL);
	fn = 0xffffffff81000000ULL;
	memcpy(rec + 16, &fn, 8);
	fields_format_record(&l, rec, 41, fake_name, NULL, out, sizeof(out));
	CHECK(strstr(out, "function=0xffffffff81000000") != NULL);
	field_list_free(&l);

	CHECK_STR(field_format_value(&f, 0xffffffffULL, NULL, NULL, NULL, buf, sizeof(buf)), "-1");
	f.is_signed = false;
	CHECK_STR(field_format_value(&f, 0x1ffffffffULL, NULL, NULL, NULL, buf, sizeof(buf)),
		  "4294967295");
	f.kind = FIELD_HEX;
	CHECK_STR(field_format_value(&f, 255, NULL, NULL, NULL, buf, sizeof(buf)), "0xff");
	f.kind = FIELD_DATALOC;
	CHECK_STR(field_format_value(&f, 0, "/usr/bin/true", NULL, NULL, buf, sizeof(buf)),
		  "/usr/bin/true");
	/* the cgroup field: its path where it is known, else its id in decimal (not hex) */
	f = (struct field){ .kind = FIELD_CGROUP, .size = 8 };
	CHECK_STR(field_format_value(&f, 4242, NULL, fake_name, NULL, buf, sizeof(buf)),
		  "/system.slice/app.service");
	CHECK_STR(field_format_value(&f, 4243, NULL, fake_name, NULL, buf, sizeof(buf)), "4243");
}

/* Every format file of the running kernel parses (where tracefs is readable): a sample of
 * every kind of declaration there is. */
static void test_live_formats(void)
{
	DIR *cats = opendir("/sys/kernel/tracing/events");
	struct dirent *c, *e;
	int parsed = 0, failed = 0, ksyms = 0;

	if (!cats)
		SKIP("tracefs not readable here");
	while ((c = readdir(cats))) {
		char dir[512];
		DIR *evs;

		if (c->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/sys/kernel/tracing/events/%s", c->d_name);
		evs = opendir(dir);
		while (evs && (e = readdir(evs))) {
			struct field_list l = {};
			int err;

			if (e->d_name[0] == '.' || e->d_type != DT_DIR)
				continue;
			err = fields_of_tracepoint(c->d_name, e->d_name, &l);
			if (err && err != -ENOENT) {
				if (!failed++)
					printf("    %s:%s: %s\n", c->d_name, e->d_name, strerror(-err));
			} else if (!err) {
				parsed++;
				for (int i = 0; i < l.nr; i++)
					ksyms += l.v[i].kind == FIELD_KSYM;
			}
			field_list_free(&l);
		}
		if (evs)
			closedir(evs);
	}
	closedir(cats);
	CHECK_INT(failed, 0);
	CHECK(parsed > 100);
	CHECK(ksyms > 0); /* workqueue_queue_work's function, timer_expire_entry's... */
}

int main(void)
{
	RUN(test_tracepoint_format);
	RUN(test_syscall_format);
	RUN(test_func_args_and_casts);
	RUN(test_format_values);
	RUN(test_live_formats);
	return tests_failed_total ? 1 : 0;
}
