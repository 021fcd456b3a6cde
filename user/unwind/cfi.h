/* Unwind tables from call-frame information: one ELF file's .eh_frame (and .debug_frame, also
 * from its separate debug file) turned into the sorted rows the BPF unwinder searches.
 * The CFI itself is interpreted by elfutils' libdw (dwarf_cfi_addrframe): only the shape of each
 * row's rules is decided here. */
#ifndef BPFPROF_CFI_H
#define BPFPROF_CFI_H
#include <stdbool.h>
#include <stddef.h>
#include <libelf.h>
#include <linux/types.h>
#include "unwind.h"

struct cfi_rows {
	struct unw_row *rows; /* sorted by pc; the last row is UNW_CFA_NONE (end of the code) */
	size_t nr;
	size_t map_len;          /* private: the mapping rows live in, */
	size_t map_off;          /* private: and where in it they start */
	size_t fdes;             /* FDEs turned into rows */
	size_t unsupported;      /* rows whose rules the BPF unwinder cannot evaluate */
	const char *source;      /* ".eh_frame", ".debug_frame", "debug file .debug_frame"... */
	bool cached;             /* read back from the persistent cache (unwind/tcache.h) */
};

/* Builds the rows of an ELF image: its .eh_frame, or when that is missing or corrupt, the
 * .debug_frame of the file or of debug_elf (its separate debug file, may be NULL).  Row pcs are
 * file offsets, through the image's executable PT_LOAD segments.  Building stops once *cancel
 * (may be NULL) is non-zero, so that a large file does not hold up the end of a run.  Returns 0;
 * -ENOENT when there is no CFI; -EINVAL when the CFI is unusable; -E2BIG (too many rows);
 * -ECANCELED; -ENOMEM.  why (size bytes) gets a one-line reason on failure. */
int cfi_build(Elf *elf, Elf *debug_elf, const volatile int *cancel, struct cfi_rows *out,
	      char *why, size_t size);

/* Builds the rows of the file at path, read through fd when fd >= 0 (e.g. the fd the symbolizer
 * opened through /proc/PID/map_files, which still works after the file was deleted; not closed),
 * finding its separate debug file when it has no usable .eh_frame. */
int cfi_build_file(const char *path, int fd, const volatile int *cancel, struct cfi_rows *out,
		   char *why, size_t size);

/* Same for an ELF image in memory (the [vdso]). */
int cfi_build_mem(const void *image, size_t len, struct cfi_rows *out, char *why, size_t size);

/* The row describing file offset off (the last row with pc <= off), NULL when off lies before
 * the first row.  The row may be UNW_CFA_NONE.  The same search the BPF unwinder does. */
const struct unw_row *cfi_find(const struct unw_row *rows, size_t nr, __u32 off);

/* One line describing a row's rules ("cfa=sp+16 fp=cfa-16"), for tests and -v dumps. */
const char *cfi_row_str(const struct unw_row *r, char *buf, size_t size);

void cfi_rows_free(struct cfi_rows *r);
#endif
