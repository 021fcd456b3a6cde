/* Kernel text read by a BPF program for annotate (bpf/ktext.bpf.c, user/core/ktext.c). */
#ifndef BPFPROF_KTEXT_H
#define BPFPROF_KTEXT_H
/* Bytes read per test run: one page, the unit a read may fault at. */
#define KTEXT_CHUNK 4096
#endif
