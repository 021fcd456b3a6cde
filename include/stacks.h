/* Stack storage shared by every stack-collecting BPF program and its loader. */
#ifndef BPFPROF_STACKS_H
#define BPFPROF_STACKS_H

#define STACK_DEPTH_DEFAULT 127 /* the kernel's default perf_event_max_stack */
#define MAX_STACK_DEPTH     1023 /* the most --max-stack takes (perf_event_max_stack raised) */
#define TASK_COMM_LEN   16

/* A captured stack, innermost frame first, as bpf_get_stack() returns it.  Stored in the
 * `stacks` map under a 64-bit hash of its frames: unlike bpf_get_stackid()'s bucket index, a
 * 64-bit hash practically never collides, and the BPF side still checks length and leaf frame.
 * The map's values hold only the first targ_stack_mask + 1 slots of ips (the loader sizes them
 * to --max-stack): deep stacks cost memory only in the runs that ask for them. */
struct stack_trace {
	__u32 nr;
	__u32 gen; /* in the per-CPU scratch buffer: the generation this program run writes */
	__u64 ips[MAX_STACK_DEPTH + 1]; /* one spare slot: a power of two lets BPF mask indexes */
};

/* What samples are aggregated by.  user_stack / kern_stack are keys of the `stacks` map, 0 when
 * that stack was not captured (kernel thread, -U / -K, or a sample taken in user mode). */
struct sample_key {
	__u32 tgid;
	__u32 pid;
	__u64 user_stack;
	__u64 kern_stack;
	char comm[TASK_COMM_LEN];
	__u32 event; /* which of the run's events took the sample (profile -e A,B); 0 otherwise */
	__u32 gen;   /* the drain generation it was counted in (profile; 0 where nothing drains) */
	__u64 cgroup; /* the task's cgroup v2 id where a pprof asks for its cgroup label
		       * (targ_cgroup_key); 0 otherwise, not to split the aggregation */
};

/* Why a sample could not be stored; indexes the `lost` counters. */
enum lost_reason {
	LOST_STACK_ERR,      /* bpf_get_stack() failed */
	LOST_STACKS_FULL,    /* the stacks map is full (--max-stacks) */
	LOST_STACK_COLLIDED, /* another stack already holds this hash */
	LOST_COUNTS_FULL,    /* the counts map is full (--max-stacks) */
	LOST_NOTIFY,         /* the ring buffer to user space was full */
	LOST_REASONS,
};

/* Sent to user space the first time a process is seen (and again after it execs), so that its
 * mappings are captured while it is alive: what lets an exited process still be symbolized.
 * Where user space drains the maps during the run, also when a process seen exits (exited = 1):
 * once its last samples are drained, its symbols can go. */
struct proc_seen_event {
	__u32 tgid;
	__u32 exited;
	__u64 time; /* of the sample that announced it (bpf_ktime_get_ns(): CLOCK_MONOTONIC) */
};

/* Draining: kernel maps are a cache that user space empties while the run goes on.  A stack's
 * id carries its generation in its low bit, a sample key in `gen`; user space flips drain_gen (adds
 * one: its low bit is the generation), waits until no program can still be writing the old
 * generation, then reads and deletes it. */
#define STACK_ID_GEN(id) ((__u32)((id) & 1))
#endif
