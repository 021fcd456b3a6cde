#!/bin/bash
# bpfprof funclat on workloads of known latency: real uprobes, raw syscall tracepoints, and the
# kernel-function paths where this kernel allows them.
. "$(dirname "$0")/lib.sh"

# hist_count FILE NAME: the "count N" of NAME's histogram
hist_count() { awk -v f="$2" '$0 == f { s = 1; next } s && /^count / { print $2; exit }' "$1"; }
# hist_bucket FILE NAME LO: the count of NAME's bucket starting at LO (0 if absent)
hist_bucket() {
	awk -v f="$2" -v lo="$3" '$0 == f { s = 1; next } s && /^count / { exit }
		s && $1 == lo && $2 == "->" { n = $5 } END { print n + 0 }' "$1"
}
# on_time FILE FUNC: FUNC's calls the workload (WL_LATE=1) timed under 8192 us by its own clock;
# a tracer's time for a call lies within that, so at least these are in the 4096 -> 8191 bucket
on_time() { sed -n "s/^funcs: $2: \([0-9]*\) of \([0-9]*\) calls took 8192 us or more; .*$/\2 \1/p" "$1" | awk '{ print $1 - $2 }'; }
# own_median FILE FUNC: the median of FUNC's calls in microseconds, by the workload's own clock
own_median() { sed -n "s/^funcs: $2: .* calls took 8192 us or more; median \([0-9]*\) us$/\1/p" "$1"; }
# hist_above FILE NAME LO: calls in NAME's buckets starting at LO or above
hist_above() {
	awk -v f="$2" -v lo="$3" '$0 == f { s = 1; next } s && /^count / { exit }
		s && $2 == "->" && $1 + 0 >= lo { n += $5 } END { print n + 0 }' "$1"
}

"$BPFPROF" funclat --help >"$TMP/h" 2>&1; rc=$?
check "funclat --help exits 0 with usage" test "$rc" -eq 0 -a -n "$(grep 'Usage: bpfprof funclat' "$TMP/h")"
"$BPFPROF" funclat --bogus >/dev/null 2>&1; rc=$?
check "funclat: unknown option exits 2" test "$rc" -eq 2

need_root "funclat integration" || exit 0
F=$WL/funcs

# 1. By path, -- COMMAND: exact call counts, slow_op (5 ms sleep) in the 4096-8191 us bucket.
WL_LATE=1 "$BPFPROF" funclat "$F:slow_op" "$F:fast_op" "u:$WL/libfuncs.so:lib_slow_op" \
	"$WL/libfuncs.so:lib_fast_op" -- "$F" calls 20 1000 >"$TMP/p.out" 2>"$TMP/p.err"; rc=$?
check "funclat by path exits 0" test "$rc" -eq 0
check "slow_op called exactly 20 times" test "$(hist_count "$TMP/p.out" funcs:slow_op)" = 20
check "fast_op called exactly 1000 times" test "$(hist_count "$TMP/p.out" funcs:fast_op)" = 1000
# a 5 ms sleep is never shorter; a loaded machine makes some longer, which the workload counts
check "slow_op: none below 4096 us" test "$(hist_above "$TMP/p.out" funcs:slow_op 4096)" = 20
late_check() { # LABEL OUT NAME WLERR FUNC
	local in=$(hist_bucket "$2" "$3" 4096) want=$(on_time "$4" "$5")
	echo "# $1: $in calls in 4096 -> 8191 us, $want of them under 8192 us by the workload's clock"
	check "$1 in 4096 -> 8191 (at least the calls the workload timed under 8192 us)" \
		test -n "$want" -a "$in" -ge "${want:-1}"
}
late_check "slow_op" "$TMP/p.out" funcs:slow_op "$TMP/p.err" slow_op
check "fast_op: most calls below 64 us" test "$(hist_above "$TMP/p.out" funcs:fast_op 64)" -lt 50
check "library by path: lib_slow_op 20 times" \
	test "$(hist_count "$TMP/p.out" libfuncs.so:lib_slow_op)" = 20
late_check "library by path: lib_slow_op" "$TMP/p.out" libfuncs.so:lib_slow_op "$TMP/p.err" lib_slow_op
check "library by path: lib_fast_op 1000 times" \
	test "$(hist_count "$TMP/p.out" libfuncs.so:lib_fast_op)" = 1000
check "summary line has percentiles" grep -q "^count 20  avg .* p50 .* p99 " "$TMP/p.out"

# 1b. Percentiles in every unit: the kernel keeps nanoseconds, so a 5 ms sleep and a ~1 us call
#     get a p50 that agrees with the exact average whether printed in ns, us or ms: no more than
#     7% above it, and no more than 20% below (an interrupt or preemption inside a ~1 us call
#     lengthens a few calls a hundredfold, which raises the average above the median, never the
#     other way); and the sleep's p50 is at least its 5 ms and within 7% of the sleeps' own median
#     as the workload timed them (a host that wakes a 5 ms sleep late makes both late: one CI run
#     here had p50 5.369 ms and an average of 5.56).
# field FILE NAME KEY: the value after KEY ("avg", "p50") in NAME's summary line
field() { awk -v f="$2" -v k="$3" '$0 == f { s = 1; next } s && /^count / { for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"; }
# median_agrees P50 AVG: P50 within [0.8, 1.07] x AVG
median_agrees() { awk -v p="$1" -v a="$2" 'BEGIN { exit !(a > 0 && p >= 0.8 * a && p <= 1.07 * a) }'; }
# The average is exact only while no call of the 3000 was preempted: one 3 ms stall of the VM
# (seen here in a third of runs, before and after any change to funclat) doubles the average of
# ~1 us calls.  A run whose fast_op median and average disagree is measured again (3 runs at
# most): the comparison is about the percentiles, not the host's scheduling.
for unit in -n "" -m; do
	div=$(case $unit in -n) echo 1e6;; -m) echo 1;; *) echo 1e3;; esac)
	for try in 1 2 3; do
		WL_LATE=1 "$BPFPROF" funclat $unit "$F:slow_op" "$F:fast_op" -- "$F" calls 20 3000 \
			>"$TMP/u$unit.out" 2>&1
		median_agrees "$(field "$TMP/u$unit.out" funcs:fast_op p50)" \
			"$(field "$TMP/u$unit.out" funcs:fast_op avg)" && break
		echo "# funclat ${unit:--u}: fast_op's average off its median (a stalled call?): measured again"
	done
	for fn in slow_op fast_op; do
		avg=$(field "$TMP/u$unit.out" "funcs:$fn" avg)
		p50=$(field "$TMP/u$unit.out" "funcs:$fn" p50)
		echo "# funclat ${unit:--u} $fn: avg $avg p50 $p50"
		check "funclat ${unit:--u} $fn: p50 agrees with the exact average (7% above, 20% below)" \
			median_agrees "$p50" "$avg"
	done
	p50ms=$(awk -v v="$(field "$TMP/u$unit.out" funcs:slow_op p50)" -v d="$div" 'BEGIN { print v / d }')
	own=$(own_median "$TMP/u$unit.out" slow_op)
	check "funclat ${unit:--u} slow_op: p50 ($p50ms ms) at least 5 ms and within 7% of the calls' own median (${own:-none} us)" \
		awk -v v="$p50ms" -v o="$own" 'BEGIN { exit !(o > 0 && v >= 5 && v <= 1.07 * o / 1e3 && v >= 0.93 * o / 1e3) }'
done

# 2. LIB:FUNC through -p PID's maps; the workload waits for SIGUSR1 until funclat has attached.
WL_LATE=1 WL_WAIT_USR1=1 "$F" calls 10 500 2>"$TMP/l.wl" &
wl=$!
wait_for_line /proc/$wl/maps libfuncs.so
"$BPFPROF" funclat -p $wl libfuncs:lib_slow_op libfuncs:lib_fast_op >"$TMP/l.out" 2>"$TMP/l.err" &
fl=$!
if wait_for_line "$TMP/l.err" "^Timing"; then
	kill -USR1 $wl
	wait $wl
	wait $fl; rc=$?
	check "funclat -p LIB:FUNC exits 0 when the process ends" test "$rc" -eq 0
	check "LIB:FUNC: lib_slow_op exactly 10 times" \
		test "$(hist_count "$TMP/l.out" libfuncs.so:lib_slow_op)" = 10
	late_check "LIB:FUNC: lib_slow_op" "$TMP/l.out" libfuncs.so:lib_slow_op "$TMP/l.wl" lib_slow_op
	check "LIB:FUNC: lib_fast_op exactly 500 times" \
		test "$(hist_count "$TMP/l.out" libfuncs.so:lib_fast_op)" = 500
else
	fail "funclat -p LIB:FUNC attaches" "$(cat "$TMP/l.err")"
	kill $wl $fl 2>/dev/null
fi

# 3. Recursion: recurse(3) returns after 2, 4 and 6 ms; one timestamp per thread would time
#    all three from the innermost call (all about 2 ms).  Sleeps only ever run late, so the
#    checks are lower bounds, which a loaded machine cannot break: no call under 2 ms, and the
#    20 outer calls (two or three sleeps each) at 4 ms or more.
"$BPFPROF" funclat -m "$F:recurse" -- "$F" recurse 3 10 >"$TMP/r.out" 2>&1
check "recursion: 30 calls timed" test "$(hist_count "$TMP/r.out" funcs:recurse)" = 30
check "recursion: no call under 2 ms" test "$(hist_above "$TMP/r.out" funcs:recurse 2)" = 30
check "recursion: outer calls at 4 ms or more" test "$(hist_above "$TMP/r.out" funcs:recurse 4)" -ge 20
check "recursion: msecs header" grep -q "msecs" "$TMP/r.out"

# 4. sys:NAME pairs sys_enter/sys_exit: every getppid timed.
"$BPFPROF" funclat -n sys:getppid -- "$WL/syscalls" getppid 3000 >"$TMP/s.out" 2>&1
check "sys:getppid: exactly 3000 calls" test "$(hist_count "$TMP/s.out" sys:getppid)" = 3000
check "sys:getppid: nsecs header" grep -q "nsecs" "$TMP/s.out"

# 5. A glob times every match, says how many.
"$BPFPROF" funclat "u:$F:*_op" -- "$F" calls 3 30 >"$TMP/g.out" 2>"$TMP/g.err"
check "glob says how many functions match" grep -q "matches 2 functions" "$TMP/g.err"
check "glob: slow_op and fast_op both timed" \
	test "$(hist_count "$TMP/g.out" funcs:slow_op)/$(hist_count "$TMP/g.out" funcs:fast_op)" = 3/30

# 6. Log-linear buckets, intervals, heat map.
"$BPFPROF" funclat -L "$F:slow_op" -- "$F" calls 10 0 >"$TMP/ll.out" 2>&1
# 8 sub-buckets per power of two: a bucket in [2^k, 2^(k+1)) is 2^k/8 wide (512 us from 4096 to
# 8191); a late sleep may land in a higher power of two, never in a wrong-width bucket.
check "-L: 10 calls from 4096 us, in buckets 1/8 of their power of two wide" \
	test "$(awk '$2 == "->" && $1 >= 4096 && $5 > 0 { p = 2 ^ int(log($1) / log(2) + 1e-9)
		if ($3 - $1 + 1 == p / 8) n += $5; else bad = 1 } END { print bad ? -1 : n + 0 }' "$TMP/ll.out")" = 10
"$BPFPROF" funclat -i 0.3 -T "$F:slow_op" -- "$F" calls 150 0 >"$TMP/i.out" 2>&1
check "-i -T: several timestamped intervals" test "$(grep -Ec '^[0-9]{2}:[0-9]{2}:[0-9]{2}$' "$TMP/i.out")" -ge 2
check "-i: interval counts add up to 150" \
	test "$(awk '/^count / { s += $2 } END { print s }' "$TMP/i.out")" = 150
"$BPFPROF" funclat -d 5 --heatmap "$TMP/hm.svg" --heatmap-data "$TMP/hm.tsv" "$F:slow_op" \
	-- "$F" calls 40 0 >/dev/null 2>&1
check "--heatmap writes an SVG" grep -q "<svg" "$TMP/hm.svg"
if command -v xmllint >/dev/null; then
	check "--heatmap SVG is valid XML" xmllint --noout "$TMP/hm.svg"
fi
check "--heatmap-data counts all 40 calls" \
	test "$(awk 'NR > 1 { for (i = 2; i <= NF; i++) s += $i } END { print s }' "$TMP/hm.tsv")" = 40

# 7. Kernel functions: fentry/fexit, else kprobes, else one clear line.
if out=$("$BPFPROF" funclat -v k:__x64_sys_getppid -- "$WL/syscalls" getppid 2000 2>"$TMP/k.err"); then
	check "kernel function timed (via $(grep -o 'using [a-z/]*' "$TMP/k.err" | head -1))" \
		test "$(hist_count <(echo "$out") __x64_sys_getppid)" = 2000
else
	why=$(grep "^bpfprof: cannot trace kernel function" "$TMP/k.err")
	check "kernel function: one clear line when neither fentry nor kprobes work" \
		grep -Eq "cannot trace kernel function '__x64_sys_getppid': .*fentry.*kprobes" <<<"$why"
	skip "kernel function latency" "${why#bpfprof: }"
fi

# 8. Bad input.
expect_one_error "missing user function, with near matches" "function 'slow_opp' not found in .*did you mean: slow_op" \
	-- funclat "$F:slow_opp"
expect_one_error "missing library" "library 'nosuchlib' not found" -- funclat nosuchlib:foo
expect_one_error "missing file" "cannot read '/nonexistent/bin'" -- funclat /nonexistent/bin:foo
expect_one_error "glob matching nothing" "no function in .* matches 'zz\*'" -- funclat "$F:zz*"
expect_one_error "missing kernel function, with near matches" "kernel function 'vfs_reaad' not found; did you mean: vfs_read" \
	-- funclat k:vfs_reaad
expect_one_error "missing syscall" "no syscall named 'getppidd'; did you mean: getppid" -- funclat sys:getppidd
expect_one_error "a tracepoint has no latency" "is a tracepoint" -- funclat sched:sched_switch
expect_one_error "bad prefix" "unknown prefix 'q:'" -- funclat q:a:b
expect_one_error "no spec" "no function to time" -- funclat
expect_one_error "-T without -i" "-T needs -i" -- funclat -T "$F:slow_op"
