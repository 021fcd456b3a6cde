#!/bin/bash
# In-kernel unwinding (--unwind eh) against the frame-pointer walk (--unwind fp) and perf's DWARF
# mode (perf record --call-graph dwarf + perf script), on CPU-bound binaries built without frame
# pointers: (1) BPF cost per sample and workload slowdown at -F 999, (2) bytes moved to user
# space, (3) time from the end of the run to the final output, (4) unwind table memory for a
# process using libc + libstdc++ + its binary, (5) the persistent table cache, cold and warm,
# (6) building the largest tables installed (build/bench/cfi_mem: rows, CPU, peak RSS).
. "$(dirname "$0")/lib.sh"

DEEP="$WL/cppsort"        # C++, ~25 frames through libstdc++ and libc, no frame pointers
FIXED="$WL/fixedwork_nofp" # fixed work on every CPU, 4 frames, no frame pointers
SECS=${SECS:-4}

# BPF run time per sample of do_sample while a profile runs, from the kernel's BPF statistics.
old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats 2>/dev/null; rm -rf "$BTMP"; kill $(jobs -p) 2>/dev/null' EXIT
ns_per_sample() { # METHOD: profile $DEEP for $SECS s, print ns per do_sample run
	# workload and sampling on one CPU: every run of do_sample is a sample of the workload
	taskset -c 0 "$DEEP" $((SECS + 2)) & local w=$!
	sleep 0.3
	"$BPFPROF" profile -F 999 -U -C 0 --unwind "$1" -f -p $w "$SECS" >"$BTMP/deep.$1" 2>/dev/null & local p=$!
	sleep $((SECS - 1))
	bpftool prog show name do_sample 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) } }
		     END { if (c) printf "%.0f\n", t / c; else print "nan" }'
	wait $p; kill $w 2>/dev/null; wait $w 2>/dev/null
}

echo "## (1a) BPF cost per sample, user stacks only, C++ without frame pointers (target: eh <= 2x fp)"
fp=() eh=()
for i in $(seq "$REPS"); do fp+=("$(ns_per_sample fp)"); eh+=("$(ns_per_sample eh)"); done
fpm=$(printf '%s\n' "${fp[@]}" | median); ehm=$(printf '%s\n' "${eh[@]}" | median)
depth() { awk '{ n = split($0, f, ";"); s += $NF; d += (n - 1) * $NF } END { if (s) printf "%.1f", d / s; else print "nan" }' "$1"; }
echo "--unwind fp:  $fpm ns/sample, $(depth "$BTMP/deep.fp") frames per stack (the leaf and garbage)"
echo "--unwind eh:  $ehm ns/sample, $(depth "$BTMP/deep.eh") frames per stack"
echo "eh / fp:      $(ratio "$ehm" "$fpm")"

echo
echo "## (1b) fixed work on every CPU, no frame pointers, sampled at 999 Hz: time / untraced time"
base=() tfp=() teh=() tperf=()
for i in $(seq "$REPS"); do
	base+=("$("$FIXED")")
	"$BPFPROF" profile -F 999 -a --unwind fp -f 60 >/dev/null 2>&1 & p=$!; sleep 0.5
	tfp+=("$("$FIXED")"); kill -INT $p; wait $p
	"$BPFPROF" profile -F 999 -a --unwind eh -f 60 >/dev/null 2>&1 & p=$!; sleep 0.5
	teh+=("$("$FIXED")"); kill -INT $p; wait $p
	if have perf; then
		perf record -q -F 999 -a --call-graph dwarf -o "$BTMP/fx.data" -- sleep 60 >/dev/null 2>&1 & p=$!; sleep 0.5
		tperf+=("$("$FIXED")"); kill -INT $p; wait $p 2>/dev/null
	fi
done
b=$(printf '%s\n' "${base[@]}" | median)
echo "untraced:                         $b s"
for v in tfp teh tperf; do
	eval "arr=(\"\${$v[@]}\")"
	[ ${#arr[@]} -gt 0 ] || continue
	m=$(printf '%s\n' "${arr[@]}" | median)
	case $v in
	tfp) n="bpfprof --unwind fp -a:" ;; teh) n="bpfprof --unwind eh -a:" ;; tperf) n="perf --call-graph dwarf -a:" ;;
	esac
	printf "%-33s %s s  ratio %s\n" "$n" "$m" "$(ratio "$m" "$b")"
done

echo
echo "## (2) bytes moved to user space, (3) seconds beyond a ${SECS} s run, start to final output"
"$DEEP" $((SECS + 12)) & w=$!
sleep 0.3
t0=$(date +%s.%N)
"$BPFPROF" profile -F 999 -U --unwind eh -f -p $w "$SECS" >"$BTMP/own.folded" 2>/dev/null
t1=$(date +%s.%N)
own_after=$(awk -v a="$t0" -v b="$t1" -v s="$SECS" 'BEGIN { printf "%.3f", b - a - s }')
keys=$(wc -l <"$BTMP/own.folded")
# per distinct stack: its key and count (48 B) and its frames (a 1032 B stack_trace); the
# 16 B ring-buffer requests (one per table and per process) are noise
own_bytes=$((keys * (48 + 1032)))
echo "bpfprof --unwind eh:                  $own_after s; ~$((own_bytes / 1024)) KB read ($keys distinct stacks)"
if have perf; then
	t0=$(date +%s.%N)
	perf record -q -F 999 --call-graph dwarf -p $w -o "$BTMP/perf.data" -- sleep "$SECS" >/dev/null 2>&1
	perf script -i "$BTMP/perf.data" >"$BTMP/perf.txt" 2>/dev/null
	t1=$(date +%s.%N)
	perf_after=$(awk -v a="$t0" -v b="$t1" -v s="$SECS" 'BEGIN { printf "%.3f", b - a - s }')
	perf_bytes=$(stat -c %s "$BTMP/perf.data")
	echo "perf --call-graph dwarf + perf script: $perf_after s; $((perf_bytes / 1024)) KB perf.data"
	echo "time beyond the run, bpfprof / perf:   $(ratio "$own_after" "$perf_after") (target <= 0.1)"
	echo "bytes, bpfprof / perf:                 $(ratio "$own_bytes" "$perf_bytes")"
fi
kill $w 2>/dev/null; wait $w 2>/dev/null

echo
echo "## (4) unwind table memory for cppsort: libc + libstdc++ + its binary (target <= 8 MB)"
"$BPFPROF" profile -F 999 -U --unwind eh -v -f -- "$DEEP" 1 2>&1 >/dev/null | grep -E "unwind: loaded|unwind tables:" | sed 's/^bpfprof: //'

echo
echo "## (5) the persistent table cache: cold (empty) against warm, median of $REPS"
# a private cache directory: the machine's own is neither used nor disturbed
export XDG_CACHE_HOME=$BTMP/xdg
pre_ms() { # the -v line: tables of a COMMAND (cppsort: its binary, libstdc++, libm, libgcc_s, libc) before it runs
	"$BPFPROF" profile -F 99 -U -v -f -- "$DEEP" 0.2 2>&1 >/dev/null |
		sed -n 's/.*tables of the targets loaded before they run in \([0-9.]*\) ms.*/\1/p'
}
after_s() { # a 1 s system-wide profile: wall seconds beyond the 1 s
	local t0 t1
	t0=$(date +%s.%N); "$BPFPROF" profile -F 99 -a -f 1 >/dev/null 2>&1; t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a - 1 }'
}
cpre=() wpre=() caft=() waft=()
for i in $(seq "$REPS"); do
	rm -rf "$XDG_CACHE_HOME"; cpre+=("$(pre_ms)"); wpre+=("$(pre_ms)")
	rm -rf "$XDG_CACHE_HOME"; caft+=("$(after_s)"); waft+=("$(after_s)")
done
echo "COMMAND's tables before it runs (cppsort), cold: $(printf '%s\n' "${cpre[@]}" | median) ms, warm: $(printf '%s\n' "${wpre[@]}" | median) ms"
echo "profile -F 99 -a 1, wall beyond 1 s, cold:      $(printf '%s\n' "${caft[@]}" | median) s, warm: $(printf '%s\n' "${waft[@]}" | median) s (target <= 0.030)"
echo "## (6) building a table: the largest shared objects and compilers installed (rows, CPU, peak RSS over the RSS before)"
big=$(find /usr/lib /usr/libexec -type f \( -name '*.so*' -o -name cc1 -o -name cc1plus \) -size +20M 2>/dev/null |
	xargs -r ls -S 2>/dev/null | head -4)
if [ -n "$big" ] && [ -x "$ROOT/build/bench/cfi_mem" ]; then
	# shellcheck disable=SC2086 # one path a word
	"$ROOT/build/bench/cfi_mem" $big
else
	echo "(no shared object over 20 MB, or build/bench/cfi_mem not built: make bench builds it)"
fi
exit 0
