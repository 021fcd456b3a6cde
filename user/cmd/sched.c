/* bpfprof sched: per-task scheduler latency (perf sched record + latency), aggregated in the kernel. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cmd/cmds.h"
#include "core/common.h"
#include "out/outfile.h"
#include "schedlat.h"
#include "sched.skel.h"
#include "out/schedtable.h"
#include "cmd/schedtp.h"

static struct sched_env {
	struct schedtp_targets targets;
	bool by_comm, force_raw;
	enum sched_sort_key sort;
	double duration;
	__u64 max_tasks;
	const char *out_path;
} env;

static const char usage[] =
"Usage: bpfprof sched [options] [DURATION]\n"
"Per-task scheduler latency, the table of 'perf sched latency' computed in the kernel: on-CPU\n"
"time, context switches, and the delays between becoming runnable and running.\n"
"Without DURATION (seconds), runs until Ctrl-C or every -p/-t target has exited.\n"
"\n"
"  -p, --pid PID[,PID...]   only these processes\n"
"  -t, --tid TID[,TID...]   only these threads\n"
"      --by-comm            one row per command name, like perf's comm:(N tasks)\n"
"  -s, --sort KEY           max (default), avg, runtime or switches\n"
"  -o, --output FILE        write the table to FILE\n"
"      --max-tasks N        tasks kept (default 16384)\n"
"      --raw-tp             use the raw_tp programs and hash maps even where tp_btf and task\n"
"                           storage work (for comparison)\n"
"  -v, --verbose            print libbpf messages and what was chosen\n"
"  -h, --help               this help\n";

enum { OPT_BY_COMM = 256, OPT_MAX_TASKS, OPT_RAW_TP };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "by-comm", no_argument, NULL, OPT_BY_COMM },
	{ "sort", required_argument, NULL, 's' },
	{ "output", required_argument, NULL, 'o' },
	{ "max-tasks", required_argument, NULL, OPT_MAX_TASKS },
	{ "raw-tp", no_argument, NULL, OPT_RAW_TP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* Returns 0, 1 for --help, or -EINVAL (message printed). */
static int parse_args(int argc, char **argv)
{
	int opt;

	env.max_tasks = 16384;
	env.sort = SCHED_SORT_MAX;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:t:s:o:vh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_task_ids(optarg, env.targets.pids, SCHEDTP_MAX_IDS, false,
					   &env.targets.nr_pids))
				return -EINVAL;
			break;
		case 't':
			if (parse_task_ids(optarg, env.targets.tids, SCHEDTP_MAX_IDS, true,
					   &env.targets.nr_tids))
				return -EINVAL;
			break;
		case OPT_BY_COMM:
			env.by_comm = true;
			break;
		case 's':
			if (sched_sort_key_parse(optarg, &env.sort)) {
				p_err("invalid --sort '%s' (expected max, avg, runtime or switches)",
				      optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			env.out_path = optarg;
			break;
		case OPT_MAX_TASKS:
			if (parse_u64(optarg, 1, 1 << 22, &env.max_tasks)) {
				p_err("invalid --max-tasks '%s' (1 to %d)", optarg, 1 << 22);
				return -EINVAL;
			}
			break;
		case OPT_RAW_TP:
			env.force_raw = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			return getopt_error(opt, argv, usage);
		}
	}
	if (optind < argc) {
		if (parse_seconds(argv[optind], &env.duration)) {
			p_err("invalid duration '%s' (expected seconds > 0)", argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		p_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static int configure(struct sched_bpf *skel)
{
	bool use_btf = schedtp_use_btf(env.force_raw);
	int err;

	/* filters and the flavour are read-only globals, fixed before load */
	skel->rodata->filter_tgid = env.targets.nr_pids > 0;
	skel->rodata->filter_pid = env.targets.nr_tids > 0;
	skel->rodata->targ_prev_state_arg = schedtp_switch_has_prev_state();
	skel->rodata->targ_task_storage = use_btf;
	/* tp_btf + task storage where the kernel has both, raw_tp + hash otherwise */
	err = schedtp_configure(skel->obj, use_btf, skel->maps.tasks, skel->maps.tasks_hash,
				env.max_tasks, skel->progs.prefill);
	if (err)
		return err;
	err = bpf_map__set_max_entries(skel->maps.stats, env.max_tasks);
	if (err)
		p_err("cannot configure the BPF maps: %s", strerror(-err));
	return err;
}

static __u64 bytes_read;

/* Reads `stats` into a malloc'd array of rows. */
static int read_rows(struct sched_bpf *skel, struct sched_row **rowsp, size_t *nr)
{
	int fd = bpf_map__fd(skel->maps.stats);
	struct sched_key key, next, *keyp = NULL;
	struct sched_row *rows = NULL, *grown;
	struct sched_row_raw raw;
	size_t n = 0, cap = 0;

	while (bpf_map_get_next_key(fd, keyp, &next) == 0) {
		key = next;
		keyp = &key;
		if (bpf_map_lookup_elem(fd, &key, &raw))
			continue;
		bytes_read += sizeof(key) + sizeof(raw);
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			grown = realloc(rows, cap * sizeof(*rows));
			if (!grown) {
				free(rows);
				return -ENOMEM;
			}
			rows = grown;
		}
		memset(&rows[n], 0, sizeof(rows[n]));
		memcpy(rows[n].comm, raw.comm, sizeof(raw.comm));
		rows[n].comm[SCHED_COMM_LEN - 1] = '\0';
		rows[n].pid = raw.pid;
		rows[n].tgid = raw.tgid;
		rows[n].nr_tasks = 1;
		rows[n].s = raw.s;
		n++;
	}
	*rowsp = rows;
	*nr = n;
	return 0;
}

static int write_table(struct sched_row *rows, size_t n)
{
	struct sched_table_opts o = { .by_comm = env.by_comm };
	struct outfile of = {};
	FILE *out = stdout;
	int err;

	if (env.by_comm)
		n = sched_rows_merge_by_comm(rows, n);
	sched_rows_sort(rows, n, env.sort);
	if (env.out_path) {
		out = outfile_open(env.out_path, &of);
		if (!out) {
			err = -errno;
			p_err("cannot write %s: %s", env.out_path, strerror(-err));
			return err;
		}
	}
	err = sched_table_write(out, rows, n, &o);
	if (env.out_path) {
		err = err ?: outfile_commit(&of);
		if (err)
			outfile_abort(&of);
	}
	if (err)
		p_err("cannot write %s: %s", env.out_path ? env.out_path : "the table", strerror(-err));
	return err;
}

static void report_lost(const struct sched_bpf *skel)
{
	const __u64 *lost = (const __u64 *)skel->bss->lost;

	if (lost[SCHED_LOST_STATS_FULL] || lost[SCHED_LOST_TASKS])
		p_err("not counted: %llu tasks (task table full, raise --max-tasks), %llu events "
		      "(no per-task state: allocation failed or table full)",
		      (unsigned long long)lost[SCHED_LOST_STATS_FULL],
		      (unsigned long long)lost[SCHED_LOST_TASKS]);
	p_info("%llu tasks without storage after the prefill",
	       (unsigned long long)lost[SCHED_LOST_PREFILL]);
}

static void wait_for_end(void)
{
	__u64 deadline = env.duration ? now_ns() + (__u64)(env.duration * 1e9) : 0;
	struct timespec ts = { 0, 100000000 };

	while (!exiting) {
		__u64 now = now_ns();

		if (deadline && now >= deadline)
			break;
		if (schedtp_targets_gone(&env.targets)) {
			p_info("every target has exited");
			break;
		}
		ts.tv_nsec = deadline && deadline - now < 100000000ULL ? deadline - now : 100000000;
		nanosleep(&ts, NULL);
	}
}

int cmd_sched(int argc, char **argv)
{
	struct sched_bpf *skel = NULL;
	struct schedtp_links links = {};
	struct sched_row *rows = NULL;
	size_t nr = 0;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();

	skel = sched_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	err = configure(skel);
	if (err)
		goto cleanup;
	err = sched_bpf__load(skel);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	/* filters, task storage, then the tracepoints */
	err = schedtp_start(skel->obj, &env.targets, skel->maps.tgids, skel->maps.pids,
			    skel->progs.prefill, &links);
	if (err)
		goto cleanup;

	printf("Tracing scheduler events... Hit Ctrl-C to end.\n");
	fflush(stdout);
	wait_for_end();
	/* stop counting: the table describes exactly the run */
	schedtp_detach(&links);

	/* copies every live task's statistics into `stats` */
	err = schedtp_run_task_iter(skel->progs.dump_tasks, "reads the live tasks");
	err = err ?: read_rows(skel, &rows, &nr);
	if (err) {
		if (err == -ENOMEM)
			p_err("cannot read the statistics: %s", strerror(-err));
		goto cleanup;
	}
	report_lost(skel);
	p_info("read %llu bytes of statistics from BPF maps", (unsigned long long)bytes_read);
	err = write_table(rows, nr);
cleanup:
	schedtp_detach(&links);
	sched_bpf__destroy(skel);
	free(rows);
	return err ? 1 : 0;
}
