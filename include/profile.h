/* bpfprof profile: shared between bpf/profile.bpf.c and user/cmd/profile.c. */
#ifndef BPFPROF_PROFILE_H
#define BPFPROF_PROFILE_H
#include "stacks.h"
#endif
