// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "out/outfile.h"

#define TMP_SUFFIX ".tmp."
#define TMP_RAND_LEN 6
#define TMP_ATTEMPTS 100

int stream_flush_check(FILE *f)
{
	if (fflush(f) == EOF)
		return errno ? -errno : -EIO;
	/* the error flag also remembers writes that failed before this flush */
	if (ferror(f))
		return -EIO;
	return 0;
}

static void outfile_reset(struct outfile *of)
{
	free(of->path);
	free(of->tmp_path);
	memset(of, 0, sizeof(*of));
}

/* Fills the XXXXXX of tmpl with letters and digits that differ per process, call and time. */
static void fill_random(char *x, size_t n)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static unsigned int calls;
	struct timespec ts;
	uint64_t r;
	size_t i;

	clock_gettime(CLOCK_REALTIME, &ts);
	r = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)getpid() << 20 ^ ++calls * 40503u;
	for (i = 0; i < n; i++) {
		/* xorshift: cheap, and collisions only cost a retry thanks to O_EXCL */
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		x[i] = chars[r % (sizeof(chars) - 1)];
	}
}

/* Not mkstemp(): its mode 0600 would survive the rename, while users expect fopen's 0666 & ~umask. */
static int open_tmp(const char *path, char **tmp_path)
{
	size_t len = strlen(path) + strlen(TMP_SUFFIX) + TMP_RAND_LEN + 1;
	int fd = -1, i;
	char *tmp;

	tmp = malloc(len);
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < TMP_ATTEMPTS; i++) {
		snprintf(tmp, len, "%s%s", path, TMP_SUFFIX);
		fill_random(tmp + len - 1 - TMP_RAND_LEN, TMP_RAND_LEN);
		tmp[len - 1] = '\0';
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		fd = -errno;
		free(tmp);
		return fd;
	}
	*tmp_path = tmp;
	return fd;
}

FILE *outfile_open(const char *path, struct outfile *of)
{
	struct stat st;
	int fd = -1, err;

	memset(of, 0, sizeof(*of));
	of->path = strdup(path);
	if (!of->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* close-on-exec: a traced COMMAND must not hold our output open */
		of->f = fopen(path, "we");
		if (!of->f) {
			err = -errno;
			goto cleanup;
		}
		return of->f;
	}
	fd = open_tmp(path, &of->tmp_path);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		goto cleanup;
	}
	return of->f;

cleanup:
	if (fd >= 0)
		close(fd);
	if (of->tmp_path)
		unlink(of->tmp_path);
	outfile_reset(of);
	errno = -err;
	return NULL;
}

/* Every step that can fail, in order; the first error wins. */
static int outfile_finish(struct outfile *of)
{
	int err, fd = fileno(of->f);

	err = stream_flush_check(of->f);
	/* fsync so that a crash after the rename cannot leave the new name on empty blocks */
	if (!err && of->tmp_path && fsync(fd))
		err = -errno;
	/* fclose both reports write-back errors and must happen exactly once */
	if (fclose(of->f) && !err)
		err = errno ? -errno : -EIO;
	of->f = NULL;
	if (!err && of->tmp_path && rename(of->tmp_path, of->path))
		err = -errno;
	return err;
}

int outfile_commit(struct outfile *of)
{
	int err;

	if (!of->f)
		return -EBADF;
	err = outfile_finish(of);
	if (err && of->tmp_path)
		unlink(of->tmp_path);
	outfile_reset(of);
	return err;
}

void outfile_abort(struct outfile *of)
{
	if (!of->f) {
		outfile_reset(of);
		return;
	}
	fclose(of->f);
	if (of->tmp_path)
		unlink(of->tmp_path);
	outfile_reset(of);
}
