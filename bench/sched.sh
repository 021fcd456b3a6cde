#!/bin/bash
# bpfprof runqlat and bpfprof sched: throughput of `taskset -c 0 perf bench sched pipe` (two tasks
# waking each other through a pipe on one CPU: two wakeups and two context switches per round
# trip, the worst case for a scheduler tracer, and stable) under each tracer, as a ratio to an
# untraced run right after it (pairing keeps the machine's other load out of the ratio), with
# perf sched record and a bpftrace runqlat equivalent for comparison.  Medians of REPS pairs
# (default 5); LOOPS round trips per run (default 200000).  Targets (issue 15): runqlat >= 0.93,
# sched >= 0.92.  Rows "wakeup programs" run the path of kernels without sched_info
# (BPFPROF_NO_SCHED_INFO=1); BEFORE=BINARY adds another build's rows, measured in the same rounds.
#
# Two ratios per tracer: of ops/sec as perf bench prints it (wall clock), and of ops per
# CPU-second of the benchmark's tasks (their user + system time, which includes the BPF programs
# run in their context).  The second moves less when something else shares the CPU.  bpfprof runs
# without -v: -v turns on the kernel's BPF run-time statistics, two clock reads per program run
# (an empty program shows 75 ns of run time in this VM), which are not the tracer's cost.  The last column is what each tool
# moves out of the kernel: bytes of BPF maps bpfprof reads (-v, from one more run of each), the
# size of perf.data, bpftrace's printed histogram.
REPS=${REPS:-5}
. "$(dirname "$0")/lib.sh"

LOOPS=${LOOPS:-200000}
CPU=${CPU:-0}
if [ "$(id -u)" != 0 ] || ! have perf; then
	echo "bench/sched.sh: needs root and perf (perf bench sched pipe); nothing to measure"
	exit 0
fi

# /usr/sbin/runqlat.bt without its #include (kernel headers may be missing): TASK_RUNNING is 0.
BT_RUNQLAT='
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_switch {
	if (args->prev_state == 0) { @qtime[args->prev_pid] = nsecs; }
	$ns = @qtime[args->next_pid];
	if ($ns) { @usecs = hist((nsecs - $ns) / 1000); }
	delete(@qtime[args->next_pid]);
}
END { clear(@qtime); }'

BENCH=(/usr/bin/time -f "cpu %U %S" taskset -c "$CPU" perf bench sched pipe -l "$LOOPS")
# "OPS_PER_SEC OPS_PER_CPU_SEC" from the output of BENCH.
bench_result() {
	awk -v loops="$LOOPS" '/ops\/sec/ { ops = $1 } /^cpu / { cpu = $2 + $3 }
		END { if (ops && cpu) printf "%d %d\n", ops, loops / cpu; else print "nan nan" }' "$1"
}
pipe_run() {
	"${BENCH[@]}" >"$BTMP/bench.out" 2>&1
	bench_result "$BTMP/bench.out"
}

# under NAME READY-REGEX -- TRACER...: runs TRACER in the background; once it says it is
# attached (READY-REGEX in its output), one run under it, then it is ended (SIGINT, so it reads
# its maps and prints), then an untraced twin.
under() {
	local name=$1 ready=$2 pid traced base bytes; shift 3
	"$@" >"$BTMP/$name.out" 2>&1 & pid=$!
	if ! wait_ready "$BTMP/$name.out" "$ready"; then
		echo "# $name did not start: $(head -n 1 "$BTMP/$name.out")" >&2
		end_tracer $pid
		return
	fi
	traced=$(pipe_run)
	end_tracer $pid
	base=$(pipe_run)
	case $name in
	bpftrace) bytes=$(stat -c %s "$BTMP/$name.out") ;;
	*) bytes=$(awk '/read [0-9]+ bytes/ { print $3 }' "$BTMP/$name.out") ;;
	esac
	record "$name" "$traced" "$base" "${bytes:-nan}"
}

# bytes NAME -- BPFPROF-COMMAND...: what bpfprof reads from its maps over one traced run (-v),
# for NAME's last column.
bytes() {
	local name=$1 pid; shift 2
	"$@" -v >"$BTMP/$name.v" 2>&1 & pid=$!
	wait_ready "$BTMP/$name.v" '^Tracing' && pipe_run >/dev/null
	end_tracer $pid
	awk '/read [0-9]+ bytes/ { print $3 }' "$BTMP/$name.v" >"$BTMP/$name.bytes"
}

# perf sched record runs the benchmark itself and writes perf.data (system-wide, as it does).
under_perf_sched() {
	local traced base
	rm -f "$BTMP/perf.data"
	perf sched record -o "$BTMP/perf.data" -- "${BENCH[@]}" >"$BTMP/perf.out" 2>&1
	traced=$(bench_result "$BTMP/perf.out")
	base=$(pipe_run)
	record perf_sched "$traced" "$base" "$(stat -c %s "$BTMP/perf.data" 2>/dev/null || echo nan)"
}

BEFORE=${BEFORE:-}
for i in $(seq "$REPS"); do
	under runqlat '^Tracing' -- "$BPFPROF" runqlat
	under runqlat_raw '^Tracing' -- "$BPFPROF" runqlat --raw-tp
	under runqlat_wk '^Tracing' -- env BPFPROF_NO_SCHED_INFO=1 "$BPFPROF" runqlat
	under sched '^Tracing' -- "$BPFPROF" sched
	under sched_wk '^Tracing' -- env BPFPROF_NO_SCHED_INFO=1 "$BPFPROF" sched
	if [ -n "$BEFORE" ]; then
		under runqlat_b '^Tracing' -- "$BEFORE" runqlat
		under runqlat_raw_b '^Tracing' -- "$BEFORE" runqlat --raw-tp
		under sched_b '^Tracing' -- "$BEFORE" sched
	fi
	under_perf_sched
	if have bpftrace; then
		under bpftrace '^Attaching' -- bpftrace -e "$BT_RUNQLAT"
	fi
done

bytes runqlat -- "$BPFPROF" runqlat
bytes runqlat_raw -- "$BPFPROF" runqlat --raw-tp
bytes runqlat_wk -- env BPFPROF_NO_SCHED_INFO=1 "$BPFPROF" runqlat
bytes sched -- "$BPFPROF" sched
bytes sched_wk -- env BPFPROF_NO_SCHED_INFO=1 "$BPFPROF" sched

report() {
	[ -s "$BTMP/$1" ] || return
	printf '%-44s %6s %10s  %s\n' "$2" "$(awk '{ print $1 }' "$BTMP/$1" | median)" \
		"$(awk '{ print $2 }' "$BTMP/$1" | median)" \
		"$(cat "$BTMP/${1%_b}.bytes" 2>/dev/null || awk '{ print $3 }' "$BTMP/$1" | median) $3"
}
echo "## taskset -c $CPU perf bench sched pipe -l $LOOPS: throughput under each tracer / untraced"
echo "## (median of $REPS paired runs; untraced median $(median <"$BTMP/untraced") ops/s)"
printf '%-44s %6s %10s  %s\n' "tracer" "ratio" "CPU ratio" "bytes out of the kernel"
report runqlat "bpfprof runqlat (target >= 0.93)" "(histogram maps read)"
report runqlat_raw "bpfprof runqlat --raw-tp (old kernels' path)" "(histogram maps read)"
report runqlat_wk "bpfprof runqlat, wakeup programs" "(histogram maps read)"
report sched "bpfprof sched (target >= 0.92)" "(task table read)"
report sched_wk "bpfprof sched, wakeup programs" "(task table read)"
report runqlat_b "BEFORE runqlat" "(histogram maps read)"
report runqlat_raw_b "BEFORE runqlat --raw-tp" "(histogram maps read)"
report sched_b "BEFORE sched" "(task table read)"
report perf_sched "perf sched record" "(perf.data written)"
report bpftrace "bpftrace runqlat.bt equivalent" "(histogram printed)"
exit 0
