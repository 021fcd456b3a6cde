#!/bin/bash
# Cost of tracing the scheduler: `perf bench sched pipe` pinned to one CPU (two tasks waking each
# other through a pipe: two wakeups and two context switches per round trip, the worst case for
# a scheduler tracer, and stable) untraced, under bpfprof runqlat, bpfprof sched, perf sched
# record and a bpftrace runqlat equivalent (where installed), interleaved in one run and
# repeated; prints the median throughput of each, its ratio to untraced, and the bytes each
# tool moves out of the kernel.
#
# Two throughputs: ops/sec as perf bench prints it (wall clock), and ops per CPU-second of the
# benchmark's two tasks (their user + system time, which includes the BPF programs run in their
# context).  On a machine shared with other work the first varies with whatever else runs on
# the CPU; the second does not, and is the steadier measure of a tracer's cost.
#
# Environment: LOOPS (round trips per run, default 200000), ROUNDS (default 7), CPU (default 0).
set -u
cd "$(dirname "$0")/.."
BPFPROF=$PWD/bpfprof
LOOPS=${LOOPS:-200000}
ROUNDS=${ROUNDS:-7}
CPU=${CPU:-0}
TMP=$(mktemp -d /tmp/bpfprof-bench-sched.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

if [ "$(id -u)" != 0 ]; then
	echo "bench/sched.sh: needs root (BPF programs, perf sched record)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "bench/sched.sh: needs perf (perf bench sched pipe)"
	exit 0
fi

# The bpftrace equivalent of runqlat: /usr/sbin/runqlat.bt, without its #include (the kernel
# headers may not be installed) and keyed the same way.
BT_PROG='
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_switch {
	if (args->prev_state == 0) { @qtime[args->prev_pid] = nsecs; }
	$ns = @qtime[args->next_pid];
	if ($ns) { @usecs = hist((nsecs - $ns) / 1000); }
	delete(@qtime[args->next_pid]);
}
END { clear(@qtime); }'

# The benchmark, as "OPS_PER_SEC OPS_PER_CPU_SEC" (GNU time: user + system of its processes).
BENCH=(/usr/bin/time -f "cpu %U %S" taskset -c "$CPU" perf bench sched pipe -l "$LOOPS")
bench_result() {
	awk -v loops="$LOOPS" '/ops\/sec/ { ops = $1 } /^cpu / { cpu = $2 + $3 }
		END { if (ops && cpu) printf "%d %d\n", ops, loops / cpu }' "$1"
}
pipe_ops() {
	"${BENCH[@]}" >"$TMP/bench.out" 2>&1
	bench_result "$TMP/bench.out"
}

wait_for() {
	local i
	for ((i = 0; i < 3000; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}

# traced NAME READY-REGEX BYTES-CMD -- TRACER...: runs the benchmark while TRACER runs in the
# background (started, attached: READY-REGEX in its output), then ends it with SIGINT.
traced() {
	local name=$1 ready=$2 bytes_cmd=$3 pid ops; shift 4
	"$@" >"$TMP/$name.out" 2>&1 &
	pid=$!
	if ! wait_for "$TMP/$name.out" "$ready"; then
		kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
		echo "FAILED"
		return
	fi
	ops=$(pipe_ops)
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
	echo "$ops $(eval "$bytes_cmd")"
}

run_mode() {
	case $1 in
	untraced)
		echo "$(pipe_ops) 0" ;;
	runqlat)
		traced runqlat '^Tracing' \
			"awk '/read [0-9]+ bytes/ { print \$3 }' $TMP/runqlat.out" -- "$BPFPROF" runqlat -v ;;
	sched)
		traced sched '^Tracing' \
			"awk '/read [0-9]+ bytes/ { print \$3 }' $TMP/sched.out" -- "$BPFPROF" sched -v ;;
	perf-sched)
		# perf records system-wide while the benchmark runs, then writes perf.data
		rm -f "$TMP/perf.data"
		perf sched record -o "$TMP/perf.data" -- "${BENCH[@]}" >"$TMP/perf.out" 2>&1
		echo "$(bench_result "$TMP/perf.out") $(stat -c %s "$TMP/perf.data" 2>/dev/null || echo 0)" ;;
	bpftrace)
		# what it prints at the end is what it moved out of the kernel
		traced bpftrace '^Attaching' "stat -c %s $TMP/bpftrace.out" -- bpftrace -e "$BT_PROG" ;;
	esac
}

modes="untraced runqlat sched perf-sched"
if command -v bpftrace >/dev/null; then
	modes="$modes bpftrace"
else
	echo "bench/sched.sh: bpftrace not installed, its row is left out"
fi

echo "taskset -c $CPU perf bench sched pipe -l $LOOPS, $ROUNDS rounds, modes interleaved"
for ((r = 1; r <= ROUNDS; r++)); do
	for m in $modes; do
		res=$(run_mode "$m")
		echo "$m $res" >>"$TMP/results"
		printf '  round %d %-11s %s\n' "$r" "$m" "$res"
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# column C of mode M's successful rounds
col() { awk -v m="$1" -v c="$2" '$1 == m && $2 ~ /^[0-9]/ { print $c }' "$TMP/results" | median; }
base=$(col untraced 2)
base_cpu=$(col untraced 3)
echo
printf '%-28s %9s %6s %12s %6s  %s\n' "tracer" "ops/sec" "ratio" "ops/CPU-sec" "ratio" \
	"bytes out of the kernel"
for m in $modes; do
	ops=$(col "$m" 2)
	cpu=$(col "$m" 3)
	bytes=$(col "$m" 4)
	case $m in
	untraced) label="untraced"; what="-" ;;
	runqlat) label="bpfprof runqlat"; what="$bytes (histogram maps read)" ;;
	sched) label="bpfprof sched"; what="$bytes (task table read)" ;;
	perf-sched) label="perf sched record"; what="$bytes (perf.data written)" ;;
	bpftrace) label="bpftrace runqlat equivalent"; what="$bytes (histogram printed)" ;;
	esac
	if [ -z "$ops" ]; then
		printf '%-28s %9s\n' "$label" "failed (output kept in $TMP)"
		trap - EXIT
		continue
	fi
	printf '%-28s %9.0f %6.3f %12.0f %6.3f  %s\n' "$label" "$ops" \
		"$(awk -v a="$ops" -v b="$base" 'BEGIN { print a / b }')" "$cpu" \
		"$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN { print a / b }')" "$what"
done
