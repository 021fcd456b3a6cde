// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/common.h"
#include "core/period.h"
#include "core/stackrun.h"
#include "export/curlrt.h"
#include "export/pprofdir.h"
#include "export/push.h"

struct period_opts period_opts;

/* What the run's periods went to. */
static struct {
	bool open;
	struct pprof_dir *dir;
	struct pusher *pusher;
	char *ingest, *name; /* --push's endpoint; APP{k=v,...} */
	__u64 periods, files_failed, encode_failed;
} ps;

static int opt_label(const char *arg)
{
	char **grown;

	if (push_label_check(arg))
		return -EINVAL;
	grown = realloc(period_opts.labels, (period_opts.nr_labels + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	period_opts.labels = grown;
	period_opts.labels[period_opts.nr_labels++] = (char *)arg;
	return 0;
}

const struct opt period_opts_table[] = {
	{ 0, "every", "SEC", "continuous: a profile every SEC seconds (at least 1), the run\n"
	  "going on until Ctrl-C or DURATION; each to --pprof-dir or\n"
	  "--push, or else printed as the run's end is (report, -f)", OPT_SECONDS,
	  &period_opts.every, .what = "--every", .hint = "seconds, at least 1",
	  .needs = CAP_PERIODS },
	{ 0, "pprof-dir", "DIR", "with --every: each period a pprof file in DIR,\n"
	  "CMD-YYYYmmddTHHMMSSZ.pb.gz (UTC start), written whole", OPT_STR,
	  &period_opts.pprof_dir, .needs = CAP_PERIODS },
	{ 0, "keep", "N", "with --pprof-dir: keep the newest N files (default 60)", OPT_U64,
	  &period_opts.keep, 1, 1000000, .needs = CAP_PERIODS },
	{ 0, "push", "URL", "with --every: send each period to the Grafana Pyroscope server\n"
	  "at URL (its /ingest API), retried with backoff, never\n"
	  "holding up sampling; what cannot be sent is counted", OPT_STR, &period_opts.push,
	  .needs = CAP_PERIODS },
	{ 0, "app", "NAME", "with --push: the application name (default bpfprof)", OPT_STR,
	  &period_opts.app, .needs = CAP_PERIODS },
	{ 0, "label", "KEY=VALUE", "with --push: a label of the profiles; repeatable", OPT_FN,
	  .fn = opt_label, .needs = CAP_PERIODS },
	{},
};

void period_opts_reset(void)
{
	free(period_opts.labels);
	memset(&period_opts, 0, sizeof(period_opts));
}

/* "--X needs --Y": one line. */
static int needs(bool given, const char *what, bool has, const char *need)
{
	if (!given || has)
		return 0;
	p_err("%s needs %s", what, need);
	return -EINVAL;
}

int period_opts_check(void)
{
	bool every = period_opts.every > 0;
	char *ingest = NULL;
	int err;

	err = needs(period_opts.pprof_dir, "--pprof-dir", every, "--every SEC (a file per period)");
	err = err ?: needs(period_opts.push, "--push", every, "--every SEC (a profile per period)");
	err = err ?: needs(period_opts.keep, "--keep", period_opts.pprof_dir, "--pprof-dir DIR");
	err = err ?: needs(period_opts.app, "--app", period_opts.push, "--push URL");
	err = err ?: needs(period_opts.nr_labels, "--label", period_opts.push, "--push URL");
	if (err)
		return err;
	if (every && period_opts.every < PERIOD_MIN_S) {
		p_err("invalid --every '%g' (seconds, at least %d: period files are named to the "
		      "second)", period_opts.every, PERIOD_MIN_S);
		return -EINVAL;
	}
	if (every && (stack_opts.svg.path || stack_opts.pprof.path)) {
		p_err("%s is one file of a whole run: with --every, periods go to --pprof-dir DIR or "
		      "--push URL", stack_opts.svg.path ? "--svg" : "--pprof");
		return -EINVAL;
	}
	if (period_opts.push && push_url_check(period_opts.push, &ingest))
		return -EINVAL;
	free(ingest);
	if (period_opts.app && push_app_check(period_opts.app))
		return -EINVAL;
	if (!period_opts.keep)
		period_opts.keep = PERIOD_KEEP_DEFAULT;
	return 0;
}

bool period_text(void)
{
	return period_opts.every > 0 && !period_opts.pprof_dir && !period_opts.push;
}

bool period_pprof(void)
{
	return period_opts.every > 0 && !period_text();
}

int period_open(const char *cmd_name)
{
	int err = 0;

	memset(&ps, 0, sizeof(ps));
	ps.open = true;
	if (period_opts.pprof_dir)
		err = pprof_dir_open(period_opts.pprof_dir, cmd_name, period_opts.keep, &ps.dir);
	if (!err && period_opts.push) {
		ps.name = push_app_name(period_opts.app ?: "bpfprof", period_opts.labels,
					period_opts.nr_labels);
		err = ps.name ? push_url_check(period_opts.push, &ps.ingest) : -ENOMEM;
		err = err ?: pusher_new(ps.ingest, &ps.pusher);
	}
	if (err == -ENOMEM)
		p_err("cannot set up --push: %s", strerror(ENOMEM));
	return err;
}

__s64 period_wall_ns(__u64 mono_ns)
{
	struct timespec wall;
	__u64 now = now_ns();

	clock_gettime(CLOCK_REALTIME, &wall);
	return (__s64)wall.tv_sec * 1000000000LL + wall.tv_nsec - (__s64)(now - mono_ns);
}

/* Pyroscope's query: the name with its labels, the period in Unix seconds, the format. */
static char *push_query(__s64 from_ns, __s64 until_ns, __u64 sample_rate)
{
	char *name, *q = NULL;
	char rate[48] = "";

	/* loaded when --push was checked: a no-op */
	if (curl_rt_load())
		return NULL;
	name = curl_easy_escape(NULL, ps.name, 0);
	if (!name)
		return NULL;
	if (sample_rate)
		snprintf(rate, sizeof(rate), "&sampleRate=%llu", (unsigned long long)sample_rate);
	if (asprintf(&q, "name=%s&from=%lld&until=%lld&format=pprof&spyName=bpfprof%s", name,
		     (long long)(from_ns / 1000000000LL),
		     (long long)((until_ns + 999999999LL) / 1000000000LL), rate) < 0)
		q = NULL;
	curl_free(name);
	return q;
}

int period_send(const struct stack_sample *s, size_t n, const struct stack_tree *t,
		struct pprof_meta *meta, __u64 start_ns, __u64 end_ns, __u64 sample_rate)
{
	__s64 from = period_wall_ns(start_ns);
	struct push_counts pc = {};
	void *buf = NULL;
	size_t size = 0;
	char *query;
	int err;

	meta->time_nanos = from;
	meta->duration_nanos = end_ns - start_ns;
	ps.periods++;
	err = t ? pprof_encode_tree(t, meta, &buf, &size) : pprof_encode(s, n, meta, &buf, &size);
	if (err) {
		ps.encode_failed++;
		p_err("cannot encode period %llu: %s", (unsigned long long)ps.periods,
		      strerror(-err));
		return err;
	}
	if (ps.dir && pprof_dir_write(ps.dir, from, buf, size))
		ps.files_failed++;
	if (ps.pusher) {
		query = push_query(from, from + meta->duration_nanos, sample_rate);
		/* the pusher owns both now, queued or dropped */
		if (!query || !pusher_push(ps.pusher, buf, size, query))
			p_info("period %llu not queued for --push: the queue is full",
			       (unsigned long long)ps.periods);
		if (!query)
			free(buf);
		buf = NULL;
		pusher_counts(ps.pusher, &pc);
	}
	p_info("period %llu: %llu in %zu stacks, %.1f s, %zu bytes of pprof; pushed %llu, dropped "
	       "%llu", (unsigned long long)ps.periods,
	       (unsigned long long)(t ? stack_tree_total(t) : stack_samples_total(s, n)),
	       t ? t->nr_entries : n, meta->duration_nanos / 1e9, size,
	       (unsigned long long)pc.sent,
	       (unsigned long long)(pc.dropped_full + pc.dropped_failed + pc.rejected));
	free(buf);
	return 0;
}

static void print_push_counts(const struct push_counts *c)
{
	__u64 dropped = c->dropped_full + c->dropped_failed + c->rejected + c->dropped_exit;

	fprintf(stderr, "bpfprof: --push: %llu of %llu periods sent, %llu dropped (queue full %llu, "
		"failed after %d tries %llu, rejected %llu, unsent at exit %llu); %llu retries%s%s\n",
		(unsigned long long)c->sent, (unsigned long long)(c->queued + c->dropped_full),
		(unsigned long long)dropped, (unsigned long long)c->dropped_full, PUSH_TRIES,
		(unsigned long long)c->dropped_failed, (unsigned long long)c->rejected,
		(unsigned long long)c->dropped_exit, (unsigned long long)c->retries,
		dropped || c->retries ? "; last error: " : "",
		dropped || c->retries ? c->last_error : "");
}

int period_close(bool quiet)
{
	struct push_counts pc;
	__u64 written, removed;
	int err;

	if (!ps.open)
		return 0;
	ps.open = false;
	err = ps.files_failed || ps.encode_failed ? -EIO : 0;
	if (ps.pusher) {
		pusher_free(ps.pusher, quiet ? 0 : PERIOD_PUSH_GRACE_MS, &pc);
		if (!quiet)
			print_push_counts(&pc);
	}
	if (ps.dir && !quiet) {
		pprof_dir_counts(ps.dir, &written, &removed);
		fprintf(stderr, "bpfprof: --pprof-dir: %llu period files written to %s (%llu not "
			"written), %llu older removed (--keep %llu)\n", (unsigned long long)written,
			period_opts.pprof_dir, (unsigned long long)ps.files_failed,
			(unsigned long long)removed, (unsigned long long)period_opts.keep);
	}
	pprof_dir_close(ps.dir);
	free(ps.ingest);
	free(ps.name);
	memset(&ps, 0, sizeof(ps));
	return err;
}
