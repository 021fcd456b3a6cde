#!/bin/bash
# offcpu drains its maps while the run goes on, as profile does (test_longrun.sh): a system-wide
# run under process churn with tables far too small for it loses no block, and blocks that span
# drains keep their stacks (the stacks of a thread still blocked outlive the drain of the
# generation they were stored in).
. "$(dirname "$0")/lib.sh"
need_root "offcpu draining" || exit 0

# The churn (lib.sh).  With 512 table entries, reading the maps once at the end lost about 900
# blocks in 15 s here.
start_churn
# and one thread blocked across a dozen drains: its stacks must survive them all
cp "$(command -v sleep)" "$TMP/longnap"
( sleep 1; exec "$TMP/longnap" 12 ) &
sleeper=$!

DUR=${OFFCPU_DRAIN_SECONDS:-15}
"$BPFPROF" offcpu -a --max-stacks 512 -d "$DUR" -f -v >"$TMP/drain.folded" 2>"$TMP/drain.err"
rc=$?
kill $sleeper 2>/dev/null
stop_churn
lost=$(sed -n 's/^bpfprof: lost blocks: \([0-9]*\).*/\1/p' "$TMP/drain.err" | head -1)
drains=$(sed -n 's/^bpfprof: drained \([0-9]*\) times.*/\1/p' "$TMP/drain.err")
sleep_us=$(awk -v re='^longnap;.*nanosleep' '$0 ~ re { s += $NF } END { printf "%.0f\n", s }' "$TMP/drain.folded")
echo "# ${DUR} s under churn, --max-stacks 512: drained ${drains:-?} times, lost blocks: ${lost:-0};" \
	"a 12 s sleep's block: ${sleep_us} us with its stack"
echo "# $(grep 'kept across drains' "$TMP/drain.err")"
check "a ${DUR} s offcpu run under churn ends and writes its stacks" test "$rc" -eq 0 -a -s "$TMP/drain.folded"
check "the maps were drained during the run" test "${drains:-0}" -ge "$((DUR / 2))"
check "no block lost under churn with 512 table entries" test "${lost:-0}" -eq 0
check "a block spanning a dozen drains keeps its stack (12 s under nanosleep)" \
	within "$sleep_us" 12000000 0.05
check "no stack of a blocked thread gone at a drain" grep -q 'kept across drains .* (0 gone)' "$TMP/drain.err"
