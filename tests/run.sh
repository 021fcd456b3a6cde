#!/bin/bash
# Runs unit test programs, integration scripts, the sanitizer build's runs and the fuzzers, and
# prints one total line.  tests/run.sh [unit|integration|asan|fuzz|all] (default all).
# Every test prints "ok - NAME", "not ok - NAME" or "skip - NAME: REASON".
set -u
cd "$(dirname "$0")/.."
what=${1:-all}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
one=$(mktemp)
trap 'rm -f "$log" "$one"' EXIT
run() {
	echo "# $*"
	"$@" 2>&1 | tee "$one"
	local rc=${PIPESTATUS[0]}
	cat "$one" >> "$log"
	# A program that dies without reporting its own failure still counts as one (a failed
	# check makes its program exit non-zero too: that one is counted once).
	if [ "$rc" -ne 0 ] && ! grep -q "^not ok" "$one"; then
		echo "not ok - $* exited with status $rc" | tee -a "$log"
	fi
}
if [ "$what" = unit ] || [ "$what" = all ]; then
	for t in build/tests/test_*; do [ -x "$t" ] && run "$t"; done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
	for t in tests/integration/test_*.sh; do [ -f "$t" ] && run bash "$t"; done
fi
# make asan-build and make fuzz-build (make test builds both).
if [ "$what" = asan ] || [ "$what" = all ]; then
	run bash tests/asan/run.sh
fi
if [ "$what" = fuzz ] || [ "$what" = all ]; then
	run bash tests/fuzz/run.sh
fi
passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^not ok ' "$log")
skipped=$(grep -c '^skip ' "$log")
if [ "$skipped" -gt 0 ]; then
	echo "skipped:"; grep '^skip ' "$log" | sed 's/^/  /'
fi
if [ "$failed" -gt 0 ]; then
	echo "failed:"; grep '^not ok ' "$log" | sed 's/^/  /'
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
