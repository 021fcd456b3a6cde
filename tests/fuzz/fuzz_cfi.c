/* Call-frame information (.eh_frame, .debug_frame) of mapped files, turned into unwind tables. */
#include "fuzz.h"
#include "unwind/cfi.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_no_debug_files();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_rows rows;
	const struct unw_row *r;
	char why[256], buf[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	/* as the unwinder builds a mapped file's table, through the fd the symbolizer opened */
	if (!cfi_build_file("/nonexistent/bpfprof-fuzz/input", fd, NULL, &rows, why, sizeof(why))) {
		r = cfi_find(rows.rows, rows.nr, (__u32)fuzz_addr(data, size));
		if (r)
			cfi_row_str(r, buf, sizeof(buf));
		for (size_t i = 0; i < rows.nr && i < 64; i++)
			cfi_row_str(&rows.rows[i], buf, sizeof(buf));
		cfi_rows_free(&rows);
	}
	close(fd);
	return 0;
}
