/* Following the processes a traced command forks: shared by every command taking -- COMMAND. */
#ifndef BPFPROF_FOLLOW_H
#define BPFPROF_FOLLOW_H
#define FOLLOW_MAX_TGIDS 4096
#endif
