/* ELF helpers of the unit tests that read files' sections (libelf). */
#ifndef BPFPROF_TEST_ELF_H
#define BPFPROF_TEST_ELF_H
#include <string.h>
#include <sys/types.h>
#include <gelf.h>
#include <libelf.h>

/* The middle of the .eh_frame of the ELF file fd (0 when it has none): a byte a test changes to
 * make the same build of other call-frame bytes. */
static inline off_t test_eh_frame_middle(int fd)
{
	Elf *elf = elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	off_t off = 0;
	GElf_Shdr sh;

	while (elf && !elf_getshdrstrndx(elf, &shstrndx) && !off && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_size > 64 &&
		    !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".eh_frame"))
			off = sh.sh_offset + sh.sh_size / 2;
	elf_end(elf);
	return off;
}
#endif
