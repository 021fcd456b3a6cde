/* bpfprof biolat: block I/O latency histograms, percentiles and heat maps, counted in the kernel. */
#include <dirent.h>
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
#include "cmd/blkdev.h"
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/features.h"
#include "core/heatmaprun.h"
#include "core/runner.h"
#include "out/hist.h"
/* after target.h (core/runner.h): the skeleton names struct target_cfg */
#include "biolat.skel.h"

#define NSEC_PER_MSEC 1000000ULL
#define EVENTS_RING_SIZE (4 * 1024 * 1024)
/* In-flight table: log2 of its slots (32 bytes each: 32 KiB to 2 MiB); the map for the requests
 * whose slot is taken. */
#define SLOT_BITS_MIN 10
#define SLOT_BITS_MAX 16
#define START_ENTRIES 16384

RUNNER_SKELETON(biolat);

/* Histograms: with -D or -F, an inner map swapped for an empty one at each report, then read
 * whole; otherwise the `hist1` array's copies of one generation (a copy per CPU), read through
 * a mapping once the programs write the other. */
struct hists {
	int outer_fd;
	int cur_fd;
	enum bpf_map_type type;
	__u32 key_size, value_size, max_entries;
	int ncpu;
	struct blk_req_names names;
	bool by_cpu;
	__u64 *mem;     /* hist1, mapped: 2 * ncpu values of BIOLAT_HIST1_VALUE_SIZE bytes */
	size_t mem_len;
	int wait_fd;    /* an inner map for gen_wait's updates */
};

/* --events: "time latency" lines written from the ring buffer. */
struct event_ctx {
	FILE *f;
	__u64 start_ns;
	__u64 written;
};

static int opt_linear(const char *arg);
static int opt_loglin(const char *arg);

static struct biolat_env {
	bool millis, queued, per_disk, per_flags;
	const char *disk;
	__u32 dev;
	struct hist_layout layout; /* rows to print: log2 (default), --loglin, --linear */
	struct output events;
	struct hists h;
	struct event_ctx ec;
	/* stamped: completions read the kernel's issue stamp; the issue and requeue programs
	 * are loaded and attached only once a request comes without one */
	bool stamped, issue_attached;
	struct bpf_program *issue, *requeue;
	struct bpf_link **issue_link, **requeue_link;
	long unfinished_end; /* stamped: requests in the drivers at the end */
	/* stamped: the disks' completions at attach and detach, and their requests in flight at
	 * attach, against the I/Os counted (every report's): what BPF never saw complete */
	long done_start, done_end, inflight_start;
	__u64 counted;
} env;

static const struct opt biolat_opts[] = {
	{ 'm', "milliseconds", NULL, "histograms in milliseconds (default microseconds)", OPT_FLAG,
	  &env.millis },
	{ 'Q', "queued", NULL, "include the time queued in the kernel (from insert)", OPT_FLAG,
	  &env.queued },
	{ 'D', "disks", NULL, "one histogram per disk", OPT_FLAG, &env.per_disk },
	{ 'F', "flags", NULL, "one histogram per operation and flags (Read, Sync-Write...)",
	  OPT_FLAG, &env.per_flags },
	{ 0, "disk", "DISK", "only this disk (vda, loop0, /dev/nvme0n1); BCC's -d, which is\n"
	  "the duration in bpfprof's grammar", OPT_STR, &env.disk },
	{ 0, "linear", "STEP[,N]", "N linear buckets STEP units wide (default N 100; the last\n"
	  "holds everything above)", OPT_FN, .fn = opt_linear },
	{ 0, "loglin", "K", "2^K buckets per power of two (K 1-5), like bpftrace hist(n, K)",
	  OPT_FN, .fn = opt_loglin },
	{ 0, "events", "FILE", "write \"time latency\" (both in usecs) for every I/O, the two\n"
	  "columns trace2heatmap.pl reads", OPT_OUTPUT, &env.events },
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
static int opt_linear(const char *arg)
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
	env.layout.nr = n;
	return 0;
}

static int opt_loglin(const char *arg)
{
	__u64 v;

	if (parse_u64(arg, 1, HIST_LOGLIN_SHIFT_MAX, &v)) {
		p_err("invalid --loglin '%s' (K from 1 to %d: 2^K buckets per power of two)", arg,
		      HIST_LOGLIN_SHIFT_MAX);
		return -EINVAL;
	}
	env.layout.kind = HIST_LOGLIN;
	env.layout.sub_shift = v;
	return 0;
}

/* The disks /sys/block lists, for a --disk that names none: "vda, vdb", or "none". */
static const char *disk_names(char *buf, size_t size)
{
	struct dirent **names;
	int n = scandir("/sys/block", &names, NULL, alphasort);
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && len < size)
			len += snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
					names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return buf[0] ? buf : "none";
}

static int resolve_disk(void)
{
	char parent[64], list[256];
	int err = blk_disk_dev(env.disk, &env.dev, parent, sizeof(parent));

	if (err == -ENOTBLK) {
		p_err("'%s' is a partition; biolat times the requests of whole disks: use --disk %s",
		      env.disk, parent[0] ? parent : "DISK");
		return err;
	}
	if (err) {
		p_err("disk '%s' not found (disks here: %s)", env.disk, disk_names(list, sizeof(list)));
		return err;
	}
	return 0;
}

/* ---- histograms ---- */

/* Installs a fresh inner map; *old_fd gets the previous one (or -1).  The outer map update
 * returns only after every program that could still be using the old map has finished. */
static int hists_swap(struct hists *h, int *old_fd)
{
	__u32 zero = 0;
	int fd, err;

	fd = bpf_map_create(h->type, "biolat_hists", h->key_size, h->value_size, h->max_entries,
			    NULL);
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
	__u64 *slots; /* HIST_NS_SLOTS, the kernel's */
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
	e->slots = calloc(HIST_NS_SLOTS, sizeof(__u64));
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

static bool all_zero(const __u64 *v, size_t size)
{
	for (size_t i = 0; i < size / sizeof(*v); i++)
		if (v[i])
			return false;
	return true;
}

/* The one histogram of generation gen, which no program writes any more: its copies' (count,
 * sum) pairs added up, then cleared for its next turn. */
static int read_hist1(struct hists *h, __u32 gen, struct hist_set *out)
{
	size_t len = (size_t)h->ncpu * BIOLAT_HIST1_VALUE_SIZE;
	__u64 *vals = (__u64 *)((char *)h->mem + gen * len);
	struct hist_entry *e;

	if (all_zero(vals, len))
		return 0;
	e = set_entry(out, 0, "");
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < len / sizeof(*vals); i += 2) {
		e->slots[i / 2 % HIST_NS_SLOTS] += vals[i + BIOLAT_PAIR_COUNT];
		e->sum_ns += vals[i + BIOLAT_PAIR_SUM];
	}
	memset(vals, 0, len);
	return 0;
}

/* Makes the programs count in the other generation of hist1 and returns the one they counted
 * in, once no program can still be writing it: a map-in-map update returns after every program
 * running has finished, so any that read the old hist_gen. */
static int hist1_flip(struct biolat_bpf *skel, struct hists *h, __u32 *old_gen)
{
	__u32 zero = 0;

	*old_gen = skel->bss->hist_gen & 1;
	__atomic_store_n(&skel->bss->hist_gen, *old_gen ^ 1, __ATOMIC_SEQ_CST);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.gen_wait), &zero, &h->wait_fd, BPF_ANY))
		return -errno;
	return 0;
}

/* Reads every histogram of inner map fd, summing the per-CPU copies. */
static int read_hists(struct hists *h, int fd, struct hist_set *out)
{
	size_t stride = h->value_size; /* a multiple of 8, as per-CPU values are laid out */
	struct biolat_key key, next = {}, *prev = NULL;
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
			for (__u32 i = 0; i < HIST_NS_SLOTS; i++)
				e->slots[i] += v[BIOLAT_VAL_SLOT0 + i];
		}
	}
	free(vals);
	if (!err && out->nr > 1)
		qsort(out->e, out->nr, sizeof(*out->e), cmp_entry);
	return err;
}

static int print_entry(FILE *out, const struct hist_entry *e)
{
	if (e->label[0])
		fprintf(out, "%s\n", e->label);
	return hist_ns_print(out, e->slots, HIST_NS_SLOTS, e->sum_ns, &env.layout, unit_ns(),
			     unit_name());
}

/* One report: the histograms since the last one, read from the inner map just swapped out or
 * the generation just left. */
static int biolat_report(struct runner *r, bool last)
{
	struct hist_set set = {};
	int old_fd = -1, err;
	__u32 gen = 0;

	err = env.h.by_cpu ? hist1_flip(r->skel, &env.h, &gen) : hists_swap(&env.h, &old_fd);
	if (err) {
		p_err("cannot swap the histogram map: %s", strerror(-err));
		return err;
	}
	if (env.h.by_cpu) {
		err = read_hist1(&env.h, gen, &set);
	} else {
		err = read_hists(&env.h, old_fd, &set);
		close(old_fd);
	}
	if (err) {
		p_err("cannot read the histograms: %s", strerror(-err));
		goto out;
	}
	fprintf(r->out, "\n");
	if (!set.nr) {
		struct hist_summary empty = {};

		err = hist_print_summary(r->out, &empty, unit_name());
	}
	for (int i = 0; i < set.nr && !err; i++) {
		if (i)
			fprintf(r->out, "\n");
		err = print_entry(r->out, &set.e[i]);
		for (__u32 k = 0; k < HIST_NS_SLOTS; k++)
			env.counted += set.e[i].slots[k];
	}
	if (err)
		runner_report_failed(err);
out:
	hist_set_free(&set);
	return err;
}

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
	ec->written++;
	return 0;
}

/* ---- setup ---- */

/* Where the struct request * is among each tracepoint's arguments, from BTF. */
static int pick_rq_args(struct biolat_bpf *skel, const struct btf *btf)
{
	int issue = feat_tp_arg_index("block_rq_issue", "request");
	int complete = feat_tp_arg_index("block_rq_complete", "request");

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

/* The in-flight table: eight slots a request of every disk (few requests share a slot, and
 * those few go to the `start` map), within [SLOT_BITS_MIN, SLOT_BITS_MAX]. */
static int size_start(struct biolat_bpf *skel)
{
	long bound = blk_requests_bound();
	__u32 bits = SLOT_BITS_MIN;
	int err;

	while (bound > 0 && bits < SLOT_BITS_MAX && (1UL << bits) < 8UL * bound)
		bits++;
	if (bound < 0) {
		bits = SLOT_BITS_MAX;
		p_info("cannot count the disks' requests (%s): %u in-flight slots", strerror(-bound),
		       1U << bits);
	} else {
		p_info("%ld requests on this machine's disks: %u in-flight slots", bound, 1U << bits);
	}
	skel->rodata->targ_slot_bits = bits;
	err = bpf_map__set_max_entries(skel->maps.slots, 1U << bits);
	return err ?: bpf_map__set_max_entries(skel->maps.start, START_ENTRIES);
}

/* Whether completions can read the kernel's own issue stamp, so that no program runs at issue:
 * the kernel stamps (feat_rq_issue_stamp()), completions run as tp_btf, nothing is wanted from
 * insert (-Q, a target filter), and every traced disk keeps statistics.  Passthrough requests
 * and queues that lose them are met at completion (BIOLAT_LOST_UNSTAMPED): biolat_tick()
 * attaches the issue program then. */
static void pick_stamped(struct biolat_bpf *skel, bool insert)
{
	bool btf = bpf_program__autoload(skel->progs.complete_btf);
	char name[64];
	const char *why = NULL, *disk = env.disk ? blk_disk_name(env.dev, name, sizeof(name)) : NULL;
	long unstamped;

	if (!feat_rq_issue_stamp(&why))
		;
	else if (insert)
		why = env.queued ? "-Q times from insert" : "a target filter reads the submitter";
	else if (!btf)
		why = "block_rq_complete is a raw_tp";
	else if ((unstamped = blk_disks_unstamped(disk)) != 0)
		why = unstamped < 0 ? "cannot read /sys/block" : "a disk keeps no statistics (no wbt)";
	env.stamped = !why;
	skel->rodata->targ_stamped = env.stamped;
	if (env.stamped) {
		bool issue_btf = bpf_program__autoload(skel->progs.issue_btf);
		bool requeue_btf = bpf_program__autoload(skel->progs.requeue_btf);

		env.issue = issue_btf ? skel->progs.issue_btf : skel->progs.issue_raw;
		env.issue_link = issue_btf ? &skel->links.issue_btf : &skel->links.issue_raw;
		env.requeue = requeue_btf ? skel->progs.requeue_btf : skel->progs.requeue_raw;
		env.requeue_link = requeue_btf ? &skel->links.requeue_btf : &skel->links.requeue_raw;
		bpf_program__set_autoattach(env.issue, false);
		bpf_program__set_autoattach(env.requeue, false);
	}
	p_info("issue time: %s%s", env.stamped ? "the kernel's (rq->io_start_time_ns), no issue "
	       "program until a request comes without it" : "the issue program's, since ",
	       env.stamped ? "" : why);
}

/* A request came without the kernel's stamp (counted lost): from now on the issue program
 * times every request, and completions look for its entry first. */
static int biolat_tick(struct runner *r)
{
	struct biolat_bpf *skel = r->skel;
	int err;

	if (!env.stamped || env.issue_attached || !skel->bss->lost[BIOLAT_LOST_UNSTAMPED])
		return 0;
	env.issue_attached = true;
	*env.requeue_link = bpf_program__attach(env.requeue);
	err = libbpf_get_error(*env.requeue_link);
	if (!err) {
		*env.issue_link = bpf_program__attach(env.issue);
		err = libbpf_get_error(*env.issue_link);
	}
	if (err) {
		p_err("cannot attach the issue program for requests the kernel does not stamp: %s",
		      strerror(-err));
		return err;
	}
	skel->bss->issue_on = 1;
	p_info("a request came without the kernel's issue stamp: the issue program is attached");
	return 0;
}

static int biolat_configure(struct runner *r)
{
	struct biolat_bpf *skel = r->skel;
	struct hists *h = &env.h;
	const struct btf *btf = feat_btf();
	/* the submitter is known at insert: a target filter needs it */
	bool insert = env.queued || targets.nr_pids || targets.nr_tids || targets.follow ||
		      targets.cgroup || targets.user_only || targets.kernel_only;
	struct bpf_map *inner;
	__u32 vsize = BIOLAT_VALUE_SIZE;
	int err;

	/* filters, keys and units are read-only globals, fixed before load */
	skel->rodata->targ_queued = env.queued;
	skel->rodata->targ_per_disk = env.per_disk;
	skel->rodata->targ_per_flags = env.per_flags;
	skel->rodata->filter_dev = env.disk != NULL;
	skel->rodata->targ_dev = env.dev;
	skel->rodata->targ_unit_ns = unit_ns();
	skel->rodata->targ_events = env.events.path != NULL;
	err = pick_rq_args(skel, btf);
	if (err)
		return err;

	inner = bpf_map__inner_map(skel->maps.hists);
	err = inner ? 0 : -ENOENT;
	err = err ?: size_start(skel);
	/* the heat map's columns are the run's: COUNT x INTERVAL when known */
	err = err ?: heatmap_run_configure(&heatmap_opts, skel->maps.heat,
					   &skel->rodata->targ_heatmap,
					   &skel->rodata->targ_heatmap_cfg, runner_planned_seconds());
	if (!err && env.events.path)
		err = bpf_map__set_max_entries(skel->maps.events, EVENTS_RING_SIZE);
	if (err) {
		p_err("cannot size the BPF maps: %s", strerror(-err));
		return err;
	}
	h->value_size = vsize;
	h->max_entries = bpf_map__max_entries(inner);
	h->type = BPF_MAP_TYPE_PERCPU_HASH;
	h->key_size = sizeof(struct biolat_key);
	/* one histogram: a copy per CPU and generation in an array, whose lookup is an index,
	 * where a hash's walks a bucket and an element (cache misses on every completion) */
	h->by_cpu = !env.per_disk && !env.per_flags;
	skel->rodata->targ_one_hist = h->by_cpu;
	skel->rodata->targ_ncpu = h->ncpu;
	err = bpf_map__set_max_entries(skel->maps.hist1, h->by_cpu ? 2 * h->ncpu : 1);
	if (err) {
		p_err("cannot size the histogram array: %s", strerror(-err));
		return err;
	}

	/* tp_btf where it exists, raw_tp otherwise; insert only when it is needed */
	feat_pick_tp(skel->progs.issue_btf, skel->progs.issue_raw, "block_rq_issue");
	feat_pick_tp(skel->progs.complete_btf, skel->progs.complete_raw, "block_rq_complete");
	feat_pick_tp(skel->progs.requeue_btf, skel->progs.requeue_raw, "block_rq_requeue");
	pick_stamped(skel, insert);
	if (insert) {
		feat_pick_tp(skel->progs.insert_btf, skel->progs.insert_raw, "block_rq_insert");
	} else {
		bpf_program__set_autoload(skel->progs.insert_btf, false);
		bpf_program__set_autoload(skel->progs.insert_raw, false);
	}
	/* block_rq_merge came in 5.9 (its BTF typedef with it); without it, a merged request's
	 * entry stays until its address is inserted or issued again */
	if (insert && feat_tp_exists("block_rq_merge")) {
		feat_pick_tp(skel->progs.merge_btf, skel->progs.merge_raw, "block_rq_merge");
	} else {
		bpf_program__set_autoload(skel->progs.merge_btf, false);
		bpf_program__set_autoload(skel->progs.merge_raw, false);
	}
	if (blk_req_names_from_btf(&h->names, btf))
		p_info("no enum req_op/req_flag_bits in BTF: using the 6.x flag layout for -F");
	return 0;
}

/* --disk's name in /sys/block, or NULL for every disk. */
static const char *traced_disk(void)
{
	static char name[64];

	return env.disk ? blk_disk_name(env.dev, name, sizeof(name)) : NULL;
}

/* Completions BPF never saw in a stamped run, which has no issue to notice them by, estimated:
 * the disks' completions during the run, less the requests they had in flight when it began,
 * less those counted that the disks count too (not flushes, not passthrough requests), less the
 * bare preflushes they count as writes and biolat as no I/O. */
static __u64 unseen_stamped(const struct biolat_bpf *skel)
{
	long done = env.done_end - env.done_start - env.inflight_start;
	__u64 counted = env.counted - skel->bss->not_in_disk_stats + skel->bss->only_in_disk_stats;

	if (!env.stamped || env.done_start < 0 || env.done_end < 0 || env.inflight_start < 0 ||
	    done < 0 || env.counted < skel->bss->not_in_disk_stats || (__u64)done <= counted)
		return 0;
	return (__u64)done - counted;
}

/* Requests issued and not seen completing when the run ended: in flight at the end, or whose
 * completion never reached the BPF program.  In a stamped run, the disks' own count of the
 * requests in their drivers, taken at detach (biolat_collect()). */
static __u64 count_unfinished(struct biolat_bpf *skel)
{
	const struct bpf_map *m = skel->maps.slots;
	size_t len = (size_t)bpf_map__max_entries(m) * sizeof(struct biolat_slot);
	int fd = bpf_map__fd(skel->maps.start);
	__u64 key, next, *prev = NULL, n = 0;
	const struct biolat_slot *sl;
	struct biolat_start val;

	if (env.stamped)
		return env.unfinished_end > 0 ? env.unfinished_end : 0;
	sl = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(m), 0);
	if (sl != MAP_FAILED) {
		for (__u32 i = 0; i < bpf_map__max_entries(m); i++)
			n += sl[i].rq && sl[i].v.state == RQ_ISSUED;
		munmap((void *)sl, len);
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &val) && val.state == RQ_ISSUED)
			n++;
	}
	return n;
}

/* What biolat's maps could not count; the runs the kernel skipped are the runner's line. */
static void print_lost(struct biolat_bpf *skel)
{
	const __u64 *lost = skel->bss->lost;
	__u64 unseen = lost[BIOLAT_LOST_NO_COMPLETION] + unseen_stamped(skel);
	__u64 total = lost[BIOLAT_LOST_START_FULL] + lost[BIOLAT_LOST_HISTS_FULL] + unseen +
		      lost[BIOLAT_LOST_UNSTAMPED];
	__u64 unfinished = count_unfinished(skel);

	p_info("lost: in-flight map full %llu, histogram map full %llu, completion not seen %llu%s, "
	       "no issue stamp %llu, heat map late %llu, events %llu; unfinished at the end %llu%s",
	       (unsigned long long)lost[BIOLAT_LOST_START_FULL],
	       (unsigned long long)lost[BIOLAT_LOST_HISTS_FULL],
	       (unsigned long long)unseen,
	       env.stamped ? " (estimated from the disks' statistics)" : "",
	       (unsigned long long)lost[BIOLAT_LOST_UNSTAMPED],
	       (unsigned long long)skel->bss->heatmap_late,
	       (unsigned long long)lost[BIOLAT_LOST_EVENTS], (unsigned long long)unfinished,
	       env.stamped ? " (in the drivers)" : "");
	if (total)
		fprintf(stderr, "bpfprof: lost %llu I/Os: in-flight map full %llu, histogram map "
			"full %llu, completion never seen by BPF %llu, completed before the issue "
			"program was attached for requests the kernel does not stamp %llu\n",
			(unsigned long long)total,
			(unsigned long long)lost[BIOLAT_LOST_START_FULL],
			(unsigned long long)lost[BIOLAT_LOST_HISTS_FULL],
			(unsigned long long)unseen,
			(unsigned long long)lost[BIOLAT_LOST_UNSTAMPED]);
	/* without the stamp, a request whose completion BPF never saw and whose address was not
	 * issued again looks the same as one still in flight */
	if (unfinished)
		fprintf(stderr, "bpfprof: %llu I/Os issued and not completed when the run ended%s "
			"(not counted)\n", (unsigned long long)unfinished,
			env.stamped ? "" : ", or whose completion never reached BPF");
	if (skel->bss->heatmap_late)
		fprintf(stderr, "bpfprof: %llu I/Os completed after the heat map's last column\n",
			(unsigned long long)skel->bss->heatmap_late);
	if (env.events.path)
		fprintf(stderr, "bpfprof: events: %llu written to %s, %llu dropped (ring buffer "
			"full)\n", (unsigned long long)env.ec.written, env.events.path,
			(unsigned long long)lost[BIOLAT_LOST_EVENTS]);
}

static int biolat_check(struct runner *r)
{
	env.h = (struct hists){ .outer_fd = -1, .cur_fd = -1, .wait_fd = -1 };
	env.h.ncpu = libbpf_num_possible_cpus();
	if (env.h.ncpu <= 0) {
		p_err("cannot count CPUs: %s", strerror(-env.h.ncpu));
		return env.h.ncpu ?: -EINVAL;
	}
	return env.disk ? resolve_disk() : 0;
}

/* Maps hist1 and makes gen_wait's inner map. */
static int hist1_map(struct biolat_bpf *skel, struct hists *h)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	h->mem_len = ((size_t)2 * h->ncpu * BIOLAT_HIST1_VALUE_SIZE + page - 1) / page * page;
	p = mmap(NULL, h->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(skel->maps.hist1), 0);
	if (p == MAP_FAILED)
		return -errno;
	h->mem = p;
	h->wait_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "biolat_wait", sizeof(__u32),
				    sizeof(__u32), 1, NULL);
	return h->wait_fd < 0 ? -errno : 0;
}

/* The first histogram map, and the events' ring buffer. */
static int biolat_prepare(struct runner *r)
{
	struct biolat_bpf *skel = r->skel;
	int err;

	if (env.h.by_cpu) {
		err = hist1_map(skel, &env.h);
	} else {
		env.h.outer_fd = bpf_map__fd(skel->maps.hists);
		err = hists_swap(&env.h, NULL);
	}
	if (err) {
		p_err("cannot create the histogram map: %s", strerror(-err));
		return err;
	}
	env.ec.f = env.events.of.f;
	return env.events.path ? runner_add_ringbuf(r, skel->maps.events, on_event, &env.ec) : 0;
}

/* time zero of the heat map and the events, then attach right away */
static int biolat_attach(struct runner *r)
{
	struct biolat_bpf *skel = r->skel;

	heatmap_run_start(&heatmap_opts, &skel->bss->heatmap_start_ns);
	/* after the start time: a request issued between the two is subtracted twice, so the
	 * count of completions never seen errs low */
	if (env.stamped) {
		env.done_start = blk_completed(traced_disk());
		env.inflight_start = blk_inflight(traced_disk());
	}
	env.ec.start_ns = heatmap_opts.cfg.start_ns;
	return runner_attach_skeleton(r);
}

/* Detached: a stamped run's unfinished requests are those the disks still have in their
 * drivers. */
static int biolat_collect(struct runner *r)
{
	if (env.stamped)
		env.unfinished_end = blk_inflight(traced_disk());
	return 0;
}

/* The disks' completions before the programs stop seeing them (erring low again). */
static void biolat_detach(struct runner *r)
{
	if (env.stamped)
		env.done_end = blk_completed(traced_disk());
	r->cmd->skel->detach(r->skel);
}

static int biolat_write(struct runner *r)
{
	struct biolat_bpf *skel = r->skel;
	int err;

	err = heatmap_run_write(&heatmap_opts, skel->maps.heat, r->end_ns, unit_name(),
				"Block I/O Latency Heat Map");
	print_lost(skel);
	return err;
}

static void biolat_teardown(struct runner *r)
{
	if (env.h.cur_fd >= 0)
		close(env.h.cur_fd);
	if (env.h.wait_fd >= 0)
		close(env.h.wait_fd);
	if (env.h.mem)
		munmap(env.h.mem, env.h.mem_len);
	memset(&env, 0, sizeof(env));
}

const struct command biolat_cmd = {
	.name = "biolat",
	.summary = "block I/O latency histograms, percentiles and heat maps",
	.description =
		"Block I/O latency, from issue (or insert, -Q) to completion, counted in the kernel.\n"
		"With a target filter, an I/O counts when the task that submitted it passes.",
	.notes = "A heat map has at most 4096 columns: a run of known length must fit (error\n"
		 "otherwise); a run of unknown length ends when the heat map is full.\n",
	.caps = CAP_THREAD_KIND | CAP_INTERVALS | CAP_HEATMAP,
	.positional = POS_INTERVAL,
	.opts = biolat_opts,
	.skel = &biolat_skel,
	.check = biolat_check,
	.configure = biolat_configure,
	.prepare = biolat_prepare,
	.attach = biolat_attach,
	.banner = "Tracing block device I/O... Hit Ctrl-C to end.",
	.tick = biolat_tick,
	.report = biolat_report,
	.detach = biolat_detach,
	.collect = biolat_collect,
	.write = biolat_write,
	.teardown = biolat_teardown,
};
