#!/bin/bash
# bpfprof sched against the kernel's own per-thread accounting: on the run-queue contention
# workload (tests/workloads/runq), over an interval the kernel's counters cover exactly (bracket
# in schedlib.sh), one row per thread whose switches are the change of nr_switches, whose
# runtime is the change of the on-CPU time in schedstat, and whose delays agree with run_delay.
# Then a thread that exits during the run, --by-comm, --sort, -t, -o, and bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/schedlib.sh"

nopid=$(unused_pid)
expect_one_error "sched: pid that does not exist" "pid $nopid does not exist" -- sched -p "$nopid"
expect_one_error "sched: duration abc" "invalid duration 'abc'" -- sched abc
expect_one_error "sched: duration 0" "invalid duration '0'" -- sched 0
expect_one_error "sched: negative duration" "invalid duration '-1'" -- sched -1
# perf's subcommand words, typed as perf users do: what to type instead, not "expected seconds"
expect_one_error "sched latency: perf's table has no subcommand here" \
	"'latency' is not a duration: bpfprof sched prints perf sched latency's table" -- sched latency
expect_one_error "sched timehist: points to --timehist" "perf sched timehist is bpfprof sched --timehist" \
	-- sched timehist
expect_one_error "sched -s with perf's key list: one key here" "invalid --sort 'max,avg' \\(one key: ties" \
	-- sched -s max,avg 1
expect_one_error "sched record: nothing recorded" "'record' is not a duration: .*nothing is recorded" \
	-- sched record ls
expect_one_error "sched: bad --sort" "invalid --sort 'bogus'" -- sched --sort bogus 1
expect_one_error "sched: --max-tasks 0" "invalid --max-tasks" -- sched --max-tasks 0 1
expect_one_error "sched: extra argument" "unexpected argument" -- sched 1 2
expect_usage_error "sched: unknown option" "unknown option" -- sched --bogus
"$BPFPROF" sched --help >"$TMP/help" 2>&1
check "sched --help exits 0 with usage" grep -q "Usage: bpfprof sched" "$TMP/help"

need_root "sched" || exit 0

# Table rows as "TID COMM RUNTIME_MS SWITCHES AVG_MS MAX_MS MAX_AT_S" ("-" for no delay);
# with --by-comm TID is "(N)".
parse_table() {
	awk -F'|' 'NF >= 6 && $1 !~ /Task|TOTAL/ {
		name = $1; gsub(/^ +| +$/, "", name)
		i = match(name, /:[^:]*$/); comm = substr(name, 1, i - 1); id = substr(name, i + 1)
		split($4, a, " "); split($5, m, " "); split($6, t, " ")
		print id, comm, $2 + 0, $3 + 0, a[2], m[2], t[3] }' "$1"
}
monotonic() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }

wpid=$(start_runq "$TMP/wl.out" -b 3 -c 0 -w 3 120) || { fail "sched: workload starts"; exit 0; }

# ---- ground truth ----
# Every thread of the workload: exactly one row; Switches = delta(nr_switches), exactly (both
# count each switch-out).  Runtime is the kernel's on-CPU time (se.sum_exec_runtime, as perf sched
# latency's): delta of schedstat's first field for each thread, exactly (to the printed digits).
# Where the kernel keeps sched_info (-v says so), the delays are its own too: each thread's
# average is delta(run_delay) / delta(pcount), the unpinned main thread's as well.  With the wakeup
# programs (BPFPROF_NO_SCHED_INFO=1) bpfprof times them itself: for the threads pinned to the
# contended CPU the average delay within 10% of that kernel mean (the unpinned main thread's
# waits differ from run_delay for a kernel reason: see test_runqlat.sh).  Either way the maximum
# is at least that mean (some wait reaches it) and at most delta(run_delay).  "Maximum delay at"
# lies within the run, in seconds of CLOCK_MONOTONIC.
# ground_truth NAME sched_info|wakeups [SCHED-ARGS...]
ground_truth() {
	local name=$1 path=$2; shift 2
	local rc bad t0 t1
	t0=$(monotonic)
	bracket "$wpid" 2 "$TMP/gt.txt" "$TMP/s0" "$TMP/s1" -- sched -v -p "$wpid" "$@"; rc=$?
	t1=$(monotonic)
	if [ "$rc" -ne 0 ]; then
		fail "$name: runs" "status $rc: $(cat "$TMP/gt.txt.err" 2>/dev/null)"
		return
	fi
	stats_delta "$TMP/s0" "$TMP/s1" >"$TMP/delta"
	parse_table "$TMP/gt.txt" | sort -n >"$TMP/rows"
	bad=$(awk -v t0="$t0" -v t1="$t1" -v exact="$([ "$path" = sched_info ] && echo 1)" '
		# TID COMM EXEC RUN_DELAY PCOUNT SWITCHES, then the rows
		FNR == NR { exec[$1] = $3 / 1e6; delay[$1] = $4 / 1e6; pc[$1] = $5; sw[$1] = $6; n++; next }
		{ seen[$1]++
		  if (!($1 in sw)) { printf "row %s:%s is not a workload thread; ", $2, $1; next }
		  if ($4 != sw[$1]) printf "%s:%s %d switches, nr_switches %d; ", $2, $1, $4, sw[$1]
		  d = $3 - exec[$1]; if (d < 0) d = -d
		  if (d > 0.001)
			printf "%s:%s runtime %.3f ms, schedstat %.4f ms; ", $2, $1, $3, exec[$1]
		  if (pc[$1] > 0) {
			mean = delay[$1] / pc[$1]; d = $5 - mean; if (d < 0) d = -d
			if (exact ? d > 0.0006 : $2 != "rq-main" && d > 0.1 * mean)
				printf "%s:%s avg %.3f ms, schedstat mean %.4f ms; ", $2, $1, $5, mean
			if ($2 != "rq-main" && ($6 < mean - 0.0006 || $6 > delay[$1] + 0.001))
				printf "%s:%s max %.3f ms outside [%.3f, %.3f]; ", $2, $1, $6, mean, delay[$1]
		  }
		  if ($7 != "-" && ($7 < t0 || $7 > t1))
			printf "%s:%s max at %s s outside the run [%s, %s]; ", $2, $1, $7, t0, t1 }
		END { for (t in sw) if (seen[t] != 1) printf "thread %s has %d rows; ", t, seen[t] }
	' "$TMP/delta" "$TMP/rows")
	if [ "$path" = sched_info ]; then
		grep -q "^bpfprof: waits read from the kernel's run-queue accounting" "$TMP/gt.txt.err" ||
			bad+="-v does not say the waits are read from sched_info"
	fi
	if [ -z "$bad" ]; then ok "$name"; else fail "$name" "$bad"; fi
}
both_paths "sched -p: one row per thread, switches, runtime and delays match the kernel's" sched 0.1

# the TOTAL line sums the rows
check "sched: TOTAL sums runtime and switches" awk -F'|' '
	NF >= 6 && $1 !~ /Task|TOTAL/ { r += $2; s += $3 }
	$1 ~ /TOTAL/ { tr = $2 + 0; ts = $3 + 0 }
	END { exit !(ts == s && tr - r < 0.01 && r - tr < 0.01 && s > 0) }' "$TMP/gt.txt"
check "sched: perf sched latency header" grep -q \
	"Task                  |   Runtime ms  | Switches | Average delay ms | Maximum delay ms | Maximum delay at" \
	"$TMP/gt.txt"

# ---- a thread that exits during the run is still reported ----
exited_thread() {
	local name=$1; shift
	local bp tid i before
	before=$(grep -c '^short' "$TMP/wl.out")
	rm -f "$TMP/ex.txt"
	"$BPFPROF" sched -p "$wpid" "$@" >"$TMP/ex.txt" 2>&1 &
	bp=$!
	wait_for_line "$TMP/ex.txt" '^Tracing'
	kill -USR1 "$wpid"
	for ((i = 0; i < 2000; i++)); do
		[ "$(grep -c '^short' "$TMP/wl.out")" -gt "$before" ] && break
		sleep 0.01
	done
	tid=$(awk '/^short/ { t = $2 } END { print t }' "$TMP/wl.out")
	sleep 0.2
	kill -INT "$bp"; wait "$bp"
	check "$name: the thread has exited" test -n "$tid" -a ! -e /proc/"$wpid"/task/"$tid"
	check "$name: its row is there, with runtime and switches" awk -v t="$tid" '
		$1 == t && $2 == "rq-short" && $3 > 0 && $4 >= 1 { found = 1 } END { exit !found }' \
		<(parse_table "$TMP/ex.txt")
}
exited_thread "sched: exited thread (tp_btf)"
exited_thread "sched: exited thread (raw_tp)" --raw-tp

# ---- -t: one thread ----
busy0=$(grep -lx rq-busy-0 /proc/"$wpid"/task/*/comm | cut -d/ -f5)
"$BPFPROF" sched -t "$busy0" 1 >"$TMP/t.txt" 2>&1
check "sched -t: only that thread" test "$(parse_table "$TMP/t.txt" | awk -v t="$busy0" '
	$1 == t && $2 == "rq-busy-0" { ok++ } END { print ok + 0 "/" NR }')" = "1/1"

# ---- --sort: each key orders its column, largest first ----
for key in max avg runtime switches; do
	col=$(case $key in max) echo 6;; avg) echo 5;; runtime) echo 3;; switches) echo 4;; esac)
	"$BPFPROF" sched -p "$wpid" --sort "$key" 1 >"$TMP/sort.txt" 2>&1
	check "sched --sort $key: rows by $key, largest first" awk -v c="$col" '
		{ if (NR > 1 && $c > prev) bad = 1; prev = $c } END { exit !(NR >= 5 && !bad) }' \
		<(parse_table "$TMP/sort.txt")
done

# ---- --by-comm: two instances of the workload, one row per name ----
wpid2=$(start_runq "$TMP/wl2.out" -b 3 -c 1 -w 3 120)
"$BPFPROF" sched --by-comm -p "$wpid,$wpid2" 1 >"$TMP/comm.txt" 2>&1
parse_table "$TMP/comm.txt" >"$TMP/comm"
for c in rq-busy-0 rq-busy-1 rq-busy-2 rq-waker rq-main; do
	check "sched --by-comm: $c:(2)" test "$(awk -v c="$c" '$2 == c && $1 == "(2)"' "$TMP/comm" | wc -l)" -eq 1
done
check "sched --by-comm: nothing else" test "$(wc -l <"$TMP/comm")" -eq 5
kill "$wpid2"

# ---- -o: the table goes to the file ----
"$BPFPROF" sched -p "$wpid" -o "$TMP/out.txt" 0.5 >"$TMP/stdout.txt" 2>&1
check "sched -o: table in the file" test "$(parse_table "$TMP/out.txt" | wc -l)" -eq 5
check "sched -o: not on stdout" test "$(grep -c '|' "$TMP/stdout.txt")" -eq 0

# perf sched latency -s switch: perf's name of the key, rows by switches, most first
"$BPFPROF" sched -s switch 0.5 >"$TMP/sw.out" 2>/dev/null; rc=$?
check "sched -s switch (perf's key name): exit 0" test "$rc" -eq 0
check "sched -s switch: rows by switches, most first" awk -F'|' '
	$1 ~ /:[0-9]+ *$/ { v = $3 + 0; if (n++ && v > last) bad = 1; last = v }
	END { exit bad || n < 2 }' "$TMP/sw.out"

kill "$wpid"
# started in start_runq's subshell: not this shell's child to wait for
exit 0
