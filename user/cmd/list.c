// SPDX-License-Identifier: GPL-2.0
/* bpfprof list: what can be traced or counted here, named as bpfprof's event specs take it
 * (perf list, perf probe -F, bpftrace -l).  It loads no BPF object, so it runs outside the
 * runner's lifecycle; its options are a table of the one grammar all the same. */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#include <bpf/btf.h>
#include "core/grow.h"
#include "cmd/cmds.h"
#include "core/common.h"
#include "core/features.h"
#include "out/listing.h"
#include "probe/fields.h"
#include "probe/perfevent.h"
#include "probe/probe.h"
#include "probe/usdt.h"
#include "sym/syms.h"

/* What a section lists; KIND words on the command line pick them. */
enum list_kind {
	K_TP = 1 << 0,
	K_SYSCALL = 1 << 1,
	K_SW = 1 << 2,
	K_HW = 1 << 3,
	K_CACHE = 1 << 4,
	K_KFUNC = 1 << 5,
	K_UFUNC = 1 << 6,
	K_USDT = 1 << 7,
};
#define K_KERNEL (K_TP | K_SYSCALL | K_SW | K_HW | K_CACHE | K_KFUNC)
#define K_BINARY (K_UFUNC | K_USDT)

static const struct {
	const char *word;
	unsigned int kinds;
} kind_words[] = {
	{ "tracepoint", K_TP }, { "tracepoints", K_TP }, { "tp", K_TP },
	{ "syscall", K_SYSCALL }, { "syscalls", K_SYSCALL }, { "sys", K_SYSCALL },
	{ "sw", K_SW }, { "software", K_SW },
	{ "hw", K_HW }, { "hardware", K_HW },
	{ "cache", K_CACHE }, { "hwcache", K_CACHE },
	{ "kfunc", K_KFUNC }, { "kfuncs", K_KFUNC },
	{ "func", K_UFUNC }, { "funcs", K_UFUNC }, { "function", K_UFUNC }, { "functions", K_UFUNC },
	{ "usdt", K_USDT },
};

static struct {
	const char *binary; /* -x */
	__u32 pid;          /* -p */
	bool json;
	unsigned int kinds;
	char **globs;
	int nr_globs;
} env;

static int opt_pid(const char *arg)
{
	__u64 v;

	if (parse_u64(arg, 1, INT_MAX, &v)) {
		p_err("invalid pid '%s' (expected one process id)", arg);
		return -EINVAL;
	}
	env.pid = v;
	return 0;
}

static const struct opt list_opts[] = {
	{ 'x', "exec", "BIN", "the functions and USDT probes of BIN (a path, a command in\n"
	  "PATH, or a library the ld.so cache knows: libc), as perf\nprobe -x BIN -F lists them",
	  OPT_STR, &env.binary },
	{ 'p', "pid", "PID", "the same for PID's executable and every library it maps",
	  OPT_FN, .fn = opt_pid },
	{ 0, "json", NULL, "one JSON document instead of text", OPT_FLAG, &env.json },
	{ 'v', "verbose", NULL, "say how long each source took; with -x or -p, each\n"
	  "function's arguments where DWARF names them: (int x)", OPT_FLAG, &verbose },
	{ 'h', "help", NULL, "this help", OPT_FLAG, NULL },
	{},
};

static const char list_usage[] = "Usage: bpfprof list [options] [KIND...] [GLOB...]";

static void print_help(void)
{
	const struct opt_group groups[] = { { "Options", list_opts } };

	printf("%s\n"
	       "Lists what can be traced or counted here, each name as an event spec takes it:\n"
	       "tracepoints, syscalls, software, hardware and hardware cache events, kernel\n"
	       "functions; with -x or -p the functions and USDT probes of a binary or process.\n",
	       list_usage);
	opts_print_help(stdout, groups, 1, 0);
	printf("\nKIND picks sections (all of the kernel's by default; with -x or -p, the\n"
	       "binaries'): tracepoint (tp), syscall (sys), sw, hw, cache, kfunc, func, usdt.\n"
	       "GLOB (fnmatch: * ? [...]) keeps the names it matches: the spec as printed\n"
	       "(sched:sched_switch, sys:read, k:vfs_read), the bare name (sched_switch, read,\n"
	       "vfs_read), or an alias (cs; a C++ function's demangled name), within the\n"
	       "sections picked.  Quote it.\n"
	       "\n"
	       "Tracepoints and syscalls come from tracefs when it is mounted (list mounts\n"
	       "nothing), else from the kernel's BTF; kernel functions from tracefs's\n"
	       "available_filter_functions, else BTF.  Each section's header says where its\n"
	       "names came from; hardware events this machine cannot count are marked\n"
	       "<not supported>, and the kernel-function header says whether fentry and kprobes\n"
	       "work here.  Lines starting with '#' are headers: grep -v '^#' leaves the names.\n"
	       "\n"
	       "Exit status: 0; 1 when a GLOB matches nothing (each such GLOB is named) or a\n"
	       "source cannot be read; 2 for bad usage (a malformed GLOB, an unknown option).\n"
	       "\n"
	       "  bpfprof list 'sched:*'             bpfprof list sys 'read*'\n"
	       "  bpfprof list hw sw                 bpfprof list --json kfunc 'vfs_*'\n"
	       "  bpfprof list -x ./app 'handle_*'   bpfprof list -p 4242 usdt\n");
}

/* KIND words and GLOBs, in any order.  0 or -EINVAL (printed). */
static int take_positional(char **pos, int n)
{
	char why[128];

	for (int i = 0; i < n; i++) {
		bool is_kind = false;

		for (size_t k = 0; k < sizeof(kind_words) / sizeof(kind_words[0]); k++) {
			if (strcmp(pos[i], kind_words[k].word))
				continue;
			env.kinds |= kind_words[k].kinds;
			is_kind = true;
		}
		if (is_kind)
			continue;
		if (glob_check(pos[i], why, sizeof(why))) {
			p_err("invalid glob '%s': %s", pos[i], why);
			return -EINVAL;
		}
		env.globs[env.nr_globs++] = pos[i];
	}
	if ((env.kinds & K_BINARY) && !env.binary && !env.pid) {
		p_err("func and usdt list a binary's: give -x BIN or -p PID");
		return -EINVAL;
	}
	if (!env.kinds)
		env.kinds = env.binary || env.pid ? K_BINARY : K_KERNEL;
	return 0;
}

static int parse(int argc, char **argv)
{
	const struct opt_group groups[] = { { "Options", list_opts } };
	struct opt_args args;
	int err;

	memset(&env, 0, sizeof(env));
	verbose = false;
	err = opts_parse(argc, argv, groups, 1, 0, list_usage, &args);
	if (err == 1) {
		print_help();
		return 1;
	}
	if (err)
		return err;
	if (args.command) {
		p_err("list runs no command: '--' is not for it");
		return -EINVAL;
	}
	env.globs = calloc(args.nr_pos + 1, sizeof(*env.globs));
	if (!env.globs)
		return -ENOMEM;
	return take_positional(args.pos, args.nr_pos);
}

/* ---- tracefs, never mounted here ---- */

/* A tracefs file, when tracefs is mounted and lets us read it (BPFPROF_TRACEFS names another
 * directory, for tests): the open file with its path in path; NULL otherwise, with why saying
 * why for the header of the section that falls back to BTF. */
static FILE *tracefs_open(const char *file, char *path, size_t size, char *why, size_t why_size)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	const char *forced = getenv("BPFPROF_TRACEFS");
	FILE *f;

	snprintf(why, why_size, "tracefs is not mounted (bpfprof list mounts nothing)");
	for (size_t i = 0; i < (forced ? 1 : sizeof(dirs) / sizeof(dirs[0])); i++) {
		const char *dir = forced ?: dirs[i];

		snprintf(path, size, "%s/events", dir);
		if (access(path, F_OK) && errno != EACCES)
			continue;
		snprintf(path, size, "%s/%s", dir, file);
		f = fopen(path, "re");
		if (f)
			return f;
		snprintf(why, why_size, "%s: %s", path, errno == EACCES ?
			 "readable by root only" : strerror(errno));
		return NULL;
	}
	return NULL;
}

/* A section's source: tracefs's file when it can be read (*f), else the kernel's BTF (*btf);
 * source gets the header's words for it.  0, or -ENOENT after saying that neither is there. */
static int tracefs_or_btf(const char *file, const char *what, FILE **f, const struct btf **btf,
			  char *source, size_t size)
{
	char path[PATH_MAX], why[PATH_MAX + 64];

	*f = tracefs_open(file, path, sizeof(path), why, sizeof(why));
	if (*f) {
		snprintf(source, size, "tracefs (%s)", path);
		return 0;
	}
	*btf = feat_btf();
	if (!*btf) {
		p_err("cannot list %s: %s, and the kernel has no BTF", what, why);
		return -ENOENT;
	}
	snprintf(source, size, "kernel BTF (%s)", why);
	return 0;
}

/* Calls fn on each non-empty line of f (newline removed), then closes f. */
static int for_each_line(FILE *f, int (*fn)(char *line, void *ctx), void *ctx)
{
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	int err = 0;

	while (!err && (len = getline(&line, &size, f)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (*line)
			err = fn(line, ctx);
	}
	free(line);
	fclose(f);
	return err;
}

/* ---- tracepoints and syscalls ---- */

struct events_ctx {
	struct listing *l;
	int tp_sec, sys_sec; /* -1: not listed */
	int nr_unnumbered;   /* syscalls sys:NAME cannot take: not in this build's table */
	int nr_btf_left_out; /* BTF's syscall functions without a number in that table */
};

static int add_syscall(struct events_ctx *c, const char *name)
{
	char spec[PROBE_NAME_MAX + 32];
	bool numbered = probe_syscall_nr(name) >= 0;

	/* sys:NAME rides on raw sys_enter by number; without one, the tracepoint still works */
	if (numbered)
		snprintf(spec, sizeof(spec), "sys:%s", name);
	else
		snprintf(spec, sizeof(spec), "syscalls:sys_enter_%s", name);
	c->nr_unnumbered += !numbered;
	return listing_add(c->l, &(struct listing_entry){
		.section = c->sys_sec, .spec = spec, .name = (char *)name,
		.note = numbered ? NULL : "(not in this build's syscall table: no sys:NAME)" });
}

/* "category:event" lines of available_events. */
static int tracefs_event(char *line, void *ctx)
{
	struct events_ctx *c = ctx;
	char *colon = strchr(line, ':'), match[PROBE_NAME_MAX + 8];
	int err = 0;

	if (!colon)
		return 0;
	if (c->sys_sec >= 0 && !strncmp(line, "syscalls:sys_enter_", 19))
		err = add_syscall(c, line + 19);
	if (err || c->tp_sec < 0)
		return err;
	snprintf(match, sizeof(match), "t:%s", line);
	return listing_add(c->l, &(struct listing_entry){
		.section = c->tp_sec, .spec = line, .name = colon + 1, .match = match });
}

/* From BTF: btf_trace_NAME typedefs are the raw tracepoints, and on x86-64 __x64_sys_NAME
 * (arm64: __arm64_sys_NAME) functions the syscalls.  BTF has no categories: t:*:NAME lets the
 * tracer find it in tracefs, which bpfprof mounts when it traces. */
static int btf_events(struct events_ctx *c, const struct btf *btf)
{
#if defined(__x86_64__)
	static const char sys_prefix[] = "__x64_sys_";
#elif defined(__aarch64__)
	static const char sys_prefix[] = "__arm64_sys_";
#else
	static const char sys_prefix[] = "__se_sys_";
#endif
	char spec[PROBE_NAME_MAX + 8];
	__u32 n = btf__type_cnt(btf);
	int err = 0;

	for (__u32 id = 1; id < n && !err; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = btf__name_by_offset(btf, t->name_off);

		if (!name)
			continue;
		if (c->tp_sec >= 0 && btf_is_typedef(t) && !strncmp(name, "btf_trace_", 10)) {
			snprintf(spec, sizeof(spec), "t:*:%s", name + 10);
			err = listing_add(c->l, &(struct listing_entry){
				.section = c->tp_sec, .spec = spec, .name = (char *)name + 10 });
		} else if (c->sys_sec >= 0 && btf_is_func(t) &&
			   !strncmp(name, sys_prefix, sizeof(sys_prefix) - 1)) {
			/* the kernel builds other ABIs' entry points too (chown16, *_time32): without
			 * a number here they are no syscall of this architecture's */
			if (probe_syscall_nr(name + sizeof(sys_prefix) - 1) < 0)
				c->nr_btf_left_out++;
			else
				err = add_syscall(c, name + sizeof(sys_prefix) - 1);
		}
	}
	return err;
}

static int add_events(struct listing *l, unsigned int kinds)
{
	struct events_ctx c = { .l = l, .tp_sec = -1, .sys_sec = -1 };
	char source[2 * PATH_MAX], note[256];
	const struct btf *btf = NULL;
	FILE *f = NULL;
	int err;

	err = tracefs_or_btf("available_events", "tracepoints or syscalls", &f, &btf, source,
			     sizeof(source));
	if (err)
		return err;
	if (kinds & K_TP)
		c.tp_sec = listing_add_section(l, "tracepoint", "Tracepoints", source,
					       f ? "CATEGORY:NAME or t:CATEGORY:NAME" :
						   "t:*:NAME (BTF has no categories)", NULL);
	if (kinds & K_SYSCALL)
		c.sys_sec = listing_add_section(l, "syscall", "Syscalls", source,
						"sys:NAME (syscalls:sys_enter_NAME is the tracepoint)",
						NULL);
	if (c.tp_sec == -ENOMEM || c.sys_sec == -ENOMEM) {
		if (f)
			fclose(f);
		return -ENOMEM;
	}
	err = f ? for_each_line(f, tracefs_event, &c) : btf_events(&c, btf);
	if (c.nr_unnumbered)
		snprintf(note, sizeof(note), "%d syscall%s newer than this build's table: listed as "
			 "their tracepoint", c.nr_unnumbered, c.nr_unnumbered == 1 ? " is" : "s are");
	else if (c.nr_btf_left_out)
		snprintf(note, sizeof(note), "%d syscall functions without a number in this build's "
			 "table left out (other ABIs', or newer than its headers)", c.nr_btf_left_out);
	if (!err && (c.nr_unnumbered || c.nr_btf_left_out) && c.sys_sec >= 0) {
		free(l->sec[c.sys_sec].note);
		l->sec[c.sys_sec].note = strdup(note);
	}
	return err;
}

/* ---- perf_event_open's software, hardware and cache events ---- */

static const char *unsupported_note(int err)
{
	return err == -EACCES || err == -EPERM ? "<not permitted>" : "<not supported>";
}

static int add_perf_event(struct listing *l, int sec, const char *name, const char *alias,
			  __u32 type, __u64 config, int *nr_unsupported, int *last_err)
{
	int err = perfev_probe(type, config);

	*nr_unsupported += err != 0;
	*last_err = err ?: *last_err;
	return listing_add(l, &(struct listing_entry){
		.section = sec, .spec = (char *)name, .alias = (char *)alias,
		.note = err ? unsupported_note(err) : NULL, .unsupported = err != 0 });
}

static const struct perf_kind {
	unsigned int kind;
	__u32 type;
	const char *name, *title;
} perf_kinds[] = {
	{ K_SW, PERF_TYPE_SOFTWARE, "software", "Software events" },
	{ K_HW, PERF_TYPE_HARDWARE, "hardware", "Hardware events" },
	{ K_CACHE, PERF_TYPE_HW_CACHE, "cache", "Hardware cache events" },
};

/* One kind's events, each tried, then its section (whose header can say that none works). */
static int add_perf_kind(struct listing *l, const struct perf_kind *k)
{
	int sec = l->nr_sec, nr = 0, unsupported = 0, err = 0, why = 0;
	char name[64], note[128];
	__u64 config;

	if (k->type == PERF_TYPE_HW_CACHE) {
		for (size_t i = 0; !err && perfev_cache_event(i, name, sizeof(name), &config); i++, nr++)
			err = add_perf_event(l, sec, name, NULL, k->type, config, &unsupported, &why);
	} else {
		size_t nr_names;
		const struct perfev_desc *names = perfev_table(&nr_names);

		for (size_t i = 0; i < nr_names && !err; i++) {
			const struct perfev_desc *e = &names[i];

			if (e->type != k->type)
				continue;
			nr++;
			err = add_perf_event(l, sec, e->name, e->alias, e->type, e->config,
					     &unsupported, &why);
		}
	}
	if (err)
		return err;
	snprintf(note, sizeof(note), "none can be counted on this machine (perf_event_open: %s)",
		 why == -ENOENT || why == -EOPNOTSUPP || why == -ENODEV ? "no such counter: no PMU" :
		 strerror(-why));
	sec = listing_add_section(l, k->name, k->title, "perf_event_open, tried on this machine",
				  "perf's names (an alias after some)", unsupported == nr ? note : NULL);
	return sec < 0 ? sec : 0;
}

static int add_perf_events(struct listing *l, unsigned int kinds)
{
	int err = 0;

	for (size_t i = 0; i < sizeof(perf_kinds) / sizeof(perf_kinds[0]) && !err; i++)
		if (kinds & perf_kinds[i].kind)
			err = add_perf_kind(l, &perf_kinds[i]);
	return err;
}

/* ---- kernel functions ---- */

struct kfunc_ctx {
	struct listing *l;
	int sec;
	bool unsupported; /* neither fentry nor kprobes here */
};

static int add_kfunc(struct kfunc_ctx *c, const char *name, const char *module)
{
	char spec[PROBE_NAME_MAX + 8];

	snprintf(spec, sizeof(spec), "k:%s", name);
	return listing_add(c->l, &(struct listing_entry){
		.section = c->sec, .spec = spec, .name = (char *)name, .alias = (char *)module,
		.unsupported = c->unsupported });
}

/* "name" or "name [module]" lines of available_filter_functions. */
static int filter_function(char *line, void *ctx)
{
	char *sp = strchr(line, ' ');

	if (sp)
		*sp++ = '\0';
	return add_kfunc(ctx, line, sp && *sp == '[' ? sp : NULL);
}

/* BTF's functions that kallsyms has under the same name: k:NAME resolves through kallsyms, and
 * one the compiler renamed (NAME.isra.0) or inlined everywhere has no address to attach to.
 * *left_out: how many were not, or -errno when kallsyms could not be read (all listed). */
static int btf_funcs(struct kfunc_ctx *c, const struct btf *btf, int *left_out)
{
	struct ksyms *ks = ksyms__load();
	__u32 n = btf__type_cnt(btf);
	int err = 0;

	if (!ks)
		*left_out = -errno;
	for (__u32 id = 1; id < n && !err; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name;

		if (!btf_is_func(t))
			continue;
		name = btf__name_by_offset(btf, t->name_off);
		if (ks && !ksyms__addr(ks, name))
			++*left_out;
		else
			err = add_kfunc(c, name, NULL);
	}
	ksyms__free(ks);
	return err;
}

/* "none can be traced on this machine; fentry: no, why; kprobes: yes" for the section's
 * header.  *none: neither works. */
static void kfunc_features(char *buf, size_t size, bool *none)
{
	const char *missing = bpf_privileges_missing(), *fentry_why, *kprobe_why;
	bool fentry, kprobes;

	/* without the privileges the probe would blame the kernel for what is ours */
	if (missing) {
		snprintf(buf, size, "whether fentry works here is not known: loading BPF needs root "
			 "or CAP_BPF+CAP_PERFMON (this process has %s)", missing);
		*none = false;
		return;
	}
	fentry = feat_fentry(&fentry_why);
	kprobes = feat_kprobes(&kprobe_why);
	snprintf(buf, size, "%s; fentry: %s%s; kprobes: %s%s",
		 fentry || kprobes ? "traceable here" : "none can be traced on this machine",
		 fentry ? "yes" : "no, ", fentry ? "" : fentry_why,
		 kprobes ? "yes" : "no, ", kprobes ? "" : kprobe_why);
	*none = !fentry && !kprobes;
}

static int add_kfuncs(struct listing *l)
{
	struct kfunc_ctx c = { .l = l };
	char source[2 * PATH_MAX], note[512];
	const struct btf *btf = NULL;
	int err, left_out = 0;
	FILE *f = NULL;

	err = tracefs_or_btf("available_filter_functions", "kernel functions", &f, &btf, source,
			     sizeof(source));
	if (err)
		return err;
	c.sec = listing_add_section(l, "kfunc", "Kernel functions", source,
				    "k:NAME or NAME (a module's after it)", NULL);
	if (c.sec < 0) {
		if (f)
			fclose(f);
		return c.sec;
	}
	kfunc_features(note, sizeof(note), &c.unsupported);
	err = f ? for_each_line(f, filter_function, &c) : btf_funcs(&c, btf, &left_out);
	if (left_out > 0)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "; %d BTF functions "
			 "without that name in /proc/kallsyms (renamed or inlined) left out", left_out);
	else if (left_out < 0)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "; not checked against "
			 "/proc/kallsyms (%s): some may be renamed or inlined", strerror(-left_out));
	l->sec[c.sec].note = strdup(note);
	return err;
}

/* ---- a binary's functions and USDT probes ---- */

/* A function's arguments as its DWARF names them, by the address its code starts at. */
struct func_sig {
	__u64 vaddr;
	char *text; /* "(int x, char *label)" */
};

struct binary_ctx {
	struct listing *l;
	int sec;
	const char *path;
	struct func_sig *sigs; /* sorted by vaddr */
	size_t nr_sigs, cap_sigs;
};

static int add_sig(__u64 vaddr, const struct func_params *p, void *ctx)
{
	struct binary_ctx *c = ctx;
	char text[512];

	if (ARRAY_GROW(c->sigs, c->cap_sigs, c->nr_sigs + 1))
		return -ENOMEM;
	c->sigs[c->nr_sigs].vaddr = vaddr;
	c->sigs[c->nr_sigs].text = strdup(func_params_text(p, text, sizeof(text)));
	return c->sigs[c->nr_sigs++].text ? 0 : -ENOMEM;
}

static int cmp_sig(const void *a, const void *b)
{
	const struct func_sig *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static const char *find_sig(const struct binary_ctx *c, __u64 vaddr)
{
	struct func_sig key = { .vaddr = vaddr };
	const struct func_sig *s = c->nr_sigs ? bsearch(&key, c->sigs, c->nr_sigs,
							 sizeof(key), cmp_sig) : NULL;

	return s ? s->text : NULL;
}

/* The arguments of the binary's functions, where its DWARF (or its debug file's) gives them:
 * one pass over it, so a function's line can show them.  0, or -ENOMEM. */
static int read_sigs(struct binary_ctx *c)
{
	int err = func_params_dwarf_each(c->path, add_sig, c);

	if (err == -ENOMEM)
		return err;
	if (c->nr_sigs)
		qsort(c->sigs, c->nr_sigs, sizeof(*c->sigs), cmp_sig);
	return 0;
}

static void free_sigs(struct binary_ctx *c)
{
	for (size_t i = 0; i < c->nr_sigs; i++)
		free(c->sigs[i].text);
	free(c->sigs);
}

static int binary_func(const char *name, __u64 vaddr, __u64 file_off, void *ctx)
{
	struct binary_ctx *c = ctx;
	char *spec = NULL, *pretty = demangle(name);
	int err;

	/* a C++ name is listed as linked, which is what u:PATH:FUNC resolves; globs match both */
	if (asprintf(&spec, "u:%s:%s", c->path, name) < 0) {
		free(pretty);
		return -ENOMEM;
	}
	err = listing_add(c->l, &(struct listing_entry){
		.section = c->sec, .spec = spec, .name = (char *)name, .alias = pretty,
		.note = find_sig(c, vaddr) });
	free(spec);
	free(pretty);
	return err;
}

static int binary_usdt(const struct usdt_note *n, void *ctx)
{
	struct binary_ctx *c = ctx;
	char *spec = NULL, *name = NULL;
	int err = -ENOMEM;

	if (asprintf(&spec, "usdt:%s:%s:%s", c->path, n->provider, n->name) >= 0 &&
	    asprintf(&name, "%s:%s", n->provider, n->name) >= 0)
		err = listing_add(c->l, &(struct listing_entry){
			.section = c->sec, .spec = spec, .name = name,
			.note = n->semaphore ? "(semaphore)" : NULL, .unsupported = true });
	free(spec);
	free(name);
	return err;
}

/* The sections of one ELF file, open as fd.  0 or -errno (printed). */
static int add_binary(struct listing *l, unsigned int kinds, int fd, const char *path)
{
	struct binary_ctx c = { .l = l, .path = path };
	char source[PATH_MAX + 64];
	struct elf_syms *es = NULL;
	Elf *elf = NULL;
	int err = 0;

	elf_version(EV_CURRENT);
	elf = untrusted_elf(fd);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		p_err("'%s' is not an ELF file", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	if (kinds & K_UFUNC) {
		es = elf_syms__open_fd(fd, path);
		if (!es) {
			err = -errno;
			p_err("cannot read the symbols of '%s': %s", path, strerror(-err));
			goto cleanup;
		}
		/* the arguments after the name break "one spec a line": asked for with -v */
		err = verbose ? read_sigs(&c) : 0;
		if (err)
			goto cleanup;
		snprintf(source, sizeof(source), "%s (.symtab, .dynsym%s)", path,
			 c.nr_sigs ? "; arguments from DWARF" : "");
		c.sec = listing_add_section(l, "function", "Functions", source, "u:PATH:NAME", NULL);
		err = c.sec < 0 ? c.sec : elf_syms__for_each_match(es, "*", binary_func, &c);
		if (err)
			goto cleanup;
	}
	if (kinds & K_USDT) {
		snprintf(source, sizeof(source), "%s (.note.stapsdt)", path);
		c.sec = listing_add_section(l, "usdt", "USDT probes", source,
					    "bpftrace's usdt:PATH:PROVIDER:NAME",
					    "bpfprof cannot trace USDT probes yet: bpftrace can");
		err = c.sec < 0 ? c.sec : usdt_for_each(elf, binary_usdt, &c);
		if (err < 0)
			p_err("cannot read the USDT probes of '%s': %s", path,
			      err == -ENOTSUP ? "not in this machine's byte order" : "malformed notes");
		err = err < 0 ? err : 0;
	}
cleanup:
	free_sigs(&c);
	elf_end(elf);
	elf_syms__free(es);
	return err;
}

/* -x's argument as a path: a file, a command in PATH, or a library of the ld.so cache. */
static int find_binary(const char *arg, char *path)
{
	char cand[PATH_MAX];
	const char *dirs = getenv("PATH");

	if (strchr(arg, '/') || !access(arg, F_OK)) {
		if (realpath(arg, path))
			return 0;
		p_err("cannot read '%s': %s", arg, strerror(errno));
		return -errno;
	}
	for (const char *d = dirs; d && *d; d += *d == ':') {
		size_t len = strcspn(d, ":");

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, d, arg);
		d += len;
		if (len && !access(cand, X_OK) && realpath(cand, path))
			return 0;
	}
	if (!probe_ldcache_lookup("/etc/ld.so.cache", arg, cand, sizeof(cand), NULL, NULL) &&
	    realpath(cand, path))
		return 0;
	p_err("cannot read '%s': no such file, command in PATH, or library in the ld.so cache", arg);
	return -ENOENT;
}

static int add_named_binary(struct listing *l, unsigned int kinds, const char *arg)
{
	/* a path the user named: a link is theirs to follow; a FIFO or a device is still no ELF */
	static const struct file_rules named = { .follow = true };
	char path[PATH_MAX];
	enum file_refusal why;
	struct stat st;
	int fd, err;

	err = find_binary(arg, path);
	if (err)
		return err;
	fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &named, &st, &why);
	if (fd == -EPERM) {
		p_err("'%s' not read: %s", path, file_refusal_str(FILE_MAPPED, why));
		return fd;
	}
	if (fd < 0) {
		p_err("cannot read '%s': %s", path, strerror(-fd));
		return fd;
	}
	err = add_binary(l, kinds, fd, path);
	close(fd);
	return err;
}

/* The files a process maps executable, once each: its executable first, then its libraries. */
struct process_files {
	struct syms_mapping *v;
	size_t n;
};

static int take_mapping(const struct syms_mapping *m, void *ctx)
{
	struct process_files *pf = ctx;
	struct syms_mapping *v;

	/* the [vdso] and anonymous code have no file a uprobe could name */
	if (!m->ino)
		return 0;
	for (size_t i = 0; i < pf->n; i++)
		if (pf->v[i].dev == m->dev && pf->v[i].ino == m->ino)
			return 0;
	v = realloc(pf->v, (pf->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	pf->v = v;
	pf->v[pf->n++] = *m;
	return 0;
}

static int add_process(struct listing *l, unsigned int kinds, __u32 pid)
{
	struct syms_cache *sc = syms_cache__new();
	struct process_files pf = {};
	__u32 tgid = pid;
	int err = 0, failed = 0;

	if (!sc)
		return -ENOMEM;
	if (!process_exists(pid) && thread_group_of(pid, &tgid)) {
		p_err("pid %u does not exist", pid);
		err = -ESRCH;
		goto cleanup;
	}
	err = syms_cache__snapshot(sc, tgid);
	err = err ?: syms_cache__for_each_mapping(sc, tgid, take_mapping, &pf);
	if (err) {
		p_err("cannot read the mappings of pid %u: %s", tgid, strerror(-err));
		goto cleanup;
	}
	if (!pf.n) {
		p_err("pid %u maps no file (a kernel thread?)", tgid);
		err = -ENOENT;
		goto cleanup;
	}
	/* one file that cannot be read is named, and the others are still listed */
	for (size_t i = 0; i < pf.n; i++) {
		if (pf.v[i].fd < 0)
			p_err("cannot read '%s', which pid %u maps", pf.v[i].path, tgid);
		failed += pf.v[i].fd < 0 || add_binary(l, kinds, pf.v[i].fd, pf.v[i].path) < 0;
	}
	err = failed ? -EIO : 0;
cleanup:
	free(pf.v);
	syms_cache__free(sc);
	return err;
}

/* ---- the command ---- */

static int gather(struct listing *l)
{
	__u64 t0 = now_ns();
	int err = 0, failed = 0;

	if (env.kinds & (K_TP | K_SYSCALL))
		failed |= (err = add_events(l, env.kinds)) < 0;
	if (err == -ENOMEM)
		return err;
	if (env.kinds & (K_SW | K_HW | K_CACHE))
		failed |= (err = add_perf_events(l, env.kinds)) < 0;
	if (err == -ENOMEM)
		return err;
	if (env.kinds & K_KFUNC)
		failed |= (err = add_kfuncs(l)) < 0;
	if (err == -ENOMEM)
		return err;
	if (env.binary && (env.kinds & K_BINARY))
		failed |= add_named_binary(l, env.kinds, env.binary) < 0;
	if (env.pid && (env.kinds & K_BINARY))
		failed |= add_process(l, env.kinds, env.pid) < 0;
	p_info("%zu names read in %.1f ms", l->n, (now_ns() - t0) / 1e6);
	return failed ? -EIO : 0;
}

static int list_main(int argc, char **argv)
{
	struct listing l = {};
	size_t *matched = NULL;
	int err, status = 0;

	err = parse(argc, argv);
	if (err) {
		free(env.globs);
		return err > 0 ? 0 : 2;
	}
	/* listing is meant to be quick: no debug file fetched from a server for a name list */
	syms_set_debuginfod(false);
	matched = calloc(env.nr_globs + 1, sizeof(*matched));
	err = matched ? gather(&l) : -ENOMEM;
	/* an empty section says "none" when its source was read (-x BIN has no USDT probes), but
	 * a process's libraries without any would be noise */
	for (size_t s = 0; s < l.nr_sec; s++)
		l.sec[s].show_empty = !env.pid;
	if (err == -ENOMEM) {
		p_err("out of memory");
		status = 1;
		goto cleanup;
	}
	status = err ? 1 : 0;
	listing_finish(&l, env.globs, env.nr_globs, matched);
	/* what failed has been said: no empty list after it */
	if (status && !l.n)
		goto cleanup;
	err = env.json ? listing_write_json(stdout, &l) : listing_write_text(stdout, &l);
	if (err || fflush(stdout) || ferror(stdout)) {
		p_err("cannot write the list: %s", strerror(errno ?: EIO));
		status = 1;
	}
	for (int g = 0; g < env.nr_globs; g++) {
		if (matched[g])
			continue;
		p_err("nothing listed matches '%s'%s", env.globs[g],
		      strpbrk(env.globs[g], "*?[") ? "" : " (a GLOB matches whole names: try '*NAME*')");
		status = 1;
	}
cleanup:
	listing_free(&l);
	features_release();
	free(matched);
	free(env.globs);
	return status;
}

const struct command list_cmd = {
	.name = "list",
	.summary = "list tracepoints, syscalls, perf events, kernel and user functions, USDT probes",
	.main = list_main,
};
