#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include "core/common.h"
#include "core/hashtab.h"
#include "sym/stackagg.h"
#include "sym/srcline.h"
#include "sym/stackcollect.h"
#include "sym/syms.h"

struct stack_resolver {
	__u64 missing_stacks;  /* stack ids no longer in the map when their sample was read */
	struct ksyms *ksyms;
	int ksyms_errno;
	bool ksyms_tried;
	bool prefetching;
	/* called once the symbols are loaded (NULL if they could not be), on the prefetching thread
	 * or where they were loaded before */
	void (*loaded)(const struct ksyms *ks, void *ctx);
	void *loaded_ctx;
	bool told;
	pthread_t prefetcher;
	struct syms_cache *syms;
	struct hashtab traces; /* stack id -> struct stack_trace */
	struct srclines *lines; /* NULL: frames get no source lines */
	bool inline_frames;
	char *no_lines;         /* files with frames but no debug info, ", "-separated */
	char *last_noted;       /* the last file note_no_lines() was asked about */
	size_t nr_no_lines;
	__u64 lines_ns, lines_frames; /* spent in stack_frames_add_lines(), frames it saw */
	bool vmlinux_tried;
	char *vmlinux;          /* the running kernel's image with debug info, or NULL */
	__u64 kaslr;            /* what KASLR added to its addresses */
	/* a drain's memo, emptied after each, -> frame id + 1 in the aggregation drained into:
	 * (address, 0) for the kernel; (file offset, file) where the mapped file alone decides
	 * (syms_cache__file_at(): processes of one program share it); else (address, tgid | 1 << 63) */
	struct hashtab memo;
	__u32 *ids;             /* a sample's frame ids, reused from key to key */
	size_t ids_cap;
};

struct stack_resolver *stack_resolver__new(void)
{
	struct stack_resolver *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->syms = syms_cache__new();
	if (!r->syms) {
		free(r);
		return NULL;
	}
	return r;
}

struct syms_cache *stack_resolver__syms(struct stack_resolver *r)
{
	return r->syms;
}

const __u64 *stack_resolver__trace(struct stack_resolver *r, int stacks_fd, __u64 id, __u32 *nr)
{
	struct stack_trace *st = hashtab_get(&r->traces, id, 0);
	struct stack_trace full;
	size_t size;

	if (!st) {
		if (bpf_map_lookup_elem(stacks_fd, &id, &full)) {
			r->missing_stacks++;
			return NULL;
		}
		if (full.nr > MAX_STACK_DEPTH)
			full.nr = MAX_STACK_DEPTH;
		/* Keep only the frames: most stacks are far shorter than the maximum. */
		size = offsetof(struct stack_trace, ips) + full.nr * sizeof(full.ips[0]);
		st = malloc(size);
		if (!st)
			return NULL;
		memcpy(st, &full, size);
		if (hashtab_put(&r->traces, id, 0, st)) {
			free(st);
			return NULL;
		}
	}
	*nr = st->nr;
	return st->ips;
}

static void tell_loaded(struct stack_resolver *r)
{
	if (r->loaded && !r->told) {
		r->told = true;
		r->loaded(r->ksyms, r->loaded_ctx);
	}
}

static void *load_ksyms(void *arg)
{
	struct stack_resolver *r = arg;

	r->ksyms = ksyms__load();
	r->ksyms_errno = r->ksyms ? 0 : errno;
	tell_loaded(r);
	return NULL;
}

int stack_resolver__prefetch(struct stack_resolver *r,
			     void (*loaded)(const struct ksyms *ks, void *ctx), void *ctx)
{
	int err;

	if (r->prefetching)
		return 0;
	r->loaded = loaded;
	r->loaded_ctx = ctx;
	if (r->ksyms_tried) {
		tell_loaded(r);
		return 0;
	}
	err = pthread_create(&r->prefetcher, NULL, load_ksyms, r);
	if (err)
		return -err;
	r->prefetching = true;
	return 0;
}

/* Kernel symbols, from the prefetching thread or loaded now; NULL (reported once) on failure. */
static struct ksyms *kernel_symbols(struct stack_resolver *r)
{
	if (r->ksyms_tried)
		return r->ksyms;
	if (r->prefetching) {
		pthread_join(r->prefetcher, NULL);
		r->prefetching = false;
	} else {
		load_ksyms(r);
	}
	r->ksyms_tried = true;
	if (!r->ksyms)
		p_err("cannot read /proc/kallsyms: %s; kernel frames stay unresolved",
		      strerror(r->ksyms_errno));
	return r->ksyms;
}

static void resolve_kernel(struct stack_resolver *r, __u64 addr, struct frame *f)
{
	const struct ksym *ks;

	kernel_symbols(r);
	ks = r->ksyms ? ksyms__find(r->ksyms, addr) : NULL;
	f->kernel = true;
	f->addr = addr;
	f->name = ks ? ks->name : NULL;
	f->module = ks ? ks->module : "[kernel.kallsyms]";
	f->offset = ks ? addr - ks->addr : addr;
	f->build_id = kernel_build_id(f->module);
}

static void resolve_user(struct stack_resolver *r, __u32 tgid, __u64 addr, __u64 lookup,
			 struct frame *f)
{
	struct user_sym us;

	syms_cache__resolve(r->syms, tgid, lookup, &us);
	f->kernel = false;
	f->addr = addr;
	f->name = us.name;
	f->module = us.module;
	f->offset = us.offset;
	f->build_id = us.build_id;
}

/* Frame f of address addr (a return address unless leaf: the call instruction itself is looked
 * up, which matters when the call is the last instruction of a function). */
static void resolve_frame(struct stack_resolver *r, __u32 tgid, bool kernel, __u64 addr, bool leaf,
			  struct frame *f)
{
	__u64 lookup = leaf ? addr : addr - 1;

	if (kernel)
		resolve_kernel(r, lookup, f);
	else
		resolve_user(r, tgid, addr, lookup, f);
	f->addr = addr;
}

__u32 stack_resolver__symbolize(struct stack_resolver *r, __u32 tgid, bool kernel, const __u64 *ips,
				__u32 nr, struct frame *frames)
{
	for (__u32 i = 0; i < nr; i++)
		resolve_frame(r, tgid, kernel, ips[i], i == 0, &frames[nr - 1 - i]);
	return nr;
}

int stack_resolver__set_lines(struct stack_resolver *r, bool inline_frames)
{
	r->lines = r->lines ?: srclines__new();
	r->inline_frames = inline_frames;
	return r->lines ? 0 : -ENOMEM;
}

void stack_resolver__release_lines(struct stack_resolver *r)
{
	if (r->lines)
		srclines__release(r->lines);
}

/* Names a file whose frames have no lines, once, for the report's header (the first few). */
static void note_no_lines(struct stack_resolver *r, const char *module)
{
	const char *name = stack_module_short(module);
	size_t len = r->no_lines ? strlen(r->no_lines) : 0, add = strlen(name);
	char *n;

	/* frames of one file come together (a stack's, the next stack's): the file just
	 * noted is not looked for again */
	if (r->nr_no_lines > 8 || (r->last_noted && !strcmp(r->last_noted, module)) ||
	    srclines__has_dwarf(r->lines, module))
		return;
	free(r->last_noted);
	r->last_noted = strdup(module);
	for (const char *p = r->no_lines; p && (p = strstr(p, name)); p += add)
		if ((p == r->no_lines || p[-1] == ' ') && (p[add] == ',' || !p[add]))
			return;
	n = realloc(r->no_lines, len + add + 8);
	if (!n)
		return;
	r->no_lines = n;
	snprintf(n + len, add + 8, "%s%s", len ? ", " : "", r->nr_no_lines == 8 ? "..." : name);
	r->nr_no_lines++;
}

size_t stack_resolver__lines_missing(const struct stack_resolver *r, char *buf, size_t size)
{
	if (!r->lines || !r->no_lines)
		return 0;
	return snprintf(buf, size, "source lines and inlined functions unavailable (no debug info, "
			"nor a debug file): %s", r->no_lines);
}

static int find_stext(const char *name, __u64 vaddr, __u64 off, void *ctx)
{
	*(__u64 *)ctx = vaddr;
	return 1;
}

int kernel_vmlinux_find(const struct ksyms *ks, char *path, size_t size, __u64 *kaslr)
{
	__u64 stext = 0, running = ksyms__addr(ks, "_stext");
	struct elf_syms *es = NULL;
	struct utsname u;

	if (uname(&u) || !running ||
	    kernel_debuginfo_find(u.release, kernel_build_id("[kernel.kallsyms]"), path, size))
		return -ENOENT;
	es = elf_syms__open(path);
	if (es)
		elf_syms__for_each_match(es, "_stext", find_stext, &stext);
	elf_syms__free(es);
	if (!stext)
		return -ENOENT;
	*kaslr = running - stext;
	return 0;
}

/* Found once; none on most machines, and kernel frames then have no lines. */
static void find_vmlinux(struct stack_resolver *r)
{
	char path[PATH_MAX];

	r->vmlinux_tried = true;
	if (kernel_symbols(r) && !kernel_vmlinux_find(r->ksyms, path, sizeof(path), &r->kaslr))
		r->vmlinux = strdup(path);
	p_info("kernel source lines: %s", r->vmlinux ? r->vmlinux :
	       "no vmlinux with debug info (/usr/lib/debug/boot/vmlinux-RELEASE, by build-id, or "
	       "from debuginfod)");
}

/* A frame's inline chain, or NULL where there is none (no DWARF, unnamed code); leaf: the
 * sample's innermost frame, whose address is no return address. */
static const struct srcline_chain *frame_chain(struct stack_resolver *r, const struct frame *f,
					       bool leaf)
{
	const struct srcline_chain *c;
	int err;

	if (f->kernel && f->name && f->module && !strcmp(f->module, "[kernel.kallsyms]")) {
		if (!r->vmlinux_tried)
			find_vmlinux(r);
		/* a caller's is a return address: the call is before it (user frames' offsets
		 * say the same) */
		if (!r->vmlinux ||
		    srclines__lookup(r->lines, r->vmlinux, f->addr - r->kaslr - !leaf, &c))
			return NULL;
		return c;
	}
	if (f->kernel || !f->name || !f->module || f->module[0] != '/')
		return NULL;
	err = srclines__lookup_offset(r->lines, f->module, f->offset, &c);
	if (err == -ENOENT)
		note_no_lines(r, f->module);
	return err ? NULL : c;
}

int stack_frames_add_lines(struct stack_resolver *r, struct frame **frames, __u32 *nr)
{
	struct frame *in = *frames, *out = NULL;
	__u32 n = 0, cap = *nr + 8;
	__u64 start = now_ns();

	if (!r->lines || !*nr)
		return 0;
	out = malloc(cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (__u32 i = 0; i < *nr; i++) {
		const struct srcline_chain *c = frame_chain(r, &in[i], i == *nr - 1);
		__u32 k = c && r->inline_frames ? c->nr : 1;

		if (n + k > cap) {
			struct frame *t;

			cap = (n + k) * 2;
			t = realloc(out, cap * sizeof(*out));
			if (!t) {
				free(out);
				return -ENOMEM;
			}
			out = t;
		}
		out[n] = in[i];
		if (c) {
			/* the compiled function keeps its symbol's name (foo.cold, a clone's) */
			const struct srcline_frame *at = &c->f[r->inline_frames ? 0 : c->nr - 1];

			out[n].srcfile = at->file;
			out[n].line = at->line;
		}
		for (__u32 j = 1; j < k; j++) {
			out[n + j] = in[i];
			out[n + j].name = c->f[j].func ?: "[inlined]";
			out[n + j].inlined = true;
			out[n + j].srcfile = c->f[j].file;
			out[n + j].line = c->f[j].line;
		}
		n += k;
	}
	free(in);
	r->lines_frames += *nr;
	*frames = out;
	*nr = n;
	r->lines_ns += now_ns() - start;
	return 0;
}

void stack_resolver__print_lines_cost(const struct stack_resolver *r)
{
	__u64 lookups = 0, hits = 0;

	if (!r->lines)
		return;
	srclines__stats(r->lines, &lookups, &hits);
	p_info("source lines: %llu frames, %llu addresses looked up in DWARF (%llu from the cache) "
	       "in %.1f ms", (unsigned long long)r->lines_frames, (unsigned long long)lookups,
	       (unsigned long long)hits, r->lines_ns / 1e6);
}

int stack_frames_fill(struct stack_resolver *r, int stacks_fd, __u32 tgid, __u64 user_stack,
		      __u64 kern_stack, struct frame **frames, __u32 *nr)
{
	const __u64 *uips = NULL, *kips = NULL;
	__u32 unr = 0, knr = 0;

	*frames = NULL;
	*nr = 0;
	if (user_stack)
		uips = stack_resolver__trace(r, stacks_fd, user_stack, &unr);
	if (kern_stack)
		kips = stack_resolver__trace(r, stacks_fd, kern_stack, &knr);
	if (!uips)
		unr = 0;
	if (!kips)
		knr = 0;
	if (unr + knr == 0)
		return 0;
	*frames = calloc(unr + knr, sizeof(**frames));
	if (!*frames)
		return -ENOMEM;
	*nr = stack_resolver__symbolize(r, tgid, false, uips, unr, *frames);
	*nr += stack_resolver__symbolize(r, tgid, true, kips, knr, *frames + *nr);
	return stack_frames_add_lines(r, frames, nr);
}

/* Whether f is a named kernel frame whose name starts with one of the prefixes. */
static bool kernel_name_has_prefix(const struct frame *f, const char *const *prefixes, size_t n)
{
	if (!f->kernel || !f->name)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(f->name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Leaf kernel frames of the tracing machinery between the traced code and the BPF program (BPF
 * programs and trampolines, perf/raw tracepoint glue, kprobe and ftrace handlers): perf's stacks
 * for the same events end at the code that hit the event. */
static bool is_tracing_frame(const struct frame *f)
{
	static const char *const prefixes[] = {
		"bpf_prog_", "bpf_trampoline_", "bpf_trace_run", "__bpf_trace_", "trace_call_bpf",
		"perf_trace_", "perf_syscall_", "__traceiter_", "kprobe_", "kretprobe_", "rethook_",
		"arch_rethook_", "aggr_pre_handler", "opt_pre_handler", "optimized_callback",
		"pre_handler_kretprobe", "fprobe_", "ftrace_", "arch_ftrace_ops_list_func",
		"__bpf_prog_enter", "__bpf_prog_exit",
	};

	return kernel_name_has_prefix(f, prefixes, sizeof(prefixes) / sizeof(prefixes[0]));
}

__u32 stack_frames_trim_bpf(struct frame *frames, __u32 nr)
{
	while (nr && is_tracing_frame(&frames[nr - 1]))
		nr--;
	return nr;
}

void stack_sample_trim_bpf(struct stack_sample *s)
{
	while (s->nr_frames && is_tracing_frame(stack_sample_frame(s, s->nr_frames - 1)))
		s->nr_frames--;
}

/* Interrupt entry stubs: x86 (asm_sysvec_*, asm_common_interrupt, asm_spurious_interrupt) and
 * arm64 (el1h_64_irq, el0t_64_irq, ..._fiq).  Exceptions such as page faults are task context. */
static bool is_irq_entry(const struct frame *f)
{
	static const char *const prefixes[] = { "asm_sysvec_", "asm_common_interrupt",
						"asm_spurious_interrupt", "el1h_64_irq", "el0t_64_irq",
						"el1h_64_fiq", "el0t_64_fiq" };

	return kernel_name_has_prefix(f, prefixes, sizeof(prefixes) / sizeof(prefixes[0]));
}

bool stack_waker_from_irq(struct stack_sample *s)
{
	__u32 i;

	for (i = s->nr_waker_frames; i > 0; i--)
		if (is_irq_entry(&s->waker_frames[i - 1]))
			break;
	if (i == 0)
		return false;
	/* Keep the interrupt's path (the entry frame and what it called). */
	memmove(s->waker_frames, s->waker_frames + i - 1,
		(s->nr_waker_frames - (i - 1)) * sizeof(*s->waker_frames));
	s->nr_waker_frames -= i - 1;
	snprintf(s->waker_comm, sizeof(s->waker_comm), "[interrupt]");
	return true;
}

int stack_sample_fill(struct stack_resolver *r, int stacks_fd, const struct sample_key *key,
		      __u64 value, struct stack_sample *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->comm, key->comm, sizeof(out->comm));
	out->comm[sizeof(out->comm) - 1] = '\0';
	out->pid = key->tgid;
	out->tid = key->pid;
	out->event = key->event;
	out->value = value;
	return stack_frames_fill(r, stacks_fd, key->tgid, key->user_stack, key->kern_stack,
				 &out->frames, &out->nr_frames);
}

/* Keeps the frames of stack trace st (value_size bytes as the map holds it) under id in the
 * traces cache: only the frames, most stacks are far shorter than the maximum.  0 or -ENOMEM. */
static int keep_trace(struct stack_resolver *r, __u64 id, const struct stack_trace *st,
		      size_t value_size)
{
	__u32 nr = st->nr;
	size_t size;
	struct stack_trace *copy;

	if (nr > MAX_STACK_DEPTH)
		nr = MAX_STACK_DEPTH;
	size = offsetof(struct stack_trace, ips) + nr * sizeof(st->ips[0]);
	if (size > value_size)
		return -EINVAL; /* not a stack of this map */
	if (hashtab_get(&r->traces, id, 0))
		return 0;
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, st, size);
	/* through memcpy: the copy is shorter than the struct it is read as */
	memcpy((char *)copy + offsetof(struct stack_trace, nr), &nr, sizeof(nr));
	if (hashtab_put(&r->traces, id, 0, copy)) {
		free(copy);
		return -ENOMEM;
	}
	return 0;
}

/* m's buffer for a batch, of at least size bytes: kept from drain to drain (a fresh one of
 * 256 KB was an mmap() and its page faults at every drain).  NULL on ENOMEM. */
static void *batch_buf(struct stack_drain_maps *m, size_t size)
{
	if (size > m->buf_size) {
		free(m->buf);
		m->buf = malloc(size);
		m->buf_size = m->buf ? size : 0;
	}
	return m->buf;
}

void stack_drain_maps_free(struct stack_drain_maps *m)
{
	free(m->buf);
	m->buf = NULL;
	m->buf_size = 0;
}

/* Every stack of generation gen in the stacks map, read in batches (5.6+) into the traces cache,
 * and their ids into *ids (for deletion): two syscalls a few hundred stacks instead of two a
 * stack (a key walk, then a lookup per id: 4,000 syscalls a second under process churn).
 * -ENOTSUP where the kernel has no batches for the map, or another -errno. */
static int stacks_of_gen(struct stack_resolver *r, struct stack_drain_maps *m, int fd, __u32 gen,
			 char **ids, size_t *nr)
{
	enum { CHUNK = 256 };
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	__u64 kbuf[CHUNK], token = 0, *out = NULL, *tmp;
	char *vbuf = NULL;
	size_t n = 0, cap = 0;
	bool first = true, done = false;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.key_size != sizeof(__u64) || info.value_size < offsetof(struct stack_trace, ips))
		return -ENOTSUP;
	vbuf = batch_buf(m, (size_t)CHUNK * info.value_size);
	if (!vbuf)
		return -ENOMEM;
	err = 0;
	while (!done && !err) {
		__u32 count = CHUNK;

		if (bpf_map_lookup_batch(fd, first ? NULL : &token, &token, kbuf, vbuf, &count, NULL)) {
			err = -errno;
			if (err != -ENOENT) /* ENOENT: the last batch, count entries still valid */
				break;
			err = 0;
			done = true;
		}
		first = false;
		for (__u32 i = 0; i < count && !err; i++) {
			if (STACK_ID_GEN(kbuf[i]) != gen)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				tmp = realloc(out, cap * sizeof(*out));
				if (!tmp) {
					err = -ENOMEM;
					break;
				}
				out = tmp;
			}
			out[n++] = kbuf[i];
			err = keep_trace(r, kbuf[i],
					 (const struct stack_trace *)(vbuf + (size_t)i * info.value_size),
					 info.value_size);
		}
	}
	if (err) {
		free(out);
		/* the traces cached stay valid: each is the map's value for its id */
		return err == -EINVAL || err == -EOPNOTSUPP || err == -ENOSPC ? -ENOTSUP : err;
	}
	*ids = (char *)out;
	*nr = n;
	return 0;
}

static int fill_sample_key(struct stack_resolver *r, int stacks_fd, const void *key, __u64 value,
			   struct stack_sample *out, void *ctx)
{
	return stack_sample_fill(r, stacks_fd, key, value, out);
}

/* Appends to r->ids the ids in agg of the nr frames of ips (innermost first), outermost first,
 * through the drain's memo.  0 or -ENOMEM. */
static int memo_frames(struct stack_resolver *r, struct stack_agg *agg, __u32 tgid, bool kernel,
		       const __u64 *ips, __u32 nr, __u32 *n)
{
	for (__u32 i = nr; i-- > 0;) {
		__u64 lookup = i ? ips[i] - 1 : ips[i], k1 = lookup, k2 = 0;
		const void *file = kernel ? NULL : syms_cache__file_at(r->syms, tgid, lookup, &k1);
		struct frame f = {};
		void *hit;
		long id;

		if (file)
			k2 = (uintptr_t)file;
		else if (!kernel)
			k2 = (__u64)tgid | 1ULL << 63; /* above any user-space pointer */
		hit = hashtab_get(&r->memo, k1, k2);

		if (hit) {
			r->ids[(*n)++] = (uintptr_t)hit - 1;
			continue;
		}
		resolve_frame(r, tgid, kernel, ips[i], i == 0, &f);
		id = stack_agg__frame_id(agg, &f);
		if (id < 0)
			return id;
		if (hashtab_put(&r->memo, k1, k2, (void *)(uintptr_t)(id + 1)))
			return -ENOMEM;
		r->ids[(*n)++] = id;
	}
	return 0;
}

/* A struct sample_key into agg, its frames symbolized through the drain's memo: each distinct
 * address of a drain is symbolized and its frame hashed once (under process churn the outer
 * frames of a process's stacks and the kernel's paths recur in most keys: measured, this was a
 * third of bpfprof's CPU in a system-wide run at 999 Hz).  Frames as stack_frames_fill() makes
 * them, without source lines.  0 or -errno. */
static int add_key_memo(struct stack_resolver *r, struct stack_agg *agg, int stacks_fd,
			const struct sample_key *key, __u64 value)
{
	const __u64 *uips = NULL, *kips = NULL;
	__u32 unr = 0, knr = 0, n = 0;
	struct stack_sample s = {};
	int err;

	if (key->user_stack)
		uips = stack_resolver__trace(r, stacks_fd, key->user_stack, &unr);
	if (key->kern_stack)
		kips = stack_resolver__trace(r, stacks_fd, key->kern_stack, &knr);
	if (!uips)
		unr = 0;
	if (!kips)
		knr = 0;
	if (unr + knr > r->ids_cap) {
		size_t cap = (unr + knr) * 2;
		__u32 *ids = realloc(r->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		r->ids = ids;
		r->ids_cap = cap;
	}
	err = memo_frames(r, agg, key->tgid, false, uips, unr, &n);
	err = err ?: memo_frames(r, agg, key->tgid, true, kips, knr, &n);
	if (err)
		return err;
	memcpy(s.comm, key->comm, sizeof(s.comm));
	s.comm[sizeof(s.comm) - 1] = '\0';
	s.pid = key->tgid;
	s.tid = key->pid;
	s.event = key->event;
	s.value = value;
	s.nr_frames = n;
	s.frame_ids = s.waker_frame_ids = n ? r->ids : NULL;
	s.frame_table = stack_agg__frames(agg);
	return stack_agg__add_own(agg, &s);
}

/* Every key of map fd for which keep(key, ctx) holds, in a malloc'd array of *nr keys of
 * key_size bytes.  0 or -errno. */
static int keys_where(int fd, size_t key_size, bool (*keep)(const void *key, void *ctx),
		      void *ctx, char **out, size_t *nr)
{
	char *keys = NULL, *tmp, *cur, *next;
	size_t n = 0, cap = 0;
	bool first = true;
	int err = 0;

	cur = malloc(key_size);
	next = malloc(key_size);
	if (!cur || !next) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (bpf_map_get_next_key(fd, first ? NULL : cur, next) == 0) {
		first = false;
		memcpy(cur, next, key_size);
		if (!keep(cur, ctx))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			tmp = realloc(keys, cap * key_size);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			keys = tmp;
		}
		memcpy(keys + n++ * key_size, cur, key_size);
	}
	*out = keys;
	*nr = n;
	keys = NULL;
cleanup:
	free(keys);
	free(cur);
	free(next);
	return err;
}

/* Deletes n keys of key_size bytes from map fd: in batches where the kernel has them (5.6+). */
static void delete_keys(int fd, const char *keys, size_t key_size, size_t n)
{
	size_t done = 0;

	while (done < n) {
		__u32 count = n - done > 4096 ? 4096 : n - done;

		int err = bpf_map_delete_batch(fd, keys + done * key_size, &count, NULL);

		/* count says how many went, also when the batch stopped part way */
		done += count;
		if (err || !count)
			break;
	}
	for (; done < n; done++)
		bpf_map_delete_elem(fd, keys + done * key_size);
}

/* Every (key, value) of counts map fd whose key holds generation gen at gen_off, read in batches
 * (hash maps, 5.6+): *keys and *values malloc'd, *nr entries.  -ENOTSUP where the kernel has no
 * batches, or another -errno. */
static int counts_of_gen(struct stack_drain_maps *m, int fd, size_t key_size, size_t gen_off,
			 __u32 gen, char **keys, __u64 **values, size_t *nr)
{
	enum { CHUNK = 4096 };
	/* the keys, then the values (8-byte aligned) */
	size_t vals_off = (CHUNK * key_size + 7) & ~(size_t)7;
	char *kbuf = batch_buf(m, vals_off + CHUNK * sizeof(__u64)), *ks = NULL, *tk;
	__u64 *vbuf = kbuf ? (__u64 *)(kbuf + vals_off) : NULL, *vs = NULL, *tv, token = 0;
	size_t n = 0, cap = 0;
	bool first = true, done = false;
	int err = 0;

	if (!kbuf || !vbuf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (!done) {
		__u32 count = CHUNK, g;

		if (bpf_map_lookup_batch(fd, first ? NULL : &token, &token, kbuf, vbuf, &count, NULL)) {
			err = -errno;
			if (err != -ENOENT) /* ENOENT: the last batch, count entries still valid */
				goto cleanup;
			err = 0;
			done = true;
		}
		first = false;
		for (__u32 i = 0; i < count; i++) {
			memcpy(&g, kbuf + i * key_size + gen_off, sizeof(g));
			if (g != gen)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				tk = realloc(ks, cap * key_size);
				if (tk)
					ks = tk;
				tv = realloc(vs, cap * sizeof(*vs));
				if (tv)
					vs = tv;
				if (!tk || !tv) {
					err = -ENOMEM;
					goto cleanup;
				}
			}
			memcpy(ks + n * key_size, kbuf + i * key_size, key_size);
			vs[n++] = vbuf[i];
		}
	}
	*keys = ks;
	*values = vs;
	*nr = n;
	ks = NULL;
	vs = NULL;
cleanup:
	free(ks);
	free(vs);
	return err == -EINVAL || err == -EOPNOTSUPP ? -ENOTSUP : err;
}

/* The same, a key at a time. */
static int counts_of_gen_slow(int fd, size_t key_size, void *filter, char **keys,
			      __u64 **values, size_t *nr);

struct gen_filter {
	size_t gen_off; /* where a counts key holds its generation */
	__u32 gen;
};

static bool count_key_of_gen(const void *key, void *ctx)
{
	const struct gen_filter *f = ctx;
	__u32 gen;

	memcpy(&gen, (const char *)key + f->gen_off, sizeof(gen));
	return gen == f->gen;
}

static bool stack_id_of_gen(const void *key, void *ctx)
{
	const struct gen_filter *f = ctx;
	__u64 id;

	memcpy(&id, key, sizeof(id));
	return STACK_ID_GEN(id) == f->gen;
}

int stacks_drain_gen(struct stack_resolver *r, struct stack_drain_maps *m, __u32 gen,
		     struct stack_agg *agg, struct stack_drain_result *res)
{
	stack_fill_fn fill = m->fill ? m->fill : fill_sample_key;
	/* sample keys' frames through the memo, unless lines or exact leaves make frames of one
	 * address differ */
	bool memo = !m->fill && !r->lines && !stack_agg__exact_leaves(agg);
	struct gen_filter f = { .gen_off = m->gen_off, .gen = gen };
	char *keys = NULL, *ids = NULL;
	size_t nr_keys = 0, nr_ids = 0;
	struct stack_sample sample;
	__u64 value, *values = NULL;
	bool listed;
	int err;

	memset(res, 0, sizeof(*res));
	/* the generation's stacks first, in batches: the samples below find them cached */
	err = stacks_of_gen(r, m, m->stacks_fd, gen, &ids, &nr_ids);
	if (err && err != -ENOTSUP)
		return err;
	listed = !err;
	err = counts_of_gen(m, m->counts_fd, m->key_size, m->gen_off, gen, &keys, &values, &nr_keys);
	if (err == -ENOTSUP)
		err = counts_of_gen_slow(m->counts_fd, m->key_size, &f, &keys, &values, &nr_keys);
	for (size_t i = 0; !err && i < nr_keys; i++) {
		const char *key = keys + i * m->key_size;

		value = values[i];
		res->value += value;
		if (memo) {
			err = add_key_memo(r, agg, m->stacks_fd, (const struct sample_key *)key, value);
			continue;
		}
		memset(&sample, 0, sizeof(sample));
		err = fill(r, m->stacks_fd, key, value, &sample, m->fill_ctx);
		err = err ?: stack_agg__add(agg, &sample);
		free(sample.frames);
		free(sample.waker_frames);
	}
	/* the keys are deleted once read, added or not: read again, they would count twice */
	if (keys)
		delete_keys(m->counts_fd, keys, m->key_size, nr_keys);
	res->counts_deleted = nr_keys;
	if (!err && !listed)
		err = keys_where(m->stacks_fd, sizeof(__u64), stack_id_of_gen, &f, &ids, &nr_ids);
	if (ids)
		delete_keys(m->stacks_fd, ids, sizeof(__u64), nr_ids);
	res->stacks_deleted = nr_ids;
	/* the frames cached were read for these samples; the ids may come back with others */
	hashtab_clear(&r->traces, free);
	/* the next drain may go to another aggregation, and processes' mappings change */
	hashtab_clear(&r->memo, NULL);
	free(keys);
	free(values);
	free(ids);
	return err;
}

static int counts_of_gen_slow(int fd, size_t key_size, void *filter, char **keys,
			      __u64 **values, size_t *nr)
{
	int err = keys_where(fd, key_size, count_key_of_gen, filter, keys, nr);

	*values = err ? NULL : calloc(*nr ?: 1, sizeof(**values));
	if (!err && !*values)
		err = -ENOMEM;
	/* a key that vanished meanwhile counts 0 */
	for (size_t i = 0; !err && i < *nr; i++)
		bpf_map_lookup_elem(fd, *keys + i * key_size, &(*values)[i]);
	return err;
}

__u64 stack_resolver__missing(const struct stack_resolver *r)
{
	return r->missing_stacks;
}

void stack_samples_free(struct stack_sample *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].frames);
		free(s[i].waker_frames);
	}
	free(s);
}

void stack_resolver__free(struct stack_resolver *r)
{
	if (!r)
		return;
	if (r->prefetching)
		pthread_join(r->prefetcher, NULL);
	hashtab_clear(&r->traces, free);
	hashtab_clear(&r->memo, NULL);
	free(r->ids);
	ksyms__free(r->ksyms);
	syms_cache__free(r->syms);
	srclines__free(r->lines);
	free(r->no_lines);
	free(r->last_noted);
	free(r->vmlinux);
	free(r);
}
