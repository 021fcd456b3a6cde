#!/bin/bash
# BPF run time per event of the scheduler tracers (kernel.bpf_stats_enabled, on for these runs
# only): while `taskset -c 0 perf bench sched pipe` storms one CPU with switches and wakeups, the
# run time and run count of each program of the tracer (its own, found by its pid: other tools'
# programs of the same name are left out) are read before and after the storm.  Steady where pipe
# throughput ratios are not: the other load on the machine does not run these programs.
#   offcpu -a: ns per sched_switch (switch + waking programs' time / switches)
#   runqlat, sched: ns per switch (all programs' time / switches: sched_switch's alone where the
#   kernel keeps sched_info; rows "wakeup programs", BPFPROF_NO_SCHED_INFO=1, add each wakeup's)
# Issue 15's cost targets are pipe ratios (offcpu -a >= 0.65, runqlat >= 0.93, sched >= 0.92):
# bench/offcpu.sh and bench/sched.sh measure those; biolat's ns per I/O is bench/biolat.sh's.
. "$(dirname "$0")/lib.sh"

LOOPS=${LOOPS:-50000}
if [ "$(id -u)" != 0 ] || ! have perf || ! have bpftool || ! have jq; then
	echo "bench/bpfcost.sh: needs root, perf, bpftool and jq; nothing to measure"
	exit 0
fi
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
if ! sysctl -qw kernel.bpf_stats_enabled=1; then
	echo "cannot enable kernel.bpf_stats_enabled; nothing to measure"
	exit 0
fi
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats_was"; rm -rf "$BTMP"; kill $(jobs -p) 2>/dev/null' EXIT

# "NAME RUN_TIME_NS RUN_CNT" for each program process PID holds open (its fdinfo counts its runs;
# other tools' programs of the same name are left out).
prog_stats() {
	local id
	for id in $(awk '/^prog_id:/ { print $2 }' /proc/$1/fdinfo/* 2>/dev/null | sort -un); do
		bpftool -j prog show id "$id" | jq -r '"\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
	done
}

# cost NAME SWITCH-PROG COMMAND...: prints "ns/switch ns-by-program..." of one storm.
cost() {
	local name=$1 sw=$2 pid; shift 2
	"$@" >/dev/null 2>"$BTMP/$name.err" & pid=$!
	wait_attached $pid
	if ! kill -0 $pid 2>/dev/null; then
		echo "nan # $name did not start: $(head -n 1 "$BTMP/$name.err")"
		return
	fi
	prog_stats $pid >"$BTMP/before"
	taskset -c 0 perf bench sched pipe -l "$LOOPS" >/dev/null 2>&1
	prog_stats $pid >"$BTMP/after"
	kill -INT $pid; wait $pid 2>/dev/null
	awk -v sw="$sw" 'NR == FNR { t[$1] = $2; c[$1] = $3; next }
		{ dt = $2 - t[$1]; dc = $3 - c[$1]; tot += dt; if ($1 == sw) n = dc
		  if (dc > 0) per = per sprintf(" %s=%.0fx%d", $1, dt / dc, dc) }
		END { if (n) printf "%.0f%s\n", tot / n, per; else print "nan" }' "$BTMP/before" "$BTMP/after"
}

# BASE=/path/to/another/bpfprof: the same rows for it, its runs alternating with this tree's
# (one tracer at a time: two attached at once are not even, the first to run on each event
# pays the cold caches the second then finds warm, ~350 ns per switch for offcpu here)
run_all() {
	local b tag
	for i in $(seq "$REPS"); do
		for b in "$BPFPROF" ${BASE:+"$BASE"}; do
			tag=$([ "$b" = "$BPFPROF" ] && echo "" || echo ".base")
			cost offcpu switch_btf "$b" offcpu -a -f >>"$BTMP/offcpu$tag"
			cost offcpu_m switch_btf "$b" offcpu -a -m 1000 -f >>"$BTMP/offcpu_m$tag"
			cost runqlat switch_btf "$b" runqlat -a >>"$BTMP/runqlat$tag"
			cost runqlat_wk switch_btf env BPFPROF_NO_SCHED_INFO=1 "$b" runqlat -a \
				>>"$BTMP/runqlat_wk$tag"
			cost sched switch_btf "$b" sched -a >>"$BTMP/sched$tag"
			cost sched_wk switch_btf env BPFPROF_NO_SCHED_INFO=1 "$b" sched -a \
				>>"$BTMP/sched_wk$tag"
		done
	done
}
run_all
row() {
	[ -s "$BTMP/$1" ] || return
	printf '%-44s %6s ns   (last run, program=ns x runs: %s)\n' "$2" \
		"$(cut -d' ' -f1 "$BTMP/$1" | median)" "$(tail -n 1 "$BTMP/$1" | cut -d' ' -f2-)"
}
echo "## BPF run time per event under taskset -c 0 perf bench sched pipe -l $LOOPS (median of $REPS)"
for tag in "" ${BASE:+.base}; do
	[ -n "$tag" ] && echo "## BASE=$BASE"
	row offcpu$tag "bpfprof offcpu -a, ns per switch"
	row offcpu_m$tag "bpfprof offcpu -a -m 1000, ns per switch"
	row runqlat$tag "bpfprof runqlat, ns per switch"
	row runqlat_wk$tag "bpfprof runqlat, wakeup programs, ns per switch"
	row sched$tag "bpfprof sched, ns per switch"
	row sched_wk$tag "bpfprof sched, wakeup programs, ns per switch"
done
exit 0
