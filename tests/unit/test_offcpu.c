/* offcpu's pure parts: the clipping of blocks to the run (shared with the BPF program), the
 * switch-out state classes, and the stack post-processing of waker stacks down to the folded
 * line.  No BPF, no root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "offcpu.h"
#include "out/folded.h"
#include "sym/stackcollect.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define U(n) { .name = (n), .module = "/usr/bin/app" }
#define K(n) { .name = (n), .module = "[kernel.kallsyms]", .kernel = true }

#define MS 1000000ULL

/* A block inside the run is counted whole. */
static void test_clip_inside(void)
{
	CHECK_INT(offcpu_clip(120 * MS, 140 * MS, 100 * MS, 1000 * MS, 0, 0), 20 * MS);
	/* run_end 0: the run goes on (the BPF side at switch-in) */
	CHECK_INT(offcpu_clip(120 * MS, 140 * MS, 100 * MS, 0, 0, 0), 20 * MS);
}

/* A block that began before the run counts from the run's start. */
static void test_clip_before_start(void)
{
	CHECK_INT(offcpu_clip(50 * MS, 140 * MS, 100 * MS, 1000 * MS, 0, 0), 40 * MS);
	/* ...and one that also ended before the start counts nothing */
	CHECK_INT(offcpu_clip(50 * MS, 90 * MS, 100 * MS, 1000 * MS, 0, 0), 0);
	CHECK_INT(offcpu_clip(50 * MS, 100 * MS, 100 * MS, 1000 * MS, 0, 0), 0);
}

/* A thread still blocked at the end (end 0) is counted up to the end. */
static void test_clip_still_blocked(void)
{
	CHECK_INT(offcpu_clip(900 * MS, 0, 100 * MS, 1000 * MS, 0, 0), 100 * MS);
	/* blocked through the whole run: exactly the run's wall time, never more */
	CHECK_INT(offcpu_clip(10 * MS, 0, 100 * MS, 1000 * MS, 0, 0), 900 * MS);
	/* a switch-in seen after the end is cut at the end */
	CHECK_INT(offcpu_clip(900 * MS, 1200 * MS, 100 * MS, 1000 * MS, 0, 0), 100 * MS);
	/* still blocked, run still going: nothing known yet */
	CHECK_INT(offcpu_clip(900 * MS, 0, 100 * MS, 0, 0, 0), 0);
}

/* One thread's blocks over a run never add up to more than the run. */
static void test_clip_total_bounded(void)
{
	const __u64 start = 100 * MS, end = 400 * MS;
	/* back-to-back blocks spanning both ends, and one still open at the end */
	const __u64 blocks[][2] = { { 0, 150 * MS }, { 150 * MS, 300 * MS }, { 300 * MS, 0 } };
	__u64 total = 0;

	for (size_t i = 0; i < ARRAY_SIZE(blocks); i++)
		total += offcpu_clip(blocks[i][0], blocks[i][1], start, end, 0, 0);
	CHECK_INT(total, end - start);
}

/* -m / -M judge the part of the block inside the run. */
static void test_clip_min_max(void)
{
	CHECK_INT(offcpu_clip(100 * MS, 110 * MS, 0, 0, 15 * MS, 0), 0);
	CHECK_INT(offcpu_clip(100 * MS, 120 * MS, 0, 0, 15 * MS, 0), 20 * MS);
	CHECK_INT(offcpu_clip(100 * MS, 115 * MS, 0, 0, 15 * MS, 15 * MS), 15 * MS); /* bounds inclusive */
	CHECK_INT(offcpu_clip(100 * MS, 120 * MS, 0, 0, 0, 15 * MS), 0);
	/* a 50 ms block of which the run saw 10 ms: judged as 10 ms */
	CHECK_INT(offcpu_clip(60 * MS, 110 * MS, 100 * MS, 0, 15 * MS, 0), 0);
	CHECK_INT(offcpu_clip(60 * MS, 110 * MS, 100 * MS, 0, 0, 15 * MS), 10 * MS);
}

static void test_state_class(void)
{
	CHECK_INT(offcpu_state_class(0, OFFCPU_TASK_INTERRUPTIBLE), OFFCPU_STATE_S);
	CHECK_INT(offcpu_state_class(0, OFFCPU_TASK_UNINTERRUPTIBLE), OFFCPU_STATE_D);
	/* TASK_KILLABLE = TASK_WAKEKILL | TASK_UNINTERRUPTIBLE: D, as ps shows it */
	CHECK_INT(offcpu_state_class(0, 0x100 | OFFCPU_TASK_UNINTERRUPTIBLE), OFFCPU_STATE_D);
	/* TASK_IDLE = D | NOLOAD: an idle kernel thread, not an I/O wait */
	CHECK_INT(offcpu_state_class(0, OFFCPU_TASK_UNINTERRUPTIBLE | OFFCPU_TASK_NOLOAD),
		  OFFCPU_STATE_OTHER);
	CHECK_INT(offcpu_state_class(0, 0x4 /* __TASK_STOPPED */), OFFCPU_STATE_OTHER);
	/* preempted: runnable whatever its state says (it may have been about to sleep) */
	CHECK_INT(offcpu_state_class(1, OFFCPU_TASK_INTERRUPTIBLE), OFFCPU_STATE_R);
	CHECK_INT(offcpu_state_class(0, 0), OFFCPU_STATE_R);
	/* an exiting task's last switch-out is no wait */
	CHECK_INT(offcpu_state_class(0, OFFCPU_TASK_DEAD), 0);
	CHECK(!(OFFCPU_STATE_BLOCKED & OFFCPU_STATE_R));
	CHECK((OFFCPU_STATE_ANY & OFFCPU_STATE_R) && (OFFCPU_STATE_ANY & OFFCPU_STATE_D));
}

/* Frames of the BPF program and the tracepoint glue are dropped from the inner end only. */
static void test_trim_bpf(void)
{
	struct frame f[] = { U("main"), K("bpf_trace_run4"), K("schedule"), K("__schedule"),
			     K("__traceiter_sched_switch"), K("bpf_trace_run4"),
			     K("bpf_prog_142fb55b742e0209_switch_btf") };

	CHECK_INT(stack_frames_trim_bpf(f, ARRAY_SIZE(f)), 4);
	CHECK_INT(stack_frames_trim_bpf(f, 1), 1);
	CHECK_INT(stack_frames_trim_bpf(f, 0), 0);
}

static char *fold(const struct stack_sample *s)
{
	struct folded_opts o = { .annotate_kernel = false };
	FILE *f = tmpfile();
	char *text;

	if (!f)
		return NULL;
	if (folded_write(f, s, 1, &o)) {
		fclose(f);
		return NULL;
	}
	text = test_slurp(f);
	fclose(f);
	return text;
}

/* A timer wake-up recorded while the interrupt hit some task: the waker is the interrupt, with
 * its own path only, after the "--" separator of BCC's offwaketime. */
static void test_waker_from_irq(void)
{
	struct frame f[] = { U("main"), U("sleep_20ms"), K("do_nanosleep"), K("schedule") };
	struct frame w[] = { U("busy_loop"), K("asm_sysvec_apic_timer_interrupt"),
			     K("sysvec_apic_timer_interrupt"), K("hrtimer_interrupt"),
			     K("hrtimer_wakeup"), K("try_to_wake_up") };
	struct stack_sample s = { .comm = "sleeper", .pid = 1, .tid = 1, .value = 20000,
				  .nr_frames = ARRAY_SIZE(f), .frames = f };
	char *out;

	strcpy(s.waker_comm, "busyproc");
	s.waker_frames = malloc(sizeof(w));
	memcpy(s.waker_frames, w, sizeof(w));
	s.nr_waker_frames = ARRAY_SIZE(w);
	CHECK(stack_waker_from_irq(&s));
	CHECK_STR(s.waker_comm, "[interrupt]");
	CHECK_INT(s.nr_waker_frames, 5);
	CHECK_STR(s.waker_frames[0].name, "asm_sysvec_apic_timer_interrupt");
	out = fold(&s);
	CHECK_STR(out, "sleeper;main;sleep_20ms;do_nanosleep;schedule;--;try_to_wake_up;"
		       "hrtimer_wakeup;hrtimer_interrupt;sysvec_apic_timer_interrupt;"
		       "asm_sysvec_apic_timer_interrupt;[interrupt] 20000\n");
	free(out);
	free(s.waker_frames);
}

/* A task waking another (a pipe write) keeps its comm and both its stacks; a page fault is an
 * exception in task context, not an interrupt. */
static void test_waker_from_task(void)
{
	struct frame f[] = { U("reader_loop"), K("anon_pipe_read"), K("schedule") };
	struct frame w[] = { U("writer_loop"), K("asm_exc_page_fault"), K("anon_pipe_write"),
			     K("try_to_wake_up") };
	struct stack_sample s = { .comm = "pipereader", .pid = 1, .tid = 2, .value = 10000,
				  .nr_frames = ARRAY_SIZE(f), .frames = f };
	char *out;

	strcpy(s.waker_comm, "pipewriter");
	s.waker_frames = w;
	s.nr_waker_frames = ARRAY_SIZE(w);
	CHECK(!stack_waker_from_irq(&s));
	CHECK_INT(s.nr_waker_frames, 4);
	out = fold(&s);
	CHECK_STR(out, "pipereader;reader_loop;anon_pipe_read;schedule;--;try_to_wake_up;"
		       "anon_pipe_write;asm_exc_page_fault;writer_loop;pipewriter 10000\n");
	free(out);
}

int main(void)
{
	RUN(test_clip_inside);
	RUN(test_clip_before_start);
	RUN(test_clip_still_blocked);
	RUN(test_clip_total_bounded);
	RUN(test_clip_min_max);
	RUN(test_state_class);
	RUN(test_trim_bpf);
	RUN(test_waker_from_irq);
	RUN(test_waker_from_task);
	TESTS_DONE();
}
