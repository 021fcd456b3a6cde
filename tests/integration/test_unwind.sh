#!/bin/bash
# In-kernel unwinding from .eh_frame (--unwind eh|auto): full user stacks for code without frame
# pointers, through Debian's libc and libstdc++, and frame-pointer fallback for broken CFI.
. "$(dirname "$0")/lib.sh"
need_root "unwind integration" || exit 0

F=499
# share NUMERATOR DENOMINATOR -> percent
share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", b ? 100 * a / b : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print (b ? a / b : 0) }'; }
FULL='_start;__libc_start_main[^;]*;__libc_start_call_main;main;driver'
FULL_NODRIVER='_start;__libc_start_main[^;]*;__libc_start_call_main'
# other_shapes FOLDED ALL-RE FULL-RE: the three commonest stacks matching ALL-RE but not FULL-RE,
# for the log (what a failed share consisted of)
other_shapes() {
	awk -v all="$2" -v full="$3" '$0 ~ all && $0 !~ full { print $NF "\t" $0 }' "$1" | sort -nr |
		head -3 | cut -f2 | cut -c1-300 | sed 's/^/#   other: /'
}

# 1. hotcold with and without frame pointers: eh and auto give the whole stack, from _start through
#    libc to spin, and the 2:1 split.
for m in eh auto; do
	for b in hotcold hotcold_nofp; do
		# 999 Hz: ~2,000 samples, the 2:1 split's standard deviation ~5% (at 499 Hz ~7%, and
		# a run in a few dozen fell outside 25%)
		"$BPFPROF" profile -F 999 -f -U --unwind $m -- "$WL/$b" 2 >"$TMP/$b.$m" 2>"$TMP/$b.$m.err"; rc=$?
		check "$b --unwind $m: exits 0" test "$rc" -eq 0
		a=$(folded_sum "$TMP/$b.$m" "^$b;$FULL;hot_a;spin ")
		c=$(folded_sum "$TMP/$b.$m" "^$b;$FULL;hot_b;spin ")
		all=$(folded_sum "$TMP/$b.$m" "^$b;")
		echo "# $b $m: hot_a=$a hot_b=$c all=$all"
		check "$b --unwind $m: full stack _start..main;driver;hot_a;spin" test "$a" -gt 0
		check "$b --unwind $m: full stack _start..main;driver;hot_b;spin" test "$c" -gt 0
		check "$b --unwind $m: hot_a:hot_b is 2:1 within 25%" within "$(ratio "$a" "$c")" 2 0.25
		# only samples taken before the tables loaded may fall short
		check "$b --unwind $m: at least 80% of stacks complete" test "$(share $((a + c)) "$all")" -ge 80
	done
done

# 1b. The same walk with the loops the verifier walks round by round, as on kernels without
#     bpf_loop() (before 5.17), and programs loaded one after another, as on one CPU: the same
#     stacks.
BPFPROF_NO_BPF_LOOP=1 BPFPROF_SERIAL_LOAD=1 "$BPFPROF" profile -F 999 -f -U --unwind eh -- "$WL/hotcold_nofp" 2 \
	>"$TMP/noloop" 2>"$TMP/noloop.err"; rc=$?
check "without bpf_loop: exits 0" test "$rc" -eq 0
a=$(folded_sum "$TMP/noloop" "^hotcold_nofp;$FULL;hot_a;spin ")
c=$(folded_sum "$TMP/noloop" "^hotcold_nofp;$FULL;hot_b;spin ")
all=$(folded_sum "$TMP/noloop" "^hotcold_nofp;")
echo "# without bpf_loop: hot_a=$a hot_b=$c all=$all"
check "without bpf_loop: hot_a:hot_b is 2:1 within 25%" within "$(ratio "$a" "$c")" 2 0.25
check "without bpf_loop: at least 80% of stacks complete" test "$(share $((a + c)) "$all")" -ge 80

# 2. The frame-pointer walk on the same binaries: complete for the frame-pointer build (both
#    methods agree on main;driver;hot_X;spin), only the leaf without frame pointers.
"$BPFPROF" profile -F $F -f -U --unwind fp -- "$WL/hotcold" 1 >"$TMP/hc.fp" 2>/dev/null
"$BPFPROF" profile -F $F -f -U --unwind fp -- "$WL/hotcold_nofp" 1 >"$TMP/nofp.fp" 2>/dev/null
check "fp and eh agree on the frame-pointer build" \
	test "$(folded_sum "$TMP/hc.fp" ';main;driver;hot_a;spin ')" -gt 0
check "fp walk loses the callers without frame pointers (the premise)" \
	test "$(folded_sum "$TMP/nofp.fp" ';driver;')" -eq 0

# 3. A frame-pointer program spending its time in libc's memset (no frame pointer): the
#    frame-pointer walk skips the caller, auto keeps main -> filler -> memset.
"$BPFPROF" profile -F $F -f -U --unwind fp -- "$WL/inlibc" memset 1 >"$TMP/lc.fp" 2>"$TMP/lc.fp.err" ||
	echo "# fp run failed: $(cat "$TMP/lc.fp.err")"
"$BPFPROF" profile -F $F -f -U --unwind auto -- "$WL/inlibc" memset 1 >"$TMP/lc.auto" 2>"$TMP/lc.auto.err" ||
	echo "# auto run failed: $(cat "$TMP/lc.auto.err")"
fp_all=$(folded_sum "$TMP/lc.fp" '^inlibc;')
fp_kept=$(folded_sum "$TMP/lc.fp" 'filler;__mem[a-z0-9_]*set')
auto_full=$(folded_sum "$TMP/lc.auto" '_start;.*;main;filler;__mem[a-z0-9_]*set')
auto_all=$(folded_sum "$TMP/lc.auto" 'memset')
echo "# memset: fp filler;memset=$fp_kept of $fp_all samples, auto main;filler;memset=$auto_full of $auto_all"
check "fp walk: filler never above libc's memset (the premise)" test "$fp_all" -gt 0 -a "$fp_kept" -eq 0
check "auto: main;filler;memset for at least 80% of memset samples" \
	test "$(share "$auto_full" "$auto_all")" -ge 80

# 4. C++ without frame pointers through libstdc++: thread start in libstdc++, std::sort, and a
#    comparator hashing through libstdc++'s _Hash_bytes.
"$BPFPROF" profile -F $F -f -U --unwind auto -- "$WL/cppsort" 1.5 >"$TMP/cpp.auto" 2>/dev/null
cpp_full=$(folded_sum "$TMP/cpp.auto" \
	'clone3;start_thread;[^;]*;std::thread::_State_impl.*;sorter\(double\);void std::sort<.*;by_hash\(.*std::_Hash_bytes\(')
cpp_hash=$(folded_sum "$TMP/cpp.auto" 'std::_Hash_bytes\(')
echo "# cppsort: complete stacks through libstdc++ $cpp_full of $cpp_hash in _Hash_bytes"
check "C++: clone3..libstdc++..sorter;std::sort..by_hash..std::_Hash_bytes" test "$cpp_full" -gt 0
check "C++: at least 80% of _Hash_bytes stacks complete" test "$(share "$cpp_full" "$cpp_hash")" -ge 80

# 5. Samples that interrupted the kernel: user registers saved at the syscall.
"$BPFPROF" profile -F $F -f --annotate --unwind auto -- "$WL/syscalls" read 1 >"$TMP/sc.auto" 2>/dev/null
k=$(folded_sum "$TMP/sc.auto" '^syscalls;_start;.*;main;read_devzero;raw_syscall3;.*_\[k\]')
echo "# syscall samples with a complete user stack under kernel frames: $k"
check "kernel-mode samples: complete user stack from the saved registers" test "$k" -gt 0

# 6. Report header: the method and what the unwinder did.
"$BPFPROF" profile -F $F --unwind eh -v -- "$WL/hotcold_nofp" 1 >"$TMP/rep.eh" 2>"$TMP/rep.eh.err"
check "report header: # Call graph: eh" grep -q "^# Call graph: eh$" "$TMP/rep.eh"
check "report header: unwind statistics" grep -Eq "^# [0-9]+ stacks walked, [0-9]+ frames: " "$TMP/rep.eh"
check "-v: unwind table memory" grep -Eq "unwind tables: [0-9]+ of 32768 KB used by [0-9]+ tables" "$TMP/rep.eh.err"
"$BPFPROF" profile -F $F --unwind fp -- "$WL/hotcold" 0.5 >"$TMP/rep.fp" 2>/dev/null
check "report header: # Call graph: fp" grep -q "^# Call graph: fp$" "$TMP/rep.fp"

# 7. Bad input: corrupt or missing .eh_frame falls back to frame pointers (auto) with the reason
#    reported, and never yields a wrong frame (eh stops at the leaf).
cp "$WL/hotcold" "$TMP/hc_corrupt"
eh_off=$(readelf -SW "$TMP/hc_corrupt" | sed -n 's/.*\] \.eh_frame  *PROGBITS  *[0-9a-f]*  *\([0-9a-f]*\) .*/\1/p')
printf '\xf0\xff\xff\x7f' | dd of="$TMP/hc_corrupt" bs=1 seek=$((16#$eh_off)) conv=notrunc 2>/dev/null
cp "$WL/hotcold" "$TMP/hc_stripped"
objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr "$TMP/hc_stripped" 2>/dev/null
for bad in hc_corrupt hc_stripped; do
	"$BPFPROF" profile -F $F -f -U --unwind auto -- "$TMP/$bad" 1 >"$TMP/$bad.auto" 2>"$TMP/$bad.err"; rc=$?
	check "$bad: auto exits 0" test "$rc" -eq 0
	check "$bad: auto falls back to frame pointers (main;driver;hot_a;spin)" \
		test "$(folded_sum "$TMP/$bad.auto" ";main;driver;hot_a;spin ")" -gt 0
	check "$bad: the reason is reported" grep -Eq "no CFI in: $bad \((corrupt \.eh_frame|no \.eh_frame)" "$TMP/$bad.err"
	"$BPFPROF" profile -F $F -f -U --unwind eh -- "$TMP/$bad" 1 >"$TMP/$bad.eh" 2>/dev/null
	# no made-up frames: nothing unresolved, and spin either alone or under its true callers
	# (complete stacks come from samples taken before the tables loaded, by frame pointer)
	wrong=$(grep "^$bad;" "$TMP/$bad.eh" | grep -E '\[unknown\]|;spin[; ]' |
		grep -Ev "^$bad;(spin|.*;main;driver;hot_[ab];spin) [0-9]+$")
	[ -n "$wrong" ] && echo "# unexpected: $wrong"
	check "$bad: eh stops instead of guessing" test -z "$wrong"
	check "$bad: eh ends most stacks at the leaf (no CFI)" \
		test "$(share "$(folded_sum "$TMP/$bad.eh" "^$bad;spin ")" "$(folded_sum "$TMP/$bad.eh" "^$bad;")")" -ge 80
done
check "corrupt .eh_frame: reason names the corruption" grep -q "corrupt .eh_frame" "$TMP/hc_corrupt.err"

# 8. A syscall event through libc's wrapper (no frame pointer): the frame-pointer walk skips
#    sleeper_a, the tables keep main -> sleeper_a -> nanosleep -> clock_nanosleep.
"$BPFPROF" profile -f -U --unwind fp -e sys:clock_nanosleep -- "$WL/inlibc" sleep 0.5 >"$TMP/ns.fp" 2>/dev/null
"$BPFPROF" profile -f -U --unwind auto -e sys:clock_nanosleep -- "$WL/inlibc" sleep 0.5 >"$TMP/ns.auto" 2>/dev/null
ns_all=$(folded_sum "$TMP/ns.auto" 'clock_nanosleep')
ns_full=$(folded_sum "$TMP/ns.auto" ';main;sleeper_a;[^;]*nanosleep[^;]*;clock_nanosleep[^;]* ')
echo "# clock_nanosleep: fp with sleeper_a $(folded_sum "$TMP/ns.fp" 'sleeper_a') of $(folded_sum "$TMP/ns.fp" 'clock_nanosleep'), auto $ns_full of $ns_all"
check "-e sys:clock_nanosleep, fp: sleeper_a lost (the premise)" \
	test "$(folded_sum "$TMP/ns.fp" 'clock_nanosleep')" -gt 0 -a "$(folded_sum "$TMP/ns.fp" 'sleeper_a')" -eq 0
check "-e sys:clock_nanosleep, auto: main;sleeper_a;nanosleep;clock_nanosleep" \
	test "$(share "$ns_full" "$ns_all")" -ge 80

# 9. Off-CPU: the sleep through libc attributed to main -> sleeper_a -> clock_nanosleep, from
#    the registers the task saved at the syscall (tp_btf, and the raw_tp fallback).
"$BPFPROF" offcpu -f -U --unwind fp -- "$WL/inlibc" sleep 1 >"$TMP/off.fp" 2>/dev/null
fp_sleep=$(folded_sum "$TMP/off.fp" 'clock_nanosleep')
check "offcpu --unwind fp: sleeper_a lost above libc (the premise)" \
	test "$fp_sleep" -gt 0 -a "$(folded_sum "$TMP/off.fp" 'sleeper_a')" -eq 0
for raw in "" 1; do
	n="offcpu --unwind auto${raw:+ (raw_tp)}"
	BPFPROF_FORCE_RAW_TP=$raw "$BPFPROF" offcpu -f -U --unwind auto -- "$WL/inlibc" sleep 1 \
		>"$TMP/off.auto" 2>"$TMP/off.err"; rc=$?
	check "$n: exits 0" test "$rc" -eq 0
	all=$(folded_sum "$TMP/off.auto" '^inlibc;.*clock_nanosleep')
	full=$(folded_sum "$TMP/off.auto" '^inlibc;_start;.*;main;sleeper_a;[^;]*nanosleep[^;]*;clock_nanosleep[^;]* ')
	echo "# $n: $full of $all us under main;sleeper_a;nanosleep;clock_nanosleep"
	check "$n: main;sleeper_a;nanosleep;clock_nanosleep for at least 80% of the time" \
		test "$(share "$full" "$all")" -ge 80
done
"$BPFPROF" offcpu --unwind eh -- "$WL/inlibc" sleep 0.5 >"$TMP/off.rep" 2>/dev/null
check "offcpu report header: # Call graph: eh" grep -q "^# Call graph: eh$" "$TMP/off.rep"
check "offcpu report header: unwind statistics" grep -Eq "^# [0-9]+ stacks walked" "$TMP/off.rep"

# 10. A hot function inside a signal handler (no frame pointers): the walk goes through the
#     signal frame (libc's __restore_rt) into the interrupted outer_loop and on to _start.
for m in eh auto; do
	"$BPFPROF" profile -F $F -f -U --unwind $m -- "$WL/sighandler_nofp" 1.5 >"$TMP/sig.$m" 2>/dev/null
	in_h=$(folded_sum "$TMP/sig.$m" '^sighandler_nofp;.*on_signal;in_handler')
	# the signal frame, and what the signal interrupted in outer_loop: its loop, or the clock it
	# reads (cpu_now;clock_gettime;__vdso_clock_gettime, more often on a loaded machine)
	through=$(folded_sum "$TMP/sig.$m" "^sighandler_nofp;$FULL_NODRIVER;main;outer_loop;.*;on_signal;in_handler")
	echo "# signal handler, $m: $through of $in_h in_handler samples reach _start through the signal frame"
	other_shapes "$TMP/sig.$m" '^sighandler_nofp;.*on_signal;in_handler' \
		"^sighandler_nofp;$FULL_NODRIVER;main;outer_loop;.*;on_signal;in_handler"
	check "--unwind $m: in_handler;on_signal;<signal frame>;outer_loop;main;..;_start" test "$through" -gt 0
	check "--unwind $m: at least 80% of in_handler stacks go through the signal frame" \
		test "$(share "$through" "$in_h")" -ge 80
done
"$BPFPROF" profile -F $F -U --unwind eh -- "$WL/sighandler_nofp" 0.5 >"$TMP/sig.rep" 2>/dev/null
check "report header: frames through signal frames counted" grep -Eq "^# .*\([0-9]+ through signal frames\)" "$TMP/sig.rep"

# 10b. glibc's vfork pops its return address into RDI across the syscall: a sample there (the
#     syscall's exit, in parent and child) is walked on from the registers of the sample, into
#     the shell that called it and on to _start, not ended at an unsupported rule.
for m in eh auto; do
	"$BPFPROF" profile -f -U --unwind $m -e t:syscalls:sys_exit_vfork -- \
		sh -c 'for i in $(seq 50); do /bin/true; done' >"$TMP/vfork.$m" 2>"$TMP/vfork.$m.err"
	all=$(folded_sum "$TMP/vfork.$m" ';__vfork ')
	through=$(folded_sum "$TMP/vfork.$m" '^sh;[^;]*;__libc_start_main[^;]*;__libc_start_call_main;.*;__vfork ')
	echo "# vfork, $m: $through of $all samples in __vfork reach _start"
	if [ "$all" -eq 0 ]; then
		skip "--unwind $m through __vfork" "sh here does not vfork (not dash with glibc)"
		continue
	fi
	check "--unwind $m: every sample in __vfork reaches _start" test "$through" -eq "$all"
done

# 10c. The [vdso] from a process's first samples: vdsoclock reads CLOCK_MONOTONIC (answered in the
#     vdso) from its first instruction on, and user space reads its mappings only after its first
#     samples; the walk knows the vdso by the address the kernel keeps for it, and its table was
#     loaded before sampling started, so every stack in the vdso goes on into main (10-17% of
#     them ended at the vdso in every run before).  With "signal", a handler reading the clock
#     interrupts the loop mostly inside the vdso: the vdso, the signal frame, the vdso again.
#     "noloop": the same as loaded without bpf_loop(), programs one after another (1b).
for mode in plain signal noloop; do
	if [ $mode = noloop ]; then
		BPFPROF_NO_BPF_LOOP=1 BPFPROF_SERIAL_LOAD=1 "$BPFPROF" profile -F 999 -f -U --unwind eh \
			-- "$WL/vdsoclock" 0.3 signal >"$TMP/vdso.$mode" 2>"$TMP/vdso.$mode.err"
	else
		"$BPFPROF" profile -F 999 -f -U --unwind eh -- "$WL/vdsoclock" 0.3 $mode \
			>"$TMP/vdso.$mode" 2>"$TMP/vdso.$mode.err"
	fi
	all=$(folded_sum "$TMP/vdso.$mode" '^vdsoclock;.*__vdso_')
	full=$(folded_sum "$TMP/vdso.$mode" "^vdsoclock;$FULL_NODRIVER;main;clock_loop;.*__vdso_")
	echo "# vdso, $mode: $full of $all stacks in the vdso reach _start..main"
	other_shapes "$TMP/vdso.$mode" '^vdsoclock;.*__vdso_' "^vdsoclock;$FULL_NODRIVER;main;clock_loop;.*__vdso_"
	check "vdso from the first sample ($mode): some stacks in the vdso" test "$all" -gt 0
	check "vdso from the first sample ($mode): every one reaches _start..main" test "$full" -eq "$all"
done
twice=$(folded_sum "$TMP/vdso.signal" \
	"^vdsoclock;$FULL_NODRIVER;main;clock_loop;read_clock;clock_gettime[^;]*;__vdso_clock_gettime;[^;]*;on_signal;in_handler;read_clock;clock_gettime[^;]*;__vdso_clock_gettime ")
check "vdso, signal: handler;<signal frame>;vdso;clock_gettime;read_clock;clock_loop;main" test "$twice" -gt 0

# 11. Tables before the first sample: a program that does all its work in a burst right after
#     exec (500 getppid() calls from ppid_caller(), through libc's wrapper without a frame
#     pointer) is unwound by tables from its first sample, as COMMAND and as -p, whatever the
#     unwinding method; the frame-pointer walk loses ppid_caller (the premise).
for m in auto eh; do
	"$BPFPROF" profile -f -U --unwind $m -e t:syscalls:sys_enter_getppid -- "$WL/burst" \
		>"$TMP/burst.$m" 2>"$TMP/burst.$m.err"
	all=$(folded_sum "$TMP/burst.$m" 'getppid')
	full=$(folded_sum "$TMP/burst.$m" "^burst;$FULL_NODRIVER;main;ppid_caller;[^;]*getppid ")
	echo "# burst as COMMAND, --unwind $m: $full of $all samples with main;ppid_caller;getppid"
	check "burst as COMMAND, --unwind $m: every sample has ppid_caller" test "$all" -eq 500 -a "$full" -eq 500
done
"$BPFPROF" profile -f -U --unwind fp -e t:syscalls:sys_enter_getppid -- "$WL/burst" >"$TMP/burst.fp" 2>/dev/null
check "burst, --unwind fp: ppid_caller lost above libc's wrapper (the premise)" \
	test "$(folded_sum "$TMP/burst.fp" 'getppid')" -gt 0 -a "$(folded_sum "$TMP/burst.fp" 'ppid_caller')" -eq 0
mkfifo "$TMP/go"
"$WL/burst" wait <"$TMP/go" &
bpid=$!
exec 7>"$TMP/go"
"$BPFPROF" profile -v -f -U -e t:syscalls:sys_enter_getppid -p $bpid >"$TMP/burst.p" 2>"$TMP/burst.p.err" &
prof=$!
if wait_for_line "$TMP/burst.p.err" 'tables of the targets loaded'; then
	echo go >&7
fi
exec 7>&-
wait $bpid
wait $prof
full=$(folded_sum "$TMP/burst.p" "^burst;$FULL_NODRIVER;main;ppid_caller;[^;]*getppid ")
echo "# burst under -p: $full of $(folded_sum "$TMP/burst.p" 'getppid') with main;ppid_caller;getppid"
check "burst under -p, no pause: every sample has ppid_caller" test "$full" -eq 500

# 12. Sixty short-lived processes of one program under -a: every one is walked by tables from its
#     first sample, so the hot path has one stack shape.  A timer sample may search the kernel's
#     mappings only once (the mmap lock is released from an irq_work): the program's and its
#     interpreter's mappings are found at exec, each library's at its mmap(), and a forked child
#     starts with its parent's, so no walk needs a second search.  Then forty forked children
#     that never exec, as a shell's subshells.  A program never seen before is walked by frame
#     pointers until its table is built from its first samples (-v counts them, "while tables
#     loaded"): a few ms, but tens on a loaded machine (with three CPU hogs here, the first
#     20 ms process whole, 2% of the sixty's samples); so one run of it under another name
#     comes first, and the sixty start once its table is in.
short_run() { # NAME ARGS...: sixty runs of shortwork ARGS, or one
	local name=$1 prof
	shift
	"$BPFPROF" profile -v -F 999 -a -f -U 30 >"$TMP/$name.f" 2>"$TMP/$name.err" &
	prof=$!
	if wait_for_line "$TMP/$name.err" 'tables of the targets loaded'; then
		WL_COMM=shortfirst "$WL/shortwork" 20
		wait_for_line "$TMP/$name.err" 'unwind: loaded .*/shortwork:'
		"$@"
	fi
	kill -INT $prof
	wait $prof
}
short_shapes() { # NAME WHAT
	local shapes all main busy
	shapes=$(grep '^shortwork;.*;short_work ' "$TMP/$1.f" | awk '{ $NF = ""; print }' | sort -u | wc -l)
	all=$(folded_sum "$TMP/$1.f" '^shortwork;.*short_work ')
	main=$(folded_sum "$TMP/$1.f" "^shortwork;$FULL_NODRIVER;main;short_work ")
	busy=$(sed -n 's/.*process not loaded yet (one kernel mapping lookup per timer sample) \([0-9]*\).*/\1/p' "$TMP/$1.err")
	echo "# $2: $main of $all short_work samples in _start..main;short_work; $shapes shapes; ${busy:-0} stacks (of every process) cut by a second mapping lookup"
	grep '^shortwork;.*;short_work ' "$TMP/$1.f" | grep -v "^shortwork;$FULL_NODRIVER;main;short_work " |
		sed 's/^/#   other shape: /'
	# the first process's first milliseconds may come before its table is built
	check "$2: at least 99% of short_work samples in one shape, from _start" \
		test "$all" -gt 100 -a "$((main * 100))" -ge "$((all * 99))"
}
sixty() { for ((i = 0; i < 60; i++)); do "$WL/shortwork" 20; done; }
short_run short sixty
short_shapes short "sixty short processes"
short_run forked "$WL/shortwork" 20 40
short_shapes forked "forty forked children, no exec"

# 9. The end of a process, no frame pointers: freeing its memory is most of an exit (after
#    exit_mm() cleared the task's mm) and of an exec (the old mm released after exec_mmap()
#    installed the new one).  Samples there walk from the registers saved at the syscall's entry,
#    which point into memory that is gone: they take the walk made at that entry, and reach
#    _start..main;leave_now (exec_now) where they ended at the leaf as 'unreadable stack'.
ends() { for ((i = 0; i < 10; i++)); do "$WL/bigexit_nofp" 128; "$WL/bigexit_nofp" 128 exec; done; }
"$BPFPROF" profile -v -F 999 -a -f 30 >"$TMP/ends.f" 2>"$TMP/ends.err" &
prof=$!
if wait_for_line "$TMP/ends.err" 'tables of the targets loaded'; then
	ends
fi
kill -INT $prof
wait $prof
for how in "exit leave_now __x64_sys_exit_group" "exec exec_now __x64_sys_execve"; do
	set -- $how
	all=$(folded_sum "$TMP/ends.f" "^bigexit_nofp;.*;$3;.*exit_mmap")
	full=$(folded_sum "$TMP/ends.f" "^bigexit_nofp;$FULL_NODRIVER;main;$2;.*;$3;.*exit_mmap")
	echo "# $1 freeing 128 MB: $full of $all samples in exit_mmap under _start..main;$2"
	other_shapes "$TMP/ends.f" "^bigexit_nofp;.*;$3;.*exit_mmap" "^bigexit_nofp;$FULL_NODRIVER;main;$2;.*;$3;.*exit_mmap"
	check "$1 freeing its memory: at least 90% of the samples in exit_mmap reach _start..main;$2" \
		test "$all" -gt 20 -a "$((full * 100))" -ge "$((all * 90))"
done
check "-v counts the stacks taken at the syscall's entry" grep -q 'stacks inside execve() or exit() as walked at its entry' "$TMP/ends.err" "$TMP/ends.f"
