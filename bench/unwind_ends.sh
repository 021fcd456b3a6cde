#!/bin/bash
# Where user stacks end early under process churn (issue 15): `profile -F 999 -a -v` for SECS
# seconds (default 60) while an `ls` loop and a compiler loop run (as bench/soak.sh's churn), its
# unwind line's reasons ("ended early: ..."), the BPF time per sample of do_sample and of the walk
# at execve()/exit_group() entry (-v's BPF cost), and the share of the churn's samples (ls, cc,
# cc1, as, collect2, ld) whose user stack reaches its outermost frame (_start, clone,
# start_thread, ld.so's _dl_start_user; or an address of a stripped file, as ls's entry shows:
# counted as reached, which may count a few stacks that end inside such a file, both tools alike).  BEFORE=BINARY runs another bpfprof beside it on the same load; PERF=1 then
# records `perf record --call-graph dwarf -a` on the same churn for PERF_SECS (default 10) and
# counts the same share in `perf script` (8 KB of stack copied per sample, unwound in user space).
. "$(dirname "$0")/lib.sh"

SECS=${1:-60}
BEFORE=${BEFORE:-}
CHURN='^(ls|cc|cc1|as|collect2|ld)$'
OUTER='^(_start|clone|__clone|clone3|__clone3|__GI___clone3|start_thread|_dl_start_user|\\[.*\\])$'

printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' >"$BTMP/c.c"
churn_start() {
	(while :; do ls /usr/bin >/dev/null; done) &
	(while :; do cc -O2 -c "$BTMP/c.c" -o "$BTMP/c.o" 2>/dev/null; done) &
}
churn_stop() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; }

# Folded stacks on stdin: "complete total" of the churn's samples (outermost user frame first).
share_folded() {
	awk -v churn="$CHURN" -v outer="$OUTER" '{
		n = $NF; split($1, f, ";")
		if (f[1] !~ churn) next
		all += n; if (f[2] ~ outer && f[2] != "[unknown]") done += n
	} END { printf "%d %d\n", done, all }'
}

# perf script on stdin: the same share, the last user frame of each sample being its outermost.
share_perf() {
	awk -v churn="$CHURN" -v outer="$OUTER" '
	function flush() { if (comm ~ churn && last != "") { all++; if (last ~ outer) done++ } comm = ""; last = "" }
	/^[^ \t]/ { flush(); comm = $1; next }
	/^[ \t]+[0-9a-f]+ / {
		if ($0 ~ /kernel\.kallsyms/) next
		s = $2; sub(/\+0x[0-9a-f]+$/, "", s)
		# a stripped file'"'"'s address: "[unknown] (/usr/bin/ls)" as bpfprof'"'"'s "[ls]"
		if (s == "[unknown]" && $NF != "([unknown])") s = "[" $NF "]"
		last = s; next }
	/^$/ { flush() }
	END { flush(); printf "%d %d\n", done, all }'
}

names=(after)
bins=("$BPFPROF")
[ -n "$BEFORE" ] && names+=(before) && bins+=("$BEFORE")
echo "## profile -F 999 -a -v ${SECS}s under churn (ls loop, cc loop); load: $(uptime | sed 's/.*load/load/')"
churn_start
pids=()
for i in "${!bins[@]}"; do
	"${bins[$i]}" profile -F 999 -a -v -f "$SECS" >"$BTMP/f.$i" 2>"$BTMP/err.$i" &
	pids+=($!)
done
wait "${pids[@]}"
churn_stop
for i in "${!bins[@]}"; do
	read -r done all < <(share_folded <"$BTMP/f.$i")
	echo "${names[$i]}: ${bins[$i]}"
	sed -n 's/.* \([0-9]* stacks walked, .*\)/  \1/p' "$BTMP/err.$i" | head -1
	echo "  BPF cost: $(grep -m1 'BPF cost:' "$BTMP/err.$i" | grep -o '\(unwind_syscall\|do_sample\) [^;]*' | paste -sd';' | sed 's/;/; /')"
	echo "  the churn's samples reaching _start/clone: $done of $all ($(awk -v a="$done" -v b="$all" 'BEGIN { printf "%.1f%%", b ? 100 * a / b : 0 }'))"
done

if [ "${PERF:-0}" = 1 ] && have perf; then
	PERF_SECS=${PERF_SECS:-10}
	churn_start
	perf record -q -F 999 -a --call-graph dwarf -o "$BTMP/perf.data" -- sleep "$PERF_SECS" >/dev/null 2>&1
	churn_stop
	read -r done all < <(perf script -i "$BTMP/perf.data" -F comm,ip,sym,dso 2>/dev/null | share_perf)
	echo "perf record --call-graph dwarf -a ${PERF_SECS}s, same churn: the churn's samples reaching _start/clone: $done of $all ($(awk -v a="$done" -v b="$all" 'BEGIN { printf "%.1f%%", b ? 100 * a / b : 0 }'))"
fi
