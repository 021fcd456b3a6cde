/* What the text report of a drained run holds, without a run: a recorded profile (pprof, folded)
 * is read, its stacks merged into an aggregation the way a drained run's are (threads merged,
 * named frames by name, unresolved ones by file; at most --bound nodes, the run's 262,144 by
 * default), the reader freed, and then the report written from that call-path tree as a run
 * writes it.  Prints the tree's size, the RSS before the report and the report's peak RSS over
 * it (VmHWM reset before it: /proc/self/clear_refs), steady where a soak's peak is not; under
 * valgrind --tool=massif, what the report allocates.  The report goes to -o FILE (default
 * /dev/null), byte for byte what the run's would be, for comparing builds.
 *   report_mem [--no-children] [--sort KEYS] [--percent-limit P] [--call-graph-limit P]
 *              [--srcline] [--bound N] [-o FILE] PROFILE */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "in/profile_in.h"
#include "out/report.h"
#include "sym/stackagg.h"
#include "peak.h"

static unsigned parse_sort(const char *arg)
{
	unsigned sort = 0;
	char *copy = strdup(arg), *save = NULL;

	for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save))
		sort |= !strcmp(k, "comm") ? REPORT_SORT_COMM :
			!strcmp(k, "dso")  ? REPORT_SORT_DSO :
					     REPORT_SORT_SYM;
	free(copy);
	return sort;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no-children", no_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "percent-limit", required_argument, NULL, 'p' },
		{ "call-graph-limit", required_argument, NULL, 'g' },
		{ "srcline", no_argument, NULL, 'l' },
		{ "bound", required_argument, NULL, 'b' },
		{ "output", required_argument, NULL, 'o' },
		{},
	};
	struct report_opts o = { .children = true, .call_graph = true, .call_graph_limit = 0.5 };
	const char *path = "/dev/null";
	size_t bound = 1 << 18, n;
	struct report_header h = {};
	struct profile_in *in;
	struct stack_agg *a;
	struct stack_tree t;
	const struct stack_sample *s;
	double rss, hwm;
	FILE *out;
	int c, err = 0;

	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o.children = false; break;
		case 's': o.sort = parse_sort(optarg); break;
		case 'p': o.percent_limit = strtod(optarg, NULL); break;
		case 'g': o.call_graph_limit = strtod(optarg, NULL); break;
		case 'l': o.srcline = true; break;
		case 'b': bound = strtoul(optarg, NULL, 10); break;
		case 'o': path = optarg; break;
		default: return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: report_mem [options] PROFILE (see the source)\n");
		return 2;
	}
	in = profile_in__new();
	a = stack_agg__new(false);
	if (!in || !a || profile_in__read(in, argv[optind])) {
		fprintf(stderr, "report_mem: cannot read %s\n", argv[optind]);
		return 1;
	}
	stack_agg__bound(a, bound);
	s = profile_in__samples(in, &n);
	for (size_t i = 0; i < n && !err; i++)
		err = stack_agg__add(a, &s[i]);
	h.event = "cpu-clock";
	profile_in__free(in);
	malloc_trim(0);
	out = fopen(path, "we");
	if (err || !out) {
		fprintf(stderr, "report_mem: cannot aggregate or open %s\n", path);
		return 1;
	}
	stack_agg__tree(a, &t);
	rss = status_mb("VmRSS:");
	/* the peak from here on: the report's */
	if (reset_peak("report_mem"))
		return 1;
	err = report_write_tree(out, &h, &t, -1, &o);
	hwm = status_mb("VmHWM:");
	if (err || fclose(out)) {
		fprintf(stderr, "report_mem: cannot write the report\n");
		return 1;
	}
	printf("report_mem: %zu stacks in %zu nodes, %zu frames; RSS %.1f MB before the report, "
	       "peak RSS with the report %.1f MB (+%.1f)\n", t.nr_entries, t.nr_nodes,
	       stack_agg__nr_frames(a), rss, hwm, hwm - rss);
	stack_agg__free(a);
	return 0;
}
