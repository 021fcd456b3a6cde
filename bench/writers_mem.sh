#!/bin/bash
# What the --pprof and --svg writers add to a long run's peak RSS (issue 17: peak <= 40 MB with
# the report): bench/soak.sh DURATION (default 90 s) three times, without a file, with --pprof
# and with --svg, BEFORE=BINARY side by side when given (each round runs both builds at once,
# under the same churn).  Prints the load before each round, and the soak's lines: RSS every
# 30 s (the run's own), then the peak with the report and the file written.
set -u
cd "$(dirname "$0")/.."
DURATION=${1:-90}
for file in "" pprof svg; do
	echo "== ${file:-report only}: $(uptime | sed 's/.*load/load/')"
	SOAK_FILE=$file SOAK_EVERY=30 bash bench/soak.sh "$DURATION"
done
