#!/bin/bash
# The pprof and folded reader (bpfprof report, diff) under libFuzzer for a bounded time, longer
# than make test's few seconds a harness: PPROF_FUZZ_SECONDS (default 60).  Files named on the
# command line come from anywhere; a crash, leak, hang or memory blow-up fails the test and is
# kept under build/fuzz/crashes/pprof/.
. "$(dirname "$0")/lib.sh"
if [ ! -x "$ROOT/build/fuzz/fuzz_pprof" ]; then
	skip "fuzz pprof reader" "build/fuzz/fuzz_pprof is missing (make fuzz-build; make test builds it)"
	exit 0
fi
FUZZ_SECONDS=${PPROF_FUZZ_SECONDS:-60} bash "$ROOT/tests/fuzz/run.sh" pprof
