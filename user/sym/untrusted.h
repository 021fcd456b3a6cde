/* Files other users control, read by root on behalf of their processes: JIT maps, debug files,
 * the binaries a process maps.  One way to open them all: never a symbolic link followed at the
 * last step (unless the rules say the name is a link to follow), never an open that waits (a
 * FIFO) or that a device could act on, and a file used only when the open fd is a regular file
 * of bounded size with the expected owner.  A refused file is skipped, named once on stderr and
 * counted for the report's header (syms_cache__refusals). */
#ifndef BPFPROF_UNTRUSTED_H
#define BPFPROF_UNTRUSTED_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct stat;

/* What a file is to bpfprof: its cap and its name in messages come with it. */
enum file_kind {
	FILE_JIT_MAP, /* /tmp/perf-PID.map: at most PERF_MAP_MAX_BYTES */
	FILE_DEBUG,   /* a separate debug file: at most ELF_FILE_MAX_BYTES */
	FILE_MAPPED,  /* a file a process maps executable: at most ELF_FILE_MAX_BYTES */
	FILE_NR_KINDS
};

/* Larger ELF files are not what they claim to be (libLLVM's debug file is under 2 GiB). */
#define ELF_FILE_MAX_BYTES (4ULL << 30)
/* Reading debuglink candidates for their CRC, in all, in a run: a user can give their binary a
 * debug file of 4 GiB (17 s to read on a busy 2-CPU VM), and the report waits for it; 0.5 s reads
 * about 1 GiB. */
#define DEBUG_CRC_BUDGET_NS 500000000ULL
#define DEBUG_CRC_BUDGET_STR "0.5 s"

/* Why a file was not read. */
enum file_refusal {
	FILE_OK,
	FILE_SYMLINK,     /* a symbolic link (or, for a JIT map, the /tmp it is in is one) */
	FILE_NOT_REGULAR, /* a FIFO, device, socket or directory */
	FILE_HARD_LINKED, /* more than one name: maybe another user's link to root's file */
	FILE_OWNER,       /* owned by neither root, bpfprof's user, nor a user the rules trust */
	FILE_TOO_BIG,     /* over its kind's cap */
	FILE_NOT_MAPPED,  /* found by name, but not the file the process mapped */
	FILE_BAD_NAME,    /* a name that leaves its directory (a debuglink "../../dev/zero") */
	FILE_TOO_SLOW,    /* not checked (a debug file's CRC) in the time a run gives it */
	FILE_NR_REFUSALS
};

/* What a file must be, besides a regular file under its kind's cap. */
struct file_rules {
	/* The name's last component may be a link: /proc/PID/map_files/ entries (the kernel's own
	 * link to the mapped file), or trees only root writes (/usr/lib/debug, root's perf cache). */
	bool follow;
	bool one_name;    /* no other hard link to it */
	bool check_owner; /* owned by root, bpfprof's user, or one of owners */
	uid_t owners[2];  /* (uid_t)-1: unused; 0 is root, always trusted */
	__u64 ino;        /* non-zero: must be this inode (the file a process mapped) */
	/* Non-zero, with ino: and on this device (as mmap records give both).  Two anonymous
	 * devices (major 0) pass: stat() on btrfs gives the subvolume's, not the file system's
	 * that the kernel's records name. */
	__u64 dev;
};

/* Opens name (relative to dir, a directory fd or AT_FDCWD) read-only under the rules: looked at
 * first (a FIFO or device is never opened), opened once with O_NONBLOCK|O_CLOEXEC (and O_NOFOLLOW
 * unless rules->follow), then judged on the open fd with fstat, since the name may have changed
 * between the look and the open.  Returns the fd with *st filled; -EPERM with *why set when the
 * file is refused; or another -errno (-ENOENT: no such file). */
int untrusted_open(int dir, const char *name, enum file_kind kind, const struct file_rules *rules,
		   struct stat *st, enum file_refusal *why);
/* Judges a file opened elsewhere (debuginfod's cache) the same way: 0, or -EPERM with *why set. */
int untrusted_check(int fd, enum file_kind kind, const struct file_rules *rules, struct stat *st,
		    enum file_refusal *why);
/* A libelf handle on an untrusted file that reads it (pread) instead of mapping it: its owner
 * can truncate it while we parse, and a read past the end of a mapping is a SIGBUS that would
 * end the run with nothing written.  elf_end() it; NULL on error. */
struct Elf;
struct Elf *untrusted_elf(int fd);
/* Reads a whole file into a NUL-terminated buffer, stopping with -EFBIG past its kind's cap
 * (a file still growing, or one whose size lied).  0 or -errno. */
int untrusted_read(int fd, enum file_kind kind, char **text, size_t *len);

/* Says on stderr, once per path, that a file was not read and why ("bpfprof: debug file X not
 * read: a symbolic link"), and counts it.  Thread-safe: the unwinder's worker opens files too. */
void untrusted_refused(enum file_kind kind, const char *path, enum file_refusal why);
/* The files refused so far in this process: how many, and in buf (size bytes) the header line's
 * text, "JIT maps not read: 1 a symbolic link; debug files not read: 2 not a regular file". */
size_t untrusted_refusals(char *buf, size_t size);
/* "a symbolic link", "over 256 MiB"... */
const char *file_refusal_str(enum file_kind kind, enum file_refusal why);
#endif
