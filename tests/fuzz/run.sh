#!/bin/bash
# Runs each libFuzzer harness (make fuzz-build: build/fuzz/fuzz_NAME), or those named, for
# FUZZ_SECONDS (default 5):
# first over its committed seeds (tests/fuzz/corpus/NAME/) and what earlier runs found
# (build/fuzz/corpus/NAME/, where new inputs go, so the committed corpus stays as it is), then
# mutating them.  A crash, leak, hang or memory blow-up is kept as build/fuzz/crashes/NAME/crash-...
# (leak-, timeout-, oom-): fix the parser, then add the file to the committed corpus as
# repro-WHAT.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
secs=${FUZZ_SECONDS:-5}
# tests/fuzz/run.sh [NAME...]: only those harnesses (tests/integration/test_pprof_fuzz.sh)
only=" $* "

for src in tests/fuzz/fuzz_*.c; do
	name=${src##*/fuzz_}
	name=${name%.c}
	[ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
	bin=build/fuzz/fuzz_$name
	found=build/fuzz/corpus/$name
	crashes=build/fuzz/crashes/$name
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz $name: $bin is missing (make fuzz-build)"
		continue
	fi
	mkdir -p "$found" "$crashes"
	log=build/fuzz/$name.log
	# Inputs are a few KB: one taking over 10 s is a hang, one allocation over 128 MB (or a
	# process over 1 GB, ASan's quarantine included) a finding.  -close_fd_mask=1: no stdout.
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=128 -close_fd_mask=1 \
		-print_final_stats=1 -artifact_prefix="$crashes/" "$found" "tests/fuzz/corpus/$name" \
		>"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
	if [ "$rc" -ne 0 ]; then
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written|^    #[0-9]' "$log" | head -n 30 |
			sed 's/^/    # /'
		echo "not ok - fuzz $name: exit status $rc after ${runs:-?} runs (log: $log)"
	else
		echo "# fuzz $name: ${runs:-?} runs in $secs s, ${cov:-cov: ?} edges"
		echo "ok - fuzz $name"
	fi
done
exit 0
