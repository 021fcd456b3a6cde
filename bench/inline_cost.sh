#!/bin/bash
# What inlined frames and source lines cost a system-wide profile (issue 16): a run with --inline
# (the default: inlined frames from the DWARF of every program sampled that has some, through the
# persistent cache) and the same run with --no-inline, side by side in each round, under the same
# load (each samples the other too).  A first run of each part fills the cache (its figures are
# not counted): what is measured is a run whose programs were profiled before, as on a machine
# profiled again and again; a run that meets a function not in the cache opens that file's debug
# info as before.
# (1) bench/soak.sh's load (an ls loop and a compiler loop), profile -F 999 -a for SECS seconds;
# (2) bench/profile.sh's compiler-loop row, profile -F 99 -a 5 beside a cc -O2 -c loop.
# Own CPU (user + sys, the whole process) and peak RSS of each, medians of REPS rounds; the
# CPU of --inline's lookup thread (bpfprof-lines, from -v: what DWARF costs, steadier than a
# difference of two runs on a busy machine) a minute, and the samples each lost (the report's
# header).  BEFORE=BINARY runs another bpfprof with --inline beside them (the cost before a
# change; main's with --inline).  Targets: the lookups well under 0.5 s of CPU a minute under
# churn, RSS a few MB above --no-inline's, no sample lost; (2) within issue 15's 0.15 s and 16 MB.
# SECS=60 REPS=3 by default: about 4 minutes.
source "$(dirname "$0")/lib.sh"
SECS=${SECS:-60}
BEFORE=${BEFORE:-}

# run NAME CMD...: CMD in the background under time(1), its pid added to RUNS
RUNS=()
run() {
	local name=$1
	shift
	/usr/bin/time -f "%M %U %S" -o "$BTMP/$name.time" "$@" -v -o "$BTMP/$name.out" \
		2>"$BTMP/$name.err" &
	RUNS+=($!)
}

# collect NAME SECS WALL: "CPU RSS WORKER LOST" of the run just ended (CPU in % of a CPU over
# SECS, or in s; the lookup thread's CPU in s a minute of WALL seconds)
collect() {
	local m u s w l
	read -r m u s <"$BTMP/$1.time"
	w=$(grep -o "in [0-9.]* ms of the worker's CPU" "$BTMP/$1.err" | awk '{ print $2 }')
	l=$(awk '/^# Lost samples:/ { print $4; exit }' "$BTMP/$1.out")
	awk -v m="$m" -v u="$u" -v s="$s" -v d="$2" -v w="${w:-0}" -v t="$3" -v l="${l:-nan}" \
		'BEGIN { printf "%.3f %.1f %.3f %s\n", d ? (u + s) * 100 / d : u + s, m / 1024,
			 w / 1000 * 60 / t, l }' >>"$BTMP/$1"
}

row() { # row LABEL NAME
	printf '%-34s %10s %10s %14s %6s\n' "$1" "$(cut -d' ' -f1 "$BTMP/$2" | median)" \
		"$(cut -d' ' -f2 "$BTMP/$2" | median)" "$(cut -d' ' -f3 "$BTMP/$2" | median)" \
		"$(cut -d' ' -f4 "$BTMP/$2" | sort -g | tail -1)"
}

# rounds PREFIX SECS DIVISOR PROFILE_ARGS...: REPS rounds of the runs side by side
rounds() {
	local prefix=$1 secs=$2 div=$3 i
	shift 3
	for ((i = 0; i < REPS; i++)); do
		RUNS=()
		run "$prefix.on" "$BPFPROF" profile --inline "$@"
		run "$prefix.off" "$BPFPROF" profile --no-inline "$@"
		[ -n "$BEFORE" ] && run "$prefix.before" "$BEFORE" profile --inline "$@"
		wait "${RUNS[@]}"
		collect "$prefix.on" "$div" "$secs"
		collect "$prefix.off" "$div" "$secs"
		[ -n "$BEFORE" ] && collect "$prefix.before" "$div" "$secs"
	done
}

report() { # report PREFIX UNIT
	printf '%-34s %10s %10s %14s %6s\n' "" "CPU ($2)" "RSS (MB)" "lookups (s/min)" "lost"
	row "--inline (the default)" "$1.on"
	row "--no-inline" "$1.off"
	[ -n "$BEFORE" ] && row "BEFORE --inline" "$1.before"
	echo "CPU ratio $(ratio "$(cut -d' ' -f1 "$BTMP/$1.on" | median)" \
		"$(cut -d' ' -f1 "$BTMP/$1.off" | median)"), RSS $(awk -v a="$(cut -d' ' -f2 "$BTMP/$1.on" | median)" \
		-v b="$(cut -d' ' -f2 "$BTMP/$1.off" | median)" 'BEGIN { printf "%+.1f MB", a - b }')" \
		"(load $(cut -d' ' -f1 /proc/loadavg))"
}

printf 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n' >"$BTMP/c.c"

echo "## (1) profile -F 999 -a $SECS under process churn (bench/soak.sh's load), $REPS rounds"
( while :; do ls /usr/bin >/dev/null; done ) &
lsloop=$!
( while :; do cc -O2 -c "$BTMP/c.c" -o "$BTMP/c.o" 2>/dev/null; done ) &
ccloop=$!
sleep 1
"$BPFPROF" profile -F 999 -a -d 10 -o /dev/null 2>/dev/null # the cache filled
rounds soak "$SECS" "$SECS" -F 999 -a -d "$SECS"
kill $lsloop
report soak "% of a CPU"
echo "--inline's own CPU beyond --no-inline's: $(awk -v a="$(cut -d' ' -f1 "$BTMP/soak.on" | median)" \
	-v b="$(cut -d' ' -f1 "$BTMP/soak.off" | median)" 'BEGIN { printf "%.2f", (a - b) * 0.6 }') s a minute"

echo
echo "## (2) profile -F 99 -a 5 beside a compiler loop (bench/profile.sh's row), $REPS rounds"
"$BPFPROF" profile -F 99 -a 5 -o /dev/null 2>/dev/null # the cache filled
rounds cc 5 0 -F 99 -a 5
kill $ccloop
report cc s
exit 0
