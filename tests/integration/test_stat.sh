#!/bin/bash
# bpfprof stat against perf stat on workloads of a known shape: the software counters, the
# default set, hardware events without a PMU, intervals, per-CPU rows, per-command rows of a
# fork storm, CSV read by a CSV parser, repeats, and bad input.
. "$(dirname "$0")/lib.sh"

# value FILE EVENT: EVENT's count in perf stat's layout ("  12,345      EVENT  # ..."; msec
# for the clocks: "  1.23 msec task-clock")
value() {
	awk -v e="$2" '{ v = $1; gsub(",", "", v) }
		$2 == e && v ~ /^[0-9.]+$/ { print v; exit }
		$2 == "msec" && $3 == e && v ~ /^[0-9.]+$/ { print v; exit }' "$1"
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

"$BPFPROF" stat --help >"$TMP/h" 2>&1; rc=$?
check "stat --help exits 0 with usage" test "$rc" -eq 0 -a -n "$(grep 'Usage: bpfprof stat' "$TMP/h")"
check "stat --help lists -x, -r, -A, --by-comm" \
	test "$(grep -Ec -- '^ +(-x, --field-separator|-r, --repeat|-A, --per-cpu|--by-comm) ' "$TMP/h")" -eq 4
"$BPFPROF" help >"$TMP/help" 2>&1
check "bpfprof help: stat, also 'count'" grep -Eq "^  stat .*also 'count'" "$TMP/help"

# Bad input: one line each, exit 2, before anything runs.
expect_one_error "-I 0 refused" "invalid interval '0'" -- stat -I 0 -e cs -- true
expect_one_error "-r 0 refused" "invalid repeat count '0'" -- stat -r 0 -e cs -- true
expect_one_error "-x '' refused" "-x needs a separator" -- stat -x '' -e cs -- true
expect_one_error "unknown event in a list, named" "unknown event 'context-switch'; did you mean: context-switches" \
	-- stat -e page-faults,context-switch -- true
expect_one_error "unknown modifier" "event 'cycles:q': unknown modifier" -- stat -e cycles:q -- true
expect_one_error "-A needs system-wide counting" "-A/--per-cpu counts per CPU" -- stat -A -e cs -- true
expect_one_error "a program where an event goes: perf's 'stat ls'" "'ls' is a program, not an event: a command goes after '--'" \
	-- stat ls
expect_one_error "-r needs a COMMAND" "-r 3 repeats a COMMAND" -- stat -r 3 -e cs

need_root "stat integration" || exit 0
# the tutorials' "perf stat -e r0 ls": a raw PMU event, said to be one, not only "not found"
expect_one_error "perf's raw event r0: said what it is" \
	"kernel function 'r0' not found; perf's raw PMU events \\(rNNN\\) are not taken" -- stat -e r0 -- true
W=$WL/statwork
S=$WL/syscalls
EV=context-switches,cpu-migrations,page-faults,task-clock

# 1. Agreement with perf stat: 500 sleeps, 20000 page faults, 100 migrations, 400 ms of CPU;
# three runs of each, interleaved, medians compared.
if perf stat -e "$EV" -- true >/dev/null 2>&1; then
	declare -A b p
	for i in 1 2 3; do
		"$BPFPROF" stat -e "$EV" -- "$W" 500 20000 100 400 2>"$TMP/b$i" >/dev/null
		perf stat -e "$EV" -- "$W" 500 20000 100 400 2>"$TMP/p$i" >/dev/null
	done
	for e in context-switches cpu-migrations page-faults task-clock; do
		bm=$(median3 "$(value "$TMP/b1" $e)" "$(value "$TMP/b2" $e)" "$(value "$TMP/b3" $e)")
		pm=$(median3 "$(value "$TMP/p1" $e)" "$(value "$TMP/p2" $e)" "$(value "$TMP/p3" $e)")
		echo "# $e: bpfprof $bm, perf $pm (medians of 3)"
		check "stat and perf stat agree on $e within 5%" within "$bm" "$pm" 0.05
	done
	check "page-faults: at least the 20000 touched pages" \
		test "$(value "$TMP/b1" page-faults)" -ge 20000
	check "cpu-migrations: the 100 moves" within "$(value "$TMP/b1" cpu-migrations)" 100 0.05
	check "context-switches: at least the 500 sleeps" \
		test "$(value "$TMP/b1" context-switches)" -ge 500
	check "CPUs utilized and a rate are derived, as perf" \
		grep -Eq "task-clock +# +[0-9.]+ CPUs utilized" "$TMP/b1"
	check "elapsed, user and sys footer" \
		test "$(grep -Ec 'seconds (time elapsed|user|sys)$' "$TMP/b1")" -eq 3
else
	skip "stat against perf stat" "perf stat cannot count software events here"
fi

# 2. The default set, on stderr when a COMMAND runs (stdout is the command's).
"$BPFPROF" stat -- "$S" getppid 10 >"$TMP/d.out" 2>"$TMP/d.err"; rc=$?
check "default set: exits 0" test "$rc" -eq 0
for e in task-clock context-switches cpu-migrations page-faults cycles instructions branches branch-misses; do
	check "default set: $e" grep -Eq " $e( |$)" "$TMP/d.err"
done
check "default set: the header names the command" \
	grep -q "Performance counter stats for '$S getppid 10':" "$TMP/d.err"
check "results go to stderr with a COMMAND, not stdout" \
	test -z "$(grep -E 'task-clock|elapsed' "$TMP/d.out")"

# 3. Hardware events: <not supported> without a PMU, and the run still succeeds.
"$BPFPROF" stat -e cycles,instructions,page-faults -- true 2>"$TMP/c.err"; rc=$?
check "cycles: the run succeeds" test "$rc" -eq 0
if grep -q "<not supported>      cycles" "$TMP/c.err"; then
	ok "cycles: <not supported> here (no hardware PMU)"
	check "an unsupported event does not hide the others" test -n "$(value "$TMP/c.err" page-faults)"
else
	check "cycles: counted on this machine's PMU, with insn per cycle" \
		grep -q "insn per cycle" "$TMP/c.err"
fi

# 4. -I 500 over 2.25 s: four whole intervals and the last, partial one.
"$BPFPROF" stat -I 500 -e task-clock,context-switches -- sleep 2.25 2>"$TMP/i.err"; rc=$?
n=$(awk '$1 ~ /^[0-9]+\.[0-9]+$/ && /context-switches/' "$TMP/i.err" | wc -l)
check "-I 500: exits 0" test "$rc" -eq 0
check "-I 500 over 2.25 s: 5 intervals ($n)" test "$n" -eq 5
check "-I: perf's column heading" grep -q "^#           time             counts unit events" "$TMP/i.err"

# 5. -A: the CPUs' rows add up: exactly the 5000 getppid calls; cpu-clock to CPUs x elapsed.
"$BPFPROF" stat -a -A -x, -e syscalls:sys_enter_getppid,cpu-clock -o "$TMP/a.csv" \
	-- "$S" getppid 5000 >/dev/null 2>&1; rc=$?
ncpu=$(grep -c '^CPU' "$TMP/a.csv")
sum=$(awk -F, '$4 == "syscalls:sys_enter_getppid" { s += $2 } END { print s + 0 }' "$TMP/a.csv")
check "-A: exits 0 with a row per CPU and event" test "$rc" -eq 0 -a "$ncpu" -eq $((2 * $(nproc)))
check "-A: the CPUs' getppid rows add up to 5000 ($sum)" test "$sum" -ge 5000 -a "$sum" -le 5010
"$BPFPROF" stat -a -A -e cpu-clock 1 >"$TMP/a2.out" 2>/dev/null
csum=$(awk '$1 ~ /^CPU/ && $4 == "cpu-clock" { s += $2 } END { print s + 0 }' "$TMP/a2.out")
el=$(awk '/seconds time elapsed/ { print $1 * 1000 }' "$TMP/a2.out")
echo "# -A cpu-clock rows: $csum msec over $(nproc) CPUs and $el ms"
check "-A: cpu-clock rows add up to CPUs x elapsed (within 2%)" within "$csum" "$(awk -v a="$el" -v n="$(nproc)" 'BEGIN { print a * n }')" 0.02

# 5b. --per-core / --per-socket: a row per unit of sysfs's topology, its CPUs counted in it.
cores=$(for c in /sys/devices/system/cpu/cpu[0-9]*/topology; do
	echo "$(cat $c/physical_package_id)-$(cat $c/die_id 2>/dev/null || echo 0)-$(cat $c/core_id)"
done | sort -u | wc -l)
sockets=$(cat /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id | sort -u | wc -l)
"$BPFPROF" stat -a --per-core -x, -e syscalls:sys_enter_getppid,cpu-clock -o "$TMP/core.csv" \
	-- "$S" getppid 5000 >/dev/null 2>&1; rc=$?
rows=$(grep -c '^S[0-9]*-D[0-9]*-C[0-9]*,[0-9]*,.*,cpu-clock,' "$TMP/core.csv")
gsum=$(awk -F, '$5 == "syscalls:sys_enter_getppid" { s += $3 } END { print s + 0 }' "$TMP/core.csv")
ucpus=$(awk -F, '$5 == "cpu-clock" { s += $2 } END { print s + 0 }' "$TMP/core.csv")
check "--per-core: exits 0 with a row per core ($rows of $cores)" test "$rc" -eq 0 -a "$rows" -eq "$cores"
check "--per-core: the cores' getppid rows add up to 5000 ($gsum)" test "$gsum" -ge 5000 -a "$gsum" -le 5010
check "--per-core: the cores hold every CPU ($ucpus)" test "$ucpus" -eq "$(nproc)"
"$BPFPROF" stat -a --per-socket -e cpu-clock 0.5 >"$TMP/sock.out" 2>/dev/null
srows=$(grep -Ec '^S[0-9]+ +[0-9]+ +[0-9.,]+ msec cpu-clock' "$TMP/sock.out")
ssum=$(awk '$1 ~ /^S[0-9]+$/ && $5 == "cpu-clock" { s += $3 } END { print s + 0 }' "$TMP/sock.out")
el=$(awk '/seconds time elapsed/ { print $1 * 1000 }' "$TMP/sock.out")
check "--per-socket: a row per socket ($srows of $sockets)" test "$srows" -eq "$sockets"
check "--per-socket: cpu-clock adds up to CPUs x elapsed (within 2%)" within "$ssum" "$(awk -v a="$el" -v n="$(nproc)" 'BEGIN { print a * n }')" 0.02
"$BPFPROF" stat -a --per-core -I 200 -e cs 0.5 >"$TMP/corei.out" 2>/dev/null
check "--per-core -I: perf's heading with a cpus column" grep -q '^#           time core            cpus             counts unit events' "$TMP/corei.out"
expect_one_error "--per-core needs system-wide counting" "--per-core counts per core" -- stat --per-core -e cs -- true
expect_one_error "-A and --per-core together refused" "give one" -- stat -a -A --per-core -e cs 1

# 6. --by-comm on a fork storm of 200 /bin/true: one row, 200 exits, 200 processes.
"$BPFPROF" stat --by-comm -e sched:sched_process_exit,page-faults,task-clock \
	-- sh -c 'for i in $(seq 200); do /bin/true; done' 2>"$TMP/f.err"; rc=$?
check "--by-comm: exits 0" test "$rc" -eq 0
rows=$(grep -Ec '^ +true +[0-9,]+      sched:sched_process_exit' "$TMP/f.err")
check "--by-comm: one row for 'true' ($rows)" test "$rows" -eq 1
check "--by-comm: 200 exits of 200 processes" \
	grep -Eq '^ +true +200      sched:sched_process_exit +# +200 processes' "$TMP/f.err"
check "--by-comm: their page faults in the same single row" \
	test "$(grep -Ec '^ +true +[0-9,]+      page-faults +# +200 processes' "$TMP/f.err")" -eq 1
check "--by-comm: their task-clock too" \
	grep -Eq '^ +true +[0-9.]+ msec task-clock +# +200 processes' "$TMP/f.err"
for e in page-faults task-clock; do
	tot=$(value "$TMP/f.err" $e)
	sum=$(awk -v e=$e '$1 !~ /^[0-9.,]+$/ && ($3 == e || $4 == e) { v = $2; gsub(",", "", v); s += v }
		END { print s + 0 }' "$TMP/f.err")
	echo "# --by-comm $e: rows $sum, total $tot"
	# within 5%: an exiting task's last moments after perf_event_exit_task() (exit_notify, a
	# preemption there) are charged to its row and are in no perf total
	check "--by-comm: the $e rows add up to the total (within 5%)" within "$sum" "$tot" 0.05
done
# each CPU's idle task is its own row, named as the kernel names it (swapper/N, pid 0), and
# the rows of every task add up to the CPUs' time
"$BPFPROF" stat -a -P --top 100000 -e cpu-clock 1 >"$TMP/s.out" 2>/dev/null
idle=$(grep -Eo '^ +swapper/[0-9]+-0 ' "$TMP/s.out" | sort | uniq -c)
total=$(value "$TMP/s.out" cpu-clock)
rows=$(awk '$1 ~ /-[0-9]+$/ && $4 == "cpu-clock" { s += $2 } END { print s + 0 }' "$TMP/s.out")
echo "# -a -P cpu-clock: rows $rows msec, total $total msec; idle rows: $(echo $idle)"
check "-P -a: the processes' cpu-clock rows add up to the total (within 2%)" within "$rows" "$total" 0.02
if [ -z "$idle" ]; then
	skip "-P -a: an idle row per CPU" "no CPU was idle during the run (the machine is busy)"
else
	check "-P -a: idle rows are swapper/N-0, one per CPU at most" 		test -z "$(awk '$1 > 1' <<<"$idle")" -a "$(wc -l <<<"$idle")" -le "$(nproc)"
fi
"$BPFPROF" stat -P -e page-faults -- "$S" getppid 10 2>"$TMP/pp.err" >/dev/null
check "-P: the process's row, COMM-PID" grep -Eq '^ +syscalls-[0-9]+ +[0-9,]+      page-faults' "$TMP/pp.err"

# 7. -x , parses as CSV: perf's fields, each row.
"$BPFPROF" stat -x, -e task-clock,page-faults,cycles,sched:sched_process_exec -- true \
	2>"$TMP/x.csv"; rc=$?
check "-x ,: exits 0" test "$rc" -eq 0
if python3 - "$TMP/x.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
names = [r[2] for r in rows]
assert names == ["task-clock", "page-faults", "cycles", "sched:sched_process_exec"], names
for r in rows:
    assert len(r) == 7, r
    if r[0] not in ("<not supported>", "<not counted>"):
        float(r[0]); int(r[3]); float(r[4])
assert rows[0][1] == "msec" and rows[0][6] == "CPUs utilized", rows[0]
assert rows[2][0] in ("<not supported>",) or float(rows[2][0]) > 0, rows[2]
assert rows[3][0] == "1", rows[3]
EOF
then ok "-x ,: every row has perf's 7 fields, parsed by Python's csv"
else fail "-x ,: perf's CSV" "$(cat "$TMP/x.csv")"
fi

# 8. -r 3: means with perf's ( +- x.xx% ), and the elapsed mean +- its error.
"$BPFPROF" stat -r 3 -e task-clock,page-faults -- "$S" getppid 1000 2>"$TMP/r.err" >/dev/null; rc=$?
check "-r 3: exits 0" test "$rc" -eq 0
check "-r 3: the header says 3 runs" grep -q "(3 runs):" "$TMP/r.err"
check "-r 3: noise on the rows" grep -Eq 'task-clock .*\( \+- +[0-9.]+% \)' "$TMP/r.err"
check "-r 3: elapsed as mean +- error" grep -Eq '^ +[0-9.]+ \+- [0-9.]+ seconds time elapsed' "$TMP/r.err"
# -r with the event as a positional argument, as perf stat -r 2 EVENT: each run parses the
# command line afresh (the first parse once left it reordered, and '2' read as an event).
"$BPFPROF" stat -r 2 page-faults -- "$W" 0 300 0 0 2>"$TMP/r2.err" >/dev/null; rc=$?
check "-r 2 EVENT -- COMMAND: exits 0, two runs" test "$rc" -eq 0 -a -n "$(grep '(2 runs):' "$TMP/r2.err")"
check "-r 2 EVENT: the event's row, at least the 300 pages" test "$(value "$TMP/r2.err" page-faults)" -ge 300

# 9. Without a COMMAND the results go to stdout; -o FILE takes them.
# A sleeper keeps the window busy (~2000 switches a second): on a quiet machine 0.3 s held a
# few dozen, and the counter and the tracepoint starting a few ms apart was then more than 5%.
"$W" 3000 0 0 0 & sleeper=$!
"$BPFPROF" stat -a -e cs,sched:sched_switch 1 >"$TMP/o.out" 2>/dev/null
kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null
check "no COMMAND: results on stdout" grep -q "Performance counter stats for 'system wide'" "$TMP/o.out"
cs=$(value "$TMP/o.out" cs); sw=$(value "$TMP/o.out" sched:sched_switch)
echo "# -a 1 s beside a sleeper: cs $cs, sched:sched_switch $sw"
check "perf's cs and the sched_switch tracepoint agree system-wide (within 5%)" within "$cs" "$sw" 0.05

# 10. The default set system-wide without a PMU: an unsupported hardware event stops at its first
# CPU, and the other CPUs' slots once held no fd at all ("cannot read the cycles counter: Bad file
# descriptor", exit 1, no table).
"$BPFPROF" stat -a 0.3 >"$TMP/dflt.out" 2>"$TMP/dflt.err"; rc=$?
check "stat -a DURATION, the default set: exits 0" test "$rc" -eq 0
check "stat -a DURATION: no read error" test -z "$(grep 'cannot read' "$TMP/dflt.err")"
check "stat -a DURATION: the cpu-clock row of 2 CPUs' time" \
	test "$(value "$TMP/dflt.out" cpu-clock | cut -d. -f1)" -ge 250

# 11. Counts that cannot be written (a full disk) say so in one line, at the end and per interval
# (both once exited 1 without a word).
"$BPFPROF" stat -a -e cs -o /dev/full 0.2 >/dev/null 2>"$TMP/full.err"; rc=$?
check "-o /dev/full: exit 1, the file named" \
	test "$rc" -eq 1 -a "$(grep -c '^bpfprof: cannot write /dev/full: No space left on device' "$TMP/full.err")" -eq 1
"$BPFPROF" stat -a -e cs -I 100 -o /dev/full 0.3 >/dev/null 2>"$TMP/fulli.err"; rc=$?
check "-I 100 -o /dev/full: exit 1, the file named" \
	test "$rc" -eq 1 -a "$(grep -c '^bpfprof: cannot write /dev/full' "$TMP/fulli.err")" -eq 1
