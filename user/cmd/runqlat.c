/* bpfprof runqlat: run-queue latency histograms, aggregated in the kernel. */
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
#include "core/hashtab.h"
#include "core/heatmaprun.h"
#include "out/hist.h"
#include "runqlat.h"
#include "runqlat.skel.h"
#include "cmd/schedtp.h"

static struct runqlat_env {
	bool ms, timestamp, force_raw;
	enum runqlat_key key;
	struct schedtp_targets targets;
	double interval;  /* seconds; 0: one report at the end */
	__u64 count;      /* reports; 0: until Ctrl-C */
	__u64 max_entries;
	struct heatmap_run heatmap;
} env;

static const char usage[] =
"Usage: bpfprof runqlat [options] [INTERVAL [COUNT]]\n"
"Summarize run-queue latency as histograms counted in the kernel: the time from a task\n"
"becoming runnable (woken, or preempted while still runnable) until it runs on a CPU.\n"
"Without INTERVAL, one report at Ctrl-C (or when every -p/-t target has exited); with\n"
"INTERVAL (seconds), a report every INTERVAL, COUNT times or until Ctrl-C.\n"
"\n"
"  -m, --milliseconds        millisecond histograms (default microseconds)\n"
"  -P, --pids                one histogram per process\n"
"  -L, --tids                one histogram per thread\n"
"      --pidnss              one histogram per PID namespace\n"
"  -p, --pid PID[,PID...]    only these processes\n"
"  -t, --tid TID[,TID...]    only these threads\n"
"  -T, --timestamp           print the time before each report\n"
"      --heatmap FILE.svg    also write a latency heat map (time x latency) for the whole run\n"
"      --heatmap-data FILE   also write the heat map's counts as TSV\n"
"      --heatmap-interval S  heat map column width in seconds (default: about 100 columns\n"
"                            over INTERVAL x COUNT, else 1)\n"
"      --max-entries N       histograms kept with -P, -L or --pidnss (default 10240)\n"
"      --raw-tp              use the raw_tp programs and hash maps even where tp_btf and task\n"
"                            storage work (for comparison)\n"
"  -v, --verbose             print libbpf messages and what was chosen\n"
"  -h, --help                this help\n";

enum { OPT_PIDNSS = 256, OPT_HEATMAP, OPT_HEATMAP_DATA, OPT_HEATMAP_INTERVAL, OPT_MAX_ENTRIES,
       OPT_RAW_TP };

static const struct option long_opts[] = {
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "pids", no_argument, NULL, 'P' },
	{ "tids", no_argument, NULL, 'L' },
	{ "pidnss", no_argument, NULL, OPT_PIDNSS },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "heatmap", required_argument, NULL, OPT_HEATMAP },
	{ "heatmap-data", required_argument, NULL, OPT_HEATMAP_DATA },
	{ "heatmap-interval", required_argument, NULL, OPT_HEATMAP_INTERVAL },
	{ "max-entries", required_argument, NULL, OPT_MAX_ENTRIES },
	{ "raw-tp", no_argument, NULL, OPT_RAW_TP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static int set_key(enum runqlat_key key)
{
	if (env.key != RUNQLAT_BY_NONE && env.key != key) {
		p_err("-P, -L and --pidnss exclude each other");
		return -EINVAL;
	}
	env.key = key;
	return 0;
}

/* Returns 0, 1 for --help, or -EINVAL (message printed). */
static int parse_args(int argc, char **argv)
{
	int opt;

	env.max_entries = 10240;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":mPLp:t:Tvh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			env.ms = true;
			break;
		case 'P':
			if (set_key(RUNQLAT_BY_TGID))
				return -EINVAL;
			break;
		case 'L':
			if (set_key(RUNQLAT_BY_PID))
				return -EINVAL;
			break;
		case OPT_PIDNSS:
			if (set_key(RUNQLAT_BY_PIDNS))
				return -EINVAL;
			break;
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
		case 'T':
			env.timestamp = true;
			break;
		case OPT_HEATMAP:
			env.heatmap.svg_path = optarg;
			break;
		case OPT_HEATMAP_DATA:
			env.heatmap.tsv_path = optarg;
			break;
		case OPT_HEATMAP_INTERVAL:
			if (parse_seconds(optarg, &env.heatmap.interval_s) ||
			    env.heatmap.interval_s < 0.001) {
				p_err("invalid --heatmap-interval '%s' (expected seconds, at least 0.001)",
				      optarg);
				return -EINVAL;
			}
			break;
		case OPT_MAX_ENTRIES:
			if (parse_u64(optarg, 1, 1 << 20, &env.max_entries)) {
				p_err("invalid --max-entries '%s' (1 to %d)", optarg, 1 << 20);
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
			/* "-1": getopt saw an option, the user meant INTERVAL */
			if (opt == '?' && is_negative_number(argv[optind - 1])) {
				p_err("invalid interval '%s' (expected seconds > 0)", argv[optind - 1]);
				return -EINVAL;
			}
			return getopt_error(opt, argv, usage);
		}
	}
	if (optind < argc) {
		if (parse_seconds(argv[optind], &env.interval)) {
			p_err("invalid interval '%s' (expected seconds > 0)", argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		if (parse_u64(argv[optind], 1, UINT32_MAX, &env.count)) {
			p_err("invalid count '%s' (expected a whole number, at least 1)", argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		p_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (env.heatmap.interval_s && !heatmap_run_enabled(&env.heatmap)) {
		p_err("--heatmap-interval needs --heatmap or --heatmap-data");
		return -EINVAL;
	}
	return 0;
}

/* The cumulative counts of one histogram at the previous report: the BPF maps are never cleared
 * (clearing races with the programs and loses counts), reports print the difference. */
struct snapshot {
	__u64 slots[RUNQLAT_SLOTS];
	__u64 sum_ns;
};

struct keyed_hist {
	__u32 key;
	char comm[RUNQLAT_COMM_LEN];
	struct snapshot delta;
};

static __u64 bytes_read; /* from BPF maps, for -v and the benchmark */

static const char *unit(void)
{
	return env.ms ? "msecs" : "usecs";
}

/* cur minus prev into delta; prev becomes cur.  Returns the number of delays in delta. */
static __u64 take_delta(const struct snapshot *cur, struct snapshot *prev, struct snapshot *delta)
{
	__u64 n = 0;

	for (int i = 0; i < RUNQLAT_SLOTS; i++) {
		delta->slots[i] = cur->slots[i] - prev->slots[i];
		n += delta->slots[i];
	}
	delta->sum_ns = cur->sum_ns - prev->sum_ns;
	*prev = *cur;
	return n;
}

static int print_hist(const struct snapshot *h)
{
	struct hist_layout l = { .kind = HIST_LOGLIN, .sub_shift = RUNQLAT_SUB_SHIFT };
	__u64 log2[RUNQLAT_MAX_LOG2], div = env.ms ? 1000000 : 1000;
	struct hist_summary s;
	int err;

	/* BCC's log2 rows to look at, percentiles from the finer slots */
	err = hist_loglin_to_log2(h->slots, RUNQLAT_SLOTS, RUNQLAT_SUB_SHIFT, log2, RUNQLAT_MAX_LOG2);
	if (err < 0)
		return err;
	err = hist_print_log2(stdout, log2, RUNQLAT_MAX_LOG2, unit());
	err = err ?: hist_summary(h->slots, RUNQLAT_SLOTS, &l, h->sum_ns / div, &s);
	return err ?: hist_print_summary(stdout, &s, unit());
}

static int report_single(struct runqlat_bpf *skel, struct snapshot *prev)
{
	int ncpu = nr_cpus_possible(), err;
	struct runqlat_hist *percpu;
	struct snapshot cur = {}, delta;
	__u32 key = 0;

	percpu = calloc(ncpu, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.hist), &key, percpu);
	if (err) {
		err = -errno;
		goto cleanup;
	}
	bytes_read += ncpu * sizeof(*percpu);
	for (int c = 0; c < ncpu; c++) {
		for (int i = 0; i < RUNQLAT_SLOTS; i++)
			cur.slots[i] += percpu[c].slots[i];
		cur.sum_ns += percpu[c].sum_ns;
	}
	take_delta(&cur, prev, &delta);
	printf("\n");
	err = print_hist(&delta);
cleanup:
	free(percpu);
	return err;
}

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed_hist *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static const char *key_name(void)
{
	switch (env.key) {
	case RUNQLAT_BY_TGID:
		return "pid";
	case RUNQLAT_BY_PID:
		return "tid";
	default:
		return "pidns";
	}
}

/* Reads every histogram of `hists`, prints those that changed since the last report, in key
 * order.  prevs holds the previous counts per key. */
static int report_keyed(struct runqlat_bpf *skel, struct hashtab *prevs)
{
	int fd = bpf_map__fd(skel->maps.hists), err = 0;
	struct keyed_hist *out = NULL, *grown;
	size_t nr = 0, cap = 0;
	struct runqlat_hist h;
	struct snapshot *prev, cur;
	__u32 key, next, *keyp = NULL;

	while (bpf_map_get_next_key(fd, keyp, &next) == 0) {
		key = next;
		keyp = &key;
		if (bpf_map_lookup_elem(fd, &key, &h))
			continue; /* removed meanwhile */
		bytes_read += sizeof(key) + sizeof(h);
		prev = hashtab_get(prevs, key, 0);
		if (!prev) {
			prev = calloc(1, sizeof(*prev));
			if (!prev || hashtab_put(prevs, key, 0, prev)) {
				free(prev);
				err = -ENOMEM;
				goto cleanup;
			}
		}
		memcpy(cur.slots, h.slots, sizeof(cur.slots));
		cur.sum_ns = h.sum_ns;
		if (nr == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(out, cap * sizeof(*out));
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			out = grown;
		}
		if (!take_delta(&cur, prev, &out[nr].delta))
			continue;
		out[nr].key = key;
		memcpy(out[nr].comm, h.comm, sizeof(h.comm));
		out[nr].comm[RUNQLAT_COMM_LEN - 1] = '\0';
		nr++;
	}
	qsort(out, nr, sizeof(*out), cmp_keyed);
	for (size_t i = 0; i < nr && !err; i++) {
		printf("\n%s = %u %s\n", key_name(), out[i].key, out[i].comm);
		err = print_hist(&out[i].delta);
	}
cleanup:
	free(out);
	return err;
}

static int report(struct runqlat_bpf *skel, struct snapshot *prev, struct hashtab *prevs)
{
	char buf[32];
	time_t t;
	int err;

	if (env.timestamp) {
		t = time(NULL);
		strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&t));
		printf("\n%s", buf);
	}
	if (env.key == RUNQLAT_BY_NONE)
		err = report_single(skel, prev);
	else
		err = report_keyed(skel, prevs);
	if (!err && (fflush(stdout) || ferror(stdout)))
		err = -(errno ?: EIO);
	if (err)
		p_err("cannot report: %s", strerror(-err));
	return err;
}

static void report_lost(const struct runqlat_bpf *skel)
{
	const __u64 *lost = (const __u64 *)skel->bss->lost;

	if (lost[RUNQLAT_LOST_HISTS_FULL] || lost[RUNQLAT_LOST_START])
		p_err("delays not counted: %llu (histogram table full, raise --max-entries), "
		      "%llu (enqueue time not recorded: allocation failed or table full)",
		      (unsigned long long)lost[RUNQLAT_LOST_HISTS_FULL],
		      (unsigned long long)lost[RUNQLAT_LOST_START]);
	p_info("%llu tasks without storage after the prefill",
	       (unsigned long long)lost[RUNQLAT_LOST_PREFILL]);
}

/* Sleeps until the deadline, Ctrl-C, or every target has exited. */
static bool wait_until(__u64 deadline)
{
	while (!exiting) {
		__u64 now = now_ns(), left;
		struct timespec ts;

		if (deadline && now >= deadline)
			return true;
		if (schedtp_targets_gone(&env.targets)) {
			p_info("every target has exited");
			return false;
		}
		left = deadline ? deadline - now : 100000000ULL;
		if (left > 100000000ULL)
			left = 100000000ULL;
		ts.tv_sec = 0;
		ts.tv_nsec = left;
		nanosleep(&ts, NULL);
	}
	return false;
}

static int configure(struct runqlat_bpf *skel)
{
	bool use_btf = schedtp_use_btf(env.force_raw);
	double duration = env.interval && env.count ? env.interval * env.count : 0;
	int err;

	/* filters, unit and keys are read-only globals, fixed before load */
	skel->rodata->filter_tgid = env.targets.nr_pids > 0;
	skel->rodata->filter_pid = env.targets.nr_tids > 0;
	skel->rodata->targ_prev_state_arg = schedtp_switch_has_prev_state();
	skel->rodata->targ_key = env.key;
	skel->rodata->targ_ms = env.ms;
	/* tp_btf + task storage where the kernel has both, raw_tp + hash otherwise */
	err = schedtp_configure(skel->obj, use_btf, skel->maps.start, skel->maps.start_hash,
				bpf_map__max_entries(skel->maps.start_hash), skel->progs.prefill);
	if (err)
		return err;
	err = bpf_map__set_max_entries(skel->maps.hists,
					     env.key == RUNQLAT_BY_NONE ? 1 : env.max_entries);
	err = err ?: heatmap_run_configure(&env.heatmap, skel->maps.heat, &skel->rodata->targ_heatmap,
					   &skel->rodata->targ_heatmap_cfg, duration);
	if (err)
		p_err("cannot configure the BPF maps: %s", strerror(-err));
	return err;
}

static void free_snapshot(void *p)
{
	free(p);
}

int cmd_runqlat(int argc, char **argv)
{
	struct runqlat_bpf *skel = NULL;
	struct schedtp_links links = {};
	struct hashtab prevs = {};
	struct snapshot prev = {};
	__u64 reports = 0, next;
	bool more = true;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();

	skel = runqlat_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	err = configure(skel);
	if (err)
		goto cleanup;
	err = runqlat_bpf__load(skel);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	/* filters, task storage, then the tracepoints */
	err = schedtp_start(skel->obj, &env.targets, skel->maps.tgids, skel->maps.pids,
			    skel->progs.prefill, &links);
	if (err)
		goto cleanup;

	printf("Tracing run queue latency... Hit Ctrl-C to end.\n");
	fflush(stdout);
	next = now_ns();
	while (more) {
		next += env.interval ? (__u64)(env.interval * 1e9) : 0;
		more = wait_until(env.interval ? next : 0);
		err = report(skel, &prev, &prevs);
		if (err)
			goto cleanup;
		if (env.count && ++reports >= env.count)
			break;
	}
	report_lost(skel);
	err = heatmap_run_write(&env.heatmap, skel->maps.heat, now_ns(), unit(),
				"Run Queue Latency Heat Map");
	p_info("read %llu bytes of histograms from BPF maps", (unsigned long long)bytes_read);
cleanup:
	schedtp_detach(&links);
	runqlat_bpf__destroy(skel);
	hashtab_clear(&prevs, free_snapshot);
	return err ? 1 : 0;
}
