/* The streaming BTF reader (user/core/btffields.c) against libbpf's full parse of the running
 * kernel's BTF: the same offsets for members at the top of a struct and inside nested anonymous
 * structs and unions, and through a typedef of an anonymous struct; bad files refused. */
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

/* A typedef of an anonymous struct searched as a struct: x86's mm_context_t, where the walks
 * find the vdso (mm_struct.context.vdso). */
static void check_typedef_fields(const struct btf *btf)
{
	struct btf_field f[] = { { "mm_context_t", "vdso" }, { "mm_struct", "context" },
				 { "mm_context_t", "no_such_member" } };
	int id = btf__find_by_name_kind(btf, "mm_context_t", BTF_KIND_TYPEDEF);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	if (!t) {
		printf("    # no mm_context_t in the kernel's BTF (not x86): typedef not checked\n");
		return;
	}
	CHECK_INT(btf_field_offsets(NULL, f, sizeof(f) / sizeof(f[0])), 0);
	CHECK_INT(f[0].offset, libbpf_offset(btf, t->type, "vdso", 0));
	CHECK(f[0].offset > 0);
	id = btf__find_by_name_kind(btf, "mm_struct", BTF_KIND_STRUCT);
	CHECK_INT(f[1].offset, id > 0 ? libbpf_offset(btf, id, "context", 0) : -1);
	CHECK(f[1].offset > 0);
	CHECK_INT(f[2].offset, -1);
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
	check_typedef_fields(btf);
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
