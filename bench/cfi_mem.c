/* What building one file's unwind table costs, without a run: for each FILE, the table built from
 * its CFI as the unwinder's worker builds it (cfi_build_file), then its rows and FDEs, the build's
 * CPU time and its peak RSS over the RSS before it (VmHWM reset before each file through
 * /proc/self/clear_refs): steady, where a run's peak mixes the build with everything else.  The
 * largest libraries (libLLVM, libclang-cpp: ~900k rows) set a cold run's peak when a compiler is
 * sampled.  With -d, each table's rows are printed ("pc rule", one a line) for comparing builds.
 *   cfi_mem [-d] FILE... */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "unwind/cfi.h"
#include "peak.h"

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void dump(const char *path, const struct cfi_rows *r)
{
	char buf[64];

	printf("# %s\n", path);
	for (size_t i = 0; i < r->nr; i++)
		printf("%#x %s\n", r->rows[i].pc, cfi_row_str(&r->rows[i], buf, sizeof(buf)));
}

int main(int argc, char **argv)
{
	bool rows_out = argc > 1 && !strcmp(argv[1], "-d");
	int first = rows_out ? 2 : 1, failed = 0;

	if (first >= argc) {
		fprintf(stderr, "usage: cfi_mem [-d] FILE...\n");
		return 2;
	}
	/* glibc set up as a run sets it (runner_main()) */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	mallopt(M_ARENA_MAX, 1);
	for (int i = first; i < argc; i++) {
		struct cfi_rows r;
		double rss, t0, ms;
		char why[256];
		int err;

		rss = status_mb("VmRSS:");
		if (reset_peak("cfi_mem"))
			return 1;
		t0 = cpu_ms();
		err = cfi_build_file(argv[i], -1, NULL, &r, why, sizeof(why));
		ms = cpu_ms() - t0;
		if (err) {
			fprintf(stderr, "cfi_mem: %s: %s\n", argv[i], why);
			failed++;
			continue;
		}
		if (rows_out)
			dump(argv[i], &r);
		fprintf(rows_out ? stderr : stdout,
			"%s: %zu rows (%.1f MB), %zu FDEs, %zu unsupported, from %s; %.0f ms CPU; "
			"peak RSS +%.1f MB over %.1f\n", argv[i], r.nr, r.nr * sizeof(*r.rows) / 1048576.0,
			r.fdes, r.unsupported, r.source, ms, status_mb("VmHWM:") - rss, rss);
		cfi_rows_free(&r);
		malloc_trim(0); /* as a run's drains do */
	}
	return failed ? 1 : 0;
}
