/* The streaming BTF reader (user/core/btffields.c) against libbpf's full parse of the running
 * kernel's BTF: the same offsets for members at the top of a struct and inside nested anonymous
 * structs and unions; bad files refused. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/btf.h>
#include "core/btffields.h"
#include "test.h"

static const char *vmlinux = "/sys/kernel/btf/vmlinux";

/* Offset of member in the struct or union type (searching anonymous members), or -1. */
static int libbpf_offset(const struct btf *btf, __u32 type_id, const char *member, int base)
{
	const struct btf_type *t = btf__type_by_id(btf, type_id);
	const struct btf_member *m;

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return -1;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		int off = base + btf_member_bit_offset(t, i) / 8;
		const char *name = btf__name_by_offset(btf, m->name_off);

		if (name && name[0] && !strcmp(name, member))
			return off;
		if (!name || !name[0]) {
			int in = libbpf_offset(btf, m->type, member, off);

			if (in >= 0)
				return in;
		}
	}
	return -1;
}

static void test_kernel_fields(void)
{
	struct btf_field f[] = {
		{ "vm_area_struct", "vm_start" }, { "vm_area_struct", "vm_end" },
		{ "vm_area_struct", "vm_pgoff" }, { "vm_area_struct", "vm_file" },
		{ "file", "f_inode" },            { "inode", "i_ino" },
		{ "inode", "i_sb" },              { "super_block", "s_dev" },
		{ "task_struct", "flags" },       { "task_struct", "no_such_member" },
	};
	struct btf *btf;

	if (access(vmlinux, R_OK))
		SKIP("no kernel BTF");
	btf = btf__load_vmlinux_btf();
	CHECK(btf != NULL);
	if (!btf)
		return;
	CHECK_INT(btf_field_offsets(NULL, f, sizeof(f) / sizeof(f[0])), 0);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		int id = btf__find_by_name_kind(btf, f[i].type, BTF_KIND_STRUCT);
		int want = id > 0 ? libbpf_offset(btf, id, f[i].member, 0) : -1;

		if (f[i].offset != want)
			printf("    %s.%s: %d, libbpf %d\n", f[i].type, f[i].member, f[i].offset, want);
		CHECK_INT(f[i].offset, want);
	}
	CHECK(f[0].offset >= 0 && f[3].offset > 0 && f[7].offset >= 0);
	CHECK_INT(f[9].offset, -1);
	btf__free(btf);
}

static void test_bad_files(void)
{
	struct btf_field f = { "file", "f_inode" };
	char path[] = "/tmp/btffields.XXXXXX";
	int fd = mkstemp(path);

	CHECK_INT(btf_field_offsets("/nonexistent", &f, 1), -ENOENT);
	CHECK(fd >= 0);
	/* not BTF; then a header whose sections run past the end */
	CHECK(write(fd, "not btf at all, not even close....", 34) == 34);
	CHECK_INT(btf_field_offsets(path, &f, 1), -EINVAL);
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(pwrite(fd, (unsigned char[24]){ 0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0,
					      0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0 },
		     24, 0) == 24);
	CHECK_INT(btf_field_offsets(path, &f, 1), -EINVAL);
	CHECK_INT(f.offset, -1);
	close(fd);
	unlink(path);
}

int main(void)
{
	RUN(test_kernel_fields);
	RUN(test_bad_files);
	TESTS_DONE();
}
