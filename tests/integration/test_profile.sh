#!/bin/bash
# bpfprof profile on workloads of known shape: real BPF, real perf events.
. "$(dirname "$0")/lib.sh"
need_root "profile integration" || exit 0

F=199
# 1. -- COMMAND: full stacks, 2:1 split, sample count ~ F x seconds for one busy thread.
"$BPFPROF" profile -F $F -f -- "$WL/hotcold" 3 >"$TMP/hc.folded" 2>"$TMP/hc.err"; rc=$?
check "profile -- COMMAND exits 0" test "$rc" -eq 0
a=$(folded_sum "$TMP/hc.folded" '^hotcold;.*main;driver;hot_a;spin ')
b=$(folded_sum "$TMP/hc.folded" '^hotcold;.*main;driver;hot_b;spin ')
total=$(folded_sum "$TMP/hc.folded" '^hotcold;')
# The workload reports the CPU time it got: on a loaded machine that, not wall time, is what a
# sampler sees.
cpu=$(awk '/^cpu_seconds/ { print $2 }' "$TMP/hc.err")
expected=$(awk -v f=$F -v c="$cpu" 'BEGIN { printf "%d", f * c }')
echo "# hot_a=$a hot_b=$b total=$total expected~$expected (F x ${cpu} CPU seconds)"
check "full stack main;driver;hot_a;spin present" test "$a" -gt 0
check "full stack main;driver;hot_b;spin present" test "$b" -gt 0
# 2:1 in work; in the time each phase ran as a timer sees it (the workload's own measure: a VM's
# stolen time lengthens a phase for the sampler as much as its work does) 2:1 quiet
read -r sa sb <<<"$(awk '/^sampled_seconds/ { print $3, $5 }' "$TMP/hc.err")"
ran=$(awk -v a="$sa" -v b="$sb" 'BEGIN { print (b > 0 ? a / b : 0) }')
echo "# hot_a:hot_b ran ${sa:-?} s : ${sb:-?} s by the workload's measure ($ran)"
check "hot_a:hot_b is as the phases ran (2:1 quiet) within 25%" \
	within "$(awk -v a="$a" -v b="$b" 'BEGIN{print (b ? a/b : 0)}')" "$ran" 0.25
check "sample count within 20% of F x CPU seconds" within "$total" "$expected" 0.20

# 2. Report: header and rows.
"$BPFPROF" profile -F $F -- "$WL/hotcold" 1 >"$TMP/hc.report" 2>&1
check "report header has sample count" grep -q "^# Samples: [0-9]" "$TMP/hc.report"
check "report header has lost samples" grep -q "^# Lost samples: 0" "$TMP/hc.report"
check "report has Children/Self columns" grep -q "Children.*Self.*Command.*Shared Object.*Symbol" "$TMP/hc.report"
check "report has hot_a row" grep -Eq "hotcold +hotcold +\[\.\] hot_a" "$TMP/hc.report"

# 3. Kernel frames under a syscall-heavy function.
"$BPFPROF" profile -F $F -f --annotate -- "$WL/syscalls" read 1.5 >"$TMP/sc.folded" 2>&1
k=$(folded_sum "$TMP/sc.folded" '^syscalls;.*main;read_devzero;raw_syscall3;.*(entry_SYSCALL_64|do_syscall_64)_\[k\];.*_\[k\] ')
echo "# syscall stacks with kernel frames: $k"
check "syscall workload shows symbolized kernel frames under read_devzero" test "$k" -gt 0
check "kernel frames include the read path" grep -Eq 'read_devzero;raw_syscall3;.*(ksys_read|vfs_read)_\[k\]' "$TMP/sc.folded"

# 4. A short-lived process whose binary is deleted, exiting before the report.
cp "$WL/hotcold" "$TMP/shortlived"
"$BPFPROF" profile -F $F -f 3 >"$TMP/sl.folded" 2>"$TMP/sl.err" &
prof=$!
sleep 0.7
"$TMP/shortlived" 0.8 2>/dev/null &
victim=$!
sleep 0.2
rm -f "$TMP/shortlived"
wait $victim
wait $prof; rc=$?
check "system-wide profile exits 0" test "$rc" -eq 0
sl=$(folded_sum "$TMP/sl.folded" '^shortlived;.*driver;hot_a')
echo "# short-lived hot_a samples: $sl"
check "exited process with deleted binary is symbolized" test "$sl" -gt 0

# 4b. Short-lived processes under -a, each gone within a few ms: their mappings come from the
# kernel's mmap records, not from a /proc read that would come too late ([unknown] frames).
"$BPFPROF" profile -F 999 -a -f 4 >"$TMP/sw.folded" 2>"$TMP/sw.err" &
prof=$!
sleep 1
for i in $(seq 40); do "$WL/shortwork" 4; done
wait $prof; rc=$?
sw_all=$(folded_sum "$TMP/sw.folded" '^shortwork;')
sw_sym=$(folded_sum "$TMP/sw.folded" '^shortwork;.*main;short_work( |;)')
sw_unknown=$(folded_sum "$TMP/sw.folded" '^shortwork;.*\[unknown\]')
echo "# short-lived processes: $sw_sym of $sw_all samples in main;short_work, $sw_unknown with [unknown] frames"
check "short-lived processes under -a: exit 0" test "$rc" -eq 0
# (read from /proc at their first sample, a third of them had [unknown] frames)
check "short-lived processes under -a: [unknown] frames in at most 2% of samples" \
	test "$sw_all" -gt 0 -a $((sw_unknown * 50)) -le "$sw_all"
# the rest is ld.so starting them and exit
check "short-lived processes under -a: 65% of samples in main;short_work" \
	test $((sw_sym * 100)) -ge $((sw_all * 65))

# 5. -- COMMAND stops when the command exits (a 10 s profile of a 0.5 s command).
SECONDS=0
"$BPFPROF" profile -F $F -f 10 -- "$WL/hotcold" 0.5 >/dev/null 2>&1
check "profile stops when the command exits" test "$SECONDS" -lt 8

# 6. SIGINT mid-run still prints a report.
"$WL/hotcold" 4 2>/dev/null &
busy=$!
"$BPFPROF" profile -F $F -f -p $busy >"$TMP/int.folded" 2>"$TMP/int.err" &
prof=$!
sleep 1.5
kill -INT $prof
wait $prof; rc=$?
kill $busy 2>/dev/null; wait $busy 2>/dev/null
check "SIGINT: exit 0" test "$rc" -eq 0
check "SIGINT: collected stacks printed" grep -q "hot_a" "$TMP/int.folded"
check "-p shows only that process" awk '{ if ($0 !~ /^hotcold;/) bad = 1 } END { exit bad || NR == 0 }' "$TMP/int.folded"

# 7. Flame graph SVG, valid XML, naming the hot functions.
"$BPFPROF" profile -F $F --svg "$TMP/fg.svg" -o "$TMP/fg.txt" -- "$WL/hotcold" 1 2>"$TMP/fg.err"
check "--svg writes an SVG" test -s "$TMP/fg.svg"
if command -v xmllint >/dev/null; then
	check "--svg is valid XML" xmllint --noout "$TMP/fg.svg"
else
	skip "--svg is valid XML" "xmllint not installed"
fi
check "--svg names hot_a" grep -q "hot_a" "$TMP/fg.svg"
check "-o writes the report" grep -q "^# Samples" "$TMP/fg.txt"

# 8. -K / -U restrict the stacks.
"$BPFPROF" profile -F $F -f -K -- "$WL/syscalls" read 1 >"$TMP/k.folded" 2>&1
# Whole frames only: kernel names such as irq_domain_* contain "main".
check "-K: no user frames" awk '!/^syscalls;/ { next } /(^|;)(main|read_devzero)(;| )/ { bad = 1 } END { exit bad }' "$TMP/k.folded"
check "-K: kernel frames present" grep -Eq '^syscalls;.*(ksys_read|vfs_read)' "$TMP/k.folded"
"$BPFPROF" profile -F $F -f -U --annotate -- "$WL/syscalls" read 1 >"$TMP/u.folded" 2>&1
check "-U: no kernel frames" awk '/_\[k\]/ { bad = 1 } END { exit bad }' "$TMP/u.folded"

# 9. -e task-clock works; cycles gives a clear error on a machine without a PMU.
"$BPFPROF" profile -e task-clock -F $F -f -- "$WL/hotcold" 1 >"$TMP/tc.folded" 2>&1
check "-e task-clock samples" grep -q "hot_a" "$TMP/tc.folded"
if perf_err=$("$BPFPROF" profile -e cycles 1 2>&1 >/dev/null); then
	ok "-e cycles works (this machine has a hardware PMU)"
else
	check "-e cycles: clear error without a PMU" grep -q "not supported on this machine" <<<"$perf_err"
fi

# 9b. Software events other than the clocks: a sample every event by default (the kernel's
# frequency adjustment follows its tick, not page faults: -F 99 gave a sample or two), -c N
# every N, and the idle task's own events counted (its switches out).
"$BPFPROF" profile -e page-faults:u -f -- "$WL/statwork" 0 5000 0 0 >"$TMP/pf.folded" 2>"$TMP/pf.err"
"$BPFPROF" stat -x , -e page-faults:u -- "$WL/statwork" 0 5000 0 0 2>"$TMP/pf.stat" >/dev/null
pf_samples=$(folded_sum "$TMP/pf.folded" '.')
pf_main=$(folded_sum "$TMP/pf.folded" ';main( |;|$)')
pf_count=$(awk -F, '$3 ~ /page-faults/ { print $1 + 0; exit }' "$TMP/pf.stat")
echo "# -e page-faults:u: $pf_samples samples ($pf_main in main); stat counts $pf_count"
check "-e page-faults:u: a sample for each of the 5000 pages touched in main" test "$pf_main" -ge 5000
check "-e page-faults:u: samples = stat's count within 5%" within "$pf_samples" "$pf_count" 0.05
"$BPFPROF" profile -e page-faults:u -c 100 -- "$WL/statwork" 0 5000 0 0 >"$TMP/pf100.txt" 2>&1
pf100=$(sed -n "s/^# Samples: \([0-9]*\) .*/\1/p" "$TMP/pf100.txt")
check "-c 100: a sample every 100 page faults ($pf100 of ~$((pf_count / 100)))" \
	within "$pf100" $((pf_count / 100)) 0.1
check "-c 100: the header says the period" grep -q '^# Sample period: 100 events' "$TMP/pf100.txt"
check "-c 100: no idle exclusion said for a non-clock event" bash -c "! grep -q '^# Excluded' '$TMP/pf100.txt'"
# Only where a CPU went idle during the run (/proc/stat's idle jiffies grew): on a machine whose
# other load keeps every CPU busy the idle task never runs, and has nothing to count.
idle_jiffies() { awk '$1 == "cpu" { print $5; exit }' /proc/stat; }
idle0=$(idle_jiffies)
"$BPFPROF" profile -e context-switches -a -f 1 >"$TMP/cs.folded" 2>/dev/null
idle1=$(idle_jiffies)
if [ "$idle1" -gt "$idle0" ]; then
	check "-e context-switches -a: the idle task's switches out are counted (swapper)" \
		grep -q '^swapper/' "$TMP/cs.folded"
else
	skip "-e context-switches -a: the idle task's switches" "no CPU went idle during the run"
fi

# 10. -C limits CPUs: pin the workload to CPU 0 and sample only CPU 1: no hot_a.  Under a name
# of its own: other hotcold processes (other tests' runs on this machine) may run on CPU 1.
cp "$WL/hotcold" "$TMP/pinnedhc"
taskset -c 0 "$TMP/pinnedhc" 1.5 2>/dev/null &
pinned=$!
"$BPFPROF" profile -F $F -f -C 1 1 >"$TMP/c.folded" 2>&1
wait $pinned
if [ "$(nproc)" -ge 2 ]; then
	check "-C 1 excludes a task pinned to CPU 0" awk '/^pinnedhc;.*hot_a/ { bad = 1 } END { exit bad }' "$TMP/c.folded"
else
	skip "-C 1 excludes a task pinned to CPU 0" "needs 2 CPUs"
fi

# 11. A command that cannot be run: one clear line, non-zero exit, no hang.
out=$(timeout 20 "$BPFPROF" profile -f -- /nonexistent/cmd 2>&1 >/dev/null); rc=$?
check "-- missing command: non-zero exit" test "$rc" -ne 0 -a "$rc" -lt 124
check "-- missing command: clear error" grep -q "^bpfprof: cannot run '/nonexistent/cmd'" <<<"$out"

# 12. Folded stacks of a run with no samples (a process asleep throughout): the output stays
# empty for flamegraph.pl, and stderr says why instead of leaving an empty result unexplained.
sleep 30 & sleeper=$!
timeout 20 "$BPFPROF" profile -p "$sleeper" -f 0.5 >"$TMP/empty.folded" 2>"$TMP/empty.err"; rc=$?
kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null
check "-f with no samples: exit 0, no folded line" test "$rc" -eq 0 -a ! -s "$TMP/empty.folded"
check "-f with no samples: said on stderr" \
	grep -q "^bpfprof: no samples: the folded output is empty" "$TMP/empty.err"
# PLT stubs are named as objdump and perf name them: a loop calling labs() through the PLT has
# samples in its stub, labs@plt under caller, not [pltcall] (the file, unnamed)
"$BPFPROF" profile -F $F -U -f -- "$WL/pltcall" 1.5 >"$TMP/plt.folded" 2>/dev/null
plt=$(folded_sum "$TMP/plt.folded" ';caller;labs@plt ')
libc=$(folded_sum "$TMP/plt.folded" ';caller;labs ')
echo "# labs@plt=$plt labs=$libc"
check "profile: samples in a PLT stub are labs@plt ($plt of them)" test "$plt" -gt 0
check "profile: no unnamed frames of the program in the PLT" bash -c "! grep -q ';caller;\[pltcall\]' '$TMP/plt.folded'"
