# Shared helpers for benchmarks: medians of repeated, interleaved runs; ratios.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BPFPROF=$ROOT/bpfprof
WL=$ROOT/build/workloads
BTMP=$(mktemp -d /tmp/bpfprof-bench.XXXXXX)
trap 'rm -rf "$BTMP"; kill $(jobs -p) 2>/dev/null' EXIT
REPS=${REPS:-3}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.3f\n", a / b }'; }
have() { command -v "$1" >/dev/null 2>&1; }
# Wall seconds of a command.
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'; }
# Peak RSS in KiB of a command (GNU time).
peak_rss_kb() { /usr/bin/time -f "%M" -o "$BTMP/rss" "$@" >/dev/null 2>&1; cat "$BTMP/rss"; }
# wait_ready FILE REGEX: until a line of FILE matches (a tracer saying it attached), 30 s at most.
wait_ready() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# wait_attached PID: until process PID holds a BPF link (its programs are attached; a fixed sleep
# is too short on a busy machine, where loading takes seconds), then for its start to finish.
wait_attached() {
	local i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$1" 2>/dev/null || return 1
		grep -qs '^link_id:' /proc/"$1"/fdinfo/* && { sleep 0.5; return 0; }
		sleep 0.05
	done
	return 1
}
# end_tracer PID: SIGINT (a tracer then reads its maps and prints), again after 10 s (bpftrace
# has been seen to miss the first under load, and the benchmark waited for it forever), SIGKILL
# after 20 s.
end_tracer() {
	local i
	kill -INT "$1" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$1" 2>/dev/null || break
		[ "$i" = 100 ] && kill -INT "$1" 2>/dev/null
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# record NAME "TRACED" "UNTRACED" EXTRA, for the paired throughput benchmarks (TRACED and
# UNTRACED are "OPS_PER_SEC OPS_PER_CPU_SEC"): appends the two ratios and EXTRA to $BTMP/NAME,
# and the untraced ops/s to $BTMP/untraced.
record() {
	echo "$(ratio "${2% *}" "${3% *}") $(ratio "${2#* }" "${3#* }") $4" >>"$BTMP/$1"
	echo "${3% *}" >>"$BTMP/untraced"
}
