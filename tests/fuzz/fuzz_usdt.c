/* SDT notes (.note.stapsdt): list -p reads them from every file a process maps, which its owner
 * wrote.  The input is tried as an ELF file (usdt_for_each, what list calls) and as the raw
 * section of a 64-bit and of a 32-bit file. */
#include <libelf.h>
#include <stdio.h>
#include "fuzz.h"
#include "probe/usdt.h"

static int visit(const struct usdt_note *n, void *ctx)
{
	/* what list does with a note: its strings formatted */
	char buf[256];

	snprintf(buf, sizeof(buf), "%s:%s %s %llx", n->provider, n->name, n->args,
		 (unsigned long long)(n->pc + n->semaphore + n->base));
	return ++*(int *)ctx >= 1024;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	elf_version(EV_CURRENT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_memfd(data, size), n = 0;
	Elf *elf;

	usdt_parse_notes(data, size, 8, visit, &n);
	usdt_parse_notes(data, size, 4, visit, &n);
	if (fd < 0)
		return 0;
	elf = untrusted_elf(fd);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		usdt_for_each(elf, visit, &n);
	elf_end(elf);
	close(fd);
	return 0;
}
