#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include "core/grow.h"
#include "core/common.h"
#include "core/hashtab.h"
#include "sym/cgroups.h"
#include "sym/stackagg.h"
#include "sym/srcline.h"
#include "sym/srcworker.h"
#include "sym/stackcollect.h"
#include "sym/syms.h"

/* Slots of the memo of frames (below) at most, half of them used: 1.5 MB of table. */
#define MEMO_SLOTS 65536

/* Answers the worker keeps at most between drains that do not go through the memo (a chain or
 * two each, 40-90 bytes, and 40 of the question and 50 of its index's slots beside it: 4 MB
 * at 32k; 10k were held after 10 minutes of churn, and they go on growing); the memo's drains keep
 * them until it starts afresh, and past that while at most WORKER_ANSWERS_KEPT are held.  An
 * address asked again is answered from the srclines' chains, indexes or persistent cache:
 * the worker's whole CPU was 0.2 s in 10 minutes of churn. */
#define WORKER_ANSWERS_MAX 16384
/* Answers kept when the memo starts afresh: at most this many, or none. */
#define WORKER_ANSWERS_KEPT (WORKER_ANSWERS_MAX / 2)

/* An item of a key's frames (below) that waits for an inline chain: ITEM_PENDING | the
 * worker's ticket, then the id in known of the frame of the function it was compiled in. */
#define ITEM_PENDING (1u << 31)

/* A key read whose frames wait for the worker: added to the aggregation once every chain
 * they need is answered (at a later drain, or when the samples are taken). */
struct pending_key {
	struct sample_key key;
	__u64 value;
	size_t items;      /* its frames' items, at pending_items + items */
	__u32 nr_items;
};

/* Frames of memoized addresses, one run per address: a count, then that many frame ids. */
struct frame_runs {
	__u32 *v;
	size_t nr, cap;
};

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
	struct ksyms_store kept; /* kept.read NULL: none */
	struct known_bpf {
		__u64 start;
		__u32 len;
		char name[128];
	} *known_bpf;          /* this run's BPF functions, for kept symbols (ksyms__add_bpf()) */
	size_t nr_known_bpf;
	bool told_kept;
	struct syms_cache *syms;
	struct hashtab traces; /* stack id -> struct stack_trace */
	struct srclines *lines; /* NULL: frames get no source lines */
	struct srcworker *worker; /* looks them up, on a thread of its own */
	bool inline_frames;
	bool every_line;        /* false: only inlined frames get theirs */
	char *no_lines;         /* files with frames but no debug info, ", "-separated */
	char *last_noted;       /* the last file note_no_lines() was asked about */
	size_t nr_no_lines;
	__u64 lines_ns, lines_frames; /* spent in stack_frames_add_lines(), frames it saw */
	bool vmlinux_tried;
	char *vmlinux;          /* the running kernel's image with debug info, or NULL */
	__u64 kaslr;            /* what KASLR added to its addresses */
	/* Frames symbolized so far, by what decides them, -> the index + 1 in `runs` of the
	 * address's frames in `known`: (address, 0) in the kernel; (file offset, file) where the
	 * mapped file alone decides (syms_cache__file_at(): the processes of one program share it,
	 * and it outlives them).  With source lines, an address's frames are its function's and
	 * each inlined there's.  Kept from drain to drain, started afresh once it is full
	 * (MEMO_SLOTS). */
	struct hashtab memo;
	struct frame_runs runs;
	/* this drain's frames that their process decides (anonymous code, a JIT's map, no
	 * mapping known): (address, tgid) -> the index + 1 in proc_runs */
	struct hashtab memo_proc;
	struct frame_runs proc_runs;
	struct stack_agg *known;  /* each memoized frame once, with its own copies of the strings
				   * (the files that named them may be freed) */
	__u32 *xlat;            /* known's ids in the aggregation xlat_agg: id + 1, 0 not yet */
	size_t xlat_cap;
	__u64 xlat_agg;         /* stack_agg__serial() */
	__u64 memo_hits, memo_misses, memo_resets;
	__u32 *ids;             /* a sample's frame ids, reused from key to key */
	size_t ids_cap;
	__u32 *items;           /* a key's frames as items (memo_items()), reused */
	size_t items_cap;
	struct pending_key *pending; /* keys waiting for inline chains */
	size_t nr_pending, pending_cap;
	__u32 *pending_items;
	size_t nr_pending_items, pending_items_cap;
	__u64 deferred;         /* keys that waited */
	struct cgroup_names *cgroups; /* names of keys' cgroups; NULL: samples get none */
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

	r->ksyms = r->kept.read ? ksyms__load_kept(&r->kept) : ksyms__load();
	r->ksyms_errno = r->ksyms ? 0 : errno;
	for (size_t i = 0; r->ksyms && i < r->nr_known_bpf; i++)
		ksyms__add_bpf(r->ksyms, r->known_bpf[i].start, r->known_bpf[i].len,
			       r->known_bpf[i].name);
	tell_loaded(r);
	return NULL;
}

/* -v: whether /proc/kallsyms was read, once the symbols are no longer needed. */
static void tell_kept(struct stack_resolver *r)
{
	size_t outside;

	if (!r->ksyms || !r->kept.read || r->told_kept)
		return;
	r->told_kept = true;
	if (ksyms__outside(r->ksyms, &outside))
		p_info("kernel symbols: the core kernel's, kept from an earlier run of this boot; "
		       "/proc/kallsyms read for the %zu outside it (an address of a module, a "
		       "trampoline or another tool's BPF program to name)", outside);
	else
		p_info("kernel symbols: %s", ksyms__partial(r->ksyms) ?
		       "the core kernel's, kept from an earlier run of this boot; /proc/kallsyms not read" :
		       "/proc/kallsyms read (none kept for this boot yet, or every name asked for)");
}

void stack_resolver__keep_ksyms(struct stack_resolver *r, const struct ksyms_store *st)
{
	r->kept = *st;
}

int stack_resolver__known_bpf(struct stack_resolver *r, __u64 start, __u32 len, const char *name)
{
	struct known_bpf *tmp = realloc(r->known_bpf, (r->nr_known_bpf + 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	r->known_bpf = tmp;
	tmp[r->nr_known_bpf].start = start;
	tmp[r->nr_known_bpf].len = len;
	snprintf(tmp[r->nr_known_bpf].name, sizeof(tmp->name), "%s", name);
	r->nr_known_bpf++;
	return 0;
}

void stack_resolver__join_prefetch(struct stack_resolver *r)
{
	if (!r)
		return;
	if (r->prefetching) {
		pthread_join(r->prefetcher, NULL);
		r->prefetching = false;
		r->ksyms_tried = true;
	}
	tell_kept(r);
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

int stack_resolver__set_lines(struct stack_resolver *r, bool inline_frames, bool every_line)
{
	r->lines = r->lines ?: srclines__new();
	r->worker = r->worker ?: (r->lines ? srcworker__new(r->lines) : NULL);
	r->inline_frames = inline_frames;
	r->every_line = every_line || !inline_frames;
	return r->worker ? 0 : -ENOMEM;
}

int stack_resolver__set_line_cache(struct stack_resolver *r, struct disk_cache *dc)
{
	return r->lines ? srclines__set_cache(r->lines, dc) : 0;
}

/* Names a file whose frames have no lines, once, for the report's header (the first few). */
static void note_no_lines(struct stack_resolver *r, const char *module)
{
	const char *name = stack_module_short(module);
	size_t len = r->no_lines ? strlen(r->no_lines) : 0, add = strlen(name);
	char *n;

	/* frames of one file come together (a stack's, the next stack's): the file just
	 * noted is not looked for again */
	if (r->nr_no_lines > 8 || (r->last_noted && !strcmp(r->last_noted, module)))
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
	__u64 stext = 0, running;
	struct elf_syms *es = NULL;
	struct utsname u;

	/* the file first: _stext's address sorts every kernel symbol by name (about 15 ms of CPU),
	 * which a machine without a vmlinux (most) need not pay */
	if (uname(&u) ||
	    kernel_debuginfo_find(u.release, kernel_build_id("[kernel.kallsyms]"), path, size))
		return -ENOENT;
	running = ksyms__addr(ks, "_stext");
	if (!running)
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
	/* asked for every frame's line (--srcline, a pprof): the header says the kernel's have
	 * none, as it does a program's */
	if (!r->vmlinux && r->every_line)
		note_no_lines(r, "[kernel.kallsyms]");
}

/* The chain the worker answered err for frame f (NULL where there is none), its file noted
 * where it has no debug info. */
static const struct srcline_chain *answered_chain(struct stack_resolver *r, const struct frame *f,
						 int err, const struct srcline_chain *c)
{
	if (err == -ENOENT && !f->kernel)
		note_no_lines(r, f->module);
	return err ? NULL : c;
}

/* A frame's inline chain into *c, NULL where there is none (no DWARF, unnamed code); leaf: the
 * sample's innermost frame, whose address is no return address.  0, or (unless wait) -EAGAIN
 * when the worker has not answered yet: *ticket names the question. */
static int frame_chain(struct stack_resolver *r, const struct frame *f, bool leaf, bool wait,
		       const struct srcline_chain **c, __u32 *ticket)
{
	int err;

	*c = NULL;
	if (f->kernel && f->name && f->module && !strcmp(f->module, "[kernel.kallsyms]")) {
		if (!r->vmlinux_tried)
			find_vmlinux(r);
		/* a caller's is a return address: the call is before it (user frames' offsets
		 * say the same) */
		if (!r->vmlinux)
			return 0;
		err = srcworker__ask(r->worker, r->vmlinux, true, f->addr - r->kaslr - !leaf, wait,
				     c, ticket);
	} else if (f->kernel || !f->module || f->module[0] != '/') {
		return 0;
	} else {
		err = srcworker__ask(r->worker, f->module, false, f->offset, wait, c, ticket);
	}
	if (err == -EAGAIN)
		return err;
	*c = answered_chain(r, f, err, *c);
	return 0;
}

/* How many frames a frame with chain c (frame_chain(), NULL for none) becomes. */
static __u32 frames_of_chain(const struct stack_resolver *r, const struct srcline_chain *c)
{
	return c && r->inline_frames ? c->nr : 1;
}

/* The j-th of the frames_of_chain() frames f becomes: f itself with the line of its compiled
 * function, then (inline_frames) a frame for each function inlined at its address. */
static void frame_of_chain(const struct stack_resolver *r, const struct frame *f,
			   const struct srcline_chain *c, __u32 j, struct frame *out)
{
	*out = *f;
	if (!c || (!j && !r->every_line))
		return;
	if (!j) {
		/* the compiled function keeps its symbol's name (foo.cold, a clone's) */
		const struct srcline_frame *at = &c->f[r->inline_frames ? 0 : c->nr - 1];

		out->srcfile = at->file;
		out->line = at->line;
		return;
	}
	out->name = c->f[j].func ?: "[inlined]";
	out->inlined = true;
	out->srcfile = c->f[j].file;
	out->line = c->f[j].line;
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
		const struct srcline_chain *c;
		__u32 k;

		frame_chain(r, &in[i], i == *nr - 1, true, &c, NULL);
		k = frames_of_chain(r, c);

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
		for (__u32 j = 0; j < k; j++)
			frame_of_chain(r, &in[i], c, j, &out[n + j]);
		n += k;
	}
	free(in);
	r->lines_frames += *nr;
	*frames = out;
	*nr = n;
	r->lines_ns += now_ns() - start;
	return 0;
}

/* What drains keep between them: the traces, the memo as before the first drain (memo_begin()
 * starts it afresh without known), the id translation, the frame runs and the keys waiting for
 * lines (none left once settled). */
static void free_drain_state(struct stack_resolver *r)
{
	hashtab_clear(&r->traces, free);
	hashtab_clear(&r->memo, NULL);
	hashtab_clear(&r->memo_proc, NULL);
	stack_agg__free(r->known);
	r->known = NULL;
	free(r->xlat);
	r->xlat = NULL;
	r->xlat_cap = 0;
	r->xlat_agg = 0;
	free(r->runs.v);
	free(r->proc_runs.v);
	r->runs = r->proc_runs = (struct frame_runs){ 0 };
	free(r->pending);
	free(r->pending_items);
	r->pending = NULL;
	r->pending_items = NULL;
	r->nr_pending = r->pending_cap = r->nr_pending_items = r->pending_items_cap = 0;
}

void stack_resolver__release(struct stack_resolver *r)
{
	if (r->lines) {
		/* the worker answered every key (stack_resolver__settle()): its answers go too */
		srcworker__stop(r->worker, NULL);
		srcworker__trim(r->worker, 0);
		srclines__close_files(r->lines);
	}
	syms_cache__release(r->syms);
	free_drain_state(r);
	/* tried: the prefetch is over, and what it told loaded (the kernel-stack walker's
	 * addresses) holds no pointer into them */
	if (r->ksyms_tried) {
		tell_kept(r);
		ksyms__free(r->ksyms);
		r->ksyms = NULL; /* tried: frames would stay unresolved, and none is asked for */
	}
}

void stack_resolver__print_lines_cost(const struct stack_resolver *r)
{
	struct srcline_stats st;

	size_t answers, answer_bytes;
	__u64 worker_ns;

	if (!r->lines)
		return;
	/* the worker's figures are read once it is idle */
	srcworker__stop(r->worker, &worker_ns);
	srclines__stats(r->lines, &st);
	srcworker__held(r->worker, &answers, &answer_bytes);
	p_info("source lines held: %llu KB of line tables, %llu chains, %zu answers (%zu KB); the "
	       "frame memo's runs %zu KB, %zu keys waiting (%zu KB)",
	       (unsigned long long)st.line_bytes >> 10, (unsigned long long)st.chains, answers,
	       answer_bytes >> 10, r->runs.cap * sizeof(*r->runs.v) >> 10, r->nr_pending,
	       (r->pending_cap * sizeof(*r->pending) +
		r->pending_items_cap * sizeof(*r->pending_items)) >> 10);
	p_info("source lines: %llu frames asked for in %.1f ms, %llu keys waited for them; %llu "
	       "addresses looked up (%llu of them again) in %.1f ms of the worker's CPU; "
	       "%llu units and %llu functions indexed in %llu KB (%llu files opened, %llu indexes "
	       "dropped, libdw's state given back %llu times)",
	       (unsigned long long)r->lines_frames, r->lines_ns / 1e6,
	       (unsigned long long)r->deferred, (unsigned long long)st.lookups,
	       (unsigned long long)st.hits, worker_ns / 1e6, (unsigned long long)st.units,
	       (unsigned long long)st.functions, (unsigned long long)st.index_bytes >> 10,
	       (unsigned long long)st.opened, (unsigned long long)st.drops,
	       (unsigned long long)st.releases);
	if (st.cache_dir)
		p_info("inline cache %s: %llu addresses answered from it (%llu files, %llu functions "
		       "read), the debug info of %llu files opened (%llu put in it whole); %llu "
		       "regions added (stored as the files close, or %llu times before, to bound "
		       "what is held: %llu regions not stored then), %llu rejected (corrupt or "
		       "foreign) and rebuilt",
		       st.cache_dir, (unsigned long long)st.cache_answers,
		       (unsigned long long)st.cache_files, (unsigned long long)st.cache_entries,
		       (unsigned long long)st.dwarf_opened, (unsigned long long)st.harvested,
		       (unsigned long long)st.cache_regions, (unsigned long long)st.cache_flushes,
		       (unsigned long long)st.cache_flush_dropped,
		       (unsigned long long)st.cache_rejected);
	else
		p_info("inline cache: not used; the debug info of %llu files opened",
		       (unsigned long long)st.dwarf_opened);
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

void stack_resolver__set_cgroups(struct stack_resolver *r, struct cgroup_names *c)
{
	cgroup_names__free(r->cgroups);
	r->cgroups = c;
}

/* A key's cgroup by name, NULL when it has none (sample_key.cgroup 0: not asked) */
static const char *key_cgroup(struct stack_resolver *r, const struct sample_key *key)
{
	return key->cgroup && r->cgroups ? cgroup_names__get(r->cgroups, key->cgroup) : NULL;
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
	out->cgroup = key_cgroup(r, key);
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

/* Room in *v (of *cap) for n more __u32 than used.  0 or -ENOMEM. */
/* The frames of frame f with chain c (frame_chain()) into r->known, appended to *v (of *cap,
 * *n used).  0 or -ENOMEM. */
static int chain_ids(struct stack_resolver *r, const struct frame *f,
		     const struct srcline_chain *c, __u32 **v, size_t *cap, size_t *n)
{
	__u32 k = frames_of_chain(r, c);
	struct frame x;

	if (ARRAY_GROW(*v, *cap, *n + k))
		return -ENOMEM;
	for (__u32 j = 0; j < k; j++) {
		long id;

		frame_of_chain(r, f, c, j, &x);
		id = stack_agg__frame_id(r->known, &x);
		if (id < 0)
			return id;
		(*v)[(*n)++] = id;
	}
	return 0;
}

/* Appends to runs a run for frame f (with chain c): a count, then the ids in r->known of f's
 * frames.  Returns its index in runs->v, or -ENOMEM. */
static long add_run(struct stack_resolver *r, struct frame_runs *runs, const struct frame *f,
		    const struct srcline_chain *c)
{
	size_t at = runs->nr, n = at + 1;
	int err = chain_ids(r, f, c, &runs->v, &runs->cap, &n);

	if (err)
		return err;
	runs->v[at] = n - at - 1;
	runs->nr = n;
	return at;
}

/* The frames of address addr symbolized, with source lines where the run asks for them, into
 * r->known (one, or one more for each function inlined there), appended to runs as a run: a
 * count, then the ids; or, while the worker has not answered its chain, a pending run: its two
 * items (ITEM_PENDING), which known_run() makes a run of once answered.  Returns the run's
 * index in runs->v, or -ENOMEM. */
static long memo_run(struct stack_resolver *r, struct frame_runs *runs, __u32 tgid, bool kernel,
		     __u64 addr, bool leaf)
{
	const struct srcline_chain *c = NULL;
	size_t at = runs->nr;
	struct frame f = {};
	__u32 ticket;
	long id;
	int err;

	resolve_frame(r, tgid, kernel, addr, leaf, &f);
	if (r->lines) {
		__u64 start = now_ns();

		err = frame_chain(r, &f, leaf, false, &c, &ticket);
		r->lines_frames++;
		r->lines_ns += now_ns() - start;
		if (err == -EAGAIN) {
			id = stack_agg__frame_id(r->known, &f);
			if (id < 0 || ARRAY_GROW(runs->v, runs->cap, at + 2))
				return id < 0 ? id : -ENOMEM;
			runs->v[at] = ITEM_PENDING | ticket;
			runs->v[at + 1] = id;
			runs->nr = at + 2;
			return at;
		}
	}
	return add_run(r, runs, &f, c);
}

/* The run of pending run at (in runs) once the worker answered its chain: made and returned
 * (its index), or at while not answered.  -ENOMEM. */
static long answered_run(struct stack_resolver *r, struct frame_runs *runs, size_t at)
{
	const struct srcline_chain *c;
	struct frame f;
	int err = srcworker__answer(r->worker, runs->v[at] & ~ITEM_PENDING, &c);

	if (err == -EAGAIN)
		return at;
	/* the frame of the function it was compiled in, its strings known's */
	f = stack_agg__frames(r->known)[runs->v[at + 1]];
	return add_run(r, runs, &f, answered_chain(r, &f, err, c));
}

/* The run (a count, then ids in r->known) of frame i of ips (innermost first), symbolized on
 * first sight, into *run; or a pending run (ITEM_PENDING: its two items), with -EAGAIN.
 * 0, -EAGAIN or -ENOMEM. */
static int known_run(struct stack_resolver *r, __u32 tgid, bool kernel, const __u64 *ips,
		     __u32 i, const __u32 **run)
{
	__u64 lookup = i ? ips[i] - 1 : ips[i], k1 = lookup, k2 = 0;
	struct hashtab *memo = &r->memo;
	struct frame_runs *runs = &r->runs;
	bool put = true;
	void *hit;
	long at;

	if (!kernel && !(k2 = syms_cache__file_at(r->syms, tgid, lookup, &k1))) {
		memo = &r->memo_proc;
		runs = &r->proc_runs;
		k1 = lookup;
		k2 = tgid;
	}
	hit = hashtab_get(memo, k1, k2);
	if (hit) {
		r->memo_hits++;
		at = (uintptr_t)hit - 1;
		put = false;
	} else {
		r->memo_misses++;
		at = memo_run(r, runs, tgid, kernel, ips[i], i == 0);
	}
	if (at >= 0 && (runs->v[at] & ITEM_PENDING)) {
		long made = answered_run(r, runs, at);

		put |= made != at;
		at = made;
	}
	if (at < 0)
		return at;
	/* full, it does not grow: the next drain starts it afresh */
	if (put && (hit || (memo->len + 1) * 2 <= MEMO_SLOTS) &&
	    hashtab_put(memo, k1, k2, (void *)(uintptr_t)(at + 1)))
		return -ENOMEM;
	*run = runs->v + at;
	return (runs->v[at] & ITEM_PENDING) ? -EAGAIN : 0;
}

/* The id in agg of r->known's frame kid: looked up there once per aggregation.  -ENOMEM, the
 * id, or STACK_AGG_NO_FRAME for a frame new to agg once its bound is reached (its nodes are all
 * made, and stay made: refused for good, and remembered so). */
static long agg_id(struct stack_resolver *r, struct stack_agg *agg, long kid)
{
	long id;

	if (ARRAY_GROW_ZEROED(r->xlat, r->xlat_cap, (size_t)kid + 1))
		return -ENOMEM;
	if (r->xlat[kid])
		return r->xlat[kid] - 1;
	id = stack_agg__frame_id(agg, &stack_agg__frames(r->known)[kid]);
	if (id == -ENOSPC)
		id = STACK_AGG_NO_FRAME;
	if (id >= 0)
		r->xlat[kid] = id + 1;
	return id;
}

/* Appends to r->items (*n used) the frames of ips (innermost first), outermost first, through
 * the memo: their ids in r->known, or a frame's two ITEM_PENDING items where its chain is not
 * answered yet (counted in *pending).  0 or -ENOMEM. */
static int memo_items(struct stack_resolver *r, __u32 tgid, bool kernel, const __u64 *ips,
		      __u32 nr, size_t *n, size_t *pending)
{
	for (__u32 i = nr; i-- > 0;) {
		const __u32 *run = NULL;
		int err = known_run(r, tgid, kernel, ips, i, &run);

		if (err == -EAGAIN) {
			if (ARRAY_GROW(r->items, r->items_cap, *n + 2))
				return -ENOMEM;
			r->items[(*n)++] = run[0];
			r->items[(*n)++] = run[1];
			(*pending)++;
			continue;
		}
		err = err ?: ARRAY_GROW(r->items, r->items_cap, *n + run[0]);
		if (err)
			return err;
		memcpy(r->items + *n, run + 1, run[0] * sizeof(*run));
		*n += run[0];
	}
	return 0;
}

/* Whether every chain that nr items wait for is answered. */
static bool items_answered(struct stack_resolver *r, const __u32 *items, size_t nr)
{
	const struct srcline_chain *c;

	for (size_t i = 0; i < nr; i++)
		if ((items[i] & ITEM_PENDING) &&
		    srcworker__answer(r->worker, items[i++] & ~ITEM_PENDING, &c) == -EAGAIN)
			return false;
	return true;
}

/* A key of value whose frames are nr items (every chain answered) into agg.  0 or -errno. */
static int add_items(struct stack_resolver *r, struct stack_agg *agg, const struct sample_key *key,
		     __u64 value, const __u32 *items, size_t nr)
{
	struct stack_sample s = {};
	size_t n = 0, kn;
	int err;

	/* room for every item (chain_ids() makes more for inlined frames) */
	if (ARRAY_GROW(r->ids, r->ids_cap, nr))
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		const struct srcline_chain *c;
		struct frame f;
		long id;

		if (!(items[i] & ITEM_PENDING)) {
			id = agg_id(r, agg, items[i]);
			if (id < 0)
				return id;
			r->ids[n++] = id;
			continue;
		}
		/* the answer's frames, from the frame of the function it was compiled in */
		err = srcworker__answer(r->worker, items[i] & ~ITEM_PENDING, &c);
		f = stack_agg__frames(r->known)[items[++i]];
		c = answered_chain(r, &f, err, c);
		kn = n;
		err = chain_ids(r, &f, c, &r->ids, &r->ids_cap, &n);
		for (; !err && kn < n; kn++) {
			id = agg_id(r, agg, r->ids[kn]);
			err = id < 0 ? id : 0;
			r->ids[kn] = id;
		}
		if (err)
			return err;
	}
	memcpy(s.comm, key->comm, sizeof(s.comm));
	s.comm[sizeof(s.comm) - 1] = '\0';
	s.pid = key->tgid;
	s.tid = key->pid;
	s.event = key->event;
	s.value = value;
	s.cgroup = key_cgroup(r, key);
	s.nr_frames = n;
	s.frame_ids = s.waker_frame_ids = n ? r->ids : NULL;
	s.frame_table = stack_agg__frames(agg);
	return stack_agg__add_own(agg, &s);
}

/* Keeps key of value, its frames r->items[0, nr), until the chains they wait for are
 * answered.  0 or -ENOMEM. */
static int pend_key(struct stack_resolver *r, const struct sample_key *key, __u64 value,
		    size_t nr)
{
	if (ARRAY_GROW(r->pending, r->pending_cap, r->nr_pending + 1))
		return -ENOMEM;
	if (ARRAY_GROW(r->pending_items, r->pending_items_cap, r->nr_pending_items + nr))
		return -ENOMEM;
	memcpy(r->pending_items + r->nr_pending_items, r->items, nr * sizeof(*r->items));
	r->pending[r->nr_pending++] = (struct pending_key){ *key, value, r->nr_pending_items, nr };
	r->nr_pending_items += nr;
	r->deferred++;
	return 0;
}

/* The keys kept aside whose chains are answered into agg (wait: all of them, once the worker
 * answered every question); the others stay.  0 or -errno. */
static int pending_add(struct stack_resolver *r, struct stack_agg *agg, bool wait)
{
	size_t kept = 0, items = 0;
	int err = 0;

	if (!r->nr_pending)
		return 0;
	if (wait)
		srcworker__settle(r->worker);
	for (size_t i = 0; i < r->nr_pending; i++) {
		struct pending_key p = r->pending[i];
		const __u32 *v = r->pending_items + p.items;

		if (!err && items_answered(r, v, p.nr_items)) {
			err = add_items(r, agg, &p.key, p.value, v, p.nr_items);
			continue;
		}
		/* kept (also past an error: a later drain may add it) */
		memmove(r->pending_items + items, v, p.nr_items * sizeof(*v));
		p.items = items;
		items += p.nr_items;
		r->pending[kept++] = p;
	}
	r->nr_pending = kept;
	r->nr_pending_items = items;
	return err;
}

/* Before a drain into agg through the memo: known's ids in agg start afresh when agg is another
 * aggregation than the last drain's (a period's); the keys kept aside whose chains are answered
 * now are added; and the memo starts afresh once it is full (a run through ever new programs;
 * the programs running now are symbolized again), unless keys still wait for answers, whose
 * frames are known's: then at a later drain (a drain never waits for the worker).
 * 0 or -errno. */
static int memo_begin(struct stack_resolver *r, struct stack_agg *agg)
{
	bool full;
	int err;

	if (r->xlat_agg != stack_agg__serial(agg)) {
		if (r->xlat)
			memset(r->xlat, 0, r->xlat_cap * sizeof(*r->xlat));
		r->xlat_agg = stack_agg__serial(agg);
	}
	err = pending_add(r, agg, false);
	if (err)
		return err;
	full = (r->memo.len + 2) * 2 > MEMO_SLOTS;
	if (full) {
		/* the keys waiting aside hold ids in known and the worker's tickets, never an index in
		 * runs: the memo starts afresh whether or not some wait (else every miss would still
		 * append to runs, drain after drain, while the worker is behind) */
		r->memo_resets++;
		/* its slots kept (1.5 MB): grown again from nothing, each doubling held the old
		 * slots beside the new */
		hashtab_reset(&r->memo);
		r->runs.nr = 0;
	}
	if ((full && !r->nr_pending) || !r->known) {
		/* known, once no key waits on it; the worker's answers only past a bound: under
		 * churn most addresses come back after the memo starts afresh, and an answer held
		 * is given at once where a question asked again waits for the thread, its key aside
		 * until the next drain (27-60% of the questions in bench/soak.sh's runs were such) */
		if (r->worker)
			srcworker__trim(r->worker, WORKER_ANSWERS_KEPT);
		stack_agg__free(r->known);
		r->known = stack_agg__new(false);
		if (r->xlat)
			memset(r->xlat, 0, r->xlat_cap * sizeof(*r->xlat));
		if (!r->known)
			return -ENOMEM;
	}
	return 0;
}

int stack_resolver__settle(struct stack_resolver *r, struct stack_agg *agg)
{
	int err;

	if (!r->nr_pending)
		return 0;
	/* the ids known had for another aggregation are not this one's */
	if (r->xlat_agg != stack_agg__serial(agg)) {
		if (r->xlat)
			memset(r->xlat, 0, r->xlat_cap * sizeof(*r->xlat));
		r->xlat_agg = stack_agg__serial(agg);
	}
	err = pending_add(r, agg, true);
	if (err)
		p_err("cannot read the samples: %s", strerror(-err));
	return err;
}

/* A struct sample_key into agg, its frames symbolized through the memo: each distinct address
 * is symbolized once while its file is held, and its frames hashed once per aggregation (under
 * process churn the outer frames of a process's stacks and the kernel's paths recur in most
 * keys: measured, this was a third of bpfprof's CPU in a system-wide run at 999 Hz, and the
 * next drains, the next processes of the same programs, meet the same addresses again).
 * Frames as stack_frames_fill() makes them, source lines and inlined frames included; a key
 * with a frame whose inline chain the worker has not answered yet waits aside (pend_key()).
 * 0 or -errno. */
static int add_key_memo(struct stack_resolver *r, struct stack_agg *agg, int stacks_fd,
			const struct sample_key *key, __u64 value)
{
	const __u64 *uips = NULL, *kips = NULL;
	__u32 unr = 0, knr = 0;
	size_t n = 0, pending = 0;
	int err;

	if (key->user_stack)
		uips = stack_resolver__trace(r, stacks_fd, key->user_stack, &unr);
	if (key->kern_stack)
		kips = stack_resolver__trace(r, stacks_fd, key->kern_stack, &knr);
	if (!uips)
		unr = 0;
	if (!kips)
		knr = 0;
	err = memo_items(r, key->tgid, false, uips, unr, &n, &pending);
	err = err ?: memo_items(r, key->tgid, true, kips, knr, &n, &pending);
	if (err)
		return err;
	if (pending)
		return pend_key(r, key, value, n);
	return add_items(r, agg, key, value, r->items, n);
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
	/* sample keys' frames through the memo, unless exact leaves make frames of one address
	 * differ */
	bool memo = !m->fill && !stack_agg__exact_leaves(agg);
	struct gen_filter f = { .gen_off = m->gen_off, .gen = gen };
	char *keys = NULL, *ids = NULL;
	size_t nr_keys = 0, nr_ids = 0;
	struct stack_sample sample;
	__u64 value, *values = NULL;
	bool listed;
	int err;

	memset(res, 0, sizeof(*res));
	if (memo && (err = memo_begin(r, agg)))
		return err;
	/* the drain's new addresses asked of the worker in one go, at its end (memo drains never
	 * wait for an answer) */
	if (memo && r->worker)
		srcworker__hold(r->worker, true);
	/* the generation's stacks first, in batches: the samples below find them cached */
	err = stacks_of_gen(r, m, m->stacks_fd, gen, &ids, &nr_ids);
	if (err && err != -ENOTSUP)
		goto cleanup;
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
	/* processes' mappings change, and their pids come back as other programs */
	hashtab_reset(&r->memo_proc);
	r->proc_runs.nr = 0;
	/* drains through the memo keep the answers until it starts afresh (its pending runs
	 * hold tickets); the others need none past the drain */
	if (r->worker && !r->memo.len && !r->nr_pending)
		srcworker__trim(r->worker, WORKER_ANSWERS_MAX);
cleanup:
	if (memo && r->worker)
		srcworker__hold(r->worker, false);
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

void stack_resolver__mem(const struct stack_resolver *r, struct stack_resolver_mem *m)
{
	struct stack_agg_mem km;

	*m = (struct stack_resolver_mem){};
	m->memo = (r->memo.cap + r->memo_proc.cap) * sizeof(struct hashtab_entry) +
		  (r->runs.cap + r->proc_runs.cap + r->xlat_cap + r->ids_cap + r->items_cap) *
		  sizeof(__u32);
	stack_agg__mem(r->known, &km);
	m->known = km.tree + km.frames + km.strings;
	m->traces = r->traces.cap * sizeof(struct hashtab_entry) +
		    r->pending_cap * sizeof(*r->pending) +
		    r->pending_items_cap * sizeof(*r->pending_items);
	for (size_t i = 0; i < r->traces.cap; i++)
		m->traces += malloc_usable_size(r->traces.slots[i].val);
	/* the prefetching thread owns them until it is joined (at the first kernel frame) */
	if (!r->prefetching)
		m->ksyms = ksyms__bytes(r->ksyms);
	syms_cache__mem(r->syms, &m->syms);
	m->lines = r->worker ? srcworker__bytes(r->worker) : 0;
}

void stack_resolver__print_memo(const struct stack_resolver *r)
{
	if (r->memo_hits + r->memo_misses)
		p_info("frames: %llu symbolized, %llu found symbolized before (%zu addresses and %zu "
		       "frames held; started afresh %llu times)",
		       (unsigned long long)r->memo_misses, (unsigned long long)r->memo_hits,
		       r->memo.len, r->known ? stack_agg__nr_frames(r->known) : 0,
		       (unsigned long long)r->memo_resets);
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
	free(r->known_bpf);
	free_drain_state(r);
	free(r->ids);
	free(r->items);
	ksyms__free(r->ksyms);
	syms_cache__free(r->syms);
	/* the worker first: it looks up in the srclines */
	srcworker__free(r->worker);
	srclines__free(r->lines);
	free(r->no_lines);
	free(r->last_noted);
	free(r->vmlinux);
	cgroup_names__free(r->cgroups);
	free(r);
}
