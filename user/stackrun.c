#include <errno.h>
#include <string.h>
#include "outfile.h"
#include "stackrun.h"
#include "stacks.h"
#include "syms.h"

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

void stack_run_loop(struct ring_buffer *rb, struct child *child, __u64 start, double duration,
		    const __u32 *pids, int nr_pids, const __u32 *tids, int nr_tids)
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
		if (child && child_poll(child))
			break;
		if (stack_targets_gone(pids, nr_pids, tids, nr_tids)) {
			p_info("every target has exited");
			break;
		}
	}
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
