#!/bin/bash
# The kernel-side cost of --by FIELD: BPF run time per event (kernel.bpf_stats_enabled, on for
# these runs only) of `stat workqueue:workqueue_queue_work --by function` against plain counting
# of the same event (target: at most 1.5x), under the same workqueue load: a pseudo-terminal
# written a byte at a time (each write queues flush_to_ldisc, ~40k events/s: the caches are in a
# steady state), or with LOAD=fsync, writes with fsync and sync (a few hundred events/s, each
# one cold: figures that swing 2x with the machine's other load).  Plain counting rides on a raw tracepoint; --by reads the record, so it runs on a perf
# tracepoint event, whose record is filled before the program runs (perf's cost, not BPF's: it
# is in neither figure).  Also a --filter on the same event, and --by on a string field.
. "$(dirname "$0")/lib.sh"
SECS=${SECS:-4}
EV=workqueue:workqueue_queue_work

stats_was=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	[ -n "$stats_was" ] && sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	rm -rf "$BTMP"
}
trap cleanup EXIT

load() {
	if [ "${LOAD:-pty}" = pty ]; then
		python3 -c '
import os, pty, sys, time, tty
m, s = pty.openpty()
tty.setraw(s)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(200):
        os.write(m, b"x")
        os.read(s, 64)' "$1"
		return
	fi
	local end=$(( $(date +%s) + $1 ))
	while [ "$(date +%s)" -lt "$end" ]; do
		dd if=/dev/zero of="$BTMP/wq" bs=64k count=8 conv=fsync status=none
		sync
	done
}

# prog_stats PID: "NS-PER-RUN RUNS" of PID's tp_hit / raw_tp_hit programs (its fds' prog ids)
prog_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u)
	for id in $ids; do bpftool prog show id "$id" --json 2>/dev/null; echo; done | python3 -c '
import json, sys
t = c = 0
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    p = json.loads(line)
    if p.get("name") in ("tp_hit", "raw_tp_hit"):
        t += p.get("run_time_ns", 0)
        c += p.get("run_cnt", 0)
print(f"{t / c:.0f} {c}" if c else "nan 0")'
}

# cost LABEL ARGS...: ns per event of the program bpfprof (this run's pid) loaded, and its events
cost() {
	local label=$1 pid ns; shift
	"$BPFPROF" stat "$@" -a "$((SECS + 1))" >"$BTMP/out" 2>&1 &
	pid=$!
	sleep 0.5
	load "$SECS"
	prog_stats "$pid" >"$BTMP/cost"
	wait "$pid"
	read -r ns n <"$BTMP/cost"
	printf "%-58s %6s ns per event (%s events)\n" "$label" "$ns" "$n"
	echo "$ns" >>"$BTMP/$(echo "$label" | tr -c 'a-z0-9' _)"
	eval "last_ns=$ns"
}

stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
if [ -z "$stats_was" ] || ! sysctl -qw kernel.bpf_stats_enabled=1; then
	echo "cannot enable kernel.bpf_stats_enabled; skipped"
	exit 0
fi
echo "## BPF run time per $EV event, ${SECS} s of ${LOAD:-pty} load each, $REPS rounds, medians"
for i in $(seq "$REPS"); do
	cost "stat $EV" "$EV"
	cost "stat $EV --by function" "$EV" --by function
	cost "stat $EV --by cpu" "$EV" --by cpu
	cost "stat $EV --by workqueue,function" "$EV" --by workqueue,function
	cost "stat $EV --filter 'cpu >= 0 && workqueue ~ \"*\"'" "$EV" --filter 'cpu >= 0 && workqueue ~ "*"'
done >"$BTMP/rounds"
cat "$BTMP/rounds"
med() { grep -F "$1 " "$BTMP/rounds" | awk '{ for (i = 1; i <= NF; i++) if ($(i + 1) == "ns") print $i }' | median; }
plain=$(awk -v e="stat $EV " 'index($0, e) == 1 && !/--/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "ns") print $i }' "$BTMP/rounds" | median)
by=$(grep -F -- "--by function " "$BTMP/rounds" | grep -v workqueue, | awk '{ for (i = 1; i <= NF; i++) if ($(i + 1) == "ns") print $i }' | median)
echo
echo "median plain counting: $plain ns; --by function: $by ns; ratio $(ratio "$by" "$plain") (target <= 1.5)"
