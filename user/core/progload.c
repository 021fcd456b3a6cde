// SPDX-License-Identifier: GPL-2.0
/* Big programs verified beside each other.  libbpf loads an object's programs one after another,
 * and the verifier takes ~10 ms for each of profile's two big ones (the sampling program and the
 * unwinder's walk at syscall entry): a quarter of the start.  Privileged loads verify in
 * parallel in the kernel (bpf_check() takes bpf_verifier_lock for unprivileged ones only), so
 * on a machine with a second CPU one of them can be verified while libbpf goes on.
 *
 * libbpf has no call to load one program of an object, but its prepare-load callback sees each
 * program's final instructions (relocated and sanitized before the first load) and its load
 * attributes: a copy of both is loaded on a thread, and libbpf loads a two-instruction stand-in
 * (return 0) in its place.  Once the object is loaded the real program is put behind the
 * descriptor libbpf holds (dup3), so attaching, pinning and every later use see it; the
 * stand-in, never attached, is freed with its last descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "core/common.h"
#include "core/progload.h"

#define MAX_BESIDE 8
#define LOG_SIZE (4 << 20) /* the verifier's log of a failed load, asked for again */

struct beside {
	pthread_t thread;
	struct bpf_program *prog;
	enum bpf_prog_type type;
	char name[BPF_OBJ_NAME_LEN];
	struct bpf_insn *insns;
	size_t nr_insns;
	struct bpf_prog_load_opts opts;
	void *func_info, *line_info; /* the copies opts points to */
	char *log;                   /* of a failed load */
	int fd, err;
	bool started;
};

static struct beside jobs[MAX_BESIDE];
static int nr_jobs;
static bool armed; /* between progload_begin() and progload_finish() */

static void *load_beside(void *arg)
{
	struct beside *j = arg;

	/* every bpfprof object's license is "GPL" (bpf/ *.bpf.c); libbpf has no getter for it */
	j->fd = bpf_prog_load(j->type, j->name, "GPL", j->insns, j->nr_insns, &j->opts);
	if (j->fd >= 0)
		return NULL;
	j->err = -errno;
	/* as libbpf does: the verifier's reasons, asked for once the load has failed */
	j->log = calloc(1, LOG_SIZE);
	if (j->log) {
		j->opts.log_level = 1;
		j->opts.log_buf = j->log;
		j->opts.log_size = LOG_SIZE;
		j->fd = bpf_prog_load(j->type, j->name, "GPL", j->insns, j->nr_insns, &j->opts);
	}
	return NULL;
}

static void *copy_of(const void *p, size_t size)
{
	void *c = size ? malloc(size) : NULL;

	if (c)
		memcpy(c, p, size);
	return c;
}

static void beside_free(struct beside *j)
{
	free(j->insns);
	free(j->func_info);
	free(j->line_info);
	free(j->log);
	memset(j, 0, sizeof(*j));
}

static bool worth_a_thread(const struct bpf_prog_load_opts *opts)
{
	static int cpus;

	if (!cpus)
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* fd_array (kfuncs of modules) lives in the object only while it loads */
	return armed && cpus > 1 && nr_jobs < MAX_BESIDE && !opts->fd_array && !opts->log_level &&
	       !getenv("BPFPROF_SERIAL_LOAD");
}

/* The copy the thread loads: the program's instructions and attributes, with the arrays the
 * attributes point to, which libbpf may free or change once it has loaded the stand-in. */
static int copy_program(struct beside *j, const struct bpf_program *prog,
			const struct bpf_prog_load_opts *opts)
{
	size_t opts_size = opts->sz < sizeof(j->opts) ? opts->sz : sizeof(j->opts);

	j->prog = (struct bpf_program *)prog;
	j->type = bpf_program__type(prog);
	snprintf(j->name, sizeof(j->name), "%s", bpf_program__name(prog));
	j->nr_insns = bpf_program__insn_cnt(prog);
	j->insns = copy_of(bpf_program__insns(prog), j->nr_insns * sizeof(struct bpf_insn));
	memcpy(&j->opts, opts, opts_size);
	j->opts.sz = sizeof(j->opts);
	j->func_info = copy_of(opts->func_info, (size_t)opts->func_info_cnt * opts->func_info_rec_size);
	j->line_info = copy_of(opts->line_info, (size_t)opts->line_info_cnt * opts->line_info_rec_size);
	j->opts.func_info = j->func_info;
	j->opts.line_info = j->line_info;
	j->fd = -1;
	if (!j->insns || (opts->func_info_cnt && !j->func_info) ||
	    (opts->line_info_cnt && !j->line_info))
		return -ENOMEM;
	return 0;
}

int progload_beside(struct bpf_program *prog, struct bpf_prog_load_opts *opts)
{
	static const struct bpf_insn stand_in[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct beside *j = &jobs[nr_jobs];

	if (!worth_a_thread(opts))
		return 0;
	if (copy_program(j, prog, opts) ||
	    bpf_program__set_insns(prog, (struct bpf_insn *)stand_in, 2)) {
		beside_free(j);
		return 0; /* libbpf loads it */
	}
	/* the stand-in has one function and no lines of its own */
	opts->func_info = opts->line_info = NULL;
	opts->func_info_cnt = opts->line_info_cnt = 0;
	j->started = !pthread_create(&j->thread, NULL, load_beside, j);
	if (!j->started)
		load_beside(j); /* here, then */
	nr_jobs++;
	return 0;
}

/* The real program behind libbpf's descriptor; 0 or -errno, explained. */
static int put_in_place(struct beside *j)
{
	int fd = bpf_program__fd(j->prog);

	if (j->fd < 0) {
		p_info("prog '%s': BPF program load failed: %s", j->name, strerror(-j->err));
		if (verbose && j->log && j->log[0])
			fprintf(stderr, "-- BEGIN PROG LOAD LOG --\n%s-- END PROG LOAD LOG --\n",
				j->log);
		return j->err;
	}
	if (fd < 0) /* the object's load failed before or at the stand-in */
		return 0;
	return dup3(j->fd, fd, O_CLOEXEC) < 0 ? -errno : 0;
}

void progload_begin(void)
{
	armed = true;
}

int progload_finish(int load_err)
{
	int err = 0;

	armed = false;
	for (int i = 0; i < nr_jobs; i++) {
		struct beside *j = &jobs[i];

		if (j->started)
			pthread_join(j->thread, NULL);
		if (!err && !load_err)
			err = put_in_place(j);
		if (j->fd >= 0)
			close(j->fd);
		beside_free(j);
	}
	nr_jobs = 0;
	return load_err ?: err;
}
