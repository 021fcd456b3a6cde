#!/bin/bash
# Files another user controls, read by root bpfprof on behalf of that user's processes: JIT maps
# and debug files made hostile by an unprivileged user (a link to a root-only file, a FIFO, a
# sparse giant, /dev/zero, /proc/self/pagemap) are refused, counted and named, never followed,
# read whole or waited on: the run ends on time, with its report.
. "$(dirname "$0")/lib.sh"

need_root "hostile files" || exit 0
if ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
	skip "hostile files" "needs setpriv and a 'nobody' user"
	exit 0
fi
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all)
as_nobody() { "${NOBODY[@]}" "$@"; }

# the user's own directory, at most four deep so that ../../../../dev/zero is /dev/zero
H=$(mktemp -d /tmp/bpfprof-hostile.XXXXXX)
chmod 755 "$H"
chown nobody:nogroup "$H"
MAPS=()
trap 'rc=$?; [ -e "$TMP/.failed" ] && rc=1; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP" "$H" "${MAPS[@]}"; exit $rc' EXIT

# start_as_nobody NAME CMD...: runs CMD as nobody in the background; its pid in $pid
start_as_nobody() {
	local name=$1; shift
	# exec'd, so that $! is the workload's pid
	(exec "${NOBODY[@]}" "$@" >"$H/$name.out" 2>&1) &
	pid=$!
}

# profile_hostile NAME WHAT HEADER N PIDS: root bpfprof profiles PIDS for 2 s; it must end within
# 2 s of that with its report (NAME.report, stderr in NAME.err), the refusals counted in the
# header line HEADER, and N files named on stderr
profile_hostile() {
	local name=$1 what=$2 header=$3 n=$4 pids=$5 start rc ms
	start=$(date +%s%N)
	PERF_BUILDID_DIR=$H/no-cache timeout -k 5 60 "$BPFPROF" profile -F 199 --no-debuginfod \
		-p "$pids" 2 >"$TMP/$name.report" 2>"$TMP/$name.err"
	rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	check "$what: the run ends within 2 s of its duration (exit $rc after $ms ms)" \
		test "$rc" -eq 0 -a "$ms" -lt 4000
	check "$what: the report is printed" \
		test "$(awk '/^# Samples: / { print $3 }' "$TMP/$name.report")" -ge 100
	check "$what: each refusal counted in the report's header" grep -qx "# $header" "$TMP/$name.report"
	check "$what: each file named on stderr" test "$(grep -c ' not read: ' "$TMP/$name.err")" -eq "$n"
}

# ---- JIT maps: /tmp/perf-PID.map made by the process's own (unprivileged) user ----
# Each JIT writes its real map elsewhere: /tmp/perf-PID.map is left to the user to sabotage.
declare -A jit
for kind in link fifo sparse zero; do
	start_as_nobody "jit-$kind" "$WL/jit" 4 "$H/jit-$kind.map"
	jit[$kind]=$pid
	MAPS+=("/tmp/perf-$pid.map")
done
for kind in "${!jit[@]}"; do
	wait_for_line "$H/jit-$kind.out" '^jit ' || fail "the JIT workload starts as nobody" "$(cat "$H/jit-$kind.out")"
done
# a root-only file that names the JIT's code: its contents must never reach the report
addr=$(awk '/^jit / { print $2 }' "$H/jit-link.out")
printf '%s 9 ROOT_ONLY_SECRET\n' "${addr#0x}" >"$TMP/secret.map"
chmod 600 "$TMP/secret.map"
as_nobody ln -s "$TMP/secret.map" "/tmp/perf-${jit[link]}.map"
as_nobody mkfifo "/tmp/perf-${jit[fifo]}.map"
as_nobody truncate -s 1G "/tmp/perf-${jit[sparse]}.map"
as_nobody ln -s /dev/zero "/tmp/perf-${jit[zero]}.map"

profile_hostile jit "hostile JIT maps" \
	"JIT maps not read: 2 a symbolic link, 1 not a regular file, 1 over 256 MiB" 4 \
	"${jit[link]},${jit[fifo]},${jit[sparse]},${jit[zero]}"
check "hostile JIT maps: the root-only file's contents never appear" \
	bash -c "! grep -q ROOT_ONLY_SECRET '$TMP/jit.report' '$TMP/jit.err'"
wait "${jit[@]}" 2>/dev/null

# ---- debug files: a stripped binary whose .gnu_debuglink another user points elsewhere ----
# No build-id note, no perf cache, no debuginfod: the debuglink is all there is to follow.
dbg_binary() { # NAME: $H/NAME, stripped, with a debuglink to $H/NAME.debug (then replaced)
	objcopy --only-keep-debug "$WL/hotcold" "$H/$1.debug"
	objcopy --strip-all --remove-section .note.gnu.build-id --add-gnu-debuglink="$H/$1.debug" \
		"$WL/hotcold" "$H/$1"
	rm -f "$H/$1.debug"
}
dbg_binary hc-fifo
mkfifo "$H/hc-fifo.debug"
dbg_binary hc-zero
ln -s /dev/zero "$H/hc-zero.debug"
dbg_binary hc-pagemap
ln -s /proc/self/pagemap "$H/hc-pagemap.debug"
# a link to a root-only file that is the right debug file (its CRC matches): never followed
dbg_binary hc-secret
objcopy --only-keep-debug "$WL/hotcold" "$TMP/root-only.debug"
chmod 600 "$TMP/root-only.debug"
ln -s "$TMP/root-only.debug" "$H/hc-secret.debug"
# the right debug file, put next to the binary by a third user (uid 1): not the owner's word
dbg_binary hc-other
objcopy --only-keep-debug "$WL/hotcold" "$H/hc-other.debug"
# a debug file of 4 GB of nothing (sparse): its CRC would take seconds to read
dbg_binary hc-sparse
truncate -s 4000M "$H/hc-sparse.debug"
# a debuglink naming a path, not a file name: ../../../../dev/zero from $H
printf '../../../../dev/zero\0\0\0\0\0\0\0\0' >"$H/zero.link"
objcopy --strip-all --remove-section .note.gnu.build-id \
	--add-section .gnu_debuglink="$H/zero.link" "$WL/hotcold" "$H/hc-dotdot"
chown -h nobody:nogroup "$H"/hc-*
chown 1 "$H/hc-other.debug"
declare -A hc
for kind in fifo zero pagemap secret other sparse dotdot; do
	start_as_nobody "hc-$kind" "$H/hc-$kind" 4
	hc[$kind]=$pid
done
sleep 0.3
profile_hostile dbg "hostile debug files" \
	"debug files not read: 3 a symbolic link, 1 not a regular file, 1 owned by another user, 1 a name outside its directory, 1 too long to check (debug files' CRCs get 0.5 s a run)" \
	7 "${hc[fifo]},${hc[zero]},${hc[pagemap]},${hc[secret]},${hc[other]},${hc[sparse]},${hc[dotdot]}"
check "hostile debug files: the names in the root-only and the third user's debug files never appear" \
	bash -c "! grep -Eq 'hot_a|driver' '$TMP/dbg.report'"
wait "${hc[@]}" 2>/dev/null
