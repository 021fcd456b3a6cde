#!/bin/bash
# The sanitizer build (make asan-build: build/asan/, ASan + UBSan + LeakSanitizer) run over the
# unit tests and over real runs that go through the symbolizer, both unwinders, perf maps, the
# demangler, event specs and every writer.  Any sanitizer report fails the test that caused it.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ASAN=$ROOT/build/asan
WL=$ROOT/build/workloads
TMP=$(mktemp -d /tmp/bpfprof-asan.XXXXXX)
trap 'rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null' EXIT
cd "$ROOT" || exit 1

# Reports go to files (one per process, reports/asan.PID), so that a finding is seen whatever the
# program prints and whatever status it exits with; 86 is a status bpfprof never uses.  LSan
# stops the process with ptrace to scan it: nothing here may run under strace or gdb.
export ASAN_OPTIONS=detect_leaks=1:exitcode=86:log_path=$TMP/reports/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86:log_path=$TMP/reports/ubsan
export LSAN_OPTIONS=exitcode=86
mkdir -p "$TMP/reports"

# Succeeds when the last step left sanitizer reports, after printing and clearing them.
reported() {
	local f found=1
	for f in "$TMP"/reports/*; do
		[ -e "$f" ] || continue
		found=0
		sed 's/^/    # /' "$f" | head -n 60
		rm -f "$f"
	done
	return $found
}

if [ ! -x "$ASAN/bpfprof" ]; then
	echo "not ok - asan: build/asan/bpfprof is missing (make asan-build)"
	exit 1
fi

# The unit tests under the sanitizers: their own ok lines are counted by the normal run, so each
# program is one result here.
for t in "$ASAN"/tests/test_*; do
	[ -x "$t" ] || continue
	name=asan\ unit\ ${t##*/}
	out=$("$t" 2>&1); rc=$?
	if reported; then
		echo "not ok - $name: sanitizer report (above)"
	elif [ "$rc" -ne 0 ]; then
		printf '%s\n' "$out" | grep -E '^(not ok|    )' | sed 's/^/    # /' | head -n 40
		echo "not ok - $name: exit status $rc"
	else
		echo "ok - $name"
	fi
done

if [ "$(id -u)" != 0 ]; then
	echo "skip - asan runs: needs root (CAP_BPF, CAP_PERFMON) to load BPF programs"
	exit 0
fi

# asan_run NAME STATUSES REGEX -- ARGS...: build/asan/bpfprof ARGS exits with one of STATUSES
# (e.g. "0" or "0 1"), its stdout and stderr match REGEX, and no sanitizer reported anything.
asan_run() {
	local name="asan $1" want=" $2 " re=$3 out rc
	shift 4
	out=$(timeout 60 "$ASAN/bpfprof" "$@" 2>&1); rc=$?
	if reported; then
		echo "not ok - $name: sanitizer report (above) for: bpfprof $*"
	elif [[ $want != *" $rc "* ]]; then
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/    # /'
		echo "not ok - $name: exit status $rc for: bpfprof $*"
	elif ! grep -Eq "$re" <<<"$out"; then
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/    # /'
		echo "not ok - $name: no line matches '$re' for: bpfprof $*"
	else
		echo "ok - $name"
	fi
}

# Frame pointers, ELF symbols, the report and folded writers.
asan_run "profile report" 0 '\[\.\] hot_a' -- profile -F 99 -d 1 -- "$WL/hotcold" 1
# The CFI unwinder (tables from .eh_frame) and the flame graph writer.
asan_run "profile --unwind eh --svg" 0 'hot_a' -- profile -F 199 --unwind eh -f \
	--svg "$TMP/cpu.svg" -d 1 -- "$WL/hotcold_nofp" 1
# C++: libstdc++ unwinding and the demangler.
asan_run "profile C++" 0 'std::' -- profile -F 199 -f -d 1 -- "$WL/cppsort"
# DWARF: inlined frames and lines into the report, folded stacks and pprof; annotate (capstone).
asan_run "profile inlined frames" 0 'mix_a \(inlined\)' -- profile -F 199 -U --srcline \
	--pprof "$TMP/inl.pb.gz" -d 1 -- "$WL/inlined" inline 1
asan_run "report of inlined frames" 0 'mix_a' -- report -f --srcline "$TMP/inl.pb.gz"
asan_run "annotate" 0 'Disassembly of' -- annotate --stdio -F 199 -d 1 -- "$WL/inlined" loop 1
# A JIT's perf map.
asan_run "profile perf map" 0 'jitted_spin' -- profile -F 199 -d 1 -- "$WL/jit" 1
# Every process on the machine: kallsyms and the symbolizer's cache over whatever runs.
asan_run "offcpu" 0 'Samples|\[k\]|;' -- offcpu -d 1
# Continuous mode: offcpu's drains keeping blocked threads' stacks, periods to a rotated
# directory and to a server that is not there (the sender thread, its retries and drops).
asan_run "offcpu --every --waker" 0 'Total off-CPU time' -- offcpu -a --waker --every 1 -d 2
asan_run "profile --every --pprof-dir --push" 0 'push: 0 of 2 periods sent' -- profile -a \
	--every 1 -d 2 --pprof-dir "$TMP/periods" --keep 1 --push http://127.0.0.1:9
asan_run "count" 0 'sched:sched_switch' -- count -e sched:sched_switch -d 1
asan_run "count syscalls glob" 0 'sys_enter_getppid' -- count 'syscalls:sys_enter_*' \
	-- "$WL/syscalls" getppid 10
asan_run "runqlat" 0 'usecs|count' -- runqlat 1 1
# stat: perf counters alone (no BPF), per CPU in intervals as CSV, repeats, per command name.
asan_run "stat default set" 0 'page-faults' -- stat -- true
asan_run "stat -a -A -I -x" 0 'CPU0,' -- stat -a -A -I 200 -x, -e cs,task-clock,sched:sched_switch 0.5
asan_run "stat -r 3" 0 '3 runs' -- stat -r 3 -e task-clock,cycles -- true
asan_run "stat --by-comm" 0 '[0-9] process' -- stat --by-comm -e page-faults,task-clock,sys:getppid \
	-- sh -c 'true; true'
# Tables with no row at all (a target that neither runs nor execs): no array to sort.
sleep 60 &
idle=$!
asan_run "count -P, no hits" 0 'By process' -- count -P -p $idle -e sched:sched_process_exec 1
asan_run "runqlat -P, no rows" 0 'Tracing' -- runqlat -P -p $idle 1 1
asan_run "sched, no rows" 0 'TOTAL' -- sched -p $idle -d 1
kill $idle
asan_run "biolat heat map" 0 'usecs|count|Tracing' -- biolat --heatmap "$TMP/io.svg" 1 1
# Kernel function specs: the vmlinux BTF is parsed, and freed, whether or not this kernel
# lets them attach (fentry or kprobes); then a uprobe.
asan_run "funclat k:FUNC" "0 1" 'vfs_read' -- funclat k:vfs_read 'k:vfs_write*' 1
asan_run "funclat uprobe" 0 'slow_op' -- funclat "$WL/funcs:slow_op" -- "$WL/funcs" calls 5 5
# list: every source (tracefs or BTF, kallsyms, perf_event_open), --json, a C++ binary's
# demangled names, a process's libraries and their SDT notes.
asan_run "list" 0 '^# [0-9]+ listed: Tracepoints' -- list
asan_run "list --json" 0 '"spec": "sys:read"' -- list --json sys read
BPFPROF_TRACEFS=/nonexistent asan_run "list from BTF" 0 '^t:\*:sched_switch' -- list tp sched_switch
asan_run "list -x C++" 0 'sorter\(double\)' -- list -x "$WL/cppsort"
"$WL/usdt" 1 30 >/dev/null &
sdt=$!
sleep 0.5
asan_run "list -p" 0 'bpfprof_wl:tick' -- list -p $sdt
kill $sdt
exit 0
