/* errno values for BPF programs: vmlinux.h has types, not macros. */
#ifndef BPFPROF_ERRNO_BPF_H
#define BPFPROF_ERRNO_BPF_H
#ifndef ENOENT
#define ENOENT 2
#endif
#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef EBUSY
#define EBUSY 16
#endif
#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef ENOSPC
#define ENOSPC 28
#endif
#endif
