/* Output files that appear complete or not at all: writers write to a temporary file next to the
 * target, and only a commit that flushed, fsynced and closed it without error renames it into
 * place.  A full disk or a crash never leaves a truncated SVG under the name the user asked for. */
#ifndef BPFPROF_OUTFILE_H
#define BPFPROF_OUTFILE_H
#include <stdbool.h>
#include <stdio.h>

struct outfile {
	FILE *f;
	char *path;     /* final name */
	char *tmp_path; /* "path.tmp.XXXXXX", or NULL when writing to path directly */
};

/* Opens a temporary file "PATH.tmp.XXXXXX" in PATH's directory, created with mode 0666 & ~umask
 * like fopen's.  When PATH exists and is not a regular file (/dev/stdout, a FIFO), it is opened
 * directly instead, since renaming over it would be wrong.  Returns the stream (also in of->f), or
 * NULL with errno set and *of left empty. */
FILE *outfile_open(const char *path, struct outfile *of);

/* Flushes, checks the stream's error flag, fsyncs, closes and renames the temporary file to its
 * final name.  On any failure the temporary file is removed.  Either way *of is emptied, so a
 * later outfile_abort() is a no-op.  Returns 0 or -errno (-EIO for an earlier failed write). */
int outfile_commit(struct outfile *of);

/* Closes and removes the temporary file; safe on an empty or already committed *of. */
void outfile_abort(struct outfile *of);

/* Flushes f and reports whether any write to it failed, e.g. for stdout at the end of a command.
 * Returns 0, -errno from the flush, or -EIO when an earlier write had failed. */
int stream_flush_check(FILE *f);
#endif
