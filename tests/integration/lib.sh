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
