/* The commands: each is its BPF object (bpf/X.bpf.c), its ABI (include/X.h) and its loader
 * (user/cmd/X.c), which defines one of these for the runner (core/runner.h). */
#ifndef BPFPROF_CMDS_H
#define BPFPROF_CMDS_H
#include "core/filerun.h"
#include "core/runner.h"

extern const struct command profile_cmd;
extern const struct command offcpu_cmd;
extern const struct command funclat_cmd;
extern const struct command stat_cmd;
extern const struct command runqlat_cmd;
extern const struct command sched_cmd;
extern const struct command biolat_cmd;
extern const struct command top_cmd;
extern const struct command list_cmd;
extern const struct command annotate_cmd;
extern const struct command record_cmd;
/* what record writes and report reads when given no file, as perf's ./perf.data */
#define RECORD_DEFAULT_FILE "bpfprof.pb.gz"
extern const struct command trace_cmd;
/* Commands that read profiles instead of tracing (core/filerun.h). */
extern const struct file_command report_cmd;
extern const struct file_command diff_cmd;
/* bpfprof annotate -i FILE: annotate_cmd's file mode */
extern const struct file_command annotate_file_cmd;
#endif
