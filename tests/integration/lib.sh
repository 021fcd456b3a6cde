# Shared helpers for integration tests: real BPF, real workloads, assertions on bpfprof's output.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# BPFPROF=build/asan/bpfprof runs the tests against the sanitizer build.
BPFPROF=$(realpath -m "${BPFPROF:-$ROOT/bpfprof}")
WL=$ROOT/build/workloads
TMP=$(mktemp -d /tmp/bpfprof-test.XXXXXX)
# A script with a failed check exits 1 (whatever its last command did), so that it can be run
# alone and tell; the mark is a file because checks also fail in subshells.
trap 'rc=$?; [ -e "$TMP/.failed" ] && rc=1; rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null; exit $rc' EXIT
# Each test's own unwind-table cache: runs neither depend on nor fill the machine's.
export XDG_CACHE_HOME=$TMP/xdg

ok()   { echo "ok - $1"; }
fail() { echo "not ok - $1${2:+: $2}"; : > "$TMP/.failed"; }
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
# wait_for_line FILE REGEX [SECONDS]: until a line of FILE matches (a tracer saying it attached).
wait_for_line() {
	local i
	for ((i = 0; i < ${3:-20} * 20; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# expect_one_error NAME MESSAGE-REGEX -- ARGS...: bpfprof prints exactly one "bpfprof: ..." line
# matching MESSAGE-REGEX on stderr and exits non-zero (no crash, no hang).
expect_one_error() {
	local name=$1 msg=$2; shift 3
	local out rc
	out=$(timeout 30 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
		fail "$name" "exit status $rc for: bpfprof $*"
	elif [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! grep -Eq "^bpfprof: .*$msg" <<<"$out"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}
# wait_usr1_blocked PID: until PID (a workload run with WL_WAIT_USR1=1) blocks SIGUSR1 or waits
# for it (sigwait unblocks it while waiting), so that a SIGUSR1 sent now reaches it instead of
# killing a process that has not got that far (a shell about to exec it, say).
wait_usr1_blocked() {
	local i blk
	for ((i = 0; i < 400; i++)); do
		grep -q sigtimedwait "/proc/$1/wchan" 2>/dev/null && return 0
		blk=$(awk '/^SigBlk:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = syscalls ] && [ -n "$blk" ] &&
			(( 0x$blk & 0x200 )) && return 0
		sleep 0.05
	done
	return 1
}
# start_churn: process churn in the background until stop_churn: short-lived processes (ls),
# each with stacks of its own addresses (ASLR), and a compiler (cc1: many libraries).
start_churn() {
	printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' > "$TMP/c.c"
	( while :; do ls /usr/bin > /dev/null; done ) &
	churn_ls=$!
	( while :; do cc -O2 -c "$TMP/c.c" -o "$TMP/c.o"; done ) &
	churn_cc=$!
}
stop_churn() {
	kill $churn_ls $churn_cc 2>/dev/null
	wait $churn_ls $churn_cc 2>/dev/null
	sleep 0.2 # the compiler's last file goes before $TMP
}
