/* Symbolization: kernel (/proc/kallsyms) and user (/proc/PID/maps + ELF symtab/dynsym, build-id
 * and .gnu_debuglink debug files, [vdso], JIT maps (/tmp/perf-PID.map), C++ demangling). */
#ifndef BPFPROF_SYMS_H
#define BPFPROF_SYMS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "sym/untrusted.h"

/* ---- kernel ---- */
struct ksym {
	__u64 addr;
	const char *name;
	const char *module; /* "[kernel.kallsyms]" or "[MODNAME]" */
};
struct ksyms;

/* Loads and sorts /proc/kallsyms (or a fixture in kallsyms format).  NULL with errno set on error;
 * EPERM when every address reads as zero (kptr_restrict: run as root). */
struct ksyms *ksyms__load(void);
/* Same from a file in kallsyms format ("ADDR TYPE NAME [MODULE]", any order). */
struct ksyms *ksyms__load_file(const char *path);
/* Where ksyms__load_kept() keeps the core kernel's symbols between runs (the persistent cache
 * directory: disk_cache__read_file() and disk_cache__write_file()). */
struct ksyms_store {
	int (*read)(void *ctx, const char *name, size_t max, void **buf, size_t *len);
	int (*write)(void *ctx, const char *name, const void *buf, size_t len);
	void *ctx;
};
/* As ksyms__load(), but the core kernel's symbols (fixed for a boot) from st when an earlier run
 * of this boot kept them there: /proc/kallsyms is then read whole only when an address outside
 * them is looked up (a module's, a BPF program's) or every name is asked for.  Keeps them after
 * a whole read. */
struct ksyms *ksyms__load_kept(const struct ksyms_store *st);
/* A BPF program's function, which a table of the kept core symbols then names without reading
 * /proc/kallsyms: name as the kernel gives it ("bpf_prog_TAG_FUNC"), len its JITed size. */
int ksyms__add_bpf(struct ksyms *ks, __u64 start, __u32 len, const char *name);
/* The functions of the BPF program fd as /proc/kallsyms names them (the kernel's
 * bpf_get_prog_name(): "bpf_prog_", the tag in hex, "_" and the function's BTF name, or the
 * program's name without BTF): fn for each, with its JITed start and size.  btf: the program's
 * (NULL: loaded from the kernel where it has function info).  0, fn's error, or -errno. */
struct btf;
int bpf_prog_ksyms(int fd, const struct btf *btf,
		   int (*fn)(__u64 start, __u32 len, const char *name, void *ctx), void *ctx);
/* Whether ks holds the kept core symbols (and, once an address outside them was asked for, the
 * file's symbols outside the core: ksyms__outside()) rather than the whole file. */
bool ksyms__partial(const struct ksyms *ks);
/* Whether a partial ks read the file's symbols outside the core kernel, and how many into *nr. */
bool ksyms__outside(const struct ksyms *ks, size_t *nr);
/* The symbol containing addr (greatest start <= addr), or NULL.  kallsyms has no sizes: past the
 * last symbol this is still the last symbol. */
const struct ksym *ksyms__find(const struct ksyms *ks, __u64 addr);
/* Where the symbol containing addr ends: the next code symbol's address above it, or 0 past the
 * last one (kallsyms has no sizes; the gap to the next symbol holds the padding too). */
__u64 ksyms__end(const struct ksyms *ks, __u64 addr);
/* Address of a code symbol by exact name (the lowest, for a static name several files use),
 * or 0.  IBT/CFI padding symbols (__pfx_, __cfi_) are left out of name lookups. */
__u64 ksyms__addr(const struct ksyms *ks, const char *name);
/* Address of one of the few data symbols the table keeps (__start_orc_unwind_ip,
 * __stop_orc_unwind_ip, __start_orc_unwind), or 0. */
__u64 ksyms__data_addr(const struct ksyms *ks, const char *name);
/* Calls fn on every code symbol name once, in name order, with its lowest address; stops at
 * fn's first non-zero return, which it returns. */
int ksyms__for_each_name(const struct ksyms *ks, int (*fn)(const char *name, __u64 addr, void *ctx),
			 void *ctx);
/* How many names ksyms__for_each_name() visits. */
size_t ksyms__nr_names(const struct ksyms *ks);
/* Heap bytes the table holds (for -v); 0 for NULL. */
size_t ksyms__bytes(const struct ksyms *ks);
/* Frees the table and every name it handed out; NULL is fine. */
void ksyms__free(struct ksyms *ks);
/* The GNU build-id in hex of the running kernel ("[kernel.kallsyms]", from /sys/kernel/notes) or
 * of a loaded module ("[ext4]", /sys/module/ext4/notes), read once; NULL when unknown.  Not
 * thread-safe: the thread that symbolizes calls it. */
const char *kernel_build_id(const char *module);

/* ---- user: one ELF file ---- */
struct elf_syms;
/* Reads .symtab (from the file, or its build-id / debuglink debug file) and .dynsym.
 * NULL with errno set when the file is not a readable ELF. */
struct elf_syms *elf_syms__open(const char *path);
/* Same from an already open fd (e.g. /proc/PID/map_files/..., kept open after the process exits). */
struct elf_syms *elf_syms__open_fd(int fd, const char *path);
/* Same from an ELF image in memory (the [vdso]). */
struct elf_syms *elf_syms__open_mem(const void *image, size_t size, const char *name);
/* Converts a file offset to the ELF virtual address (through the PT_LOAD that maps it):
 * vaddr = off - p_offset + p_vaddr.  Returns false when no segment maps it. */
bool elf_syms__file_offset_to_vaddr(const struct elf_syms *es, __u64 off, __u64 *vaddr);
/* The symbol containing an ELF virtual address, or NULL; *sym_off (if not NULL) gets addr - symbol
 * start.  A zero-size symbol covers up to the next symbol or the end of its section. */
const char *elf_syms__find(const struct elf_syms *es, __u64 vaddr, __u64 *sym_off);
/* The same, with the symbol's size in *size (if not NULL): where its code ends. */
const char *elf_syms__find_span(const struct elf_syms *es, __u64 vaddr, __u64 *sym_off,
				__u64 *size);
/* Calls fn for every function symbol whose name matches the glob (fnmatch), with its ELF
 * virtual address and file offset (what uprobes want); stops when fn returns non-zero. */
int elf_syms__for_each_match(const struct elf_syms *es, const char *glob,
			     int (*fn)(const char *name, __u64 vaddr, __u64 file_off, void *ctx),
			     void *ctx);
/* The file's GNU build-id in hex (as readelf -n prints it), or NULL when it has none. */
const char *elf_syms__build_id(const struct elf_syms *es);
/* Heap bytes the table holds (for -v); 0 for NULL. */
size_t elf_syms__bytes(const struct elf_syms *es);
/* Frees the table and every name it handed out; NULL is fine. */
void elf_syms__free(struct elf_syms *es);
/* Sets the root searched for separate debug files (DIR/.build-id/xx/rest.debug and
 * DIR/<file's dir>/<debuglink>) instead of /usr/lib/debug; NULL restores the default.  Meant for
 * tests and unusual installs; affects every later elf_syms__open*.  Returns 0 or -ENOMEM. */
int syms_set_debug_root(const char *dir);

/* The separate debug file of an ELF file (sym/debuginfo.c): by build-id under the debug root,
 * in perf's build-id cache (~/.debug), by .gnu_debuglink next to path, then from debuginfod
 * when DEBUGINFOD_URLS is set.  owner is the file's owner: a debug file next to it is taken from
 * root, from us, or from them (it can say no more than their file could).  Candidates refused
 * are named and counted (sym/untrusted.h).  Returns an fd or a negative errno. */
struct Elf;
int debuginfo_open(struct Elf *elf, const char *path, uid_t owner);
/* The ELF file's GNU build-id into id (at most size bytes): its length, or -ENOENT. */
int elf_build_id(struct Elf *elf, unsigned char *id, size_t size);
/* The running kernel's image with DWARF (a vmlinux), where perf looks for it:
 * DEBUG_ROOT/.build-id/ab/cdef....debug, DEBUG_ROOT/boot/vmlinux-RELEASE,
 * DEBUG_ROOT/lib/modules/RELEASE/vmlinux, /lib/modules/RELEASE/build/vmlinux, then debuginfod by
 * build-id.  build_id: the running kernel's in hex (kernel_build_id()), which a candidate must
 * carry; NULL when unknown (the release's files are then taken on their name).  A candidate
 * without .debug_info is passed over.  0 with its path in path, or -ENOENT. */
int kernel_debuginfo_find(const char *release, const char *build_id, char *path, size_t size);
/* --no-debuginfod: no debuginfod lookup, whatever DEBUGINFOD_URLS says. */
void syms_set_debuginfod(bool on);
/* Debug files debuginfod gave, and lookups that found none, so far. */
void debuginfo_stats(int *found, int *missed);

/* ---- user: JIT perf maps (/tmp/perf-PID.map) ---- */
struct perf_map;
struct stat;
/* The largest map read (a big JVM's is tens of MiB). */
#define PERF_MAP_MAX_BYTES (256ULL << 20)
#define PERF_MAP_MAX_STR "256 MiB"
/* Parses "START SIZE name" lines, START/SIZE hex with or without 0x; later (newer) entries win
 * where they overlap earlier ones.  NULL with errno set when the file cannot be read (EFBIG past
 * PERF_MAP_MAX_BYTES).  perf_map__load() opens path as untrusted_open() does, with no owner
 * check: EPERM for a symlink, a FIFO or a file over the cap. */
struct perf_map *perf_map__load(const char *path);
struct perf_map *perf_map__load_fd(int fd);
/* Opens process tgid's map where its JIT wrote it: /tmp/perf-NSPID.map in its own mount
 * namespace, NSPID its pid there (/proc/TGID/root/tmp/perf-NSPID.map; our /tmp/perf-TGID.map once
 * it is gone).  No symlink is followed, and the file must be a regular file with one name, owned
 * by root or the process's user, of at most PERF_MAP_MAX_BYTES.  Returns an fd with *st filled,
 * -ENOENT when there is no map, -EPERM with *why set when it is refused, or another -errno; path
 * gets the path for messages in every case. */
int perf_map__open(__u32 tgid, struct stat *st, enum file_refusal *why, char *path,
		   size_t size);
/* The newest entry containing addr, or NULL; *sym_off (if not NULL) gets addr - entry start. */
const char *perf_map__find(const struct perf_map *pm, __u64 addr, __u64 *sym_off);
/* Heap bytes the map holds (for -v); 0 for NULL. */
size_t perf_map__bytes(const struct perf_map *pm);
/* Frees the map and every name it handed out; NULL is fine. */
void perf_map__free(struct perf_map *pm);

/* Demangles a C++ (Itanium ABI) name; returns a malloc'd string, or NULL if not mangled or when
 * no demangler is available (libstdc++'s __cxa_demangle is loaded lazily with dlopen). */
char *demangle(const char *name);

/* ---- user: processes ---- */
struct user_sym {
	const char *name;   /* NULL when unresolved */
	const char *module; /* mapped file path, "[vdso]", "[JIT] tid N"... or "[unknown]" */
	__u64 offset;       /* address as an offset in the module (for "module+0x..." display):
			     * the file offset for mapped files (named or not), the offset in the
			     * image for [vdso], the address itself for JIT and [unknown] */
	const char *build_id; /* the module's GNU build-id in hex, or NULL */
};
struct syms_cache;

/* An empty cache, NULL on ENOMEM.  Not thread-safe: one thread resolves. */
struct syms_cache *syms_cache__new(void);
/* Snapshots /proc/PID/maps now and keeps the files behind executable mappings open, so the
 * process can be symbolized after it exits.  Call when a process is first seen.  Returns 0 or a
 * negative errno (-ENOENT when the process is gone).  Calling it again refreshes the snapshot
 * (after exec or dlopen). */
int syms_cache__snapshot(struct syms_cache *sc, __u32 tgid);
/* Takes a second snapshot of processes first snapshotted at least min_age_ns ago (once each):
 * a process is often first seen right after exec, before the dynamic loader has mapped its
 * libraries, and a short-lived one is gone before a report could refresh it.  Call it while the
 * run goes on, and with 0 when it ends. */
void syms_cache__revisit(struct syms_cache *sc, __u64 min_age_ns);
/* Whether a process waits for its second snapshot. */
bool syms_cache__revisits_pending(const struct syms_cache *sc);
/* Drops process tgid (it exited and its samples are symbolized): its mappings, its JIT map and
 * the strings they handed out.  The files it mapped stay, shared and parsed, for the next
 * process that maps them. */
void syms_cache__forget(struct syms_cache *sc, __u32 tgid);
/* The caller forgets every process once it exits (exit events): pid reuse needs no check. */
void syms_cache__exits_told(struct syms_cache *sc);
/* Process tgid's exit was told: forget_exited() drops it once its samples are read; announced
 * again before that (a new program under the pid), it is replaced. */
void syms_cache__exited(struct syms_cache *sc, __u32 tgid);
void syms_cache__forget_exited(struct syms_cache *sc, __u32 tgid);
/* Processes held. */
size_t syms_cache__nr_procs(const struct syms_cache *sc);
/* Frees the files (their fd and parsed symbols) that no process held has mapped for the last
 * ten sweeps, and for 20000 times the CPU time their symbols took to parse (5 minutes at most;
 * a deleted file, or one without symbols, after the ten sweeps): after processes are forgotten,
 * a long run holds the files of the processes alive and of those that ran lately (the same
 * programs start again and again under churn, and a large one that comes back now and then is
 * not parsed each time), not of every process it saw.  Then the symbols over the budget
 * (syms_cache__set_syms_budget()).  Frames symbolized before keep no pointer into them (the
 * aggregation copies names).  Returns how many files were freed. */
size_t syms_cache__sweep_files(struct syms_cache *sc);
/* Files held. */
size_t syms_cache__nr_files(const struct syms_cache *sc);
/* The parsed symbols held at most (8 MiB unless set) beyond those of the files looked up in the
 * last ten sweeps: each sweep frees the least recently looked-up files' symbols (mapped or not)
 * down to it, and a later lookup parses them again.  For tests and -v. */
void syms_cache__set_syms_budget(struct syms_cache *sc, size_t bytes);
/* Heap bytes held, by part: for -v's memory lines. */
struct syms_cache_mem {
	size_t procs, proc_bytes;   /* processes: their entries and mappings */
	size_t jit_bytes;           /* their JIT maps (perf maps), replaced ones too */
	size_t files, file_bytes;   /* files: their entries and paths */
	size_t parsed, sym_bytes;   /* files whose symbols were parsed, and those symbols */
	size_t idle, idle_sym_bytes; /* of the files, those no process mapped at the last sweep */
	__u64 syms_evicted;         /* files' symbols freed over the budget, ever */
	size_t index_bytes;         /* the tables of processes and files, the revisit queue */
	size_t demangled_bytes;     /* demangled names and their table */
	struct {
		char name[40];      /* the file's name (its last 39 bytes) */
		size_t bytes;
	} top[3];                   /* the files with the largest symbols, largest first */
};
void syms_cache__mem(const struct syms_cache *sc, struct syms_cache_mem *m);
/* Symbolizes addr in process tgid (snapshotting it first if needed); ELF files are parsed once
 * and shared by every process that maps them.  Always fills *out (name NULL when unresolved);
 * the strings stay valid until syms_cache__free.  An address outside the snapshot refreshes it
 * when the process is still alive: at once on the first miss after syms_cache__snapshot, then
 * at most once a second per process. */
void syms_cache__resolve(struct syms_cache *sc, __u32 tgid, __u64 addr, struct user_sym *out);
/* The file mapped at addr in process tgid (as of its snapshot), with addr's offset in it in
 * *file_off, where the two alone decide what syms_cache__resolve() gives for addr (no JIT map
 * to consult): a key that processes of one program share, for callers memoizing frames.  A
 * number that no other file of this cache ever has, also once this one is freed (a file
 * opened again is another number).  0 when there is none. */
__u64 syms_cache__file_at(struct syms_cache *sc, __u32 tgid, __u64 addr, __u64 *file_off);
/* Files refused so far: JIT maps, debug files and mapped files, each named on stderr when met
 * (untrusted_refusals: counted for the whole process, as the unwinder's worker opens files too);
 * in buf the report header's text, "JIT maps not read: N reason, N reason; debug files...". */
size_t syms_cache__refusals(const struct syms_cache *sc, char *buf, size_t size);
/* An executable mapping of a process, as the in-kernel unwinder (user/unwind/unwinder.c) needs it. */
struct syms_mapping {
	__u64 start, end, pgoff;
	__u64 dev, ino;   /* the mapped file; 0 for the [vdso] and anonymous code */
	int fd;           /* the file, opened at the snapshot (-1 when that failed); owned by the cache */
	const char *path; /* the file's path, "[vdso]", or NULL for anonymous code (JIT) */
};
/* Calls fn on each executable mapping of process tgid as of its last snapshot, in address order
 * (special mappings such as [vsyscall] skipped).  Returns 0, -ENOENT when the process was never
 * snapshotted, or the first non-zero value fn returned. */
int syms_cache__for_each_mapping(struct syms_cache *sc, __u32 tgid,
				 int (*fn)(const struct syms_mapping *m, void *ctx), void *ctx);
/* ---- user: processes told by perf's mmap records (sym/mmaprec.h reads them) ----
 * A process that forks or execs while records are read is known from them alone: no /proc read,
 * and still symbolized when it exits before its first sample is read.  Processes that existed
 * before keep their /proc snapshots (syms_cache__snapshot), and records add to them.  time is
 * the record's (CLOCK_MONOTONIC): a record older than what made the process it names the
 * program it is now (records of several CPUs read out of order) is ignored. */
struct syms_mmap {
	__u64 start, len, pgoff;
	__u64 dev, ino;   /* makedev(major, minor) as the record gives them; 0 for anonymous code */
	const char *path; /* "//anon", "[vdso]", or the file's path as the process saw it */
};
/* Records are read from now on: a process told of is not read from /proc again, nor one whose
 * exit was told (syms_cache__snapshot() returns -ESRCH for it).  monotonic: their times are
 * CLOCK_MONOTONIC's (syms_cache__execed_after()). */
void syms_cache__records_on(struct syms_cache *sc, bool monotonic);
/* Whether records told an exec of tgid after time (CLOCK_MONOTONIC ns), which replaced what was
 * announced at that time; false where records cannot tell (lost, another clock). */
bool syms_cache__execed_after(const struct syms_cache *sc, __u32 tgid, __u64 time);
/* Process tgid forked from parent_tgid: a copy of its parent's mappings when the parent is held
 * (a thread, tgid == parent_tgid, is nothing).  0 or -ENOMEM. */
int syms_cache__record_fork(struct syms_cache *sc, __u32 tgid, __u32 parent_tgid, __u64 time);
/* tgid exec'd: it is told by records from now on (the old program's mappings stay where the new
 * one maps nothing, for the samples taken before).  0 or -ENOMEM. */
int syms_cache__record_exec(struct syms_cache *sc, __u32 tgid, __u64 time);
/* An executable mapping of tgid (where tgid is held): its file, new to the cache, is opened now
 * by map_files or by path and taken only if it is the record's (dev, inode).  0 or -errno. */
int syms_cache__record_mmap(struct syms_cache *sc, __u32 tgid, __u64 time,
			    const struct syms_mmap *m);
/* tgid exited: true when it is held and its exit was not told before (the caller has it
 * forgotten once its samples are read, as after syms_cache__exited()). */
bool syms_cache__record_exit(struct syms_cache *sc, __u32 tgid, __u64 time);
/* Records were lost: every process held is read from /proc again on a miss, and those already
 * gone are told to gone() as exits (theirs may have been lost). */
void syms_cache__records_lost(struct syms_cache *sc, void (*gone)(void *ctx, __u32 tgid),
			      void *ctx);
/* This kernel's vdso image as mapped into bpfprof (the same in every process); NULL if none. */
const void *syms_vdso_image(size_t *size);
/* Closes every file kept open and frees every string handed out; NULL is fine. */
/* Forgets every process and file (their symbols, maps and names), as a new cache knows none:
 * what a run's last symbolization held, given back before its outputs are written. */
void syms_cache__release(struct syms_cache *sc);
void syms_cache__free(struct syms_cache *sc);
#endif
