#!/bin/bash
# bpfprof top's own CPU at 99 Hz on all CPUs, per refresh (-d 2) and per second, beside perf
# top's: plain (no call graphs) and with -g (call graphs, which bpfprof top always takes for its
# Children column).  Two loads: CPU-bound (one hotcold per CPU) and process churn as
# bench/soak.sh makes it, an ls loop beside a compiler loop (a new cc1 every few hundred ms, and
# hundreds of short processes a second: mappings, symbols and unwind tables to read for every
# process).  CPU time
# is the sum of every thread's run time in /proc/PID/task/*/schedstat (nanoseconds: the clock
# ticks of /proc/PID/stat, 10 ms, were 0.67 ms/s over 15 s, as much as bpfprof top spends) over
# SECS seconds after a WARM-up that includes loading kernel symbols; bpfprof's -v line per
# refresh (getrusage) is shown beside it.  bpfprof top runs with its default unwinding (frame
# pointers, as perf top -g) and once more with --unwind auto.  BEFORE=BINARY measures another
# bpfprof too, in the same rounds (before/after a change).  Target: bpfprof top <= 1/5 of perf
# top's CPU.  SECS=20 WARM=6 REPS=3 (lib.sh) by default: about 8 minutes.
source "$(dirname "$0")/lib.sh"
SECS=${SECS:-20}
WARM=${WARM:-6}
BEFORE=${BEFORE:-}
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

# steady NAME CMD...: the CPU ms per second CMD used between WARM and WARM + SECS.
steady() {
	local name=$1 pid c0 c1 t0 t1
	shift
	"$@" <"$BTMP/keys" >"$BTMP/$name.out" 2>"$BTMP/$name.err" &
	pid=$!
	sleep "$WARM"
	c0=$(cpu_ms "$pid"); t0=$(date +%s.%N)
	sleep "$SECS"
	c1=$(cpu_ms "$pid"); t1=$(date +%s.%N)
	kill -INT "$pid"; wait "$pid" 2>/dev/null
	awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.3f\n", (b - a) / (e - s) }'
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

echo "bpfprof top vs perf top: $NCPU CPUs, 99 Hz, -d $DELAY, ${SECS}s measured after ${WARM}s, $REPS round(s)"
[ -n "$BEFORE" ] && echo "before: $BEFORE; after: $BPFPROF"
for load in cpu churn; do
	: >"$BTMP/bp" >"$BTMP/bpa" >"$BTMP/pt" >"$BTMP/ptg" >"$BTMP/refresh" >"$BTMP/bb" >"$BTMP/brefresh"
	for ((rep = 0; rep < REPS; rep++)); do
		start_load "$load"
		sleep 1
		if [ -n "$BEFORE" ]; then
			steady before "$BEFORE" top --stdio -a -F 99 -d "$DELAY" -v >>"$BTMP/bb"
			per_refresh before >>"$BTMP/brefresh"
		fi
		steady bpfprof "$BPFPROF" top --stdio -a -F 99 -d "$DELAY" -v >>"$BTMP/bp"
		per_refresh bpfprof >>"$BTMP/refresh"
		# with unwind tables built for code without frame pointers (top's default is fp)
		steady bpfprofauto "$BPFPROF" top --stdio -a -F 99 -d "$DELAY" --unwind auto >>"$BTMP/bpa"
		if have perf; then
			steady perf perf top --stdio -a -F 99 -d "$DELAY" >>"$BTMP/pt"
			steady perfg perf top --stdio -a -F 99 -d "$DELAY" -g >>"$BTMP/ptg"
		fi
		stop_load
	done
	bp=$(median <"$BTMP/bp"); bpa=$(median <"$BTMP/bpa"); pt=$(median <"$BTMP/pt"); ptg=$(median <"$BTMP/ptg")
	printf "load %-5s  bpfprof top %7.3f ms/s (%s ms a refresh, its -v)   perf top %7s ms/s   perf top -g %7s ms/s\n" \
		"$load" "$bp" "$(median <"$BTMP/refresh")" "$pt" "$ptg"
	printf "load %-5s  ratio bpfprof/perf top %s (target <= 0.2)   bpfprof/perf top -g %s   bpfprof --unwind auto %s ms/s\n" \
		"$load" "$(ratio "$bp" "$pt")" "$(ratio "$bp" "$ptg")" "$bpa"
	if [ -n "$BEFORE" ]; then
		bb=$(median <"$BTMP/bb")
		printf "load %-5s  before: bpfprof top %7.3f ms/s (%s ms a refresh), ratio to perf top %s; after/before %s\n" \
			"$load" "$bb" "$(median <"$BTMP/brefresh")" "$(ratio "$bb" "$pt")" "$(ratio "$bp" "$bb")"
	fi
done
