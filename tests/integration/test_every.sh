#!/bin/bash
# Continuous mode: --every cuts a run into periods that lose and double count nothing (the sum
# of the periods is a whole run's), each a pprof file (--pprof-dir, --keep) that go tool pprof
# reads, or an upload to a Pyroscope-style ingest endpoint (--push) that never holds up
# sampling, its failures counted.
. "$(dirname "$0")/lib.sh"
need_root "continuous mode" || exit 0
if ! command -v go >/dev/null; then
	skip "continuous mode" "go (golang-go) is not installed: go tool pprof reads the profiles"
	exit 0
fi
export HOME=$TMP/home GOCACHE=$TMP/gocache GOFLAGS=-mod=mod
mkdir -p "$HOME"
RECEIVER=$(dirname "$0")/ingest_receiver.py

# The first value of every sample (samples/count, offcpu/nanoseconds) of pprof files, summed as
# go tool pprof decodes them; "x" when one does not decode.
pprof_total() {
	local f t=0 n
	for f in "$@"; do
		n=$(go tool pprof -raw "$f" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next }
			/^[A-Z]/ { s = 0 } s && $1 ~ /^[0-9]+:?$/ { t += $1 } END { printf "%.0f\n", t }') || n=
		[ -n "$n" ] || { echo x; return; }
		t=$((t + n))
	done
	echo "$t"
}
# start_receiver DIR [STATUS]: a local ingest endpoint; sets RPORT and RPID.
start_receiver() {
	mkdir -p "$1"
	python3 "$RECEIVER" "$1" "$1/port" ${2:-} &
	RPID=$!
	wait_for_line "$1/port" '^[0-9]+$' 10
	RPORT=$(cat "$1/port")
}

# ---- profile: 5 periods of 1 s against one 5 s run ----
# Every CPU, idle included: each CPU's timer fires -F times a second whatever runs, so both runs
# hold 2 x 99 x 5 samples on 2 CPUs.  Both run at once: a tracing program of another tool running
# on a CPU when the timer fires makes the kernel skip ours (said on stderr), and both see the
# same machine.
"$BPFPROF" profile -a --include-idle --pprof "$TMP/single.pb.gz" -d 5 >/dev/null 2>"$TMP/s.err" &
single=$!
"$BPFPROF" profile -a --include-idle --every 1 --pprof-dir "$TMP/p" -d 5 2>"$TMP/p.err"; rc=$?
wait $single
files=$(ls "$TMP/p" | grep -c '^profile-[0-9]\{8\}T[0-9]\{6\}Z\.pb\.gz$')
per=$(pprof_total "$TMP"/p/*.pb.gz)
one=$(pprof_total "$TMP/single.pb.gz")
echo "# profile --every 1 -d 5: $files files, $per samples in all; one 5 s run: $one samples;" \
	"skipped by the kernel: $(grep -ho '[0-9]* event hits not seen' "$TMP/p.err" "$TMP/s.err" | tr '\n' ' ')"
check "profile --every 1 --pprof-dir: exit 0" test "$rc" -eq 0
check "profile --every 1 -d 5: 4 to 6 period files" test "$files" -ge 4 -a "$files" -le 6
check "every period file decodes with go tool pprof" test "$per" != x
check "the periods' samples add up to a single 5 s run's within 2%" within "$per" "$one" 0.02
check "each period is a second of samples (cpu nanoseconds, period 10101010)" \
	bash -c "go tool pprof -raw '$(ls "$TMP"/p/*.pb.gz | head -1)' | grep -q '^Period: 10101010'"
check "the summary names the directory" grep -q "^bpfprof: --pprof-dir: $files period files written" "$TMP/p.err"

# ---- offcpu: the same, on a shell that forks a 20 ms sleep after another ----
# Its main thread waits in wait4 most of the time: blocks of ~20 ms that cross every boundary.
bash -c 'while :; do sleep 0.02; done' &
loop=$!
"$BPFPROF" offcpu -p "$loop" --pprof "$TMP/osingle.pb.gz" -d 5 >/dev/null 2>&1 &
single=$!
"$BPFPROF" offcpu -p "$loop" --every 1 --pprof-dir "$TMP/o" -d 5 2>"$TMP/o.err"; rc=$?
wait $single
kill "$loop"
ofiles=$(ls "$TMP/o" | grep -c '^offcpu-.*\.pb\.gz$')
oper=$(pprof_total "$TMP"/o/*.pb.gz)
oone=$(pprof_total "$TMP/osingle.pb.gz")
echo "# offcpu --every 1 -d 5: $ofiles files, ${oper} ns off-CPU in all; one 5 s run: ${oone} ns"
check "offcpu --every 1 --pprof-dir: exit 0" test "$rc" -eq 0
check "offcpu --every 1 -d 5: 4 to 6 period files" test "$ofiles" -ge 4 -a "$ofiles" -le 6
check "offcpu periods' off-CPU time adds up to a single 5 s run's within 2%" \
	within "$oper" "$oone" 0.02
check "offcpu's periods are offcpu/nanoseconds" \
	bash -c "go tool pprof -raw '$(ls "$TMP"/o/*.pb.gz | head -1)' | grep -q '^offcpu/nanoseconds'"

# ---- --keep 2 ----
"$BPFPROF" profile -a --every 1 --pprof-dir "$TMP/k" --keep 2 -d 4 2>"$TMP/k.err"; rc=$?
kept=$(ls "$TMP/k" | grep -c '\.pb\.gz$')
echo "# --keep 2: $(ls "$TMP/k" | tr '\n' ' ')"
check "--keep 2: exit 0" test "$rc" -eq 0
check "--keep 2 leaves 2 files" test "$kept" -eq 2
# (3 or 4 periods: a period whose drain outlasts a boundary, symbolizing a burst of new
# processes, ends at the next one)
check "--keep 2: the summary counts the older ones removed" \
	grep -Eq 'period files written.*, [1-9] older removed \(--keep 2\)' "$TMP/k.err"

# ---- --push to a local ingest endpoint ----
start_receiver "$TMP/r"
"$BPFPROF" profile -v -a --include-idle --every 1 -d 3 --push "http://127.0.0.1:$RPORT" \
	--app myservice --label env=ci --label node=n1 2>"$TMP/r.err"; rc=$?
kill "$RPID"
pushed=$(ls "$TMP/r" | grep -c '\.pb\.gz$')
ptotal=$(pprof_total "$TMP"/r/*.pb.gz)
query=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(open(sys.argv[1]).read().strip()))' "$TMP/r/1.query" 2>/dev/null)
echo "# --push: $pushed periods received, $ptotal samples; first query: $query"
check "--push: exit 0" test "$rc" -eq 0
check "--push: every period received (2 to 4 for 3 s)" test "$pushed" -ge 2 -a "$pushed" -le 4
# (against the samples the run took, as -v counts them: an idle CPU takes no timer ticks on a
# tickless kernel, so 2 x 99 x 3 holds only on a busy machine)
taken=$(sed -n 's/^bpfprof: \([0-9]*\) samples taken in the kernel$/\1/p' "$TMP/r.err")
check "--push: the bodies decode with go tool pprof, every sample taken ($ptotal of ${taken:-?})" \
	within "$ptotal" "${taken:-0}" 0.02
check "--push: name is APP{labels}" grep -q '^name=myservice{env=ci,node=n1}&' <<<"$query"
check "--push: from, until, format=pprof, sampleRate" \
	grep -Eq '&from=[0-9]{10}&until=[0-9]{10}&format=pprof&spyName=bpfprof&sampleRate=99$' <<<"$query"
check "--push: the summary counts them sent" grep -q "^bpfprof: --push: $pushed of $pushed periods sent, 0 dropped" "$TMP/r.err"

# ---- --push with the server gone: sampling goes on, the drops are counted ----
start_receiver "$TMP/gone"
kill "$RPID"; wait "$RPID" 2>/dev/null
timeout 60 "$BPFPROF" profile -v -a --include-idle --every 1 -d 3 --push "http://127.0.0.1:$RPORT" \
	--pprof-dir "$TMP/g" 2>"$TMP/g.err"; rc=$?
gtotal=$(pprof_total "$TMP"/g/*.pb.gz)
echo "# server gone: $(grep -- '--push:' "$TMP/g.err"); $gtotal samples in the period files"
check "--push, server gone: the run completes, exit 0" test "$rc" -eq 0
taken=$(sed -n 's/^bpfprof: \([0-9]*\) samples taken in the kernel$/\1/p' "$TMP/g.err")
check "--push, server gone: sampling went on (every sample taken in --pprof-dir: $gtotal of ${taken:-?})" \
	within "$gtotal" "${taken:-0}" 0.02
check "--push, server gone: every period counted as dropped" \
	grep -Eq '^bpfprof: --push: 0 of [2-4] periods sent, [2-4] dropped .*[1-9][0-9]* retries; last error: .*(connect|Connection refused)' "$TMP/g.err"

# ---- a server that answers 503: retried with backoff, then dropped ----
start_receiver "$TMP/busy" 503
timeout 60 "$BPFPROF" profile -a --every 1 -d 2 --push "http://127.0.0.1:$RPORT/ingest" 2>"$TMP/b.err"; rc=$?
kill "$RPID"
echo "# 503: $(grep -- '--push:' "$TMP/b.err")"
check "--push, 503: exit 0, retried, dropped, the status named" \
	grep -Eq '^bpfprof: --push: 0 of 2 periods sent, 2 dropped .*retries; last error: HTTP 503' "$TMP/b.err"

# ---- without a destination: each period printed as a run's end is ----
"$BPFPROF" profile -a --every 1 -d 3 >"$TMP/t.txt" 2>/dev/null; rc=$?
reports=$(grep -c '^# Samples:' "$TMP/t.txt")
check "--every without a destination: a report per period ($reports)" test "$rc" -eq 0 -a "$reports" -ge 2 -a "$reports" -le 4

# ---- bad input: one line, non-zero exit, before tracing ----
touch "$TMP/afile"
expect_one_error "--every 0" "invalid --every '0'" -- profile --every 0 -d 1
expect_one_error "--every below 1 s" "invalid --every '0.5'" -- profile --every 0.5 -d 1
expect_one_error "--pprof-dir that is a file" "cannot write to --pprof-dir .*: Not a directory" -- \
	profile --every 1 --pprof-dir "$TMP/afile" -d 1
expect_one_error "--pprof-dir under a missing directory" "cannot write to --pprof-dir .*: No such file" -- \
	profile --every 1 --pprof-dir "$TMP/no/such/dir" -d 1
expect_one_error "malformed --push URL" "invalid --push URL 'not a url'" -- \
	profile --every 1 --push 'not a url' -d 1
expect_one_error "--push URL not http" "invalid --push URL 'ftp://h'" -- profile --every 1 --push ftp://h -d 1
expect_one_error "bad --label" "invalid --label 'novalue'" -- \
	profile --every 1 --push http://127.0.0.1:1 --label novalue -d 1
expect_one_error "--label with a comma" "invalid --label 'a=b,c'" -- \
	offcpu --every 1 --push http://127.0.0.1:1 --label a=b,c -d 1
expect_one_error "--pprof-dir without --every" "--pprof-dir needs --every" -- profile --pprof-dir "$TMP/x" -d 1
expect_one_error "--every with --svg" "--svg is one file of a whole run" -- \
	profile --every 1 --svg "$TMP/x.svg" -d 1
check "bad input: nothing made" test ! -e "$TMP/x" -a ! -e "$TMP/x.svg"
