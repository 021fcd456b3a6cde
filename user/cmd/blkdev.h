/* Block devices as biolat names them: disks <-> the kernel's dev_t, and the operation and flags
 * of a request (struct request's cmd_flags) as words, with bit numbers read from the kernel's
 * BTF since they move between kernel versions. */
#ifndef BPFPROF_BLKDEV_H
#define BPFPROF_BLKDEV_H
#include <stddef.h>
#include <linux/types.h>
#include <bpf/btf.h>

#define BLK_MAX_OPS 48
#define BLK_MAX_FLAGS 16
#define BLK_NAME_LEN 24

struct blk_req_names {
	__u32 op_mask; /* cmd_flags & op_mask is the REQ_OP_* operation */
	int nr_ops;
	struct {
		__u32 op;
		char name[BLK_NAME_LEN]; /* "Read", "WriteZeroes" */
	} ops[BLK_MAX_OPS];
	int nr_flags;
	struct {
		__u32 mask;
		const char *name; /* "Sync", "ForcedUnitAccess" */
	} flags[BLK_MAX_FLAGS];
};

/* The layout of Linux 5.x and 6.x up to at least 6.18: operations in the low 8 bits, then
 * __REQ_FAILFAST_DEV, ..., __REQ_SYNC = 11, __REQ_META = 12, ... */
void blk_req_names_default(struct blk_req_names *n);

/* Reads enum req_op and enum req_flag_bits from btf (the running kernel's, normally): the
 * operations with their names, the flags biolat names, and the operation mask (the operation
 * takes the bits below __REQ_FAILFAST_DEV).  What btf lacks keeps its default.  Returns 0, or
 * -ENOENT when btf has neither enum (n is then the default). */
int blk_req_names_from_btf(struct blk_req_names *n, const struct btf *btf);

/* cmd_flags as BCC's biolatency -F prints it: the operation, each set flag prepended in BCC's
 * order, e.g. "Sync-Write", "Idle-Sync-Write"; "Unknown" for an operation with no name. */
const char *blk_req_str(const struct blk_req_names *n, __u32 cmd_flags, char *buf, size_t size);

/* The BPF side's dev_t: the kernel's internal MKDEV(major, minor), not glibc's makedev(). */
static inline __u32 blk_mkdev(__u32 major, __u32 minor)
{
	return major << 20 | minor;
}

/* dev of the whole disk called name ("vda", "/dev/vda"), from /sys/class/block/NAME/dev.
 * Returns 0; -ENOENT when there is no such block device; -ENOTBLK when name is a partition,
 * with the disk it belongs to in parent (if not NULL); -EINVAL for a name that is not a plain
 * device name. */
int blk_disk_dev(const char *name, __u32 *dev, char *parent, size_t parent_size);

/* Name of disk dev ("vda") from /sys/dev/block/MAJ:MIN, or "MAJ:MIN" when it has none (any
 * more); "-" for dev 0 (a request without a disk). */
const char *blk_disk_name(__u32 dev, char *buf, size_t size);

/* An upper bound on the struct requests of every blk-mq disk now present: per hardware queue
 * (/sys/block/D/mq/N) its driver tags and reserved tags, the I/O scheduler's nr_requests when
 * one is set, and a flush request.  Requests are preallocated per tag set and reused, so their
 * addresses stay within this many until queues are resized or disks added.  Returns the bound
 * or -errno when /sys/block cannot be read. */
long blk_requests_bound(void);

/* The request-based disks (`only`, a disk name, or NULL: all) whose queue may keep no
 * statistics, so that the kernel may not stamp their requests' issue time: those without
 * writeback throttling (queue/wbt_lat_usec unreadable).  wbt's statistics callback keeps
 * QUEUE_FLAG_STATS set for the queue's life, even with wbt_lat_usec 0 (disabled).  Returns their
 * count, or -errno when /sys/block cannot be read. */
long blk_disks_unstamped(const char *only);

/* Requests in the drivers of the request-based disks (`only`, or NULL: all) now, from
 * /sys/block/D/inflight: issued and not completed.  Returns the sum, or -errno. */
long blk_inflight(const char *only);

/* Requests the request-based disks (`only`, or NULL: all) have completed since boot, as their
 * I/O statistics count them (/sys/block/D/stat: reads, writes, discards; neither flushes nor
 * passthrough requests).  Returns the sum, or -errno. */
long blk_completed(const char *only);
#endif
