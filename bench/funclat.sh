#!/bin/bash
# bpfprof funclat / count: (1) cost per call of a uprobe+uretprobe latency histogram on a tight
# loop of calls, vs bpftrace; (2) cost per syscall of counting every syscall tracepoint, vs perf
# stat; (3) time to attach to every syscall tracepoint, and the whole run start to finish.
. "$(dirname "$0")/lib.sh"
F=$WL/funcs
S=$WL/syscalls
N=${N:-200000}
NSYS=${NSYS:-2000000}

# ns per call printed by "funcs loop N" (a bare number line of the output)
loop_ns() { grep -E '^[0-9]+(\.[0-9]+)?$' | tail -n 1; }

echo "## (1) uprobe+uretprobe latency histogram of fast_op (~1 us), $N calls: ns per call"
base=() own=() bt=()
for i in $(seq "$REPS"); do
	base+=("$("$F" loop "$N" | loop_ns)")
	own+=("$("$BPFPROF" funclat "$F:fast_op" -- "$F" loop "$N" 2>/dev/null | loop_ns)")
	if have bpftrace; then
		bt+=("$(bpftrace -e "uprobe:$F:fast_op { @s[tid] = nsecs; }
			uretprobe:$F:fast_op /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }" \
			-c "$F loop $N" 2>/dev/null | loop_ns)")
	fi
done
b=$(printf '%s\n' "${base[@]}" | median)
o=$(printf '%s\n' "${own[@]}" | median)
echo "untraced:                            $b ns/call"
echo "bpfprof funclat:                     $o ns/call  (+$(awk -v a="$o" -v b="$b" 'BEGIN { printf "%.0f", a - b }') ns)"
if [ ${#bt[@]} -gt 0 ]; then
	t=$(printf '%s\n' "${bt[@]}" | median)
	echo "bpftrace uprobe/uretprobe + hist:    $t ns/call  (+$(awk -v a="$t" -v b="$b" 'BEGIN { printf "%.0f", a - b }') ns)"
	echo "added cost bpfprof / bpftrace:       $(ratio "$(awk -v a="$o" -v b="$b" 'BEGIN { print a - b }')" "$(awk -v a="$t" -v b="$b" 'BEGIN { print a - b }')")  (target <= 1.0)"
fi

echo
echo "## (2) getppid loop, $NSYS calls, counting every syscalls:sys_enter_* tracepoint: ns per call"
sys_ns() { grep -o 'ns/call [0-9.]*' | awk '{ print $2 }'; }
base=() own=() prf=()
for i in $(seq "$REPS"); do
	base+=("$(WL_REPORT_NS=1 "$S" getppid "$NSYS" 2>&1 >/dev/null | sys_ns)")
	own+=("$(WL_REPORT_NS=1 "$BPFPROF" count 'syscalls:sys_enter_*' -- "$S" getppid "$NSYS" 2>&1 >/dev/null | sys_ns)")
done
if have perf; then
	# perf needs about 40 ms per tracepoint to close its events: one run only
	prf+=("$(WL_REPORT_NS=1 perf stat -e 'syscalls:sys_enter_*' -- "$S" getppid "$NSYS" 2>&1 >/dev/null | sys_ns)")
fi
b=$(printf '%s\n' "${base[@]}" | median)
o=$(printf '%s\n' "${own[@]}" | median)
echo "untraced:                            $b ns/call"
echo "bpfprof count 'syscalls:sys_enter_*': $o ns/call  ratio $(ratio "$o" "$b")"
if [ ${#prf[@]} -gt 0 ]; then
	p=$(printf '%s\n' "${prf[@]}" | median)
	echo "perf stat -e 'syscalls:sys_enter_*': $p ns/call  ratio $(ratio "$p" "$b")"
fi

echo
echo "## (3) every syscall tracepoint: attach time, and the whole run of 'true' start to finish"
att=()
for i in $(seq "$REPS"); do
	att+=("$("$BPFPROF" count -v 'syscalls:sys_enter_*' -- true 2>&1 >/dev/null | sed -n 's/.*attached in \([0-9.]*\) ms.*/\1/p')")
done
echo "bpfprof count attach (target < 1000): $(printf '%s\n' "${att[@]}" | median) ms"
echo "bpfprof count 'syscalls:sys_enter_*' -- true: $(for i in $(seq "$REPS"); do wall "$BPFPROF" count 'syscalls:sys_enter_*' -- true; done | median) s"
echo "bpfprof count 'syscalls:sys_*' -- true:       $(wall "$BPFPROF" count 'syscalls:sys_*' -- true) s"
have perf && echo "perf stat -e 'syscalls:sys_enter_*' true:    $(wall perf stat -e 'syscalls:sys_enter_*' true) s"
echo "bpfprof count 'sched:*' 'block:*' 'irq:*' -- true: $(wall "$BPFPROF" count 'sched:*' 'block:*' 'irq:*' -- true) s"
have perf && echo "perf stat -e 'sched:*' -e 'block:*' -e 'irq:*' true: $(wall perf stat -e 'sched:*' -e 'block:*' -e 'irq:*' true) s"
if have bpftrace && [ -n "${BENCH_SLOW:-}" ]; then
	echo "bpftrace tracepoint:syscalls:sys_enter_*:     $(wall bpftrace -e 'tracepoint:syscalls:sys_enter_* { @ = count(); }' -c true) s"
fi
exit 0
