#!/bin/bash
# --pprof, bpfprof report and bpfprof diff with the real clients: go tool pprof reads what
# profile and offcpu write, report reads it back (and a Go program's own CPU profile), diff's
# SVG is valid XML and runs its script in headless Chromium.
. "$(dirname "$0")/lib.sh"

# go tool pprof and go build work offline with a cache of their own
export HOME=$TMP/home GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GO111MODULE=off GOPROXY=off
mkdir -p "$HOME"
have_go=1
command -v go >/dev/null || have_go=0
gopprof() { go tool pprof "$@" 2>/dev/null; }

# ---- bad input first: no root needed ----
printf 'hot_a;spin 3\nmain;hot_b 1\n' >"$TMP/ok.folded"
head -c 4096 /dev/urandom >"$TMP/random.bin"
printf 'these are words\nand no counts\n' >"$TMP/words.txt"
printf 'hot_a;spin 3\nnot a stack\n' >"$TMP/bad.folded"
expect_one_error "report on a random file: one line naming it" "random.bin" -- report "$TMP/random.bin"
expect_one_error "report on text that is no profile: one line naming it" "words.txt" -- report "$TMP/words.txt"
expect_one_error "report on a broken folded line names the file and line" "bad.folded:2" -- report "$TMP/bad.folded"
expect_one_error "report on a missing file names it" "cannot read $TMP/nope" -- report "$TMP/nope"
expect_one_error "diff with a missing file names it" "cannot read $TMP/nope" -- diff "$TMP/ok.folded" "$TMP/nope"
expect_one_error "report on a directory names it" "$TMP" -- report "$TMP"
expect_one_error "diff of a count and a time profile is refused" "do not compare" -- diff "$TMP/ok.folded" "$ROOT/tests/fuzz/corpus/pprof/offcpu.pb.gz"
(cd "$TMP" && expect_one_error "report without a file (and no ./bpfprof.pb.gz) is usage" "takes FILE" -- report)
"$BPFPROF" report "$TMP/ok.folded" >"$TMP/ok.txt" 2>&1
check "report reads a folded file without a profile run" grep -q 'hot_a' "$TMP/ok.txt"
# perf report's spellings: -i FILE and --stdio; the report of -i is the report of the FILE
"$BPFPROF" report --stdio -i "$TMP/ok.folded" >"$TMP/ok_i.txt" 2>&1; rc=$?
check "report --stdio -i FILE (perf's spelling): exit 0, the FILE's report" \
	test "$rc" -eq 0 -a -z "$(diff "$TMP/ok.txt" "$TMP/ok_i.txt")"
"$BPFPROF" report -i "$TMP/ok.folded" "$TMP/ok.folded" -f >"$TMP/ok2.folded" 2>&1
check "report -i FILE FILE: both read, merged" grep -qx 'hot_a;spin 6' "$TMP/ok2.folded"

need_root "pprof integration" || { echo "# the rest needs root"; exit 0; }

# ---- 1. profile --pprof on the 2:1 workload: go tool pprof's view ----
F=999
"$BPFPROF" profile -F $F --pprof "$TMP/a.pb.gz" -o "$TMP/live.txt" -- "$WL/hotcold" 2 2>"$TMP/a.err"; rc=$?
check "profile --pprof exits 0" test "$rc" -eq 0
check "--pprof writes a gzip file" sh -c "gzip -t '$TMP/a.pb.gz'"
live_samples=$(sed -n "s/^# Samples: \([0-9]*\) .*/\1/p" "$TMP/live.txt")
if [ "$have_go" = 0 ]; then
	skip "go tool pprof reads --pprof" "golang-go is not installed"
else
	gopprof -top -sample_index=samples -nodecount=200 "$TMP/a.pb.gz" >"$TMP/top.txt"
	cum() { awk -v f="$1" '$6 == f { print $4 }' "$TMP/top.txt"; }
	a=$(cum hot_a); b=$(cum hot_b)
	echo "# go tool pprof -top: hot_a cum=$a hot_b cum=$b samples; live report: $live_samples samples"
	check "go tool pprof -top reads it (Type: samples)" grep -q '^Type: samples' "$TMP/top.txt"
	check "hot_a is about twice hot_b in go tool pprof -top (within 20%)" within "$a" $((2 * ${b:-0})) 0.2
	total=$(sed -n 's/.*Total samples = \([0-9]*\).*/\1/p' "$TMP/top.txt")
	check "pprof's sample count is the live report's ($total = $live_samples)" test "$total" = "$live_samples"
	gopprof -raw "$TMP/a.pb.gz" >"$TMP/raw.txt"
	period=$(sed -n 's/^Period: //p' "$TMP/raw.txt")
	check "period is 1/F in ns ($period = $((1000000000 / F)))" test "$period" = $((1000000000 / F))
	check "period type and sample types are cpu/nanoseconds and samples/count" \
		grep -q '^samples/count cpu/nanoseconds\[dflt\]' "$TMP/raw.txt"
	# the cpu values are the counts times the period
	check "every sample's cpu/nanoseconds is its count x the period" awk -v p="$period" \
		'/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $2 ~ /:$/ { n++; v = $2; sub(":", "", v); if (v != $1 * p) bad = 1 } END { exit bad || !n }' "$TMP/raw.txt"
	gopprof -traces "$TMP/a.pb.gz" >"$TMP/traces.txt"
	check "go tool pprof -traces: the full stack spin <- hot_a <- driver <- main" awk \
		'/^ +[0-9.]+[mun]?s +spin$/ { s = 1; next } s == 1 && /hot_a$/ { s = 2; next } s == 2 && /driver$/ { s = 3; next } s == 3 && /main$/ { ok = 1 } { if (!/hot_a$|driver$|main$/) s = 0 } END { exit !ok }' "$TMP/traces.txt"
	gopprof -tags "$TMP/a.pb.gz" >"$TMP/tags.txt"
	check "go tool pprof -tags: comm label hotcold" grep -Eq '^ *comm: Total' "$TMP/tags.txt"
	check "go tool pprof -tags: hotcold under comm" grep -Eq '\(100%\): hotcold$|: hotcold$' "$TMP/tags.txt"
	check "go tool pprof -tags: pid and tid labels" sh -c "grep -Eq '^ *pid: Total' '$TMP/tags.txt' && grep -Eq '^ *tid: Total' '$TMP/tags.txt'"
	gopprof -comments "$TMP/a.pb.gz" >"$TMP/comments.txt"
	check "go tool pprof -comments: the run's header lines (event, losses, call graph)" sh -c \
		"grep -qx '# Event: cpu-clock' '$TMP/comments.txt' && grep -q '^# Lost samples: [0-9]' '$TMP/comments.txt' && grep -q '^# Call graph: ' '$TMP/comments.txt'"
	# build-ids: the mappings' ("ID: START/LIMIT/OFFSET FILE BUILDID [FN]") are readelf -n's
	sed -n '/^Mappings/,$p' "$TMP/raw.txt" >"$TMP/maps.txt"
	for f in "$WL/hotcold" "$(awk '$3 ~ /libc\.so\.6$/ { print $3; exit }' "$TMP/maps.txt")"; do
		[ -n "$f" ] || continue
		want=$(readelf -n "$f" 2>/dev/null | sed -n 's/.*Build ID: //p')
		got=$(awk -v f="$(realpath "$f")" '$3 == f { print $4; exit }' "$TMP/maps.txt")
		check "build-id of $(basename "$f") is readelf -n's ($got)" test -n "$want" -a "$got" = "$want"
	done
	kbid=$(awk '$3 == "[kernel.kallsyms]" { print $4; exit }' "$TMP/maps.txt")
	check "the kernel mapping has a build-id ($kbid)" test "${#kbid}" -ge 32
	if command -v perf >/dev/null && want=$(perf buildid-list -k 2>/dev/null) && [ -n "$want" ]; then
		check "the kernel's build-id is perf buildid-list -k's" test "$kbid" = "$want"
	fi
fi

# ---- 1b. record now, report later: perf record and perf report's habit ----
mkdir -p "$TMP/rec"
(cd "$TMP/rec" && "$BPFPROF" record -F $F -g -- "$WL/hotcold" 2 >"$TMP/rec.out" 2>"$TMP/rec.err"); rc=$?
check "record -- COMMAND: exit 0" test "$rc" -eq 0
check "record writes ./bpfprof.pb.gz, whole" gzip -t "$TMP/rec/bpfprof.pb.gz"
check "record prints no report" awk '/^# Samples/ { bad = 1 } END { exit bad }' "$TMP/rec.out"
said=$(sed -n 's/^bpfprof record: \([0-9]*\) samples, [0-9.]* KB, in bpfprof.pb.gz .*/\1/p' "$TMP/rec.err")
in_file=$(cd "$TMP/rec" && "$BPFPROF" report 2>/dev/null | sed -n 's/^# Samples: \([0-9]*\) .*/\1/p')
check "record says where the profile is and how many samples it holds ($said, report: $in_file)" \
	test -n "$said" -a "$said" = "$in_file"
(cd "$TMP/rec" && "$BPFPROF" report -f) >"$TMP/rec.folded" 2>"$TMP/recrep.err"
a=$(folded_sum "$TMP/rec.folded" 'hot_a'); b=$(folded_sum "$TMP/rec.folded" 'hot_b')
echo "# record, then report with no FILE: hot_a=$a hot_b=$b"
check "report with no FILE reads ./bpfprof.pb.gz: hot_a about twice hot_b (within 20%)" \
	within "$a" $((2 * ${b:-0})) 0.2
cp "$TMP/rec/bpfprof.pb.gz" "$TMP/rec1.pb.gz"
# typed as for perf: no --, the last words the command
(cd "$TMP/rec" && "$BPFPROF" record -a -g sleep 0.3 >/dev/null 2>"$TMP/rec2.err"); rc=$?
check "record -a -g sleep 0.3 (perf's spelling): exit 0, a new profile" \
	test "$rc" -eq 0 -a -n "$(cmp "$TMP/rec1.pb.gz" "$TMP/rec/bpfprof.pb.gz" 2>&1)"
check "the previous profile is kept as bpfprof.pb.gz.old, as perf.data.old" \
	cmp -s "$TMP/rec1.pb.gz" "$TMP/rec/bpfprof.pb.gz.old"
"$BPFPROF" record -o "$TMP/rec3.pb.gz" -F $F -- "$WL/hotcold" 1 >/dev/null 2>&1
"$BPFPROF" report "$TMP/rec3.pb.gz" >"$TMP/rec3.txt" 2>&1
check "record -o FILE: report FILE has the workload" grep -q 'hot_a' "$TMP/rec3.txt"
if [ "$have_go" = 1 ]; then
	gopprof -top "$TMP/rec3.pb.gz" >"$TMP/rec3top.txt"
	check "record -o FILE: go tool pprof reads it" grep -q 'hot_a' "$TMP/rec3top.txt"
fi
# perf report --header: the machine the profile was taken on, from the file
"$BPFPROF" report --header "$TMP/rec3.pb.gz" >"$TMP/hdr.txt" 2>&1
check "report --header: host, kernel, CPUs and the command line of the recording" sh -c \
	"grep -qx '# hostname : $(hostname)' '$TMP/hdr.txt' && grep -qx '# os release : $(uname -r)' '$TMP/hdr.txt' &&
	 grep -qx '# nrcpus online : $(getconf _NPROCESSORS_ONLN)' '$TMP/hdr.txt' &&
	 grep -q '^# cmdline : .*bpfprof record -o $TMP/rec3.pb.gz -F $F -- $WL/hotcold 1\$' '$TMP/hdr.txt'"
check "report --header: then the report" grep -q '^# Samples: [0-9]' "$TMP/hdr.txt"
"$BPFPROF" report --header-only "$TMP/rec3.pb.gz" >"$TMP/hdronly.txt" 2>&1; rc=$?
check "report --header-only: the header alone" sh -c \
	"test $rc -eq 0 && grep -q '^# captured on *: ' '$TMP/hdronly.txt' && ! grep -q '^# Samples' '$TMP/hdronly.txt'"
check "report without --header: no machine lines" \
	awk '/^# (hostname|cmdline) :/ { bad = 1 } END { exit bad }' "$TMP/rec3.txt"
"$BPFPROF" report --pprof "$TMP/rec3b.pb.gz" "$TMP/rec3.pb.gz" >/dev/null 2>&1
"$BPFPROF" report --header-only "$TMP/rec3b.pb.gz" >"$TMP/hdr3b.txt" 2>&1
check "report --pprof of a recording keeps the machine it was taken on" \
	cmp -s "$TMP/hdronly.txt" "$TMP/hdr3b.txt"
printf 'main;a 3\n' >"$TMP/nohdr.folded"
"$BPFPROF" report --header-only "$TMP/nohdr.folded" >"$TMP/nohdr.txt" 2>&1
check "report --header-only of folded stacks: says there is none" grep -q '^# no machine header in ' "$TMP/nohdr.txt"
expect_one_error "report -f --header is refused" "--header goes with the text report" -- \
	report -f --header "$TMP/rec3.pb.gz"
expect_one_error "record -o to a missing directory fails before tracing" "cannot write $TMP/nodir" -- \
	record -o "$TMP/nodir/x.pb.gz" -a 1
expect_one_error "record --pprof is refused (-o names its file)" "record writes its profile to -o FILE" -- \
	record --pprof "$TMP/x.pb.gz" -a 1
check "no file left by the refused runs" test ! -e "$TMP/x.pb.gz" -a ! -e "$TMP/nodir"

# ---- 2. report reads it back ----
"$BPFPROF" report "$TMP/a.pb.gz" >"$TMP/rep.txt" 2>"$TMP/rep.err"; rc=$?
check "report on bpfprof's pprof exits 0" test "$rc" -eq 0
check "report prints the live run's report, header included (the event, the unwinder's line)" \
	cmp -s "$TMP/live.txt" <(grep -v '^# 1 file: ' "$TMP/rep.txt")
check "report's header names the file" grep -q "^# 1 file: $TMP/a.pb.gz\$" "$TMP/rep.txt"
check "report's header: the event is the live run's cpu-clock, not pprof's cpu" \
	grep -q "^# Samples: $live_samples of event 'cpu-clock'\$" "$TMP/rep.txt"
check "report says the samples and frequency" sh -c "grep -q '^# Samples: $live_samples of' '$TMP/rep.txt' && grep -q '^# Event frequency: $F Hz' '$TMP/rep.txt'"
"$BPFPROF" report --no-children --percent-limit 20 "$TMP/a.pb.gz" >"$TMP/nc.txt" 2>&1
check "report --no-children --percent-limit 20: only spin as a row" sh -c \
	"grep -q '^# Overhead' '$TMP/nc.txt' && test \$(grep -cE '^ +[0-9.]+%' '$TMP/nc.txt') -eq 1 && grep -qE '^ +[0-9.]+% .*spin$' '$TMP/nc.txt'"
"$BPFPROF" report --sort sym --no-children "$TMP/a.pb.gz" >"$TMP/sort.txt" 2>&1
check "report --sort sym: rows without Command and Shared Object columns" sh -c \
	"grep -q '^# Overhead  Symbol' '$TMP/sort.txt' && grep -qE '^ +[0-9.]+%  \[\.\] spin$' '$TMP/sort.txt'"
pid=$(awk '/pid:\[/ { sub(/.*pid:\[/, ""); sub(/\].*/, ""); print; exit }' "$TMP/raw.txt" 2>/dev/null)
"$BPFPROF" report -p 1 "$TMP/a.pb.gz" >"$TMP/p1.txt" 2>&1
check "report -p filters on the pid label (pid 1: no samples)" grep -q '^# Samples: 0' "$TMP/p1.txt"
if [ -n "$pid" ]; then
	"$BPFPROF" report -p "$pid" "$TMP/a.pb.gz" >"$TMP/pp.txt" 2>&1
	check "report -p PID keeps that process's samples" grep -q "^# Samples: $live_samples of" "$TMP/pp.txt"
fi
"$BPFPROF" report --comm nosuch "$TMP/a.pb.gz" >"$TMP/c0.txt" 2>&1
"$BPFPROF" report --comm hotcold "$TMP/a.pb.gz" >"$TMP/c1.txt" 2>&1
check "report --comm filters on the comm label" sh -c "grep -q '^# Samples: 0' '$TMP/c0.txt' && grep -q '^# Samples: $live_samples of' '$TMP/c1.txt'"
"$BPFPROF" report -f "$TMP/a.pb.gz" >"$TMP/a.folded" 2>&1
check "report -f: folded stacks of the pprof" grep -Eq '^hotcold;.*main;driver;hot_a;spin [0-9]+$' "$TMP/a.folded"
"$BPFPROF" report --svg "$TMP/rep.svg" "$TMP/a.pb.gz" >/dev/null 2>&1
check "report --svg writes a flame graph naming hot_a" grep -q 'hot_a' "$TMP/rep.svg"
"$BPFPROF" report --pprof "$TMP/again.pb.gz" "$TMP/a.folded" >/dev/null 2>&1
check "report --pprof turns folded stacks into a pprof report reads" sh -c \
	"'$BPFPROF' report -f '$TMP/again.pb.gz' | cmp -s - '$TMP/a.folded'"

# ---- 3. two files merge ----
"$BPFPROF" profile -F $F --pprof "$TMP/b.pb.gz" -o "$TMP/liveb.txt" -- "$WL/hotcold_swapped" 2 2>/dev/null
b_samples=$(sed -n "s/^# Samples: \([0-9]*\) .*/\1/p" "$TMP/liveb.txt")
"$BPFPROF" report "$TMP/a.pb.gz" "$TMP/b.pb.gz" >"$TMP/two.txt" 2>&1
check "report A B: the samples of both ($live_samples + $b_samples)" grep -q "^# Samples: $((live_samples + b_samples)) of" "$TMP/two.txt"
check "report A B: both commands" sh -c "grep -q ' hotcold ' '$TMP/two.txt' && grep -q ' hotcold_swapped ' '$TMP/two.txt'"
"$BPFPROF" report "$TMP/a.pb.gz" "$TMP/a.folded" >"$TMP/mixed.txt" 2>&1
check "report merges a pprof and a folded file" grep -q "^# Samples: $((2 * live_samples)) of" "$TMP/mixed.txt"

# ---- 4. a Go program's own CPU profile ----
if [ "$have_go" = 0 ]; then
	skip "report on a Go CPU profile" "golang-go is not installed"
else
	mkdir -p "$TMP/gocpu" && cp "$ROOT/tests/workloads/gocpu.go" "$TMP/gocpu/main.go"
	if (cd "$TMP/gocpu" && go build -o gocpu main.go) 2>"$TMP/gobuild.err"; then
		"$TMP/gocpu/gocpu" "$TMP/go.pprof" 1.5
		"$BPFPROF" report --no-children "$TMP/go.pprof" >"$TMP/go.txt" 2>&1
		first=$(awk '/^ +[0-9.]+%/ { print $NF; exit }' "$TMP/go.txt")
		check "report on a Go CPU profile: the first row is main.spin ($first)" test "$first" = main.spin
		check "report on a Go CPU profile: main.hotLoop calls it" grep -q 'main.hotLoop' "$TMP/go.txt"
		check "report on a Go CPU profile: its command is the binary" grep -Eq '^ +[0-9.]+% +gocpu ' "$TMP/go.txt"
	else
		fail "go build of tests/workloads/gocpu.go" "$(head -n 3 "$TMP/gobuild.err")"
	fi
fi

# ---- 5. diff ----
"$BPFPROF" diff "$TMP/a.pb.gz" "$TMP/a.pb.gz" --svg "$TMP/same.svg" >"$TMP/same.txt" 2>&1
check "diff of a profile against itself: no frame changed" grep -q "no frame's share changed" "$TMP/same.txt"
check "diff of a profile against itself: every frame white" awk \
	'/<rect x=.*fill="rgb/ && !/fill="rgb\(255,255,255\)"/ && !/url\(#background\)/ { bad = 1 } /fill="rgb\(255,255,255\)"/ { n++ } END { exit bad || !n }' "$TMP/same.svg"
"$BPFPROF" diff -n "$TMP/a.pb.gz" "$TMP/b.pb.gz" --svg "$TMP/ab.svg" >"$TMP/ab.txt" 2>&1; rc=$?
check "diff 2:1 -> 1:2 exits 0" test "$rc" -eq 0
# the widest hot_a and hot_b frames: their fill
fill_of() { grep -o "<title>$1 ([0-9,]* samples[^<]*</title><rect [^>]*" "$TMP/ab.svg" |
	awk -F'width="' '{ split($2, w, "\""); if (w[1] + 0 > best) { best = w[1] + 0; line = $0 } } END { print line }' |
	sed -n 's/.*fill="rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))".*/\1 \2 \3/p'; }
read -r ar ag ab <<<"$(fill_of hot_a)"
read -r br bg bb <<<"$(fill_of hot_b)"
echo "# diff colours: hot_a rgb($ar,$ag,$ab) hot_b rgb($br,$bg,$bb)"
check "diff: hot_a (shrank) is blue" test "${ab:-0}" = 255 -a "${ar:-255}" -lt 128
check "diff: hot_b (grew) is red" test "${br:-0}" = 255 -a "${bb:-255}" -lt 128
check "diff's hover gives both counts and the change" grep -Eq '<title>hot_b \([0-9,]+ samples, [0-9.]+%; before [0-9,]+ samples, [0-9.]+%; \+[0-9,]+\)' "$TMP/ab.svg"
check "diff's table: hot_a and hot_b changed most" sh -c \
	"awk '/^ +[0-9]/ { print \$NF }' '$TMP/ab.txt' | head -n 2 | sort | tr '\n' ' ' | grep -q '^hot_a hot_b $'"
check "diff's table: hot_a's share fell by about a third" awk '$NF == "hot_a" { c = $3 + 0; exit !(c < -20 && c > -50) }' "$TMP/ab.txt"
if command -v xmllint >/dev/null; then
	check "diff --svg is valid XML" xmllint --noout "$TMP/ab.svg"
else
	skip "diff --svg is valid XML" "xmllint is not installed"
fi
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -z "$chrome" ]; then
	skip "diff --svg in headless Chromium" "chromium is not installed"
else
	# the script's functions run in the page: zoom, unzoom, search; every console line kept
	sed 's|</svg>$|<script type="text/ecmascript"><![CDATA[window.addEventListener("load", function () { console.log("FGCHECK frames " + fg.frames.length); zoom(fg.frames[fg.frames.length - 1]); unzoom(); search("hot_b"); console.log("FGCHECK " + fg.matched.nodeValue); });]]></script></svg>|' \
		"$TMP/ab.svg" >"$TMP/ab-check.svg"
	timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
		--user-data-dir="$TMP/chrome" --screenshot="$TMP/ab.png" --window-size=1200,600 \
		"file://$TMP/ab-check.svg" >/dev/null 2>"$TMP/chrome.log"
	timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
		--user-data-dir="$TMP/chrome" --dump-dom "file://$TMP/ab-check.svg" >"$TMP/dom.txt" 2>>"$TMP/chrome.log"
	grep -h 'CONSOLE' "$TMP/chrome.log" | sed 's/^/# /' | head -n 5
	check "headless Chromium renders the diff SVG (screenshot)" test -s "$TMP/ab.png"
	check "the SVG's script ran in Chromium (init, zoom, search)" grep -q 'FGCHECK Matched: [1-9]' "$TMP/chrome.log"
	check "no script error in Chromium" sh -c "! grep -Eiq 'CONSOLE.*(Uncaught|Error)' '$TMP/chrome.log'"
fi

# ---- 6. bad pprof input made from a real one ----
head -c 200 "$TMP/a.pb.gz" >"$TMP/trunc.pb.gz"
expect_one_error "report on a truncated pprof: one line naming it" "trunc.pb.gz: truncated" -- report "$TMP/trunc.pb.gz"
gzip -dc "$TMP/a.pb.gz" | head -c 300 >"$TMP/trunc.pb"
expect_one_error "report on a truncated uncompressed pprof: one line naming it" "trunc.pb" -- report "$TMP/trunc.pb"
gzip -dc "$TMP/a.pb.gz" >"$TMP/plain.pb"
"$BPFPROF" report "$TMP/plain.pb" >"$TMP/plain.txt" 2>&1
check "report reads an uncompressed pprof" grep -q "^# Samples: $live_samples of" "$TMP/plain.txt"

# ---- 7. offcpu --pprof and profile -e ----
"$BPFPROF" offcpu --pprof "$TMP/off.pb.gz" -o "$TMP/off.txt" -- "$WL/blocker" 10 2>/dev/null
if [ "$have_go" = 1 ]; then
	gopprof -raw "$TMP/off.pb.gz" >"$TMP/offraw.txt"
	check "offcpu --pprof: sample type offcpu/nanoseconds" grep -q '^offcpu/nanoseconds' "$TMP/offraw.txt"
	gopprof -top -nodecount=300 "$TMP/off.pb.gz" >"$TMP/offtop.txt"
	check "offcpu --pprof: go tool pprof -top shows sleep_20ms" grep -q 'sleep_20ms' "$TMP/offtop.txt"
fi
"$BPFPROF" report "$TMP/off.pb.gz" >"$TMP/offrep.txt" 2>&1
check "report on offcpu's pprof is the live run's, header included" \
	cmp -s "$TMP/off.txt" <(grep -v '^# 1 file: ' "$TMP/offrep.txt")
"$BPFPROF" profile -e t:syscalls:sys_enter_nanosleep --pprof "$TMP/ev.pb.gz" -o /dev/null -- "$WL/blocker" 5 2>/dev/null
if [ "$have_go" = 1 ]; then
	gopprof -raw "$TMP/ev.pb.gz" >"$TMP/evraw.txt"
	check "profile -e --pprof: the event names the sample type" grep -q '^syscalls:sys_enter_nanosleep/count' "$TMP/evraw.txt"
fi

# ---- 7b. system-wide: each sample's cgroup v2 is its cgroup label ----
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ] || ! mkdir "$CGROOT/bpfprof-pprof.$$" 2>/dev/null; then
	skip "profile -a --pprof: cgroup labels" "no cgroup v2 hierarchy to make a group in"
else
	CG=$CGROOT/bpfprof-pprof.$$
	(echo $BASHPID >"$CG/cgroup.procs"; exec "$WL/hotcold" 4 >/dev/null 2>&1) &
	in=$!
	"$WL/hotcold_nofp" 4 >/dev/null 2>&1 &
	out=$!
	sleep 0.3
	"$BPFPROF" profile -a -F 499 --pprof "$TMP/cgall.pb.gz" -o /dev/null 2 2>"$TMP/cgall.err"
	kill "$in" "$out" 2>/dev/null
	wait "$in" "$out" 2>/dev/null
	rmdir "$CG"
	label=${CG#$CGROOT}
	if [ "$have_go" = 1 ]; then
		gopprof -tags '-tagfocus=comm=^hotcold$' "$TMP/cgall.pb.gz" >"$TMP/cgin.tags"
		gopprof -tags '-tagfocus=comm=^hotcold_nofp$' "$TMP/cgall.pb.gz" >"$TMP/cgout.tags"
		check "profile -a --pprof: go tool pprof -tags gives the workload's samples its cgroup ($label)" \
			grep -Eq "\( *100%\): $label\$" "$TMP/cgin.tags"
		check "profile -a --pprof: the one beside it is not in that cgroup" \
			sh -c "grep -q '^ *cgroup: Total' '$TMP/cgout.tags' && ! grep -q ': $label\$' '$TMP/cgout.tags'"
	fi
	# report --cgroup keeps the samples of that cgroup (the path as the label has it, as
	# --cgroup takes it, or under this machine's mount), and of no other
	"$BPFPROF" report --comm hotcold "$TMP/cgall.pb.gz" >"$TMP/cgcomm.txt" 2>&1
	in_samples=$(sed -n "s/^# Samples: \([0-9]*\) .*/\1/p" "$TMP/cgcomm.txt")
	for g in "$label" "${label#/}" "$CG"; do
		"$BPFPROF" report --cgroup "$g" "$TMP/cgall.pb.gz" >"$TMP/cgrep.txt" 2>&1
		check "report --cgroup $g: the workload's $in_samples samples, no other command" \
			sh -c "test '$in_samples' -gt 0 && grep -q '^# Samples: $in_samples of' '$TMP/cgrep.txt' && ! grep -q 'hotcold_nofp' '$TMP/cgrep.txt'"
	done
	"$BPFPROF" report -G "$label/nosuch" "$TMP/cgall.pb.gz" >"$TMP/cgnone.txt" 2>&1
	check "report -G: a cgroup below it has none of them" grep -q '^# Samples: 0' "$TMP/cgnone.txt"
	# report --pprof keeps the labels: the filtered file holds that cgroup only
	"$BPFPROF" report -G "$label" --pprof "$TMP/cgonly.pb.gz" "$TMP/cgall.pb.gz" >/dev/null 2>&1
	"$BPFPROF" report -G / "$TMP/cgonly.pb.gz" >"$TMP/cgonly.txt" 2>&1
	check "report -G --pprof: the labels go into the file it writes" \
		grep -q "^# Samples: $in_samples of" "$TMP/cgonly.txt"
fi

# ---- 8. top --pprof and --svg: every refresh's samples, in one file at the end ----
"$BPFPROF" top --stdio -v -d 0.5 -F 499 --pprof "$TMP/topall.pb.gz" --svg "$TMP/topall.svg" \
	-- "$WL/hotcold" 2 >"$TMP/topview.txt" 2>"$TMP/topall.err"; rc=$?
check "top --pprof exits 0" test "$rc" -eq 0
check "top --pprof writes a gzip file" sh -c "gzip -t '$TMP/topall.pb.gz'"
taken=$(sed -n 's/^bpfprof: \([0-9]*\) samples taken in the kernel.*/\1/p' "$TMP/topall.err")
refreshes=$(grep -c '^   bpfprof top:' "$TMP/topview.txt")
check "top --pprof: the live view still refreshed ($refreshes)" test "$refreshes" -ge 2
"$BPFPROF" report "$TMP/topall.pb.gz" >"$TMP/toprep.txt" 2>&1
in_file=$(sed -n "s/^# Samples: \([0-9]*\) .*/\1/p" "$TMP/toprep.txt")
echo "# top: $taken samples taken in the kernel, $in_file in the pprof file, $refreshes refreshes"
check "top --pprof holds every sample the run took ($in_file = $taken)" test -n "$taken" -a "$in_file" = "$taken"
a=$(folded_sum <("$BPFPROF" report -f "$TMP/topall.pb.gz" 2>/dev/null) 'hot_a')
b=$(folded_sum <("$BPFPROF" report -f "$TMP/topall.pb.gz" 2>/dev/null) 'hot_b')
check "top --pprof: hot_a about twice hot_b ($a, $b; within 20%)" within "$a" $((2 * ${b:-0})) 0.2
check "top --svg: a flame graph with spin" grep -q 'spin' "$TMP/topall.svg"
if [ "$have_go" = 1 ]; then
	gopprof -raw "$TMP/topall.pb.gz" >"$TMP/topraw.txt"
	check "top --pprof: go tool pprof reads cpu/nanoseconds" grep -q '^samples/count cpu/nanoseconds' "$TMP/topraw.txt"
fi
