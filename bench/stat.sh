#!/bin/bash
# bpfprof stat vs perf stat on the same command, interleaved: the elapsed overhead of counting
# context-switches, page-faults and task-clock against the untraced command (target: bpfprof's
# ratio <= perf's), and how well the counts agree (target: within 2%).  The command is
# statwork: 1000 sleeps of 1 ms, 50000 page faults, 100 migrations, 300 ms of CPU.
. "$(dirname "$0")/lib.sh"
W=$WL/statwork
CMD=("$W" ${STATWORK_ARGS:-1000 50000 100 300})
EV=context-switches,page-faults,task-clock
REPS=${REPS:-5}

# value FILE EVENT: EVENT's count in perf stat's layout (msec for task-clock)
value() {
	awk -v e="$2" '{ v = $1; gsub(",", "", v) }
		($2 == e || ($2 == "msec" && $3 == e)) && v ~ /^[0-9.]+$/ { print v; exit }' "$1"
}
# run NAME CMD...: wall seconds of one run into NAME's list, its stderr kept as NAME.I
run() {
	local name=$1 t0 t1; shift
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$BTMP/$name.$i"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }' >>"$BTMP/$name.wall"
}

echo "## ${CMD[*]}: $REPS interleaved runs each, medians"
for i in $(seq "$REPS"); do
	run base "${CMD[@]}"
	run own "$BPFPROF" stat -e "$EV" -- "${CMD[@]}"
	have perf && run perf perf stat -e "$EV" -- "${CMD[@]}"
	run comm "$BPFPROF" stat --by-comm -e "$EV" -- "${CMD[@]}"
done
b=$(median <"$BTMP/base.wall")
o=$(median <"$BTMP/own.wall")
c=$(median <"$BTMP/comm.wall")
echo "untraced:                                   $b s"
echo "bpfprof stat -e $EV:  $o s  ratio $(ratio "$o" "$b")"
if have perf; then
	p=$(median <"$BTMP/perf.wall")
	echo "perf stat -e $EV:     $p s  ratio $(ratio "$p" "$b")"
	echo "overhead ratio bpfprof / perf:              $(ratio "$(ratio "$o" "$b")" "$(ratio "$p" "$b")")  (target <= 1.0)"
fi
echo "bpfprof stat --by-comm (BPF per command):   $c s  ratio $(ratio "$c" "$b")"

echo
echo "## a short command, /bin/true: the tools' own start and end, medians of $REPS (wall s)"
t_own=$(for i in $(seq "$REPS"); do wall "$BPFPROF" stat -e "$EV" -- true; done | median)
echo "bpfprof stat -- true:  $t_own"
if have perf; then
	t_perf=$(for i in $(seq "$REPS"); do wall perf stat -e "$EV" -- true; done | median)
	echo "perf stat -- true:     $t_perf  ratio bpfprof / perf $(ratio "$t_own" "$t_perf")"
fi

if have perf; then
	echo
	echo "## counts, medians of $REPS: bpfprof / perf (target within 2%)"
	for e in ${EV//,/ }; do
		ob=$(for i in $(seq "$REPS"); do value "$BTMP/own.$i" "$e"; done | median)
		pb=$(for i in $(seq "$REPS"); do value "$BTMP/perf.$i" "$e"; done | median)
		printf '%-18s bpfprof %-10s perf %-10s ratio %s\n' "$e" "$ob" "$pb" "$(ratio "$ob" "$pb")"
	done
fi
exit 0
