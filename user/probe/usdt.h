/* USDT probes (SystemTap SDT notes, <sys/sdt.h>): the .note.stapsdt section of an ELF file, as
 * bpftrace, BCC and perf read it.  Listing only for now: bpfprof does not attach to them. */
#ifndef BPFPROF_USDT_H
#define BPFPROF_USDT_H
#include <stddef.h>
#include <linux/types.h>

struct Elf;

/* One probe site: a note of type 3 (NT_STAPSDT) owned by "stapsdt". */
struct usdt_note {
	__u64 pc;        /* the site's address, as linked (before any .stapsdt.base adjustment) */
	__u64 base;      /* .stapsdt.base's address as linked: prelinking moves both */
	__u64 semaphore; /* address of the probe's enable counter, 0 without one */
	const char *provider, *name, *args; /* point into the buffer parsed */
};

/* Parses the contents of a .note.stapsdt section (in the host's byte order, addresses of
 * addr_size bytes: 8 for ELFCLASS64, 4 for ELFCLASS32) and calls fn on each SDT note; notes of
 * other owners or types are skipped.  Returns the number of notes passed to fn, fn's first
 * non-zero return, or -EINVAL for a note that runs past the buffer or a malformed description. */
int usdt_parse_notes(const void *buf, size_t len, int addr_size,
		     int (*fn)(const struct usdt_note *n, void *ctx), void *ctx);

/* The same over an ELF file's .note.stapsdt section: 0 notes when it has none; -ENOTSUP when
 * the file's byte order is not the host's. */
int usdt_for_each(struct Elf *elf, int (*fn)(const struct usdt_note *n, void *ctx), void *ctx);
#endif
