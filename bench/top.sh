#!/bin/bash
# bpfprof top's own CPU at 99 Hz on all CPUs, per refresh (-d 2) and per second, beside perf
# top's: plain (no call graphs) and with -g (call graphs, which bpfprof top always takes for its
# Children column).  Two loads: CPU-bound (one hotcold per CPU) and process churn as
# bench/soak.sh makes it, an ls loop beside a compiler loop (a new cc1 every few hundred ms, and
# hundreds of short processes a second: mappings, symbols and unwind tables to read for every
# process).
#
# Every profiler of a round runs at once, over the same load: bpfprof top, perf top, perf top -g,
# bpfprof top --unwind auto, and the BEFORE=BINARY build when given.  Measured one after the
# other, perf top's own CPU moved between 11.6 and 34.4 ms/s from run to run with the machine's
# other work, and the ratio with it; side by side, the same processes start and the same
# programs run under all of them.  CPU time is the sum of every thread's run time in
# /proc/PID/task/*/schedstat (nanoseconds: the clock ticks of /proc/PID/stat, 10 ms, were as
# much as bpfprof top spends), read for all of them at the edges of WINDOWS windows of WIN
# seconds after a WARM-up that includes loading kernel symbols; the ratios are taken window by
# window, and the medians of every window of every round are printed.  bpfprof's -v line per
# refresh (getrusage) is shown beside it.  bpfprof top runs with its default unwinding (frame
# pointers, as perf top -g) and once more with --unwind auto.  Each profiler samples the others
# too (a few samples a second among hundreds).  Target: bpfprof top <= 1/5 of perf top's CPU.
# WIN=10 WINDOWS=3 WARM=6 REPS=4 LOADS="cpu churn" by default: about 6 minutes.
REPS=${REPS:-4}
source "$(dirname "$0")/lib.sh"
WIN=${WIN:-10}
WINDOWS=${WINDOWS:-3}
WARM=${WARM:-6}
BEFORE=${BEFORE:-}
LOADS=${LOADS:-cpu churn}
DELAY=2
NCPU=$(nproc)

# Every live thread's run time, ms (a thread that ended is not counted: bpfprof's and perf's
# threads live as long as they do, after the warm-up).
cpu_ms() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ ns += $1 } END { printf "%.3f\n", ns / 1e6 }'
}

# Keys are read from stdin by perf top --stdio: a FIFO held open gives it one that never ends.
mkfifo "$BTMP/keys"
exec 3<>"$BTMP/keys"

# The profilers of a round, by name; those that are not there here are left out.  Run in the
# background, each takes the place of its subshell (exec): $! is its PID, for schedstat and
# SIGINT.
NAMES=(bpfprof perf perfg auto)
[ -n "$BEFORE" ] && NAMES+=(before)
profiler() {
	local top=(top --stdio -a -F 99 -d "$DELAY")
	case $1 in
	bpfprof) exec "$BPFPROF" "${top[@]}" -v ;;
	auto) exec "$BPFPROF" "${top[@]}" --unwind auto ;;
	before) exec "$BEFORE" "${top[@]}" -v ;;
	perf) exec perf "${top[@]}" ;;
	perfg) exec perf "${top[@]}" -g ;;
	esac
}
have perf || NAMES=(bpfprof auto ${BEFORE:+before})

# round LOAD REP: every profiler at once; each window appends a profiler's CPU ms/s to
# $BTMP/LOAD.NAME and bpfprof's ratio to each other one to $BTMP/LOAD.bpfprof-NAME.  The order
# they start in is reversed every other round: of two builds started together, the first used
# 0.15-0.6 ms/s more than the second in four runs out of four, whichever it was (REPS even for
# a fair A/B).
round() {
	local load=$1 rep=$2 name w t0 t1 i
	local order=()
	declare -A pid c0 c1
	for ((i = 0; i < ${#NAMES[*]}; i++)); do
		order+=("${NAMES[rep % 2 ? ${#NAMES[*]} - 1 - i : i]}")
	done
	for name in ${order[*]}; do
		profiler "$name" <"$BTMP/keys" >"$BTMP/$name.out" 2>"$BTMP/$name.err" &
		pid[$name]=$!
	done
	sleep "$WARM"
	for ((w = 0; w < WINDOWS; w++)); do
		t0=$(date +%s.%N)
		for name in ${NAMES[*]}; do c0[$name]=$(cpu_ms "${pid[$name]}"); done
		sleep "$WIN"
		t1=$(date +%s.%N)
		for name in ${NAMES[*]}; do c1[$name]=$(cpu_ms "${pid[$name]}"); done
		for name in ${NAMES[*]}; do
			awk -v a="${c0[$name]}" -v b="${c1[$name]}" -v s="$t0" -v e="$t1" \
				'BEGIN { printf "%.3f\n", (b - a) / (e - s) }' >>"$BTMP/$load.$name"
		done
		for name in ${NAMES[*]}; do
			[ "$name" = bpfprof ] && continue
			ratio "$(tail -1 "$BTMP/$load.bpfprof")" "$(tail -1 "$BTMP/$load.$name")" \
				>>"$BTMP/$load.bpfprof-$name"
		done
	done
	for name in ${NAMES[*]}; do kill -INT "${pid[$name]}" 2>/dev/null; done
	for name in ${NAMES[*]}; do wait "${pid[$name]}" 2>/dev/null; done
	per_refresh bpfprof >>"$BTMP/$load.refresh"
	[ -n "$BEFORE" ] && per_refresh before >>"$BTMP/$load.brefresh"
}

# per_refresh NAME: bpfprof's own view, the median CPU ms of a refresh after the warm-up
per_refresh() {
	awk -v skip=$((WARM / DELAY + 1)) '/own CPU:/ && ++n > skip { print $3 }' "$BTMP/$1.out" | median
}

# The load: hotcold on every CPU, or a loop compiling bpfprof's sources.
start_load() {
	local i
	if [ "$1" = cpu ]; then
		for ((i = 0; i < NCPU; i++)); do "$WL/hotcold" 100000 2>/dev/null & done
	else
		( while :; do ls /usr/bin >/dev/null; done ) &
		( cd "$ROOT" && while :; do
			for f in user/*/*.c; do
				cc -O2 -D_GNU_SOURCE -Iinclude -Iuser -Ibuild -c "$f" -o "$BTMP/churn.o" 2>/dev/null
			done
		done ) &
	fi
}
stop_load() { kill $(jobs -p) 2>/dev/null; pkill -P $$ hotcold 2>/dev/null; wait 2>/dev/null; }

# med FILE: the median of a file's lines, "n/a" when it has none
med() { [ -s "$1" ] && median <"$1" || echo n/a; }

echo "bpfprof top vs perf top: $NCPU CPUs, 99 Hz, -d $DELAY, side by side, $WINDOWS window(s) of ${WIN}s after ${WARM}s, $REPS round(s); $(uptime)"
[ -n "$BEFORE" ] && echo "before: $BEFORE; after: $BPFPROF"
for load in $LOADS; do
	for ((rep = 0; rep < REPS; rep++)); do
		start_load "$load"
		sleep 1
		round "$load" "$rep"
		stop_load
	done
	printf "load %-5s  bpfprof top %s ms/s (%s ms a refresh, its -v)   perf top %s ms/s   perf top -g %s ms/s   bpfprof --unwind auto %s ms/s\n" \
		"$load" "$(med "$BTMP/$load.bpfprof")" "$(med "$BTMP/$load.refresh")" "$(med "$BTMP/$load.perf")" \
		"$(med "$BTMP/$load.perfg")" "$(med "$BTMP/$load.auto")"
	printf "load %-5s  ratio bpfprof/perf top %s (target <= 0.2; windows %s)   bpfprof/perf top -g %s\n" \
		"$load" "$(med "$BTMP/$load.bpfprof-perf")" \
		"$(sort -g "$BTMP/$load.bpfprof-perf" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')" \
		"$(med "$BTMP/$load.bpfprof-perfg")"
	if [ -n "$BEFORE" ]; then
		printf "load %-5s  before: bpfprof top %s ms/s (%s ms a refresh), ratio to perf top %s; after/before %s\n" \
			"$load" "$(med "$BTMP/$load.before")" "$(med "$BTMP/$load.brefresh")" \
			"$(ratio "$(med "$BTMP/$load.before")" "$(med "$BTMP/$load.perf")")" \
			"$(med "$BTMP/$load.bpfprof-before")"
	fi
done
echo "$(uptime)"
