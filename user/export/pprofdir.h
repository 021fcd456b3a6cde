/* --pprof-dir DIR: a continuous run's periods as files in a directory, PREFIX-YYYYmmddTHHMMSSZ
 * .pb.gz named after the period's start (UTC), each written whole (a temporary file renamed),
 * the newest --keep of them kept, as a log rotator would.  No BPF: plain files. */
#ifndef BPFPROF_PPROFDIR_H
#define BPFPROF_PPROFDIR_H
#include <stddef.h>
#include <linux/types.h>

struct pprof_dir;

/* Opens directory path (made when missing; its parent must exist) for files named PREFIX-...,
 * and makes and removes a file there, so that a directory that cannot be written fails before
 * tracing.  0 or -errno (printed). */
int pprof_dir_open(const char *path, const char *prefix, __u64 keep, struct pprof_dir **out);

/* Writes len bytes as the file of the period that started at start_ns (ns since the epoch; a
 * second after the last file's when that is later, so that no period replaces another), whole
 * or not at all; then removes the oldest files of that name pattern beyond keep (other
 * files in the directory are never touched).  0 or -errno (printed). */
int pprof_dir_write(struct pprof_dir *d, __s64 start_ns, const void *buf, size_t len);

/* Files written and removed so far. */
void pprof_dir_counts(const struct pprof_dir *d, __u64 *written, __u64 *removed);

/* The file name for a period that started at start_ns: PREFIX-YYYYmmddTHHMMSSZ.pb.gz.  Returns
 * buf. */
const char *pprof_dir_name(const char *prefix, __s64 start_ns, char *buf, size_t size);

void pprof_dir_close(struct pprof_dir *d);
#endif
