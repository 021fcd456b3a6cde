# Shared helpers for integration tests: real BPF, real workloads, assertions on bpfprof's output.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BPFPROF=$ROOT/bpfprof
WL=$ROOT/build/workloads
TMP=$(mktemp -d /tmp/bpfprof-test.XXXXXX)
trap 'rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null' EXIT

ok()   { echo "ok - $1"; }
fail() { echo "not ok - $1${2:+: $2}"; }
skip() { echo "skip - $1: $2"; }
# check NAME CONDITION-COMMAND... : ok when the command succeeds.
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n" "$*"; fi; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		skip "$1" "needs root (CAP_BPF, CAP_PERFMON) to load BPF programs"
		return 1
	fi
}

# Floating-point helper: within TOL (fraction) of WANT?
within() { awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= t * w) }'; }
# Count in folded output of stacks matching a regex.
folded_sum() { awk -v re="$2" '$0 ~ re { s += $NF } END { print s + 0 }' "$1"; }
# expect_error NAME MESSAGE-REGEX -- ARGS...: bpfprof ARGS must fail (not crash or hang) with
# one "bpfprof: ..." line matching MESSAGE-REGEX (followed by the usage, for unknown options).
expect_error() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 20 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
		fail "$name" "exit status $rc for: bpfprof $*"
	elif [ "$(printf '%s\n' "$out" | grep -c .)" -ne 1 ] && ! printf '%s\n' "$out" | grep -q Usage; then
		fail "$name" "more than one line: $out"
	elif ! printf '%s\n' "$out" | head -n 1 | grep -Eq "^bpfprof: .*$msg"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}
# no_such_pid: a pid no process can have (above pid_max): a pid that merely died may be reused
# by the time bpfprof looks, on a busy machine.
no_such_pid() {
	echo $(($(cat /proc/sys/kernel/pid_max) + 1))
}
