/* bpfprof profile: shared between bpf/profile.bpf.c and user/profile.c. */
#ifndef BPFPROF_PROFILE_H
#define BPFPROF_PROFILE_H
#include "stacks.h"
#endif
