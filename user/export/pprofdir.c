// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "core/grow.h"
#include "core/common.h"
#include "export/pprofdir.h"
#include "out/outfile.h"

#define STAMP_LEN 16 /* YYYYmmddTHHMMSSZ */
#define SUFFIX ".pb.gz"

struct pprof_dir {
	char *path, *prefix;
	__u64 keep;
	__u64 written, removed;
	__s64 last_s; /* the second the last file is named after */
};

const char *pprof_dir_name(const char *prefix, __s64 start_ns, char *buf, size_t size)
{
	time_t t = start_ns / 1000000000LL;
	struct tm tm;
	char stamp[STAMP_LEN + 1];

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, size, "%s-%s%s", prefix, stamp, SUFFIX);
	return buf;
}

/* PREFIX-YYYYmmddTHHMMSSZ.pb.gz exactly: the only names rotation removes. */
static bool is_period_file(const struct pprof_dir *d, const char *name)
{
	size_t plen = strlen(d->prefix);
	const char *stamp = name + plen + 1;

	if (strncmp(name, d->prefix, plen) || name[plen] != '-' ||
	    strlen(stamp) != STAMP_LEN + strlen(SUFFIX) || strcmp(stamp + STAMP_LEN, SUFFIX))
		return false;
	for (int i = 0; i < STAMP_LEN - 1; i++)
		if (i != 8 && !isdigit((unsigned char)stamp[i]))
			return false;
	return stamp[8] == 'T' && stamp[STAMP_LEN - 1] == 'Z';
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The period files of the directory beyond keep, oldest first (the names sort by time), go;
 * only regular files: a symlink or a directory someone named so stays. */
static void rotate(struct pprof_dir *d)
{
	DIR *dir = opendir(d->path);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	struct stat st;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		if (!is_period_file(d, e->d_name))
			continue;
		if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (ARRAY_GROW(names, cap, n + 1))
			break;
		names[n] = strdup(e->d_name);
		n += names[n] != NULL;
	}
	if (n > d->keep)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (i + d->keep < n) {
			if (!unlinkat(dirfd(dir), names[i], 0))
				d->removed++;
			else
				p_err("cannot remove %s/%s (--keep %llu): %s", d->path, names[i],
				      (unsigned long long)d->keep, strerror(errno));
		}
		free(names[i]);
	}
	free(names);
	closedir(dir);
}

int pprof_dir_write(struct pprof_dir *d, __s64 start_ns, const void *buf, size_t len)
{
	char name[NAME_MAX + 1], path[PATH_MAX];
	__s64 s = start_ns / 1000000000LL;
	struct outfile of = {};
	int err = 0;

	/* a period that began late (its drain outlasted a boundary) may start in the same second
	 * as the next: the next is named a second on, never over it */
	if (d->written && s <= d->last_s)
		s = d->last_s + 1;
	pprof_dir_name(d->prefix, s * 1000000000LL, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", d->path, name);
	/* a temporary file fsynced and renamed: a reader never sees half a profile */
	if (!outfile_open(path, &of))
		err = -errno;
	else if (len && fwrite(buf, len, 1, of.f) != 1)
		err = -errno ?: -EIO;
	if (!err)
		err = outfile_commit(&of);
	else
		outfile_abort(&of);
	if (err) {
		p_err("cannot write %s: %s", path, strerror(-err));
		return err;
	}
	d->written++;
	d->last_s = s;
	rotate(d);
	return 0;
}

int pprof_dir_open(const char *path, const char *prefix, __u64 keep, struct pprof_dir **out)
{
	struct pprof_dir *d = calloc(1, sizeof(*d));
	char probe[PATH_MAX];
	struct outfile of = {};
	struct stat st;
	int err = 0;

	if (!d || !(d->path = strdup(path)) || !(d->prefix = strdup(prefix))) {
		err = -ENOMEM;
		goto cleanup;
	}
	d->keep = keep;
	if (mkdir(path, 0755) && errno != EEXIST) {
		err = -errno;
		goto cleanup;
	}
	if (stat(path, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISDIR(st.st_mode)) {
		err = -ENOTDIR;
		goto cleanup;
	}
	/* a file made and removed: what each period will do, tried before tracing */
	snprintf(probe, sizeof(probe), "%s/.bpfprof-probe", path);
	if (!outfile_open(probe, &of)) {
		err = -errno;
		goto cleanup;
	}
	outfile_abort(&of);
	*out = d;
	return 0;
cleanup:
	p_err("cannot write to --pprof-dir %s: %s", path, strerror(-err));
	pprof_dir_close(d);
	return err;
}

void pprof_dir_counts(const struct pprof_dir *d, __u64 *written, __u64 *removed)
{
	*written = d ? d->written : 0;
	*removed = d ? d->removed : 0;
}

void pprof_dir_close(struct pprof_dir *d)
{
	if (!d)
		return;
	free(d->path);
	free(d->prefix);
	free(d);
}
