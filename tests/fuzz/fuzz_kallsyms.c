/* kallsyms-format files: /proc/kallsyms, and the fixtures and copies read with ksyms__load_file. */
#include <stdio.h>
#include "fuzz.h"

static int visit(const char *name, __u64 addr, void *ctx)
{
	return ++*(int *)ctx >= 64; /* enough to walk the name index */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ksym *k;
	struct ksyms *ks;
	char path[64];
	int fd = fuzz_memfd(data, size), n = 0;

	if (fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ks = ksyms__load_file(path);
	close(fd);
	k = ksyms__find(ks, fuzz_addr(data, size));
	/* the name lookups build and search the name index */
	if (k)
		ksyms__addr(ks, k->name);
	ksyms__addr(ks, "schedule");
	ksyms__for_each_name(ks, visit, &n);
	ksyms__nr_names(ks);
	ksyms__free(ks);
	return 0;
}
