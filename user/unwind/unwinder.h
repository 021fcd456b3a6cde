/* User side of the in-kernel unwinder (bpf/unwind.bpf.h): keeps each sampled process's list of
 * executable mappings in the kernel, and builds (user/unwind/cfi.c) and loads the unwind table of a
 * mapped file when the BPF side first meets it, within a memory budget: the cold tables (unused
 * for seconds) that free the room needed with the fewest rows are evicted; a table that would
 * need a table in use evicted waits.  Tables are per file (device + inode) and shared by every
 * process. */
#ifndef BPFPROF_UNWINDER_H
#define BPFPROF_UNWINDER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "unwind.h"

struct disk_cache;

#define UNWIND_DEFAULT_MEM_MB 32
/* The tables and the BPF walk know x86-64's registers and ABI only. */
#if defined(__x86_64__)
#define UNWIND_DEFAULT_METHOD UNWIND_AUTO
#else
#define UNWIND_DEFAULT_METHOD UNWIND_FP
#endif

/* "fp", "eh", "auto" -> method.  0 or -EINVAL. */
int unwind_parse_method(const char *s, enum unwind_method *out);
/* --unwind's argument; prints the error (an unknown name, or eh/auto off x86-64).  0 or -EINVAL. */
int unwind_opt_method(const char *arg, enum unwind_method *out);
/* "fp", "eh", "auto". */
const char *unwind_method_name(enum unwind_method m);

/* The unwinder's maps in a skeleton: UNWIND_BPF_MAPS(skel). */
struct unwind_bpf {
	struct bpf_map *rows, *tables, *procs, *walks, *events, *files, *sysstacks;
};
#define UNWIND_BPF_MAPS(skel)                                                                \
	((struct unwind_bpf){ (skel)->maps.unwind_rows, (skel)->maps.unwind_tables,          \
			      (skel)->maps.unwind_procs, (skel)->maps.walks,                 \
			      (skel)->maps.unwind_events, (skel)->maps.unwind_files,         \
			      (skel)->maps.unwind_sysstacks })

/* The walk of a process whose mappings are not loaded yet through the kernel's own
 * (bpf_find_vma(), 5.17), as this kernel allows it: the helper, and the mmap() exit tracepoint
 * that finds mappings ahead of the first sample (targ_prefill).  Probed once, before load. */
struct unwind_vma_support {
	bool on, prefill;
};
const struct unwind_vma_support *unwind_vma_support(void);
/* The kernel struct field offsets those walks read, from the kernel's BTF (streamed: a few ms,
 * on a thread while the object loads; stack_run_adopt_early() waits for it).  out->ok and
 * out->prefill are 0 where fields are missing. */
void unwind_kernel_fields(struct unw_kfields *out);
/* The same, kept in the persistent cache c (NULL: none) for the rest of the boot: the kernel's BTF
 * cannot change before the next, and a later run reads the offsets back rather than stream the
 * BTF again (3 ms of CPU that the start shares two CPUs for).  *kept tells whether they came
 * from the cache. */
void unwind_kernel_fields_kept(struct disk_cache *c, struct unw_kfields *out, bool *kept);

/* Between open and load: sizes the maps for method m and a row budget of mem_bytes (maps shrink
 * to nothing for fp).  *task_regs tells whether the kernel has bpf_task_pt_regs() (the
 * targ_unwind_task_regs setting).  Returns 0 or -EINVAL (budget too small or too large). */
int unwind_bpf_configure(const struct unwind_bpf *ub, enum unwind_method m, __u64 mem_bytes,
			 bool *task_regs);
/* The same, and the settings in the skeleton's read-only data. */
#define UNWIND_CONFIGURE(skel, method, mem_mb)                                                \
	do {                                                                                  \
		struct unwind_bpf ub_ = UNWIND_BPF_MAPS(skel);                                \
		bool task_regs_;                                                              \
                                                                                              \
		(skel)->rodata->targ_unwind = (method);                                       \
		unwind_bpf_configure(&ub_, (method), (__u64)(mem_mb) << 20, &task_regs_);     \
		(skel)->rodata->targ_unwind_task_regs = task_regs_;                           \
		(skel)->rodata->targ_find_vma = (method) != UNWIND_FP && unwind_vma_support()->on; \
		(skel)->rodata->targ_prefill = (method) != UNWIND_FP && unwind_vma_support()->prefill; \
		bpf_program__set_autoload((skel)->progs.unwind_mmap, (skel)->rodata->targ_prefill); \
		bpf_program__set_autoload((skel)->progs.unwind_fork, (skel)->rodata->targ_prefill); \
		/* the walks at execve() and exit_group() entry start from the saved registers */ \
		bpf_program__set_autoload((skel)->progs.unwind_syscall,                       \
					  (method) != UNWIND_FP && task_regs_);                \
	} while (0)

/* The section of the unwinder's walk at a syscall's entry (bpf/unwind_progs.bpf.h: unwind_syscall). */
#define UNWIND_SYSCALL_SEC "raw_tp/sys_enter"
/* The sections of its other programs (exit, mmap, fork, exec), as raw_tp/NAME or tp/CAT/NAME. */
#define UNWIND_OTHER_SECS                                                                       \
	{ "raw_tp/sched_process_exit", "tp/syscalls/sys_exit_mmap", "raw_tp/sched_process_fork", \
	  "raw_tp/sched_process_exec" }
/* After the skeleton's attach: prog (the unwinder's unwind_syscall), where loaded, attached to
 * the sys_enter raw tracepoint (*link, unless the skeleton did).  A failure is told, not
 * returned: samples inside execve() and exit_group() then keep their leaf alone. */
void unwind_attach_syscalls(struct bpf_program *prog, struct bpf_link **link);

struct unwinder;
struct syms_cache;

/* After load: maps the row and table arrays.  The syms_cache provides the process mappings (and
 * the open files behind them) and must outlive the unwinder; m is the method the BPF side was
 * configured with.  NULL with errno set on error. */
struct unwinder *unwinder__new(const struct unwind_bpf *ub, struct syms_cache *sc,
			       enum unwind_method m);
/* Same without BPF (unit tests): tables in memory, room for nr_rows rows. */
struct unwinder *unwinder__new_mem(struct syms_cache *sc, __u32 nr_rows);

/* Tables are read from, and stored in, the persistent cache c (unwind/tcache.h), which the
 * unwinder now owns.  Call before the first load. */
struct unw_cache;
void unwinder__set_cache(struct unwinder *u, struct unw_cache *c);

/* Loads (or replaces) the mapping list of a process, as syms_cache__snapshot() last saw it:
 * call it right after the snapshot.  Returns 0, -ENOENT (unknown process) or -errno. */
int unwinder__add_process(struct unwinder *u, __u32 tgid);
/* Tables ready before the first sample.  The file at path (what a process is about to map:
 * a COMMAND, its libraries, the libraries every process maps) gets its id, known to the BPF side,
 * and its table built and loaded now (wait), or on the worker.  Returns 0 or -errno (a file
 * without usable CFI is not an error: it is marked as such). */
int unwinder__preload_file(struct unwinder *u, const char *path, bool wait);
/* The same for every file process tgid maps (snapshotted now), and its mapping list. */
int unwinder__preload_process(struct unwinder *u, __u32 tgid);
/* The table of this kernel's vdso image (the same in every process), loaded now and never
 * evicted, under the key the walks give the [vdso] mapping of any process (UNW_VDSO_KEY).
 * Returns 0, -ENOENT (no vdso) or -errno. */
int unwinder__preload_vdso(struct unwinder *u);

/* Forgets process tgid, which exited: its record, and its mapping list in the BPF map where
 * the BPF side, which deleted it just after gone_ns (CLOCK_MONOTONIC ns; 0: not known), may not
 * have: a list written since then. */
void unwinder__forget_process(struct unwinder *u, __u32 tgid, __u64 gone_ns);

/* Handles one request from the BPF side (struct unw_event): builds and loads a table, or
 * refreshes a process's mappings.  A ring_buffer_sample_fn; ctx is the unwinder. */
int unwinder__handle_event(void *ctx, void *data, size_t size);

/* The first sight of a process (struct proc_seen_event from the stack objects' proc_events):
 * snapshots its mappings for the symbolizer, then loads them for the unwinder.  A
 * ring_buffer_sample_fn; ctx is the unwinder. */
int unwinder__proc_event(void *ctx, void *data, size_t size);

/* The unwinder's summary line (unwinder__summary(); empty without an unwinder) into buf, also on
 * stderr with folded output when a file had no usable CFI, or with -v. */
void unwind_summary_line(const struct unwinder *u, bool folded, char *buf, size_t size);

/* Builds and loads table `id` now (what a UNW_EV_LOAD_TABLE request does), evicting tables unused
 * for a while when the budget is full.  Returns 0, -EBUSY (no room but by evicting tables in use:
 * put off, tried again by unwinder__tick()) or a negative errno (the table is then marked as
 * having no usable CFI). */
int unwinder__load_table(struct unwinder *u, __u32 id);

/* From the run loop: tries the loads put off for want of room again (at most once a second,
 * and only those that fit now). */
void unwinder__tick(struct unwinder *u);

/* ---- inspection: tests, -v, the report ---- */
/* The table id of the file (dev, ino), or -ENOENT. */
int unwinder__table_of(const struct unwinder *u, __u64 dev, __u64 ino);
/* The table descriptors and the rows array (what the BPF side reads). */
const struct unw_table *unwinder__table(const struct unwinder *u, __u32 id);
const struct unw_row *unwinder__rows(const struct unwinder *u);
/* In-memory unwinders only: the mapping list last loaded for tgid, or NULL. */
const struct unw_proc *unwinder__proc(const struct unwinder *u, __u32 tgid);
/* Marks a table used at time ns (what the BPF side does on every sample that uses it). */
void unwinder__touch(struct unwinder *u, __u32 id, __u64 ns);

struct unwind_usage {
	__u64 rows_used, rows_cap;  /* rows of loaded tables / room in the budget */
	__u32 tables_loaded, tables_no_cfi, files;
	__u64 loads, evictions;
	__u64 deferrals;            /* loads put off: no room but by evicting tables in use */
	__u64 loads_cached; /* of loads: read back from the persistent cache */
	__u32 procs;
	__u64 procs_written;        /* mapping lists written */
	__u64 refreshes_same;       /* lists asked for the same as held: not written */
	__u64 announcements_stale;  /* announcements from before an exec told since: none written */
	__u64 stats[UNW_STAT_NR];   /* the BPF side's counters, summed over CPUs */
	__u64 heap_bytes;           /* held on the heap: files, processes, jobs, in-memory tables */
};
void unwinder__usage(const struct unwinder *u, struct unwind_usage *out);

/* One line for the report header and stderr: how frames were unwound and why walks ended early
 * ("eh 97.5% of frames, fp 2.5%; ended early: no CFI 3, read fault 1; no CFI in: libfoo.so
 * (corrupt .eh_frame ...)").  Empty when nothing was unwound. */
void unwinder__summary(const struct unwinder *u, char *buf, size_t size);
/* With -v: memory use and every file whose table could not be built, and why. */
void unwinder__print_usage(const struct unwinder *u, FILE *out);

void unwinder__free(struct unwinder *u);
#endif
