// SPDX-License-Identifier: GPL-2.0
/* The names are perf's (tools/perf/util/parse-events.c, evsel.c), so that what a perf user
 * types means the same here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "probe/perf_events.h"

const struct perf_event_name perf_event_names[] = {
	{ "cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
	{ "bpf-output", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT },
	{ "cgroup-switches", NULL, PERF_TYPE_SOFTWARE, 11 /* PERF_COUNT_SW_CGROUP_SWITCHES, 5.13 */ },
	{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};
const size_t nr_perf_event_names = sizeof(perf_event_names) / sizeof(perf_event_names[0]);

#define OP(x) (1u << PERF_COUNT_HW_CACHE_OP_##x)
#define OPS_ALL (OP(READ) | OP(WRITE) | OP(PREFETCH))

/* The caches and, for each, the operations perf names (evsel.c's evsel__hw_cache_stat). */
static const struct {
	const char *name;
	__u32 id;
	unsigned int ops; /* 1 << PERF_COUNT_HW_CACHE_OP_* */
} caches[] = {
	{ "L1-dcache", PERF_COUNT_HW_CACHE_L1D, OPS_ALL },
	{ "L1-icache", PERF_COUNT_HW_CACHE_L1I, OP(READ) | OP(PREFETCH) },
	{ "LLC", PERF_COUNT_HW_CACHE_LL, OPS_ALL },
	{ "dTLB", PERF_COUNT_HW_CACHE_DTLB, OPS_ALL },
	{ "iTLB", PERF_COUNT_HW_CACHE_ITLB, OP(READ) },
	{ "branch", PERF_COUNT_HW_CACHE_BPU, OP(READ) },
	{ "node", PERF_COUNT_HW_CACHE_NODE, OPS_ALL },
};
/* per operation: the access count's name, and the stem of the miss count's */
static const char *const op_access[] = { "loads", "stores", "prefetches" };
static const char *const op_miss[] = { "load", "store", "prefetch" };

bool perf_cache_event(size_t i, char *buf, size_t size, __u64 *config)
{
	for (size_t c = 0; c < sizeof(caches) / sizeof(caches[0]); c++) {
		for (__u32 op = 0; op < 3; op++) {
			if (!(caches[c].ops & (1u << op)))
				continue;
			if (i >= 2) {
				i -= 2;
				continue;
			}
			/* i == 0: accesses, i == 1: misses */
			if (i == 0)
				snprintf(buf, size, "%s-%s", caches[c].name, op_access[op]);
			else
				snprintf(buf, size, "%s-%s-misses", caches[c].name, op_miss[op]);
			*config = caches[c].id | (__u64)op << 8 |
				  (__u64)(i ? PERF_COUNT_HW_CACHE_RESULT_MISS :
					      PERF_COUNT_HW_CACHE_RESULT_ACCESS) << 16;
			return true;
		}
	}
	return false;
}

int perf_event_lookup(const char *name, __u32 *type, __u64 *config)
{
	char buf[64];

	for (size_t i = 0; i < nr_perf_event_names; i++) {
		const struct perf_event_name *e = &perf_event_names[i];

		if (!strcmp(name, e->name) || (e->alias && !strcmp(name, e->alias))) {
			*type = e->type;
			*config = e->config;
			return 0;
		}
	}
	for (size_t i = 0; perf_cache_event(i, buf, sizeof(buf), config); i++) {
		if (!strcmp(name, buf)) {
			*type = PERF_TYPE_HW_CACHE;
			return 0;
		}
	}
	return -ENOENT;
}

static int open_counter(struct perf_event_attr *attr)
{
	int fd = syscall(SYS_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int perf_event_probe(__u32 type, __u64 config)
{
	struct perf_event_attr attr = {
		.type = type, .size = sizeof(attr), .config = config, .disabled = 1,
	};
	int err = open_counter(&attr);

	/* perf_event_paranoid 2 leaves a user only their own user-space counts, as perf retries */
	if (err == -EACCES || err == -EPERM) {
		attr.exclude_kernel = attr.exclude_hv = 1;
		err = open_counter(&attr);
	}
	return err;
}
