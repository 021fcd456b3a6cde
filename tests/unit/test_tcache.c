/* The persistent unwind-table cache (user/unwind/tcache.c) without BPF or root: round trip, the
 * checks a hostile or corrupt file fails, the directory's rules, eviction of the least recently
 * used files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "test.h"
#include "unwind/cfi.h"
#include "unwind/tcache.h"

static char dir[256];

static void fresh_dir(void)
{
	char cmd[300];

	if (dir[0]) {
		*strrchr(dir, '/') = '\0'; /* the temporary directory above the cache's */
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			perror("rm");
	}
	snprintf(dir, sizeof(dir), "/tmp/bpfprof-tcache.XXXXXX");
	if (!mkdtemp(dir))
		perror("mkdtemp");
	strcat(dir, "/c"); /* made by unw_cache__open() */
}

/* n rows with increasing pcs and the end row last. */
static struct cfi_rows make_rows(size_t n)
{
	struct cfi_rows r = { .nr = n, .fdes = 3, .unsupported = 1, .source = ".eh_frame" };

	r.map_len = n * sizeof(struct unw_row);
	r.rows = mmap(NULL, r.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (size_t i = 0; i < n; i++) {
		r.rows[i].pc = 16 * i;
		r.rows[i].type = UNW_ROW_TYPE(i + 1 == n ? UNW_CFA_NONE : UNW_CFA_SP, UNW_FP_SAME);
		r.rows[i].cfa_off = 1 + i % 4;
	}
	return r;
}

static void path_of(const char *key, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s" UNW_CACHE_SUFFIX, dir, key);
}

static void flip(const char *key, long off)
{
	char p[512];
	unsigned char b;
	int fd;

	path_of(key, p, sizeof(p));
	fd = open(p, O_RDWR);
	if (off < 0)
		off += lseek(fd, 0, SEEK_END);
	if (pread(fd, &b, 1, off) != 1)
		perror("pread");
	b ^= 0x5a;
	if (pwrite(fd, &b, 1, off) != 1)
		perror("pwrite");
	close(fd);
}

static void test_round_trip(void)
{
	struct cfi_rows in = make_rows(1000), out;
	struct unw_cache_stats st;
	struct unw_cache *c;
	struct stat sb;

	fresh_dir();
	c = unw_cache__open(dir, 1 << 20, NULL, 0);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(!stat(dir, &sb) && (sb.st_mode & 0777) == 0700);
	CHECK_INT(unw_cache__get(c, "f-1-2", &out), -ENOENT);
	CHECK_INT(unw_cache__put(c, "f-1-2", &in), 0);
	CHECK_INT(unw_cache__get(c, "f-1-2", &out), 0);
	CHECK_INT(out.nr, 1000);
	CHECK(out.cached);
	CHECK_STR(out.source, ".eh_frame");
	CHECK_INT(out.fdes, 3);
	CHECK(out.rows && !memcmp(out.rows, in.rows, in.map_len));
	cfi_rows_free(&out);
	/* names that would leave the directory, or clash with temporary files */
	CHECK_INT(unw_cache__put(c, "../x", &in), -EINVAL);
	CHECK_INT(unw_cache__put(c, ".x", &in), -EINVAL);
	unw_cache__stats(c, &st);
	CHECK_INT(st.hits, 1);
	CHECK_INT(st.stores, 1);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

static void test_corrupt_rejected(void)
{
	/* a row byte, the checksum, the version, the row count, the key */
	static const long offs[] = { -3, 144, 8, 113, 20 };
	struct cfi_rows in = make_rows(300), out;
	struct unw_cache_stats st;
	struct unw_cache *c;
	char p[512];

	fresh_dir();
	c = unw_cache__open(dir, 1 << 20, NULL, 0);
	if (!c) {
		CHECK(c != NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		CHECK_INT(unw_cache__put(c, "f-9", &in), 0);
		flip("f-9", offs[i]);
		CHECK_INT(unw_cache__get(c, "f-9", &out), -EBADMSG);
		path_of("f-9", p, sizeof(p));
		CHECK(access(p, F_OK) != 0); /* removed: the next build replaces it */
	}
	/* truncated */
	CHECK_INT(unw_cache__put(c, "f-9", &in), 0);
	path_of("f-9", p, sizeof(p));
	CHECK(!truncate(p, 200));
	CHECK_INT(unw_cache__get(c, "f-9", &out), -EBADMSG);
	/* another name's file renamed over this one: the key inside does not match */
	CHECK_INT(unw_cache__put(c, "f-8", &in), 0);
	{
		char q[512];

		path_of("f-8", q, sizeof(q));
		CHECK(!rename(q, p));
	}
	CHECK_INT(unw_cache__get(c, "f-9", &out), -EBADMSG);
	/* writable by others */
	CHECK_INT(unw_cache__put(c, "f-9", &in), 0);
	CHECK(!chmod(p, 0666));
	CHECK_INT(unw_cache__get(c, "f-9", &out), -EBADMSG);
	/* a symbolic link */
	CHECK(!symlink("/etc/passwd", p));
	CHECK_INT(unw_cache__get(c, "f-9", &out), -EBADMSG);
	unw_cache__stats(c, &st);
	CHECK_INT(st.rejected, 9);
	CHECK_INT(st.hits, 0);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

static void test_unsorted_rows_rejected(void)
{
	struct cfi_rows in = make_rows(10), out;
	struct unw_cache *c;

	fresh_dir();
	c = unw_cache__open(dir, 1 << 20, NULL, 0);
	if (!c) {
		CHECK(c != NULL);
		return;
	}
	/* a valid checksum over rows the BPF binary search would go wrong on */
	in.rows[5].pc = 0;
	CHECK_INT(unw_cache__put(c, "f-u", &in), 0);
	CHECK_INT(unw_cache__get(c, "f-u", &out), -EBADMSG);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

static void test_unsafe_dir_refused(void)
{
	char why[512] = "";
	struct unw_cache *c;

	fresh_dir();
	CHECK(!mkdir(dir, 0700));
	CHECK(!chmod(dir, 0777));
	c = unw_cache__open(dir, 1 << 20, why, sizeof(why));
	CHECK(c == NULL && errno == EPERM);
	CHECK(strstr(why, "writable by group or others") != NULL);
	CHECK(!chmod(dir, 0700));
	c = unw_cache__open(dir, 1 << 20, why, sizeof(why));
	CHECK(c != NULL);
	unw_cache__free(c);
}

static void test_eviction_oldest_first(void)
{
	struct cfi_rows in = make_rows(20000), out; /* ~160 KB a file */
	struct unw_cache_stats st;
	struct unw_cache *c;
	char key[32];

	fresh_dir();
	c = unw_cache__open(dir, 500 << 10, NULL, 0);
	if (!c) {
		CHECK(c != NULL);
		return;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "f-%d", i);
		CHECK_INT(unw_cache__put(c, key, &in), 0);
		usleep(20000); /* distinct mtimes */
	}
	/* a hit makes f-0 the most recently used: f-1 goes first */
	CHECK_INT(unw_cache__get(c, "f-0", &out), 0);
	cfi_rows_free(&out);
	usleep(20000);
	CHECK_INT(unw_cache__put(c, "f-3", &in), 0);
	unw_cache__stats(c, &st);
	CHECK(st.evicted >= 1);
	CHECK_INT(unw_cache__get(c, "f-1", &out), -ENOENT);
	CHECK_INT(unw_cache__get(c, "f-0", &out), 0);
	cfi_rows_free(&out);
	CHECK_INT(unw_cache__get(c, "f-3", &out), 0);
	cfi_rows_free(&out);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

static void test_key(void)
{
	char key[UNW_CACHE_KEY_MAX], key2[UNW_CACHE_KEY_MAX];
	int fd = open("/proc/self/exe", O_RDONLY);

	CHECK(fd >= 0);
	CHECK_INT(unw_cache_key(fd, key, sizeof(key)), 0);
	CHECK_INT(unw_cache_key(fd, key2, sizeof(key2)), 0);
	CHECK_STR(key, key2);
	CHECK(key[0] == 'b' || key[0] == 'f');
	CHECK(strchr(key, '/') == NULL);
	close(fd);
	fd = open("/proc", O_RDONLY | O_DIRECTORY);
	CHECK_INT(unw_cache_key(fd, key, sizeof(key)), -EINVAL);
	close(fd);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_corrupt_rejected);
	RUN(test_unsorted_rows_rejected);
	RUN(test_unsafe_dir_refused);
	RUN(test_eviction_oldest_first);
	RUN(test_key);
	if (dir[0]) {
		char cmd[300];

		*strrchr(dir, '/') = '\0';
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			perror("rm");
	}
	TESTS_DONE();
}
