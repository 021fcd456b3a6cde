#!/bin/bash
# bpfprof runqlat against the kernel's own accounting: the run-queue contention workload
# (tests/workloads/runq: 3 threads spinning on one CPU, one waking every 3 ms) under -L, checked
# thread by thread against the change of run_delay in /proc/PID/task/TID/schedstat over exactly
# the traced interval (see bracket in schedlib.sh), then -P/-L/-p/-t/--pidnss separation and
# filtering, intervals, -m, the heat map, and bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/schedlib.sh"

nopid=$(unused_pid)
expect_one_error "runqlat: pid that does not exist" "pid $nopid does not exist" -- runqlat -p "$nopid"
expect_one_error "runqlat: tid that does not exist" "thread $nopid does not exist" -- runqlat -t "$nopid"
expect_one_error "runqlat: interval abc" "invalid interval 'abc'" -- runqlat abc
expect_one_error "runqlat: interval 0" "invalid interval '0'" -- runqlat 0
expect_one_error "runqlat: negative interval" "invalid interval '-1'" -- runqlat -1
expect_one_error "runqlat: count 0" "invalid count '0'" -- runqlat 1 0
expect_one_error "runqlat: extra argument" "unexpected argument" -- runqlat 1 2 3
expect_one_error "runqlat: -P with -L" "exclude each other" -- runqlat -P -L
expect_usage_error "runqlat: unknown option" "unknown option" -- runqlat --bogus
expect_one_error "runqlat: --heatmap-interval alone" "needs --heatmap" -- runqlat --heatmap-interval 1
"$BPFPROF" runqlat --help >"$TMP/help" 2>&1
check "runqlat --help exits 0 with usage" grep -q "Usage: bpfprof runqlat" "$TMP/help"

need_root "runqlat" || exit 0

# Per-histogram lines from runqlat output: "KEY COMM COUNT TOTAL TOP" where TOTAL = count x avg
# (in the unit) and TOP is the upper bound of the highest non-empty bucket.
parse_hists() {
	awk 'BEGIN { key = comm = "-" }
	     /^(pid|tid|pidns) = / { key = $3; comm = $4 }
	     /^ *[0-9]+ -> [0-9a-z]+ *: [0-9]+/ { if ($5 > 0) top = $3 }
	     /^count [0-9]+  avg [0-9.]+/ { print key, comm, $2, $2 * $4, top; top = 0 }' "$1"
}

wpid=$(start_runq "$TMP/wl.out" -b 3 -c 0 -w 3 120) || { fail "runqlat: workload starts"; exit 0; }
tids=" $(ls /proc/"$wpid"/task | tr '\n' ' ')"

# ---- ground truth: total delay per thread = change of schedstat run_delay ----
# Where the kernel keeps sched_info, runqlat reads its waits from it (-v says so): every thread's
# delays, the unpinned main thread's too, are then the kernel's own, one per run it counts:
# count = delta(pcount) and count x avg = delta(run_delay), both exactly (to avg's printed
# digits), but for the runs this kernel starts without a sched_switch event now and then (a
# thread switched out twice with no switch-in between: bpftrace sees the same): runqlat cannot
# put those in a histogram, and says how many and how long in all; with them the sums over the
# threads are exact, and each thread has no more than the kernel's.  With the wakeup programs (BPFPROF_NO_SCHED_INFO=1, kernels without sched_info),
# bpfprof times the waits with its own clock: for every thread pinned to the contended CPU
# (rq-busy-*, rq-waker) count x avg within 10% of delta(run_delay), and the sum over all the
# workload's threads too.  The main thread is not compared alone then: it is not pinned and
# wakes on the other CPU, whose tasks may run in the kernel (PREEMPT_NONE) for milliseconds
# before a wakeup preemption takes effect, and the kernel's own accounting misses that time
# (the wakeup asks __schedule() to skip its run-queue clock update, rq_clock_skip_update(), so
# run_delay measures up to the stale clock); its own clock measures the time it really waited.
# Every thread must have one delay per run the kernel counts (pcount, within 2%), and its highest
# non-empty bucket must reach delta(run_delay) / delta(pcount): the kernel's own mean wait, which
# at least one wait reaches (for a spinning thread, the other two's slices).
# ground_truth NAME sched_info|wakeups [RUNQLAT-ARGS...]
ground_truth() {
	local name=$1 path=$2; shift 2
	local rc bad="" want_v
	bracket "$wpid" 2 "$TMP/gt.txt" "$TMP/s0" "$TMP/s1" -- runqlat -v -L -p "$wpid" "$@"; rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$name: runs" "status $rc: $(cat "$TMP/gt.txt.err" 2>/dev/null)"
		return
	fi
	want_v=$([ "$path" = sched_info ] && echo "waits read from the kernel's run-queue accounting" ||
		echo "waits timed by bpfprof at each wakeup and switch")
	grep -q "^bpfprof: $want_v" "$TMP/gt.txt.err" || bad="-v does not say '$want_v'; "
	stats_delta "$TMP/s0" "$TMP/s1" >"$TMP/delta"
	parse_hists "$TMP/gt.txt" | sort -n >"$TMP/hists"
	# "delays not counted: N (X ms in all) ended at switches no sched_switch event showed"
	read -r unseen unseen_ms <<<"$(sed -n 's/^bpfprof: delays not counted: \([0-9]*\) (\([0-9.]*\) ms in all) ended at switches.*/\1 \2/p' "$TMP/gt.txt.err")"
	bad+=$(join "$TMP/delta" "$TMP/hists" | awk -v exact="$([ "$path" = sched_info ] && echo 1)" \
		-v unseen="${unseen:-0}" -v unseen_us="$(awk -v m="${unseen_ms:-0}" 'BEGIN { print m * 1000 }')" '
		# TID COMM EXEC RUN_DELAY PCOUNT SWITCHES COMM COUNT TOTAL_US TOP
		{ want = $4 / 1000; got = $9; sw += want; sg += got; n++; sc += $8; sp += $5
		  # avg is printed with one decimal (three digits below 1)
		  slack = 0.05 * $8 + 0.0005 * want + 1; tslack += slack
		  if (exact) {
			if (got > want + slack || $8 > $5)
				printf "%s(%s) %d delays, %.1f us in all: schedstat %d, %.1f us; ", $2, $1, $8, got, $5, want
		  } else {
			if ($2 != "rq-main" && (got < 0.9 * want || got > 1.1 * want))
				printf "%s(%s) total %.0f us, schedstat %.0f us; ", $2, $1, got, want
			if ($8 < 0.98 * $5 - 2 || $8 > 1.02 * $5 + 2)
				printf "%s(%s) %d delays, schedstat pcount %d; ", $2, $1, $8, $5
		  }
		  if ($5 > 0 && $10 < $4 / 1000 / $5)
			printf "%s(%s) top bucket %s us below the mean wait %.0f us; ", $2, $1, $10, $4 / 1000 / $5 }
		END { if (n < 5) printf "only %d workload threads reported; ", n
		      d = sg + unseen_us - sw; if (d < 0) d = -d
		      if (exact && (sc + unseen != sp || d > tslack + 1))
			printf "in all %d delays + %d not seen, %.1f us + %.1f us: schedstat %d, %.1f us", sc, unseen, sg, unseen_us, sp, sw
		      if (!exact && (sg < 0.9 * sw || sg > 1.1 * sw)) printf "sum %.0f us, schedstat %.0f us", sg, sw }')
	if [ -z "$bad" ]; then
		ok "$name"
	else
		fail "$name" "$bad"
	fi
}
both_paths "runqlat -L: per-thread delays match schedstat's run_delay and pcount" runqlat 0.1 1

# ---- a wait split by a move to another CPU counts whole ----
# rq-busy-0 is moved between the two CPUs every 20 ms while it waits behind the other two most of
# the time: the kernel adds the wait so far to run_delay when a queued task leaves its run queue
# (sched_info_dequeue()) and stamps it again on the other; runqlat's waits must still add up to
# run_delay and pcount, each counted once, at its switch-in.
si_why=$(sched_info_why runqlat 0.1 1)
if [ "$(nproc)" -ge 2 ] && [ -z "$si_why" ]; then
	busy0=$(grep -lx rq-busy-0 /proc/"$wpid"/task/*/comm | cut -d/ -f5)
	mover "$busy0" >"$TMP/moves" &
	mpid=$!
	(unset BPFPROF_NO_SCHED_INFO
	 bracket "$wpid" 2 "$TMP/mv.txt" "$TMP/m0" "$TMP/m1" -- runqlat -L -t "$busy0"); rc=$?
	kill "$mpid"; wait "$mpid" 2>/dev/null
	taskset -p -c 0 "$busy0" >/dev/null
	read -r count total <<<"$(parse_hists "$TMP/mv.txt" | awk '{ printf "%d %.1f\n", $3, $4 }')"
	read -r rd pc <<<"$(stats_delta "$TMP/m0" "$TMP/m1" | awk -v t="$busy0" '$1 == t { printf "%.1f %d\n", $4 / 1000, $5 }')"
	read -r unseen unseen_ms <<<"$(sed -n 's/^bpfprof: delays not counted: \([0-9]*\) (\([0-9.]*\) ms in all) ended at switches.*/\1 \2/p' "$TMP/mv.txt.err")"
	moves=$(wc -l <"$TMP/moves")
	check "runqlat: waits split by moves to another CPU ($moves moves) add up to run_delay ($total + ${unseen_ms:-0} ms not seen vs $rd us, $count + ${unseen:-0} vs $pc delays)" \
		awk -v rc="$rc" -v c="$count" -v t="$total" -v rd="$rd" -v pc="$pc" -v moves="$moves" \
			-v un="${unseen:-0}" -v unms="${unseen_ms:-0}" 'BEGIN {
			d = t + unms * 1000 - rd; if (d < 0) d = -d
			exit !(rc == 0 && moves >= 20 && c + un == pc && c > 0 && d <= 0.05 * c + 0.0005 * rd + 1) }'
else
	skip "runqlat: waits split by moves to another CPU" "${si_why:-one CPU}"
fi

# ---- -L and -p separate and filter: one histogram per workload thread, nothing else ----
parse_hists "$TMP/gt.txt" >"$TMP/l"
others=$(awk -v t="$tids" 'index(t, " " $1 " ") == 0' "$TMP/l")
check "runqlat -L -p: only the workload's threads" test -z "$others"
for c in rq-busy-0 rq-busy-1 rq-busy-2 rq-waker; do
	tid=$(grep -lx "$c" /proc/"$wpid"/task/*/comm | head -n 1 | cut -d/ -f5)
	check "runqlat -L -p: $c has its own histogram" \
		test "$(awk -v t="$tid" -v c="$c" '$1 == t && $2 == c' "$TMP/l" | wc -l)" -eq 1
done

# ---- -P -p: one histogram, named after the process ----
stop_all "$wpid"; kill -CONT "$wpid"
"$BPFPROF" runqlat -P -p "$wpid" 1 1 >"$TMP/p.txt" 2>&1
check "runqlat -P -p: exactly one histogram, for the process" \
	test "$(grep -c '^pid = ' "$TMP/p.txt")" -eq 1 -a "$(grep -c "^pid = $wpid rq-main\$" "$TMP/p.txt")" -eq 1

# ---- -P system-wide: the workload is one of several processes ----
"$BPFPROF" runqlat -P 1 1 >"$TMP/pall.txt" 2>&1
check "runqlat -P: the workload has one histogram" test "$(grep -c "^pid = $wpid " "$TMP/pall.txt")" -eq 1
check "runqlat -P: other processes have theirs" test "$(grep -c '^pid = ' "$TMP/pall.txt")" -gt 1
check "runqlat -P: no histogram for the idle tasks" test "$(grep -c '^pid = 0 ' "$TMP/pall.txt")" -eq 0

# ---- -t: one thread only ----
busy0=$(grep -lx rq-busy-0 /proc/"$wpid"/task/*/comm | cut -d/ -f5)
"$BPFPROF" runqlat -L -t "$busy0" 1 1 >"$TMP/t.txt" 2>&1
check "runqlat -L -t: only that thread" \
	test "$(grep -c '^tid = ' "$TMP/t.txt")" -eq 1 -a "$(grep -c "^tid = $busy0 rq-busy-0\$" "$TMP/t.txt")" -eq 1

# ---- single histogram: shape of a pinned CPU shared by three spinning threads ----
"$BPFPROF" runqlat -p "$wpid" 1 1 >"$TMP/one.txt" 2>&1
parse_hists "$TMP/one.txt" >"$TMP/one"
check "runqlat -p: one histogram with a percentile summary" \
	grep -Eq '^count [0-9]+  avg [0-9.]+ usecs  p50 .* p99.9 .* usecs' "$TMP/one.txt"
# each spinning thread waits for the other two's slices: waits of a millisecond and more
check "runqlat -p: waits of a millisecond and more" awk '{ exit !($5 >= 1023) }' "$TMP/one"

# ---- -m, intervals, -T ----
"$BPFPROF" runqlat -m -p "$wpid" 1 1 >"$TMP/m.txt" 2>&1
check "runqlat -m: millisecond histogram" grep -Eq '^ +msecs +: count +distribution' "$TMP/m.txt"
"$BPFPROF" runqlat -T -p "$wpid" 0.5 3 >"$TMP/iv.txt" 2>&1
check "runqlat INTERVAL COUNT: COUNT reports" test "$(grep -c '^count ' "$TMP/iv.txt")" -eq 3
check "runqlat -T: a timestamp per report" test "$(grep -Ec '^[0-9]{2}:[0-9]{2}:[0-9]{2}$' "$TMP/iv.txt")" -eq 3
# intervals print differences: each report holds about half a second of the same workload
check "runqlat INTERVAL: reports are per interval, not cumulative" awk '
	/^count / { c[++n] = $2 } END { exit !(n == 3 && c[3] < 1.7 * c[2] && c[2] < 1.7 * c[3]) }' "$TMP/iv.txt"

# ---- heat map: SVG and TSV from the in-kernel aggregation ----
"$BPFPROF" runqlat -p "$wpid" --heatmap "$TMP/h.svg" --heatmap-data "$TMP/h.tsv" \
	--heatmap-interval 0.1 1 1 >"$TMP/h.txt" 2>&1
check "runqlat --heatmap: a valid SVG" xmllint --noout "$TMP/h.svg"
check "runqlat --heatmap: cells in the SVG" grep -q '<g id="cells">' "$TMP/h.svg"
hsum=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) s += $i } END { print s + 0 }' "$TMP/h.tsv")
hcount=$(awk '/^count / { print $2 }' "$TMP/h.txt")
# the heat map also counts delays that ended after the report was read, before the write
check "runqlat --heatmap-data: the TSV counts every delay of the histogram" \
	awk -v h="$hsum" -v c="$hcount" 'BEGIN { exit !(c > 0 && h >= c && h <= c * 1.05 + 5) }'
check "runqlat --heatmap-data: 100 ms columns" awk -F'\t' 'NR == 3 { exit !($1 == "0.1") }' "$TMP/h.tsv"

# ---- --pidnss: the task's own PID namespace ----
if unshare --pid --fork true 2>/dev/null; then
	# a process in a new PID namespace...
	unshare --pid --fork --kill-child "$WL/runq" -b 1 -c 0 60 >"$TMP/ns.out" 2>/dev/null &
	nspid=$!
	# ...and one that stays in ours while its children go to a new one, where only a sleeping
	# child lives: BCC's choice of nsproxy->pid_ns_for_children would put the spinning shell's
	# delays under that namespace
	taskset -c 0 unshare --pid sh -c 'sleep 1000 & while :; do :; done' >/dev/null 2>&1 &
	shpid=$!
	wait_for_line "$TMP/ns.out" '^ready'
	inner=$(pgrep -P "$nspid")
	for ((i = 0; i < 100; i++)); do
		sleeper=$(pgrep -P "$shpid") && break
		sleep 0.01
	done
	inner_ns=$(stat -L -c %i /proc/"$inner"/ns/pid)
	own_ns=$(stat -L -c %i /proc/"$shpid"/ns/pid)
	child_ns=$(stat -L -c %i /proc/"$shpid"/ns/pid_for_children)
	"$BPFPROF" runqlat --pidnss 1 1 >"$TMP/ns.txt" 2>&1
	# the sleeper and the inner runq are their namespaces' init: only SIGKILL reaches them
	kill -KILL "$sleeper" "$inner" 2>/dev/null
	kill "$shpid" 2>/dev/null; wait "$shpid" "$nspid" 2>/dev/null
	check "runqlat --pidnss: a histogram for a new PID namespace" grep -q "^pidns = $inner_ns " "$TMP/ns.txt"
	check "runqlat --pidnss: a histogram for the initial namespace" grep -q "^pidns = $own_ns " "$TMP/ns.txt"
	check "runqlat --pidnss: tasks count under their own namespace, not pid_for_children" \
		test -n "$child_ns" -a "$child_ns" != "$own_ns" -a "$(grep -c "^pidns = $child_ns " "$TMP/ns.txt")" -eq 0
else
	skip "runqlat --pidnss" "cannot create PID namespaces here (unshare --pid failed)"
fi

kill "$wpid" 2>/dev/null

# ---- a -p target that exits ends the run, with its report ----
wpid=$(start_runq "$TMP/wl2.out" -b 1 -c 0 1.5)
timeout 20 "$BPFPROF" runqlat -p "$wpid" >"$TMP/exit.txt" 2>&1; rc=$?
check "runqlat -p: ends when the target exits, and reports" \
	test "$rc" -eq 0 -a "$(grep -c '^count [1-9]' "$TMP/exit.txt")" -eq 1
