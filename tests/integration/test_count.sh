#!/bin/bash
# bpfprof count and profile -e on workloads that make a known number of calls: real tracepoints,
# raw syscall tracepoints, uprobes, and the kernel-function paths where this kernel allows them.
. "$(dirname "$0")/lib.sh"

# event_count FILE EVENT: EVENT's total in perf stat's layout ("  12,345      EVENT   # ...");
# count is stat's other name, and with a COMMAND its results go to stderr, as perf stat's do
event_count() { awk -v e="$2" '$2 == e { v = $1; gsub(",", "", v); if (v ~ /^[0-9]+$/) { print v; exit } }' "$1"; }

"$BPFPROF" count --help >"$TMP/h" 2>&1; rc=$?
check "count --help exits 0 with usage" test "$rc" -eq 0 -a -n "$(grep 'Usage: bpfprof count' "$TMP/h")"
"$BPFPROF" count -I 1 sys:read >/dev/null 2>&1; rc=$?
check "count: -I below 10 ms exits 2" test "$rc" -eq 2

need_root "count integration" || exit 0
S=$WL/syscalls

# 1. -p PID: exactly the workload's getppid calls (it waits for SIGUSR1 until count attached).
WL_WAIT_USR1=1 "$S" getppid 12345 >/dev/null &
wl=$!
"$BPFPROF" count -p $wl syscalls:sys_enter_getppid >"$TMP/p.out" 2>"$TMP/p.err" &
c=$!
if wait_for_line "$TMP/p.err" "^Counting"; then
	kill -USR1 $wl
	wait $wl
	wait $c; rc=$?
	check "count -p exits 0 when the process ends" test "$rc" -eq 0
	n=$(event_count "$TMP/p.out" syscalls:sys_enter_getppid)
	echo "# getppid counted: $n"
	check "count -p: exactly 12345 sys_enter_getppid" test "$n" = 12345
	check "count prints the count in perf stat's layout" grep -Eq "^ +12,?345      syscalls:sys_enter_getppid" "$TMP/p.out"
else
	fail "count -p attaches" "$(cat "$TMP/p.err")"
	kill $wl $c 2>/dev/null
fi

# 2. Globs count several tracepoints at once: enter and exit of getppid, all get* syscalls.
"$BPFPROF" count 'syscalls:sys_e*_getppid' 'syscalls:sys_enter_get*' -o "$TMP/g.out" \
	-- "$S" getppid 5000 >/dev/null 2>"$TMP/g.err"; rc=$?
check "count glob -- COMMAND exits 0" test "$rc" -eq 0
check "glob says how many tracepoints match" grep -q "'syscalls:sys_e\*_getppid' matches 2 tracepoints" "$TMP/g.err"
check "glob: sys_enter_getppid 5000" test "$(event_count "$TMP/g.out" syscalls:sys_enter_getppid)" = 5000
check "glob: sys_exit_getppid 5000" test "$(event_count "$TMP/g.out" syscalls:sys_exit_getppid)" = 5000
check "glob: events without hits summarized" grep -q "more matched events had no hits" "$TMP/g.out"

# 3. Every syscall tracepoint at once (the raw sys_enter path), and plain perf tracepoints.
"$BPFPROF" count 'syscalls:sys_enter_*' syscalls:sys_exit_execve 'sched:sched_process_e*' \
	-o "$TMP/a.out" -- "$S" getppid 777 >/dev/null 2>"$TMP/a.err"; rc=$?
echo "# $(grep -o "'syscalls:sys_enter_\*' matches.*" "$TMP/a.err")"
check "all syscall tracepoints: exits 0" test "$rc" -eq 0
check "all syscall tracepoints: getppid exactly 777" test "$(event_count "$TMP/a.out" syscalls:sys_enter_getppid)" = 777
# as perf stat: the command is counted from its exec, which returns (sys_exit_execve) but did
# not enter (sys_enter_execve) inside the run
check "all syscall tracepoints: the command's exec returns once" test "$(event_count "$TMP/a.out" syscalls:sys_exit_execve)" = 1
check "all syscall tracepoints: nothing before the command's exec" test -z "$(event_count "$TMP/a.out" syscalls:sys_enter_execve)"
check "tracepoint sched_process_exec once" test "$(event_count "$TMP/a.out" sched:sched_process_exec)" = 1
check "tracepoint sched_process_exit once" test "$(event_count "$TMP/a.out" sched:sched_process_exit)" -ge 1

# 4. -- COMMAND follows its children, like perf stat.
# (the shell may call getppid itself: count it alone first)
"$BPFPROF" count sys:getppid -- sh -c "true; true" >"$TMP/c0.out" 2>&1
"$BPFPROF" count sys:getppid -- sh -c "$S getppid 100 >/dev/null; $S getppid 200 >/dev/null" \
	>"$TMP/c.out" 2>&1
base=$(event_count "$TMP/c0.out" sys:getppid)
check "-- COMMAND counts its children too (100 + 200 + the shell's $base)" \
	test "$(event_count "$TMP/c.out" sys:getppid)" = $((300 + base))

# 5. -I intervals and -P per process.
"$BPFPROF" count -I 100 -P sys:getppid -- "$S" getppid 200000 >"$TMP/i.out" 2>&1
check "-I: interval lines" test "$(grep -Ec '^ +[0-9]+\.[0-9]{9} +[0-9,]+      sys:getppid' "$TMP/i.out")" -ge 1
check "-I: intervals add up to the total" test "$(awk '$3 == "sys:getppid" && $1 ~ /\./ { gsub(",", "", $2); s += $2 } END { print s }' "$TMP/i.out")" = 200000
check "-P: the workload's row" grep -Eq "^ +syscalls-[0-9]+ +200,?000      sys:getppid" "$TMP/i.out"

# 6. Uprobes count exactly.
"$BPFPROF" count "$WL/funcs:fast_op" "$WL/libfuncs.so:lib_fast_op" -- "$WL/funcs" calls 2 321 \
	>"$TMP/u.out" 2>&1
check "uprobe count: fast_op 321" test "$(event_count "$TMP/u.out" funcs:fast_op)" = 321
check "uprobe count: lib_fast_op 321" test "$(event_count "$TMP/u.out" libfuncs.so:lib_fast_op)" = 321

# 7. Kernel functions: fentry, else kprobes, else one clear line.
if "$BPFPROF" count k:__x64_sys_getppid -o "$TMP/k.out" -- "$S" getppid 1000 2>"$TMP/k.err"; then
	check "kernel function counted" test "$(event_count "$TMP/k.out" __x64_sys_getppid)" = 1000
else
	why=$(grep "^bpfprof: cannot trace kernel function" "$TMP/k.err")
	check "kernel function: one clear line when neither fentry nor kprobes work" \
		grep -Eq "cannot trace kernel function '__x64_sys_getppid': .*fentry.*kprobes" <<<"$why"
	skip "kernel function count" "${why#bpfprof: }"
fi

# 8. profile -e: every hit a sample, with the workload's function calling getppid in the stack.
"$BPFPROF" profile -e t:syscalls:sys_enter_getppid -f -- "$S" getppid 50000 >"$TMP/pe.folded" 2>&1
n=$(folded_sum "$TMP/pe.folded" '^syscalls;.*main;call_getppid;')
echo "# profile -e samples under call_getppid: $n"
check "profile -e tracepoint: 50000 samples under main;call_getppid" test "$n" = 50000
check "profile -e: stacks end at the syscall entry, not in BPF glue" \
	awk '/bpf_prog_|bpf_trace_run/ { bad = 1 } END { exit bad }' "$TMP/pe.folded"
"$BPFPROF" profile -e "$WL/funcs:fast_op" -f -- "$WL/funcs" calls 20 4000 >"$TMP/pu.folded" 2>&1
check "profile -e uprobe: 4000 samples in main;fast_op" \
	test "$(folded_sum "$TMP/pu.folded" '^funcs;.*main;fast_op ')" = 4000
"$BPFPROF" profile -e sched:sched_process_exec -f -- /bin/true >"$TMP/px.folded" 2>&1
check "profile -e sched:sched_process_exec: one sample in execve" \
	test "$(folded_sum "$TMP/px.folded" '^true;.*execve')" = 1
"$BPFPROF" profile -e sys:getppid -o "$TMP/pe.report" -- "$S" getppid 20000 >/dev/null 2>&1
check "profile -e report names the event" grep -q "^# Samples: 20000 of event 'sys:getppid'" "$TMP/pe.report"

# 9. Bad input.
expect_one_error "missing tracepoint, with near matches" "no tracepoint named 'syscalls:sys_enter_getppidd'; did you mean: sys_enter_getppid" \
	-- count syscalls:sys_enter_getppidd
expect_one_error "missing tracepoint category or library" "no tracepoint category, and library 'schedd' not found.*did you mean: sched" \
	-- count schedd:sched_switch
expect_one_error "glob matching no tracepoint" "no tracepoint matches 'block:zzz\*'" -- count 'block:zzz*'
expect_one_error "glob matching no category" "no tracepoint category matches 'zzz\*'" -- count 't:zzz*:x'
expect_one_error "missing function in a library" "function 'nosuchfunc' not found in '.*libc" -- count c:nosuchfunc
expect_one_error "missing kernel function" "kernel function 'vfs_reaad' not found; did you mean: vfs_read" -- count k:vfs_reaad
expect_one_error "bad prefix" "unknown prefix 'x:' in 'x:a:b'" -- count x:a:b
expect_one_error "incomplete tracepoint spec" "'t:sched' needs t:CATEGORY:NAME" -- count t:sched
expect_one_error "an unknown event in a list is named" "unknown event 'context-switch'; did you mean: context-switches" -- count -e cs,context-switch
expect_one_error "profile -e missing tracepoint" "no tracepoint named 'sched:nosuch'" -- profile -e sched:nosuch 1
