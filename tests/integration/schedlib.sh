# Helpers for the scheduler tests (test_runqlat.sh, test_sched.sh): the run-queue contention
# workload, the kernel's own per-thread accounting, and runs bracketed so that bpfprof and the
# kernel's counters cover exactly the same interval.  Source after lib.sh.

# start_runq OUTFILE ARGS...: starts tests/workloads/runq in the background and prints its pid
# once every thread is named and pinned.
start_runq() {
	local out=$1; shift
	"$WL/runq" "$@" >"$out" &
	wait_for_line "$out" '^ready' || return 1
	awk '/^ready/ { print $2; exit }' "$out"
}

# all_stopped PID: every thread of PID is in state T (stopped by SIGSTOP).
all_stopped() {
	local st
	for st in /proc/"$1"/task/*/stat; do
		# the state follows the ")" closing the comm, which may contain spaces
		[ "$(sed 's/.*) //' "$st" | cut -d' ' -f1)" = T ] || return 1
	done
}

# stop_all PID: SIGSTOP, then wait until no thread runs or waits on a run queue any more.
stop_all() {
	local i
	kill -STOP "$1" || return 1
	for ((i = 0; i < 1000; i++)); do
		all_stopped "$1" && return 0
		sleep 0.01
	done
	return 1
}

# thread_stats PID: one line per thread, sorted by TID:
#   TID COMM EXEC_NS RUN_DELAY_NS PCOUNT NR_SWITCHES
# from /proc/PID/task/TID/schedstat (on-CPU time, time waiting on a run queue, times run:
# CONFIG_SCHED_INFO) and nr_switches from .../sched (nvcsw + nivcsw), or the voluntary and
# involuntary ctxt_switches of .../status where there is no sched file.
thread_stats() {
	local t tid sw
	for t in /proc/"$1"/task/*; do
		tid=${t##*/}
		if [ -r "$t/sched" ]; then
			sw=$(awk '$1 == "nr_switches" { print $3 }' "$t/sched")
		else
			sw=$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status")
		fi
		echo "$tid $(tr ' ' _ <"$t/comm") $(cat "$t/schedstat") $sw"
	done | sort -n
}

# steal_irq_ms: milliseconds of steal, irq and softirq time of all CPUs so far (/proc/stat, in
# ticks): what a task's on-CPU time leaves out of the wall-clock time of its runs (the kernel
# counts it with rq_clock_task(), without the time the hypervisor ran something else on the CPU,
# CONFIG_PARAVIRT_TIME_ACCOUNTING, nor the time of interrupts where it accounts them,
# CONFIG_IRQ_TIME_ACCOUNTING).
steal_irq_ms() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu[0-9]/ { t += $7 + $8 + $9 } END { print t * 1000 / hz }' /proc/stat
}

# stats_delta BEFORE AFTER: per thread present in both, "TID COMM EXEC RUN_DELAY PCOUNT SWITCHES"
# as differences.
stats_delta() {
	join "$1" "$2" | awk '{ print $1, $2, $8 - $3, $9 - $4, $10 - $5, $11 - $6 }'
}

# bracket PID SECONDS OUT S0 S1 -- BPFPROF-ARGS...
# Runs bpfprof over an interval that the kernel's counters cover exactly: with every thread of
# PID stopped (nothing of it running or waiting on a run queue), read the counters into S0,
# start bpfprof and wait until it has attached ("Tracing" on its stdout), let the workload run
# SECONDS, stop it again, read S1, then end bpfprof with SIGINT.  Every run-queue wait of the
# workload then starts and ends inside the traced interval: the SIGCONT wakeup starts the first,
# and the SIGSTOP ends the last (a waiting thread must run to stop).  Returns bpfprof's status.
bracket() {
	local pid=$1 secs=$2 out=$3 s0=$4 s1=$5 bp rc; shift 6
	stop_all "$pid" || return 90
	thread_stats "$pid" >"$s0"
	rm -f "$out"
	"$BPFPROF" "$@" >"$out" 2>"$out.err" &
	bp=$!
	if ! wait_for_line "$out" '^Tracing'; then
		kill -INT "$bp" 2>/dev/null; wait "$bp"; kill -CONT "$pid"
		return 91
	fi
	kill -CONT "$pid"
	sleep "$secs"
	stop_all "$pid" || { kill -INT "$bp"; wait "$bp"; return 92; }
	thread_stats "$pid" >"$s1"
	kill -INT "$bp"
	wait "$bp"; rc=$?
	kill -CONT "$pid"
	return $rc
}

# mover TID: moves thread TID to CPU 1, back to CPU 0, and so on every 20 ms until killed (a
# waiting thread leaves its run queue for the other's), a line per move.
mover() {
	local cpu=1
	while :; do
		taskset -p -c "$cpu" "$1" >/dev/null 2>&1 && echo "$cpu"
		cpu=$((1 - cpu))
		sleep 0.02
	done
}

# sched_info_why ARGS...: why `bpfprof ARGS -v` (runqlat or sched) times waits itself on this
# kernel, empty where it reads the kernel's own accounting (sched_info), whatever
# BPFPROF_NO_SCHED_INFO says.
sched_info_why() {
	env -u BPFPROF_NO_SCHED_INFO "$BPFPROF" "$@" -v 2>&1 >/dev/null |
		sed -n 's/^bpfprof: waits timed by bpfprof at each wakeup and switch: //p'
}

# both_paths NAME PROBE-ARGS...: the caller's `ground_truth NAME' PATH [--raw-tp]` in the tp_btf
# and raw_tp flavours, with the kernel's sched_info (PATH sched_info; where the kernel keeps it,
# else a skip with the reason) and with the wakeup programs (PATH wakeups,
# BPFPROF_NO_SCHED_INFO=1).  NAME' is NAME with the path and the flavour.
both_paths() {
	local name=$1 why; shift
	why=$(sched_info_why "$@")
	if [ -z "$why" ]; then
		(unset BPFPROF_NO_SCHED_INFO
		 ground_truth "$name (sched_info, tp_btf)" sched_info
		 ground_truth "$name (sched_info, raw_tp)" sched_info --raw-tp)
	else
		skip "$name (sched_info)" "$why"
	fi
	BPFPROF_NO_SCHED_INFO=1 ground_truth "$name (wakeup programs, tp_btf)" wakeups
	BPFPROF_NO_SCHED_INFO=1 ground_truth "$name (wakeup programs, raw_tp)" wakeups --raw-tp
}

# expect_usage_error NAME MESSAGE-REGEX -- ARGS...: like expect_one_error, for mistakes answered
# with a "bpfprof: ..." line and then the usage: exit status 2.
expect_usage_error() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 30 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit status $rc for: bpfprof $*"
	elif ! head -n 1 <<<"$out" | grep -Eq "^bpfprof: .*$msg" || ! grep -q '^Usage:' <<<"$out"; then
		fail "$name" "message '$out' does not match '$msg' and the usage"
	else
		ok "$name"
	fi
}
