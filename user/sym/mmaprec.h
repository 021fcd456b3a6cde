/* New processes told by the kernel rather than read from /proc, as perf record learns of them: a
 * dummy software event (PERF_COUNT_SW_DUMMY, which never samples) per online CPU with mmap, mmap2,
 * comm (with exec) and task set writes a record for every executable mapping, exec, fork and exit
 * system-wide into a ring buffer of its own.  Read before anything needs them (mmaprec__consume()
 * before each drain and each process event), they tell the symbolizer (sym/syms.h,
 * syms_cache__record_*) the mappings of every process born during the run: no /proc/PID/maps read
 * for it, and a process that exits before its first sample is read is still symbolized.
 * Processes that existed at the start keep their /proc snapshots. */
#ifndef BPFPROF_MMAPREC_H
#define BPFPROF_MMAPREC_H
#include <linux/types.h>

struct mmaprec;
struct syms_cache;

/* Opens the events (from now on, records feed sc) and turns records on in sc.  exited(ctx, tgid)
 * is told each exit of a process sc holds, once: the caller forgets it once its samples are read.
 * NULL with errno set where the kernel or the privileges refuse (EACCES, ENOENT...): the caller
 * goes on with /proc snapshots alone. */
struct mmaprec *mmaprec__open(struct syms_cache *sc, void (*exited)(void *ctx, __u32 tgid),
			      void *ctx);
/* Reads every record written so far on every CPU, in time order, into the symbolizer.  Cheap
 * when there is none: call it before anything that needs a process's mappings.  Records lost
 * (the ring full) are counted, and the processes held are read from /proc again where needed
 * (syms_cache__records_lost()).  Returns how many records were read. */
size_t mmaprec__consume(struct mmaprec *mr);

struct mmaprec_stats {
	__u64 records; /* read */
	__u64 lost;    /* the kernel's count of records it could not write */
	__u64 forks, execs, mmaps, exits; /* of processes */
	int cpus;      /* rings */
	__u64 ring_bytes; /* each */
	__u64 heap_bytes; /* the records copied out and their order, kept from read to read */
};
void mmaprec__stats(const struct mmaprec *mr, struct mmaprec_stats *out);

/* Closes the events and unmaps their rings; NULL is fine. */
void mmaprec__free(struct mmaprec *mr);
#endif
