/* Subcommand entry points: argc/argv start at the subcommand's name.  Each returns the process
 * exit status: 0 on success, 1 on a runtime failure, 2 on bad usage. */
#ifndef BPFPROF_CMDS_H
#define BPFPROF_CMDS_H
int cmd_profile(int argc, char **argv);
int cmd_offcpu(int argc, char **argv);
int cmd_funclat(int argc, char **argv);
int cmd_count(int argc, char **argv);
int cmd_runqlat(int argc, char **argv);
int cmd_sched(int argc, char **argv);
int cmd_biolat(int argc, char **argv);
#endif
