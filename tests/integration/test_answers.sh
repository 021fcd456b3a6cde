#!/bin/bash
# Answers that hold at the edges: events in any task counted, per event; losses shown; globs
# over syscalls; and the defects the code reading found, each shown where a test can show it.
. "$(dirname "$0")/lib.sh"

need_root "answers integration" || exit 0
S=$WL/syscalls

# ---- offcpu --waker keeps [blocked before start] ----
# A sleep that began before the run and ends inside it: its block is counted from the start,
# and the waker (the timer interrupt) is recorded too; the waker must not erase the mark.
sleep 1.2 &
sl=$!
sleep 0.2
"$BPFPROF" offcpu -f --waker -p "$sl" 3 >"$TMP/w.folded" 2>"$TMP/w.err"
check "offcpu --waker: a block from before the run keeps its mark" \
	grep -q '^sleep;\[blocked before start\];.*;--;' "$TMP/w.folded"

# ---- the frame-pointer walk needs bpf_task_pt_regs() (5.15+): gated like the table walk ----
# On a kernel without the helper (5.11-5.14 have tp_btf and task storage), a program calling it
# does not load; the loaded program must not contain the call when the feature is absent.
switch_prog() { bpftool prog show 2>/dev/null | awk '/ name switch_btf / { id = $1 } END { sub(":", "", id); print id }'; }
# the previous run's programs are freed a moment after it exits: not those
for i in $(seq 100); do [ -z "$(switch_prog)" ] && break; sleep 0.05; done
BPFPROF_NO_TASK_PT_REGS=1 "$BPFPROF" offcpu -U --unwind fp -f 3 >/dev/null 2>&1 &
oc=$!
id=
for i in $(seq 100); do
	id=$(switch_prog)
	[ -n "$id" ] && break
	sleep 0.05
done
if [ -n "$id" ] && bpftool prog dump xlated id "$id" >"$TMP/x.insns" 2>/dev/null && [ -s "$TMP/x.insns" ]; then
	check "offcpu --unwind fp without bpf_task_pt_regs(): the helper is not called" \
		bash -c "! grep -q bpf_task_pt_regs '$TMP/x.insns'"
	check "... while the kernel's own walk (bpf_get_stack) is" grep -q bpf_get_stack "$TMP/x.insns"
else
	skip "offcpu without bpf_task_pt_regs()" "no tp_btf switch program here"
fi
kill -INT "$oc" 2>/dev/null; wait "$oc"

# ---- globs over syscalls: sys:* in count and funclat ----
"$BPFPROF" count 'sys:*' -o "$TMP/s.count" -- "$S" getppid 4321 >/dev/null 2>"$TMP/s.err"; rc=$?
check "count 'sys:*': exits 0" test "$rc" -eq 0
check "count 'sys:*': says how many syscalls matched" grep -Eq "'sys:\*' matches [0-9]+ syscalls" "$TMP/s.err"
check "count 'sys:*': getppid exactly 4321" \
	test "$(awk '$2 == "sys:getppid" { print $1 }' "$TMP/s.count")" = 4321
"$BPFPROF" funclat -n 'sys:getpp*' -- "$S" getppid 1234 >"$TMP/s.lat" 2>&1; rc=$?
check "funclat 'sys:getpp*': every getppid timed" \
	test "$rc" -eq 0 -a "$(awk '/^count / { print $2; exit }' "$TMP/s.lat")" = 1234

# ---- events in the idle task are counted: profile -e and count agree, and with perf stat ----
# hrtimer_expire_entry mostly fires in the idle task, from the interrupt that wakes an idle CPU
# for a sleeper's timer; profile used to drop those hits as it drops idle timer samples.
EV=timer:hrtimer_expire_entry
have_perf=0
command -v perf >/dev/null && perf stat -a -e $EV -- true >/dev/null 2>&1 && have_perf=1
# The sleeper outlasts the three 2 s windows, which start at slightly different times: each
# sees the same steady rate.
(for i in $(seq 400); do sleep 0.01; done) &
loop=$!
sleep 0.3
"$BPFPROF" count -a -e $EV -- sleep 2 >"$TMP/i.count" 2>&1 &
c1=$!
"$BPFPROF" profile -a -f -e $EV -- sleep 2 >"$TMP/i.folded" 2>&1 &
c2=$!
if [ "$have_perf" = 1 ]; then
	perf stat -a -x, -e $EV -- sleep 2 2>"$TMP/i.perf" >/dev/null &
	c3=$!
fi
wait $c1 $c2 ${c3:-}
kill $loop 2>/dev/null
wait
nc=$(awk -v e=$EV '$2 == e { print $1 }' "$TMP/i.count")
np=$(folded_sum "$TMP/i.folded" '.')
idle=$(folded_sum "$TMP/i.folded" '^swapper/')
echo "# $EV over 2 s: count $nc, profile $np ($idle in the idle task)"
check "profile -e: hits in the idle task are samples" test "$idle" -gt 0
check "profile -e and count agree on an idle-heavy event (within 10%)" within "$np" "$nc" 0.10
if [ "$have_perf" = 1 ]; then
	npf=$(awk -F, -v e=$EV '$3 == e { print $1 }' "$TMP/i.perf")
	echo "# perf stat: $npf"
	check "count and perf stat agree (within 10%)" within "$nc" "$npf" 0.10
else
	skip "count and perf stat on $EV" "perf cannot count tracepoints here"
fi
"$BPFPROF" profile -F 99 -a 0.3 >"$TMP/i.report" 2>&1
check "profile's report says timer sampling left the idle task out" \
	grep -q '^# Excluded: the idle task from timer sampling' "$TMP/i.report"

# ---- several events in one profile: a section each, or the event as the root frame ----
"$BPFPROF" profile -e 'sched:sched_process_e*' -- sh -c '/bin/true; /bin/true' >"$TMP/m.report" 2>&1
check "profile -e with two events: a report section for each" \
	test "$(grep -Ec "^# Samples: [0-9]+ of event 'sched:sched_process_(exec|exit)'" "$TMP/m.report")" -eq 2
"$BPFPROF" profile -e 'sched:sched_process_e*' --event-root -f -- sh -c '/bin/true; /bin/true' \
	>"$TMP/m.folded" 2>&1
check "--event-root: the exec events under their own root" \
	test "$(folded_sum "$TMP/m.folded" '^sched:sched_process_exec;')" -eq 3
check "--event-root: the exit events under theirs" \
	test "$(folded_sum "$TMP/m.folded" '^sched:sched_process_exit;')" -ge 3

# ---- debug info where perf and gdb find it: perf's build-id cache, and debuginfod ----
mkdir -p "$TMP/dbg/srv"
cp "$WL/hotcold" "$TMP/dbg/hc"
objcopy --only-keep-debug "$TMP/dbg/hc" "$TMP/dbg/srv/hc.debug"
cp "$TMP/dbg/hc" "$TMP/dbg/hc.orig"
strip -g -s "$TMP/dbg/hc"
stripped_names() { folded_sum "$1" '^hc;.*main;driver;hot_[ab];spin '; }

# perf record keeps the binaries it saw in its build-id cache: one stripped since is named
if command -v perf >/dev/null; then
	perf --buildid-dir "$TMP/dbg/pcache" buildid-cache --add "$TMP/dbg/hc.orig" 2>/dev/null
	PERF_BUILDID_DIR=$TMP/dbg/pcache "$BPFPROF" profile -F 499 -f --no-debuginfod -- "$TMP/dbg/hc" 1 \
		>"$TMP/dbg/pc.folded" 2>&1
	n=$(stripped_names "$TMP/dbg/pc.folded")
	echo "# stripped hc, named from perf's build-id cache: $n of $(folded_sum "$TMP/dbg/pc.folded" '^hc;') samples"
	check "a stripped binary is named from perf's build-id cache" test "$n" -ge 50
else
	skip "perf's build-id cache" "perf is not installed"
fi

if command -v debuginfod >/dev/null && command -v debuginfod-find >/dev/null; then
	port=$((20000 + RANDOM % 20000))
	debuginfod -F -p "$port" -d "$TMP/dbg/db.sqlite" -t 1 "$TMP/dbg/srv" >"$TMP/dbg/server.log" 2>&1 &
	srv=$!
	id=$(readelf -n "$TMP/dbg/hc" | awk '/Build ID/ { print $3 }')
	export DEBUGINFOD_URLS=http://127.0.0.1:$port
	ready=0
	# until its first scan has indexed the file; a fresh client cache each time, as the client
	# remembers a miss (a query before the scan) for ten minutes
	for i in $(seq 100); do
		DEBUGINFOD_CACHE_PATH=$TMP/dbg/probe.$i debuginfod-find debuginfo "$id" >/dev/null \
			2>"$TMP/dbg/find.err" && { ready=1; break; }
		sleep 0.2
	done
	if [ "$ready" = 1 ]; then
		DEBUGINFOD_CACHE_PATH=$TMP/dbg/cache "$BPFPROF" profile -F 499 -f -- "$TMP/dbg/hc" 1 \
			>"$TMP/dbg/d.folded" 2>"$TMP/dbg/d.err"
		n=$(stripped_names "$TMP/dbg/d.folded")
		echo "# stripped hc, debug info from a local debuginfod: $n of $(folded_sum "$TMP/dbg/d.folded" '^hc;') samples named"
		check "a stripped binary's functions are named through debuginfod" test "$n" -ge 50
		DEBUGINFOD_CACHE_PATH=$TMP/dbg/cache2 "$BPFPROF" profile -F 499 -f --no-debuginfod -- "$TMP/dbg/hc" 1 \
			>"$TMP/dbg/n.folded" 2>&1
		check "--no-debuginfod: the stripped binary's frames are [hc]" \
			test "$(folded_sum "$TMP/dbg/n.folded" '^hc;.*\[hc\]')" -ge 50
		check "--no-debuginfod: and not one named" test "$(stripped_names "$TMP/dbg/n.folded")" -eq 0
	else
		fail "the local debuginfod serves the debug file" "$(cat "$TMP/dbg/find.err"; tail -3 "$TMP/dbg/server.log")"
	fi
	# a server that refuses: the run goes on, unnamed
	start=$(date +%s%N)
	DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_CACHE_PATH=$TMP/dbg/cache3 \
		"$BPFPROF" profile -f -- "$TMP/dbg/hc" 0.5 >"$TMP/dbg/r.folded" 2>&1; rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	check "an unreachable debuginfod: the run still ends well ($ms ms)" test "$rc" -eq 0 -a "$ms" -lt 5000
	unset DEBUGINFOD_URLS
	kill "$srv"; wait "$srv" 2>/dev/null
else
	skip "debuginfod" "the debuginfod package is not installed (make deps installs it)"
fi

# ---- JIT maps where the JIT wrote them: its own /tmp, its own pid; never through a link ----
# Each run is a JIT in a PID + mount namespace with a private /tmp: it is pid 1 there and its
# map is /tmp/perf-1.map, visible to bpfprof only through /proc/PID/root.  The private /tmp hides
# the host's, where this checkout may be: the binary is copied to a private /mnt first.
NS_TMP="mount -t tmpfs tmpfs /mnt && cp $WL/jit /mnt/jit && mount -t tmpfs tmpfs /tmp"
jit_in_ns() { # NAME SETUP-COMMANDS [MAP]: profile the namespaced JIT, folded on NAME.folded
	"$BPFPROF" profile -F 499 -f -- unshare -fpm --mount-proc sh -c \
		"$NS_TMP && $2 exec /mnt/jit 1 ${3:-}" >"$TMP/$1.folded" 2>"$TMP/$1.err"
}
if unshare -fpm --mount-proc true 2>/dev/null; then
	jit_in_ns jns ""
	# shares of the jit's own samples, and at least 100 of them (~499 on an idle CPU): under
	# load the process gets less of its CPU, not fewer of its samples named
	n=$(folded_sum "$TMP/jns.folded" '^jit;.*jitted_spin ')
	all=$(folded_sum "$TMP/jns.folded" '^jit;')
	echo "# JIT in a PID + mount namespace: $n of $all samples named from its perf-1.map"
	check "a JIT map in the target's own mount namespace, under its namespace pid, is used" \
		test "$all" -ge 100 -a "$((n * 10))" -ge "$((all * 6))"
	jit_in_ns jlink "ln -s /tmp/real.map /tmp/perf-1.map &&" /tmp/real.map
	check "a JIT map that is a symlink is not followed" \
		test "$(folded_sum "$TMP/jlink.folded" 'jitted_spin ')" -eq 0 -a \
		"$(folded_sum "$TMP/jlink.folded" '^jit;')" -ge 100
	check "... and the refusal is said, with the reason" \
		grep -q "^bpfprof: JIT map /proc/[0-9]*/root/tmp/perf-1.map not read: a symbolic link$" "$TMP/jlink.err"
	jit_in_ns jown "touch /tmp/perf-1.map && chown 65534 /tmp/perf-1.map &&"
	check "a JIT map owned by another user is not read" \
		test "$(folded_sum "$TMP/jown.folded" 'jitted_spin ')" -eq 0 -a \
		"$(folded_sum "$TMP/jown.folded" '^jit;')" -ge 100
	check "... and the refusal is said, with the reason" \
		grep -q "not read: owned by neither the process's user nor root$" "$TMP/jown.err"
	"$BPFPROF" profile -F 499 -- unshare -fpm --mount-proc sh -c \
		"$NS_TMP && mkfifo /tmp/perf-1.map && exec /mnt/jit 1 /tmp/x.map" \
		>"$TMP/jfifo.report" 2>&1
	check "a FIFO for a JIT map: refused, and counted in the report's header" \
		grep -q "^# JIT maps not read: 1 not a regular file$" "$TMP/jfifo.report"
else
	skip "JIT maps in namespaces" "unshare -fpm --mount-proc is refused here"
fi

# ---- deep stacks: --max-stack up to kernel.perf_event_max_stack, with both unwinders ----
# The sysctl cannot change while any perf event or BPF program holds callchain buffers (EBUSY):
# a previous run's programs are freed a moment after it exits.
set_max_stack() {
	for i in $(seq 100); do
		sysctl -qw kernel.perf_event_max_stack="$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
old_max_stack=$(cat /proc/sys/kernel/perf_event_max_stack)
if set_max_stack 127; then
	expect_one_error "--max-stack above kernel.perf_event_max_stack: one line, saying how to raise it" \
		'kernel.perf_event_max_stack \(127\): raise it first, sysctl -w kernel.perf_event_max_stack=512' \
		-- profile --max-stack 512 -- /bin/true
fi
if set_max_stack 512; then
	for u in fp eh; do
		"$BPFPROF" profile -F 199 -f --unwind "$u" --max-stack 512 -- "$WL/deep" 1 300 \
			>"$TMP/deep.$u" 2>&1
		# samples in bottom(): every one of the 300 recurse() frames above it
		full=$(awk '/;bottom[; ]/ { n = 0; k = split($1, f, ";"); for (i = 1; i <= k; i++) n += f[i] == "recurse"
			if (n == 300) s += $NF } END { print s + 0 }' "$TMP/deep.$u")
		all=$(folded_sum "$TMP/deep.$u" ';bottom[; ]')
		echo "# --unwind $u: $full of $all samples in bottom() under all 300 frames"
		# ~199 samples on an idle CPU; the point is the share with every frame
		check "--max-stack 512, --unwind $u: a 300-deep recursion shows all 300 frames" \
			test "$all" -ge 30 -a "$full" -ge $((all * 9 / 10))
	done
	set_max_stack "$old_max_stack" || echo "# could not restore kernel.perf_event_max_stack=$old_max_stack"
else
	skip "deep stacks" "kernel.perf_event_max_stack cannot be raised here"
fi
