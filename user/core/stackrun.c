#include <getopt.h>
#include <errno.h>
#include <string.h>
#include "out/outfile.h"
#include "core/stackrun.h"
#include "stacks.h"
#include "sym/syms.h"

int stack_proc_event(void *ctx, void *data, size_t size)
{
	const struct proc_seen_event *e = data;

	if (size >= sizeof(*e))
		syms_cache__snapshot(ctx, e->tgid);
	return 0;
}

bool stack_targets_gone(const __u32 *pids, int nr_pids, const __u32 *tids, int nr_tids)
{
	int i;

	if (!nr_pids && !nr_tids)
		return false;
	for (i = 0; i < nr_pids; i++)
		if (process_exists(pids[i]))
			return false;
	for (i = 0; i < nr_tids; i++)
		if (thread_exists(tids[i]))
			return false;
	return true;
}

/* A process first seen this long ago gets its second snapshot: by then the dynamic loader has
 * mapped its libraries. */
#define REVISIT_AFTER_NS 100000000ULL

void stack_run_loop(struct ring_buffer *rb, struct syms_cache *sc, struct child *child,
		    __u64 start, double duration, const __u32 *pids, int nr_pids,
		    const __u32 *tids, int nr_tids)
{
	__u64 deadline = duration ? start + (__u64)(duration * 1e9) : 0;

	while (!exiting) {
		int timeout = 100;

		if (deadline) {
			__u64 now = now_ns();

			if (now >= deadline)
				break;
			if (deadline - now < 100000000ULL)
				timeout = (deadline - now) / 1000000 + 1;
		}
		ring_buffer__poll(rb, timeout);
		syms_cache__revisit(sc, REVISIT_AFTER_NS);
		if (child && child_poll(child))
			break;
		if (stack_targets_gone(pids, nr_pids, tids, nr_tids)) {
			p_info("every target has exited");
			break;
		}
	}
	/* Processes seen in the last moments, while they may still be alive. */
	ring_buffer__consume(rb);
	syms_cache__revisit(sc, 0);
}

int stack_outputs_write(const struct stack_outputs *o, const struct stack_sample *s, size_t n)
{
	struct outfile of = {};
	FILE *out = stdout;
	int err = 0;

	if (o->svg_path) {
		FILE *svg = outfile_open(o->svg_path, &of);

		if (!svg) {
			err = -errno;
			p_err("cannot write %s: %s", o->svg_path, strerror(-err));
			return err;
		}
		err = flamegraph_write(svg, s, n, &o->flamegraph);
		err = err ?: outfile_commit(&of);
		if (err) {
			outfile_abort(&of);
			p_err("cannot write %s: %s", o->svg_path, strerror(-err));
			return err;
		}
	}
	if (o->out_path) {
		out = outfile_open(o->out_path, &of);
		if (!out) {
			err = -errno;
			p_err("cannot write %s: %s", o->out_path, strerror(-err));
			return err;
		}
	}
	if (o->folded) {
		err = folded_write(out, s, n, &o->folded_opts);
		if (o->header.lost)
			fprintf(stderr, "bpfprof: lost %s: %llu (%s)\n", o->lost_what,
				(unsigned long long)o->header.lost,
				o->header.lost_detail ? o->header.lost_detail : "");
	} else {
		err = report_write(out, &o->header, s, n, &o->report);
	}
	if (o->out_path) {
		err = err ?: outfile_commit(&of);
		if (err)
			outfile_abort(&of);
	} else if (!err) {
		err = stream_flush_check(stdout);
	}
	if (err)
		p_err("cannot write %s: %s", o->out_path ? o->out_path : "the output",
		      strerror(-err));
	return err;
}

int stack_opts_begin(struct stack_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->max_stack = MAX_STACK_DEPTH;
	o->max_stacks = 16384;
	o->unwind = UNWIND_DEFAULT_METHOD;
	o->unwind_mem_mb = UNWIND_DEFAULT_MEM_MB;
	o->call_graph_limit = 0.5; /* perf's -g graph,0.5 */
	optind = 1;
	opterr = 0;
	return split_command(argc, argv, &o->command);
}

int stack_opts_parse(struct stack_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'U':
		o->user_only = true;
		return 1;
	case 'K':
		o->kernel_only = true;
		return 1;
	case STACK_OPT_MAX_STACK:
		if (parse_u64(arg, 1, MAX_STACK_DEPTH, &o->max_stack)) {
			p_err("invalid --max-stack '%s' (1 to %d)", arg, MAX_STACK_DEPTH);
			return -EINVAL;
		}
		return 1;
	case STACK_OPT_MAX_STACKS:
		if (parse_u64(arg, 1, 1 << 22, &o->max_stacks)) {
			p_err("invalid --max-stacks '%s' (1 to %d)", arg, 1 << 22);
			return -EINVAL;
		}
		return 1;
	case STACK_OPT_UNWIND:
		return unwind_opt_method(arg, &o->unwind) ? -EINVAL : 1;
	case STACK_OPT_UNWIND_MEM:
		return unwind_opt_mem(arg, &o->unwind_mem_mb) ? -EINVAL : 1;
	case 'f':
		o->folded = true;
		return 1;
	case STACK_OPT_ANNOTATE:
		o->annotate = true;
		return 1;
	case STACK_OPT_SVG:
		o->svg_path = arg;
		return 1;
	case STACK_OPT_TITLE:
		o->title = arg;
		return 1;
	case 'o':
		o->out_path = arg;
		return 1;
	case STACK_OPT_NO_CHILDREN:
		o->no_children = true;
		return 1;
	case STACK_OPT_PERCENT_LIMIT:
	case STACK_OPT_CALL_GRAPH_LIMIT:
		if (parse_percent(arg, opt == STACK_OPT_PERCENT_LIMIT ? &o->percent_limit :
									   &o->call_graph_limit)) {
			p_err("invalid --%s '%s' (0 to 100)",
			      opt == STACK_OPT_PERCENT_LIMIT ? "percent-limit" : "call-graph-limit", arg);
			return -EINVAL;
		}
		return 1;
	case 'v':
		verbose = true;
		return 1;
	}
	return 0;
}

int stack_opts_end(struct stack_opts *o, int dashdash, char **argv)
{
	if (optind < dashdash) {
		if (parse_seconds(argv[optind], &o->duration)) {
			p_err("invalid duration '%s' (expected seconds > 0)", argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < dashdash) {
		p_err("unexpected argument '%s' (a command goes after '--')", argv[optind]);
		return -EINVAL;
	}
	if (o->user_only && o->kernel_only) {
		p_err("-U and -K exclude each other");
		return -EINVAL;
	}
	return 0;
}
