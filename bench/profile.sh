#!/bin/bash
# bpfprof profile: (1) time from start to report beyond the run itself, (2) slowdown of a fixed
# CPU-bound workload at -F 999 system-wide, (3) time to symbolize and write 10,000 unique stacks,
# (4) peak RSS of a 10 s system-wide profile.  Compared with perf and bpftrace where installed.
# BEFORE=BINARY: (1) and (5) measure that build too, in the same rounds.
. "$(dirname "$0")/lib.sh"
BEFORE=${BEFORE:-}

# Where other work shares the machine, a run's start waits for a CPU more than it works:
# SCHED_FIFO (when allowed) measures what bpfprof itself takes, as on a quiet machine.
fifo=()
chrt -f 10 true 2>/dev/null && fifo=(chrt -f 10)

echo "## (1) 1 s system-wide profile: seconds beyond the 1 s run, start to report written (target <= 0.030)"
[ ${#fifo[@]} -gt 0 ] && echo "(under ${fifo[*]})"
for i in $(seq "$REPS"); do
	wall "${fifo[@]}" "$BPFPROF" profile -F 99 -a -f 1 >>"$BTMP/own.all"
	[ -n "$BEFORE" ] && wall "${fifo[@]}" "$BEFORE" profile -F 99 -a -f 1 >>"$BTMP/before.all"
done
awk '{ print $1 - 1 }' "$BTMP/own.all" | median >"$BTMP/own"
echo "bpfprof profile -F 99 -a 1 -f:        $(cat "$BTMP/own") s  (default --unwind auto)"
[ -n "$BEFORE" ] && echo "  BEFORE ($BEFORE):  $(awk '{ print $1 - 1 }' "$BTMP/before.all" | median) s"
# the CPU of the start and the finish alone (all threads; -U: no kernel symbols, which load on a
# thread while the run goes on)
start_cpu() { perf stat -x, -e task-clock -o "$BTMP/ps" "${fifo[@]}" "$@" profile -F 99 -a -U -f 0.05 >/dev/null 2>&1 && awk -F, '/task-clock/ { printf "%.1f\n", $1 }' "$BTMP/ps"; }
if have perf; then
	for i in $(seq "$REPS"); do
		start_cpu "$BPFPROF" >>"$BTMP/scpu"
		[ -n "$BEFORE" ] && start_cpu "$BEFORE" >>"$BTMP/scpu.before"
	done
	echo "  CPU of start and finish (a 0.05 s run, -U): $(median <"$BTMP/scpu") ms$([ -n "$BEFORE" ] && echo ", BEFORE $(median <"$BTMP/scpu.before") ms")"
fi
# The .eh_frame unwinder costs verifier time at load; the frame-pointer walk shows the rest.
for i in $(seq "$REPS"); do wall "${fifo[@]}" "$BPFPROF" profile --unwind fp -F 99 -a -f 1; done | awk '{ print $1 - 1 }' | median >"$BTMP/ownfp"
echo "  the same with --unwind fp:          $(cat "$BTMP/ownfp") s"
if have bpftrace; then
	for i in $(seq "$REPS"); do
		wall "${fifo[@]}" bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); } interval:s:1 { exit(); }'
	done | awk '{ print $1 - 1 }' | median >"$BTMP/bt"
	echo "bpftrace profile:hz:99 + exit at 1 s:  $(cat "$BTMP/bt") s"
fi
if have perf; then
	for i in $(seq "$REPS"); do
		wall "${fifo[@]}" bash -c "perf record -q -F 99 -a -g -o $BTMP/perf.data -- sleep 1 && perf script -i $BTMP/perf.data >$BTMP/perf.txt"
	done | awk '{ print $1 - 1 }' | median >"$BTMP/pf"
	echo "perf record -a -g 1 s + perf script:  $(cat "$BTMP/pf") s"
fi

echo
echo "## (2) fixed CPU-bound work on every CPU while sampling at 999 Hz: time / untraced time (target <= 1.01)"
base=() own=() prf=()
for i in $(seq "$REPS"); do
	base+=("$("$WL/fixedwork")")
	"$BPFPROF" profile -F 999 -a -f 60 >/dev/null 2>&1 & p=$!; sleep 0.5
	own+=("$("$WL/fixedwork")"); kill -INT $p; wait $p
	if have perf; then
		perf record -q -F 999 -a -g -o "$BTMP/perf.data" -- sleep 60 >/dev/null 2>&1 & p=$!; sleep 0.5
		prf+=("$("$WL/fixedwork")"); kill -INT $p; wait $p 2>/dev/null
	fi
done
b=$(printf '%s\n' "${base[@]}" | median)
echo "untraced:                         $b s"
echo "bpfprof profile -F 999 -a:        $(printf '%s\n' "${own[@]}" | median) s  ratio $(ratio "$(printf '%s\n' "${own[@]}" | median)" "$b")"
[ ${#prf[@]} -gt 0 ] && echo "perf record -F 999 -a -g:         $(printf '%s\n' "${prf[@]}" | median) s  ratio $(ratio "$(printf '%s\n' "${prf[@]}" | median)" "$b")"

echo
echo "## (3) symbolize and write 10,000 unique stacks of depth 20 (target <= 0.5 s)"
"$ROOT/build/bench/stacks_bench" 10000

echo
echo "## (4) peak RSS of a 10 s system-wide profile at 99 Hz (target <= 12 MB)"
"$WL/fixedwork" 2000000000 >/dev/null & load=$!
echo "bpfprof profile -F 99 -a 10 -f:   $(( $(peak_rss_kb "$BPFPROF" profile -F 99 -a -f 10) / 1024 )) MB"
if have perf; then
	echo "perf record -F 99 -a -g 10 s:     $(( $(peak_rss_kb perf record -q -F 99 -a -g -o "$BTMP/perf.data" -- sleep 10) / 1024 )) MB"
fi
if have bpftrace; then
	echo "bpftrace profile 10 s:            $(( $(peak_rss_kb bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); } interval:s:10 { exit(); }') / 1024 )) MB"
fi
kill $load 2>/dev/null; wait $load 2>/dev/null

echo
echo "## (5) own CPU (user+sys) of a 5 s system-wide profile at 99 Hz while a compiler loop runs, inlined frames included (target <= 0.15 s)"
# a new cc1 every few hundred ms: the cost per new process and per new file (issue 15)
printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' >"$BTMP/cc.c"
( while :; do cc -O2 -c "$BTMP/cc.c" -o "$BTMP/cc.o" 2>/dev/null; done ) & load=$!
sleep 0.5
# own CPU to stdout, peak RSS (KiB) appended to the file $RSS
own_cpu() {
	/usr/bin/time -f "%U %S %M" -o "$BTMP/cpu" "$@" >/dev/null 2>&1
	awk '{ print $1 + $2 }' "$BTMP/cpu"
	awk '{ print $3 }' "$BTMP/cpu" >>"$RSS"
}
# the persistent cache filled first (unwind tables, inline chains: libc's debug file put in it
# whole, 0.3-0.5 s once; the boot's core kernel symbols), as on a machine profiled before; by
# BEFORE too (another version keeps files of other names beside ours)
"$BPFPROF" profile -F 99 -a 5 -o /dev/null 2>/dev/null
[ -n "$BEFORE" ] && "$BEFORE" profile -F 99 -a 5 -o /dev/null 2>/dev/null
for i in $(seq "$REPS"); do
	RSS=$BTMP/cc_rss own_cpu "$BPFPROF" profile -F 99 -a 5 >>"$BTMP/cc_own.all"
	[ -n "$BEFORE" ] && RSS=$BTMP/cc_rss.before own_cpu "$BEFORE" profile -F 99 -a 5 >>"$BTMP/cc_before.all"
done
median <"$BTMP/cc_own.all" >"$BTMP/cc_own"
echo "bpfprof profile -F 99 -a 5:        $(cat "$BTMP/cc_own") s, peak RSS $(( $(median <"$BTMP/cc_rss") / 1024 )) MB (target <= 16)"
[ -n "$BEFORE" ] && echo "  BEFORE ($BEFORE): $(median <"$BTMP/cc_before.all") s, peak RSS $(( $(median <"$BTMP/cc_rss.before") / 1024 )) MB"
for i in $(seq "$REPS"); do RSS=$BTMP/cc_rss.fp own_cpu "$BPFPROF" profile --unwind fp -F 99 -a 5; done | median >"$BTMP/cc_fp"
echo "  the same with --unwind fp:        $(cat "$BTMP/cc_fp") s"
kill $load 2>/dev/null; wait $load 2>/dev/null
exit 0
