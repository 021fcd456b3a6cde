// SPDX-License-Identifier: GPL-2.0
/* SDT notes: https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation.  Each note is
 * an ELF note header, the owner "stapsdt", and a description of three addresses (pc, base,
 * semaphore) followed by three NUL-terminated strings (provider, name, argument format). */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include "probe/usdt.h"

#define NT_STAPSDT 3
#define SDT_OWNER "stapsdt"
#define SDT_SECTION ".note.stapsdt"

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static __u64 read_addr(const unsigned char *p, int addr_size)
{
	__u32 v32;
	__u64 v64;

	if (addr_size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

/* The three strings after the addresses, each ending inside the description. */
static int parse_desc(const unsigned char *desc, size_t size, int addr_size, struct usdt_note *n)
{
	const char *s[3], *p = (const char *)desc + 3 * addr_size, *end = (const char *)desc + size;

	if (size < 3 * (size_t)addr_size + 3)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		const char *nul = memchr(p, '\0', end - p);

		if (!nul)
			return -EINVAL;
		s[i] = p;
		p = nul + 1;
	}
	if (!*s[0] || !*s[1])
		return -EINVAL;
	n->pc = read_addr(desc, addr_size);
	n->base = read_addr(desc + addr_size, addr_size);
	n->semaphore = read_addr(desc + 2 * addr_size, addr_size);
	n->provider = s[0];
	n->name = s[1];
	n->args = s[2];
	return 0;
}

int usdt_parse_notes(const void *buf, size_t len, int addr_size,
		     int (*fn)(const struct usdt_note *n, void *ctx), void *ctx)
{
	const unsigned char *p = buf;
	size_t off = 0;
	int nr = 0, err;

	if (addr_size != 4 && addr_size != 8)
		return -EINVAL;
	while (len - off >= sizeof(Elf32_Nhdr)) {
		Elf32_Nhdr h; /* the same 12 bytes in 64-bit files */
		size_t name_off, desc_off;
		struct usdt_note n;

		memcpy(&h, p + off, sizeof(h));
		name_off = off + sizeof(h);
		/* sizes compared before they are added, so that no sum wraps */
		if (h.n_namesz > len - name_off || align4(h.n_namesz) > len - name_off)
			return -EINVAL;
		desc_off = name_off + align4(h.n_namesz);
		if (h.n_descsz > len - desc_off)
			return -EINVAL;
		off = desc_off + align4(h.n_descsz) < len ? desc_off + align4(h.n_descsz) : len;
		if (h.n_type != NT_STAPSDT || h.n_namesz != sizeof(SDT_OWNER) ||
		    memcmp(p + name_off, SDT_OWNER, sizeof(SDT_OWNER)))
			continue;
		err = parse_desc(p + desc_off, h.n_descsz, addr_size, &n);
		if (err)
			return err;
		err = fn(&n, ctx);
		if (err)
			return err;
		nr++;
	}
	return nr;
}

static Elf_Scn *find_section(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

int usdt_for_each(struct Elf *elf, int (*fn)(const struct usdt_note *n, void *ctx), void *ctx)
{
	const unsigned char host_data = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB :
										       ELFDATA2MSB;
	char *ident = elf_getident(elf, NULL);
	Elf_Scn *scn = find_section(elf, SDT_SECTION);
	Elf_Data *data;

	if (!scn || !ident)
		return 0;
	if ((unsigned char)ident[EI_DATA] != host_data)
		return -ENOTSUP;
	/* the raw bytes: the descriptions hold addresses libelf would not convert anyway */
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return 0;
	return usdt_parse_notes(data->d_buf, data->d_size, ident[EI_CLASS] == ELFCLASS32 ? 4 : 8,
				fn, ctx);
}
