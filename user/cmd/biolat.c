/* bpfprof biolat: block I/O latency histograms, percentiles and heat maps, counted in the kernel. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "biolat.h"
#include "biolat.skel.h"
#include "cmd/blkdev.h"
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/heatmaprun.h"
#include "out/hist.h"
#include "out/outfile.h"
#include "probe/probe.h"

#define NSEC_PER_SEC 1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define INTERVAL_MIN_NS (10 * NSEC_PER_MSEC)
#define INTERVAL_HINT "(seconds, at least 0.01)"
#define HEATMAP_INTERVAL_MIN_S 0.01
#define POLL_NS (100 * NSEC_PER_MSEC)
#define EVENTS_RING_SIZE (4 * 1024 * 1024)
/* In-flight map: at least this many entries; kept entries (targ_reuse) up to the most. */
#define START_ENTRIES_MIN 16384
#define START_ENTRIES_REUSE_MAX 131072

static struct biolat_env {
	bool millis, queued, per_disk, per_flags, timestamp;
	const char *disk;
	__u32 dev;
	__u32 pid;
	struct hist_layout layout;
	__u32 nr_slots;
	__u64 interval_ns; /* 0: print once, at the end */
	__u64 count;       /* 0: until Ctrl-C */
	const char *events_path;
	struct heatmap_run heatmap;
} env;

static const char usage[] =
"Usage: bpfprof biolat [options] [INTERVAL [COUNT]]\n"
"Block I/O latency, from issue (or insert, -Q) to completion, counted in the kernel.\n"
"Prints histograms every INTERVAL seconds, COUNT times; without INTERVAL, once at Ctrl-C.\n"
"\n"
"  -m, --milliseconds       histograms in milliseconds (default microseconds)\n"
"  -Q, --queued             include the time queued in the kernel (from insert)\n"
"  -D, --disks              one histogram per disk\n"
"  -F, --flags              one histogram per operation and flags (Read, Sync-Write...)\n"
"  -d, --disk DISK          only this disk (vda, loop0, /dev/nvme0n1)\n"
"  -p, --pid PID            only I/O submitted by this process (ends when it exits)\n"
"  -T, --timestamp          print the time before each interval's histograms\n"
"      --linear STEP[,N]    N linear buckets STEP units wide (default N 100; the last\n"
"                           holds everything above)\n"
"      --loglin K           2^K buckets per power of two (K 1-5), like bpftrace hist(n, K)\n"
"      --heatmap FILE.svg   write a latency heat map: time x latency, colour by count\n"
"      --heatmap-data FILE  write the heat map as TSV (header: row lower bounds)\n"
"      --heatmap-interval S heat map column width in seconds, at least 0.01 (default:\n"
"                           about 100 columns over INTERVAL x COUNT, 1 s without COUNT)\n"
"      --events FILE        write \"time latency\" (both in usecs) for every I/O, the two\n"
"                           columns trace2heatmap.pl reads\n"
"  -v, --verbose            print libbpf messages and what was chosen\n"
"  -h, --help               this help\n"
"\n"
"A heat map has at most 4096 columns: a run with COUNT must fit (error otherwise); a run\n"
"without COUNT ends when the heat map is full.\n";

enum { OPT_LINEAR = 256, OPT_LOGLIN, OPT_HEATMAP, OPT_HEATMAP_DATA, OPT_HEATMAP_INTERVAL,
       OPT_EVENTS };

static const struct option long_opts[] = {
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "queued", no_argument, NULL, 'Q' },
	{ "disks", no_argument, NULL, 'D' },
	{ "flags", no_argument, NULL, 'F' },
	{ "disk", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "linear", required_argument, NULL, OPT_LINEAR },
	{ "loglin", required_argument, NULL, OPT_LOGLIN },
	{ "heatmap", required_argument, NULL, OPT_HEATMAP },
	{ "heatmap-data", required_argument, NULL, OPT_HEATMAP_DATA },
	{ "heatmap-interval", required_argument, NULL, OPT_HEATMAP_INTERVAL },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static const char *unit_name(void)
{
	return env.millis ? "msecs" : "usecs";
}

static __u64 unit_ns(void)
{
	return env.millis ? NSEC_PER_MSEC : 1000;
}

/* "STEP" or "STEP,N". */
static int parse_linear(const char *arg)
{
	char buf[64], *comma;
	__u64 n = BIOLAT_LINEAR_SLOTS_DEFAULT;

	snprintf(buf, sizeof(buf), "%s", arg);
	comma = strchr(buf, ',');
	if (comma)
		*comma++ = '\0';
	if (parse_u64(buf, 1, 1ULL << 40, &env.layout.step) ||
	    (comma && parse_u64(comma, 2, BIOLAT_LINEAR_SLOTS_MAX, &n))) {
		p_err("invalid --linear '%s' (STEP >= 1 in %s, optionally ,N buckets with N 2-%d)",
		      arg, unit_name(), BIOLAT_LINEAR_SLOTS_MAX);
		return -EINVAL;
	}
	env.layout.kind = HIST_LINEAR;
	env.nr_slots = n;
	return 0;
}

static int parse_seconds_ns(const char *arg, __u64 min_ns, __u64 *ns)
{
	double s;

	if (parse_seconds(arg, &s) || s * 1e9 < (double)min_ns - 0.5)
		return -EINVAL;
	*ns = (__u64)llround(s * 1e9);
	return 0;
}

static int resolve_disk(void)
{
	char parent[64];
	int err = blk_disk_dev(env.disk, &env.dev, parent, sizeof(parent));

	if (err == -ENOTBLK) {
		p_err("'%s' is a partition; biolat times the requests of whole disks: use -d %s",
		      env.disk, parent[0] ? parent : "DISK");
		return err;
	}
	if (err) {
		p_err("disk '%s' not found (the disks are in /sys/block)", env.disk);
		return err;
	}
	return 0;
}

/* The heat map's columns must cover a run of known length: say so now rather than cut it. */
static int check_heatmap(void)
{
	double run_s = env.interval_ns * (double)env.count / 1e9, interval_s;

	if (!heatmap_run_enabled(&env.heatmap) || !env.count)
		return 0;
	interval_s = env.heatmap.interval_s ?: heatmap_run_default_interval(run_s);
	if (ceil(run_s / interval_s - 1e-9) > HEATMAP_MAX_COLS) {
		p_err("a %.2f s run needs %.0f heat map columns of %g s, more than the %d a heat "
		      "map has: use --heatmap-interval %.2f or more", run_s,
		      ceil(run_s / interval_s - 1e-9), interval_s, HEATMAP_MAX_COLS,
		      ceil(run_s * 100 / HEATMAP_MAX_COLS) / 100);
		return -E2BIG;
	}
	return 0;
}

static int parse_args(int argc, char **argv)
{
	__u64 v;
	int opt;

	env.layout.kind = HIST_LOG2;
	env.nr_slots = HIST_LOG2_SLOTS;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":mQDFd:p:Tvh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			env.millis = true;
			break;
		case 'Q':
			env.queued = true;
			break;
		case 'D':
			env.per_disk = true;
			break;
		case 'F':
			env.per_flags = true;
			break;
		case 'd':
			env.disk = optarg;
			break;
		case 'p': {
			pid_t pid;

			if (parse_pid(optarg, &pid))
				return -EINVAL;
			env.pid = pid;
			break;
		}
		case 'T':
			env.timestamp = true;
			break;
		case OPT_LINEAR:
			if (parse_linear(optarg))
				return -EINVAL;
			break;
		case OPT_LOGLIN:
			if (parse_u64(optarg, 1, HIST_LOGLIN_SHIFT_MAX, &v)) {
				p_err("invalid --loglin '%s' (K from 1 to %d: 2^K buckets per power of "
				      "two)", optarg, HIST_LOGLIN_SHIFT_MAX);
				return -EINVAL;
			}
			env.layout.kind = HIST_LOGLIN;
			env.layout.sub_shift = v;
			env.nr_slots = HIST_LOGLIN_SLOTS(v);
			break;
		case OPT_HEATMAP:
			env.heatmap.svg_path = optarg;
			break;
		case OPT_HEATMAP_DATA:
			env.heatmap.tsv_path = optarg;
			break;
		case OPT_HEATMAP_INTERVAL:
			if (parse_seconds(optarg, &env.heatmap.interval_s) ||
			    env.heatmap.interval_s < HEATMAP_INTERVAL_MIN_S - 1e-12) {
				p_err("invalid --heatmap-interval '%s' (seconds, at least 0.01)", optarg);
				return -EINVAL;
			}
			break;
		case OPT_EVENTS:
			env.events_path = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			if (is_negative_number(argv[optind - 1])) {
				p_err("invalid interval '%s' %s", argv[optind - 1], INTERVAL_HINT);
				return -EINVAL;
			}
			return getopt_error(opt, argv, usage);
		}
	}
	if (optind < argc) {
		if (parse_seconds_ns(argv[optind], INTERVAL_MIN_NS, &env.interval_ns)) {
			p_err("invalid interval '%s' %s", argv[optind], INTERVAL_HINT);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		if (parse_u64(argv[optind], 1, 0xffffffff, &env.count)) {
			p_err("invalid count '%s' (a whole number of intervals, at least 1)",
			      argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		p_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (env.disk && resolve_disk())
		return -EINVAL;
	return check_heatmap() ? -EINVAL : 0;
}

/* ---- output files: opened before the run, so an unwritable path fails first ---- */

struct outputs {
	struct outfile events;
	__u64 events_written;
};

static int open_output(const char *path, struct outfile *of)
{
	if (!path)
		return 0;
	if (!outfile_open(path, of)) {
		p_err("cannot write %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_outputs(struct outputs *o)
{
	return heatmap_run_open(&env.heatmap) ?: open_output(env.events_path, &o->events);
}

static void abort_outputs(struct outputs *o)
{
	heatmap_run_abort(&env.heatmap);
	outfile_abort(&o->events);
}

static int commit_output(const char *path, struct outfile *of, int err)
{
	if (!of->f)
		return 0;
	err = err ?: outfile_commit(of);
	if (err) {
		outfile_abort(of);
		p_err("cannot write %s: %s", path, strerror(-err));
	}
	return err;
}

/* ---- histograms: an inner map swapped for an empty one, then read whole ---- */

struct hists {
	int outer_fd;
	int cur_fd;
	__u32 value_size, max_entries;
	int ncpu;
	struct blk_req_names names;
};

/* Installs a fresh inner map; *old_fd gets the previous one (or -1).  The outer map update
 * returns only after every program that could still be using the old map has finished. */
static int hists_swap(struct hists *h, int *old_fd)
{
	__u32 zero = 0;
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "biolat_hists", sizeof(struct biolat_key),
			    h->value_size, h->max_entries, NULL);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(h->outer_fd, &zero, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (old_fd)
		*old_fd = h->cur_fd;
	else if (h->cur_fd >= 0)
		close(h->cur_fd);
	h->cur_fd = fd;
	return 0;
}

struct hist_entry {
	__u32 dev;
	char label[160];
	__u64 sum_ns;
	__u64 *slots; /* env.nr_slots */
};

struct hist_set {
	struct hist_entry *e;
	int nr, cap;
};

static void hist_set_free(struct hist_set *s)
{
	for (int i = 0; i < s->nr; i++)
		free(s->e[i].slots);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

static void entry_label(const struct hists *h, const struct biolat_key *k, char *buf, size_t size)
{
	char disk[64], flags[128];

	buf[0] = '\0';
	if (env.per_disk && env.per_flags)
		snprintf(buf, size, "disk = %s  flags = %s", blk_disk_name(k->dev, disk, sizeof(disk)),
			 blk_req_str(&h->names, k->cmd_flags, flags, sizeof(flags)));
	else if (env.per_disk)
		snprintf(buf, size, "disk = %s", blk_disk_name(k->dev, disk, sizeof(disk)));
	else if (env.per_flags)
		snprintf(buf, size, "flags = %s",
			 blk_req_str(&h->names, k->cmd_flags, flags, sizeof(flags)));
}

/* The entry for label: keys whose flags print the same (bits biolat does not name) merge. */
static struct hist_entry *set_entry(struct hist_set *s, __u32 dev, const char *label)
{
	struct hist_entry *e;

	for (int i = 0; i < s->nr; i++)
		if (s->e[i].dev == dev && !strcmp(s->e[i].label, label))
			return &s->e[i];
	if (s->nr == s->cap) {
		int cap = s->cap ? s->cap * 2 : 8;
		void *p = realloc(s->e, cap * sizeof(*s->e));

		if (!p)
			return NULL;
		s->e = p;
		s->cap = cap;
	}
	e = &s->e[s->nr];
	memset(e, 0, sizeof(*e));
	e->slots = calloc(env.nr_slots, sizeof(__u64));
	if (!e->slots)
		return NULL;
	e->dev = dev;
	snprintf(e->label, sizeof(e->label), "%s", label);
	s->nr++;
	return e;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct hist_entry *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* Reads every histogram of inner map fd, summing the per-CPU copies. */
static int read_hists(struct hists *h, int fd, struct hist_set *out)
{
	size_t stride = h->value_size; /* a multiple of 8, as per-CPU values are laid out */
	struct biolat_key key, next, *prev = NULL;
	struct hist_entry *e;
	char label[160];
	__u64 *vals;
	int err = 0;

	vals = calloc(h->ncpu, stride);
	if (!vals)
		return -ENOMEM;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, vals)) {
			err = -errno;
			break;
		}
		entry_label(h, &key, label, sizeof(label));
		e = set_entry(out, env.per_disk ? key.dev : 0, label);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		for (int c = 0; c < h->ncpu; c++) {
			const __u64 *v = (const __u64 *)((const char *)vals + c * stride);

			e->sum_ns += v[BIOLAT_VAL_SUM];
			for (__u32 i = 0; i < env.nr_slots; i++)
				e->slots[i] += v[BIOLAT_VAL_SLOT0 + i];
		}
	}
	free(vals);
	if (!err && out->nr > 1)
		qsort(out->e, out->nr, sizeof(*out->e), cmp_entry);
	return err;
}

static int print_entry(const struct hist_entry *e)
{
	struct hist_summary s;
	int err;

	if (e->label[0])
		printf("%s\n", e->label);
	err = hist_print(stdout, e->slots, env.nr_slots, &env.layout, unit_name());
	err = err ?: hist_summary(e->slots, env.nr_slots, &env.layout, e->sum_ns / unit_ns(), &s);
	if (err)
		return err;
	/* the average from the exact sum in ns, not from its truncation to the unit */
	if (s.count)
		s.avg = (double)e->sum_ns / unit_ns() / s.count;
	return hist_print_summary(stdout, &s, unit_name());
}

static int print_interval(struct hists *h)
{
	struct hist_set set = {};
	char ts[32];
	int old_fd = -1, err;

	err = hists_swap(h, &old_fd);
	if (err) {
		p_err("cannot swap the histogram map: %s", strerror(-err));
		return err;
	}
	err = read_hists(h, old_fd, &set);
	close(old_fd);
	if (err) {
		p_err("cannot read the histograms: %s", strerror(-err));
		goto out;
	}
	printf("\n");
	if (env.timestamp) {
		time_t t = time(NULL);

		strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&t));
		printf("%s\n", ts);
	}
	if (!set.nr) {
		struct hist_summary empty = {};

		err = hist_print_summary(stdout, &empty, unit_name());
	}
	for (int i = 0; i < set.nr && !err; i++) {
		if (i)
			printf("\n");
		err = print_entry(&set.e[i]);
	}
	if (err)
		p_err("cannot write the histograms: %s", strerror(-err));
out:
	hist_set_free(&set);
	return err;
}

/* ---- events ---- */

struct event_ctx {
	FILE *f;
	__u64 start_ns;
	__u64 *written;
};

/* trace2heatmap.pl's input: "time latency", time since the start of the run, both in usecs. */
static int on_event(void *ctx, void *data, size_t size)
{
	const struct biolat_event *e = data;
	struct event_ctx *ec = ctx;
	__u64 t;

	if (size < sizeof(*e))
		return 0;
	t = e->ts_ns > ec->start_ns ? e->ts_ns - ec->start_ns : 0;
	fprintf(ec->f, "%llu %llu\n", (unsigned long long)(t / 1000),
		(unsigned long long)(e->lat_ns / 1000));
	(*ec->written)++;
	return 0;
}

/* ---- setup ---- */

/* Where the struct request * is among each tracepoint's arguments, from BTF. */
static int pick_rq_args(struct biolat_bpf *skel, const struct btf *btf)
{
	int issue = btf_tp_arg_index(btf, "block_rq_issue", "request");
	int complete = btf_tp_arg_index(btf, "block_rq_complete", "request");

	/* No btf_trace_* typedefs at all: a kernel before 5.5, so before 5.11 too, where
	 * block_rq_insert/issue were (struct request_queue *q, struct request *rq). */
	if (issue == -ENOENT && btf && btf__find_by_name_kind(btf, "btf_trace_block_rq_issue",
							     BTF_KIND_TYPEDEF) <= 0)
		issue = 1;
	if (complete == -ENOENT && btf && btf__find_by_name_kind(btf, "btf_trace_block_rq_complete",
								   BTF_KIND_TYPEDEF) <= 0)
		complete = 0;
	if (issue < 0 || issue > 1 || complete < 0 || complete > 1) {
		p_err("cannot find the request argument of the block_rq tracepoints in this "
		      "kernel's BTF");
		return -ENOENT;
	}
	skel->rodata->targ_rq_arg = issue;
	skel->rodata->targ_complete_rq_arg = complete;
	p_info("block_rq_issue: request is argument %d%s; block_rq_complete: argument %d", issue,
	       issue ? " (request_queue first: kernel before 5.11)" : "", complete);
	return 0;
}

/* Keeps one entry per request struct when the map can hold twice every request of every disk
 * (room for disks added or queues resized during the run); otherwise entries are deleted at
 * completion and the map holds the requests in flight. */
static int size_start(struct biolat_bpf *skel)
{
	long bound = blk_requests_bound();
	__u32 entries = START_ENTRIES_MIN;

	skel->rodata->targ_reuse = bound >= 0 && 2 * bound <= START_ENTRIES_REUSE_MAX;
	if (skel->rodata->targ_reuse && 2 * bound > entries)
		entries = 2 * bound;
	if (bound < 0)
		p_info("cannot count the disks' requests (%s): deleting entries at completion",
		       strerror(-bound));
	else
		p_info("%ld requests on this machine's disks: %s, %u entries", bound,
		       skel->rodata->targ_reuse ? "reusing in-flight entries" :
						  "deleting entries at completion", entries);
	return bpf_map__set_max_entries(skel->maps.start, entries);
}

static int configure(struct biolat_bpf *skel, struct hists *h, const struct btf *btf)
{
	bool insert = env.queued || env.pid;
	struct bpf_map *inner;
	__u32 vsize = BIOLAT_VALUE_SIZE(env.nr_slots);
	int err;

	/* filters, keys and units are read-only globals, fixed before load */
	skel->rodata->targ_queued = env.queued;
	skel->rodata->targ_per_disk = env.per_disk;
	skel->rodata->targ_per_flags = env.per_flags;
	skel->rodata->filter_dev = env.disk != NULL;
	skel->rodata->targ_dev = env.dev;
	skel->rodata->filter_tgid = env.pid != 0;
	skel->rodata->targ_tgid = env.pid;
	skel->rodata->targ_unit_ns = unit_ns();
	skel->rodata->targ_hist_kind = env.layout.kind == HIST_LINEAR ? BIOLAT_HIST_LINEAR :
				       env.layout.kind == HIST_LOGLIN ? BIOLAT_HIST_LOGLIN :
				       BIOLAT_HIST_LOG2;
	skel->rodata->targ_sub_shift = env.layout.sub_shift;
	skel->rodata->targ_step = env.layout.step ? env.layout.step : 1;
	skel->rodata->targ_nr_slots = env.nr_slots;
	skel->rodata->targ_events = env.events_path != NULL;
	err = pick_rq_args(skel, btf);
	if (err)
		return err;

	/* histogram values are sized to the layout: 520 bytes for log2 */
	inner = bpf_map__inner_map(skel->maps.hists);
	err = inner ? bpf_map__set_value_size(inner, vsize) : -ENOENT;
	err = err ?: bpf_map__set_value_size(skel->maps.zero_hist, vsize);
	err = err ?: size_start(skel);
	/* the heat map's columns are the run's: COUNT x INTERVAL when known */
	err = err ?: heatmap_run_configure(&env.heatmap, skel->maps.heat, &skel->rodata->targ_heatmap,
					   &skel->rodata->targ_heatmap_cfg,
					   env.interval_ns * (double)env.count / 1e9);
	if (!err && env.events_path)
		err = bpf_map__set_max_entries(skel->maps.events, EVENTS_RING_SIZE);
	if (err) {
		p_err("cannot size the BPF maps: %s", strerror(-err));
		return err;
	}
	h->value_size = vsize;
	h->max_entries = bpf_map__max_entries(inner);

	/* tp_btf where it exists, raw_tp otherwise; insert only when it is needed */
	probe_pick_tp(skel->progs.issue_btf, skel->progs.issue_raw, "block_rq_issue");
	probe_pick_tp(skel->progs.complete_btf, skel->progs.complete_raw, "block_rq_complete");
	probe_pick_tp(skel->progs.requeue_btf, skel->progs.requeue_raw, "block_rq_requeue");
	if (insert) {
		probe_pick_tp(skel->progs.insert_btf, skel->progs.insert_raw, "block_rq_insert");
	} else {
		bpf_program__set_autoload(skel->progs.insert_btf, false);
		bpf_program__set_autoload(skel->progs.insert_raw, false);
	}
	/* block_rq_merge came in 5.9 (its BTF typedef with it); without it, a merged request's
	 * entry stays until its address is inserted or issued again */
	if (insert && btf &&
	    btf__find_by_name_kind(btf, "btf_trace_block_rq_merge", BTF_KIND_TYPEDEF) > 0) {
		probe_pick_tp(skel->progs.merge_btf, skel->progs.merge_raw, "block_rq_merge");
	} else {
		bpf_program__set_autoload(skel->progs.merge_btf, false);
		bpf_program__set_autoload(skel->progs.merge_raw, false);
	}
	if (blk_req_names_from_btf(&h->names, btf))
		p_info("no enum req_op/req_flag_bits in BTF: using the 6.x flag layout for -F");
	return 0;
}

/* Runs the kernel skipped because the program was already running on that CPU. */
static __u64 prog_misses(struct biolat_bpf *skel)
{
	struct bpf_program *prog;
	__u64 misses = 0;

	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			misses += info.recursion_misses;
	}
	return misses;
}

/* Requests issued and not seen completing when the run ended: in flight at the end, or whose
 * completion never reached the BPF program. */
static __u64 count_unfinished(struct biolat_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.start);
	__u64 key, next, *prev = NULL, n = 0;
	struct biolat_start val;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &val) && val.state == RQ_ISSUED)
			n++;
	}
	return n;
}

static void print_lost(struct biolat_bpf *skel, struct outputs *o)
{
	const __u64 *lost = skel->bss->lost;
	__u64 nested = prog_misses(skel);
	__u64 total = lost[BIOLAT_LOST_START_FULL] + lost[BIOLAT_LOST_HISTS_FULL] +
		      lost[BIOLAT_LOST_NO_COMPLETION] + nested;
	__u64 unfinished = count_unfinished(skel);

	p_info("lost: in-flight map full %llu, histogram map full %llu, completion not seen %llu, "
	       "heat map late %llu, events %llu, nested runs %llu; unfinished at the end %llu",
	       (unsigned long long)lost[BIOLAT_LOST_START_FULL],
	       (unsigned long long)lost[BIOLAT_LOST_HISTS_FULL],
	       (unsigned long long)lost[BIOLAT_LOST_NO_COMPLETION],
	       (unsigned long long)skel->bss->heatmap_late,
	       (unsigned long long)lost[BIOLAT_LOST_EVENTS], (unsigned long long)nested,
	       (unsigned long long)unfinished);
	if (total)
		fprintf(stderr, "bpfprof: lost %llu I/Os: in-flight map full %llu, histogram map "
			"full %llu, completion never seen by BPF %llu, nested program runs skipped by "
			"the kernel %llu\n", (unsigned long long)total,
			(unsigned long long)lost[BIOLAT_LOST_START_FULL],
			(unsigned long long)lost[BIOLAT_LOST_HISTS_FULL],
			(unsigned long long)lost[BIOLAT_LOST_NO_COMPLETION],
			(unsigned long long)nested);
	if (unfinished)
		fprintf(stderr, "bpfprof: %llu I/Os issued and not completed when the run ended "
			"(not counted)\n", (unsigned long long)unfinished);
	if (skel->bss->heatmap_late)
		fprintf(stderr, "bpfprof: %llu I/Os completed after the heat map's last column\n",
			(unsigned long long)skel->bss->heatmap_late);
	if (env.events_path)
		fprintf(stderr, "bpfprof: events: %llu written to %s, %llu dropped (ring buffer "
			"full)\n", (unsigned long long)o->events_written, env.events_path,
			(unsigned long long)lost[BIOLAT_LOST_EVENTS]);
}

static void sleep_ns(__u64 ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC };

	/* a signal cuts it short: the caller checks `exiting` */
	nanosleep(&ts, NULL);
}

/* Runs until COUNT intervals, Ctrl-C, the target's exit or a full heat map; prints every
 * interval but the last.  Returns the end of the run (ns) in *end. */
static int run_loop(struct hists *h, struct ring_buffer *rb, __u64 start, __u64 *end)
{
	__u64 next = env.interval_ns ? start + env.interval_ns : 0;
	const struct heatmap_cfg *hm = &env.heatmap.cfg;
	/* a run of unknown length ends when the heat map's last column does */
	__u64 heatmap_end = heatmap_run_enabled(&env.heatmap) && !env.count ?
			    start + hm->cols * hm->interval_ns : 0;
	__u64 printed = 0, now, wake;
	int err;

	for (;;) {
		now = now_ns();
		if (exiting) {
			*end = now;
			return 0;
		}
		if (next && now >= next) {
			if (env.count && printed + 1 == env.count) {
				*end = next;
				return 0;
			}
			err = print_interval(h);
			if (err)
				return err;
			fflush(stdout);
			printed++;
			next += env.interval_ns;
		}
		if (heatmap_end && now >= heatmap_end) {
			p_err("the heat map is full (%u columns of %g s): ending the run",
			      hm->cols, hm->interval_ns / 1e9);
			*end = heatmap_end;
			return 0;
		}
		if (env.pid && !process_exists(env.pid)) {
			p_info("pid %u exited", env.pid);
			*end = now;
			return 0;
		}
		wake = now + POLL_NS;
		if (next && next < wake)
			wake = next;
		if (heatmap_end && heatmap_end < wake)
			wake = heatmap_end;
		sleep_ns(wake - now);
		if (rb)
			ring_buffer__consume(rb);
	}
}

int cmd_biolat(int argc, char **argv)
{
	struct hists h = { .outer_fd = -1, .cur_fd = -1 };
	struct outputs o = {};
	struct biolat_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct event_ctx ec = {};
	struct btf *btf;
	__u64 start, end;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print_fn);
	install_signal_handlers();
	h.ncpu = libbpf_num_possible_cpus();
	if (h.ncpu <= 0) {
		p_err("cannot count CPUs: %s", strerror(-h.ncpu));
		return 1;
	}
	err = open_outputs(&o);
	if (err)
		goto cleanup;

	skel = biolat_bpf__open();
	if (!skel) {
		err = -errno;
		explain_bpf_error("cannot open the BPF object", err);
		goto cleanup;
	}
	/* the kernel's BTF, for the tracepoints' prototypes and -F's flag names: several MB, so
	 * parsed once and freed before the run */
	btf = btf__load_vmlinux_btf();
	if (libbpf_get_error(btf))
		btf = NULL;
	err = configure(skel, &h, btf);
	btf__free(btf);
	if (err)
		goto cleanup;
	err = biolat_bpf__load(skel);
	if (err) {
		explain_bpf_error("cannot load the BPF programs", err);
		goto cleanup;
	}
	h.outer_fd = bpf_map__fd(skel->maps.hists);
	err = hists_swap(&h, NULL);
	if (err) {
		p_err("cannot create the histogram map: %s", strerror(-err));
		goto cleanup;
	}
	if (env.events_path) {
		ec.f = o.events.f;
		ec.written = &o.events_written;
		rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &ec, NULL);
		if (!rb) {
			err = -errno;
			p_err("cannot create the ring buffer: %s", strerror(-err));
			goto cleanup;
		}
	}

	/* time zero of the heat map and the events, then attach right away */
	heatmap_run_start(&env.heatmap, &skel->bss->heatmap_start_ns);
	start = env.heatmap.cfg.start_ns;
	ec.start_ns = start;
	err = biolat_bpf__attach(skel);
	if (err) {
		explain_bpf_error("cannot attach the BPF programs", err);
		goto cleanup;
	}
	/* only now: scripts wait for this line before starting their I/O */
	printf("Tracing block device I/O... Hit Ctrl-C to end.\n");
	fflush(stdout);

	err = run_loop(&h, rb, start, &end);
	/* detach first: the last histograms, heat map and events then describe the same run */
	biolat_bpf__detach(skel);
	if (err)
		goto cleanup;
	err = print_interval(&h);
	if (err)
		goto cleanup;
	if (rb)
		ring_buffer__consume(rb);
	err = stream_flush_check(stdout);
	if (err) {
		p_err("cannot write the output: %s", strerror(-err));
		goto cleanup;
	}
	err = heatmap_run_write(&env.heatmap, skel->maps.heat, end, unit_name(),
				"Block I/O Latency Heat Map");
	if (env.events_path) {
		int e2 = commit_output(env.events_path, &o.events, 0);

		err = err ?: e2;
	}
	print_lost(skel, &o);
cleanup:
	abort_outputs(&o);
	ring_buffer__free(rb);
	if (h.cur_fd >= 0)
		close(h.cur_fd);
	biolat_bpf__destroy(skel);
	return err ? 1 : 0;
}
