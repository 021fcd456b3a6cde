// SPDX-License-Identifier: GPL-2.0
/* Continuous mode's pure parts: --pprof-dir's names and rotation, --push's URL, name and label
 * checks, and the sender's queue, which never waits (no server: every upload fails). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/common.h"
#include "export/pprofdir.h"
#include "export/push.h"
#include "test.h"

static char tmpdir[] = "/tmp/test_period.XXXXXX";

static bool exists(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return !access(path, F_OK);
}

static void test_dir_names(void)
{
	char buf[128];

	/* 2026-11-23 14:24:23.9 UTC */
	CHECK_STR(pprof_dir_name("profile", 1795443863900000000LL, buf, sizeof(buf)),
		  "profile-20261123T142423Z.pb.gz");
	CHECK_STR(pprof_dir_name("offcpu", 0, buf, sizeof(buf)), "offcpu-19700101T000000Z.pb.gz");
}

/* The newest --keep files of the pattern stay; any other file is never touched. */
static void test_dir_rotation(void)
{
	const __s64 base = 1795443863LL * 1000000000LL;
	struct pprof_dir *d = NULL;
	__u64 written, removed;
	char path[512];

	snprintf(path, sizeof(path), "%s/other.pb.gz", tmpdir);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof(path), "%s/profile-20000101T000000Z.pb.gz", tmpdir);
	CHECK_INT(symlink("/etc/passwd", path), 0); /* named as one, not a regular file */
	CHECK_INT(pprof_dir_open(tmpdir, "profile", 2, &d), 0);
	for (int i = 0; d && i < 5; i++)
		CHECK_INT(pprof_dir_write(d, base + i * 1000000000LL, "abc", 3), 0);
	/* a period that starts in the same second as the last one is named a second on */
	CHECK_INT(pprof_dir_write(d, base + 4 * 1000000000LL + 900000000LL, "abc", 3), 0);
	pprof_dir_counts(d, &written, &removed);
	CHECK_INT(written, 6);
	CHECK_INT(removed, 4);
	CHECK(exists("profile-20261123T142428Z.pb.gz"));
	CHECK(!exists("profile-20261123T142423Z.pb.gz"));
	CHECK(!exists("profile-20261123T142425Z.pb.gz"));
	CHECK(!exists("profile-20261123T142426Z.pb.gz"));
	CHECK(exists("profile-20261123T142427Z.pb.gz"));
	CHECK(exists("other.pb.gz"));
	CHECK(exists("profile-20000101T000000Z.pb.gz"));
	CHECK(!exists(".bpfprof-probe"));
	pprof_dir_close(d);
}

static void test_dir_refused(void)
{
	struct pprof_dir *d = NULL;
	char path[512];

	printf("    (the next two lines are expected errors)\n");
	snprintf(path, sizeof(path), "%s/other.pb.gz", tmpdir);
	CHECK_INT(pprof_dir_open(path, "profile", 2, &d), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/no/such", tmpdir);
	CHECK_INT(pprof_dir_open(path, "profile", 2, &d), -ENOENT);
	CHECK(!d);
}

static void test_urls(void)
{
	char *u = NULL;

	CHECK_INT(push_url_check("http://localhost:4040", &u), 0);
	CHECK_STR(u, "http://localhost:4040/ingest");
	free(u);
	CHECK_INT(push_url_check("https://p.example/prefix/", &u), 0);
	CHECK_STR(u, "https://p.example/prefix/ingest");
	free(u);
	CHECK_INT(push_url_check("http://127.0.0.1:4040/ingest", &u), 0);
	CHECK_STR(u, "http://127.0.0.1:4040/ingest");
	free(u);
	printf("    (the next four lines are expected errors)\n");
	CHECK_INT(push_url_check("not a url", &u), -EINVAL);
	CHECK_INT(push_url_check("ftp://h/", &u), -EINVAL);
	CHECK_INT(push_url_check("http://", &u), -EINVAL);
	CHECK_INT(push_url_check("http://h/?name=x", &u), -EINVAL);
	CHECK(!u);
}

static void test_names_and_labels(void)
{
	char *const labels[] = { "env=prod", "node=n-1.a" };
	char *name;

	CHECK_INT(push_app_check("my.app-1_x"), 0);
	CHECK_INT(push_label_check("env=prod"), 0);
	CHECK_INT(push_label_check("_k9=v w"), 0);
	printf("    (the next six lines are expected errors)\n");
	CHECK_INT(push_app_check("a b"), -EINVAL);
	CHECK_INT(push_label_check("novalue"), -EINVAL);
	CHECK_INT(push_label_check("k="), -EINVAL);
	CHECK_INT(push_label_check("9k=v"), -EINVAL);
	CHECK_INT(push_label_check("__name__=x"), -EINVAL);
	CHECK_INT(push_label_check("k=a}b"), -EINVAL);
	name = push_app_name("svc", labels, 2);
	CHECK_STR(name, "svc{env=prod,node=n-1.a}");
	free(name);
	name = push_app_name("svc", NULL, 0);
	CHECK_STR(name, "svc");
	free(name);
}

/* Nothing listens on port 1: uploads fail at once, are retried with backoff, and the queue
 * fills; pushing never waits, and every period is accounted for. */
static void test_queue_never_waits(void)
{
	const int n = PUSH_QUEUE_MAX + 5;
	struct pusher *p = NULL;
	struct push_counts c = {};
	__u64 start;

	CHECK_INT(pusher_new("http://127.0.0.1:1/ingest", &p), 0);
	if (!p)
		return;
	start = now_ns();
	for (int i = 0; i < n; i++)
		pusher_push(p, strdup("profile"), 7, strdup("name=x&from=1&until=2"));
	/* 21 pushes while the sender backs off: far below one backoff (500 ms) */
	CHECK(now_ns() - start < 200000000ULL);
	/* the first try has failed (within its connect timeout) */
	for (int i = 0; i < 300 && !c.retries; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
		pusher_counts(p, &c);
	}
	pusher_free(p, 0, &c);
	CHECK_INT(c.sent, 0);
	CHECK(c.dropped_full >= 4);
	CHECK_INT(c.queued + c.dropped_full, n);
	CHECK_INT(c.dropped_failed + c.rejected + c.dropped_exit, c.queued);
	CHECK(strstr(c.last_error, "onnect") != NULL);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_dir_names);
	RUN(test_dir_rotation);
	RUN(test_dir_refused);
	RUN(test_urls);
	RUN(test_names_and_labels);
	RUN(test_queue_never_waits);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			printf("    cannot remove %s\n", tmpdir);
	}
	TESTS_DONE();
}
