/* Big programs verified beside each other instead of one after another (progload.c). */
#ifndef BPFPROF_PROGLOAD_H
#define BPFPROF_PROGLOAD_H
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Before the runner's load of its object: progload_beside() acts until progload_finish().  The
 * callbacks are libbpf's handlers of section names, which another object loaded later (the
 * follower's raw_tp/sched_process_exec) may share: its programs are loaded by libbpf. */
void progload_begin(void);

/* From a libbpf prepare-load callback: loads prog on a thread of its own, from a copy of its
 * final instructions and load attributes, and lets libbpf load a two-instruction stand-in in
 * its place.  Where that cannot be done (one CPU, module kfuncs, out of memory,
 * BPFPROF_SERIAL_LOAD=1 in the environment, outside progload_begin()..progload_finish()), libbpf
 * loads the program itself.  Always 0. */
int progload_beside(struct bpf_program *prog, struct bpf_prog_load_opts *opts);

/* After the object's load, whatever it returned (load_err): waits for the programs loaded
 * beside it and puts each behind the descriptor libbpf holds for its stand-in.  load_err, or
 * the first of their errors (explained on stderr), or 0. */
int progload_finish(int load_err);

#endif
