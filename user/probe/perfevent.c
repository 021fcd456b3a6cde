// SPDX-License-Identifier: GPL-2.0
/* The names are perf's (tools/perf/util/parse-events.c, evsel.c), so that what a perf user
 * types means the same here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "probe/perfevent.h"

#define SW(name, alias, cfg, clock) { name, alias, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_##cfg, clock }
#define HW(name, alias, cfg) { name, alias, PERF_TYPE_HARDWARE, PERF_COUNT_HW_##cfg, false }

/* perf list's "Software event" and "Hardware event" sections, in its order. */
static const struct perfev_desc table[] = {
	SW("alignment-faults", NULL, ALIGNMENT_FAULTS, false),
	SW("bpf-output", NULL, BPF_OUTPUT, false),
	SW("cgroup-switches", NULL, CGROUP_SWITCHES, false),
	SW("context-switches", "cs", CONTEXT_SWITCHES, false),
	SW("cpu-clock", NULL, CPU_CLOCK, true),
	SW("cpu-migrations", "migrations", CPU_MIGRATIONS, false),
	SW("dummy", NULL, DUMMY, false),
	SW("emulation-faults", NULL, EMULATION_FAULTS, false),
	SW("major-faults", NULL, PAGE_FAULTS_MAJ, false),
	SW("minor-faults", NULL, PAGE_FAULTS_MIN, false),
	SW("page-faults", "faults", PAGE_FAULTS, false),
	SW("task-clock", NULL, TASK_CLOCK, true),
	HW("branch-instructions", "branches", BRANCH_INSTRUCTIONS),
	HW("branch-misses", NULL, BRANCH_MISSES),
	HW("bus-cycles", NULL, BUS_CYCLES),
	HW("cache-misses", NULL, CACHE_MISSES),
	HW("cache-references", NULL, CACHE_REFERENCES),
	HW("cpu-cycles", "cycles", CPU_CYCLES),
	HW("instructions", NULL, INSTRUCTIONS),
	HW("ref-cycles", NULL, REF_CPU_CYCLES),
	HW("stalled-cycles-backend", "idle-cycles-backend", STALLED_CYCLES_BACKEND),
	HW("stalled-cycles-frontend", "idle-cycles-frontend", STALLED_CYCLES_FRONTEND),
};

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

const struct perfev_desc *perfev_table(size_t *nr)
{
	*nr = sizeof(table) / sizeof(table[0]);
	return table;
}

bool perfev_cache_event(size_t i, char *buf, size_t size, __u64 *config)
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

int perfev_lookup(const char *name, __u32 *type, __u64 *config)
{
	struct perfev ev;
	char buf[64];

	if (!strchr(name, ':') && !perfev_parse(name, &ev)) {
		*type = ev.desc->type;
		*config = ev.desc->config;
		return 0;
	}
	for (size_t i = 0; perfev_cache_event(i, buf, sizeof(buf), config); i++) {
		if (!strcmp(name, buf)) {
			*type = PERF_TYPE_HW_CACHE;
			return 0;
		}
	}
	return -ENOENT;
}

int perfev_parse(const char *text, struct perfev *ev)
{
	size_t len = strcspn(text, ":");
	const char *mod = text[len] ? text + len + 1 : NULL;

	memset(ev, 0, sizeof(*ev));
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]) && !ev->desc; i++)
		if ((strlen(table[i].name) == len && !strncmp(table[i].name, text, len)) ||
		    (table[i].alias && strlen(table[i].alias) == len &&
		     !strncmp(table[i].alias, text, len)))
			ev->desc = &table[i];
	if (!ev->desc)
		return -ENOENT;
	if (!mod)
		return 0;
	/* perf's modifiers: u (user), k (kernel); "uk" is both, as no modifier */
	if (!*mod || strspn(mod, "uk") != strlen(mod)) {
		ev->desc = NULL;
		return -EINVAL;
	}
	ev->exclude_user = !strchr(mod, 'u');
	ev->exclude_kernel = !strchr(mod, 'k');
	return 0;
}

static void fill_attr(const struct perfev *ev, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = ev->desc->type;
	attr->config = ev->desc->config;
	attr->exclude_user = ev->exclude_user;
	attr->exclude_kernel = ev->exclude_kernel;
	attr->exclude_hv = ev->exclude_kernel;
}

int perfev_open_counter(const struct perfev *ev, const struct perfev_slot *slot, unsigned flags)
{
	struct perf_event_attr attr;
	unsigned long pflags = PERF_FLAG_FD_CLOEXEC;
	int fd;

	fill_attr(ev, &attr);
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr.inherit = !!(flags & PERFEV_INHERIT);
	/* perf stat's way with a command: disabled until the exec, so the fork is not counted */
	attr.disabled = attr.enable_on_exec = !!(flags & PERFEV_ENABLE_ON_EXEC);
	if (flags & PERFEV_CGROUP)
		pflags |= PERF_FLAG_PID_CGROUP;
	fd = syscall(__NR_perf_event_open, &attr, slot->pid, slot->cpu, -1, pflags);
	return fd < 0 ? -errno : fd;
}

static int open_sampler(struct perf_event_attr *attr, int cpu)
{
	int fd = syscall(__NR_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int perfev_open_sampler(const struct perfev *ev, int cpu, __u64 period)
{
	struct perf_event_attr attr;

	fill_attr(ev, &attr);
	attr.sample_period = period;
	return open_sampler(&attr, cpu);
}

int perfev_open_sampler_freq(const struct perfev *ev, int cpu, __u64 freq)
{
	struct perf_event_attr attr;

	fill_attr(ev, &attr);
	attr.freq = 1;
	attr.sample_freq = freq;
	return open_sampler(&attr, cpu);
}

/* Opens and closes a disabled counter of the calling thread: 0 or -errno. */
static int try_counter(struct perf_event_attr *attr)
{
	int fd = syscall(__NR_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int perfev_probe(__u32 type, __u64 config)
{
	struct perf_event_attr attr = {
		.type = type, .size = sizeof(attr), .config = config, .disabled = 1,
	};
	int err = try_counter(&attr);

	/* perf_event_paranoid 2 leaves a user only their own user-space counts, as perf retries */
	if (err == -EACCES || err == -EPERM) {
		attr.exclude_kernel = attr.exclude_hv = 1;
		err = try_counter(&attr);
	}
	return err;
}

bool perfev_unsupported(int err)
{
	/* what perf stat prints as <not supported>: no PMU (ENOENT, ENODEV), no such counter on
	 * it (EOPNOTSUPP), a PMU the kernel does not drive (ENXIO) */
	return err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP || err == -ENXIO;
}

int perfev_read(int fd, struct perfev_value *v)
{
	ssize_t n = read(fd, v, sizeof(*v));

	if (n < 0)
		return -errno;
	return n == sizeof(*v) ? 0 : -EIO;
}

double perfev_scaled(const struct perfev_value *v)
{
	if (!v->running)
		return 0;
	if (v->running >= v->enabled)
		return v->count;
	return (double)v->count * v->enabled / v->running;
}
