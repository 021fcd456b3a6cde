/* Offsets of a few kernel struct members, read from the kernel's BTF without parsing all of it.
 *
 * The BPF side sometimes needs a field of a kernel object it only holds as a pointer handed to it
 * (a vm_area_struct in bpf_find_vma()'s callback): CO-RE would relocate the access, but libbpf
 * relocates against the whole vmlinux BTF, ~12 MB of peak RSS for an object that otherwise needs
 * none.  These offsets are found by streaming the BTF in small chunks instead, and passed to the
 * BPF side as settings. */
#ifndef BPFPROF_BTFFIELDS_H
#define BPFPROF_BTFFIELDS_H
#include <stddef.h>

struct btf_field {
	const char *type;   /* struct or union name, e.g. "vm_area_struct", or the typedef
			     * name of an anonymous one ("mm_context_t") */
	const char *member; /* a member of it, or of an anonymous struct or union inside it */
	int offset;         /* out: in bytes; -1 when not found (or a bitfield) */
};

/* Fills the offsets of fields[0..n) from the BTF at path (NULL: /sys/kernel/btf/vmlinux).
 * Returns 0 (offsets not found stay -1), or a negative errno when the file cannot be read or is
 * not BTF. */
int btf_field_offsets(const char *path, struct btf_field *fields, size_t n);
#endif
