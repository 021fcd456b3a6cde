#!/bin/bash
# The command core, tried with perf's habits: one grammar, one target model (-a, -p lists,
# --cgroup, -- COMMAND followed from its exec through any number of forks), a failed setup that
# never runs the command, and output paths checked before tracing, in every command.
. "$(dirname "$0")/lib.sh"

CMDS=(profile offcpu "count sys:getppid" "funclat sys:getppid" runqlat sched biolat)
S=$WL/syscalls

# ---- bad input: an unwritable output path is refused at once, naming it, before tracing ----
for c in "${CMDS[@]}"; do
	for p in /nonexistent-dir/out.txt /proc/x; do
		start=$(date +%s%N)
		out=$(timeout 10 "$BPFPROF" $c -o "$p" 1 2>&1); rc=$?
		ms=$(( ($(date +%s%N) - start) / 1000000 ))
		if [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
		   grep -q "^bpfprof: cannot write $p:" <<<"$out" && [ "$ms" -lt 1000 ]; then
			ok "${c%% *} -o $p: refused in $ms ms, one line naming it"
		else
			fail "${c%% *} -o $p: refused at once with one line" "rc $rc, $ms ms: $out"
		fi
	done
done
expect_one_error "runqlat --heatmap in a missing directory" "cannot write /nonexistent/x.svg" -- \
	runqlat --heatmap /nonexistent/x.svg 2 1
expect_one_error "profile --svg in a missing directory" "cannot write /nonexistent/x.svg" -- \
	profile --svg /nonexistent/x.svg 1
expect_one_error "an empty output file name" "-o needs a file name|--output needs a file name" -- profile -o '' 1
# two outputs into one file: the second rename silently replaced the report (exit 0)
rm -f "$TMP/same.out"
expect_one_error "-o and --svg into one file: refused, usage" "--svg and --output both write $TMP/same.out" -- \
	profile -o "$TMP/same.out" --svg "$TMP/same.out" 1
check "-o and --svg into one file: nothing written" test ! -e "$TMP/same.out"
out=$(timeout 10 "$BPFPROF" report -o "$TMP/same.out" --pprof "$TMP/same.out" "$ROOT/tests/fuzz/corpus/pprof/offcpu.pb.gz" 2>&1); rc=$?
check "report -o and --pprof into one file: exit 2, one line" \
	test "$rc" -eq 2 -a "$(grep -c 'both write' <<<"$out")" -eq 1

# ---- perf's spellings, and old ones refused with what to type instead ----
expect_one_error "--call-graph lbr refused" "use --call-graph fp or dwarf" -- profile --call-graph lbr 1
out=$("$BPFPROF" profile --call-graph-lim 1 1 2>&1); rc=$?
check "no abbreviation: --call-graph-lim is unknown, then the usage" \
	bash -c "[ $rc -eq 2 ] && head -n 1 <<<\"\$0\" | grep -q \"^bpfprof: unknown option '--call-graph-lim'\"" "$out"
expect_one_error "profile -I says where the idle task went" "--include-idle" -- profile -I 1
expect_one_error "offcpu --stack-storage-size (BCC's) points to --max-stacks" "is --max-stacks N here" \
	-- offcpu --stack-storage-size 1024 1
disk=$(ls /sys/block | grep -v '^loop\|^ram' | head -n 1)
if [ -n "$disk" ]; then
	expect_one_error "biolat -d DISK points to --disk" "biolat's disk is --disk $disk" -- biolat -d "$disk" 1 1
fi
expect_one_error "-i where a command prints no intervals" "option '-i' does not apply to sched" -- sched -i 1

need_root "core integration" || exit 0

# perf's habit: a COMMAND without "--" where the arguments are a DURATION (or INTERVAL): the first
# that is a program begins it, and the arguments after it are the command's (sh's -c, not ours).
"$BPFPROF" profile -F 499 -f "$WL/hotcold" 1 >"$TMP/nodash.f" 2>"$TMP/nodash.err"; rc=$?
check "profile PROGRAM ARGS without '--': exits 0, the program profiled" \
	test "$rc" -eq 0 -a "$(folded_sum "$TMP/nodash.f" '^hotcold;.*spin ')" -gt 50
"$BPFPROF" offcpu -f sh -c 'sleep 0.3' >"$TMP/nodash.o" 2>"$TMP/nodash.oerr"; rc=$?
check "offcpu sh -c '...' without '--': -c is sh's, the sleep is seen" \
	test "$rc" -eq 0 -a "$(folded_sum "$TMP/nodash.o" '^sleep;.*nanosleep')" -gt 250000
"$BPFPROF" runqlat 0.2 1 true >"$TMP/nodash.r" 2>&1; rc=$?
check "runqlat INTERVAL COUNT PROGRAM: the numbers stay the interval and count" \
	test "$rc" -eq 0 -a -n "$(grep -E '^count [0-9]+' "$TMP/nodash.r")"
expect_one_error "a word that is no program stays a bad DURATION" "invalid duration 'nosuchprog'" \
	-- profile nosuchprog

# ---- failed setup: the command never runs ----
# An unprivileged user cannot load BPF: every command fails with one line naming the missing
# privilege (not a tracepoint "library" not found, nor an unwinder to blame), and COMMAND is
# never run untraced.
PRIV="^bpfprof: loading BPF programs needs root or CAP_BPF\+CAP_PERFMON: this process has neither$"
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	mark=$(mktemp -d); chmod 777 "$mark"
	for c in "${CMDS[@]}" "count sched:sched_switch"; do
		setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
			"$BPFPROF" $c -- touch "$mark/ran" >"$TMP/unpriv.out" 2>&1; rc=$?
		check "$c as an unprivileged user: exits non-zero" test "$rc" -ne 0
		check "$c as an unprivileged user: one line naming the missing privilege" \
			test "$(grep -c '^bpfprof: ' "$TMP/unpriv.out")" -eq 1 -a \
			"$(grep -Ec "$PRIV" "$TMP/unpriv.out")" -eq 1
		check "$c as an unprivileged user: COMMAND never ran" test ! -e "$mark/ran"
	done
	rm -rf "$mark"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all,+bpf \
		--ambient-caps=+bpf "$BPFPROF" offcpu 1 2>&1)
	check "CAP_BPF without CAP_PERFMON: the one missing is named, in one line" \
		test "$out" = "bpfprof: loading BPF programs needs root or CAP_BPF+CAP_PERFMON: this process has no CAP_PERFMON"
else
	skip "failed setup never runs COMMAND" "needs setpriv and a 'nobody' user"
fi

# ---- a COMMAND is never left running: SIGTERM, SIGKILL 2 s later, at once on a second Ctrl-C ----
cat >"$TMP/stubborn" <<'EOF'
#!/bin/bash
# ignores Ctrl-C and SIGTERM
trap '' INT TERM
echo $$ >"$1"
while :; do sleep 0.05; done
EOF
cat >"$TMP/polite" <<'EOF'
#!/bin/bash
# ends on SIGTERM, saying so
trap 'echo term >"$1.term"; exit 0' TERM
echo $$ >"$1"
while :; do sleep 0.05; done
EOF
chmod +x "$TMP/stubborn" "$TMP/polite"
# end_command NAME SCRIPT SIGNALS...: bpfprof count -- SCRIPT, then each signal to bpfprof 0.2 s
# apart; $gone_ms: from the first signal until the command is gone, $rc: bpfprof's exit
end_command() {
	local name=$1 script=$2 bp pid i start; shift 2
	rm -f "$TMP/$name.pid"
	"$BPFPROF" count sys:getppid -- "$TMP/$script" "$TMP/$name.pid" >"$TMP/$name.out" 2>&1 &
	bp=$!
	if ! wait_for_line "$TMP/$name.pid" .; then
		gone_ms=-1 rc=-1
		kill -9 "$bp"
		return
	fi
	pid=$(cat "$TMP/$name.pid")
	start=$(date +%s%N)
	for sig; do
		kill -"$sig" "$bp"
		sleep 0.2
	done
	for ((i = 0; i < 250; i++)); do
		# gone, or dead and waiting for whoever reaps orphans here
		case $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) in ""|Z) break ;; esac
		sleep 0.02
	done
	gone_ms=$(( ($(date +%s%N) - start) / 1000000 ))
	kill -9 "$pid" 2>/dev/null
	{ wait "$bp"; rc=$?; } 2>/dev/null
	echo "# $name: the command gone $gone_ms ms after the first signal; bpfprof exit $rc"
}
end_command term polite INT
check "Ctrl-C: a COMMAND that handles SIGTERM gets it and ends at once" \
	test -e "$TMP/term.pid.term" -a "$gone_ms" -ge 0 -a "$gone_ms" -lt 1000 -a "$rc" -eq 0
end_command grace stubborn INT
check "Ctrl-C: a COMMAND that ignores SIGTERM is killed after the 2 s grace period" \
	test "$gone_ms" -ge 1900 -a "$gone_ms" -lt 3000 -a "$rc" -eq 0
check "... and the counts are still written" grep -q "sys:getppid" "$TMP/grace.out"
end_command twice stubborn INT INT
check "a second Ctrl-C: the COMMAND is killed at once" test "$gone_ms" -ge 0 -a "$gone_ms" -lt 1000
end_command abort stubborn KILL 2>/dev/null # not bash's "Killed"
check "bpfprof killed: its COMMAND dies with it" test "$gone_ms" -ge 0 -a "$gone_ms" -lt 1000

# ---- a command that cannot be run, found only at its exec: nothing left behind ----
printf '#!/nonexistent/interpreter\n' >"$TMP/bad.sh"; chmod +x "$TMP/bad.sh"
mkdir "$TMP/outs"
"$BPFPROF" biolat --events "$TMP/outs/ev.txt" --heatmap "$TMP/outs/h.svg" -o "$TMP/outs/o.txt" \
	-- "$TMP/bad.sh" >/dev/null 2>"$TMP/bad.err"; rc=$?
check "a COMMAND whose exec fails: non-zero exit" test "$rc" -ne 0
check "a COMMAND whose exec fails: says so" grep -q "^bpfprof: cannot run '$TMP/bad.sh'" "$TMP/bad.err"
check "a COMMAND whose exec fails: no output file, whole or partial, is left" \
	test -z "$(ls -A "$TMP/outs")"
"$BPFPROF" profile -o "$TMP/outs/p.txt" --svg "$TMP/outs/p.svg" -- "$TMP/bad.sh" >/dev/null 2>&1
check "profile, the same: nothing left" test -z "$(ls -A "$TMP/outs")"

# ---- an output that fails as it is written (a full disk) costs only itself ----
# Paths are checked before tracing (above); /dev/full is writable and then full.
"$BPFPROF" profile --svg /dev/full -o "$TMP/outs/full.txt" 1 >/dev/null 2>"$TMP/full.err"; rc=$?
check "--svg on a full disk: exit 1, one line naming it" \
	test "$rc" -eq 1 -a "$(cat "$TMP/full.err")" = "bpfprof: cannot write /dev/full: No space left on device"
check "--svg on a full disk: the -o report is still written" grep -q '^# Samples: ' "$TMP/outs/full.txt"
"$BPFPROF" offcpu --svg /dev/full 1 >"$TMP/full.stdout" 2>/dev/null; rc=$?
check "--svg on a full disk: the report still goes to stdout" \
	test "$rc" -eq 1 -a "$(grep -c '^# Total off-CPU time: ' "$TMP/full.stdout")" -eq 1
"$BPFPROF" runqlat --heatmap /dev/full --heatmap-data "$TMP/outs/h.tsv" -o "$TMP/outs/rq.txt" 1 1 \
	>/dev/null 2>&1; rc=$?
check "--heatmap on a full disk: exit 1, the histograms and the TSV still written" \
	test "$rc" -eq 1 -a -s "$TMP/outs/h.tsv" -a "$(grep -c 'usecs' "$TMP/outs/rq.txt")" -ge 1
# the other way round: a report that cannot be written costs only itself too
"$BPFPROF" profile --svg "$TMP/outs/f.svg" --pprof "$TMP/outs/f.pb.gz" -o /dev/full 1 >/dev/null \
	2>"$TMP/full.err"; rc=$?
check "-o on a full disk: exit 1, one line naming it, the --svg and --pprof files still written" \
	test "$rc" -eq 1 -a "$(cat "$TMP/full.err")" = "bpfprof: cannot write /dev/full: No space left on device" \
	-a -s "$TMP/outs/f.svg" -a -s "$TMP/outs/f.pb.gz"
# the reader gone before the report is written (true exits at once; the run lasts 1 s)
"$BPFPROF" profile --svg "$TMP/outs/p.svg" 1 2>"$TMP/pipe.err" | true
rc=${PIPESTATUS[0]}
check "the report into a pipe closed early (| head): exit 1, nothing said, the --svg still written" \
	test "$rc" -eq 1 -a ! -s "$TMP/pipe.err" -a -s "$TMP/outs/p.svg"
# a report larger than a pipe holds: its writer waits on the pipe until the reader goes
awk 'BEGIN { for (i = 0; i < 4000; i++) printf "main;caller_%d;callee_%d %d\n", i, i, i + 1 }' \
	>"$TMP/big.folded"
"$BPFPROF" report "$TMP/big.folded" --svg "$TMP/outs/r.svg" 2>"$TMP/pipe.err" | head -n 1 >/dev/null
rc=${PIPESTATUS[0]}
check "bpfprof report into a pipe closed early: exit 1, nothing said, the --svg still written" \
	test "$rc" -eq 1 -a ! -s "$TMP/pipe.err" -a -s "$TMP/outs/r.svg"
rm -f "$TMP"/outs/*

# ---- -a with -- COMMAND: all CPUs, for as long as the command runs ----
"$WL/hotcold" 4 >/dev/null 2>&1 &
hc=$!
sleep 0.2
# its CPU time over the run, in clock ticks (utime + stime): on a loaded machine it gets less
# than a CPU, and 99 Hz samples what it got
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(cpu_ticks "$hc")
"$BPFPROF" profile -F 99 -a -g -f -- sleep 2 >"$TMP/a.folded" 2>"$TMP/a.err"; rc=$?
t1=$(cpu_ticks "$hc")
check "profile -F 99 -a -g -- sleep 2: exits 0" test "$rc" -eq 0
n=$(folded_sum "$TMP/a.folded" '^hotcold;.*main;driver;hot_')
want=$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%d", t / hz * 99 }')
echo "# hotcold samples under -a -- sleep 2: $n, for its $((t1 - t0)) ticks of CPU ($want at 99 Hz)"
check "profile -a -- sleep 2 shows the CPU-bound workload (at least 70% of its CPU time's samples, 100+ quiet)" \
	test "$want" -gt 20 -a "$((n * 10))" -ge "$((want * 7))"

# ---- -p PID -- sleep 1: that process, for one second ----
"$BPFPROF" profile -p "$hc" -- sleep 1 >"$TMP/p.report" 2>&1; rc=$?
check "profile -p PID -- sleep 1: exits 0" test "$rc" -eq 0
d=$(awk '/^# Duration:/ { print $3 }' "$TMP/p.report")
check "profile -p PID -- sleep 1 lasts one second ($d s)" within "$d" 1 0.15
check "profile -p PID -- sleep 1: the PID's samples only" \
	awk '/^ +[0-9.]+% +[0-9.]+% / && $3 != "hotcold" { bad = 1 } END { exit bad }' "$TMP/p.report"
check "profile -p PID -- sleep 1: not sleep" bash -c "! grep -q ' sleep ' '$TMP/p.report'"
wait "$hc"

# ---- --cgroup: the workload in the cgroup, not the one beside it ----
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -n "$CGROOT" ] && mkdir "$CGROOT/bpfprof-test.$$" 2>/dev/null; then
	CG=$CGROOT/bpfprof-test.$$
	"$WL/hotcold" 8 >/dev/null 2>&1 &
	in=$!
	echo "$in" >"$CG/cgroup.procs"
	"$WL/hotcold_nofp" 8 >/dev/null 2>&1 &
	out=$!
	sleep 0.2
	"$BPFPROF" profile -F 499 --cgroup "$CG" -f 1 --pprof "$TMP/cg.pb.gz" >"$TMP/cg.folded" 2>&1
	if command -v go >/dev/null; then
		HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOPROXY=off go tool pprof -tags \
			"$TMP/cg.pb.gz" >"$TMP/cg.tags" 2>/dev/null
		check "profile --cgroup --pprof: every sample's cgroup label is the target (under the mount)" \
			grep -Eq "\( *100%\): ${CG#$CGROOT}\$" "$TMP/cg.tags"
	fi
	check "profile --cgroup: the workload inside" test "$(folded_sum "$TMP/cg.folded" '^hotcold;')" -ge 50
	check "profile --cgroup: not the one beside it" test "$(folded_sum "$TMP/cg.folded" '^hotcold_nofp;')" -eq 0
	check "profile --cgroup: nothing else" \
		test "$(folded_sum "$TMP/cg.folded" '^hotcold;')" -eq "$(folded_sum "$TMP/cg.folded" '.')"
	# both on one CPU: the cgroup's thread must wait in the run queue (on an idle 2-CPU
	# machine each would have a CPU to itself, and runqlat nothing to show)
	taskset -p -c 0 "$in" >/dev/null
	taskset -p -c 0 "$out" >/dev/null
	"$BPFPROF" runqlat --cgroup "${CG#$CGROOT/}" -L 0.5 1 >"$TMP/cg.rq" 2>&1
	check "runqlat --cgroup (relative to the mount): only the cgroup's thread" \
		bash -c "grep -q '^tid = $in hotcold' '$TMP/cg.rq' && ! grep -q '^tid = ' <(grep -v '^tid = $in ' '$TMP/cg.rq')"
	# long enough for a slow start (a clean clone's first runs); not waited for once measured
	kill "$in" "$out" 2>/dev/null
	wait "$in" "$out" 2>/dev/null
	# a process made to run inside it, and one outside, both calling getppid
	(echo $BASHPID >"$CG/cgroup.procs"; WL_WAIT_USR1=1 exec "$S" getppid 3000 >/dev/null) &
	in=$!
	WL_WAIT_USR1=1 "$S" getppid 5000 >/dev/null &
	out=$!
	"$BPFPROF" count --cgroup "$CG" -e sys:getppid >"$TMP/cg.count" 2>"$TMP/cg.err" &
	cnt=$!
	if wait_for_line "$TMP/cg.err" "^Counting" && wait_usr1_blocked "$in" && wait_usr1_blocked "$out"; then
		kill -USR1 "$in" "$out"
		wait "$in" "$out"
		kill -INT "$cnt"; wait "$cnt"
		check "count --cgroup: exactly the 3000 getppid calls made inside" \
			test "$(awk '$2 == "sys:getppid" { print $1 }' "$TMP/cg.count")" = 3000
	else
		fail "count --cgroup attaches" "$(cat "$TMP/cg.err")"
		kill "$in" "$out" "$cnt" 2>/dev/null
	fi
	rmdir "$CG"
	expect_one_error "--cgroup that is not a cgroup v2 directory" "'/tmp' is not a cgroup v2 directory" -- \
		profile --cgroup /tmp 1
else
	skip "--cgroup" "no cgroup v2 hierarchy to make a group in"
fi

# ---- -p lists in every command that took one PID ----
WL_WAIT_USR1=1 "$S" getppid 1000 >/dev/null &
a=$!
WL_WAIT_USR1=1 "$S" getppid 2000 >/dev/null &
b=$!
"$BPFPROF" count -p "$a,$b" sys:getppid >"$TMP/pl.count" 2>"$TMP/pl.err" &
c1=$!
"$BPFPROF" funclat -p "$a" -p "$b" -e sys:getppid >"$TMP/pl.lat" 2>"$TMP/pl.lerr" &
c2=$!
if wait_for_line "$TMP/pl.err" "^Counting" && wait_for_line "$TMP/pl.lerr" "^Timing" &&
   wait_usr1_blocked "$a" && wait_usr1_blocked "$b"; then
	kill -USR1 "$a" "$b"
	wait "$c1" "$c2"
	check "count -p A,B: both processes' calls" \
		test "$(awk '$2 == "sys:getppid" { print $1 }' "$TMP/pl.count")" = 3000
	check "funclat -p A -p B: both processes' calls" \
		test "$(awk '/^count / { print $2; exit }' "$TMP/pl.lat")" = 3000
else
	fail "count/funclat -p A,B attach" "$(cat "$TMP/pl.err" "$TMP/pl.lerr")"
	kill "$a" "$b" "$c1" "$c2" 2>/dev/null
fi

# ---- -p with the id of a thread that leads no process: its process, as perf record -p does ----
"$WL/runq" -b 2 3 >"$TMP/rq.out" &
rq=$!
if wait_for_line "$TMP/rq.out" '^ready'; then
	tid=$(grep -l '^rq-busy-0$' /proc/"$rq"/task/*/comm | cut -d/ -f5)
	"$BPFPROF" profile -p "$tid" 1 >"$TMP/ptid.report" 2>"$TMP/ptid.err"; rc=$?
	check "-p TID of a non-leader thread: accepted, with one line saying what it means" \
		test "$rc" -eq 0 -a "$(cat "$TMP/ptid.err")" = "bpfprof: $tid is a thread of process $rq: tracing the whole process, as perf does (-t $tid for that thread alone)"
	check "... and its whole process is profiled, not nothing" \
		awk '$3 == "rq-busy-0" { a = 1 } $3 == "rq-busy-1" { b = 1 } END { exit !(a && b) }' \
		"$TMP/ptid.report"
else
	fail "the runq workload starts" "$(cat "$TMP/rq.out")"
fi
kill "$rq" 2>/dev/null; wait "$rq" 2>/dev/null

# ---- DURATION everywhere, comma lists, -e ----
start=$(date +%s%N)
"$BPFPROF" count sched:sched_switch 1 >"$TMP/d.count" 2>&1; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "count EVENT 1: a one-second run ($ms ms)" test "$rc" -eq 0 -a "$ms" -ge 1000 -a "$ms" -lt 2500
check "count EVENT 1: the event counted" grep -Eq '^ +[0-9,]+      sched:sched_switch ' "$TMP/d.count"
"$BPFPROF" count -a sched:sched_switch,sched:sched_wakeup -d 0.5 -o "$TMP/o.count" >/dev/null 2>&1
check "count A,B -d -o: both events in the file" \
	test "$(grep -Ec '      sched:sched_(switch|wakeup) ' "$TMP/o.count")" -eq 2

# ---- -- COMMAND: followed through every fork, with no cap ----
N=5100
"$BPFPROF" count syscalls:sys_enter_execve sched:sched_process_exec -- \
	sh -c "i=0; while [ \$i -lt $N ]; do /bin/true; i=\$((i + 1)); done" >"$TMP/f.count" 2>&1
echo "# $(grep -E 'execve|process_exec' "$TMP/f.count" | tr -s ' ' | tr '\n' ';')"
check "-- COMMAND forking $N processes: every exec entered" \
	test "$(awk '$2 == "syscalls:sys_enter_execve" { print $1 }' "$TMP/f.count")" = "$N"
check "-- COMMAND forking $N processes: every exec done, the shell's own too" \
	test "$(awk '$2 == "sched:sched_process_exec" { print $1 }' "$TMP/f.count")" = "$((N + 1))"

# ---- -- COMMAND: nothing the command did before its exec (held at bpfprof's gate) ----
"$BPFPROF" offcpu -f -- sleep 0.3 >"$TMP/x.folded" 2>&1
check "offcpu -- COMMAND: its wait at the gate is not counted" \
	bash -c "! grep -q '^bpfprof;' '$TMP/x.folded'"
check "offcpu -- COMMAND: its sleep is" test "$(folded_sum "$TMP/x.folded" '^sleep;')" -ge 250000
EV=syscalls:sys_enter_read,syscalls:sys_enter_close,syscalls:sys_enter_rt_sigaction,syscalls:sys_enter_execve
"$BPFPROF" count -e "$EV" -- /bin/true >"$TMP/t.count" 2>&1
check "count -- COMMAND: not the gate's read and the exec that ends it" \
	test "$(awk '$2 == "syscalls:sys_enter_execve" { print $1 }' "$TMP/t.count")" = 0
if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_read -- /bin/true >/dev/null 2>&1; then
	perf stat -x, -e "$EV" -- /bin/true 2>"$TMP/t.perf" >/dev/null
	same=1
	for e in ${EV//,/ }; do
		ours=$(awk -v e="$e" '$2 == e { print $1 }' "$TMP/t.count")
		theirs=$(awk -F, -v e="$e" '$3 == e { print $1 }' "$TMP/t.perf")
		echo "# $e: bpfprof $ours, perf stat $theirs"
		[ "$ours" = "$theirs" ] || same=0
	done
	check "count -- /bin/true counts what perf stat -- /bin/true counts" test "$same" -eq 1
else
	skip "count -- /bin/true against perf stat" "perf cannot count tracepoints here"
fi

# ---- a zombie target: refused at once; one that becomes a zombie ends the run ----
# (a zombie keeps /proc/PID until its parent reaps it: profile -p ZOMBIE once ran until Ctrl-C
# with nothing to sample)
sh -c 'sleep 0.1 & exec sleep 30' & zparent=$!
sleep 0.5
zombie=$(pgrep -P "$zparent")
expect_one_error "-p a zombie: refused, said to have exited" "pid $zombie has exited \\(a zombie" \
	-- profile -p "$zombie"
kill "$zparent" 2>/dev/null; wait "$zparent" 2>/dev/null
for c in profile offcpu; do
	sh -c 'sleep 1 & exec sleep 30' & zparent=$!
	sleep 0.3
	target=$(pgrep -P "$zparent")
	timeout 20 "$BPFPROF" $c -p "$target" >/dev/null 2>&1; rc=$?
	check "$c -p PID: the run ends when PID becomes a zombie (exit $rc)" test "$rc" -eq 0
	kill "$zparent" 2>/dev/null; wait "$zparent" 2>/dev/null
done
# a leader that called pthread_exit() shows as a zombie while its threads run: still a target
python3 -c '
import threading, time, ctypes
def spin():
    t = time.time()
    while time.time() - t < 2: pass
threading.Thread(target=spin).start()
ctypes.CDLL(None).pthread_exit(None)' & leader=$!
sleep 0.5
timeout 20 "$BPFPROF" profile -p "$leader" -f >"$TMP/leader.folded" 2>/dev/null; rc=$?
wait "$leader" 2>/dev/null
check "-p a process whose leader exited: its threads' samples (exit $rc)" \
	test "$rc" -eq 0 -a "$(folded_sum "$TMP/leader.folded" .)" -ge 50

# ---- an output that fails as it is written (a full disk): one line naming the file, exit 1 ----
for c in "${CMDS[@]}"; do
	out=$(timeout 20 "$BPFPROF" $c -o /dev/full 0.3 2>&1 >/dev/null); rc=$?
	check "${c%% *} -o /dev/full: exit 1, one line naming /dev/full (rc $rc)" \
		test "$rc" -eq 1 -a "$(grep -c '^bpfprof: cannot write /dev/full: No space left on device' <<<"$out")" -eq 1
done
