#!/bin/bash
# annotate (issue 16): SYMBOL as a positional in a live run, kernel functions disassembled from the
# running kernel's code with their samples per instruction, kernel source lines where a vmlinux
# with debug info is found.
. "$(dirname "$0")/lib.sh"
need_root annotate || exit 0

# ---- the grammar: annotate [options] [SYMBOL] [DURATION] [-- COMMAND] ----
if [ "$(uname -m)" = x86_64 ]; then
	# from another directory than the one the workload was compiled in (its DWARF names the
	# source relative to that: tests/workloads/inlined.c)
	(cd "$TMP" && "$BPFPROF" annotate --stdio -F 999 asm_loop -- "$WL/inlined" loop 1 >"$TMP/pos.txt" 2>"$TMP/pos.err")
	check "annotate: SYMBOL positional in a live run annotates that function only" \
		test "$(grep -c 'Disassembly of' "$TMP/pos.txt")" -eq 1 -a "$(grep -c 'Disassembly of asm_loop ' "$TMP/pos.txt")" -eq 1
	check "annotate: the source text is found from another directory (DW_AT_comp_dir)" \
		grep -q '__asm__ volatile' "$TMP/pos.txt"
	# SYMBOL then DURATION, with -p
	"$WL/inlined" loop 20 >/dev/null &
	wl=$!
	sleep 0.2
	"$BPFPROF" annotate --stdio -F 999 -p $wl asm_loop 0.5 >"$TMP/pid.txt" 2>"$TMP/pid.err"
	rc=$?
	kill $wl 2>/dev/null
	wait $wl 2>/dev/null
	check "annotate: -p PID SYMBOL DURATION (rc $rc)" bash -c "[ $rc -eq 0 ] && grep -q 'Disassembly of asm_loop ' '$TMP/pid.txt'"
else
	skip "annotate: SYMBOL positional" "the loop workload is x86-64 assembly"
fi
usage_error() { # usage_error NAME MESSAGE-REGEX ARGS...: one line, exit 2
	local name=$1 msg=$2 out rc; shift 2
	out=$(timeout 30 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	check "$name (exit $rc: $out)" bash -c "[ $rc -eq 2 ] && [ \$(wc -l <<<'$out') -eq 1 ] && grep -Eq '^bpfprof: .*$msg' <<<'$out'"
}
usage_error "annotate: two symbols" "unexpected argument 'b'" annotate a b -- true
usage_error "annotate: DURATION before SYMBOL" "unexpected argument 'spin'" annotate 5 spin -- true
usage_error "annotate: two durations" "unexpected argument '6'" annotate 5 6 -- true
usage_error "annotate: SYMBOL and -s" "given twice" annotate -s a b -- true
expect_one_error "annotate -i: SYMBOL and -s" "the function is given twice \('b' and -s a\)" -- annotate -i /dev/null -s a b
usage_error "annotate: SYMBOL DURATION and -d" "DURATION given twice" annotate -d 1 a 2 -- true
usage_error "annotate: a bad DURATION" "invalid duration" annotate a 0 -- true
"$BPFPROF" annotate --help >"$TMP/help.txt"
check "annotate --help shows [SYMBOL] [DURATION]" grep -q 'Usage: bpfprof annotate \[options\] \[SYMBOL\] \[DURATION\] \[-- COMMAND' "$TMP/help.txt"

# ---- kernel functions: a workload reading /dev/zero spends its time in the kernel's read path ----
"$BPFPROF" annotate --stdio -F 999 --percent-limit 20 -o "$TMP/k.txt" -- "$WL/syscalls" read 2 2>"$TMP/k.err"
kfn=$(awk '/Disassembly of / { f = $8 } /^ +:\t\[kernel\.kallsyms\]/ && f { print f; exit }' "$TMP/k.txt")
check "annotate: the hot kernel function is annotated (${kfn:-none}; $(head -c 300 "$TMP/k.err"))" test -n "$kfn"
# the same function profile's report puts first among kernel functions
"$BPFPROF" profile -F 999 --no-children -o "$TMP/kprof.txt" -- "$WL/syscalls" read 1 2>/dev/null
ktop=$(awk '/^ +[0-9.]+%/ && / \[k\] / { print $NF; exit }' "$TMP/kprof.txt")
check "annotate: $kfn is the report's hottest kernel function ($ktop)" test "$kfn" = "$ktop"
# its instructions and percentages: every instruction a row, percentages summing to 100
fn_rows() { awk -v f="$1" '/Disassembly of / { on = ($8 == f) } on && /^ +[0-9.]+ :\t *[0-9a-f]+:/' "$2"; }
fn_rows "$kfn" "$TMP/k.txt" >"$TMP/krows.txt"
n=$(wc -l <"$TMP/krows.txt")
sum=$(awk '{ s += $1 } END { printf "%.2f", s }' "$TMP/krows.txt")
check "annotate: $kfn has its instructions ($n rows)" test "$n" -ge 5
check "annotate: $kfn's percentages sum to 100 ($sum)" within "$sum" 100 0.005
hot=$(sort -rn "$TMP/krows.txt" | head -1)
check "annotate: $kfn's hottest instruction holds samples ($hot)" awk -v p="$(awk '{ print $1 }' <<<"$hot")" 'BEGIN { exit !(p > 0) }'
# the addresses are the function's: inside its kallsyms bounds
start=$(awk -v f="$kfn" '$3 == f && NF == 3 { print $1; exit }' /proc/kallsyms)
first=$(head -1 "$TMP/krows.txt" | awk '{ sub(":", "", $3); print $3 }')
check "annotate: $kfn's first instruction is at its kallsyms address ($first, $start)" test -n "$first" -a "$first" = "$start"
# perf agrees on which instruction is hottest, where perf can annotate the kernel here
if command -v perf >/dev/null && perf record -q -F 999 -o "$TMP/perf.data" -- "$WL/syscalls" read 2 2>/dev/null &&
	perf annotate -i "$TMP/perf.data" --stdio "$kfn" >"$TMP/perf_ann.txt" 2>/dev/null &&
	grep -qE '^ +[0-9.]+ +:' "$TMP/perf_ann.txt"; then
	phot=$(awk '/^ +[0-9.]+ +: +[0-9a-f]+:/ { sub(":", "", $3); print $1, $3 }' "$TMP/perf_ann.txt" | sort -rn | head -1 | awk '{ print $2 }')
	ohot=$(awk '{ sub(":", "", $3); print $3 }' <<<"$hot")
	check "annotate: perf annotate's hottest instruction of $kfn is ours ($phot vs $ohot)" \
		bash -c "[ -n '$phot' ] && [ \"\$((0x$phot))\" -eq \"\$((0x$ohot))\" ] || [ \"\$((0x$phot & 0xffffffff))\" -eq \"\$((0x$ohot & 0xffffffff))\" ]"
else
	skip "annotate: perf annotate of $kfn" "perf cannot annotate the kernel here (no /proc/kcore, no vmlinux)"
fi
# a pprof's kernel addresses are not annotated (another boot's, maybe), and it says so
"$BPFPROF" profile -F 999 --pprof "$TMP/k.pb.gz" -o /dev/null -- "$WL/syscalls" read 1 2>/dev/null
"$BPFPROF" annotate -i "$TMP/k.pb.gz" --percent-limit 0 >"$TMP/kfile.txt" 2>&1
check "annotate -i: kernel samples counted, not annotated, and said why" \
	grep -q '^# [0-9]* samples in the kernel are not annotated: its code is read in a live run only' "$TMP/kfile.txt"
expect_one_error "annotate -i: a kernel function named: why it is not annotated" \
	"no samples in $kfn \(a file's kernel samples are not annotated\)" -- annotate -i "$TMP/k.pb.gz" "$kfn"
# a function whose time is all in its callees (main calls driver): said so, not "no samples";
# a name in no stack: said so, not blamed on the kernel samples
"$BPFPROF" profile --pprof "$TMP/hc.pb.gz" -o /dev/null -- "$WL/hotcold" 2>/dev/null
expect_one_error "annotate -i: a caller's time is in its callees, said with its count" \
	"no samples in main itself: its [0-9]+ samples \([0-9.]+%\) are in the functions it calls" \
	-- annotate -i "$TMP/hc.pb.gz" main
expect_one_error "annotate -i: a function in no stack is named as such" \
	"no function named no_such_fn in the [0-9]+ samples" -- annotate -i "$TMP/hc.pb.gz" no_such_fn

# ---- kernel source lines: only with the running kernel's vmlinux with debug info ----
if grep -q 'no vmlinux with debug info' "$TMP/k.txt"; then
	skip "annotate: kernel source lines" "no vmlinux with debug info for $(uname -r) (/usr/lib/debug/boot/vmlinux-$(uname -r), /usr/lib/debug/lib/modules/$(uname -r)/vmlinux, by its build-id or from debuginfod)"
	skip "report: kernel frames' source lines" "no vmlinux with debug info for $(uname -r)"
else
	check "annotate: kernel source lines interleaved in $kfn" \
		bash -c "awk -v f='$kfn' '/Disassembly of / { on = (\$8 == f) } on' '$TMP/k.txt' | grep -qE '^ +:	[^ ]+\.[ch]:[0-9]+'"
	"$BPFPROF" profile -F 999 --no-children --srcline -o "$TMP/ksrc.txt" -- "$WL/syscalls" read 1 2>/dev/null
	check "report: kernel frames have source lines" grep -qE '\[k\] .*\.[ch]:[0-9]+' "$TMP/ksrc.txt"
fi

# ---- a shared library's function, named as perf names a C++ one (no parameter list) ----
"$BPFPROF" record -F 499 -o "$TMP/cpp.pb.gz" -- "$WL/cppsort" 1 2>/dev/null
"$BPFPROF" annotate -i "$TMP/cpp.pb.gz" --stdio std::_Hash_bytes >"$TMP/cpp.txt" 2>"$TMP/cpp.err"
check "annotate -i: std::_Hash_bytes names std::_Hash_bytes(void const*, ...) in libstdc++ ($(head -c 200 "$TMP/cpp.err"))" \
	bash -c "grep -q 'Disassembly of std::_Hash_bytes(void const\*' '$TMP/cpp.txt' && grep -qE '^ +:	/.*libstdc\+\+\.so' '$TMP/cpp.txt'"
sum=$(awk '/^ +[0-9.]+ :\t *[0-9a-f]+:/ { s += $1 } END { printf "%.2f", s }' "$TMP/cpp.txt")
check "annotate -i: std::_Hash_bytes's percentages sum to 100 ($sum)" within "$sum" 100 0.001

# ---- files without addresses: said so, not blamed on callees or symbols ----
"$BPFPROF" report -i "$TMP/hc.pb.gz" -f -o "$TMP/hc.folded" 2>/dev/null
"$BPFPROF" report -i "$TMP/hc.folded" --pprof "$TMP/noaddr.pb.gz" -o /dev/null 2>/dev/null
expect_one_error "annotate -i: folded stacks have no addresses" "no sample is at an address in a file: folded stacks" \
	-- annotate -i "$TMP/hc.folded" spin
expect_one_error "annotate -i: a pprof without addresses" "no sample is at an address in a file" \
	-- annotate -i "$TMP/noaddr.pb.gz"

# ---- a function's name is not enough to tell it: two static spin()s, one in a.c, one in b.c ----
# (a.c's spins twice as long): each is annotated with its own samples, none lost between them
for f in a b; do
	n=$([ $f = a ] && echo 2000000 || echo 1000000)
	printf 'static volatile unsigned long sink;\n__attribute__((noinline)) static void spin(unsigned long n)\n{\n\tunsigned long x = n;\n\tfor (unsigned long i = 0; i < n; i++)\n\t\tx = x * %s + i;\n\tsink = x;\n}\nvoid run_%s(void) { spin(%s); }\n' \
		"$([ $f = a ] && echo 6364136223846793005UL || echo 0x9e3779b97f4a7c15UL)" $f $n >"$TMP/dup_$f.c"
done
printf '#include <time.h>\nvoid run_a(void); void run_b(void);\nint main(void)\n{\n\ttime_t end = time(NULL) + 2;\n\twhile (time(NULL) < end) {\n\t\trun_a();\n\t\trun_b();\n\t}\n\treturn 0;\n}\n' >"$TMP/dup_main.c"
if cc -O1 -g -o "$TMP/dup" "$TMP/dup_main.c" "$TMP/dup_a.c" "$TMP/dup_b.c" 2>"$TMP/dup_cc.err"; then
	"$BPFPROF" annotate --stdio -F 999 spin -- "$TMP/dup" >"$TMP/dup.txt" 2>"$TMP/dup.err"
	sections=$(grep -c 'Disassembly of spin ' "$TMP/dup.txt")
	check "annotate: two static functions of one name are two annotations ($sections)" test "$sections" -eq 2
	# each one's percentages sum to 100: no samples of the other one's addresses counted in
	sums=$(awk '/Disassembly of / { n++ } /^ +[0-9.]+ :\t *[0-9a-f]+:/ { s[n] += $1 } END { for (i = 1; i <= n; i++) printf "%.1f ", s[i] }' "$TMP/dup.txt")
	check "annotate: each spin()'s percentages sum to 100 ($sums)" \
		awk -v s="$sums" 'BEGIN { n = split(s, v, " "); for (i = 1; i <= n; i++) if (v[i] < 99.9 || v[i] > 100.1) exit 1; exit n != 2 }'
	# a.c's first (the hotter), then b.c's
	files=$(awk '/Disassembly of / { n++ } /^ +:\tdup_[ab]\.c:[0-9]+/ && !seen[n]++ { sub(":.*", "", $2); printf "%s ", $2 }' "$TMP/dup.txt")
	check "annotate: the hotter spin() (dup_a.c) first, then dup_b.c's ($files)" test "$files" = "dup_a.c dup_b.c "
else
	fail "annotate: two static functions of one name" "cc: $(head -c 300 "$TMP/dup_cc.err")"
fi

# ---- events apart: a run of two events annotates each event's samples, as perf does ----
"$BPFPROF" record -e cpu-clock,task-clock -F 499 -o "$TMP/two.pb.gz" -- "$WL/hotcold" 1 2>/dev/null
"$BPFPROF" annotate -i "$TMP/two.pb.gz" --stdio spin >"$TMP/two.txt" 2>"$TMP/two.err"
check "annotate -i: two events are two annotations of spin ($(grep -o 'for [a-z-]* ([0-9]* samples' "$TMP/two.txt" | tr '\n' ' '))" \
	bash -c "[ \$(grep -c 'Disassembly of spin for cpu-clock ' '$TMP/two.txt') -eq 1 ] && [ \$(grep -c 'Disassembly of spin for task-clock ' '$TMP/two.txt') -eq 1 ]"
"$BPFPROF" annotate --stdio -e cpu-clock,task-clock -F 499 spin -- "$WL/hotcold" 1 >"$TMP/two_live.txt" 2>&1
check "annotate: a live run of two events: an annotation each" \
	test "$(grep -cE 'Disassembly of spin for (cpu|task)-clock ' "$TMP/two_live.txt")" -eq 2

# ---- a file rebuilt or gone since the profile was taken: said once, not disassembled ----
cp "$WL/hotcold" "$TMP/hc_copy"
"$BPFPROF" record -F 499 -o "$TMP/copy.pb.gz" -- "$TMP/hc_copy" 1 2>/dev/null
cp "$WL/inlined" "$TMP/hc_copy"
expect_one_error "annotate -i: a file rebuilt since is not disassembled (build-ids differ)" \
	"$TMP/hc_copy is not the file the samples are of \(build-id [0-9a-f]+, the samples' [0-9a-f]+\)" \
	-- annotate -i "$TMP/copy.pb.gz" spin
rm "$TMP/hc_copy"
# (spin, hot_a, hot_b: the file's functions, one line for them)
expect_one_error "annotate -i: a file gone since: why, once" "cannot read $TMP/hc_copy: No such file or directory" \
	-- annotate -i "$TMP/copy.pb.gz" '[sh][po][it]*'

# ---- an output that cannot be written: said, exit 1 ----
expect_one_error "annotate -i: a full disk is said" "cannot write /dev/full: No space left on device" \
	-- annotate -i "$TMP/hc.pb.gz" -o /dev/full spin
expect_one_error "annotate: a full disk is said (a live run)" "cannot write /dev/full: No space left on device" \
	-- annotate -F 99 -o /dev/full work -- "$WL/inlined" inline 0.3

# ---- the vdso: the image every process maps (ours too), annotated as perf does ----
vfn=$([ "$(uname -m)" = aarch64 ] && echo __kernel_clock_gettime || echo __vdso_clock_gettime)
"$BPFPROF" annotate --stdio -F 499 $vfn -- "$WL/vdsoclock" 1 >"$TMP/vdso.txt" 2>"$TMP/vdso.err"
check "annotate: the vdso's $vfn is annotated ($(head -c 200 "$TMP/vdso.err"))" \
	bash -c "grep -q 'Disassembly of $vfn ' '$TMP/vdso.txt' && grep -qE '^ +:	\[vdso\]$' '$TMP/vdso.txt'"
sum=$(awk '/^ +[0-9.]+ :\t *[0-9a-f]+:/ { s += $1 } END { printf "%.2f", s }' "$TMP/vdso.txt")
check "annotate: the vdso function's percentages sum to 100 ($sum)" within "$sum" 100 0.001
# code in no file (JIT): not annotated, and the annotation says how much of the run that is
"$BPFPROF" annotate --stdio -F 499 -- "$WL/jit" 1 >"$TMP/jit.txt" 2>"$TMP/jit.err"
# (where every sample was in the JIT code, there is no function to show, and the one line says
# why instead: all of them in code of no file)
jit_said=$(grep -h '^# \|no function to annotate' "$TMP/jit.txt" "$TMP/jit.err" | head -1)
check "annotate: samples in JIT code are said not annotated ($jit_said)" \
	bash -c "grep -qE '^# [0-9]+ samples \((9[0-9]|100)\.[0-9]%\) are not annotated: in code of no file' '$TMP/jit.txt' ||
		 awk '/^bpfprof: no function to annotate: / { n = \$6; u = \$(NF - 9) } END { exit !(n > 0 && u >= 0.9 * n) }' '$TMP/jit.err'"

# ---- perf annotate's display options: -n, -M intel, --asm-raw, --no-source ----
"$BPFPROF" annotate -i "$TMP/hc.pb.gz" spin -n -M intel --asm-raw --no-source >"$TMP/opts.txt" 2>"$TMP/opts.err"
total=$(sed -n 's/.*Disassembly of spin for [^(]*(\([0-9]*\) samples.*/\1/p' "$TMP/opts.txt")
counted=$(awk '/^ +[0-9]+ :\t *[0-9a-f]+:/ { s += $1 } END { print s + 0 }' "$TMP/opts.txt")
check "annotate -n: sample counts that add up to the function's ($counted of ${total:-none})" \
	bash -c "grep -q '^ Samples |' '$TMP/opts.txt' && [ -n '$total' ] && [ '$counted' = '$total' ]"
check "annotate --asm-raw: each instruction's bytes" \
	grep -qE '^ +[0-9]+ :	 *[0-9a-f]+:   ([0-9a-f]{2} )+ +[a-z]' "$TMP/opts.txt"
if [ "$(uname -m)" = x86_64 ]; then
	check "annotate -M intel: Intel syntax (no %registers)" \
		bash -c "grep -qE '^ +[0-9]+ :	' '$TMP/opts.txt' && ! grep -E '^ +[0-9]+ :	' '$TMP/opts.txt' | grep -q '%'"
fi
check "annotate --no-source: no source lines" bash -c "! grep -qE '^ +:	[^ ]+\.[ch]:[0-9]+' '$TMP/opts.txt'"
usage_error "annotate -M: an unknown style" "invalid --disassembler-style 'foo' \(att or intel\)" annotate -M foo -- true
