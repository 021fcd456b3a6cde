/* Profiles named on bpfprof report's and diff's command line: pprof files from any producer
 * (gzip'd or not) and folded stacks, read, merged, and written again as a pprof that must read
 * back.  (The report's writer is not fuzzed: it only sees what the reader built.) */
#include "fuzz.h"
#include "in/profile_in.h"
#include "out/pprof.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_in *in = profile_in__new();
	struct pprof_meta m = {};
	const struct stack_sample *s;
	void *buf = NULL;
	size_t n, len;

	if (!in)
		goto out;
	/* twice: the second merges into the first */
	if (profile_in__read_mem(in, data, size, "fuzz") ||
	    profile_in__read_mem(in, data, size, "fuzz"))
		goto out;
	s = profile_in__samples(in, &n);
	pprof_meta_counted(&m, "cpu", "nanoseconds", 1000);
	m.labels = PPROF_LABEL_PID | PPROF_LABEL_TID | PPROF_LABEL_COMM;
	/* the header read from the comments is written back as comments */
	m.header = &in->header;
	if (!pprof_encode(s, n, &m, &buf, &len)) {
		/* what we write, we read */
		struct profile_in *again = profile_in__new();

		if (again && profile_in__read_mem(again, buf, len, "again"))
			abort();
		/* and the header's event as it was */
		if (again && in->header.event &&
		    (!again->header.event || strcmp(again->header.event, in->header.event)))
			abort();
		profile_in__free(again);
	}
out:
	free(buf);
	profile_in__free(in);
	return 0;
}
