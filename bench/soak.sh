#!/bin/bash
# Soak: `profile -F 999 -a` for DURATION seconds (default 600; the target is stated for 3600)
# under process churn (an `ls` loop and a compiler loop: thousands of new processes a minute,
# each with new stack keys).  Every 30 s: bpfprof's RSS, open fds and own CPU; at the end the
# samples kept and lost.  Targets (issue 17): loss < 0.1%, RSS <= 40 MB and flat, CPU <= 2%.
set -u
cd "$(dirname "$0")/.."
DURATION=${1:-600}
EVERY=${SOAK_EVERY:-30}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

# the churn: short processes (ls) and a compiler (cc1: big, many libraries, dies every second)
printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' > "$tmp/c.c"
( while :; do ls /usr/bin > /dev/null; done ) &
( while :; do cc -O2 -c "$tmp/c.c" -o "$tmp/c.o" 2>/dev/null; done ) &
started=$(awk '/^processes/ {print $2}' /proc/stat)

/usr/bin/time -f "%M %U %S" -o "$tmp/time.txt" \
	./bpfprof profile -F 999 -a -d "$DURATION" -o "$tmp/report.txt" 2> "$tmp/err.txt" &
tpid=$!
# the profiler itself, not the time(1) around it
sleep 1
pid=$(pgrep -P $tpid -x bpfprof)
hz=$(getconf CLK_TCK)
printf '%6s %8s %5s %12s\n' "t (s)" "RSS (MB)" "fds" "CPU (%/int)"
prev_cpu=0
for ((t = EVERY; t <= DURATION; t += EVERY)); do
	sleep "$EVERY"
	[ -d /proc/$pid ] || break
	rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$pid/status)
	fds=$(ls /proc/$pid/fd | wc -l)
	cpu=$(awk '{print $14 + $15}' /proc/$pid/stat)
	printf '%6d %8s %5d %12.2f\n' "$t" "$rss" "$fds" \
		"$(echo "($cpu - $prev_cpu) * 100 / $hz / $EVERY" | bc -l)"
	prev_cpu=$cpu
done
wait $tpid
rc=$?
read -r peak_kb user sys < "$tmp/time.txt"
forks=$(( $(awk '/^processes/ {print $2}' /proc/stat) - started ))
kept=$(sed -n 's/^# Samples: \([0-9]*\).*/\1/p' "$tmp/report.txt" | head -1)
lost=$(sed -n 's/^# Lost samples: \([0-9]*\).*/\1/p' "$tmp/report.txt" | head -1)
echo "exit $rc; processes started: $forks; peak RSS $((peak_kb / 1024)) MB;" \
	"own CPU $(echo "scale=2; ($user + $sys) * 100 / $DURATION" | bc)% of a CPU"
grep -v '^libbpf' "$tmp/err.txt" | head -5
echo "samples kept ${kept:-?}, lost ${lost:-?}: loss $(echo "scale=4; ${lost:-0} * 100 / (${kept:-0} + ${lost:-0} + 1)" | bc)%"
sed -n 's/^# Lost samples: .*(\(.*\))/lost detail: \1/p' "$tmp/report.txt" | head -1
