#!/bin/bash
# bpfprof biolat on known block I/O: a loop device of our own gets exactly the O_DIRECT requests
# of tests/workloads/dio (4 KiB, aligned, one at a time: nothing to merge or split), so counts
# are asserted exactly.  Bad input first; it needs no root.
. "$(dirname "$0")/lib.sh"

# ---- bad input: one clear line, non-zero exit, no output file, before any tracing ----
expect_one_error "biolat: unknown disk" "disk 'nosuchdisk' not found" -- biolat --disk nosuchdisk 1 1
first_disk=$(ls /sys/block | sort | head -1)
expect_one_error "biolat: unknown disk, the disks here listed" \
	"disk 'sda0x' not found \\(disks here: ${first_disk:-none}[,)]" -- biolat --disk sda0x 1 1
expect_one_error "biolat: disk name with a slash" "not found" -- biolat --disk ../../etc 1 1
expect_one_error "biolat: interval 0" "invalid interval '0'" -- biolat 0
expect_one_error "biolat: interval abc" "invalid interval 'abc'" -- biolat abc
expect_one_error "biolat: negative interval" "invalid interval '-1'" -- biolat -1
expect_one_error "biolat: count 0" "invalid count '0'" -- biolat 1 0
expect_one_error "biolat: extra argument" "unexpected argument" -- biolat 1 2 3
expect_one_error "biolat: --heatmap-interval 0" "invalid --heatmap-interval '0'" -- \
	biolat --heatmap "$TMP/bad.svg" --heatmap-interval 0 1 1
expect_one_error "biolat: --heatmap-interval below 10 ms" "invalid --heatmap-interval" -- \
	biolat --heatmap "$TMP/bad.svg" --heatmap-interval 0.005 1 1
expect_one_error "biolat: --heatmap-interval abc" "invalid --heatmap-interval" -- \
	biolat --heatmap-interval abc 1 1
expect_one_error "biolat: heat map longer than 4096 columns" "more than the 4096" -- \
	biolat --heatmap "$TMP/bad.svg" --heatmap-interval 0.01 1 100
expect_one_error "biolat: --loglin 9" "invalid --loglin" -- biolat --loglin 9 1 1
expect_one_error "biolat: --linear 0" "invalid --linear" -- biolat --linear 0 1 1
expect_one_error "biolat: --linear with 1 bucket" "invalid --linear" -- biolat --linear 10,1 1 1
expect_one_error "biolat: pid that does not exist" "pid $(unused_pid) does not exist" -- \
	biolat -p "$(unused_pid)" 1 1
"$BPFPROF" biolat --bogus >/dev/null 2>"$TMP/bogus.err"; rc=$?
check "biolat: unknown option exits 2 with one error line, then the usage" \
	bash -c "[ $rc -eq 2 ] && head -n 1 '$TMP/bogus.err' | grep -q \"^bpfprof: unknown option '--bogus'\" &&
		sed -n 2p '$TMP/bogus.err' | grep -q '^Usage: bpfprof biolat'"
touch "$TMP/afile"
expect_one_error "biolat: unwritable --heatmap path" "cannot write $TMP/afile/x.svg" -- \
	biolat --heatmap "$TMP/afile/x.svg" 1 1
"$BPFPROF" biolat --heatmap "$TMP/afile/x.svg" 1 1 >"$TMP/unwritable.out" 2>&1
check "biolat: unwritable path fails before tracing starts" \
	bash -c "! grep -q Tracing '$TMP/unwritable.out'"
expect_one_error "biolat: unwritable --events path" "cannot write /nonexistent-dir/ev.txt" -- \
	biolat --events /nonexistent-dir/ev.txt 1 1
# the SVG is fine but the TSV cannot be written: neither is left behind
expect_one_error "biolat: one unwritable output of two" "cannot write $TMP/afile/x.tsv" -- \
	biolat --heatmap "$TMP/ok.svg" --heatmap-data "$TMP/afile/x.tsv" 1 1
check "biolat: no file left by the failed runs" \
	bash -c "! ls '$TMP' | grep -Eq '^(bad|ok)\\.svg|\\.tmp\\.'"
"$BPFPROF" biolat --help >"$TMP/h" 2>&1; rc=$?
check "biolat --help exits 0 and shows usage" grep -q "Usage: bpfprof biolat" "$TMP/h"

need_root "biolat integration" || exit 0
if ! command -v losetup >/dev/null; then
	skip "biolat integration" "losetup (util-linux) is not installed"
	exit 0
fi

# ---- a loop device of our own over a file ----
dd if=/dev/zero of="$TMP/img" bs=1M count=32 status=none
# direct I/O to the backing file makes every loop request one request on the disk below
LOOP=$(losetup --direct-io=on -f --show "$TMP/img" 2>/dev/null || losetup -f --show "$TMP/img")
if [ -z "$LOOP" ]; then
	skip "biolat integration" "cannot set up a loop device"
	exit 0
fi
LN=${LOOP#/dev/}
trap 'rc=$?; [ -e "$TMP/.failed" ] && rc=1; losetup -d "$LOOP"; rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null; exit $rc' EXIT
command -v udevadm >/dev/null && udevadm settle 2>/dev/null
echo "# loop device $LOOP (direct I/O: $(cat /sys/block/$LN/loop/dio 2>/dev/null))"

# The disk holding $TMP, for -D and the insert path (-p/-Q through an I/O scheduler).
src=$(findmnt -no SOURCE -T "$TMP" 2>/dev/null)
DISK=${src#/dev/}
if [ -e "/sys/class/block/$DISK/partition" ]; then
	DISK=$(basename "$(dirname "$(readlink -f "/sys/class/block/$DISK")")")
fi
[ -e "/sys/block/$DISK" ] || DISK=
dd if=/dev/urandom of="$TMP/data" bs=1M count=8 conv=fsync status=none

BL=
# start_biolat OUT ARGS...: bpfprof biolat in the background, returning once it traces.
start_biolat() {
	local out=$1; shift
	"$BPFPROF" biolat "$@" >"$out" 2>"$out.err" &
	BL=$!
	wait_for_line "$out" "^Tracing block device" 30 && return 0
	echo "# biolat did not start: $(cat "$out.err")"
	return 1
}
# stop_biolat: Ctrl-C, and its exit status in $rc.
stop_biolat() { kill -INT "$BL"; wait "$BL"; rc=$?; }
total_count() { awk '/^count [0-9]+/ { s += $2 } END { print s + 0 }' "$1"; }
# label_count FILE REGEX: counts of the histograms whose "disk = .../flags = ..." line matches.
label_count() {
	awk -v re="$2" '/^(disk|flags) = / { l = $0 } /^count [0-9]+/ { if (l ~ re) s += $2 }
		END { print s + 0 }' "$1"
}

# unseen OUT: I/Os biolat reported as issued with no completion seen, or unfinished at the end.
# This VM's kernel runs no BPF program while the current task is one of PID 1's threads, so a
# completion interrupting one reaches ftrace and no BPF program, with no recursion miss counted
# (see the README); biolat notices when the request's address is issued again, or estimates it
# from the disk's statistics with the kernel's stamp, and reports it.
unseen() {
	sed -n -e 's/.*completion never seen by BPF \([0-9]*\).*/\1/p' \
		-e 's/^bpfprof: \([0-9]*\) I\/Os issued and not completed.*/\1/p' "$1.err" |
		awk '{ s += $1 } END { print s + 0 }'
}
# accounted NAME COUNTED UNSEEN N: every one of the N I/Os counted, or counted + reported lost
# (never silently missing), and most of them counted.
accounted() {
	if [ "$2" -eq "$4" ]; then
		ok "$1"
	elif [ $(($2 + $3)) -eq "$4" ] && [ "$2" -ge $(($4 / 2)) ]; then
		echo "# $1: $3 completions never reached BPF; biolat reported them as lost"
		ok "$1"
	else
		fail "$1" "counted $2 + reported lost $3, expected $4"
	fi
}

# 1. -d: exactly the workload's requests, ended with Ctrl-C.
start_biolat "$TMP/d.out" --disk "$LN"
"$WL/dio" "$LOOP" 120 80
stop_biolat
n=$(total_count "$TMP/d.out")
echo "# --disk $LN: $n I/Os, expected 200"
check "biolat -d: Ctrl-C exits 0" test "$rc" -eq 0
accounted "biolat --disk counts exactly the 200 O_DIRECT requests" "$n" "$(unseen "$TMP/d.out")" 200
check "biolat prints a log2 histogram in usecs" grep -Eq '^ +usecs +: count +distribution' "$TMP/d.out"
check "biolat prints the percentile summary" \
	grep -Eq '^count [0-9]+  avg [0-9.]+ usecs  p50 [0-9.]+  p90 [0-9.]+  p99 [0-9.]+  p99.9 [0-9.]+ usecs' \
	"$TMP/d.out"

# 2. -F: reads and writes in their own histograms.
start_biolat "$TMP/f.out" --disk "$LN" -F
"$WL/dio" "$LOOP" 70 30
stop_biolat
r=$(label_count "$TMP/f.out" '(= |-)Read$'); w=$(label_count "$TMP/f.out" '(= |-)Write$')
echo "# -F: reads $r (expected 70), writes $w (expected 30): $(grep '^flags' "$TMP/f.out" | tr '\n' ' ')"
u=$(unseen "$TMP/f.out")
check "biolat -F puts the 70 reads in Read histograms" \
	test "$r" -le 70 -a $((r + u)) -ge 70
check "biolat -F puts the 30 writes in Write histograms" \
	test "$w" -le 30 -a $((w + u)) -ge 30
accounted "biolat -F histograms add up to the 100 I/Os" "$((r + w))" "$u" 100
check "biolat -F has no other histogram" test "$(total_count "$TMP/f.out")" -eq $((r + w))

# 3. -D: the loop disk apart from the disk below it.
if [ -n "$DISK" ]; then
	start_biolat "$TMP/D.out" -D
	"$WL/dio" "$LOOP" 150 0 &
	"$WL/dio" "$TMP/data" 100 0
	wait $!
	stop_biolat
	l=$(label_count "$TMP/D.out" "^disk = $LN\$"); v=$(label_count "$TMP/D.out" "^disk = $DISK\$")
	echo "# -D: $LN $l (expected 150), $DISK $v (expected >= 100)"
	u=$(unseen "$TMP/D.out")
	check "biolat -D: exactly 150 I/Os on $LN" test "$l" -le 150 -a $((l + u)) -ge 150
	check "biolat -D: at least the 100 direct reads on $DISK, apart" test "$v" -ge 100
else
	skip "biolat -D" "$TMP is not on a block device"
fi

# 4. --events: one "time latency" line per I/O.
start_biolat "$TMP/e.out" --disk "$LN" --events "$TMP/ev.txt"
"$WL/dio" "$LOOP" 90 40
stop_biolat
echo "# --events: $(wc -l <"$TMP/ev.txt") lines; $(cat "$TMP/e.out.err")"
n=$(total_count "$TMP/e.out")
accounted "biolat --events counts the 130 I/Os" "$n" "$(unseen "$TMP/e.out")" 130
check "biolat --events writes one line per I/O counted" test "$(wc -l <"$TMP/ev.txt")" -eq "$n"
check "biolat --events lines are 'time latency' in whole usecs" \
	awk 'NF != 2 || $1 !~ /^[0-9]+$/ || $2 !~ /^[0-9]+$/ { exit 1 }' "$TMP/ev.txt"
check "biolat --events latencies add up to the histogram's average" \
	within "$(awk '{ s += $2 } END { print s / NR }' "$TMP/ev.txt")" \
	"$(awk '/^count/ { print $4 }' "$TMP/e.out")" 0.05
check "biolat --events reports its drop counter" grep -q "events: $n written to .*, 0 dropped" "$TMP/e.out.err"
# the percentiles against the I/Os' own latencies (whole usecs, so within a usec too)
for q in 50 90; do
	truth=$(sort -n -k2 "$TMP/ev.txt" | awk -v q=$q '{ v[NR] = $2 } END { r = int(NR * q / 100 + 0.999); print v[r] }')
	got=$(awk -v q=p$q '/^count/ { for (i = 1; i < NF; i++) if ($i == q) print $(i + 1) }' "$TMP/e.out")
	echo "# biolat p$q $got usecs, the I/Os' own $truth usecs"
	check "biolat p$q within 7% (or 1 usec) of the --events truth" \
		awk -v g="$got" -v t="$truth" 'BEGIN { d = g - t; if (d < 0) d = -d; exit !(d <= 0.07 * t || d <= 1) }'
done

# 5. Heat map over a 3 s run of three 1 s intervals, 0.5 s columns.
start_biolat "$TMP/hm.out" --disk "$LN" -T --heatmap "$TMP/hm.svg" --heatmap-data "$TMP/hm.tsv" \
	--heatmap-interval 0.5 1 3
"$WL/dio" "$LOOP" 100 60
wait "$BL"; rc=$?
cols=$(($(wc -l <"$TMP/hm.tsv") - 1))
hsum=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) s += $i } END { print s + 0 }' "$TMP/hm.tsv")
echo "# heat map: $cols columns, $hsum I/Os"
check "biolat 1 3 exits 0 by itself" test "$rc" -eq 0
check "biolat 1 3 prints three intervals with timestamps" \
	test "$(grep -Ec '^[0-9]{2}:[0-9]{2}:[0-9]{2}$' "$TMP/hm.out")" -eq 3
n=$(total_count "$TMP/hm.out")
accounted "biolat intervals add up to the 160 I/Os, none counted twice" "$n" \
	"$(unseen "$TMP/hm.out")" 160
check "heat map TSV has 6 columns of 0.5 s for the 3 s run" test "$cols" -eq 6
check "heat map TSV total is the histograms' total" test "$hsum" -eq "$n"
check "heat map TSV header is time_s then row lower bounds" \
	bash -c "head -n 1 '$TMP/hm.tsv' | grep -Eq '^time_s	0	1	2	3	4	5	6	7	8	10	12'"
check "heat map TSV time column steps by 0.5 s" \
	bash -c "cut -f1 '$TMP/hm.tsv' | tail -n +2 | tr '\n' ' ' | grep -q '^0.0 0.5 1.0 1.5 2.0 2.5 \$'"
if command -v xmllint >/dev/null; then
	check "heat map SVG is valid XML" xmllint --noout "$TMP/hm.svg"
else
	skip "heat map SVG is valid XML" "xmllint is not installed"
fi
cells=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) n += ($i > 0) } END { print n + 0 }' "$TMP/hm.tsv")
check "heat map SVG has one cell per non-empty TSV cell ($cells)" \
	test "$(sed -n '/<g id="cells">/,/<\/g>/p' "$TMP/hm.svg" | grep -c '<rect')" -eq "$cells"
check "heat map SVG cell tooltips add up to the total" test "$(grep -o '<title>[^<]*: [0-9]*</title>' \
	"$TMP/hm.svg" | sed 's/.*: \([0-9]*\)<.*/\1/' | awk '{ s += $1 } END { print s }')" -eq "$n"

# 6. -p: only the process's requests, not those of another on the same disk; ends on its exit.
rm -f "$TMP/go"
"$WL/dio" "$LOOP" 90 10 "$TMP/go" & a=$!
"$WL/dio" "$LOOP" 60 20 "$TMP/go" & b=$!
start_biolat "$TMP/p.out" --disk "$LN" -p "$a"
touch "$TMP/go"; wait "$a" "$b"
wait "$BL"; rc=$?
echo "# -p (direct issue, no scheduler): $(total_count "$TMP/p.out") (expected 100)"
check "biolat -p ends when the process exits" test "$rc" -eq 0
accounted "biolat -p counts exactly its 100 I/Os, not the other process's 80" \
	"$(total_count "$TMP/p.out")" "$(unseen "$TMP/p.out")" 100
if [ -n "$DISK" ] && grep -q '\[' "/sys/block/$DISK/queue/scheduler" &&
   ! grep -q '\[none\]' "/sys/block/$DISK/queue/scheduler"; then
	# Through an I/O scheduler the submitter is recorded at insert, as dispatch may run in
	# another task's context.
	rm -f "$TMP/go"
	"$WL/dio" "$TMP/data" 110 0 "$TMP/go" & a=$!
	"$WL/dio" "$TMP/data" 70 0 "$TMP/go" & b=$!
	start_biolat "$TMP/pv.out" --disk "$DISK" -p "$a"
	p1=$BL
	start_biolat "$TMP/pq.out" --disk "$DISK" -p "$a" -Q
	touch "$TMP/go"; wait "$a" "$b"
	wait "$p1" "$BL"
	echo "# -p on $DISK ($(grep -o '\[.*\]' "/sys/block/$DISK/queue/scheduler")): $(total_count "$TMP/pv.out"), -Q $(total_count "$TMP/pq.out") (expected 110)"
	accounted "biolat -p through the $DISK scheduler counts exactly its 110 reads" \
		"$(total_count "$TMP/pv.out")" "$(unseen "$TMP/pv.out")" 110
	accounted "biolat -p -Q (from insert) counts exactly its 110 reads" \
		"$(total_count "$TMP/pq.out")" "$(unseen "$TMP/pq.out")" 110
else
	skip "biolat -p through an I/O scheduler" "no disk with a scheduler under $TMP"
fi

# 6b. The kernel's issue stamp (rq->io_start_time_ns) against the issue program's own clock, on
# the same I/O: two runs at once, one of them with BPFPROF_NO_RQ_STAMP=1.  O_DSYNC writes go
# through the flush machinery (the loop disk has a write cache and no FUA), whose data request
# completes twice: counted once either way.
BPFPROF_NO_RQ_STAMP=1 start_biolat "$TMP/ni.out" -v --disk "$LN" -F --events "$TMP/ni.ev"
ni=$BL
start_biolat "$TMP/st.out" -v --disk "$LN" -F --events "$TMP/st.ev"
dd if=/dev/zero of="$LOOP" bs=4k count=40 oflag=direct,dsync status=none
"$WL/dio" "$LOOP" 90 30
kill -INT "$ni"; wait "$ni"
stop_biolat
if grep -q "issue time: the kernel's" "$TMP/st.out.err"; then
	check "biolat -v says the issue program's clock is used with BPFPROF_NO_RQ_STAMP" \
		grep -q "issue time: the issue program's, since BPFPROF_NO_RQ_STAMP is set" "$TMP/ni.out.err"
	for f in Read Write Flush; do
		a=$(label_count "$TMP/st.out" "(= |-)$f\$"); b=$(label_count "$TMP/ni.out" "(= |-)$f\$")
		echo "# $f: kernel's stamp $a, issue program $b"
		check "biolat: the kernel's stamp and the issue program count the same $f requests ($b)" \
			test "$a" -eq "$b"
	done
	r=$(label_count "$TMP/st.out" '(= |-)Read$'); w=$(label_count "$TMP/st.out" '(= |-)Write$')
	# both miss the same completions (above): the stamped run estimates the lost reads and writes
	u=$(unseen "$TMP/st.out")
	if [ "$r" -ne 90 ]; then
		# what each instance said of its losses (the issue program notices a completion
		# never seen when the request is issued again; the stamped run estimates them from
		# the disk's counters)
		grep -h "lost\|not seen\|not completed\|in flight" "$TMP/st.out.err" "$TMP/ni.out.err" |
			sed 's/^/#   /'
	fi
	accounted "biolat with the kernel's stamp: the 90 reads" "$r" "$u" 90
	accounted "biolat with the kernel's stamp: the 70 writes, each once (40 of them O_DSYNC)" "$w" "$u" 70
	check "biolat with the kernel's stamp runs no issue program" \
		bash -c "grep 'BPF cost' '$TMP/st.out.err' | grep -qv issue_"
	# the same I/Os' latencies: averages within 10% (the stamp can be the plug's cached time,
	# taken a little before the issue)
	sa=$(awk '{ s += $2 } END { print s / NR }' "$TMP/st.ev"); na=$(awk '{ s += $2 } END { print s / NR }' "$TMP/ni.ev")
	echo "# average latency: kernel's stamp $sa us, issue program $na us"
	check "biolat: the kernel's stamp and the issue program time the same I/Os alike" within "$sa" "$na" 0.10
	check "biolat: both write one event per I/O" test "$(wc -l <"$TMP/st.ev")" -eq "$(wc -l <"$TMP/ni.ev")"
	check "biolat -Q times from insert with the issue program" bash -c \
		"'$BPFPROF' biolat -v -Q --disk '$LN' 0.1 1 2>&1 | grep -q 'issue time: the issue program.s, since -Q times from insert'"
	# A passthrough request (virtio-blk's serial number: REQ_OP_DRV_IN) carries no stamp: the
	# first is counted lost and the issue program is attached; the next ones are timed.
	if [ -n "$DISK" ] && [ -r "/sys/block/$DISK/serial" ] && cat "/sys/block/$DISK/serial" >/dev/null 2>&1; then
		start_biolat "$TMP/pt.out" -v --disk "$DISK" -F
		cat "/sys/block/$DISK/serial" >/dev/null
		wait_for_line "$TMP/pt.out.err" "the issue program is attached" 10
		for i in 1 2 3 4 5; do cat "/sys/block/$DISK/serial" >/dev/null; done
		stop_biolat
		n=$(label_count "$TMP/pt.out" '(= |-)DrvIn$')
		echo "# passthrough on $DISK: $n counted, $(grep -o 'no issue stamp [0-9]*' "$TMP/pt.out.err")"
		check "biolat: a request with no stamp attaches the issue program" \
			grep -q "the issue program is attached" "$TMP/pt.out.err"
		check "biolat: the passthrough request before it is reported lost" \
			grep -q "completed before the issue program was attached for requests the kernel does not stamp [1-9]" "$TMP/pt.out.err"
		check "biolat: the 5 passthrough requests after it are counted" test "$n" -ge 5
	else
		skip "biolat: requests with no stamp" "no disk under $TMP with a serial attribute (virtio-blk)"
	fi
else
	skip "biolat: the kernel's issue stamp" "$(sed -n 's/.*issue time: the issue program.s, since //p' "$TMP/st.out.err")"
fi

# 7. The raw_tp fallback (kernels without tp_btf), with every key and the insert program.
BPFPROF_FORCE_RAW_TP=1 start_biolat "$TMP/raw.out" -v --disk "$LN" -D -F -Q
"$WL/dio" "$LOOP" 40 25
stop_biolat
check "raw_tp fallback is used when forced" grep -q "block_rq_issue: using raw_tp" "$TMP/raw.out.err"
r=$(label_count "$TMP/raw.out" "disk = $LN .*(= |-)Read\$")
w=$(label_count "$TMP/raw.out" "disk = $LN .*(= |-)Write\$")
u=$(unseen "$TMP/raw.out")
check "raw_tp fallback: reads 40" test "$r" -le 40 -a $((r + u)) -ge 40
check "raw_tp fallback: writes 25" test "$w" -le 25 -a $((w + u)) -ge 25
accounted "raw_tp fallback: all 65 accounted for" "$((r + w))" "$u" 65

# 8. Other layouts and units count the same requests.
start_biolat "$TMP/ll.out" --disk "$LN" --loglin 3
ll=$BL
start_biolat "$TMP/lin.out" --disk "$LN" --linear 50,20 -m
"$WL/dio" "$LOOP" 50 0
kill -INT "$ll"; wait "$ll"
stop_biolat
accounted "--loglin 3 counts the 50 I/Os" "$(total_count "$TMP/ll.out")" "$(unseen "$TMP/ll.out")" 50
# each row lo -> hi is 1/8 of the power of two it starts in (exact rows below 8)
check "--loglin 3 rows are 1/8 of a power of two" awk '
	$2 == "->" && $4 == ":" { lo = $1; hi = $3; p = 1; while (p * 2 <= lo) p *= 2
		w = lo < 8 ? 1 : p / 8; n++; if (hi - lo + 1 != w) bad = 1 }
	END { exit bad || !n }' "$TMP/ll.out"
accounted "--linear 50,20 -m counts the 50 I/Os in msecs" "$(total_count "$TMP/lin.out")" \
	"$(unseen "$TMP/lin.out")" 50
check "--linear -m prints msecs in 50-wide buckets" grep -Eq '^ +0 -> 49 +: 50 ' "$TMP/lin.out"

# 9. A partition names its disk in the error.  An MBR with one Linux partition from sector
# 2048 to the end of an 8 MiB image, written by hand (no sfdisk needed).
dd if=/dev/zero of="$TMP/parted.img" bs=1M count=8 status=none
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x38\x00\x00' |
	dd of="$TMP/parted.img" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$TMP/parted.img" bs=1 seek=510 conv=notrunc status=none
PLOOP=$(losetup -P -f --show "$TMP/parted.img" 2>/dev/null)
if [ -n "$PLOOP" ] && [ -e "/sys/class/block/${PLOOP#/dev/}p1" ]; then
	expect_one_error "biolat: a partition is refused, naming its disk" \
		"'${PLOOP#/dev/}p1' is a partition.*use --disk ${PLOOP#/dev/}\$" -- biolat --disk "${PLOOP#/dev/}p1" 1 1
elif zcat /proc/config.gz 2>/dev/null | grep -q '^# CONFIG_MSDOS_PARTITION is not set'; then
	skip "biolat: a partition is refused" "this kernel reads no MBR partition tables (CONFIG_MSDOS_PARTITION off)"
else
	skip "biolat: a partition is refused" "no partition appeared on a partitioned loop device"
fi
[ -n "$PLOOP" ] && losetup -d "$PLOOP"

# 10. A write error at the end is an error, and the file is not left half-written.
"$BPFPROF" biolat --disk "$LN" --heatmap /dev/full 0.2 1 >/dev/null 2>"$TMP/full.err"; rc=$?
check "biolat: a full disk for the heat map exits non-zero" test "$rc" -ne 0
check "biolat: a full disk for the heat map says so" grep -q "cannot write /dev/full" "$TMP/full.err"

# 11. Requeued requests are counted once, at their last issue.  A virtio disk with a scheduler
# requeues some requests of a deep io_uring queue of random reads and writes (its ring is
# full); perf stat counts every completion in the same run.  (Before the fix, each requeued I/O
# vanished from the histograms: 5284 missing of 327038, with 5280 requeues.)
# the disk under $TMP: the device itself, or the disk its partition is on
root_disk=$(basename "$(findmnt -no SOURCE -T "$TMP" 2>/dev/null)")
[ -e "/sys/class/block/$root_disk/partition" ] && root_disk=$(lsblk -no PKNAME "/dev/$root_disk" | head -n 1)
[ -e "/sys/block/$root_disk" ] || root_disk=
if command -v fio >/dev/null && command -v perf >/dev/null && [ -n "$root_disk" ]; then
	fallocate -l 256M "$TMP/rq.dat" && sync
	perf stat -x, -e block:block_rq_complete,block:block_rq_requeue -a -- sleep 6 \
		2>"$TMP/rq.perf" &
	ps=$!
	sleep 0.5
	"$BPFPROF" biolat --disk "$root_disk" -d 5 >"$TMP/rq.out" 2>"$TMP/rq.out.err" &
	BL=$!
	sleep 1
	fio --name=r --filename="$TMP/rq.dat" --direct=1 --rw=randrw --bs=4k --ioengine=io_uring \
		--iodepth=64 --numjobs=2 --runtime=2 --time_based >/dev/null 2>&1
	wait "$BL"; wait "$ps"
	completes=$(awk -F, '/block_rq_complete/ { print $1 }' "$TMP/rq.perf")
	requeues=$(awk -F, '/block_rq_requeue/ { print $1 }' "$TMP/rq.perf")
	n=$(total_count "$TMP/rq.out"); lost=$(unseen "$TMP/rq.out")
	echo "# $root_disk: perf stat $completes completions, $requeues requeues; biolat counted $n, reported $lost never seen"
	if [ "${requeues:-0}" -gt 0 ]; then
		# perf's window is the longer: a little I/O of other processes may fall outside biolat's
		check "biolat: requeued I/Os are counted (every completion perf saw, or reported)" \
			test $((completes - n - lost)) -ge 0 -a $((completes - n - lost)) -le $((completes / 500 + 20))
	else
		skip "biolat: requeued I/Os" "$root_disk requeued nothing under a 128-deep queue"
	fi
	rm -f "$TMP/rq.dat"
else
	skip "biolat: requeued I/Os" "needs fio, perf, and $TMP on a disk"
fi
