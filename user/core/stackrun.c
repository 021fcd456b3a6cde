// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include "core/common.h"
#include "core/features.h"
#include "core/runner.h"
#include "core/stackrun.h"
#include "stacks.h"
#include "sym/syms.h"

/* A process first seen this long ago gets its second snapshot: by then the dynamic loader has
 * mapped its libraries. */
#define REVISIT_AFTER_NS 100000000ULL

struct stack_opts stack_opts;

/* perf's --call-graph: fp, or dwarf[,SIZE] (no stack is copied here: dwarf means the in-kernel
 * table unwinder, --unwind eh); lbr needs hardware that records branches. */
static int opt_call_graph(const char *arg)
{
	size_t len = strcspn(arg, ",");

	if (len == 2 && !strncmp(arg, "fp", 2) && !arg[2])
		return unwind_opt_method("fp", &stack_opts.unwind);
	if (len == 5 && !strncmp(arg, "dwarf", 5))
		return unwind_opt_method("eh", &stack_opts.unwind);
	if (!strcmp(arg, "lbr")) {
		p_err("--call-graph lbr is not supported: use --call-graph fp or dwarf");
		return -EINVAL;
	}
	p_err("invalid --call-graph '%s' (fp or dwarf, as perf's; or --unwind fp|eh|auto)", arg);
	return -EINVAL;
}

static int opt_unwind(const char *arg)
{
	return unwind_opt_method(arg, &stack_opts.unwind);
}

const struct opt stack_opts_table[] = {
	{ 'g', NULL, NULL, "call graphs, as perf's -g: accepted; stacks are always\n"
	  "captured", OPT_FLAG, &stack_opts.call_graph, .needs = CAP_STACKS },
	{ 0, "call-graph", "METHOD", "fp or dwarf (perf's names): --unwind fp or eh", OPT_FN,
	  .fn = opt_call_graph, .needs = CAP_STACKS },
	{ 'U', "user-stacks-only", NULL, "user stacks only", OPT_FLAG, &stack_opts.user_only,
	  .needs = CAP_STACKS },
	{ 'K', "kernel-stacks-only", NULL, "kernel stacks only", OPT_FLAG, &stack_opts.kernel_only,
	  .needs = CAP_STACKS },
	{ 0, "max-stack", "N", "frames per stack (default 127), up to the kernel's\n"
	  "perf_event_max_stack: raise it for deeper stacks (Java), e.g.\n"
	  "sysctl -w kernel.perf_event_max_stack=512 (at most 1023)", OPT_U64,
	  &stack_opts.max_stack, 1, MAX_STACK_DEPTH, .needs = CAP_STACKS },
	{ 0, "max-stacks", "N", "distinct stacks kept in the kernel (default 16384)", OPT_U64,
	  &stack_opts.max_stacks, 1, 1 << 22, .needs = CAP_STACKS },
	{ 0, "unwind", "METHOD", "user stacks: fp (frame pointers), eh (.eh_frame tables in\n"
	  "the kernel), auto (default: tables where the code has them)", OPT_FN, .fn = opt_unwind,
	  .needs = CAP_STACKS },
	{ 0, "unwind-mem", "MB", "memory for unwind tables (default 16)", OPT_U64,
	  &stack_opts.unwind_mem_mb, 1, 4096, .hint = "1 to 4096 MB", .needs = CAP_STACKS },
	{ 'f', "folded", NULL, "folded stacks for flamegraph.pl instead of the report", OPT_FLAG,
	  &stack_opts.folded, .needs = CAP_STACKS },
	{ 0, "annotate", NULL, "with -f: suffix kernel frames with _[k]", OPT_FLAG,
	  &stack_opts.annotate, .needs = CAP_STACKS },
	{ 0, "svg", "FILE", "also write a flame graph SVG", OPT_OUTPUT, &stack_opts.svg,
	  .needs = CAP_STACKS },
	{ 0, "title", "TEXT", "flame graph title", OPT_STR, &stack_opts.title, .needs = CAP_STACKS },
	{ 0, "no-children", NULL, "report Self only, like perf report --no-children", OPT_FLAG,
	  &stack_opts.no_children, .needs = CAP_STACKS },
	{ 0, "percent-limit", "P", "hide report entries below P percent", OPT_PERCENT,
	  &stack_opts.percent_limit, .needs = CAP_STACKS },
	{ 0, "call-graph-limit", "P", "hide call-graph branches below P percent (default 0.5,\n"
	  "as perf's -g graph,0.5)", OPT_PERCENT, &stack_opts.call_graph_limit,
	  .needs = CAP_STACKS },
	{},
};

void stack_opts_reset(struct stack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_stack = 0; /* STACK_DEPTH_DEFAULT, or the kernel's limit when lower */
	o->max_stacks = 16384;
	o->unwind = UNWIND_DEFAULT_METHOD;
	o->unwind_mem_mb = UNWIND_DEFAULT_MEM_MB;
	o->call_graph_limit = 0.5; /* perf's -g graph,0.5 */
}

/* kernel.perf_event_max_stack: what bpf_get_stack() walks at most (and, here, our own walks). */
static __u64 kernel_max_stack(void)
{
	unsigned long long n = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");

	if (f && fscanf(f, "%llu", &n) != 1)
		n = 0;
	if (f)
		fclose(f);
	return n ? n : STACK_DEPTH_DEFAULT;
}

int stack_opts_check(struct stack_opts *o)
{
	__u64 limit = kernel_max_stack();

	if (o->user_only && o->kernel_only) {
		p_err("-U and -K exclude each other");
		return -EINVAL;
	}
	if (!o->max_stack) {
		o->max_stack = limit < STACK_DEPTH_DEFAULT ? limit : STACK_DEPTH_DEFAULT;
	} else if (o->max_stack > limit) {
		/* bpf_get_stack() would cut kernel stacks there without a word */
		p_err("--max-stack %llu is above kernel.perf_event_max_stack (%llu): raise it first, "
		      "sysctl -w kernel.perf_event_max_stack=%llu", (unsigned long long)o->max_stack,
		      (unsigned long long)limit, (unsigned long long)o->max_stack);
		return -EINVAL;
	}
	/* -K takes no user stacks: nothing to unwind */
	if (o->kernel_only)
		o->unwind = UNWIND_FP;
	return 0;
}

void stack_maps_configure(struct bpf_map *stacks, struct bpf_map *counts, __u32 stacks_per_key,
			  __u32 *targ_max_stack, __u32 *targ_stack_mask)
{
	__u32 slots = STACK_DEPTH_DEFAULT + 1;

	while (slots <= stack_opts.max_stack)
		slots *= 2;
	*targ_max_stack = stack_opts.max_stack;
	*targ_stack_mask = slots - 1;
	bpf_map__set_max_entries(counts, stack_opts.max_stacks);
	bpf_map__set_max_entries(stacks, stack_opts.max_stacks * stacks_per_key);
	bpf_map__set_value_size(stacks, offsetof(struct stack_trace, ips) + slots * sizeof(__u64));
	/* a deep stack's value is up to 8 KiB: allocated as stacks come, where the kernel can
	 * allocate in NMI, rather than max-stacks of them up front */
	if (slots > STACK_DEPTH_DEFAULT + 1 && feat_nmi_alloc())
		bpf_map__set_map_flags(stacks, bpf_map__map_flags(stacks) | BPF_F_NO_PREALLOC);
	p_info("stacks: up to %u frames, %u slots a stack, %s", *targ_max_stack, slots,
	       bpf_map__map_flags(stacks) & BPF_F_NO_PREALLOC ? "allocated as they come" :
	       "preallocated");
}

bool stack_run_fallback(struct runner *r, int err)
{
	if (stack_opts.unwind != UNWIND_AUTO)
		return false;
	p_err("cannot load with in-kernel unwinding (%s); trying frame pointers (--unwind fp)",
	      strerror(-err));
	stack_opts.unwind = UNWIND_FP;
	return true;
}

int stack_run_init(struct stack_run *s)
{
	memset(s, 0, sizeof(*s));
	s->resolver = stack_resolver__new();
	if (!s->resolver) {
		p_err("cannot set up the symbolizer: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

static int proc_seen(void *ctx, void *data, size_t size)
{
	const struct proc_seen_event *e = data;

	if (size >= sizeof(*e))
		syms_cache__snapshot(ctx, e->tgid);
	return 0;
}

int stack_run_start(struct stack_run *s, struct runner *r, const struct unwind_bpf *ub,
		    struct bpf_map *proc_events)
{
	struct syms_cache *sc = stack_resolver__syms(s->resolver);
	int err;

	if (stack_opts.unwind != UNWIND_FP) {
		s->unwinder = unwinder__new(ub, sc, stack_opts.unwind);
		if (!s->unwinder) {
			err = -errno;
			p_err("cannot set up the unwinder: %s", strerror(-err));
			return err;
		}
		err = runner_add_ringbuf(r, proc_events, unwinder__proc_event, s->unwinder);
		err = err ?: runner_add_ringbuf(r, ub->events, unwinder__handle_event, s->unwinder);
	} else {
		err = runner_add_ringbuf(r, proc_events, proc_seen, sc);
	}
	/* kernel symbols load while the run goes on, not after it (none with -U) */
	if (!err && !stack_opts.user_only)
		stack_resolver__prefetch(s->resolver);
	return err;
}

void stack_run_tick(struct stack_run *s)
{
	syms_cache__revisit(stack_resolver__syms(s->resolver), REVISIT_AFTER_NS);
}

void stack_run_finish(struct stack_run *s)
{
	syms_cache__revisit(stack_resolver__syms(s->resolver), 0);
	if (s->unwinder && verbose)
		unwinder__print_usage(s->unwinder, stderr);
}

void stack_run_free(struct stack_run *s)
{
	unwinder__free(s->unwinder);
	s->unwinder = NULL;
	stack_samples_free(s->samples, s->nr_samples);
	s->samples = NULL;
	s->nr_samples = 0;
	stack_resolver__free(s->resolver);
	s->resolver = NULL;
}

/* perf report's sections: one report per event, with its own header and percentages. */
static int write_sections(FILE *out, const struct stack_outputs *o, const struct stack_sample *s,
			  size_t n)
{
	struct stack_sample *part = malloc((n ?: 1) * sizeof(*part));
	int err = part ? 0 : -ENOMEM;

	for (int e = 0; e < o->nr_events && !err; e++) {
		struct report_header h = o->header;
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (s[i].event == (__u32)e)
				part[k++] = s[i]; /* shallow: the frames stay the caller's */
		h.event = o->event_names[e];
		if (e)
			fputc('\n', out);
		err = report_write(out, &h, part, k, &o->report);
	}
	free(part);
	return err;
}

int stack_outputs_write(FILE *out, const struct stack_outputs *outputs, const struct stack_run *sr)
{
	const struct stack_sample *s = sr->samples;
	struct stack_outputs with_notes = *outputs, *o = &with_notes;
	char refused[512];
	size_t n = sr->nr_samples;
	int err = 0;

	/* the files refused were named on stderr as they were met; the report says how many */
	if (syms_cache__refusals(stack_resolver__syms(sr->resolver), refused, sizeof(refused)))
		o->header.symbols = refused;

	if (stack_opts.svg.of.f) {
		err = flamegraph_write(stack_opts.svg.of.f, s, n, &o->flamegraph);
		/* the report still goes out without its flame graph */
		if (err)
			runner_output_failed(&stack_opts.svg, err);
		err = 0;
	}
	if (o->folded) {
		err = folded_write(out, s, n, &o->folded_opts);
		if (o->header.lost)
			fprintf(stderr, "bpfprof: lost %s: %llu (%s)\n", o->lost_what,
				(unsigned long long)o->header.lost,
				o->header.lost_detail ? o->header.lost_detail : "");
	} else if (o->nr_events > 1) {
		err = write_sections(out, o, s, n);
	} else {
		err = report_write(out, &o->header, s, n, &o->report);
	}
	if (err)
		p_err("cannot write the output: %s", strerror(-err));
	return err;
}
