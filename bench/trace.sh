#!/bin/bash
# bpfprof trace against perf and strace on `taskset -c 0 perf bench sched pipe` (two tasks waking
# each other through a pipe on one CPU: per round trip two context switches and four syscalls),
# throughput under each tracer as a ratio to an untraced run right after it, interleaved in one
# run, medians of REPS pairs (default 3), LOOPS round trips (default 200000):
#   - event by event: `bpfprof trace sched:sched_switch -a -o FILE` (text lines written as the
#     events come) vs `perf record -e sched:sched_switch -a` (perf.data), whose text perf script
#     makes afterwards (its seconds reported too: bpfprof has no second step); and both with the
#     benchmark as their `-- COMMAND` (its events only: other load on the machine stays out);
#   - syscall summary: `bpfprof trace -s -a` (every syscall, aggregated in the kernel) vs
#     `perf trace -s -a` and `strace -c -f` (strace runs the benchmark itself, STRACE_LOOPS round
#     trips, default LOOPS / 10: it is that slow).
# Two ratios per tracer: ops/sec as perf bench prints it, and ops per CPU-second of the
# benchmark's tasks (user + system time, BPF programs in their context included), which does not
# move when something else shares the CPU.
REPS=${REPS:-3}
. "$(dirname "$0")/lib.sh"

LOOPS=${LOOPS:-200000}
STRACE_LOOPS=${STRACE_LOOPS:-$((LOOPS / 10))}
CPU=${CPU:-0}
if [ "$(id -u)" != 0 ] || ! have perf; then
	echo "bench/trace.sh: needs root and perf (perf bench sched pipe); nothing to measure"
	exit 0
fi

BENCH=(/usr/bin/time -f "cpu %U %S" taskset -c "$CPU" perf bench sched pipe -l)
# "OPS_PER_SEC OPS_PER_CPU_SEC" from the output of bench_cmd LOOPS.
bench_result() {
	awk -v loops="$2" '/ops\/sec/ { ops = $1 } /^cpu / { cpu = $2 + $3 }
		END { if (ops && cpu) printf "%d %d\n", ops, loops / cpu; else print "nan nan" }' "$1"
}
pipe_run() {
	"${BENCH[@]}" "${1:-$LOOPS}" >"$BTMP/bench.out" 2>&1
	bench_result "$BTMP/bench.out" "${1:-$LOOPS}"
}
# under NAME READY-REGEX|- EXTRA-FN -- TRACER...: TRACER in the background until it is attached,
# one run under it, SIGINT, an untraced twin; EXTRA-FN prints the last column.
under() {
	local name=$1 ready=$2 extra=$3 pid traced base; shift 4
	"$@" >"$BTMP/$name.out" 2>&1 & pid=$!
	# perf record and perf trace say nothing once attached: given 2 s
	if [ "$ready" = - ]; then
		sleep 2
	elif ! wait_ready "$BTMP/$name.out" "$ready"; then
		echo "# $name did not start: $(head -n 3 "$BTMP/$name.out")" >&2
		kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null
		return
	fi
	traced=$(pipe_run)
	kill -INT $pid; wait $pid 2>/dev/null
	base=$(pipe_run)
	record "$name" "$traced" "$base" "$($extra)"
}
trace_lines() { echo "$(wc -l <"$BTMP/switch.txt")_lines,$(grep -o '[0-9]* dropped' "$BTMP/trace.out" | head -n 1 | tr ' ' _)"; }
perf_rec_extra() {
	# perf script's pass over perf.data: the text bpfprof wrote during the run
	local t0 t1
	t0=$(date +%s.%N)
	perf script -i "$BTMP/perf.data" >"$BTMP/perf_script.txt" 2>/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v n="$(wc -l <"$BTMP/perf_script.txt")" \
		'BEGIN { printf "%d_lines,script_%.2fs\n", n, b - a }'
}
none() { echo "-"; }

for i in $(seq "$REPS"); do
	rm -f "$BTMP/switch.txt"
	under trace '^Tracing' trace_lines -- "$BPFPROF" trace sched:sched_switch -a -o "$BTMP/switch.txt"
	rm -f "$BTMP/perf.data"
	under perf_record - perf_rec_extra -- \
		perf record -e sched:sched_switch -a -o "$BTMP/perf.data"
	# the benchmark as the traced command: only its own events, no other load's
	"$BPFPROF" trace sched:sched_switch -o "$BTMP/cmd.txt" -- "${BENCH[@]}" "$LOOPS" >"$BTMP/bench.out" 2>&1
	traced=$(bench_result "$BTMP/bench.out" "$LOOPS")
	record trace_cmd "$traced" "$(pipe_run)" "$(wc -l <"$BTMP/cmd.txt")_lines"
	perf record -q -e sched:sched_switch -o "$BTMP/perf_cmd.data" -- "${BENCH[@]}" "$LOOPS" >"$BTMP/bench.out" 2>&1
	traced=$(bench_result "$BTMP/bench.out" "$LOOPS")
	record perf_record_cmd "$traced" "$(pipe_run)" -
	under trace_s '^Tracing' none -- "$BPFPROF" trace -s -a
	under perf_trace_s - none -- perf trace -s -a
	if have strace; then
		# strace runs the benchmark: the traced run is its own
		strace -c -f -o "$BTMP/strace.txt" "${BENCH[@]}" "$STRACE_LOOPS" >"$BTMP/bench.out" 2>&1
		traced=$(bench_result "$BTMP/bench.out" "$STRACE_LOOPS")
		"${BENCH[@]}" "$STRACE_LOOPS" >"$BTMP/bench.out" 2>&1
		record strace_c "$traced" "$(bench_result "$BTMP/bench.out" "$STRACE_LOOPS")" -
	fi
done

report() {
	[ -s "$BTMP/$1" ] || return
	printf '%-48s %6s %10s  %s\n' "$2" "$(awk '{ print $1 }' "$BTMP/$1" | median)" \
		"$(awk '{ print $2 }' "$BTMP/$1" | median)" "$(awk '{ print $3 }' "$BTMP/$1" | tail -n 1)"
}
echo "## taskset -c $CPU perf bench sched pipe -l $LOOPS: throughput under each tracer / untraced"
echo "## (median of $REPS paired runs; untraced median $(median <"$BTMP/untraced") ops/s)"
printf '%-48s %6s %10s  %s\n' "tracer" "ratio" "CPU ratio" "last run"
report trace "bpfprof trace sched:sched_switch -a -o FILE"
report perf_record "perf record -e sched:sched_switch -a"
report trace_cmd "bpfprof trace sched:sched_switch -- BENCH"
report perf_record_cmd "perf record -e sched:sched_switch -- BENCH"
report trace_s "bpfprof trace -s -a"
report perf_trace_s "perf trace -s -a"
report strace_c "strace -c -f (-l $STRACE_LOOPS)"
for p in "trace perf_record" "trace_cmd perf_record_cmd" "trace_s perf_trace_s" "trace_s strace_c"; do
	set -- $p
	[ -s "$BTMP/$1" ] && [ -s "$BTMP/$2" ] || continue
	echo "ratio $1 / $2: $(ratio "$(awk '{ print $1 }' "$BTMP/$1" | median)" "$(awk '{ print $1 }' "$BTMP/$2" | median)")"
done
exit 0
