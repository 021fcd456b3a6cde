// SPDX-License-Identifier: GPL-2.0
/* Cgroup v2 ids to paths: a table of the hierarchy's directories by inode number, read whole
 * when an id is missing from it.  Read again whole rather than updated, it holds the cgroups
 * that exist, whatever a long run's churn of containers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/common.h"
#include "core/hashtab.h"
#include "sym/cgroups.h"

/* A miss reads the hierarchy again at most this often: ids of cgroups gone stay numbers. */
#define REREAD_NS 1000000000ULL
/* Directories read at most (cgroup.max.descendants is unbounded by default). */
#define MAX_CGROUPS 65536

struct cgroup_names {
	char mount[PATH_MAX];
	struct hashtab paths; /* (id, 0) -> malloc'd path */
	size_t nr;
	__u64 read_ns;        /* when the table was read; 0 never */
	char number[24];
};

int cgroup2_mount(char *out, size_t size)
{
	char line[4096], mnt[PATH_MAX], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(out, size, "%s", mnt);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

struct cgroup_names *cgroup_names__new(void)
{
	struct cgroup_names *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	err = cgroup2_mount(c->mount, sizeof(c->mount));
	if (err) {
		free(c);
		errno = -err;
		return NULL;
	}
	return c;
}

static int add(struct cgroup_names *c, __u64 id, const char *path)
{
	char *copy;

	if (c->nr >= MAX_CGROUPS || hashtab_get(&c->paths, id, 0))
		return 0;
	copy = strdup(path);
	if (!copy || hashtab_put(&c->paths, id, 0, copy)) {
		free(copy);
		return -ENOMEM;
	}
	c->nr++;
	return 0;
}

/* The cgroups under directory fd (path: its name under the mount, "" for the root), depth
 * first; fd is closed.  A directory that goes while it is read is skipped.  0 or -ENOMEM. */
static int read_dir(struct cgroup_names *c, int fd, char *path, size_t len)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int err = 0;

	if (!d) {
		close(fd);
		return 0;
	}
	while (!err && (e = readdir(d))) {
		int sub;

		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (len + 1 + strlen(e->d_name) >= PATH_MAX)
			continue;
		sprintf(path + len, "/%s", e->d_name);
		/* kernfs gives a directory's inode number, the cgroup's id, as d_ino (64-bit
		 * kernels; on 32-bit ones the id's low half) */
		err = add(c, e->d_ino, path);
		sub = err ? -1 : openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub >= 0)
			err = read_dir(c, sub, path, strlen(path));
		path[len] = '\0';
	}
	closedir(d);
	return err;
}

static void free_path(void *p)
{
	free(p);
}

/* The table made anew from the hierarchy as it is.  0 or -ENOMEM. */
static int reread(struct cgroup_names *c)
{
	char path[PATH_MAX] = "";
	struct stat st;
	int fd, err;

	hashtab_clear(&c->paths, free_path);
	c->nr = 0;
	c->read_ns = now_ns();
	fd = open(c->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	err = fstat(fd, &st) ? 0 : add(c, st.st_ino, "/");
	if (err) {
		close(fd);
		return err;
	}
	return read_dir(c, fd, path, 0);
}

const char *cgroup_names__get(struct cgroup_names *c, __u64 id)
{
	const char *path = hashtab_get(&c->paths, id, 0);

	if (path)
		return path;
	if (!c->read_ns || now_ns() - c->read_ns >= REREAD_NS) {
		if (reread(c))
			return NULL;
		if ((path = hashtab_get(&c->paths, id, 0)))
			return path;
	}
	snprintf(c->number, sizeof(c->number), "%llu", (unsigned long long)id);
	return c->number;
}

void cgroup_names__free(struct cgroup_names *c)
{
	if (!c)
		return;
	hashtab_clear(&c->paths, free_path);
	free(c);
}
