// SPDX-License-Identifier: GPL-2.0
/* Opening files other users control (sym/untrusted.h), and counting the ones refused. */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "core/hashtab.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

static const struct {
	const char *one, *many;
	__u64 max_size;
	const char *too_big;
} kinds[FILE_NR_KINDS] = {
	[FILE_JIT_MAP] = { "JIT map", "JIT maps", PERF_MAP_MAX_BYTES, "over " PERF_MAP_MAX_STR },
	[FILE_DEBUG] = { "debug file", "debug files", ELF_FILE_MAX_BYTES, "over 4 GiB" },
	[FILE_MAPPED] = { "mapped file", "mapped files", ELF_FILE_MAX_BYTES, "over 4 GiB" },
};

const char *file_refusal_str(enum file_kind kind, enum file_refusal why)
{
	switch (why) {
	case FILE_SYMLINK:
		return "a symbolic link";
	case FILE_NOT_REGULAR:
		return "not a regular file";
	case FILE_HARD_LINKED:
		return "a file with other names (hard links)";
	case FILE_OWNER:
		/* a debug file: root's (or ours), or next to a binary, its owner's too */
		return kind == FILE_JIT_MAP ? "owned by neither the process's user nor root" :
		       "owned by another user";
	case FILE_TOO_BIG:
		return kinds[kind].too_big;
	case FILE_NOT_MAPPED:
		return "not the file the process mapped";
	case FILE_BAD_NAME:
		return "a name outside its directory";
	case FILE_TOO_SLOW:
		return "too long to check (debug files' CRCs get " DEBUG_CRC_BUDGET_STR " a run)";
	default:
		return "read";
	}
}

static bool owner_trusted(uid_t owner, const struct file_rules *r)
{
	return !owner || owner == geteuid() || owner == r->owners[0] || owner == r->owners[1];
}

/* want 0: any device. */
static bool same_dev(dev_t have, __u64 want)
{
	return !want || have == want || (!major(have) && !major(want));
}

/* Why a file with this stat is refused, if it is. */
static enum file_refusal judge(const struct stat *st, enum file_kind kind,
			       const struct file_rules *r)
{
	if (S_ISLNK(st->st_mode))
		return FILE_SYMLINK;
	if (!S_ISREG(st->st_mode))
		return FILE_NOT_REGULAR;
	if (r->ino && (st->st_ino != r->ino || !same_dev(st->st_dev, r->dev)))
		return FILE_NOT_MAPPED;
	/* a hard link another user made to a root-owned file would pass the owner test */
	if (r->one_name && st->st_nlink != 1)
		return FILE_HARD_LINKED;
	if (r->check_owner && !owner_trusted(st->st_uid, r))
		return FILE_OWNER;
	if ((__u64)st->st_size > kinds[kind].max_size)
		return FILE_TOO_BIG;
	return FILE_OK;
}

int untrusted_check(int fd, enum file_kind kind, const struct file_rules *rules, struct stat *st,
		    enum file_refusal *why)
{
	if (fstat(fd, st))
		return -errno;
	*why = judge(st, kind, rules);
	return *why ? -EPERM : 0;
}

int untrusted_open(int dir, const char *name, enum file_kind kind, const struct file_rules *rules,
		   struct stat *st, enum file_refusal *why)
{
	int fd, err;

	*why = FILE_OK;
	/* look first: an open() of a FIFO could wait, and one of a device could do something */
	if (fstatat(dir, name, st, rules->follow ? 0 : AT_SYMLINK_NOFOLLOW))
		return -errno;
	*why = judge(st, kind, rules);
	if (*why)
		return -EPERM;
	fd = openat(dir, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
		    (rules->follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		err = -errno;
		/* made a link since the look */
		if (err == -ELOOP && !rules->follow) {
			*why = FILE_SYMLINK;
			err = -EPERM;
		}
		return err;
	}
	/* what was opened counts, not what was looked at: the name may have been replaced */
	err = untrusted_check(fd, kind, rules, st, why);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

Elf *untrusted_elf(int fd)
{
	/* ELF_C_READ reads the headers now and each section when asked for, into memory */
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return elf_begin(fd, ELF_C_READ, NULL);
}

int untrusted_read(int fd, enum file_kind kind, char **text, size_t *len)
{
	__u64 max = kinds[kind].max_size;
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL, *tmp;
	ssize_t r;
	int err = 0;

	for (;;) {
		if (n > max) {
			err = -EFBIG;
			goto cleanup;
		}
		if (!buf || cap - n < 4096) {
			cap *= 2;
			tmp = realloc(buf, cap);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	return err;
}

/* ---- refusals ---- */

static struct {
	pthread_mutex_t lock;
	struct hashtab seen; /* hash of (kind, path) -> a non-NULL marker */
	size_t counts[FILE_NR_KINDS][FILE_NR_REFUSALS];
} refused = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* FNV-1a: only tells paths apart for saying each once */
static __u64 path_hash(enum file_kind kind, const char *path)
{
	__u64 h = 14695981039346656037ULL ^ kind;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ULL;
	return h;
}

void untrusted_refused(enum file_kind kind, const char *path, enum file_refusal why)
{
	__u64 h = path_hash(kind, path);
	bool first;

	if (why <= FILE_OK || why >= FILE_NR_REFUSALS)
		return;
	pthread_mutex_lock(&refused.lock);
	first = !hashtab_get(&refused.seen, h, 0);
	/* out of memory: still counted, maybe said twice */
	if (first) {
		hashtab_put(&refused.seen, h, 0, (void *)1);
		refused.counts[kind][why]++;
	}
	pthread_mutex_unlock(&refused.lock);
	if (first)
		fprintf(stderr, "bpfprof: %s %s not read: %s\n", kinds[kind].one, path,
			file_refusal_str(kind, why));
}

/* snprintf at buf + *len, keeping *len within size */
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	*len = n < 0 ? *len : *len + n < size ? *len + n : size;
}

size_t untrusted_refusals(char *buf, size_t size)
{
	size_t total = 0, len = 0, n;

	if (size)
		buf[0] = '\0';
	pthread_mutex_lock(&refused.lock);
	for (int kind = 0; kind < FILE_NR_KINDS; kind++) {
		bool first = true;

		for (int why = FILE_OK + 1; why < FILE_NR_REFUSALS; why++) {
			n = refused.counts[kind][why];
			if (!n)
				continue;
			if (first)
				append(buf, size, &len, "%s%s not read: ", total ? "; " : "",
				       kinds[kind].many);
			append(buf, size, &len, "%s%zu %s", first ? "" : ", ", n,
			       file_refusal_str(kind, why));
			first = false;
			total += n;
		}
	}
	pthread_mutex_unlock(&refused.lock);
	return total;
}
