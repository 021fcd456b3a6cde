// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
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

const struct perfev_desc *perfev_table(size_t *nr)
{
	*nr = sizeof(table) / sizeof(table[0]);
	return table;
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

int perfev_open_sampler(const struct perfev *ev, int cpu, __u64 period)
{
	struct perf_event_attr attr;
	int fd;

	fill_attr(ev, &attr);
	attr.sample_period = period;
	fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
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
