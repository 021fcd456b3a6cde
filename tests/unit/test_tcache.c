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
#include <gelf.h>
#include <libelf.h>
#include "test.h"
#include "test_elf.h"
#include "unwind/cfi.h"
#include "unwind/tcache.h"

/* A key of a name alone, for get and put. */
static struct unw_cache_key *K(const char *name)
{
	static struct unw_cache_key k[4];
	static int next;
	struct unw_cache_key *p = &k[next++ % 4];

	unw_cache_key_name(p, name);
	return p;
}

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
	CHECK_INT(unw_cache__get(c, K("f-1-2"), &out), -ENOENT);
	CHECK_INT(unw_cache__put(c, K("f-1-2"), &in), 0);
	CHECK_INT(unw_cache__get(c, K("f-1-2"), &out), 0);
	CHECK_INT(out.nr, 1000);
	CHECK(out.cached);
	CHECK_STR(out.source, ".eh_frame");
	CHECK_INT(out.fdes, 3);
	CHECK(out.rows && !memcmp(out.rows, in.rows, in.map_len));
	cfi_rows_free(&out);
	/* names that would leave the directory, or clash with temporary files */
	CHECK_INT(unw_cache__put(c, K("../x"), &in), -EINVAL);
	CHECK_INT(unw_cache__put(c, K(".x"), &in), -EINVAL);
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
		CHECK_INT(unw_cache__put(c, K("f-9"), &in), 0);
		flip("f-9", offs[i]);
		CHECK_INT(unw_cache__get(c, K("f-9"), &out), -EBADMSG);
		path_of("f-9", p, sizeof(p));
		CHECK(access(p, F_OK) != 0); /* removed: the next build replaces it */
	}
	/* truncated */
	CHECK_INT(unw_cache__put(c, K("f-9"), &in), 0);
	path_of("f-9", p, sizeof(p));
	CHECK(!truncate(p, 200));
	CHECK_INT(unw_cache__get(c, K("f-9"), &out), -EBADMSG);
	/* another name's file renamed over this one: the key inside does not match */
	CHECK_INT(unw_cache__put(c, K("f-8"), &in), 0);
	{
		char q[512];

		path_of("f-8", q, sizeof(q));
		CHECK(!rename(q, p));
	}
	CHECK_INT(unw_cache__get(c, K("f-9"), &out), -EBADMSG);
	/* writable by others */
	CHECK_INT(unw_cache__put(c, K("f-9"), &in), 0);
	CHECK(!chmod(p, 0666));
	CHECK_INT(unw_cache__get(c, K("f-9"), &out), -EBADMSG);
	/* a symbolic link */
	CHECK(!symlink("/etc/passwd", p));
	CHECK_INT(unw_cache__get(c, K("f-9"), &out), -EBADMSG);
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
	CHECK_INT(unw_cache__put(c, K("f-u"), &in), 0);
	CHECK_INT(unw_cache__get(c, K("f-u"), &out), -EBADMSG);
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
		CHECK_INT(unw_cache__put(c, K(key), &in), 0);
		usleep(20000); /* distinct mtimes */
	}
	/* a hit makes f-0 the most recently used: f-1 goes first */
	CHECK_INT(unw_cache__get(c, K("f-0"), &out), 0);
	cfi_rows_free(&out);
	usleep(20000);
	CHECK_INT(unw_cache__put(c, K("f-3"), &in), 0);
	unw_cache__stats(c, &st);
	CHECK(st.evicted >= 1);
	CHECK_INT(unw_cache__get(c, K("f-1"), &out), -ENOENT);
	CHECK_INT(unw_cache__get(c, K("f-0"), &out), 0);
	cfi_rows_free(&out);
	CHECK_INT(unw_cache__get(c, K("f-3"), &out), 0);
	cfi_rows_free(&out);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

static void test_key(void)
{
	struct unw_cache_key key, key2;
	int fd = open("/proc/self/exe", O_RDONLY);

	CHECK(fd >= 0);
	CHECK_INT(unw_cache_key(fd, &key), 0);
	CHECK_INT(unw_cache_key(fd, &key2), 0);
	CHECK_STR(key.name, key2.name);
	CHECK(key.name[0] == 'b' || key.name[0] == 'f');
	CHECK(strchr(key.name, '/') == NULL);
	close(fd);
	fd = open("/proc", O_RDONLY | O_DIRECTORY);
	CHECK_INT(unw_cache_key(fd, &key), -EINVAL);
	close(fd);
}

/* A build-id key's table is taken by the file's identity without hashing it; a file of another
 * identity by the hash of its call-frame sections (and the header then learns the identity); a
 * file whose sections changed in place (same build-id and size) is a miss. */
static void test_build_id_identity(void)
{
	struct cfi_rows in = make_rows(100), out;
	struct unw_cache_key key;
	struct unw_cache_stats st;
	struct unw_cache *c;
	char copy[300], cmd[700];
	unsigned char b;
	off_t off;
	int fd;

	fresh_dir();
	c = unw_cache__open(dir, 1 << 20, NULL, 0);
	snprintf(copy, sizeof(copy), "%.256s.exe", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s && chmod 755 %s", getpid(), copy, copy);
	CHECK(c != NULL && !system(cmd));
	fd = open(copy, O_RDWR);
	if (!c || fd < 0 || unw_cache_key(fd, &key) || key.name[0] != 'b') {
		printf("# skip: build-id keys need a file of root's with a build-id (%s)\n", key.name);
		goto out;
	}
	off = test_eh_frame_middle(fd);
	CHECK(off > 0);
	CHECK_INT(unw_cache__put(c, &key, &in), 0);
	/* the same file: taken without reading its sections */
	CHECK_INT(unw_cache_key(fd, &key), 0);
	CHECK_INT(unw_cache__get(c, &key, &out), 0);
	CHECK(key.src.cfi_hash == 0);
	cfi_rows_free(&out);
	/* a new identity (a touch moves mtime and ctime), the same bytes: hashed, taken, relearned */
	usleep(10000);
	CHECK(!futimens(fd, NULL));
	CHECK_INT(unw_cache_key(fd, &key), 0);
	CHECK_INT(unw_cache__get(c, &key, &out), 0);
	CHECK(key.src.cfi_hash != 0);
	cfi_rows_free(&out);
	CHECK_INT(unw_cache_key(fd, &key), 0);
	CHECK_INT(unw_cache__get(c, &key, &out), 0);
	CHECK(key.src.cfi_hash == 0);
	cfi_rows_free(&out);
	/* a call-frame byte changed in place: the build-id and size stay, the table is not taken */
	CHECK(pread(fd, &b, 1, off) == 1);
	b ^= 0x5a;
	CHECK(pwrite(fd, &b, 1, off) == 1);
	CHECK_INT(unw_cache_key(fd, &key), 0);
	CHECK_INT(unw_cache__get(c, &key, &out), -ENOENT);
	unw_cache__stats(c, &st);
	CHECK_INT(st.hits, 3);
	CHECK_INT(st.stores, 1); /* relearning an identity is no store */
	CHECK_INT(st.rejected, 0);
out:
	if (fd >= 0)
		close(fd);
	unlink(copy);
	unw_cache__free(c);
	cfi_rows_free(&in);
}

/* Other files of the cache directory (the kept kernel symbols: core/diskcache.h's
 * disk_cache__read_file()): round trip; over the bound, a flipped byte, a file of another name
 * renamed over it, one writable by others: rejected and removed. */
static void test_files(void)
{
	static const char text[] = "the core kernel's symbols, say";
	struct disk_cache_stats st;
	struct disk_cache *c;
	char p[512], q[512];
	size_t len = 0;
	void *buf;

	fresh_dir();
	c = disk_cache__open(dir, 1 << 20, NULL, 0);
	if (!c) {
		CHECK(c != NULL);
		return;
	}
	snprintf(p, sizeof(p), "%s/k-1.ksym", dir);
	snprintf(q, sizeof(q), "%s/k-2.ksym", dir);
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 1 << 20, &buf, &len), -ENOENT);
	CHECK_INT(disk_cache__write_file(c, "k-1.ksym", text, sizeof(text)), 0);
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 1 << 20, &buf, &len), 0);
	CHECK(len == sizeof(text) && buf && !memcmp(buf, text, len));
	free(buf);
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 4, &buf, &len), -EBADMSG); /* over max */
	CHECK_INT(disk_cache__write_file(c, "k-1.ksym", text, sizeof(text)), 0);
	{
		int fd = open(p, O_RDWR);
		unsigned char b = 0;

		CHECK(pread(fd, &b, 1, 130) == 1);
		b ^= 1;
		CHECK(pwrite(fd, &b, 1, 130) == 1);
		close(fd);
	}
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 1 << 20, &buf, &len), -EBADMSG);
	CHECK(access(p, F_OK) != 0);
	CHECK_INT(disk_cache__write_file(c, "k-2.ksym", text, sizeof(text)), 0);
	CHECK(!rename(q, p));
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 1 << 20, &buf, &len), -EBADMSG);
	CHECK_INT(disk_cache__write_file(c, "k-1.ksym", text, sizeof(text)), 0);
	CHECK(!chmod(p, 0622));
	CHECK_INT(disk_cache__read_file(c, "k-1.ksym", 1 << 20, &buf, &len), -EBADMSG);
	CHECK_INT(disk_cache__write_file(c, "../k", text, sizeof(text)), -EINVAL);
	/* as long a name as the kept symbols' (k-BOOTID-BUILDID.v1.ksym: 87 characters) */
	snprintf(q, sizeof(q), "k-%036d-%040d.v1.ksym", 0, 0);
	CHECK_INT(disk_cache__write_file(c, q, text, sizeof(text)), 0);
	CHECK_INT(disk_cache__read_file(c, q, 1 << 20, &buf, &len), 0);
	free(buf);
	disk_cache__stats(c, &st);
	CHECK_INT(st.rejected, 4);
	disk_cache__put(c);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_corrupt_rejected);
	RUN(test_unsorted_rows_rejected);
	RUN(test_unsafe_dir_refused);
	RUN(test_eviction_oldest_first);
	RUN(test_key);
	RUN(test_build_id_identity);
	RUN(test_files);
	if (dir[0]) {
		char cmd[300];

		*strrchr(dir, '/') = '\0';
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			perror("rm");
	}
	TESTS_DONE();
}
