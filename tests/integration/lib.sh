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
# A PID that exists neither as a process nor as a thread, from the top of the PID space where
# fresh forks do not land soon.
unused_pid() {
	local p=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
	while [ -e "/proc/$p" ]; do p=$((p - 1)); done
	echo "$p"
}
# expect_error NAME MESSAGE-REGEX -- ARGS... : bpfprof ARGS fails (not killed by the timeout)
# with a first stderr line "bpfprof: ...MESSAGE-REGEX".  Output goes to $TMP/expect_error.out.
expect_error() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 20 "$BPFPROF" "$@" 2>&1 >"$TMP/expect_error.out"); rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
		fail "$name" "exit status $rc for: bpfprof $*"
	elif ! printf '%s\n' "$out" | head -n 1 | grep -Eq "^bpfprof: .*$msg"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}
