/* Inline chains (sym/srcline.h) looked up on a thread of their own, so that the thread draining
 * the kernel's tables never waits on DWARF: an address asked is answered at once when it was
 * answered before, and queued otherwise (the caller keeps the samples that need it aside until
 * the answer is there).  Each (file, address) is asked of libdw once; the answers are kept,
 * copied, until srcworker__trim(). */
#ifndef BPFPROF_SRCWORKER_H
#define BPFPROF_SRCWORKER_H
#include <stdbool.h>
#include <linux/types.h>
#include "sym/srcline.h"

struct srcworker;

/* The worker looks up in s, which nothing else may touch until srcworker__stop() (or free);
 * its thread starts with the first question.  NULL on ENOMEM. */
struct srcworker *srcworker__new(struct srclines *s);
/* The chain of file offset at (vaddr: ELF virtual address at) of the file at path, as
 * srclines__lookup_offset() (srclines__lookup()) gives it: 0 with *chain, -ENOENT (no debug
 * info), -ENXIO (not covered) or another -errno; -EAGAIN when it is asked now and not answered
 * yet (unless wait: then the answer is waited for).  *ticket (may be NULL) names the question
 * for srcworker__answer().  The chain and its strings stay valid until srcworker__trim() or
 * srcworker__free(). */
int srcworker__ask(struct srcworker *w, const char *path, bool vaddr, __u64 at, bool wait,
		   const struct srcline_chain **chain, __u32 *ticket);
/* The answer to the question ticket, as srcworker__ask() gives it (-EAGAIN: not yet). */
int srcworker__answer(struct srcworker *w, __u32 ticket, const struct srcline_chain **chain);
/* While held, a question is queued without waking the thread (a thread woken for each one,
 * its lock taken from it, cost as much CPU as the lookups under churn); released, the thread
 * takes every question queued in one go.  A question waited for, srcworker__settle() and
 * srcworker__stop() wake it anyway. */
void srcworker__hold(struct srcworker *w, bool hold);
/* Returns once every question asked is answered. */
void srcworker__settle(struct srcworker *w);
/* Answers forgotten (and tickets with them) once more than max are held and none is pending:
 * the caller holds no ticket and no chain of theirs.  Returns whether it did. */
bool srcworker__trim(struct srcworker *w, size_t max);
/* The thread ended once every question asked is answered: the srclines are the caller's again
 * (a later question starts it again).  The worker's CPU time so far into *cpu_ns (may be NULL). */
void srcworker__stop(struct srcworker *w, __u64 *cpu_ns);
/* How many answers are held, and the bytes of their chains. */
void srcworker__held(struct srcworker *w, size_t *answers, size_t *bytes);
/* What the thread and its srclines hold of bpfprof's heap as they count it (their tables,
 * answers, chains, indexes and line tables; not libdw's parse), as of its last answer: for -v. */
size_t srcworker__bytes(struct srcworker *w);
/* Stops the thread and frees the answers (not the srclines). */
void srcworker__free(struct srcworker *w);
#endif
