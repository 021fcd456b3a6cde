/* DWARF of the binaries processes map (their own .debug_* sections: any user's files), read for
 * inlined frames and source lines: libdw parses it, through srcline.c's own reading of
 * .debug_aranges and unit headers (the copy of only the units looked up). */
#include <stdio.h>
#include "fuzz.h"
#include "sym/srcline.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_no_debug_files();
	return 0;
}

/* A chain's strings are read, as the report prints them. */
static void touch(const struct srcline_chain *c)
{
	size_t n = 0;

	for (__u32 i = 0; c && i < c->nr; i++)
		n += (c->f[i].func ? strlen(c->f[i].func) : 0) + (c->f[i].file ? strlen(c->f[i].file) : 0);
	(void)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct srcline_chain *c = NULL;
	/* an ELF file's bytes 8-15 (EI_ABIVERSION, EI_PAD) are read by no one: the address there
	 * leaves the file parseable, and the seeds aim it at their inlined code */
	__u64 addr = size > 8 ? fuzz_addr(data + 8, size - 8) : 0, vaddr;
	struct srclines *s;
	char path[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	s = srclines__new();
	if (!s) {
		close(fd);
		return 0;
	}
	/* as a frame asks (a file offset), then as a pprof location does (an address), around a
	 * release that drops the parsed units and the copy's pages between two drains */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!srclines__lookup_offset(s, path, addr & 0xffff, &c))
		touch(c);
	if (!srclines__file_offset_to_vaddr(s, path, addr & 0xffff, &vaddr) &&
	    !srclines__lookup(s, path, vaddr + 1, &c))
		touch(c);
	srclines__release(s);
	if (!srclines__lookup(s, path, addr, &c))
		touch(c);
	if (!srclines__lookup(s, path, addr >> 16, &c))
		touch(c);
	srclines__free(s);
	close(fd);
	return 0;
}
