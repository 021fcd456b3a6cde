// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include <limits.h>
#include <stdio.h>
#include "core/grow.h"
#include "core/child.h"
#include "core/common.h"
#include "core/diskcache.h"
#include "core/features.h"
#include "core/machine.h"
#include "core/period.h"
#include "core/progload.h"
#include "core/runner.h"
#include "core/stackrun.h"
#include "core/targets.h"
#include "probe/probe.h"
#include "stacks.h"
#include "unwind.h"
#include "sym/cgroups.h"
#include "sym/mmaprec.h"
#include "sym/stackagg.h"
#include "sym/syms.h"
#include "unwind/kernstack.h"
#include "unwind/tcache.h"

/* A process first seen this long ago gets its second snapshot: by then the dynamic loader has
 * mapped its libraries. */
#define REVISIT_AFTER_NS 100000000ULL
/* How often the maps are drained when they are not filling up faster: often enough that short
 * processes are symbolized soon after they exit, rarely enough to cost nothing. */
#define DRAIN_INTERVAL_NS 1000000000ULL
/* The last drain before a planned end comes this long before it: the end then drains only the
 * run's last moments, and the report waits for their symbols alone (profile -a 1 symbolized
 * what 0.25-1 s had sampled after the run).  A tick and a half: ticks are 100 ms apart. */
#define END_DRAIN_NS 150000000ULL
/* The first drain comes sooner: it loads the symbols of the programs running then while the
 * run goes on, not at its end, where a short run (profile -a 1) waited for them. */
#define FIRST_DRAIN_NS 250000000ULL
/* A process's exit is told before its memory is freed: on 6.18 perf's exit record and the
 * sched_process_exit tracepoint both come before exit_mm() (older kernels told it after), and
 * samples go on in exit_mmap(), with the user stacks walked at exit_group()'s entry.  Its
 * symbols are forgotten by the first drain this long after: freeing 128 MB takes 10-60 ms here
 * under load, and a drain that forgot it sooner left those samples [unknown] (15 of 140 in CI,
 * the exit record 4 ms before the flip that followed it and samples after that flip). */
#define EXIT_GRACE_NS 500000000ULL
/* A run across processes this long or longer preallocates its maps (maps_churn()). */
#define PREALLOC_AFTER_S 10
/* --max-stacks by default */
#define STACKS_DEFAULT 16384
/* The bytes of an mmap record, about (a mapping and its path): how fast the rings fill. */
#define RECORD_BYTES 160
/* A drain that forgot no process gives memory back at most this often: malloc_trim() walks the
 * whole heap (a tenth of a ms), and what it returns the next drain faults back in. */
#define TRIM_INTERVAL_NS 10000000000ULL
/* Distinct stacks held at most, as nodes of the call-path tree (sym/stackagg.h): with the report
 * made from them, ~60 bytes a node (12 MB here, a 2-minute system-wide run under process churn
 * has 200,000 nodes); stacks first seen beyond it are kept under their longest known caller path,
 * and counted in the header */
#define MAX_NODES (1 << 18)
/* -v says what memory is held, part by part, every this many drains (about 30 s: a drain a
 * second unless the maps fill faster) and at the end */
#define MEM_EVERY_DRAINS 30

struct told_exit {
	__u32 tgid;
	__u64 told_ns;
};

struct stack_drain {
	struct stack_drain_maps maps;
	struct stack_agg *agg;
	__u32 *gen;                                /* the skeleton's drain_gen */
	const __u64 *counts_stored, *stacks_stored; /* inserted by the BPF side, ever */
	__u64 counts_max, stacks_max;
	__u64 counts_deleted, stacks_deleted;      /* by user space, ever */
	__u64 start_ns, last_ns, trimmed_ns;
	__u64 drains, drained;
	size_t files_freed;                        /* no process left that maps them */
	struct told_exit *exited;                  /* in the order told: forgotten by a drain
						    * that reads their last samples */
	size_t nr_exited, exited_cap;
	int (*keep)(void *ctx, __u32 gen);         /* stack_run_drain_keys() */
	void *keep_ctx;
	struct mmaprec *records;                   /* new processes' mappings, from the kernel;
						    * NULL: /proc snapshots alone */
};

struct stack_opts stack_opts;

/* perf's --call-graph: fp, or dwarf[,SIZE] (no stack is copied here: dwarf means the in-kernel
 * table unwinder, --unwind eh); lbr needs hardware that records branches. */
static int opt_call_graph(const char *arg)
{
	size_t len = strcspn(arg, ",");

	stack_opts.unwind_given = true;
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
	stack_opts.unwind_given = true;
	return unwind_opt_method(arg, &stack_opts.unwind);
}

/* perf report's --sort: which of comm, dso, sym tell rows apart (sym always does); srcline
 * is --srcline. */
static int opt_sort(const char *arg)
{
	static const char *const keys[] = { "comm", "dso", "sym", "srcline" };
	const char *p = arg;

	stack_opts.sort = REPORT_SORT_SYM;
	while (*p) {
		size_t len = strcspn(p, ","), k;

		for (k = 0; k < 4; k++)
			if (len == strlen(keys[k]) && !strncmp(p, keys[k], len))
				break;
		if (k == 4) {
			p_err("invalid --sort '%s' (keys: comm, dso, sym, srcline, comma-separated)",
			      arg);
			return -EINVAL;
		}
		if (k == 3)
			stack_opts.srcline = true;
		else
			stack_opts.sort |= 1U << k;
		p += len + (p[len] == ',');
	}
	return 0;
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
	{ 0, "stack-storage-size", NULL, "BCC's --stack-storage-size is --max-stacks N here "
	  "(distinct stacks kept in the kernel)", OPT_RETIRED, .needs = CAP_STACKS },
	{ 0, "unwind", "METHOD", "user stacks: fp (frame pointers), eh (.eh_frame tables in\n"
	  "the kernel), auto (default: tables where the code has them)", OPT_FN, .fn = opt_unwind,
	  .needs = CAP_STACKS },
	{ 0, "unwind-mem", "MB", "memory for unwind tables (default 32)", OPT_U64,
	  &stack_opts.unwind_mem_mb, 1, 4096, .hint = "1 to 4096 MB", .needs = CAP_STACKS },
	{ 0, "no-cache", NULL, "neither read nor store the persistent cache of unwind\n"
	  "tables, inline chains, the core kernel's symbols and struct fields\n"
	  "($XDG_CACHE_HOME/bpfprof, else /var/cache/bpfprof)", OPT_FLAG,
	  &stack_opts.no_unwind_cache, .needs = CAP_STACKS },
	{ 0, "no-unwind-cache", NULL, "the same as --no-cache", OPT_FLAG,
	  &stack_opts.no_unwind_cache, .needs = CAP_STACKS },
	{ 0, "cache-mb", "MB", "bound of the persistent cache on disk (default 128); the\n"
	  "least recently used files go first", OPT_U64, &stack_opts.unwind_cache_mb, 1,
	  1 << 20, .hint = "1 to 1048576 MB", .needs = CAP_STACKS },
	{ 0, "unwind-cache-mb", "MB", "the same as --cache-mb", OPT_U64,
	  &stack_opts.unwind_cache_mb, 1, 1 << 20, .hint = "1 to 1048576 MB", .needs = CAP_STACKS },
	{},
};

/* What is written of the stacks: shared with `bpfprof report`, which reads them back. */
const struct opt stack_output_opts_table[] = {
	{ 'f', "folded", NULL, "folded stacks for flamegraph.pl instead of the report", OPT_FLAG,
	  &stack_opts.folded, .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "annotate", NULL, "with -f: suffix kernel frames with _[k]", OPT_FLAG,
	  &stack_opts.annotate, .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "svg", "FILE", "also write a flame graph SVG", OPT_OUTPUT, &stack_opts.svg,
	  .needs = CAP_STACKS | CAP_STACK_FILES },
	{ 0, "title", "TEXT", "flame graph title", OPT_STR, &stack_opts.title,
	  .needs = CAP_STACKS | CAP_STACK_FILES },
	{ 0, "no-children", NULL, "report Self only, like perf report --no-children", OPT_FLAG,
	  &stack_opts.no_children, .needs = CAP_STACKS },
	{ 0, "sort", "KEYS", "what tells report rows apart, as perf report --sort: comm,\n"
	  "dso, sym (default all three; sym always); srcline: as --srcline", OPT_FN,
	  .fn = opt_sort, .needs = CAP_STACKS },
	{ 0, "inline", NULL, "inlined functions as frames of their own, from DWARF\n"
	  "(the default, but not with -f; folded frames get _[i]\n"
	  "with --annotate); kept in the persistent cache", OPT_FLAG,
	  &stack_opts.inline_frames, .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "no-inline", NULL, "no inlined frames", OPT_FLAG, &stack_opts.no_inline,
	  .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "srcline", NULL, "source lines: a report row per FILE:LINE, folded frames\n"
	  "NAME:LINE (inlined functions' rows otherwise end with their lines)", OPT_FLAG,
	  &stack_opts.srcline, .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "percent-limit", "P", "hide report entries below P percent", OPT_PERCENT,
	  &stack_opts.percent_limit, .needs = CAP_STACKS },
	{ 0, "call-graph-limit", "P", "hide call-graph branches below P percent (default 0.5,\n"
	  "as perf's -g graph,0.5)", OPT_PERCENT, &stack_opts.call_graph_limit,
	  .needs = CAP_STACKS | CAP_STACK_OUTPUTS },
	{ 0, "pprof", "FILE", "also write a pprof profile (gzip'd profile.proto) for go tool\n"
	  "pprof, Pyroscope, Parca, speedscope", OPT_OUTPUT, &stack_opts.pprof,
	  .needs = CAP_STACKS | CAP_STACK_FILES },
	{},
};

void stack_opts_reset(struct stack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_stack = 0; /* STACK_DEPTH_DEFAULT, or the kernel's limit when lower */
	o->max_stacks = 0; /* STACKS_DEFAULT, where not given */
	o->unwind = UNWIND_DEFAULT_METHOD;
	o->unwind_mem_mb = UNWIND_DEFAULT_MEM_MB;
	o->unwind_cache_mb = UNW_CACHE_DEFAULT_MB;
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
	o->max_stacks_auto = !o->max_stacks;
	if (!o->max_stacks)
		o->max_stacks = STACKS_DEFAULT;
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

/* Samples keep their cgroup v2 (sample_key.cgroup) for a pprof's cgroup label, named through
 * the hierarchy's directories; not otherwise, since it keeps apart what the report merges. */
static bool cgroup_key;

/* A run that may last (no DURATION, or one of PREALLOC_AFTER_S or more) across processes (-a,
 * -C, --cgroup: not -p, -t, COMMAND) drains thousands of keys and stacks a second under
 * process churn, each new process's samples being new keys: every one is deleted after it is
 * read, and the kernel frees an element of a map made without preallocation through its
 * allocator (an irq_work every few frees, an RCU callback), 2.3 us a stack and 0.9 us a key
 * here, where a preallocated element goes back on a free list in 0.34 us.  Those deletes were
 * a fifth of bpfprof's own CPU in bench/soak.sh; preallocating costs 7-8 ms once (the default
 * sizes) and the kernel memory the maps may fill anyway. */
static bool maps_churn(void)
{
	return !targets_by_id(&targets) &&
	       (!run_opts.duration || run_opts.duration >= PREALLOC_AFTER_S);
}

/* An LRU map's elements are all made at its creation (a 65,536-entry seen_procs took 2.1 ms of
 * every start here); each CPU takes up to 128 free ones aside at a time (the kernel's
 * LOCAL_FREE_TARGET), so that a map of few entries on many CPUs evicts while others hold free
 * ones.  512 a CPU, at least 16,384 (a process announced again after its entry was evicted is
 * read again from /proc: work, not a loss), at most 65,536. */
static __u32 seen_entries(void)
{
	__u64 n = (__u64)nr_cpus_possible() * 512;

	return n < 16384 ? 16384 : n > 65536 ? 65536 : n;
}

void stack_maps_configure(struct bpf_map *stacks, struct bpf_map *counts, struct bpf_map *seen,
			  __u32 stacks_per_key, bool reads_old_gen, __u32 *targ_max_stack,
			  __u32 *targ_stack_mask, bool *targ_cgroup_key, bool *targ_loop)
{
	__u32 slots = STACK_DEPTH_DEFAULT + 1;

	*targ_cgroup_key = cgroup_key;
	while (slots <= stack_opts.max_stack)
		slots *= 2;
	*targ_max_stack = stack_opts.max_stack;
	*targ_stack_mask = slots - 1;
	*targ_loop = feat_bpf_loop();
	bpf_map__set_max_entries(seen, seen_entries());
	bpf_map__set_max_entries(counts, stack_opts.max_stacks);
	bpf_map__set_max_entries(stacks, stack_opts.max_stacks * stacks_per_key);
	bpf_map__set_value_size(stacks, offsetof(struct stack_trace, ips) + slots * sizeof(__u64));
	/* Allocated as stacks and keys come, where the kernel can allocate in NMI (6.1), rather
	 * than max-stacks of them up front: preallocated, the default 128 slots are 35 MB of kernel
	 * memory cleared at every start (11-12 ms of it, and 3 ms for the counts), for the few
	 * hundred stacks of a short run; a deep stack's value is up to 8 KiB.  A sample adds a key and
	 * a few stacks at most, fewer than the allocator keeps ready per CPU (it refills them as
	 * soon as the program returns); a failed insert is counted as a table full.  Not for a
	 * long run across processes (maps_churn()), which deletes what it drains, unless its
	 * programs read what a drain deletes (an element freed so waits out their RCU sections). */
	if (feat_nmi_alloc() && (reads_old_gen || !maps_churn())) {
		bpf_map__set_map_flags(stacks, bpf_map__map_flags(stacks) | BPF_F_NO_PREALLOC);
		bpf_map__set_map_flags(counts, bpf_map__map_flags(counts) | BPF_F_NO_PREALLOC);
	}
	p_info("stacks: up to %u frames, %u slots a stack, %s; their loops %s", *targ_max_stack,
	       slots, bpf_map__map_flags(stacks) & BPF_F_NO_PREALLOC ? "allocated as they come" :
	       "preallocated", *targ_loop ? "bpf_loop()'s, verified once" :
	       "verified round by round (no bpf_loop())");
}

/* One insert and delete from one CPU: the allocator's cache there refills as the insert empties
 * it (an irq_work, run as soon as interrupts are on again). */
static void warm_map(struct bpf_map *map)
{
	int fd = bpf_map__fd(map);
	void *key, *val;

	if (fd < 0 || !(bpf_map__map_flags(map) & BPF_F_NO_PREALLOC))
		return;
	key = calloc(1, bpf_map__key_size(map));
	val = calloc(1, bpf_map__value_size(map));
	if (key && val && !bpf_map_update_elem(fd, key, val, BPF_NOEXIST))
		bpf_map_delete_elem(fd, key);
	free(key);
	free(val);
}

/* A map made without preallocation starts with one element ready per CPU where elements are
 * above 256 bytes (the kernel's prefill), and a program run takes up to four stacks before the
 * allocator can refill (from an irq_work, after the run): the first sample on each CPU lost a
 * stack (profile -e context-switches -a: 2 of 1951 samples).  An insert and a delete from each
 * CPU, before anything is attached, make the refill happen first.  A few syscalls and a
 * migration per CPU: tens of microseconds each, against the milliseconds preallocation costs. */
void stack_maps_warm(struct bpf_map *stacks, struct bpf_map *counts)
{
	int ncpu = nr_cpus_possible();
	cpu_set_t old, one;

	if (!(bpf_map__map_flags(stacks) & BPF_F_NO_PREALLOC) ||
	    sched_getaffinity(0, sizeof(old), &old))
		return;
	for (int cpu = 0; cpu < ncpu && cpu < CPU_SETSIZE; cpu++) {
		if (!cpu_online(cpu))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		warm_map(stacks);
		warm_map(counts);
	}
	sched_setaffinity(0, sizeof(old), &old);
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

/* Work of the start that needs no skeleton, done on threads while the main one opens, configures
 * and loads it: the unwinder's row array (32 MB that the kernel clears page by page as it makes
 * it: 4-10 ms), and the kernel struct fields its programs read (a 5 MB stream of the BTF: 5-6
 * ms; kept in the persistent cache for the rest of the boot, and read back from it by the runs
 * after), written to the loaded object before attach.  Where only the sampling programs read the
 * rows (profile without event specs), libbpf is handed a one-row stand-in at configure and the
 * array replaces it behind the same descriptor just before the first of them loads
 * (swap_rows()): the maps and the other programs load meanwhile, and the load no longer waits
 * for the array before it starts. */
static struct {
	pthread_t rows_thread, fields_thread;
	bool rows_started, fields_started, fields_kept;
	struct disk_cache *fields_cache; /* a reference for the fields' thread, or NULL */
	__u32 rows;
	int rows_fd;
	struct bpf_map *stand_in; /* libbpf's map, its descriptor a one-row stand-in so far */
	struct unw_kfields kfields;
} early = { .rows_fd = -1 };

static int make_row_array(__u32 rows);

static void *make_rows(void *arg)
{
	early.rows_fd = make_row_array(early.rows);
	return NULL;
}

static void *read_fields(void *arg)
{
	unwind_kernel_fields_kept(early.fields_cache, &early.kfields, &early.fields_kept);
	return NULL;
}

static void join_fields(void)
{
	if (early.fields_started)
		pthread_join(early.fields_thread, NULL);
	early.fields_started = false;
	disk_cache__put(early.fields_cache);
	early.fields_cache = NULL;
}

void stack_run_adopt_kfields(struct unw_kfields *out)
{
	join_fields();
	*out = early.kfields;
	if (stack_opts.unwind != UNWIND_FP)
		p_info("unwind: kernel mappings %s%s", !unwind_vma_support()->on ?
		       "not searched: no bpf_find_vma() (Linux 5.17)" : !out->ok ?
		       "not searched: a kernel struct field not found in the BTF" : out->prefill ?
		       "searched, and found ahead of the first sample" : "searched by the walks",
		       !unwind_vma_support()->on || !out->ok ? "" : out->mm_vdso ?
		       "; the [vdso] told by its address (mm->context.vdso)" :
		       "; the [vdso] not told (no mm_context_t.vdso in the BTF): walks end there");
	if (stack_opts.unwind != UNWIND_FP && out->ok)
		p_info("unwind: kernel struct fields %s", early.fields_kept ?
		       "kept from an earlier run of this boot" : "read from the kernel's BTF");
}

static void join_rows(void)
{
	if (early.rows_started)
		pthread_join(early.rows_thread, NULL);
	early.rows_started = false;
}

/* A row array as --unwind-mem sizes it, or a stand-in of one row, like the object's. */
static int make_row_array(__u32 rows)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(__u32),
				sizeof(struct unw_row), rows, &opts);

	return fd < 0 ? -errno : fd;
}

/* The row array made early behind the descriptor libbpf holds for the stand-in, where a program
 * that reads it is about to load.  0 or -errno (the load fails with it). */
static int swap_rows(void)
{
	int map_fd, err = 0;

	if (!early.stand_in)
		return 0;
	join_rows();
	map_fd = bpf_map__fd(early.stand_in);
	early.stand_in = NULL;
	if (early.rows_fd < 0)
		early.rows_fd = make_row_array(early.rows); /* the thread failed: here, then */
	if (early.rows_fd < 0)
		err = early.rows_fd;
	else if (dup3(early.rows_fd, map_fd, O_CLOEXEC) < 0)
		err = -errno;
	if (early.rows_fd >= 0)
		close(early.rows_fd);
	early.rows_fd = -1;
	if (err)
		p_err("cannot make the unwind row array: %s", strerror(-err));
	return err;
}

/* libbpf's handler of SEC("perf_event") (which has no other step), with the swap before load. */
static int before_sampling_load(struct bpf_program *prog, struct bpf_prog_load_opts *opts,
				long cookie)
{
	return swap_rows() ?: progload_beside(prog, opts);
}

/* The unwinder's small programs on threads as well, once the big ones have theirs: under a
 * real-time policy a thread keeps its CPU until it waits, and loaded by the main thread they made
 * the walk at a syscall's entry wait for a CPU until they were done (2.5-4.5 ms); on threads they
 * fill whichever CPU the big ones leave first. */
static int before_unwinder_load(struct bpf_program *prog, struct bpf_prog_load_opts *opts,
				long cookie)
{
	return progload_beside(prog, opts);
}

/* libbpf's own attach of SEC("raw_tp/NAME") and SEC("tp/CAT/NAME"), which a handler of ours
 * replaces. */
static int attach_unwinder(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	const char *sec = bpf_program__section_name(prog), *name;
	char cat[64];

	if (!strncmp(sec, "raw_tp/", 7)) {
		*link = bpf_program__attach_raw_tracepoint(prog, sec + 7);
	} else {
		name = strchr(sec + 3, '/');
		if (strncmp(sec, "tp/", 3) || !name || name - (sec + 3) >= (long)sizeof(cat))
			return -EINVAL;
		snprintf(cat, sizeof(cat), "%.*s", (int)(name - (sec + 3)), sec + 3);
		*link = bpf_program__attach_tracepoint(prog, cat, name + 1);
	}
	return libbpf_get_error(*link);
}

static void register_sampling_handler(void)
{
	LIBBPF_OPTS(libbpf_prog_handler_opts, opts, .prog_prepare_load_fn = before_sampling_load);
	LIBBPF_OPTS(libbpf_prog_handler_opts, others, .prog_prepare_load_fn = before_unwinder_load,
		    .prog_attach_fn = attach_unwinder);
	static const char *const secs[] = UNWIND_OTHER_SECS;
	static bool registered;

	if (registered)
		return;
	registered = libbpf_register_prog_handler("perf_event", BPF_PROG_TYPE_PERF_EVENT, 0,
						  &opts) >= 0;
	/* the unwinder's walk at a syscall's entry reads the rows too, and may load first; with
	 * no attach step of its own here, unwind_attach_syscalls() attaches it */
	libbpf_register_prog_handler(UNWIND_SYSCALL_SEC, BPF_PROG_TYPE_RAW_TRACEPOINT, 0, &opts);
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++)
		libbpf_register_prog_handler(secs[i], secs[i][0] == 'r' ? BPF_PROG_TYPE_RAW_TRACEPOINT :
					     BPF_PROG_TYPE_TRACEPOINT, 0, &others);
}

static struct disk_cache *run_cache(struct stack_run *s);

/* Two threads: the main one has less to do before it waits for them than either takes. */
static void early_start(struct stack_run *s)
{
	struct disk_cache *c;

	__u64 rows = (stack_opts.unwind_mem_mb << 20) / sizeof(struct unw_row);

	if (early.rows_started || stack_opts.unwind == UNWIND_FP || rows < 1024 ||
	    rows > UINT32_MAX)
		return;
	early.rows = rows;
	early.rows_started = !pthread_create(&early.rows_thread, NULL, make_rows, NULL);
	c = run_cache(s);
	early.fields_cache = c ? disk_cache__get(c) : NULL;
	early.fields_started = !pthread_create(&early.fields_thread, NULL, read_fields, NULL);
	if (!early.fields_started) {
		disk_cache__put(early.fields_cache);
		early.fields_cache = NULL;
	}
	register_sampling_handler();
}

void stack_run_adopt_early(struct bpf_map *rows, bool only_sampling)
{
	int stand_in;

	/* a stand-in left by a load that failed before its sampling programs */
	early.stand_in = NULL;
	if (rows && only_sampling && early.rows_started && stack_opts.unwind != UNWIND_FP &&
	    bpf_map__map_flags(rows) == BPF_F_MMAPABLE &&
	    bpf_map__value_size(rows) == sizeof(struct unw_row)) {
		stand_in = make_row_array(1);
		if (stand_in >= 0 && !bpf_map__reuse_fd(rows, stand_in))
			early.stand_in = rows;
		if (stand_in >= 0)
			close(stand_in); /* libbpf holds its own descriptor of it */
		if (early.stand_in)
			return;
	}
	join_rows();
	/* the row array UNWIND_CONFIGURE sizes next, as --unwind-mem says (none after the fallback
	 * to frame pointers) */
	if (rows && early.rows_fd >= 0 && stack_opts.unwind != UNWIND_FP &&
	    bpf_map__map_flags(rows) == BPF_F_MMAPABLE &&
	    bpf_map__value_size(rows) == sizeof(struct unw_row) && bpf_map__reuse_fd(rows, early.rows_fd))
		p_info("unwind: the row array made early is not used: %s", strerror(errno));
	if (early.rows_fd >= 0)
		close(early.rows_fd); /* libbpf holds its own descriptor of it */
	early.rows_fd = -1;
}

/* pprof's pid and tid labels need the threads apart; everything else merges processes of one
 * command, which keeps a fork storm's memory to its distinct stacks. */
static bool keep_threads(void)
{
	return stack_opts.pprof.path || period_pprof();
}

/* Samples at different instructions of a function kept apart: for annotate, and in a pprof
 * (its locations' addresses are the instructions sampled: bpfprof annotate -i reads them). */
static bool keep_leaf_addrs(void)
{
	return stack_opts.leaf_addrs || keep_threads();
}

int stack_run_init(struct stack_run *s)
{
	struct cgroup_names *cgroups = NULL;

	memset(s, 0, sizeof(*s));
	early_start(s);
	s->resolver = stack_resolver__new();
	/* every frame's line where a report row or a pprof location shows it; else only the
	 * inlined frames', and a function's samples at different lines stay one stack */
	if (!s->resolver ||
	    (stack_opts_lines() && stack_resolver__set_lines(s->resolver, stack_opts_inline(),
							     stack_opts.srcline || keep_threads()))) {
		p_err("cannot set up the symbolizer: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* inline chains and lines answered from the persistent cache where it has them */
	if (stack_opts_lines() && run_cache(s) &&
	    stack_resolver__set_line_cache(s->resolver, run_cache(s))) {
		p_err("cannot set up the symbolizer: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	cgroup_key = false;
	if (keep_threads()) {
		cgroups = cgroup_names__new();
		if (!cgroups && errno == ENOMEM) {
			p_err("cannot set up the symbolizer: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
		if (!cgroups)
			p_info("no cgroup v2 hierarchy is mounted: the pprof has no cgroup labels");
		stack_resolver__set_cgroups(s->resolver, cgroups);
		cgroup_key = cgroups != NULL;
	}
	return 0;
}

/* By default where the run writes a report, a flame graph or a pprof, as perf report does,
 * system-wide (-a) too: the debug info of the programs sampled is read only for the functions
 * sampled, once each (sym/srcline.c), on a thread of its own so that draining never waits on it
 * (sym/srcworker.h), and what it finds is kept in the persistent cache (sym/srccache.h), from
 * which later runs answer without opening the debug info (opening libc's debug file and its
 * memory were most of what inlined frames cost a run of the whole machine).  Folded stacks keep
 * their format unless --inline. */
bool stack_opts_inline(void)
{
	return !stack_opts.no_inline && (stack_opts.inline_frames || !stack_opts.folded);
}

bool stack_opts_lines(void)
{
	return stack_opts_inline() || stack_opts.srcline;
}

static void queue_exit(struct stack_drain *d, __u32 tgid)
{
	if (ARRAY_GROW(d->exited, d->exited_cap, d->nr_exited + 1))
		return; /* its symbols stay until the run ends: memory, not samples */
	d->exited[d->nr_exited].tgid = tgid;
	d->exited[d->nr_exited++].told_ns = now_ns();
}

/* The exits told EXIT_GRACE_NS or more before flip_ns: a prefix of d->exited. */
static size_t exits_done(const struct stack_drain *d, __u64 flip_ns)
{
	size_t n = 0;

	while (n < d->nr_exited && d->exited[n].told_ns + EXIT_GRACE_NS <= flip_ns)
		n++;
	return n;
}

/* What mmap records told so far, before anything asks for a process's mappings. */
static void read_records(struct stack_run *s)
{
	if (s->drain)
		mmaprec__consume(s->drain->records);
}

/* An exit told by an mmap record (of a process the symbolizer holds): forgotten after the next
 * drain, as one told by the BPF side. */
static void record_exited(void *ctx, __u32 tgid)
{
	struct stack_run *s = ctx;

	queue_exit(s->drain, tgid);
}

/* A process seen (snapshot it, and give it to the unwinder) or gone (forget it after the next
 * drain). */
static int proc_event(void *ctx, void *data, size_t size)
{
	struct stack_run *s = ctx;
	const struct proc_seen_event *e = data;

	if (size < sizeof(*e))
		return 0;
	/* a process born during the run is known from its records: no /proc read */
	read_records(s);
	if (e->exited) {
		/* the unwinder is done with it now; the symbolizer once its memory is freed */
		if (s->unwinder)
			unwinder__forget_process(s->unwinder, e->tgid, e->time);
		if (s->drain) {
			syms_cache__exited(stack_resolver__syms(s->resolver), e->tgid);
			queue_exit(s->drain, e->tgid);
		}
		return 0;
	}
	if (s->unwinder)
		return unwinder__proc_event(s->unwinder, data, size);
	syms_cache__snapshot(stack_resolver__syms(s->resolver), e->tgid);
	return 0;
}

/* A drained run's aggregation (or a period's), empty.  NULL on ENOMEM. */
static struct stack_agg *new_agg(const struct stack_run *s)
{
	struct stack_agg *a = stack_agg__new(keep_threads() || s->by_tid);

	if (a && keep_leaf_addrs())
		stack_agg__keep_leaf_addrs(a);
	if (a)
		stack_agg__bound(a, MAX_NODES);
	return a;
}

int stack_run_drain_init(struct stack_run *s, struct bpf_map *counts, struct bpf_map *stacks,
			 __u32 *drain_gen, const __u64 *counts_stored, const __u64 *stacks_stored)
{
	struct stack_drain *d = calloc(1, sizeof(*d));

	if (d)
		d->agg = new_agg(s);
	if (!d || !d->agg) {
		free(d);
		p_err("cannot set up draining: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	d->maps.counts_fd = bpf_map__fd(counts);
	d->maps.stacks_fd = bpf_map__fd(stacks);
	d->maps.key_size = bpf_map__key_size(counts);
	d->maps.gen_off = offsetof(struct sample_key, gen);
	d->gen = drain_gen;
	d->counts_stored = counts_stored;
	d->stacks_stored = stacks_stored;
	d->counts_max = bpf_map__max_entries(counts);
	d->stacks_max = bpf_map__max_entries(stacks);
	d->start_ns = d->last_ns = now_ns();
	s->drain = d;
	syms_cache__exits_told(stack_resolver__syms(s->resolver));
	return 0;
}

void stack_run_drain_keys(struct stack_run *s, stack_fill_fn fill, void *fill_ctx,
			  int (*keep)(void *ctx, __u32 gen), void *keep_ctx)
{
	s->drain->maps.fill = fill;
	s->drain->maps.fill_ctx = fill_ctx;
	s->drain->keep = keep;
	s->drain->keep_ctx = keep_ctx;
}

/* Returns once no BPF program can still be running with the generation it read before the flip:
 * programs run inside RCU read-side sections (preemption off, or rcu_read_lock), and
 * MEMBARRIER_CMD_GLOBAL is synchronize_rcu().  Where it is refused (nohz_full), a pause far
 * longer than any program runs. */
static void wait_for_programs(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
}

#define MB(x) ((double)(x) / (1 << 20))

/* Field VmRSS or VmHWM of /proc/self/status, MB; 0 when unread. */
static double status_mb(const char *field)
{
	size_t len = strlen(field);
	char line[128];
	double kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kb = strtod(line + len + 1, NULL);
	if (f)
		fclose(f);
	return kb / 1024;
}

/* -v: what the run holds, part by part (heap bytes by what each structure allocated, RSS as the
 * kernel counts it, and glibc's view of its arenas), to tell what grows in a long run. */
static void print_memory(const struct stack_run *s)
{
	const struct stack_drain *d = s->drain;
	struct stack_resolver_mem rm;
	struct stack_agg_mem am;
	struct unwind_usage us = {};
	struct mmaprec_stats ms;
	struct mallinfo2 mi = mallinfo2();
	unsigned long pages = 0, resident = 0, shared = 0;
	long page = sysconf(_SC_PAGESIZE);
	size_t known;
	FILE *f;

	f = fopen("/proc/self/statm", "re");
	if (!f || fscanf(f, "%lu %lu %lu", &pages, &resident, &shared) != 3)
		resident = shared = 0;
	if (f)
		fclose(f);
	stack_agg__mem(d->agg, &am);
	stack_resolver__mem(s->resolver, &rm);
	if (s->unwinder)
		unwinder__usage(s->unwinder, &us);
	mmaprec__stats(d->records, &ms);
	known = am.tree + am.frames + am.strings + am.samples + rm.memo + rm.known + rm.traces +
		rm.ksyms + rm.lines + rm.syms.proc_bytes + rm.syms.jit_bytes + rm.syms.file_bytes +
		rm.syms.sym_bytes + rm.syms.index_bytes + rm.syms.demangled_bytes + us.heap_bytes +
		ms.heap_bytes + d->maps.buf_size + d->exited_cap * sizeof(*d->exited);
	p_info("memory at %.0f s (drain %llu): RSS %.1f MB (%.1f not file-backed; peak %.1f so far); "
	       "heap %.1f MB in use of %.1f (%.1f free, %.1f of it at the top; %.1f mmapped), %.1f of it counted "
	       "here: stacks %.1f (tree %.1f, %zu nodes; frames %.1f, %zu; strings %.1f), frame "
	       "memo %.1f (its frames %.1f), stacks read %.1f, kernel symbols %.1f, source lines %.1f, processes %.1f "
	       "(%zu; JIT maps %.1f), files %.1f (%zu), their symbols %.1f (%zu parsed; %.1f of the "
	       "%zu files no process maps; %llu evicted), demangled %.1f, tables %.1f, unwinder %.1f (%u files, %u processes), mmap records %.1f, "
	       "drain buffers %.1f",
	       (d->last_ns - d->start_ns) / 1e9, (unsigned long long)d->drains,
	       MB((double)resident * page), MB((double)(resident - shared) * page), status_mb("VmHWM"),
	       MB(mi.uordblks + mi.hblkhd), MB(mi.arena + mi.hblkhd), MB(mi.fordblks),
	       MB(mi.keepcost), MB(mi.hblkhd), MB(known),
	       MB(am.tree + am.frames + am.strings + am.samples), MB(am.tree),
	       stack_agg__nr_nodes(d->agg), MB(am.frames), stack_agg__nr_frames(d->agg),
	       MB(am.strings), MB(rm.memo), MB(rm.known), MB(rm.traces), MB(rm.ksyms), MB(rm.lines),
	       MB(rm.syms.proc_bytes), rm.syms.procs, MB(rm.syms.jit_bytes),
	       MB(rm.syms.file_bytes), rm.syms.files, MB(rm.syms.sym_bytes), rm.syms.parsed,
	       MB(rm.syms.idle_sym_bytes), rm.syms.idle,
	       (unsigned long long)rm.syms.syms_evicted, MB(rm.syms.demangled_bytes), MB(rm.syms.index_bytes), MB(us.heap_bytes), us.files,
	       us.procs, MB(ms.heap_bytes), MB(d->maps.buf_size + d->exited_cap * sizeof(*d->exited)));
	p_info("memory: the largest symbols held: %s %.1f MB, %s %.1f, %s %.1f",
	       rm.syms.top[0].name, MB(rm.syms.top[0].bytes), rm.syms.top[1].name,
	       MB(rm.syms.top[1].bytes), rm.syms.top[2].name, MB(rm.syms.top[2].bytes));
}

/* wait: for the programs that may still write the old generation (none at the run's end, see
 * stack_run_finish()). */
static int drain_gen(struct stack_run *s, bool wait)
{
	struct stack_drain *d = s->drain;
	__u32 old = __atomic_load_n(d->gen, __ATOMIC_RELAXED) & 1;
	size_t exits = exits_done(d, now_ns());
	struct stack_drain_result res;
	int err, kept;

	/* from here on programs write the other generation (the count's next value: records that
	 * span flips tell them apart by it) */
	__atomic_fetch_add(d->gen, 1, __ATOMIC_SEQ_CST);
	if (wait)
		wait_for_programs();
	/* every mapping made before a sample of the old generation was recorded before it */
	mmaprec__consume(d->records);
	/* what outlives the old generation moves to the new one before it is deleted (failed,
	 * the drain still goes on: stacks missing, not samples counted twice) */
	kept = d->keep ? d->keep(d->keep_ctx, old ^ 1) : 0;
	err = stacks_drain_gen(s->resolver, &d->maps, old, d->agg, &res);
	err = err ?: kept;
	d->counts_deleted += res.counts_deleted;
	d->stacks_deleted += res.stacks_deleted;
	d->drained += res.value;
	d->drains++;
	d->last_ns = now_ns();
	/* told long enough before the flip: the samples their threads took until the process's
	 * memory was freed were read now (a thread that outlives its leader by more is
	 * symbolized, if at all, from a fresh snapshot) */
	for (size_t i = 0; i < exits; i++)
		syms_cache__forget_exited(stack_resolver__syms(s->resolver), d->exited[i].tgid);
	if (exits) {
		memmove(d->exited, d->exited + exits, (d->nr_exited - exits) * sizeof(*d->exited));
		d->nr_exited -= exits;
		/* and the files only they mapped (a build's fresh binaries, each a new inode) */
		d->files_freed += syms_cache__sweep_files(stack_resolver__syms(s->resolver));
	}
	/* what the drain, the forgotten processes and the unwinder's table builds freed goes back
	 * to the system: a long run's RSS is what it holds, not its high-water mark; without
	 * either, at most every TRIM_INTERVAL_NS (source lines bound what they parse themselves:
	 * sym/srcline.c); top at that interval alone (under churn, trimmed at each refresh, what
	 * it gave back was faulted in again by the next) */
	if ((exits && !s->trim_on_interval) || d->last_ns - d->trimmed_ns >= TRIM_INTERVAL_NS) {
		malloc_trim(0);
		d->trimmed_ns = d->last_ns;
	}
	if (verbose && !(d->drains % MEM_EVERY_DRAINS))
		print_memory(s);
	if (err)
		p_err("cannot read the samples: %s", strerror(-err));
	return err;
}

static int drain_once(struct stack_run *s)
{
	return drain_gen(s, true);
}

/* Due: the interval is over, or a map is a quarter full (inserts and deletes since the start):
 * both generations share the maps, and the new one fills while the old one is read. */
static bool drain_due(const struct stack_run *s)
{
	const struct stack_drain *d = s->drain;
	__u64 counts = __atomic_load_n(d->counts_stored, __ATOMIC_RELAXED) - d->counts_deleted;
	__u64 stacks = __atomic_load_n(d->stacks_stored, __ATOMIC_RELAXED) - d->stacks_deleted;
	__u64 interval = !d->drains ? FIRST_DRAIN_NS : s->drain_every_ns ?: DRAIN_INTERVAL_NS;

	return now_ns() - d->last_ns >= interval || counts * 4 >= d->counts_max ||
	       stacks * 4 >= d->stacks_max;
}

bool stack_run_ending(const struct stack_run *s)
{
	return s->planned_end_ns && now_ns() + END_DRAIN_NS >= s->planned_end_ns;
}

/* The run ends within END_DRAIN_NS and was not drained in that window yet. */
static bool end_near(const struct stack_run *s)
{
	return stack_run_ending(s) && s->drain->last_ns + END_DRAIN_NS < s->planned_end_ns;
}

static void drain_free(struct stack_drain *d)
{
	if (!d)
		return;
	mmaprec__free(d->records);
	stack_drain_maps_free(&d->maps);
	stack_agg__free(d->agg);
	free(d->exited);
	free(d);
}

static int preload_path(const char *path, void *ctx)
{
	unwinder__preload_file(ctx, path, true);
	return 0;
}

static int queue_path(const char *path, void *ctx)
{
	unwinder__preload_file(ctx, path, false);
	return 0;
}

/* Tables ready before the first sample wherever the code to run is known: the files of -p/-t
 * targets and of COMMAND with its interpreter and libraries (it is held before exec) are loaded
 * before the run starts; the libraries nearly every process maps are queued to the worker.
 * Processes bpfprof has not seen yet are walked through the kernel's mappings from their first
 * sample (bpf/unwind.bpf.h), so a file whose table is loaded is unwound by it at once: the
 * stacks of a burst, or of short processes, do not depend on how soon bpfprof saw them. */
static void preload_tables(struct unwinder *u)
{
	static const char *const common[] = { "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1" };
	char path[PATH_MAX];
	__u64 start = now_ns();

	/* every process maps it, and the walks know it without user space (UNW_VDSO_KEY) */
	unwinder__preload_vdso(u);
	if (targets.command && !child_program_path(targets.command[0], path, sizeof(path)))
		probe_program_files(path, preload_path, u);
	for (int i = 0; i < targets.nr_pids; i++)
		unwinder__preload_process(u, targets.pids[i]);
	for (int i = 0; i < targets.nr_tids; i++) {
		__u32 tgid;

		if (!thread_group_of(targets.tids[i], &tgid))
			unwinder__preload_process(u, tgid);
	}
	p_info("unwind: tables of the targets loaded before they run in %.1f ms",
	       (now_ns() - start) / 1e6);
	probe_program_files("/bin/sh", queue_path, u); /* sh, ld.so, libc */
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (!probe_ldcache_lookup("/etc/ld.so.cache", common[i], path, sizeof(path), NULL, NULL))
			unwinder__preload_file(u, path, false);
}

static int kept_read(void *ctx, const char *name, size_t max, void **buf, size_t *len)
{
	return disk_cache__read_file(ctx, name, max, buf, len);
}

static int kept_write(void *ctx, const char *name, const void *buf, size_t len)
{
	return disk_cache__write_file(ctx, name, buf, len);
}

/* The persistent cache directory (core/diskcache.h) of the unwind tables, the inline chains and
 * the core kernel's symbols of the boot, opened once, unless --no-cache.  A directory refused as
 * unsafe is said at once; one that cannot be made (not root) only with -v. */
static struct disk_cache *run_cache(struct stack_run *s)
{
	char why[4200];

	if (stack_opts.no_unwind_cache || s->cache_tried)
		return s->cache;
	s->cache_tried = true;
	s->cache = disk_cache__open(NULL, stack_opts.unwind_cache_mb << 20, why, sizeof(why));
	if (!s->cache && errno == EPERM)
		p_err("cache %s; unwind tables and inline chains are made in memory only", why);
	else if (!s->cache)
		p_info("cache: %s; unwind tables and inline chains are made in memory only", why);
	return s->cache;
}

/* The unwinder's tables through the persistent cache (unwind/tcache.h). */
static void open_cache(struct stack_run *s)
{
	struct disk_cache *dc = run_cache(s);
	struct unw_cache *c = dc ? unw_cache__on(dc) : NULL;

	if (c)
		unwinder__set_cache(s->unwinder, c);
}

/* The unwinder's requests name processes too (a refresh, a file met in the kernel's mappings). */
static int unwind_event(void *ctx, void *data, size_t size)
{
	struct stack_run *s = ctx;

	read_records(s);
	return unwinder__handle_event(s->unwinder, data, size);
}

static int known_bpf(__u64 start, __u32 len, const char *name, void *ctx)
{
	return stack_resolver__known_bpf(ctx, start, len, name);
}

/* This run's BPF functions, as /proc/kallsyms names them (bpf_prog_ksyms()), so that kernel
 * symbols kept from an earlier run name a sample inside one (the unwinders' walks at execve() and
 * exit_group() are in most system-wide runs) without reading the file. */
static void name_own_programs(struct stack_resolver *res, struct bpf_object *obj)
{
	const struct btf *btf = obj ? bpf_object__btf(obj) : NULL;
	struct bpf_program *prog;

	if (!obj || !btf)
		return;
	bpf_object__for_each_program(prog, obj)
		if (bpf_program__fd(prog) >= 0)
			bpf_prog_ksyms(bpf_program__fd(prog), btf, known_bpf, res);
}

/* The kernel-stack walker starts as soon as the kernel symbols have loaded (on the prefetching
 * thread): until then, and on a kernel without ORC tables, kernel stacks are bpf_get_stack()'s. */
static void kstack_start(const struct ksyms *ks, void *ctx)
{
	struct kstack_cfg *cfg = ctx;

	if (!ks || kstack_cfg_fill(cfg, ks)) {
		p_info("kernel stacks: by bpf_get_stack() (%s)", ks ? "no ORC tables in /proc/kallsyms" :
			"no kernel symbols");
		return;
	}
	p_info("kernel stacks: walked in BPF from the kernel's ORC tables (%u entries at 0x%llx)",
	       cfg->orc_nr, (unsigned long long)cfg->orc);
}

int stack_run_start(struct stack_run *s, struct runner *r, const struct unwind_bpf *ub,
		    struct bpf_map *proc_events)
{
	struct syms_cache *sc = stack_resolver__syms(s->resolver);
	int err;

	/* records need the drain: it forgets the processes whose exits they tell */
	if (s->drain && !getenv("BPFPROF_NO_MMAP_RECORDS")) {
		s->drain->records = mmaprec__open(sc, record_exited, s);
		if (!s->drain->records)
			p_info("mmap records: %s; new processes are read from /proc", strerror(errno));
	}
	if (stack_opts.unwind != UNWIND_FP) {
		s->unwinder = unwinder__new(ub, sc, stack_opts.unwind);
		if (!s->unwinder) {
			err = -errno;
			p_err("cannot set up the unwinder: %s", strerror(-err));
			return err;
		}
		open_cache(s);
		preload_tables(s->unwinder);
		err = runner_add_ringbuf(r, ub->events, unwind_event, s);
	} else {
		err = 0;
	}
	/* Processes seen and gone: with mmap records, which tell what a new process maps, nothing
	 * waits for them but the unwinder's mapping list, which the walks do without meanwhile
	 * (the kernel's mappings, found ahead at exec and mmap): read at the next tick, not woken
	 * for each (a new process every few ms under churn) */
	if (s->drain && s->drain->records)
		err = err ?: runner_add_ringbuf_ticks(r, proc_events, proc_event, s);
	else
		err = err ?: runner_add_ringbuf(r, proc_events, proc_event, s);
	s->period_start_ns = r->start_ns;
	if (run_opts.duration)
		s->planned_end_ns = r->start_ns + (__u64)(run_opts.duration * 1e9);
	/* kernel symbols load while the run goes on, not after it (none with -U); the core
	 * kernel's kept in the cache between the runs of a boot */
	if (!err && !stack_opts.user_only) {
		struct disk_cache *dc = run_cache(s);

		if (dc)
			stack_resolver__keep_ksyms(s->resolver,
						   &(struct ksyms_store){ kept_read, kept_write, dc });
		name_own_programs(s->resolver, r->obj);
		stack_resolver__prefetch(s->resolver, s->kstack ? kstack_start : NULL, s->kstack);
	}
	return err;
}

/* How long the next tick may wait: until the mmap record rings would be a quarter full at the
 * pace records came since the last tick, all on one CPU; not while a second snapshot is due, nor
 * with the unwinder (its table builds and retries keep their pace). */
static __u64 quiet_for(struct stack_run *s, size_t records, __u64 now)
{
	struct mmaprec_stats ms;
	__u64 dt = now - s->last_tick_ns;

	if (s->unwinder || syms_cache__revisits_pending(stack_resolver__syms(s->resolver)))
		return 0;
	if (!records)
		return UINT64_MAX;
	mmaprec__stats(s->drain->records, &ms);
	return ms.ring_bytes / 4 * dt / (records * RECORD_BYTES);
}

int stack_run_tick(struct stack_run *s)
{
	size_t records = 0;
	__u64 now = now_ns();

	/* often enough that the rings do not fill under churn */
	if (s->drain)
		records = mmaprec__consume(s->drain->records);
	syms_cache__revisit(stack_resolver__syms(s->resolver), REVISIT_AFTER_NS);
	unwinder__tick(s->unwinder);
	s->quiet_ns = s->last_tick_ns ? quiet_for(s, records, now) : 0;
	s->last_tick_ns = now;
	return s->drain && (drain_due(s) || end_near(s)) ? drain_once(s) : 0;
}

struct stack_agg *stack_run_take_period(struct stack_run *s)
{
	struct stack_drain *d = s->drain;
	struct stack_agg *fresh, *taken;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	fresh = new_agg(s);
	if (!fresh) {
		p_err("cannot start a new period: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	/* samples written before the flip are in this period, the ones after it in the next; keys
	 * still waiting for their inline chains are settled into this one (waiting for the worker) */
	if (drain_once(s) || stack_resolver__settle(s->resolver, d->agg)) {
		stack_agg__free(fresh);
		errno = EIO;
		return NULL;
	}
	taken = d->agg;
	d->agg = fresh;
	return taken;
}

int stack_run_period(struct stack_run *s, struct runner *r, int (*write)(struct runner *r))
{
	struct stack_agg *agg;
	int err;

	s->period_end_ns = now_ns();
	agg = stack_run_take_period(s);
	if (!agg)
		return -errno;
	/* its stacks read in its tree, as samples only where the command asks
	 * (stack_run_samples()) */
	s->agg = agg;
	err = write(r);
	/* printed periods go out as they end, not when a buffer fills */
	if (!err && period_text() && fflush(r->out) == EOF) {
		err = -errno;
		runner_report_failed(err);
	}
	s->samples = NULL;
	s->nr_samples = 0;
	s->agg = NULL;
	stack_agg__free(agg);
	s->period_start_ns = s->period_end_ns;
	s->period_end_ns = 0;
	return err;
}

double stack_run_seconds(const struct stack_run *s, const struct runner *r)
{
	__u64 end = s->period_end_ns ?: now_ns();

	if (!period_opts.every)
		return runner_elapsed(r);
	return end > s->period_start_ns ? (end - s->period_start_ns) / 1e9 : 0;
}

int stack_run_finish(struct stack_run *s)
{
	struct stack_drain *d = s->drain;
	int err = 0;

	/* the last period ends with the run (detached: nothing is counted after this) */
	s->period_end_ns = now_ns();
	syms_cache__revisit(stack_resolver__syms(s->resolver), 0);
	if (s->unwinder && verbose)
		unwinder__print_usage(s->unwinder, stderr);
	if (!d)
		return 0;
	/* both generations: the one written last, and the other in case a drain failed.  The
	 * programs are detached: every run that could still write began before the first flip and
	 * has ended once its wait is over, so the second drain waits for nothing (a grace period,
	 * 5-20 ms of the time from the run's end to the report); nor does the first where the
	 * command stopped its writers in sync */
	err = drain_gen(s, !s->stopped_in_sync);
	err = err ?: drain_gen(s, false);
	err = err ?: stack_resolver__settle(s->resolver, d->agg);
	p_info("drained %llu times: %llu in %zu KB of distinct stacks (%llu keys and %llu stacks "
	       "read); %llu stack ids gone before read; %zu processes and %zu files held (%zu files "
	       "freed)", (unsigned long long)d->drains, (unsigned long long)d->drained,
	       stack_agg__bytes(d->agg) >> 10, (unsigned long long)d->counts_deleted,
	       (unsigned long long)d->stacks_deleted,
	       (unsigned long long)stack_resolver__missing(s->resolver),
	       syms_cache__nr_procs(stack_resolver__syms(s->resolver)),
	       syms_cache__nr_files(stack_resolver__syms(s->resolver)), d->files_freed);
	{
		struct stack_agg_stats st;

		stack_agg__stats(d->agg, &st);
		p_info("distinct stacks: %zu of %zu frames in %zu nodes (%zu at most: %llu samples "
		       "kept at a caller's path); %zu distinct frames, %zu strings", st.entries,
		       st.ids, st.nodes, st.max_nodes, (unsigned long long)st.cut_samples,
		       st.frames, st.strings);
	}
	stack_resolver__print_lines_cost(s->resolver);
	stack_resolver__print_memo(s->resolver);
	if (verbose)
		print_memory(s);
	stack_resolver__release(s->resolver);
	/* nothing is added from here on: the writers only read the tree */
	stack_agg__seal(d->agg);
	/* what symbolizing held (freed just above: processes, files, kernel symbols, the lines'
	 * indexes and libdw's state) and the aggregation's indexes go back to the system before
	 * the outputs are made */
	malloc_trim(0);
	if (d->records) {
		struct mmaprec_stats ms;

		mmaprec__stats(d->records, &ms);
		p_info("mmap records: %llu read from %d rings of %llu KB (%llu forks, %llu execs, "
		       "%llu executable mappings, %llu exits); %llu lost",
		       (unsigned long long)ms.records, ms.cpus,
		       (unsigned long long)ms.ring_bytes >> 10, (unsigned long long)ms.forks,
		       (unsigned long long)ms.execs, (unsigned long long)ms.mmaps,
		       (unsigned long long)ms.exits, (unsigned long long)ms.lost);
	}
	/* the outputs read the stacks where they are, as arrays only where they must
	 * (stack_run_samples()) */
	s->agg = d->agg;
	return err;
}

int stack_run_samples(struct stack_run *s)
{
	struct stack_tree t;
	size_t n;

	if (s->samples || !s->agg)
		return 0;
	s->samples = (struct stack_sample *)stack_agg__samples(s->agg, &n);
	s->nr_samples = n;
	stack_agg__tree(s->agg, &t);
	/* an empty aggregation (the periods took every sample) has no samples, and no error */
	if (!s->samples && t.nr_entries) {
		p_err("cannot read the samples: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

void stack_run_free(struct stack_run *s)
{
	stack_run_adopt_early(NULL, false);
	join_fields();
	stack_resolver__join_prefetch(s->resolver); /* it keeps kernel symbols in the cache */
	unwinder__free(s->unwinder);
	s->unwinder = NULL;
	if (!s->drain)
		stack_samples_free(s->samples, s->nr_samples);
	drain_free(s->drain);
	s->drain = NULL;
	s->samples = NULL;
	s->nr_samples = 0;
	s->agg = NULL;
	stack_resolver__free(s->resolver);
	s->resolver = NULL;
	disk_cache__put(s->cache);
	s->cache = NULL;
	s->cache_tried = false;
}

/* perf report's sections: one report per event, with its own header and percentages; the
 * stacks from the tree t when it is given, else from the n samples s. */
static int write_sections(FILE *out, const struct stack_outputs *o, const struct stack_tree *t,
			  const struct stack_sample *s, size_t n)
{
	struct stack_sample *part = t ? NULL : malloc((n ?: 1) * sizeof(*part));
	int err = part || t ? 0 : -ENOMEM;

	for (int e = 0; e < o->nr_events && !err; e++) {
		struct report_header h = o->header;
		size_t k = 0;

		h.event = o->event_names[e];
		if (e)
			fputc('\n', out);
		if (t) {
			err = report_write_tree(out, &h, t, e, &o->report);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (s[i].event == (__u32)e)
				part[k++] = s[i]; /* shallow: the frames stay the caller's */
		err = stack_agg_report_write(out, &h, part, k, &o->report);
	}
	free(part);
	return err;
}

bool stack_files_wanted(void)
{
	return stack_opts.svg.path || stack_opts.pprof.path;
}

void stack_files_write(const struct stack_outputs *o, const struct stack_sample *s, size_t n,
		       const struct stack_tree *t)
{
	/* the report still goes out without a file that failed: it costs only itself */
	if (stack_opts.svg.of.f) {
		int err = t ? flamegraph_write_tree(stack_opts.svg.of.f, t, &o->flamegraph) :
			      flamegraph_write(stack_opts.svg.of.f, s, n, &o->flamegraph);

		if (err)
			runner_output_failed(&stack_opts.svg, err);
	}
	if (stack_opts.pprof.of.f) {
		struct pprof_meta meta = o->pprof;
		int err;

		/* the report's header as comments, for bpfprof report to print again */
		meta.header = &o->header;
		err = t ? pprof_write_tree(stack_opts.pprof.of.f, t, &meta) :
			  pprof_write(stack_opts.pprof.of.f, s, n, &meta);

		if (err)
			runner_output_failed(&stack_opts.pprof, err);
	}
}

/* Where no report carries the header (folded stacks, record's files), what a user must not miss
 * of it goes to stderr: an empty run (not left silent), stacks cut, samples lost. */
static void header_to_stderr(const struct stack_outputs *o, bool empty, const char *what)
{
	if (empty)
		fprintf(stderr, "bpfprof: no %s: %s is empty\n", o->lost_what, what);
	if (o->header.cut)
		fprintf(stderr, "bpfprof: %s\n", o->header.cut);
	if (o->header.lost)
		fprintf(stderr, "bpfprof: lost %s: %llu (%s)\n", o->lost_what,
			(unsigned long long)o->header.lost,
			o->header.lost_detail ? o->header.lost_detail : "");
}

int stack_outputs_write(FILE *out, const struct stack_outputs *outputs, const struct stack_run *sr)
{
	const struct stack_sample *s = sr->samples;
	struct stack_outputs with_notes = *outputs, *o = &with_notes;
	char refused[512], lines_missing[512], cut[256];
	size_t n = sr->nr_samples;
	struct stack_tree tree, *t = NULL;
	/* -v: whether the outputs set the run's peak (issue 17: 40 MB with the report) */
	double rss = verbose && sr->drain ? status_mb("VmRSS") : 0, hwm = rss ? status_mb("VmHWM") : 0;
	int err = 0;

	/* a drained run's stacks: every writer reads them in the tree, where they are */
	if (!s && sr->agg) {
		stack_agg__tree(sr->agg, &tree);
		t = &tree;
	}

	/* --sort applies to every report of the stack commands; --srcline too */
	o->report.sort = o->report.sort ?: stack_opts.sort;
	o->report.srcline |= stack_opts.srcline;
	o->folded_opts.srcline |= stack_opts.srcline;
	/* frames read back keep their inlined frames, which only --no-inline drops */
	o->folded_opts.inline_frames |= stack_opts_inline() || (!sr->resolver && !stack_opts.no_inline);
	if (sr->resolver &&
	    stack_resolver__lines_missing(sr->resolver, lines_missing, sizeof(lines_missing)))
		o->header.lines = lines_missing;
	if (sr->agg) {
		struct stack_agg_stats st;

		stack_agg__stats(sr->agg, &st);
		snprintf(cut, sizeof(cut), "Stacks cut: %llu samples (%llu drained stacks) kept under "
			 "their longest known caller path: the distinct stacks filled their bound "
			 "(%zu nodes)", (unsigned long long)st.cut_samples,
			 (unsigned long long)st.cut_adds, st.max_nodes);
		o->header.cut = st.cut_samples ? cut : NULL;
	}
	/* the files refused were named on stderr as they were met; the report says how many */
	if (sr->resolver &&
	    syms_cache__refusals(stack_resolver__syms(sr->resolver), refused, sizeof(refused)))
		o->header.symbols = refused;
	/* --every: a period, to --pprof-dir and --push; printed as below when neither is given */
	if (period_pprof()) {
		o->pprof.header = &o->header;
		return period_send(s, n, t, &o->pprof, sr->period_start_ns,
				   sr->period_end_ns ?: now_ns(), o->header.frequency);
	}

	stack_files_write(o, s, n, t);
	if (o->files_only) {
		header_to_stderr(o, t ? !t->nr_entries : !n, "the profile");
	} else if (o->folded) {
		err = t ? folded_write_tree(out, t, &o->folded_opts) :
			  folded_write(out, s, n, &o->folded_opts);
		header_to_stderr(o, t ? !t->nr_entries : !n, "the folded output");
	} else if (o->nr_events > 1) {
		err = write_sections(out, o, t, s, n);
	} else if (t) {
		err = report_write_tree(out, &o->header, t, -1, &o->report);
	} else {
		err = stack_agg_report_write(out, &o->header, s, n, &o->report);
	}
	/* the files above are whole: a report that failed costs only itself */
	if (err)
		runner_report_failed(err);
	if (rss)
		p_info("memory: RSS %.1f MB before the outputs, peak RSS %.1f MB before them and %.1f "
		       "with them", rss, hwm, status_mb("VmHWM"));
	return 0;
}

struct stack_outputs stack_outputs_from_opts(const char *default_title, enum report_unit unit)
{
	return (struct stack_outputs){
		.folded = stack_opts.folded,
		.folded_opts = { .annotate_kernel = stack_opts.annotate },
		.flamegraph = {
			.title = stack_opts.title ? stack_opts.title : default_title,
			.annotate_kernel = true,
		},
		.header = {
			.unwind = stack_opts.kernel_only ? NULL : unwind_method_name(stack_opts.unwind),
		},
		.report = {
			.children = !stack_opts.no_children,
			.percent_limit = stack_opts.percent_limit,
			.unit = unit,
			.call_graph = true,
			.call_graph_limit = stack_opts.call_graph_limit,
		},
		.lost_what = "samples",
	};
}

void stack_pprof_meta(struct stack_outputs *o, const struct runner *r, const char *comment)
{
	static char machine[MACHINE_HEADER_MAX];
	struct timespec wall;
	__u64 mono = now_ns();

	/* the run's start on the wall clock: now, less the time since the monotonic start */
	clock_gettime(CLOCK_REALTIME, &wall);
	o->pprof.time_nanos = (__s64)wall.tv_sec * 1000000000LL + wall.tv_nsec -
			      (r->start_ns && mono > r->start_ns ? (__s64)(mono - r->start_ns) : 0);
	o->pprof.duration_nanos = runner_elapsed(r) * 1e9;
	o->pprof.labels = PPROF_LABEL_PID | PPROF_LABEL_TID | PPROF_LABEL_COMM;
	o->pprof.comment = comment;
	/* one run a process: the machine's lines are the run's */
	machine_header(machine, sizeof(machine), o->pprof.time_nanos);
	o->pprof.machine = machine;
}
