/* The commands: each is its BPF object (bpf/X.bpf.c), its ABI (include/X.h) and its loader
 * (user/cmd/X.c), which defines one of these for the runner (core/runner.h). */
#ifndef BPFPROF_CMDS_H
#define BPFPROF_CMDS_H
#include "core/runner.h"

extern const struct command profile_cmd;
extern const struct command offcpu_cmd;
extern const struct command funclat_cmd;
extern const struct command count_cmd;
extern const struct command runqlat_cmd;
extern const struct command sched_cmd;
extern const struct command biolat_cmd;
extern const struct command top_cmd;
#endif
