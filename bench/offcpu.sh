#!/bin/bash
# bpfprof offcpu: throughput of a context-switch storm pinned to one CPU
# (`taskset -c 0 perf bench sched pipe`, the worst case for any sched_switch tracer, and stable
# from run to run) under each tracer, as a ratio to an untraced run right after it.  Medians of
# REPS (default 3) pairs.  Targets (issue 15): bpfprof offcpu -a (kernel and user stacks, the
# default --unwind auto) >= 0.65, with a PID filter >= 0.92.
#
# Two ratios per tracer, as bench/sched.sh prints them: of ops/sec as perf bench prints it (wall
# clock), and of ops per CPU-second of the benchmark's tasks (their user + system time, which
# includes the BPF programs run at their switches).  The second moves far less when other load
# shares the CPU.  BASE=/path/to/another/bpfprof adds its rows, its runs interleaved with this
# tree's (an A/B against the build before a change).
. "$(dirname "$0")/lib.sh"

LOOPS=${LOOPS:-100000}
if ! have perf; then
	echo "perf not installed: perf bench sched pipe is the workload; nothing to measure"
	exit 0
fi

BENCH=(/usr/bin/time -f "cpu %U %S" taskset -c 0 perf bench sched pipe -l "$LOOPS")
# "OPS_PER_SEC OPS_PER_CPU_SEC" of one pinned run.
pipe_run() {
	"${BENCH[@]}" >"$BTMP/bench.out" 2>&1
	awk -v loops="$LOOPS" '/ops\/sec/ { ops = $1 } /^cpu / { cpu = $2 + $3 }
		END { if (ops && cpu) printf "%d %d\n", ops, loops / cpu; else print "nan nan" }' \
		"$BTMP/bench.out"
}

# under NAME COMMAND...: runs COMMAND in the background and, once it is attached, measures a
# run under it, then an untraced one; appends the ratios to $BTMP/NAME.  Pairing each run with
# an untraced twin keeps the other load on the machine out of the ratio.
under() {
	local name=$1 pid traced base; shift
	"$@" >/dev/null 2>"$BTMP/$name.err" & pid=$!
	case $1 in
	*bpfprof) wait_attached $pid ;;
	*) sleep 2 ;;
	esac
	if ! kill -0 $pid 2>/dev/null; then
		echo "# $name did not start: $(head -n 1 "$BTMP/$name.err")" >&2
		return
	fi
	traced=$(pipe_run)
	kill -INT $pid; wait $pid 2>/dev/null
	base=$(pipe_run)
	record "$name" "$traced" "$base" ""
}

BT_OFFCPU='tracepoint:sched:sched_switch {
	@ts[tid] = nsecs; @ks[tid] = kstack; @us[tid] = ustack;
	$p = args->next_pid;
	if (@ts[$p]) {
		@t[args->next_comm, @ks[$p], @us[$p]] = sum(nsecs - @ts[$p]);
		delete(@ts[$p]); delete(@ks[$p]); delete(@us[$p]);
	}
}'
BT_COUNT='tracepoint:sched:sched_switch { @n = count(); }'

sleep 3600 & idle=$!
for i in $(seq "$REPS"); do
	under offcpu_a "$BPFPROF" offcpu -a -f
	[ -n "${BASE:-}" ] && under offcpu_a.base "$BASE" offcpu -a -f
	under offcpu_fp "$BPFPROF" offcpu -a -f --unwind fp
	under offcpu_p "$BPFPROF" offcpu -p $idle -f
	if have bpftrace; then
		under bpftrace_offcpu bpftrace -e "$BT_OFFCPU"
		under bpftrace_count bpftrace -e "$BT_COUNT"
	fi
	under perf_record perf record -q -e sched:sched_switch -g -a -o "$BTMP/perf.data"
done
kill $idle 2>/dev/null

report() {
	[ -s "$BTMP/$1" ] || return
	printf '%-60s %6s %10s\n' "$2" "$(awk '{ print $1 }' "$BTMP/$1" | median)" \
		"$(awk '{ print $2 }' "$BTMP/$1" | median)"
}
echo "## taskset -c 0 perf bench sched pipe -l $LOOPS: throughput under each tracer / untraced"
echo "## (median of $REPS paired runs; untraced median $(median <"$BTMP/untraced") ops/s; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-60s %6s %10s\n' "tracer" "ratio" "CPU ratio"
report offcpu_a "bpfprof offcpu -a (kernel+user stacks; target >= 0.65)"
report offcpu_a.base "BASE offcpu -a (${BASE:-})"
report offcpu_fp "bpfprof offcpu -a --unwind fp"
report offcpu_p "bpfprof offcpu -p <idle pid> (target >= 0.92)"
report bpftrace_offcpu "bpftrace sched_switch + kstack + ustack sum"
report bpftrace_count "bpftrace sched_switch counter only"
report perf_record "perf record -e sched:sched_switch -g -a"
exit 0
