/* JIT perf maps (/tmp/perf-PID.map): written by the profiled process, read by root bpfprof. */
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_map *pm;
	__u64 off;
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	pm = perf_map__load_fd(fd);
	close(fd);
	perf_map__find(pm, fuzz_addr(data, size), &off);
	perf_map__find(pm, 0, &off);
	perf_map__find(pm, UINT64_MAX, &off);
	perf_map__free(pm);
	return 0;
}
