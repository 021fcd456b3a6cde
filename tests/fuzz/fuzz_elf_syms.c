/* ELF symbol tables of the binaries and libraries processes map: any user's files. */
#include "fuzz.h"

static int visit(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	return ++*(int *)ctx >= 64;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_no_debug_files();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_syms *es;
	__u64 addr = fuzz_addr(data, size), vaddr, off;
	int fd = fuzz_memfd(data, size), n = 0;

	if (fd < 0)
		return 0;
	/* as the symbolizer opens a mapped file (through /proc/PID/map_files); the path is where
	 * a .gnu_debuglink is looked for, and leads nowhere */
	es = elf_syms__open_fd(fd, "/nonexistent/bpfprof-fuzz/input");
	close(fd);
	elf_syms__find(es, addr, &off);
	if (elf_syms__file_offset_to_vaddr(es, addr, &vaddr))
		elf_syms__find(es, vaddr, &off);
	elf_syms__for_each_match(es, "*", visit, &n);
	elf_syms__free(es);
	return 0;
}
