// SPDX-License-Identifier: GPL-2.0
/* biolat's kernel-dependent decoding, on BTF built here for old and new kernel layouts: where the
 * request is among a tracepoint's arguments, and the names of request operations and flags. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "cmd/blkdev.h"
#include "core/features.h"

/* A tracepoint typedef as the kernel emits it: void (*btf_trace_<tp>)(void *__data, args...). */
static int add_tp(struct btf *btf, const char *tp, const int *arg_types, int nr)
{
	char name[96];
	int proto, i, void_ptr = btf__add_ptr(btf, 0);

	proto = btf__add_func_proto(btf, 0);
	btf__add_func_param(btf, "__data", void_ptr);
	for (i = 0; i < nr; i++)
		btf__add_func_param(btf, "arg", arg_types[i]);
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__add_typedef(btf, name, btf__add_ptr(btf, proto));
}

static void test_tp_arg_index(void)
{
	struct btf *btf = btf__new_empty();
	int integer, rq, q, rq_ptr, q_ptr, const_rq_ptr, status;

	if (!btf)
		SKIP("libbpf cannot create BTF");
	integer = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	rq = btf__add_struct(btf, "request", 8);
	q = btf__add_struct(btf, "request_queue", 8);
	rq_ptr = btf__add_ptr(btf, rq);
	q_ptr = btf__add_ptr(btf, q);
	const_rq_ptr = btf__add_ptr(btf, btf__add_const(btf, rq));
	status = btf__add_typedef(btf, "blk_status_t", integer);
	/* 5.11 and later: block_rq_issue(struct request *rq) */
	add_tp(btf, "block_rq_issue", (int[]){ rq_ptr }, 1);
	/* before 5.11: block_rq_insert(struct request_queue *q, struct request *rq) */
	add_tp(btf, "block_rq_insert", (int[]){ q_ptr, rq_ptr }, 2);
	/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
	add_tp(btf, "block_rq_complete", (int[]){ rq_ptr, status, integer }, 3);
	/* modifiers and typedefs between the pointer and the struct are seen through */
	add_tp(btf, "modified", (int[]){ integer, const_rq_ptr }, 2);
	add_tp(btf, "no_request", (int[]){ q_ptr, integer }, 2);
	btf__add_typedef(btf, "btf_trace_not_a_pointer", integer);

	CHECK_INT(btf_tp_arg_index(btf, "block_rq_issue", "request"), 0);
	CHECK_INT(btf_tp_arg_index(btf, "block_rq_insert", "request"), 1);
	CHECK_INT(btf_tp_arg_index(btf, "block_rq_insert", "request_queue"), 0);
	CHECK_INT(btf_tp_arg_index(btf, "block_rq_complete", "request"), 0);
	CHECK_INT(btf_tp_arg_index(btf, "modified", "request"), 1);
	CHECK_INT(btf_tp_arg_index(btf, "no_request", "request"), -ENOENT);
	CHECK_INT(btf_tp_arg_index(btf, "missing", "request"), -ENOENT);
	CHECK_INT(btf_tp_arg_index(btf, "not_a_pointer", "request"), -EINVAL);
	CHECK_INT(btf_tp_arg_index(NULL, "block_rq_issue", "request"), -ENOENT);
	btf__free(btf);
}

/* The running kernel, when its BTF is readable: it must have the request somewhere. */
static void test_tp_arg_index_vmlinux(void)
{
	struct btf *btf;
	int issue, complete;

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		SKIP("this kernel has no readable BTF");
	btf = btf__load_vmlinux_btf();
	if (!btf)
		SKIP("cannot load the kernel's BTF");
	issue = btf_tp_arg_index(btf, "block_rq_issue", "request");
	complete = btf_tp_arg_index(btf, "block_rq_complete", "request");
	CHECK(issue == 0 || issue == 1);
	CHECK_INT(complete, 0);
	/* insert, issue and merge share one event class and so one prototype */
	CHECK_INT(btf_tp_arg_index(btf, "block_rq_insert", "request"), issue);
	btf__free(btf);
}

static void add_enum(struct btf *btf, const char *name, const char *const *names, const int *vals,
		     int nr)
{
	int i;

	btf__add_enum(btf, name, 4);
	for (i = 0; i < nr; i++)
		btf__add_enum_value(btf, names[i], vals[i]);
}

static void test_req_names_default(void)
{
	struct blk_req_names n;
	char buf[128];

	/* no BTF: the 5.x/6.x layout */
	CHECK_INT(blk_req_names_from_btf(&n, NULL), -ENOENT);
	CHECK_INT(n.op_mask, 0xff);
	CHECK_STR(blk_req_str(&n, 0, buf, sizeof(buf)), "Read");
	/* what an O_DIRECT write to a block device carries: REQ_SYNC | REQ_IDLE */
	CHECK_STR(blk_req_str(&n, 1 | 1U << 11 | 1U << 15, buf, sizeof(buf)), "Idle-Sync-Write");
	CHECK_STR(blk_req_str(&n, 0 | 1U << 19, buf, sizeof(buf)), "ReadAhead-Read");
	CHECK_STR(blk_req_str(&n, 2 | 1U << 18 | 1U << 17, buf, sizeof(buf)),
		  "PreFlush-ForcedUnitAccess-Flush");
	CHECK_STR(blk_req_str(&n, 9, buf, sizeof(buf)), "WriteZeroes");
	CHECK_STR(blk_req_str(&n, 3 | 1U << 11, buf, sizeof(buf)), "Sync-Discard");
	/* bits biolat does not name (FAILFAST, POLLED...) print nothing */
	CHECK_STR(blk_req_str(&n, 1 | 1U << 8 | 1U << 22, buf, sizeof(buf)), "Write");
	CHECK_STR(blk_req_str(&n, 0x42, buf, sizeof(buf)), "Unknown");
	/* truncation is safe */
	CHECK_STR(blk_req_str(&n, 1 | 1U << 11 | 1U << 15, buf, 8), "Idle-Sy");
}

/* A layout unlike today's, so decoding can only pass by reading it from BTF. */
static void test_req_names_from_btf(void)
{
	static const char *const ops[] = { "REQ_OP_READ", "REQ_OP_WRITE", "REQ_OP_SECURE_ERASE",
					   "REQ_OP_WRITE_ZEROES", "REQ_OP_LAST" };
	static const int op_vals[] = { 0, 1, 5, 9, 12 };
	static const char *const flags[] = { "__REQ_FAILFAST_DEV", "__REQ_SYNC", "__REQ_FUA",
					     "__REQ_META", "__REQ_NR_BITS" };
	static const int flag_vals[] = { 7, 9, 10, 20, 21 };
	struct blk_req_names n;
	struct btf *btf = btf__new_empty();
	char buf[128];

	if (!btf)
		SKIP("libbpf cannot create BTF");
	add_enum(btf, "req_op", ops, op_vals, 5);
	add_enum(btf, "req_flag_bits", flags, flag_vals, 5);
	CHECK_INT(blk_req_names_from_btf(&n, btf), 0);
	/* the operation is what lies below __REQ_FAILFAST_DEV */
	CHECK_INT(n.op_mask, 0x7f);
	CHECK_INT(n.nr_ops, 4);
	CHECK_INT(n.nr_flags, 3);
	CHECK_STR(blk_req_str(&n, 1 | 1U << 9, buf, sizeof(buf)), "Sync-Write");
	CHECK_STR(blk_req_str(&n, 1 | 1U << 9 | 1U << 10, buf, sizeof(buf)),
		  "ForcedUnitAccess-Sync-Write");
	CHECK_STR(blk_req_str(&n, 0 | 1U << 20, buf, sizeof(buf)), "Metadata-Read");
	CHECK_STR(blk_req_str(&n, 5, buf, sizeof(buf)), "SecureErase");
	CHECK_STR(blk_req_str(&n, 9, buf, sizeof(buf)), "WriteZeroes");
	/* 12 is REQ_OP_LAST, a bound and not an operation; bit 7 is a flag here, not op 0x80 */
	CHECK_STR(blk_req_str(&n, 12, buf, sizeof(buf)), "Unknown");
	CHECK_STR(blk_req_str(&n, 1 | 1U << 7, buf, sizeof(buf)), "Write");
	/* today's bit 11 (SYNC) means nothing in this layout */
	CHECK_STR(blk_req_str(&n, 1 | 1U << 11, buf, sizeof(buf)), "Write");
	btf__free(btf);
}

static void test_disk_names(void)
{
	char name[64], parent[64], path[600];
	struct dirent *e;
	__u32 dev = 1;
	bool tried = false;
	DIR *d;

	CHECK_INT(blk_mkdev(254, 0), 254 << 20);
	CHECK_INT(blk_mkdev(7, 3), (7 << 20) | 3);
	CHECK_INT(blk_disk_dev("", &dev, NULL, 0), -EINVAL);
	CHECK_INT(blk_disk_dev("/dev/", &dev, NULL, 0), -EINVAL);
	CHECK_INT(blk_disk_dev("..", &dev, NULL, 0), -EINVAL);
	CHECK_INT(blk_disk_dev("../../etc", &dev, NULL, 0), -EINVAL);
	CHECK_INT(blk_disk_dev("no-such-disk-here", &dev, NULL, 0), -ENOENT);
	CHECK_STR(blk_disk_name(0, name, sizeof(name)), "-");
	/* a dev with no disk behind it prints as numbers */
	CHECK_STR(blk_disk_name(blk_mkdev(4000, 123456), name, sizeof(name)), "4000:123456");

	/* round trips through this machine's sysfs: name -> dev -> name */
	d = opendir("/sys/class/block");
	if (!d)
		SKIP("no /sys/class/block");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/partition", e->d_name);
		if (!access(path, F_OK)) {
			CHECK_INT(blk_disk_dev(e->d_name, &dev, parent, sizeof(parent)), -ENOTBLK);
			snprintf(path, sizeof(path), "/sys/class/block/%s/%s", parent, e->d_name);
			CHECK(parent[0] && !access(path, F_OK));
			continue;
		}
		CHECK_INT(blk_disk_dev(e->d_name, &dev, NULL, 0), 0);
		CHECK_STR(blk_disk_name(dev, name, sizeof(name)), e->d_name);
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		CHECK_INT(blk_disk_dev(path, &dev, NULL, 0), 0);
		CHECK_STR(blk_disk_name(dev, name, sizeof(name)), e->d_name);
		tried = true;
	}
	closedir(d);
	if (!tried)
		printf("    note: no block devices here; only the error cases were checked\n");
}

int main(void)
{
	RUN(test_tp_arg_index);
	RUN(test_tp_arg_index_vmlinux);
	RUN(test_req_names_default);
	RUN(test_req_names_from_btf);
	RUN(test_disk_names);
	TESTS_DONE();
}
