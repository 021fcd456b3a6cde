#!/bin/bash
# Command line: help, and bad input that must give one clear line and a non-zero exit.
# No BPF is loaded before these errors, so this needs no root.
. "$(dirname "$0")/lib.sh"

# expect_error NAME EXPECTED-EXIT-REGEX MESSAGE-REGEX -- ARGS...
expect_error() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 20 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
		fail "$name" "exit status $rc for: bpfprof $*"
	elif ! printf '%s\n' "$out" | head -n 1 | grep -Eq "^bpfprof: .*$msg"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}

out=$("$BPFPROF" help); check "help lists profile" grep -q "profile" <<<"$out"
out=$("$BPFPROF" 2>&1); check "bare command lists commands" grep -q "Commands:" <<<"$out"
"$BPFPROF" profile --help >"$TMP/h" 2>&1; rc=$?
check "profile --help exits 0" test "$rc" -eq 0
check "profile --help shows usage" grep -q "Usage: bpfprof profile" "$TMP/h"
"$BPFPROF" nosuchcmd >/dev/null 2>&1; rc=$?
check "unknown command exits 2" test "$rc" -eq 2
# perf's habits: record is a command; script says where its lines are
"$BPFPROF" script >/dev/null 2>"$TMP/script.err"; rc=$?
check "perf's 'script': exit 2, one line naming trace and report -f" \
	test "$rc" -eq 2 -a "$(wc -l <"$TMP/script.err")" -eq 1 -a "$(grep -c "bpfprof trace.*bpfprof report -f" "$TMP/script.err")" -eq 1
"$BPFPROF" record --help >"$TMP/h" 2>&1; rc=$?
check "record --help: exit 0, where the profile goes" \
	test "$rc" -eq 0 -a "$(grep -c 'bpfprof.pb.gz' "$TMP/h")" -ge 1
"$BPFPROF" >"$TMP/none.out" 2>"$TMP/none.err"; rc=$?
check "no command: exit 2, the commands listed on stderr" \
	sh -c "test $rc -eq 2 && test ! -s '$TMP/none.out' && grep -q '^Usage: bpfprof COMMAND' '$TMP/none.err'"
"$BPFPROF" help >"$TMP/help.out" 2>&1; rc=$?
check "help: exit 0 on stdout" sh -c "test $rc -eq 0 && grep -q '^Usage:' '$TMP/help.out'"

# Exit status as perf's: COMMAND's own, 1 for what is not found, 2 for the grammar.
for argv in "stat -- false" "stat -r 2 -- sh -c 'exit 3'" "profile -F 99 -- sh -c 'exit 4'"; do
	eval "\"\$BPFPROF\" $argv" >/dev/null 2>&1; rc=$?
	want=$(printf '%s\n' "$argv" | sed -n "s/.*exit \([0-9]\)'\$/\1/p"); want=${want:-1}
	check "exit status is COMMAND's: $argv ($rc)" test "$rc" -eq "$want"
done
"$BPFPROF" profile -F 99 -d 1 -- sleep 5 >/dev/null 2>&1; rc=$?
check "a COMMAND ended by the run's end: exit 0 ($rc)" test "$rc" -eq 0
for argv in "profile -e bogus 1" "profile -e t:nosuch:x 1" "stat -e nosuch -- true" \
	"trace -e sys:nosuch -- true" "funclat nosuchfn -- true" "top --stdio -e bogus 1"; do
	"$BPFPROF" $argv >/dev/null 2>&1; rc=$?
	check "an event not found exits 1: $argv ($rc)" test "$rc" -eq 1
done

dead=$(unused_pid)
expect_error "profile: pid that does not exist" "pid $dead does not exist" -- profile -p "$dead" 1
expect_error "profile: -F 0" "invalid frequency" -- profile -F 0 1
expect_error "profile: -F abc" "invalid frequency" -- profile -F abc 1
expect_error "profile: negative duration" "invalid duration '-1'" -- profile -F 99 -1
expect_error "profile: duration abc" "invalid duration" -- profile abc
# a year at most: a longer one is said to be too long, not "expected seconds > 0"
expect_error "profile: -d over a year" "invalid duration '999999999' \\(seconds, at most a year" \
	-- profile -d 999999999
expect_error "profile: DURATION over a year" "invalid duration '1e99' \\(seconds, at most a year" \
	-- profile 1e99
expect_error "profile: unknown option" "unknown option" -- profile --bogus
expect_error "profile: unknown event" "unsupported event 'bogus'" -- profile -e bogus 1
expect_error "profile: unknown CPU" "CPU" -- profile -C 9999 1
expect_error "profile: bad CPU list" "invalid CPU list" -- profile -C 1-x 1
expect_error "profile: --max-stack 0" "invalid --max-stack" -- profile --max-stack 0 1
expect_error "profile: -U with -K" "exclude" -- profile -U -K 1
expect_error "profile: missing command after --" "must be followed" -- profile --
expect_error "profile: --unwind bogus" "invalid --unwind 'bogus'" -- profile --unwind bogus 1
expect_error "profile: --unwind-mem 0" "invalid --unwind-mem" -- profile --unwind-mem 0 1

"$BPFPROF" offcpu --help >"$TMP/h" 2>&1; rc=$?
check "offcpu --help exits 0" test "$rc" -eq 0
check "offcpu --help shows usage" grep -q "Usage: bpfprof offcpu" "$TMP/h"
expect_error "offcpu: pid that does not exist" "pid $dead does not exist" -- offcpu -p "$dead" 1
expect_error "offcpu: -m greater than -M" "-m 5000 is greater than -M 1000" -- offcpu -m 5000 -M 1000 1
expect_error "offcpu: bad state letter" "invalid --state 'X'" -- offcpu --state X 1
expect_error "offcpu: -m abc" "invalid -m" -- offcpu -m abc 1
expect_error "offcpu: -u with -k" "exclude" -- offcpu -u -k 1
expect_error "offcpu: unknown option" "unknown option" -- offcpu --bogus
expect_error "offcpu: negative duration" "invalid duration '-1'" -- offcpu -1
expect_error "offcpu: --unwind bogus" "invalid --unwind 'bogus'" -- offcpu --unwind bogus 1
