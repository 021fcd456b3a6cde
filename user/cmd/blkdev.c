// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd/blkdev.h"
#include "core/common.h"

#define REQ_OP_BITS_DEFAULT 8

/* BCC's biolatency names, in the order it prepends them, plus PreFlush. */
static const struct {
	const char *btf_name;
	int default_bit;
	const char *name;
} flag_table[] = {
	{ "__REQ_SYNC", 11, "Sync" },
	{ "__REQ_META", 12, "Metadata" },
	{ "__REQ_FUA", 17, "ForcedUnitAccess" },
	{ "__REQ_PREFLUSH", 18, "PreFlush" },
	{ "__REQ_PRIO", 13, "Priority" },
	{ "__REQ_NOMERGE", 14, "NoMerge" },
	{ "__REQ_IDLE", 15, "Idle" },
	{ "__REQ_RAHEAD", 19, "ReadAhead" },
	{ "__REQ_BACKGROUND", 20, "Background" },
	{ "__REQ_NOWAIT", 21, "NoWait" },
};
#define NR_FLAGS (sizeof(flag_table) / sizeof(flag_table[0]))

static const struct {
	__u32 op;
	const char *name;
} default_ops[] = {
	{ 0, "Read" }, { 1, "Write" }, { 2, "Flush" }, { 3, "Discard" }, { 5, "SecureErase" },
	{ 7, "ZoneAppend" }, { 9, "WriteZeroes" }, { 11, "ZoneOpen" }, { 13, "ZoneClose" },
	{ 15, "ZoneFinish" }, { 17, "ZoneReset" }, { 19, "ZoneResetAll" }, { 34, "DrvIn" },
	{ 35, "DrvOut" },
};

void blk_req_names_default(struct blk_req_names *n)
{
	size_t i;

	memset(n, 0, sizeof(*n));
	n->op_mask = (1U << REQ_OP_BITS_DEFAULT) - 1;
	for (i = 0; i < sizeof(default_ops) / sizeof(default_ops[0]); i++) {
		n->ops[n->nr_ops].op = default_ops[i].op;
		snprintf(n->ops[n->nr_ops].name, BLK_NAME_LEN, "%s", default_ops[i].name);
		n->nr_ops++;
	}
	for (i = 0; i < NR_FLAGS; i++) {
		n->flags[n->nr_flags].mask = 1U << flag_table[i].default_bit;
		n->flags[n->nr_flags].name = flag_table[i].name;
		n->nr_flags++;
	}
}

static const struct btf_type *find_enum(const struct btf *btf, const char *name)
{
	int id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_ENUM) : -ENOENT;

	return id > 0 ? btf__type_by_id(btf, id) : NULL;
}

static bool enum_value(const struct btf *btf, const struct btf_type *t, const char *name, int *val)
{
	const struct btf_enum *e = btf_enum(t);
	int i;

	for (i = 0; i < btf_vlen(t); i++, e++) {
		if (!strcmp(btf__name_by_offset(btf, e->name_off), name)) {
			*val = e->val;
			return true;
		}
	}
	return false;
}

/* "REQ_OP_WRITE_ZEROES" -> "WriteZeroes"; false for names that are not operations. */
static bool op_camel(const char *btf_name, char *out, size_t size)
{
	const char *s = btf_name + strlen("REQ_OP_");
	bool upper = true;
	size_t len = 0;

	if (strncmp(btf_name, "REQ_OP_", 7) || !*s || !strcmp(s, "LAST"))
		return false;
	for (; *s && len + 1 < size; s++) {
		if (*s == '_') {
			upper = true;
			continue;
		}
		out[len++] = upper ? toupper((unsigned char)*s) : tolower((unsigned char)*s);
		upper = false;
	}
	out[len] = '\0';
	return true;
}

int blk_req_names_from_btf(struct blk_req_names *n, const struct btf *btf)
{
	const struct btf_type *ops = find_enum(btf, "req_op");
	const struct btf_type *flags = find_enum(btf, "req_flag_bits");
	const struct btf_enum *e;
	int i, bit;

	blk_req_names_default(n);
	if (!ops && !flags)
		return -ENOENT;
	if (ops) {
		n->nr_ops = 0;
		e = btf_enum(ops);
		for (i = 0; i < btf_vlen(ops) && n->nr_ops < BLK_MAX_OPS; i++, e++) {
			if (!op_camel(btf__name_by_offset(btf, e->name_off),
				      n->ops[n->nr_ops].name, BLK_NAME_LEN))
				continue;
			n->ops[n->nr_ops++].op = e->val;
		}
	}
	if (flags) {
		/* the operation has the bits below the first flag (REQ_OP_BITS) */
		if (enum_value(btf, flags, "__REQ_FAILFAST_DEV", &bit) && bit > 0 && bit < 32)
			n->op_mask = (1U << bit) - 1;
		n->nr_flags = 0;
		for (i = 0; i < (int)NR_FLAGS; i++) {
			if (!enum_value(btf, flags, flag_table[i].btf_name, &bit) || bit < 0 || bit > 31)
				continue;
			n->flags[n->nr_flags].mask = 1U << bit;
			n->flags[n->nr_flags].name = flag_table[i].name;
			n->nr_flags++;
		}
	}
	return 0;
}

const char *blk_req_str(const struct blk_req_names *n, __u32 cmd_flags, char *buf, size_t size)
{
	const char *op = "Unknown";
	char tmp[256];
	int i;

	for (i = 0; i < n->nr_ops; i++) {
		if (n->ops[i].op == (cmd_flags & n->op_mask)) {
			op = n->ops[i].name;
			break;
		}
	}
	snprintf(buf, size, "%s", op);
	for (i = 0; i < n->nr_flags; i++) {
		if (!(cmd_flags & n->flags[i].mask))
			continue;
		snprintf(tmp, sizeof(tmp), "%s-%s", n->flags[i].name, buf);
		snprintf(buf, size, "%s", tmp);
	}
	return buf;
}

static int read_dev_file(const char *path, __u32 *dev)
{
	unsigned int major, minor;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%u:%u", &major, &minor);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*dev = blk_mkdev(major, minor);
	return 0;
}

int blk_disk_dev(const char *name, __u32 *dev, char *parent, size_t parent_size)
{
	char path[PATH_MAX], real[PATH_MAX], *slash;
	int err;

	if (!strncmp(name, "/dev/", 5))
		name += 5;
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	err = read_dev_file(path, dev);
	if (err)
		return err == -EINVAL ? err : -ENOENT;
	snprintf(path, sizeof(path), "/sys/class/block/%s/partition", name);
	if (access(path, F_OK))
		return 0;
	/* /sys/class/block/vda1 -> .../block/vda/vda1: the disk is the parent directory */
	if (parent && parent_size) {
		parent[0] = '\0';
		snprintf(path, sizeof(path), "/sys/class/block/%s", name);
		if (realpath(path, real) && (slash = strrchr(real, '/'))) {
			*slash = '\0';
			slash = strrchr(real, '/');
			snprintf(parent, parent_size, "%s", slash ? slash + 1 : real);
		}
	}
	return -ENOTBLK;
}

const char *blk_disk_name(__u32 dev, char *buf, size_t size)
{
	char path[64], target[PATH_MAX];
	const char *base;
	ssize_t len;

	if (!dev) {
		snprintf(buf, size, "-");
		return buf;
	}
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", dev >> 20, dev & ((1U << 20) - 1));
	len = readlink(path, target, sizeof(target) - 1);
	if (len <= 0) {
		snprintf(buf, size, "%u:%u", dev >> 20, dev & ((1U << 20) - 1));
		return buf;
	}
	target[len] = '\0';
	base = strrchr(target, '/');
	snprintf(buf, size, "%s", base ? base + 1 : target);
	return buf;
}


static bool has_scheduler(const char *disk)
{
	char path[PATH_MAX], line[256];
	bool sched;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", disk);
	f = fopen(path, "r");
	if (!f)
		return false;
	/* "none [mq-deadline] kyber": the selected one is in brackets */
	sched = fgets(line, sizeof(line), f) && strchr(line, '[') && !strstr(line, "[none]");
	fclose(f);
	return sched;
}

/* Calls fn for every request-based disk (one with /sys/block/D/mq; bio-based ones, zram, md,
 * dm, issue no requests), or for `only` alone when it is not NULL.  Returns fn's sum, or
 * -errno when /sys/block cannot be read. */
static long each_rq_disk(const char *only, long (*fn)(const char *disk))
{
	char path[PATH_MAX];
	struct dirent *d;
	long total = 0;
	DIR *blk;

	if (only)
		return fn(only);
	blk = opendir("/sys/block");
	if (!blk)
		return -errno;
	while ((d = readdir(blk))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/mq", d->d_name);
		if (access(path, F_OK))
			continue;
		total += fn(d->d_name);
	}
	closedir(blk);
	return total;
}

/* The requests of disk: per hardware queue its driver tags and reserved tags, the I/O
 * scheduler's nr_requests when one is set, and a flush request. */
static long disk_requests(const char *disk)
{
	char path[PATH_MAX];
	struct dirent *h;
	long total = 0, sched;
	DIR *mq;

	snprintf(path, sizeof(path), "/sys/block/%s/mq", disk);
	mq = opendir(path);
	if (!mq)
		return 0;
	snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", disk);
	sched = has_scheduler(disk) ? read_sysfs_long(path) : 0;
	while ((h = readdir(mq))) {
		if (!isdigit((unsigned char)h->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/mq/%s/nr_tags", disk, h->d_name);
		total += read_sysfs_long(path);
		snprintf(path, sizeof(path), "/sys/block/%s/mq/%s/nr_reserved_tags", disk, h->d_name);
		total += read_sysfs_long(path) + sched + 1;
	}
	closedir(mq);
	return total;
}

long blk_requests_bound(void)
{
	return each_rq_disk(NULL, disk_requests);
}

/* 1 when disk's queue may not keep statistics: no writeback throttling to read. */
static long unstamped_disk(const char *disk)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/block/%s/queue/wbt_lat_usec", disk);
	return read_sysfs_long(path) < 0;
}

long blk_disks_unstamped(const char *only)
{
	return each_rq_disk(only, unstamped_disk);
}

static long disk_inflight(const char *disk)
{
	char path[PATH_MAX];
	long r = 0, w = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/inflight", disk);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &r, &w) != 2)
		r = w = 0;
	fclose(f);
	return r + w;
}

long blk_inflight(const char *only)
{
	return each_rq_disk(only, disk_inflight);
}

/* Requests disk has completed since boot: /sys/block/D/stat's reads, writes and discards (4.18)
 * completed.  Not its flushes (5.5), which count more than the flush requests that reach
 * block_rq_complete (seen here: about one more a journal write with preflush and FUA). */
static long disk_completed(const char *disk)
{
	static const int ios[] = { 0, 4, 11 }; /* their 0-based fields */
	unsigned long long f[17] = { 0 };
	char path[PATH_MAX];
	long total = 0;
	FILE *f_;
	int n;

	snprintf(path, sizeof(path), "/sys/block/%s/stat", disk);
	f_ = fopen(path, "re");
	if (!f_)
		return 0;
	for (n = 0; n < 17 && fscanf(f_, "%llu", &f[n]) == 1; n++)
		;
	fclose(f_);
	for (size_t i = 0; i < sizeof(ios) / sizeof(ios[0]); i++)
		if (ios[i] < n)
			total += (long)f[ios[i]];
	return total;
}

long blk_completed(const char *only)
{
	return each_rq_disk(only, disk_completed);
}
