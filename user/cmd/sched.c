// SPDX-License-Identifier: GPL-2.0
/* bpfprof sched: per-task scheduler latency (perf sched record + latency), aggregated in the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "cmd/schedtp.h"
#include "core/common.h"
#include "core/runner.h"
#include "out/schedtable.h"
#include "schedlat.h"
#include "sched.skel.h"

RUNNER_SKELETON(sched);

static int opt_sort(const char *arg);

static struct sched_env {
	bool by_comm, force_raw;
	bool timehist, wakeups, migrations, cpu_visual;
	unsigned visual_cpus;    /* -V: the width of its column, 0 without it */
	bool summary, with_summary, state, idle_hist; /* --summary -S --task-state --idle-hist */
	bool idle;               /* <idle> rows: system-wide, as perf shows them */
	__u64 *idle_ns;          /* --summary: each CPU's idle time */
	int ncpu;
	__u64 buffer_mb;
	__u64 rows_printed;
	int write_err;
	struct bpf_link *migrate_link;
	enum sched_sort_key sort;
	__u64 max_tasks;
	struct schedtp_links links;
	struct sched_row *rows;
	size_t nr_rows;
	__u64 bytes_read;
} env;

static const struct opt sched_opts[] = {
	{ 0, "by-comm", NULL, "one row per command name, like perf's comm:(N tasks)", OPT_FLAG,
	  &env.by_comm },
	{ 's', "sort", "KEY", "max (default), avg, runtime or switches (perf's switch)",
	  OPT_FN, .fn = opt_sort },
	{ 0, "max-tasks", "N", "tasks kept (default 16384)", OPT_U64, &env.max_tasks, 1, 1 << 22 },
	{ 0, "timehist", NULL, "one line per switch-out, like perf sched timehist: wait time,\n"
	  "scheduling delay and run time, computed in the kernel", OPT_FLAG, &env.timehist },
	{ 'w', "wakeups", NULL, "--timehist: also a line per wakeup of a traced task", OPT_FLAG,
	  &env.wakeups },
	{ 'M', "migrations", NULL, "--timehist: also a line per migration of a traced task",
	  OPT_FLAG, &env.migrations },
	{ 'V', "cpu-visual", NULL, "--timehist: perf's CPU column, one character per CPU: s a\n"
	  "switch there, i the idle task's, m a migration", OPT_FLAG, &env.cpu_visual },
	{ 0, "summary", NULL, "--timehist: only perf sched timehist -s's runtime summary per\n"
	  "task (switches, run time, min/avg/max run, stddev), counted in\n"
	  "the kernel, and each CPU's idle time", OPT_FLAG, &env.summary },
	{ 'S', "with-summary", NULL, "--timehist: the rows, then the summary", OPT_FLAG,
	  &env.with_summary },
	{ 0, "task-state", NULL, "--timehist: the task's state at switch-out (perf's --state\n"
	  "column: R preempted, S sleeping, D uninterruptible, I idle...;\n"
	  "--state is offcpu's filter)", OPT_FLAG, &env.state },
	{ 0, "idle-hist", NULL, "--timehist: only the switches from or to an idle task (perf's\n"
	  "-I; -I is an interval in bpfprof's grammar)", OPT_FLAG,
	  &env.idle_hist },
	{ 0, "buffer-size", "MB", "--timehist: ring buffer size (default 16; rows that find it\n"
	  "full are counted and reported)", OPT_U64, &env.buffer_mb, 1, 4096 },
	{ 0, "raw-tp", NULL, "use the raw_tp programs and hash maps even where\n"
	  "tp_btf and task storage work (for comparison)", OPT_FLAG, &env.force_raw },
	{},
};

static int opt_sort(const char *arg)
{
	char first[16];

	/* perf's -s takes a list; here the other keys always break ties, in their fixed order */
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(arg, ","), arg);
	if (strchr(arg, ',') && !sched_sort_key_parse(first, &env.sort)) {
		p_err("invalid --sort '%s' (one key: ties are ordered by the others, max, avg, "
		      "runtime, switches)", arg);
		return -EINVAL;
	}
	if (sched_sort_key_parse(arg, &env.sort)) {
		p_err("invalid --sort '%s' (expected max, avg, runtime or switches)", arg);
		return -EINVAL;
	}
	return 0;
}

static int sched_check(struct runner *r)
{
	if ((env.wakeups || env.migrations || env.cpu_visual || env.buffer_mb || env.summary ||
	     env.with_summary || env.state || env.idle_hist) && !env.timehist) {
		p_err("-w, -M, -V, --summary, -S, --task-state, --idle-hist and --buffer-size need "
		      "--timehist");
		return -EINVAL;
	}
	if (env.summary && (env.with_summary || env.wakeups || env.migrations || env.cpu_visual ||
			    env.state)) {
		p_err("--summary prints the summary only: -S, -w, -M, -V and --task-state are rows' "
		      "options");
		return -EINVAL;
	}
	if (env.cpu_visual) {
		int n = nr_cpus_possible();

		env.visual_cpus = n < TIMEHIST_VISUAL_MAX ? n : TIMEHIST_VISUAL_MAX;
	}
	/* perf shows every CPU's idle task when it sees every CPU's switches */
	env.idle = env.timehist && !targets_by_id(&targets) && !targets.cgroup &&
		   !targets.user_only && !targets.kernel_only;
	if (env.idle_hist && !env.idle) {
		p_err("--idle-hist shows the switches from and to the idle tasks: it needs every task (no -p, "
		      "-t, --cgroup, -u, -k or COMMAND)");
		return -EINVAL;
	}
	if (env.timehist && (env.by_comm || env.sort)) {
		p_err("--timehist prints rows in time order: --by-comm and --sort do not apply");
		return -EINVAL;
	}
	return 0;
}

static int sched_configure(struct runner *r)
{
	struct sched_bpf *skel = r->skel;
	bool use_btf = schedtp_use_btf(env.force_raw);
	__u64 rb_size = 4096;
	int err;

	/* --summary: no rows, the kernel's per-task statistics only */
	skel->rodata->targ_timehist = env.timehist && !env.summary;
	skel->rodata->targ_idle = env.idle;
	skel->rodata->targ_idle_hist = env.idle_hist;
	skel->rodata->targ_wakeups = env.wakeups;
	skel->rodata->targ_migrations = env.migrations;
	if (env.timehist && !env.summary)
		rb_size = (env.buffer_mb ?: 16) << 20;
	skel->rodata->targ_wakeup_bytes = rb_size / 8;
	err = bpf_map__set_max_entries(skel->maps.rows, rb_size);
	err = err ?: bpf_program__set_autoload(skel->progs.migrate_raw, env.migrations);
	if (err) {
		p_err("cannot configure the BPF maps: %s", strerror(-err));
		return err;
	}

	if (!env.max_tasks)
		env.max_tasks = 16384;
	/* the flavour is a read-only global, fixed before load */
	skel->rodata->targ_prev_state_arg = schedtp_switch_has_prev_state();
	skel->rodata->targ_task_storage = use_btf;
	/* the table: the kernel's on-CPU time and waits; --timehist: perf's clock-timed events */
	skel->rodata->targ_run_wall = env.timehist;
	skel->rodata->targ_sched_info = schedtp_use_sched_info(
		env.timehist ? "--timehist times them as perf sched timehist does" : NULL);
	/* tp_btf + task storage where the kernel has both, raw_tp + hash otherwise */
	err = schedtp_configure(skel->obj, use_btf, skel->rodata->targ_sched_info, skel->maps.tasks,
				skel->maps.tasks_hash, env.max_tasks, skel->progs.prefill);
	/* the raw_tp flavour's hash gets the same start where the kernel has task iterators */
	err = err ?: bpf_program__set_autoload(skel->progs.prefill_hash, !use_btf);
	if (err)
		return err;
	/* read at the end by a task iterator, run on demand */
	bpf_program__set_autoattach(skel->progs.dump_tasks, false);
	err = bpf_map__set_max_entries(skel->maps.stats, env.max_tasks);
	if (err)
		p_err("cannot configure the BPF maps: %s", strerror(-err));
	return err;
}

/* -V's column for a row: the CPU's mark, blank for a wakeup (as perf prints them) */
static const char *visual_column(const struct timehist_row *row, char *buf)
{
	char mark = row->kind == TIMEHIST_SWITCH ? (row->pid ? 's' : 'i') :
		    row->kind == TIMEHIST_MIGRATE ? 'm' : ' ';

	if (!env.visual_cpus)
		return "";
	timehist_cpu_visual(buf, env.visual_cpus, row->cpu, mark);
	strcat(buf, "  ");
	return buf;
}

/* Writes one --timehist row in perf sched timehist's layout. */
static int on_row(void *ctx, void *data, size_t size)
{
	const struct timehist_row *row = data;
	struct runner *r = ctx;
	char task[64], other[64], visual[TIMEHIST_VISUAL_MAX + 3];

	if (size < sizeof(*row))
		return 0;
	timehist_task_name(task, sizeof(task), row->comm, row->pid, row->tgid);
	fprintf(r->out, "%15.6f [%04u]  %s%-30s", row->ts / 1e9, row->cpu,
		visual_column(row, visual), task);
	switch (row->kind) {
	case TIMEHIST_SWITCH:
		fprintf(r->out, "  %9.3f  %9.3f  %9.3f", row->wait_ns / 1e6, row->delay_ns / 1e6,
			row->run_ns / 1e6);
		if (env.state)
			fprintf(r->out, "  %5c", row->pid ? timehist_state_char(row->state) : 'I');
		fputc('\n', r->out);
		break;
	case TIMEHIST_WAKEUP:
		timehist_task_name(other, sizeof(other), row->other_comm, row->other_pid,
				   row->other_tgid);
		fprintf(r->out, "%33s  awakened: %s\n", "", other);
		break;
	case TIMEHIST_MIGRATE:
		timehist_task_name(other, sizeof(other), row->other_comm, row->other_pid,
				   row->other_tgid);
		fprintf(r->out, "%33s  migrated: %s cpu %u => %u\n", "", other, row->orig_cpu,
			row->dest_cpu);
		break;
	}
	env.rows_printed++;
	/* a closed pipe or a full disk ends the run instead of losing rows silently */
	if (ferror(r->out)) {
		env.write_err = errno ? -errno : -EIO;
		return env.write_err;
	}
	return 0;
}

/* task storage first, then the tracepoints, sched_switch first */
static int sched_attach(struct runner *r)
{
	struct sched_bpf *skel = r->skel;
	int err;

	err = schedtp_start(skel->obj,
			    skel->rodata->targ_task_storage ? skel->progs.prefill : skel->progs.prefill_hash,
			    &env.links);
	if (!err && env.migrations) {
		env.migrate_link = bpf_program__attach(skel->progs.migrate_raw);
		if (!env.migrate_link) {
			err = -errno;
			explain_bpf_error("cannot attach sched_migrate_task", err);
		}
	}
	if (!err && env.timehist)
		err = runner_add_ringbuf(r, skel->maps.rows, on_row, r);
	return err;
}

/* The rows written since the last wakeup: the kernel wakes the reader only for a full eighth of
 * the buffer. */
static int sched_tick(struct runner *r)
{
	if (env.timehist && r->rb && !env.write_err)
		ring_buffer__consume(r->rb);
	/* the output is gone (a closed pipe, a full disk): the run ends, and says so */
	return env.write_err ? 1 : 0;
}

/* the column heads, before the banner and the first row */
static int sched_started(struct runner *r)
{
	if (env.timehist && !env.summary)
		timehist_header(r->out, env.state, env.visual_cpus);
	return 0;
}

/* counting stops: the table describes exactly the run */
static void sched_detach(struct runner *r)
{
	schedtp_detach(&env.links);
	bpf_link__destroy(env.migrate_link);
	env.migrate_link = NULL;
}

/* Reads `stats` into a malloc'd array of rows. */
static int read_rows(struct sched_bpf *skel, struct sched_row **rowsp, size_t *nr)
{
	int fd = bpf_map__fd(skel->maps.stats);
	struct sched_key key, next, *keyp = NULL;
	struct sched_row *rows = NULL;
	struct sched_row_raw raw;
	size_t n = 0, cap = 0;

	while (bpf_map_get_next_key(fd, keyp, &next) == 0) {
		key = next;
		keyp = &key;
		if (bpf_map_lookup_elem(fd, &key, &raw))
			continue;
		env.bytes_read += sizeof(key) + sizeof(raw);
		if (ARRAY_GROW(rows, cap, n + 1)) {
			free(rows);
			return -ENOMEM;
		}
		memset(&rows[n], 0, sizeof(rows[n]));
		memcpy(rows[n].comm, raw.comm, sizeof(raw.comm));
		rows[n].comm[SCHED_COMM_LEN - 1] = '\0';
		rows[n].pid = raw.pid;
		rows[n].tgid = raw.tgid;
		rows[n].nr_tasks = 1;
		rows[n].s = raw.s;
		rows[n].ppid = raw.ppid;
		rows[n].dead = raw.dead;
		n++;
	}
	*rowsp = rows;
	*nr = n;
	return 0;
}

static int write_table(FILE *out, struct sched_row *rows, size_t n)
{
	struct sched_table_opts o = { .by_comm = env.by_comm };
	int err;

	if (env.by_comm)
		n = sched_rows_merge_by_comm(rows, n);
	sched_rows_sort(rows, n, env.sort);
	err = sched_table_write(out, rows, n, &o);
	if (err)
		runner_report_failed(err);
	return err;
}

static void report_lost(const struct sched_bpf *skel)
{
	const __u64 *lost = (const __u64 *)skel->bss->lost;

	if (env.timehist)
		fprintf(stderr, "bpfprof: %llu rows printed, %llu dropped%s\n",
			(unsigned long long)env.rows_printed,
			(unsigned long long)lost[SCHED_LOST_ROWS],
			lost[SCHED_LOST_ROWS] ? " (ring buffer full: raise --buffer-size)" : "");

	if (lost[SCHED_LOST_STATS_FULL] || lost[SCHED_LOST_TASKS])
		p_err("not counted: %llu tasks (task table full, raise --max-tasks), %llu events "
		      "(no per-task state: allocation failed or table full)",
		      (unsigned long long)lost[SCHED_LOST_STATS_FULL],
		      (unsigned long long)lost[SCHED_LOST_TASKS]);
	p_info("%llu tasks without storage after the prefill",
	       (unsigned long long)lost[SCHED_LOST_PREFILL]);
	if (skel->rodata->targ_sched_info)
		p_info("%llu waits ended at switches no sched_switch event showed (in the totals "
		       "and averages, not in the maxima)", (unsigned long long)skel->bss->unseen);
}


/* --summary: each CPU's idle time */
static int read_idle(struct sched_bpf *skel)
{
	__u32 zero = 0;

	env.ncpu = nr_cpus_possible();
	if (env.ncpu <= 0)
		return -EINVAL;
	env.idle_ns = calloc(env.ncpu, sizeof(*env.idle_ns));
	if (!env.idle_ns)
		return -ENOMEM;
	return bpf_map__lookup_elem(skel->maps.idle_ns, &zero, sizeof(zero), env.idle_ns,
				    env.ncpu * sizeof(*env.idle_ns), 0);
}

/* Every live task's statistics copied into `stats` (a task iterator), then the whole map. */
static int sched_collect(struct runner *r)
{
	struct sched_bpf *skel = r->skel;
	int err;

	if (env.timehist && env.write_err) {
		runner_report_failed(env.write_err);
		return env.write_err;
	}
	if (env.timehist && !env.summary && !env.with_summary)
		return 0;
	if (env.timehist) {
		err = read_idle(skel);
		if (err)
			return err;
	}
	err = schedtp_run_task_iter(skel->progs.dump_tasks, "reads the live tasks");
	err = err ?: read_rows(skel, &env.rows, &env.nr_rows);
	if (err == -ENOMEM)
		p_err("cannot read the statistics: %s", strerror(-err));
	return err;
}

static int sched_write(struct runner *r)
{
	report_lost(r->skel);
	if (env.timehist && (env.summary || env.with_summary)) {
		struct timehist_summary_opts o = { .idle_ns = env.idle ? env.idle_ns : NULL,
						   .ncpu = env.ncpu, .sumsq_shift = SCHED_SUMSQ_SHIFT };
		int err = timehist_summary_write(r->out, env.rows, env.nr_rows, &o);

		if (err)
			runner_report_failed(err);
		return err;
	}
	if (env.timehist)
		return 0;
	p_info("read %llu bytes of statistics from BPF maps", (unsigned long long)env.bytes_read);
	return write_table(r->out, env.rows, env.nr_rows);
}

static void sched_teardown(struct runner *r)
{
	schedtp_detach(&env.links);
	bpf_link__destroy(env.migrate_link);
	free(env.rows);
	free(env.idle_ns);
	memset(&env, 0, sizeof(env));
}

const struct command sched_cmd = {
	.name = "sched",
	.summary = "per-task scheduler latency table (perf sched latency, in-kernel)",
	.description =
		"Per-task scheduler latency, the table of 'perf sched latency' computed in the kernel:\n"
		"on-CPU time and run-queue delays as the kernel accounts them (schedstat: without a\n"
		"VM's steal time), and context switches.\n"
		"With --timehist, one line per switch-out in time order instead, as 'perf sched\n"
		"timehist' prints: time (CLOCK_MONOTONIC), CPU, task[tid/pid], wait time (off the\n"
		"CPU before this run), sch delay (of which waiting on a run queue) and run time\n"
		"(wall-clock, switch-in to switch-out), in ms, computed in the kernel at each\n"
		"switch so that only finished rows reach user space.  System-wide, each CPU's idle\n"
		"task has its rows too (<idle>), as perf's.\n"
		"--summary (perf's timehist -s; -s is --sort here) prints the per-task runtime\n"
		"summary instead, -S after the rows.",
	.caps = CAP_THREAD_KIND,
	.positional = POS_DURATION,
	.opts = sched_opts,
	.skel = &sched_skel,
	.check = sched_check,
	.configure = sched_configure,
	.attach = sched_attach,
	.started = sched_started,
	.tick = sched_tick,
	.banner = "Tracing scheduler events... Hit Ctrl-C to end.",
	.detach = sched_detach,
	.collect = sched_collect,
	.write = sched_write,
	.teardown = sched_teardown,
};
