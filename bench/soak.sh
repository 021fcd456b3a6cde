#!/bin/bash
# Soak: `profile -F 999 -a` for DURATION seconds (default 600; the target is stated for 3600)
# under process churn (an `ls` loop and a compiler loop: thousands of new processes a minute,
# each with new stack keys).  Every 30 s (10 s in runs under 5 min): bpfprof's RSS, open fds and own CPU in that interval
# (every thread's run time, /proc/PID/task/*/schedstat, ns); at the end the samples kept and
# lost, the CPU of the whole run (getrusage: with the start and the report) and of the run
# itself (schedstat from the first interval to the last).  BEFORE=BINARY runs another bpfprof
# beside it, the same way at the same time (each samples the other: a symmetric cost), for an
# A/B in one run.  SOAK_FILE=pprof or svg: each also writes --pprof or --svg (its peak RSS then
# counts the writer's; bench/writers_mem.sh).  ARGS adds options to both runs (ARGS=-v: each
# drain's memory, part by part, every 30 drains); KEEP=DIR keeps each run's report and stderr
# there (after.txt, after.err, before.txt, before.err).  BEFORE_ARGS adds options to the BEFORE
# run only (BEFORE=./bpfprof BEFORE_ARGS=--no-inline: what inlined frames add, side by side).
# COLD=1 gives each run an empty cache directory of its own (XDG_CACHE_HOME: no unwind tables,
# no inline chains cached), as test_longrun does: what a run holds of debug info it meets for
# the first time.  Targets (issue 17): loss < 0.1%, RSS <= 40 MB and flat, peak RSS with report
# <= 40 MB (time(1)'s maximum RSS: the whole run, its report written; ARGS=-v also says the RSS
# before the outputs and their own peak), CPU <= 2%.  The call-path tree reaches its bound
# (262,144 nodes) after 3-4 minutes of this churn (load 6-7): runs of 300 s or more measure the
# report of a full tree.
set -u
cd "$(dirname "$0")/.."
DURATION=${1:-600}
EVERY=${SOAK_EVERY:-$((DURATION >= 300 ? 30 : 10))}
BEFORE=${BEFORE:-}
BEFORE_ARGS=${BEFORE_ARGS:-}
ARGS=${ARGS:-}
KEEP=${KEEP:-}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

# the churn: short processes (ls) and a compiler (cc1: big, many libraries, dies every second)
printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' > "$tmp/c.c"
( while :; do ls /usr/bin > /dev/null; done ) &
( while :; do cc -O2 -c "$tmp/c.c" -o "$tmp/c.o" 2>/dev/null; done ) &
started=$(awk '/^processes/ {print $2}' /proc/stat)

# Every live thread's run time of process $1, ns.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ ns += $1 } END { printf "%.0f\n", ns }'; }

names=(after)
bins=(./bpfprof)
[ -n "$BEFORE" ] && names+=(before) && bins+=("$BEFORE")
declare -a tpid pid cpu0 cpu_prev
for i in "${!bins[@]}"; do
	file=()
	case ${SOAK_FILE:-} in
	pprof) file=(--pprof "$tmp/file.$i") ;;
	svg) file=(--svg "$tmp/file.$i") ;;
	esac
	extra=()
	[ "${names[$i]}" = before ] && extra=($BEFORE_ARGS)
	[ -n "${COLD:-}" ] && mkdir -p "$tmp/xdg.$i"
	${COLD:+env XDG_CACHE_HOME="$tmp/xdg.$i"} \
	/usr/bin/time -f "%M %U %S" -o "$tmp/time.$i" "${bins[$i]}" profile -F 999 -a \
		-d "$DURATION" $ARGS "${extra[@]}" "${file[@]}" -o "$tmp/report.$i" 2> "$tmp/err.$i" &
	tpid[$i]=$!
done
# the profilers themselves, not the time(1) around them
sleep 1
for i in "${!bins[@]}"; do
	pid[$i]=$(pgrep -P "${tpid[$i]}") # time(1)'s one child, whatever the binary is named
	cpu0[$i]=$(cpu_ns "${pid[$i]}")
	cpu_prev[$i]=${cpu0[$i]}
done
[ -n "$BEFORE" ] && echo "after: ./bpfprof; before: $BEFORE $BEFORE_ARGS (the same run, side by side)"
[ -n "${COLD:-}" ] && echo "each with an empty cache directory of its own (COLD=1)"
for i in "${!bins[@]}"; do printf '%6s %8s %5s %8s  ' "t (s)" "RSS (MB)" "fds" "CPU (%)"; done
echo
last=0
for ((t = EVERY; t < DURATION; t += EVERY)); do
	sleep "$EVERY"
	for i in "${!bins[@]}"; do
		p=${pid[$i]}
		[ -d /proc/$p ] || break 2
		rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$p/status)
		fds=$(ls /proc/$p/fd | wc -l)
		cpu=$(cpu_ns "$p")
		printf '%6d %8s %5d %8.2f  ' "$t" "$rss" "$fds" \
			"$(echo "($cpu - ${cpu_prev[$i]}) / 10000000 / $EVERY" | bc -l)"
		cpu_prev[$i]=$cpu
	done
	echo
	last=$t
done
forks=$(( $(awk '/^processes/ {print $2}' /proc/stat) - started ))
echo "processes started: $forks in ${DURATION}s"
for i in "${!bins[@]}"; do
	wait "${tpid[$i]}"
	rc=$?
	read -r peak_kb user sys < "$tmp/time.$i"
	kept=$(sed -n 's/^# Samples: \([0-9]*\).*/\1/p' "$tmp/report.$i" | head -1)
	lost=$(sed -n 's/^# Lost samples: \([0-9]*\).*/\1/p' "$tmp/report.$i" | head -1)
	run=n/a
	[ "$last" -gt 0 ] && run=$(echo "scale=2; (${cpu_prev[$i]} - ${cpu0[$i]}) / 10000000 / $last" | bc)
	[ -n "${SOAK_FILE:-}" ] && echo "${names[$i]}: --$SOAK_FILE wrote $(stat -c %s "$tmp/file.$i" 2>/dev/null || echo no) bytes"
	echo "${names[$i]}: exit $rc; peak RSS with report $((peak_kb / 1024)) MB (target 40); own CPU $(echo "scale=2; ($user + $sys) * 100 / $DURATION" | bc)% of a CPU" \
		"(${run}% from 1 s to ${last} s, without the start and the report)"
	# its errors (with ARGS=-v, the last memory line and the RSS before and after the outputs:
	# the rest is in KEEP)
	if [ -z "$ARGS" ]; then grep -v '^libbpf' "$tmp/err.$i" | head -5
	else grep 'memory at\|before the outputs' "$tmp/err.$i" | tail -2; fi
	echo "${names[$i]}: samples kept ${kept:-?}, lost ${lost:-?}: loss $(echo "scale=4; ${lost:-0} * 100 / (${kept:-0} + ${lost:-0} + 1)" | bc)%"
	sed -n 's/^# Lost samples: .*(\(.*\))/lost detail: \1/p' "$tmp/report.$i" | head -1
	if [ -n "$KEEP" ]; then
		mkdir -p "$KEEP" && cp "$tmp/report.$i" "$KEEP/${names[$i]}.txt" &&
			cp "$tmp/err.$i" "$KEEP/${names[$i]}.err"
	fi
done
