/* The running kernel's code bytes, for annotate. */
#ifndef BPFPROF_CORE_KTEXT_H
#define BPFPROF_CORE_KTEXT_H
#include <stddef.h>
#include <linux/types.h>

struct ktext;

/* NULL on ENOMEM.  Nothing is opened until the first read. */
struct ktext *ktext__new(void);
/* len bytes of kernel memory at addr into buf: from /proc/kcore where it exists, else read by a
 * BPF program.  Returns how many were read from addr on (> 0; fewer than len when a page past
 * the first cannot be read) or -errno, with *how (when not NULL) naming the source tried
 * ("/proc/kcore", "BPF"). */
long ktext__read(struct ktext *t, __u64 addr, void *buf, size_t len, const char **how);
void ktext__free(struct ktext *t);
#endif
