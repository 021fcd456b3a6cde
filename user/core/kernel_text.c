// SPDX-License-Identifier: GPL-2.0
/* The running kernel's code bytes, for annotate.  /proc/kcore first, as perf annotate reads it:
 * an ELF core file whose PT_LOAD segments map kernel virtual addresses to file offsets.  Many VMs
 * and minimal kernels have no /proc/kcore (CONFIG_PROC_KCORE off): there a BPF program reads
 * the text with bpf_probe_read_kernel() (bpf/ktext.bpf.c).  Both give the text as it runs (the
 * alternatives, static keys and ftrace sites patched at boot), which a vmlinux file on disk
 * does not. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "core/kernel_text.h"
#include "ktext.h"
#include "ktext.skel.h"

struct ktext {
	bool kcore_tried, bpf_tried;
	int kcore_fd;
	Elf64_Phdr *loads; /* kcore's PT_LOAD segments */
	size_t nr_loads;
	struct ktext_bpf *skel;
};

struct ktext *ktext__new(void)
{
	struct ktext *t = calloc(1, sizeof(*t));

	if (t)
		t->kcore_fd = -1;
	return t;
}

/* Opens /proc/kcore and reads its segment table.  0 or -errno. */
static int kcore_open(struct ktext *t)
{
	Elf64_Ehdr eh;
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !eh.e_phnum) {
		err = -ENOEXEC;
		goto cleanup;
	}
	t->loads = calloc(eh.e_phnum, sizeof(*t->loads));
	if (!t->loads) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (pread(fd, t->loads, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff) !=
	    (ssize_t)(eh.e_phnum * sizeof(Elf64_Phdr))) {
		err = -EIO;
		goto cleanup;
	}
	for (size_t i = 0; i < eh.e_phnum; i++)
		if (t->loads[i].p_type == PT_LOAD)
			t->loads[t->nr_loads++] = t->loads[i];
	t->kcore_fd = fd;
	return 0;
cleanup:
	free(t->loads);
	t->loads = NULL;
	close(fd);
	return err;
}

static long kcore_read(struct ktext *t, __u64 addr, void *buf, size_t len)
{
	for (size_t i = 0; i < t->nr_loads; i++) {
		const Elf64_Phdr *p = &t->loads[i];
		ssize_t got;

		if (addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz)
			continue;
		if (len > p->p_filesz - (addr - p->p_vaddr))
			len = p->p_filesz - (addr - p->p_vaddr);
		got = pread(t->kcore_fd, buf, len, p->p_offset + (addr - p->p_vaddr));
		return got > 0 ? got : got < 0 ? -errno : -EIO;
	}
	return -ENXIO;
}

static int bpf_open(struct ktext *t)
{
	int err;

	t->skel = ktext_bpf__open_and_load();
	if (!t->skel) {
		err = -errno;
		return err ?: -EINVAL;
	}
	return 0;
}

/* Page by page: a page that faults ends the read, what came before it stands. */
static long bpf_read(struct ktext *t, __u64 addr, void *buf, size_t len)
{
	int fd = bpf_program__fd(t->skel->progs.read_text);
	size_t done = 0;

	while (done < len) {
		LIBBPF_OPTS(bpf_test_run_opts, opts);
		__u64 at = addr + done;
		size_t n = KTEXT_CHUNK - (at & (KTEXT_CHUNK - 1));

		n = n < len - done ? n : len - done;
		t->skel->bss->addr = at;
		t->skel->bss->len = n;
		t->skel->bss->ret = -1;
		if (bpf_prog_test_run_opts(fd, &opts))
			return done ? (long)done : -errno;
		if (t->skel->bss->ret)
			return done ? (long)done : t->skel->bss->ret < 0 ? t->skel->bss->ret : -EIO;
		memcpy((char *)buf + done, t->skel->bss->buf, n);
		done += n;
	}
	return done;
}

long ktext__read(struct ktext *t, __u64 addr, void *buf, size_t len, const char **how)
{
	long err = -ENOENT;

	if (!len)
		return -EINVAL;
	if (!t->kcore_tried) {
		t->kcore_tried = true;
		kcore_open(t);
	}
	if (t->kcore_fd >= 0) {
		if (how)
			*how = "/proc/kcore";
		err = kcore_read(t, addr, buf, len);
		if (err > 0)
			return err;
	}
	if (!t->bpf_tried) {
		t->bpf_tried = true;
		err = bpf_open(t);
		if (err && how)
			*how = "BPF (its program did not load)";
		if (err)
			return err;
	}
	if (!t->skel)
		return err;
	if (how)
		*how = "BPF";
	return bpf_read(t, addr, buf, len);
}

void ktext__free(struct ktext *t)
{
	if (!t)
		return;
	if (t->kcore_fd >= 0)
		close(t->kcore_fd);
	free(t->loads);
	ktext_bpf__destroy(t->skel);
	free(t);
}
