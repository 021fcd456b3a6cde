#!/bin/bash
# Source lines and inlined functions (issue 16): tests/workloads/inlined.c, built -O2 -g, spends
# 2/3 of its time in mix_a and 1/3 in mix_b, both static inline and inlined into work().
. "$(dirname "$0")/lib.sh"
need_root srcline || exit 0
SRC=$ROOT/tests/workloads/inlined.c
# The lines of each inline function's body, from its definition to its return.
range_of() { awk -v f="$1" '$0 ~ "^static inline unsigned long " f "\\(" { s = NR } s && /return x;/ { print s, NR; exit }' "$SRC"; }
in_range() { # in_range "FILE:LO-HI" or "FILE:L" FUNCTION
	local r=${1#*:} lo hi s e; lo=${r%-*}; hi=${r#*-}; read -r s e < <(range_of "$2")
	[ -n "$s" ] && [ "$lo" -ge "$s" ] && [ "$hi" -le "$e" ]
}

"$BPFPROF" profile -U -F 499 --no-children --pprof "$TMP/inl.pb.gz" -o "$TMP/report.txt" \
	-- "$WL/inlined" inline 2 2>"$TMP/err.txt"
row() { grep -E "\[\.\] $1 \(inlined\)  inlined\.c:" "$TMP/report.txt" | head -1; }
a=$(row mix_a); b=$(row mix_b)
check "srcline: both inlined functions are report rows" test -n "$a" -a -n "$b"
pa=$(awk '{ sub("%", "", $1); print $1 }' <<<"$a"); pb=$(awk '{ sub("%", "", $1); print $1 }' <<<"$b")
ratio=$(awk -v a="${pa:-0}" -v b="${pb:-0}" 'BEGIN { print (b > 0 ? a / b : 0) }')
check "srcline: mix_a:mix_b is 2:1 within 25% (got $pa% : $pb%)" within "$ratio" 2 0.25
check "srcline: mix_a's lines in its body ($(awk '{ print $NF }' <<<"$a"))" in_range "$(awk '{ print $NF }' <<<"$a")" mix_a
check "srcline: mix_b's lines in its body ($(awk '{ print $NF }' <<<"$b"))" in_range "$(awk '{ print $NF }' <<<"$b")" mix_b
check "srcline: the header has no missing debug info for the workload" \
	bash -c "! grep -q 'unavailable.*inlined' '$TMP/report.txt'"

# under the caller: folded --inline has work;mix_a and work;mix_b, 2:1
"$BPFPROF" profile -U -F 499 -f --inline --srcline -o "$TMP/folded.txt" -- "$WL/inlined" inline 2 2>/dev/null
fa=$(folded_sum "$TMP/folded.txt" ';work:[0-9]+;mix_a:[0-9]+ [0-9]+$'); fb=$(folded_sum "$TMP/folded.txt" ';work:[0-9]+;mix_b:[0-9]+ [0-9]+$')
check "srcline: folded --inline --srcline has work:LINE;mix_a:LINE and mix_b ($fa, $fb)" test "$fa" -gt 0 -a "$fb" -gt 0
check "srcline: folded 2:1 within 25%" within "$(awk -v a="$fa" -v b="$fb" 'BEGIN { print (b ? a / b : 0) }')" 2 0.25
"$BPFPROF" profile -U -F 499 -f -o "$TMP/plain.txt" -- "$WL/inlined" inline 1 2>/dev/null
check "srcline: folded without --inline has no inlined frames" bash -c "! grep -q 'mix_' '$TMP/plain.txt' && grep -q ';work ' '$TMP/plain.txt'"

# stripped, no debug file: the caller alone, and the report says why
# no build-id either: perf's build-id cache (~/.debug) may hold the unstripped file
cp "$WL/inlined" "$TMP/inl_stripped" && strip -g --remove-section=.note.gnu.build-id "$TMP/inl_stripped"
DEBUGINFOD_URLS= "$BPFPROF" profile -U -F 499 --no-children --no-debuginfod -o "$TMP/stripped.txt" \
	-- "$TMP/inl_stripped" inline 1 2>/dev/null
check "srcline: stripped: no inlined frames" bash -c "! grep -q '(inlined)  inlined' '$TMP/stripped.txt' && ! grep -q 'mix_' '$TMP/stripped.txt'"
check "srcline: stripped: the caller holds the samples" \
	bash -c "grep -E '^ +(9[0-9]|100)\.[0-9]+%  inl_stripped +inl_stripped +\[\.\] work$' '$TMP/stripped.txt' >/dev/null"
check "srcline: stripped: the header says lines are unavailable" \
	grep -q "^# source lines and inlined functions unavailable .*inl_stripped" "$TMP/stripped.txt"
# stripped of its symbols too (strip): its frames have no name, and the header says so all the same
cp "$WL/inlined" "$TMP/inl_nosyms" && strip --remove-section=.note.gnu.build-id "$TMP/inl_nosyms"
DEBUGINFOD_URLS= "$BPFPROF" profile -U -F 499 --no-children --no-debuginfod -o "$TMP/nosyms.txt" \
	-- "$TMP/inl_nosyms" inline 1 2>/dev/null
check "srcline: strip: the header says lines are unavailable" \
	grep -q "^# source lines and inlined functions unavailable .*inl_nosyms" "$TMP/nosyms.txt"

# pprof: go tool pprof -lines shows the inlined functions at their lines
if command -v go >/dev/null; then
	HOME=$TMP go tool pprof -lines -top "$TMP/inl.pb.gz" >"$TMP/pprof.txt" 2>&1
	la=$(grep -E " mix_a .*inlined\.c:([0-9]+) \(inline\)" "$TMP/pprof.txt" | head -1 | grep -oE 'inlined\.c:[0-9]+')
	lb=$(grep -E " mix_b .*inlined\.c:([0-9]+) \(inline\)" "$TMP/pprof.txt" | head -1 | grep -oE 'inlined\.c:[0-9]+')
	check "srcline: go tool pprof -lines shows mix_a ($la) and mix_b ($lb) inlined at their lines" \
		bash -c "[ -n '$la' ] && [ -n '$lb' ] && $(declare -f range_of in_range); SRC='$SRC'; in_range '$la' mix_a && in_range '$lb' mix_b"
	check "srcline: go tool pprof -lines shows work at its call sites" grep -qE " work .*inlined\.c:[0-9]+$" "$TMP/pprof.txt"
else
	skip "srcline: go tool pprof -lines" "go is not installed"
fi
# read back: the report of the pprof has the inlined rows with their lines
"$BPFPROF" report --no-children "$TMP/inl.pb.gz" >"$TMP/back.txt" 2>&1
check "srcline: report of the pprof has the inlined rows with their lines" \
	bash -c "grep -qE '\[\.\] mix_a \(inlined\)  inlined\.c:' '$TMP/back.txt' && grep -qE '\[\.\] mix_b \(inlined\)  inlined\.c:' '$TMP/back.txt'"

# annotate: asm_loop's loop (imul, xor, ror, dec, jnz) holds >90% of its samples, its line shown
LOOP_LINE=$(grep -n 'LOOP_LINE' "$SRC" | cut -d: -f1)
ASM_START=$(grep -n '__asm__ volatile("1:' "$SRC" | cut -d: -f1)
loop_share() { # the share of asm_loop's samples on the loop's instructions, from annotate output
	awk '/Disassembly of asm_loop /{ on = 1; next } /Disassembly of /{ on = 0 }
	     on && /^ *[0-9.]+ :/ { p = $1; if ($0 ~ /(imul|xor|ror|dec|jne|jnz)/) s += p }
	     END { print s + 0 }' "$1"
}
if [ "$(uname -m)" != x86_64 ]; then
	skip "srcline: annotate on a known loop" "the loop is x86-64 assembly"
else
	"$BPFPROF" annotate --stdio -F 999 -s asm_loop -o "$TMP/ann.txt" -- "$WL/inlined" loop 2 2>"$TMP/ann.err"
	share=$(loop_share "$TMP/ann.txt")
	check "srcline: annotate: the loop holds >90% of asm_loop's samples ($share%)" \
		awk -v s="$share" 'BEGIN { exit !(s > 90) }'
	check "srcline: annotate: the loop's source line is shown (inlined.c:$ASM_START..$LOOP_LINE)" \
		bash -c "grep -qE '^ +:	inlined\.c:($(seq -s '|' "$ASM_START" "$LOOP_LINE"))$' '$TMP/ann.txt'"
	check "srcline: annotate: the source text is interleaved" grep -q '__asm__ volatile' "$TMP/ann.txt"
	check "srcline: annotate --stdio has no colour" bash -c "! grep -q $'\e\\[' '$TMP/ann.txt'"
	# from a pprof with addresses
	"$BPFPROF" profile -F 999 --pprof "$TMP/loop.pb.gz" -o /dev/null -- "$WL/inlined" loop 1 2>/dev/null
	"$BPFPROF" annotate -i "$TMP/loop.pb.gz" asm_loop >"$TMP/ann2.txt" 2>&1
	share=$(loop_share "$TMP/ann2.txt")
	check "srcline: annotate -i FILE.pprof: the loop holds >90% ($share%)" \
		awk -v s="$share" 'BEGIN { exit !(s > 90) }'
	# --percent-limit chooses the functions: 50% leaves asm_loop alone
	"$BPFPROF" annotate -i "$TMP/loop.pb.gz" --percent-limit 50 >"$TMP/ann3.txt" 2>&1
	check "srcline: annotate --percent-limit 50 shows asm_loop only" \
		test "$(grep -c 'Disassembly of' "$TMP/ann3.txt")" -eq 1 -a "$(grep -c 'Disassembly of asm_loop ' "$TMP/ann3.txt")" -eq 1
	expect_one_error "srcline: annotate of a function in no stack" "no function named nosuch in the [0-9]+ samples" -- \
		annotate -i "$TMP/loop.pb.gz" nosuch
	expect_one_error "srcline: annotate -i of a missing file" "cannot read" -- \
		annotate -i "$TMP/missing.pb.gz"
fi
# the flame graph marks inlined frames
"$BPFPROF" profile -U -F 499 --svg "$TMP/inl.svg" -o /dev/null -- "$WL/inlined" inline 1 2>/dev/null
check "srcline: the flame graph marks inlined frames (mix_a_[i])" grep -q 'mix_a_\[i\]' "$TMP/inl.svg"
# --sort srcline: a row per line of the inlined functions
"$BPFPROF" profile -U -F 499 --no-children --sort srcline -o "$TMP/bysrc.txt" -- "$WL/inlined" inline 1 2>/dev/null
check "srcline: --sort srcline: rows per line of mix_a" \
	grep -qE '^ +[0-9.]+%  \[\.\] mix_a \(inlined\) inlined\.c:[0-9]+$' "$TMP/bysrc.txt"
check "srcline: --sort srcline: the column says Source:Line, as perf's" \
	grep -q '^# Overhead  Symbol and Source:Line$' "$TMP/bysrc.txt"
# kernel frames and no vmlinux with debug info: --srcline's header says their lines are missing
"$BPFPROF" profile -F 499 --no-children --srcline -o "$TMP/ksrc.txt" -- "$WL/syscalls" read 1 2>/dev/null
if ! grep -q '\[k\]' "$TMP/ksrc.txt"; then
	skip "srcline: the kernel's missing lines in the header" "no kernel frame sampled"
elif grep -q '\[k\] .*\.[ch]:[0-9]' "$TMP/ksrc.txt"; then
	skip "srcline: the kernel's missing lines in the header" "a vmlinux with debug info is here"
else
	check "srcline: the header says the kernel's lines are unavailable, once" \
		test "$(grep -c '^# source lines .* unavailable .*\[kernel\.kallsyms\]' "$TMP/ksrc.txt")" = 1
fi
# on a terminal: the hottest instruction in bold red (script(1) gives annotate a tty)
if [ "$(uname -m)" = x86_64 ] && command -v script >/dev/null; then
	script -qec "'$BPFPROF' annotate -i '$TMP/loop.pb.gz' asm_loop" /dev/null >"$TMP/tty.txt" 2>&1
	check "srcline: annotate on a terminal: the hottest instruction in bold red" \
		grep -q $'\e\\[1;31m *[0-9.]\+' "$TMP/tty.txt"
fi
# system-wide: inlined frames by default, reading every sampled program's DWARF, and what it
# found kept in the persistent cache (a private one here): a second run answers from it, alike
"$WL/inlined" inline 20 >/dev/null &
wl=$!
sleep 0.3
export XDG_CACHE_HOME="$TMP/xdg"
mkdir -p "$XDG_CACHE_HOME"
"$BPFPROF" profile -a -U -F 499 --no-children -o "$TMP/sys.txt" -v 1.5 2>"$TMP/sys.err"
"$BPFPROF" profile -a -U -F 499 --no-children -o "$TMP/sys2.txt" -v 1.5 2>"$TMP/sys2.err"
"$BPFPROF" profile -a -U -F 499 --no-children --no-inline -o "$TMP/sys_none.txt" 1 2>/dev/null
kill $wl 2>/dev/null
wait $wl 2>/dev/null
for f in sys sys2; do
	sa=$(grep -E '\[\.\] mix_a \(inlined\)  inlined\.c:' "$TMP/$f.txt" | head -1)
	sb=$(grep -E '\[\.\] mix_b \(inlined\)  inlined\.c:' "$TMP/$f.txt" | head -1)
	check "srcline: -a ($f) has the inlined rows by default" test -n "$sa" -a -n "$sb"
	check "srcline: -a ($f): mix_a's and mix_b's lines in their bodies (${sa##* }, ${sb##* })" \
		bash -c "$(declare -f range_of in_range); SRC='$SRC'; in_range '${sa##* }' mix_a && in_range '${sb##* }' mix_b"
	check "srcline: -a ($f): the call graph has mix_a inlined in work" \
		bash -c "grep -A1 -E '^ +---mix_a \\(inlined\\)\$' '$TMP/$f.txt' | grep -qE '^ +work\$'"
done
stored=$(ls "$XDG_CACHE_HOME/bpfprof/" | grep -c '\.src$')
check "srcline: -a: inline chains stored in the cache ($stored files), 0700" \
	bash -c "[ $stored -gt 0 ] && [ \$(stat -c %a '$XDG_CACHE_HOME/bpfprof') = 700 ]"
answered=$(grep -oE 'inline cache .*: [0-9]+ addresses answered from it' "$TMP/sys2.err" | grep -oE '[0-9]+ addresses' | grep -oE '[0-9]+')
check "srcline: -a: the second run answers from the cache (${answered:-0} addresses)" test "${answered:-0}" -gt 0
check "srcline: -a --no-inline has none (work holds them)" \
	bash -c "! grep -q '(inlined)' '$TMP/sys_none.txt' && grep -qE '\[\.\] work$' '$TMP/sys_none.txt'"
# a corrupt cache file is rejected, the run's answers alike, the file written again
for f in "$XDG_CACHE_HOME"/bpfprof/*.src; do printf 'XXXX' | dd of="$f" bs=1 seek=40 conv=notrunc 2>/dev/null; done
"$WL/inlined" inline 20 >/dev/null &
wl=$!
sleep 0.3
"$BPFPROF" profile -a -U -F 499 --no-children -o "$TMP/sys3.txt" -v 1.5 2>"$TMP/sys3.err"
kill $wl 2>/dev/null
wait $wl 2>/dev/null
check "srcline: -a: corrupt cache files rejected and rebuilt" \
	bash -c "grep -q 'inline cache: .* rejected (corrupt or not ours)' '$TMP/sys3.err' && grep -qE '\[\.\] mix_a \(inlined\)  inlined\.c:' '$TMP/sys3.txt' && ls '$XDG_CACHE_HOME'/bpfprof/*.src >/dev/null"
unset XDG_CACHE_HOME
# annotate of a program without debug info: the instructions, and why there are no lines
"$BPFPROF" annotate --stdio -F 999 -s asm_loop --no-debuginfod -o "$TMP/ann_stripped.txt" \
	-- "$TMP/inl_stripped" loop 1 2>/dev/null
check "srcline: annotate without debug info: the loop, and lines said unavailable" \
	bash -c "grep -q 'source lines unavailable' '$TMP/ann_stripped.txt' && [ \$(grep -cE '^ +[0-9.]+ :' '$TMP/ann_stripped.txt') -gt 3 ]"
# perf agrees: the lines perf report --sort srcline puts at 5% or more are ours too
if command -v perf >/dev/null && perf record -q -F 999 -g -o "$TMP/perf.data" -- "$WL/inlined" inline 2 2>/dev/null; then
	perf report -i "$TMP/perf.data" --no-children --stdio --sort srcline 2>/dev/null |
		awk '/^ +[0-9.]+%/ && $2 ~ /^inlined\.c:[0-9]+$/ { sub("%", "", $1); if ($1 + 0 >= 5) print $2 }' |
		sort >"$TMP/perf_lines.txt"
	"$BPFPROF" profile -U -F 999 --no-children --sort srcline -o "$TMP/our_lines.txt" -- "$WL/inlined" inline 2 2>/dev/null
	awk '/^ +[0-9.]+%/ { sub("%", "", $1); if ($1 + 0 >= 5) print $NF }' "$TMP/our_lines.txt" | sort >"$TMP/our_lines5.txt"
	check "srcline: perf --sort srcline's lines at 5% or more are ours ($(tr '\n' ' ' <"$TMP/perf_lines.txt"))" \
		bash -c "[ -s '$TMP/perf_lines.txt' ] && diff -q '$TMP/perf_lines.txt' '$TMP/our_lines5.txt' >/dev/null"
else
	skip "srcline: perf --sort srcline" "perf cannot record here"
fi
