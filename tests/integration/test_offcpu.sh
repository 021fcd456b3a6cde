#!/bin/bash
# bpfprof offcpu on a workload whose blocking is known (tests/workloads/blocker.c): real BPF on
# the real scheduler.
. "$(dirname "$0")/lib.sh"
need_root "offcpu integration" || exit 0

N=50 # sleeps of 20 ms
THREADS='^(blocker|pipereader|pipewriter|diskio);'
# What the blocker's N sleeps took by its own clock (it prints it at exit): more than N x 20 ms
# on a loaded machine, where each wake-up waits for a CPU, and off-CPU time counts that wait.
slept() { sed -n 's/^blocker: slept \([0-9]*\) us$/\1/p' "$1"; }

# 1. -- COMMAND: time under the sleeping function, user and kernel frames, all three waits.
"$BPFPROF" offcpu -f --annotate -- "$WL/blocker" $N >"$TMP/all.folded" 2>"$TMP/all.err"; rc=$?
check "offcpu -- COMMAND exits 0" test "$rc" -eq 0
sleep_us=$(folded_sum "$TMP/all.folded" '^blocker;.*main;sleeper;sleep_20ms;')
reader_us=$(folded_sum "$TMP/all.folded" '^pipereader;.*reader_loop;')
disk_us=$(folded_sum "$TMP/all.folded" '^diskio;.*disk_loop;')
echo "# sleep_20ms=${sleep_us}us (slept $(slept "$TMP/all.err")us by the blocker's clock, N x 20 ms = $((N * 20000))) pipereader=${reader_us}us diskio=${disk_us}us"
check "off-CPU time under sleep_20ms is the blocker's own sleep time within 10%" within "$sleep_us" "$(slept "$TMP/all.err")" 0.10
check "sleep stack names user and kernel frames (sleep_20ms ... do_nanosleep, schedule)" \
	grep -Eq '^blocker;.*sleeper;sleep_20ms;raw_syscall;.*do_nanosleep_\[k\];schedule_\[k\]' "$TMP/all.folded"
check "pipe reader blocked in the pipe read" grep -Eq '^pipereader;.*reader_loop;raw_syscall;.*pipe_read_\[k\]' "$TMP/all.folded"
check "disk thread waits for I/O" grep -Eq '^diskio;.*disk_loop;raw_syscall;.*io_schedule' "$TMP/all.folded"
check "no line for BPF glue frames" awk '/bpf_prog_|bpf_trace_run/ { bad = 1 } END { exit bad }' "$TMP/all.folded"
check "folded counts are whole microseconds" awk '$NF !~ /^[0-9]+$/ { bad = 1 } END { exit bad || NR == 0 }' "$TMP/all.folded"

# 2. --state D keeps the I/O wait and drops the sleeps.
"$BPFPROF" offcpu -f --state D -- "$WL/blocker" 25 >"$TMP/d.folded" 2>"$TMP/d.err"
check "--state D keeps the disk wait" grep -Eq '^diskio;.*disk_loop;.*io_schedule' "$TMP/d.folded"
check "--state D drops the nanosleeps" awk '/sleep_20ms|reader_loop/ { bad = 1 } END { exit bad }' "$TMP/d.folded"
"$BPFPROF" offcpu -f --state S -- "$WL/blocker" 25 >"$TMP/s.folded" 2>"$TMP/s.err"
check "--state S keeps the sleeps" grep -q 'sleep_20ms' "$TMP/s.folded"
check "--state S drops the disk wait" awk '/io_schedule/ { bad = 1 } END { exit bad }' "$TMP/s.folded"

# 3. -m drops blocks shorter than the bound, -M longer ones: the pipe reader waits ~10 ms, the
# sleeper 20 ms.
"$BPFPROF" offcpu -f -m 15000 -- "$WL/blocker" $N >"$TMP/m.folded" 2>"$TMP/m.err"
m_sleep=$(folded_sum "$TMP/m.folded" 'sleep_20ms;')
m_reader=$(folded_sum "$TMP/m.folded" '^pipereader;.*reader_loop;')
echo "# -m 15000: sleep_20ms=${m_sleep}us pipereader=${m_reader}us (unfiltered ${reader_us}us)"
check "-m 15000 keeps the 20 ms sleeps" within "$m_sleep" "$(slept "$TMP/m.err")" 0.10
check "-m 15000 drops the ~10 ms pipe waits" test "$m_reader" -lt $((reader_us / 5))
"$BPFPROF" offcpu -f -M 15000 -- "$WL/blocker" 25 >"$TMP/M.folded" 2>"$TMP/M.err"
check "-M 15000 drops every 20 ms sleep" awk '/sleep_20ms/ { bad = 1 } END { exit bad }' "$TMP/M.folded"
check "-M 15000 keeps the pipe waits" grep -q 'reader_loop' "$TMP/M.folded"

# 4. --waker: the pipe reader is woken by the writer thread (comm set with prctl), whose user
# and kernel stacks follow the "--" separator; timer wake-ups come from an interrupt.
"$BPFPROF" offcpu -f --waker -- "$WL/blocker" $N >"$TMP/w.folded" 2>"$TMP/w.err"
woken=$(awk -v re='^pipereader;.*reader_loop;.*;--;.*pipe_write;.*writer_loop;writer;.*pipewriter [0-9]+$' '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/w.folded")
w_reader=$(folded_sum "$TMP/w.folded" '^pipereader;.*reader_loop;')
echo "# --waker: pipereader woken by pipewriter ${woken}us of ${w_reader}us"
check "--waker attributes the pipe reader's wake-ups to the writer thread" \
	test "$woken" -gt 0 -a "$woken" -ge $((w_reader * 8 / 10))
check "--waker: nanosleep wake-ups come from the timer interrupt" \
	grep -Eq '^blocker;.*sleep_20ms;.*;--;try_to_wake_up;hrtimer_wakeup;.*\[interrupt\] [0-9]+$' "$TMP/w.folded"

# 5. Report (time in ms and percent, waker as a second level) and flame graph.
"$BPFPROF" offcpu --waker --svg "$TMP/oc.svg" -o "$TMP/oc.txt" -- "$WL/blocker" 25 2>"$TMP/r.err"; rc=$?
check "report run exits 0" test "$rc" -eq 0
check "report header names the event" grep -q "^# Event: 'sched_switch (off-CPU)'" "$TMP/oc.txt"
check "report has ms columns" grep -q "Children(ms).*Self(ms)" "$TMP/oc.txt"
check "report has a sleep_20ms row" grep -Eq "blocker +blocker +\[\.\] sleep_20ms" "$TMP/oc.txt"
check "report shows 'woken by pipewriter'" grep -q "woken by pipewriter" "$TMP/oc.txt"
if command -v xmllint >/dev/null; then
	check "--svg is valid XML" xmllint --noout "$TMP/oc.svg"
else
	skip "--svg is valid XML" "xmllint not installed"
fi
check "--svg is titled Off-CPU Time Flame Graph" grep -q "Off-CPU Time Flame Graph" "$TMP/oc.svg"
check "--svg names sleep_20ms" grep -q "sleep_20ms" "$TMP/oc.svg"

# 6. -p shows only that process; a process blocked for the whole run is counted from the start
# to the end of the run, never more than the run's wall time.
"$WL/blocker" 200 & target=$!
cp "$WL/blocker" "$TMP/otherblk"
"$TMP/otherblk" 200 & other=$!
sleep 30 & sleeper=$!
sleep 0.3
"$BPFPROF" offcpu -f -p $target 1.5 >"$TMP/p.folded" 2>"$TMP/p.err"; rc=$?
"$BPFPROF" offcpu -f -p $sleeper 1 >"$TMP/z.folded" 2>"$TMP/z.err"; rc2=$?
kill $target $other $sleeper 2>/dev/null; wait $target $other $sleeper 2>/dev/null
check "-p run exits 0" test "$rc" -eq 0
check "-p shows that process" grep -q 'sleep_20ms' "$TMP/p.folded"
check "-p shows only that process" awk -v re="$THREADS" '$0 !~ re { bad = 1 } END { exit bad || NR == 0 }' "$TMP/p.folded"
z=$(folded_sum "$TMP/z.folded" '^sleep;')
echo "# sleep 30 watched for 1 s: ${z}us off-CPU"
check "-p on a process blocked throughout: exit 0" test "$rc2" -eq 0
check "a block spanning the whole run is clipped to the run (~1 s)" within "$z" 1000000 0.05
check "a block that began before the run is marked" grep -q '^sleep;\[blocked before start\];' "$TMP/z.folded"

# 7. SIGINT mid-run still prints what was collected.
"$WL/blocker" 150 & busy=$!
"$BPFPROF" offcpu -f -p $busy >"$TMP/int.folded" 2>"$TMP/int.err" &
prof=$!
sleep 1.5
kill -INT $prof
wait $prof; rc=$?
kill $busy 2>/dev/null; wait $busy 2>/dev/null
check "SIGINT: exit 0" test "$rc" -eq 0
check "SIGINT: collected stacks printed" grep -q "sleep_20ms" "$TMP/int.folded"

# 8. -U / -K restrict the stacks, -u / -k the threads.
"$BPFPROF" offcpu -f -K --annotate -- "$WL/blocker" 10 >"$TMP/K.folded" 2>"$TMP/K.err"
check "-K: no user frames" awk '/sleep_20ms|reader_loop/ { bad = 1 } END { exit bad }' "$TMP/K.folded"
check "-K: kernel frames" grep -q 'do_nanosleep_\[k\]' "$TMP/K.folded"
"$BPFPROF" offcpu -f -U --annotate -- "$WL/blocker" 10 >"$TMP/U.folded" 2>"$TMP/U.err"
check "-U: no kernel frames" awk '/_\[k\]/ { bad = 1 } END { exit bad }' "$TMP/U.folded"
check "-U: user frames" grep -q 'sleep_20ms' "$TMP/U.folded"
"$BPFPROF" offcpu -f -k 1 >"$TMP/kt.folded" 2>&1
check "-k: kernel threads only" awk '/^(bash|sleep|bpfprof);/ { bad = 1 } END { exit bad || NR == 0 }' "$TMP/kt.folded"

# 9. The raw_tp fallback (kernels without tp_btf or task storage): per-thread records in a hash
# map; forced here on a kernel that has tp_btf.
BPFPROF_FORCE_RAW_TP=1 "$BPFPROF" offcpu -v -f --waker -- "$WL/blocker" $N >"$TMP/raw.folded" 2>"$TMP/raw.err"; rc=$?
check "raw_tp fallback: exit 0" test "$rc" -eq 0
check "raw_tp fallback: -v says so" grep -q "sched_switch: raw_tp" "$TMP/raw.err"
raw_sleep=$(folded_sum "$TMP/raw.folded" '^blocker;.*main;sleeper;sleep_20ms;')
echo "# raw_tp: sleep_20ms=${raw_sleep}us (slept $(slept "$TMP/raw.err")us)"
check "raw_tp fallback: time under sleep_20ms within 10% of the blocker's own" within "$raw_sleep" "$(slept "$TMP/raw.err")" 0.10
check "raw_tp fallback: pipe reader woken by the writer" \
	grep -Eq '^pipereader;.*reader_loop;.*;--;.*writer_loop;writer;.*pipewriter [0-9]+$' "$TMP/raw.folded"

# 10. -- COMMAND follows the processes the command forks.
"$BPFPROF" offcpu -f -- sh -c "$WL/blocker 10; true" >"$TMP/fork.folded" 2>"$TMP/fork.err"
check "-- COMMAND follows forked children" grep -q '^blocker;.*sleep_20ms' "$TMP/fork.folded"

# 11. Kernel stacks are walked in BPF from the kernel's ORC tables where it has them (x86-64):
# with BPFPROF_KSTACK_CHECK every walk is compared with bpf_get_stack()'s frames, at switches
# and wake-ups, under the blocker's sleeps, pipe and disk waits, two CPU-bound processes on one
# CPU (preempted by the timer interrupt: stacks through its register frame) and a system-wide
# run.
if [ "$(uname -m)" != x86_64 ] || ! grep -q ' __start_orc_unwind_ip$' /proc/kallsyms; then
	skip "kernel stacks walked from ORC tables" "no ORC tables in /proc/kallsyms (not x86-64, or another unwinder)"
else
	"$WL/blocker" 1000 & blk=$!
	taskset -c 0 "$WL/hotcold" 30 2>/dev/null & hot1=$!
	taskset -c 0 "$WL/hotcold" 30 2>/dev/null & hot2=$!
	BPFPROF_KSTACK_CHECK=1 "$BPFPROF" offcpu -a -v -f --waker --state any 2.5 >"$TMP/ks.folded" 2>"$TMP/ks.err"; rc=$?
	kill $blk $hot1 $hot2 2>/dev/null; wait $blk $hot1 $hot2 2>/dev/null
	line=$(grep -o 'kernel stacks: [0-9]* walked.*' "$TMP/ks.err")
	echo "# $line"
	walked=$(sed -n 's/^kernel stacks: \([0-9]*\) walked.*/\1/p' <<<"$line")
	checked=$(sed -n 's/.*; \([0-9]*\) walks compared.*/\1/p' <<<"$line")
	check "kernel-stack walk run exits 0" test "$rc" -eq 0
	check "kernel stacks walked from the ORC tables" test "${walked:-0}" -gt 1000
	check "every walk compared with bpf_get_stack() (BPFPROF_KSTACK_CHECK)" test "${checked:-0}" -ge "${walked:-1}"
	check "no walk differed from bpf_get_stack()" grep -q ', 0 differed;' <<<"$line"
	check "walked stacks: the blocker's sleep through do_nanosleep" \
		grep -Eq '^blocker;.*sleep_20ms;.*do_nanosleep;.*schedule' "$TMP/ks.folded"
	check "walked stacks: the waker's stacks" grep -Eq '^pipereader;.*reader_loop;.*;--;.*pipe_write;' "$TMP/ks.folded"
	check "walked stacks: a preemption through the timer interrupt's register frame" \
		grep -Eq '^hotcold;.*spin;asm_sysvec_apic_timer_interrupt;.*schedule' "$TMP/ks.folded"
fi
