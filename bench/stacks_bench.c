/* Times symbolizing and writing N unique stacks (default 10,000 of depth 20): half kernel frames
 * from /proc/kallsyms, half user frames in this process's libc and binary, the way the profile
 * loader does it after a run.  Prints seconds for symbolize, folded, report and SVG. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/common.h"
#include "out/flamegraph.h"
#include "out/folded.h"
#include "out/report.h"
#include "sym/stackagg.h"
#include "sym/stackcollect.h"
#include "sym/syms.h"

#define DEPTH 20

static double since(__u64 t0)
{
	return (now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	struct stack_resolver *r = stack_resolver__new();
	struct stack_sample *s = calloc(n, sizeof(*s));
	__u64 kbase = 0, ubase[2], ips[DEPTH], t0;
	struct ksyms *ks = ksyms__load();
	FILE *null = fopen("/dev/null", "w");
	double t_sym, t_fold, t_rep, t_svg;

	if (!r || !s || !ks || !null) {
		fprintf(stderr, "stacks_bench: setup failed (root needed for kallsyms addresses)\n");
		return 1;
	}
	kbase = ksyms__addr(ks, "do_syscall_64");
	ubase[0] = (__u64)(unsigned long)dlsym(RTLD_DEFAULT, "malloc");
	ubase[1] = (__u64)(unsigned long)&main;
	ksyms__free(ks);
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		s[i].frames = calloc(DEPTH, sizeof(struct frame));
		snprintf(s[i].comm, sizeof(s[i].comm), "bench");
		s[i].pid = s[i].tid = getpid();
		s[i].value = 1 + i % 7;
		/* Distinct stacks: vary the addresses with i so symbols differ across stacks. */
		for (int d = 0; d < DEPTH / 2; d++)
			ips[d] = ubase[d & 1] + ((i * 131 + d * 977) % 4096);
		s[i].nr_frames = stack_resolver__symbolize(r, getpid(), false, ips, DEPTH / 2, s[i].frames);
		for (int d = 0; d < DEPTH / 2; d++)
			ips[d] = kbase + ((i * 7919 + d * 104729) % (8 << 20));
		s[i].nr_frames += stack_resolver__symbolize(r, 0, true, ips, DEPTH / 2,
							    s[i].frames + DEPTH / 2);
	}
	t_sym = since(t0);
	t0 = now_ns();
	folded_write(null, s, n, &(struct folded_opts){ 0 });
	t_fold = since(t0);
	t0 = now_ns();
	stack_agg_report_write(null, &(struct report_header){ .event = "cpu-clock" }, s, n,
		     &(struct report_opts){ .children = true, .call_graph = true });
	t_rep = since(t0);
	t0 = now_ns();
	flamegraph_write(null, s, n, &(struct flamegraph_opts){ .title = "bench" });
	t_svg = since(t0);
	printf("stacks %zu depth %d: symbolize %.3f s, folded %.3f s, report %.3f s, svg %.3f s, "
	       "total %.3f s\n", n, DEPTH, t_sym, t_fold, t_rep, t_svg, t_sym + t_fold + t_rep + t_svg);
	stack_samples_free(s, n);
	stack_resolver__free(r);
	fclose(null);
	return 0;
}
