#!/bin/bash
# bpfprof offcpu: throughput of a context-switch storm pinned to one CPU
# (`taskset -c 0 perf bench sched pipe`, the worst case for any sched_switch tracer, and stable
# from run to run) under each tracer, as a ratio to an untraced run right after it.  Medians of
# REPS (default 3) pairs.  Targets: bpfprof offcpu -a >= 0.50, with a PID filter >= 0.92.
. "$(dirname "$0")/lib.sh"

LOOPS=${LOOPS:-100000}
if ! have perf; then
	echo "perf not installed: perf bench sched pipe is the workload; nothing to measure"
	exit 0
fi

# ops/sec of one pinned run.
pipe_ops() { taskset -c 0 perf bench sched pipe -l "$LOOPS" 2>/dev/null | awk '/ops\/sec/ { print $1 }'; }

# under NAME COMMAND...: runs COMMAND in the background and, once it is attached, measures a
# run under it, then an untraced one; appends traced/untraced to $BTMP/NAME.  Pairing each run
# with an untraced twin keeps the other load on the machine out of the ratio.
under() {
	local name=$1 pid base ops; shift
	"$@" >/dev/null 2>"$BTMP/$name.err" & pid=$!
	if [ "$1" = "$BPFPROF" ]; then wait_attached $pid; else sleep 2; fi
	if ! kill -0 $pid 2>/dev/null; then
		echo "# $name did not start: $(head -n 1 "$BTMP/$name.err")" >&2
		return
	fi
	ops=$(pipe_ops)
	kill -INT $pid; wait $pid 2>/dev/null
	base=$(pipe_ops)
	echo "$base" >>"$BTMP/untraced"
	ratio "$ops" "$base" >>"$BTMP/$name"
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
	printf '%-56s ratio %s\n' "$2" "$(median <"$BTMP/$1")"
}
echo "## taskset -c 0 perf bench sched pipe -l $LOOPS: throughput under each tracer / untraced"
echo "## (median of $REPS paired runs; untraced median $(median <"$BTMP/untraced") ops/s)"
report offcpu_a "bpfprof offcpu -a (kernel+user stacks; target >= 0.50)"
report offcpu_p "bpfprof offcpu -p <idle pid> (target >= 0.92)"
report bpftrace_offcpu "bpftrace sched_switch + kstack + ustack sum"
report bpftrace_count "bpftrace sched_switch counter only"
report perf_record "perf record -e sched:sched_switch -g -a"
exit 0
