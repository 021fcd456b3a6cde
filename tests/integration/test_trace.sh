#!/bin/bash
# bpfprof trace: one line per event.  Syscalls in perf trace's layout on a workload that opens a
# known path a known number of times (tests/workloads/opener): the path, read in the kernel, and
# the descriptor the workload itself reports; failures with their errno; -g's stacks through the
# workload's functions; -s's per-process counts against bpfprof stat's for the same syscalls on
# the same deterministic command, and against what the workload did.  Tracepoints in perf
# script's layout with their fields.  Bad input: one line, exit 2.
. "$(dirname "$0")/lib.sh"

# expect_exit2 NAME MESSAGE-REGEX -- ARGS...: exit status 2 and a first line "bpfprof: ..."
expect_exit2() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 30 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit status $rc for: bpfprof $* ($out)"
	elif ! head -n 1 <<<"$out" | grep -Eq "^bpfprof: .*$msg"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}

expect_exit2 "trace: -s on a tracepoint" "-s summarizes syscalls" -- trace -s sched:sched_switch
expect_exit2 "trace: -s with -g" "-g has no events" -- trace -s -g
# perf trace's spellings of a syscall are sys:NAME's lines
for spelling in openat syscalls:sys_enter_openat 'syscalls:sys_exit_opena*'; do
	"$BPFPROF" trace "$spelling" -- cat /etc/hostname >/dev/null 2>"$TMP/spell.err"
	check "trace $spelling: perf trace's openat lines" \
		grep -Eq '\): cat/[0-9]+ openat\(dfd: CWD, filename: "/etc/hostname"(, flags: [A-Z|]+)?\) += 3$' "$TMP/spell.err"
done
expect_exit2 "trace: --buffer-size 0" "invalid --buffer-size" -- trace --buffer-size 0 sys:openat
expect_one_error "trace: unknown syscall" "no syscall named 'nosuchcall'" -- trace sys:nosuchcall 1
expect_one_error "trace: unknown tracepoint" "sched_nosuch" -- trace sched:sched_nosuch 1
expect_exit2 "trace --filter: unknown field, naming those that exist" \
	"unknown field 'bogus'; the event's fields: dfd, filename, flags" -- trace --filter 'bogus == 1' sys:openat 1
expect_exit2 "trace --filter: unbalanced parentheses" "unbalanced parentheses" -- trace --filter '(pid == 1' sys:openat 1
expect_exit2 "trace --filter: a string compared with <" "is a string" -- trace --filter 'filename < 3' sys:openat 1
"$BPFPROF" trace --help >"$TMP/help" 2>&1
check "trace --help exits 0 with usage" grep -q "Usage: bpfprof trace" "$TMP/help"
check "bpfprof help lists trace" bash -c "'$BPFPROF' help | grep -q '^  trace '"

need_root "trace" || exit 0

# ---- sys:openat -p PID: the path and the descriptor the workload got ----
path=$TMP/known-file
"$WL/opener" "$path" 400 0 10 >"$TMP/wl.out" &
wait_for_line "$TMP/wl.out" '^fd ' || fail "trace: opener starts"
wpid=$(awk '/^ready/ { print $2 }' "$TMP/wl.out")
wfd=$(awk '/^fd/ { print $2 }' "$TMP/wl.out")
"$BPFPROF" trace sys:openat -p "$wpid" 1 >"$TMP/open.txt" 2>"$TMP/open.err"
line=$(grep -F "filename: \"$path\"" "$TMP/open.txt" | head -n 1)
check "trace sys:openat -p: the path, read in the kernel" test -n "$line"
check "trace sys:openat -p: perf trace's layout" grep -Eq \
	"^ +[0-9]+\.[0-9]{3} \( *[0-9]+\.[0-9]{3} ms\): opener/$wpid openat\(dfd: CWD, filename: \"$path\", flags: RDONLY\|CLOEXEC\) += $wfd\$" \
	"$TMP/open.txt"
check "trace sys:openat -p: only the workload" test -z "$(grep -v -e "opener/$wpid " -e '^Tracing' "$TMP/open.txt")"
# about 100 opens a second: at least 50 in the second traced
check "trace sys:openat -p: one line per call (>= 50 in 1 s)" test "$(wc -l <"$TMP/open.txt")" -ge 50
check "trace: events counted and drops shown" grep -Eq '^bpfprof: [0-9]+ events printed, 0 dropped$' "$TMP/open.err"

# ---- no event: every syscall, as perf trace -- COMMAND (strace's view) ----
"$BPFPROF" trace -- "$WL/opener" "$path" 2 0 0 >"$TMP/all.txt" 2>"$TMP/all.err"; rc=$?
check "trace -- COMMAND with no event: exit 0, every syscall (openat, mmap, write among them)" \
	test "$rc" -eq 0 -a "$(grep -c "opener/[0-9]* openat(dfd: CWD, filename: \"$path\"" "$TMP/all.err")" -ge 2 \
	-a "$(grep -c ' mmap(' "$TMP/all.err")" -ge 1 -a "$(grep -c ' write(fd: 1' "$TMP/all.err")" -ge 1
check "trace: the call that does not return has its line, last (exit_group(...) = ?)" \
	sh -c "grep 'opener/' '$TMP/all.err' | tail -n 1 | grep -Eq '^ +[0-9.]+ \(         \): opener/[0-9]+ exit_group\(.*\) += \?\$'"
check "trace with no event: mmap's arguments named as perf trace names them" \
	grep -Eq ' mmap\(len: [0-9]+, prot: READ(\|WRITE)?, flags: PRIVATE\|ANONYMOUS, fd: -1\)' "$TMP/all.err"

# ---- -g: the stack of each call goes through the workload's functions ----
"$BPFPROF" trace -g sys:openat -p "$wpid" 0.5 >"$TMP/g.txt" 2>&1
check "trace -g: kernel frames under the line" grep -Eq '^	 *[0-9a-f]+ .*do_syscall_64.* \(\[kernel.kallsyms\]\)$' "$TMP/g.txt"
check "trace -g: user frames name open_known and main" \
	bash -c "grep -Eq '^	 *[0-9a-f]+ open_known .*opener\)$' '$TMP/g.txt' && grep -Eq '^	 *[0-9a-f]+ main .*opener\)$' '$TMP/g.txt'"
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null

# ---- failures: errno names as perf trace prints them ----
"$BPFPROF" trace sys:openat -- "$WL/opener" "$path" 0 3 1 >"$TMP/fail.txt" 2>&1
check "trace: a failed call's errno, 3 times" test "$(grep -cF "filename: \"$path.missing\", flags: RDONLY|CLOEXEC) = -1 ENOENT (No such file or directory)" "$TMP/fail.txt")" -eq 3

# ---- a name in a page the process never touched: unreadable at the entry, read at the exit ----
WL_COLD_PATH=1 "$BPFPROF" trace sys:openat -- "$WL/opener" "$path" 20 0 1 >"$TMP/cold.txt" 2>&1
check "trace: a path in a page not yet faulted in is still printed (20 of 20)" \
	test "$(grep -cF "filename: \"$path\", flags: RDONLY|CLOEXEC) = " "$TMP/cold.txt")" -eq 20

# ---- -s against stat for the same syscalls on the same (deterministic) command ----
# The workload opens PATH 20 times (each closed) and a missing file 7 times: openat calls counted
# by stat (the command's, from its exec, as perf stat counts) and by trace -s (its process's row)
# agree exactly, errors are the 7 failures (and the dynamic loader's, which fail in both alike).
"$BPFPROF" stat -x, -e sys:openat,sys:close,sys:read -- "$WL/opener" "$path" 20 7 1 \
	>/dev/null 2>"$TMP/stat.csv"
"$BPFPROF" trace -s sys:openat sys:close sys:read -- "$WL/opener" "$path" 20 7 1 >"$TMP/sum.txt" 2>&1
# as perf trace: beside a COMMAND, the summary goes to stderr, not into the command's stdout
"$BPFPROF" trace -s sys:openat -- "$WL/opener" "$path" 2 0 1 >"$TMP/sumout.txt" 2>"$TMP/sumerr.txt"
check "trace -s -- COMMAND: the summary on stderr, not mixed with the command's stdout" \
	test -n "$(grep -E '^ +opener \([0-9]+\), [0-9]+ events' "$TMP/sumerr.txt")" -a \
	-z "$(grep 'Summary of events' "$TMP/sumout.txt")"
for sc in openat close read; do
	s=$(awk -F, -v e="sys:$sc" '$3 == e { print $1 }' "$TMP/stat.csv")
	t=$(awk -v s="$sc" '$1 == s { print $2 }' "$TMP/sum.txt")
	check "trace -s: $sc calls = stat's ($t vs $s)" test -n "$s" -a "$s" = "${t:-x}"
done
check "trace -s: perf trace -s's header and process line" \
	bash -c "grep -Eq '^ opener \([0-9]+\), [0-9]+ events, [0-9.]+%$' '$TMP/sum.txt' &&
		 grep -q '^   syscall            calls  errors  total       min       avg       max       stddev$' '$TMP/sum.txt'"
oc=$(awk '$1 == "openat" { print $2 }' "$TMP/sum.txt")
oe=$(awk '$1 == "openat" { print $3 }' "$TMP/sum.txt")
check "trace -s: openat calls include the workload's 27 ($oc)" test "${oc:-0}" -ge 27
check "trace -s: openat errors include the 7 failures ($oe)" test "${oe:-0}" -ge 7
ldfail=$(grep -c '= -1 ' "$TMP/fail.txt"); ldfail=$((ldfail - 3))
check "trace -s: openat errors = 7 + the loader's failures ($oe vs $((7 + ldfail)))" \
	test "${oe:-x}" = "$((7 + ldfail))"
check "trace -s: min <= avg <= max, total = calls x avg" awk '
	$1 == "openat" { ok = ($4 + 0 > 0 && $5 <= $6 && $6 <= $7 && ($4 - $2 * $6) ^ 2 < (0.001 * $2) ^ 2 + 1e-6); exit !ok }' "$TMP/sum.txt"

# ---- --filter, in the kernel: on a syscall's string argument, on -s, on a tracepoint ----
"$BPFPROF" trace --filter 'filename ~ "*.missing"' sys:openat -o "$TMP/f.txt" -- "$WL/opener" "$path" 4 3 1 2>"$TMP/f.err"
check "trace --filter on a string argument: exactly the 3 matching calls" \
	test "$(grep -c 'openat(' "$TMP/f.txt")" -eq 3 -a "$(grep -c "filename: \"$path.missing\"" "$TMP/f.txt")" -eq 3
"$BPFPROF" trace -s --filter 'filename ~ "*.missing"' sys:openat -- "$WL/opener" "$path" 4 5 1 >"$TMP/fs.txt" 2>&1
check "trace -s --filter: 5 calls, 5 errors" awk '$1 == "openat" { found = 1; exit !($2 == 5 && $3 == 5) } END { exit !found }' "$TMP/fs.txt"
"$BPFPROF" trace --filter 'comm == "opener" && group_dead == 1' sched:sched_process_exit -- "$WL/opener" "$path" 1 0 1 >"$TMP/ft.txt" 2>&1
check "trace --filter on tracepoint fields: the command's exit only" \
	test "$(grep -c 'sched:sched_process_exit: ' "$TMP/ft.txt")" -eq 1 -a "$(grep -c 'comm=opener .*group_dead=1' "$TMP/ft.txt")" -eq 1

# ---- tracepoints: perf script's layout and the event's fields ----
"$BPFPROF" trace sched:sched_process_exec sched:sched_process_exit -- "$WL/opener" "$path" 1 0 1 >"$TMP/tp.txt" 2>&1
cpid=$(awk '/^ready/ { print $2 }' "$TMP/tp.txt")
check "trace CAT:NAME: sched_process_exec's filename, pid and old_pid fields" grep -Eq \
	"^ +opener +$cpid \[[0-9]{3}\] +[0-9]+\.[0-9]{6}: sched:sched_process_exec: filename=$WL/opener pid=$cpid old_pid=$cpid\$" "$TMP/tp.txt"
check "trace CAT:NAME: sched_process_exit's comm and pid fields" grep -Eq \
	"sched:sched_process_exit: comm=opener pid=$cpid prio=[0-9]+" "$TMP/tp.txt"
# a kernel function pointer field, symbolized: timer_start's function
"$BPFPROF" trace timer:hrtimer_start -- sleep 0.05 >"$TMP/timer.txt" 2>&1
check "trace: a kernel function pointer field named (hrtimer_start function=hrtimer_wakeup)" \
	grep -q "timer:hrtimer_start: .*function=hrtimer_wakeup" "$TMP/timer.txt"

# ---- functions, event by event (perf probe's events in perf script's layout) ----
FW=$WL/fieldwork
"$BPFPROF" trace "u:$FW:work" -o "$TMP/fn.txt" -- "$FW" 0 2>"$TMP/fn.err"
check "trace u:BIN:FUNC: a line per call, arg0=0x7 x100 and 0x9 x50 (x64 by default)" \
	test "$(grep -Ec '^ +fieldwork +[0-9]+ \[[0-9]{3}\] +[0-9]+\.[0-9]{6}: fieldwork:work: arg0=0x7 arg1=' "$TMP/fn.txt")" = 100 \
	-a "$(grep -c 'fieldwork:work: arg0=0x9 ' "$TMP/fn.txt")" = 50
"$BPFPROF" trace "u:$FW:work%return" --fields retval:s32 -o "$TMP/fr.txt" -- "$FW" 0 2>"$TMP/fn.err"
check "trace u:BIN:FUNC%return --fields retval:s32: retval=71 x100, 91 x50" \
	test "$(grep -c 'fieldwork:work%return: retval=71$' "$TMP/fr.txt")" = 100 \
	-a "$(grep -c 'fieldwork:work%return: retval=91$' "$TMP/fr.txt")" = 50
"$BPFPROF" trace "u:$FW:work" --fields arg0:u32 --filter 'arg0 == 9' -o "$TMP/ff.txt" -- "$FW" 0 2>"$TMP/fn.err"
check "trace u:BIN:FUNC --filter 'arg0 == 9' --fields arg0:u32: 50 lines, arg0=9 each" \
	test "$(grep -c 'fieldwork:work: arg0=9$' "$TMP/ff.txt")" = 50 -a "$(grep -c 'fieldwork:work:' "$TMP/ff.txt")" = 50
"$BPFPROF" trace c:getenv --fields arg0:string -o "$TMP/fs.txt" -- ls /nonexist 2>"$TMP/fn.err"
check "trace c:getenv --fields arg0:string: the name read in the kernel (ls asks QUOTING_STYLE)" \
	grep -Eq ' +ls +[0-9]+ .*libc.so.6:getenv: arg0="QUOTING_STYLE"$' "$TMP/fs.txt"
out=$("$BPFPROF" trace k:vfs_read -a 0.5 2>&1 >/dev/null); rc=$?
if [ "$rc" = 0 ]; then
	ok "trace k:FUNC"
elif [ "$(wc -l <<<"$out")" = 1 ] && grep -q "^bpfprof: cannot trace kernel function 'vfs_read'" <<<"$out"; then
	skip "trace k:FUNC" "$(sed 's/^bpfprof: //' <<<"$out")"
else
	fail "trace k:FUNC" "exit $rc: $out"
fi
expect_exit2 "trace --fields on an unknown field names the fields" "has no field 'nope'; its fields: arg0" \
	-- trace "u:$FW:work" --fields nope 1
expect_exit2 "trace --fields with more strings than the kernel reads" "at most 2 strings" \
	-- trace "u:$FW:work" --fields arg0:string,arg1:string,arg2:string 1

# ---- --filter on a syscall's ret, decided at its exit ----
"$BPFPROF" trace sys:openat --filter 'ret < 0' -o "$TMP/fret.txt" -- cat /etc/hostname /nonexist/f 2>"$TMP/fn.err"
check "trace sys:openat --filter 'ret < 0': the failed open, not the good one, every line failed" \
	test "$(grep -c 'filename: "/nonexist/f") *= -1 ENOENT' "$TMP/fret.txt")" = 1 \
	-a "$(grep -c '"/etc/hostname"' "$TMP/fret.txt")" = 0 \
	-a "$(grep 'openat(' "$TMP/fret.txt" | grep -vc '= -1 ')" = 0

# ---- a closed output ends the run (not a success, not a hang), without a word as perf trace
# | head does: the reader left on purpose ----
timeout 30 "$BPFPROF" trace sched:sched_switch -a 2>"$TMP/pipe.err" | head -n 2 >/dev/null
rc=${PIPESTATUS[0]}
check "trace into a closed pipe: exit 1, nothing said ($rc)" test "$rc" -eq 1 -a ! -s "$TMP/pipe.err"
"$BPFPROF" trace sched:sched_switch -a -o /dev/full 2>"$TMP/full.err"; rc=$?
check "trace into a full disk: exit 1, one line ($rc)" \
	test "$rc" -eq 1 -a "$(cat "$TMP/full.err")" = "bpfprof: cannot write /dev/full: No space left on device"
exit 0
