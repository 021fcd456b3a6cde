#!/bin/bash
# bpfprof top: the full-screen view in a real terminal (tmux: keys sent, screen captured), the
# plain-text refreshes, every way out (q, SIGTERM) leaving the terminal as it was and no BPF
# program behind, and bad input.
. "$(dirname "$0")/lib.sh"
need_root "top integration" || exit 0
if ! command -v tmux >/dev/null; then
	skip "top in a terminal" "tmux is not installed (make deps)"
	exit 0
fi

SESSION=bpfprof-top-$$
cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null; }
trap 'rc=$?; [ -e "$TMP/.failed" ] && rc=1; cleanup; rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null; exit $rc' EXIT

"$WL/hotcold" 60 2>/dev/null &
HC=$!

screen() { tmux capture-pane -t "$SESSION" -p; }
# The first table row: the line after the column header.
first_row() { screen | awk 'f { print; exit } /Children +Self|Overhead/ { f = 1 }'; }
# wait_screen REGEX [SECONDS]: until the screen shows it.
wait_screen() {
	local i
	for ((i = 0; i < ${2:-10} * 10; i++)); do
		screen | grep -Eq "$1" && return 0
		sleep 0.1
	done
	return 1
}
# The bpfprof top running in the pane (a child of the pane's shell).
top_pid() { pgrep -P "$(tmux display -p -t "$SESSION" '#{pane_pid}')" -x bpfprof; }
# IDs of the BPF programs a process holds (the prog_id of its BPF fds).
prog_ids_of() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u; }
# The names of programs by ID, as bpftool shows them.
prog_names() { local id; for id in $1; do bpftool prog show id "$id" 2>/dev/null | sed -n 's/.* name \([^ ]*\) .*/\1/p'; done; }
# Those of the IDs still loaded.
progs_left() { local id; for id in $1; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "$id"; done; }
# start_top ARGS...: bpfprof top in a 160x50 terminal; after it exits the pane's shell writes
# its exit status and the terminal's settings.
start_top() {
	rm -f "$TMP/rc" "$TMP/stty"
	tmux new-session -d -s "$SESSION" -x 160 -y 50 -c "$ROOT" \
		"stty -a > '$TMP/stty.before'; '$BPFPROF' top $*; echo \$? > '$TMP/rc'; stty -a > '$TMP/stty'; sleep 600"
}
wait_exit() {
	local i
	for ((i = 0; i < 100; i++)); do [ -s "$TMP/rc" ] && return 0; sleep 0.1; done
	return 1
}
terminal_restored() {
	[ "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 0 ] &&
		grep -Eq '(^| )icanon( |$)' "$TMP/stty" && grep -Eq '(^| )echo( |$)' "$TMP/stty" &&
		grep -Eq '(^| )isig( |$)' "$TMP/stty" &&
		diff -q <(sed 's/rows [0-9]*; columns [0-9]*;//' "$TMP/stty.before") \
			<(sed 's/rows [0-9]*; columns [0-9]*;//' "$TMP/stty") >/dev/null
}

# 1. The hot function tops the table within two refreshes (-d 1), in a full-screen view.
start_top -d 1 -p "$HC"
wait_screen 'samples in' 10
pid=$(top_pid)
ids=$(prog_ids_of "$pid")
echo "# top pid $pid holds BPF programs: $(echo $ids)"
check "top runs in the terminal's alternate screen" test "$(tmux display -p -t "$SESSION" '#{alternate_on}')" = 1
check "top holds its BPF programs while it runs (do_sample among them)" grep -qx do_sample <<<"$(prog_names "$ids")"
sleep 1.2
check "header: samples/s, lost, event and target" wait_screen 'bpfprof top: +[0-9.]+ samples/s .* lost: 0/0 +\[cpu-clock at 99 Hz\] +\(pid '"$HC"'\)' 1
check "Children and Self columns" wait_screen '^  Children +Self +Shared Object +Symbol' 1
# Sorted by Children, spin's callers tie with it at 100% when every sample is in spin, and it
# leads them by its Self; a sample elsewhere (a loaded machine's interrupts) puts the callers
# first, so the hot function is the first row with a Self of its own.
row=$(screen | awk 'f && $2 != "0.00%" { print; exit } /Children +Self/ { f = 1 }')
echo "# first row with a Self: $row"
check "spin, the hot function, is the first row with a Self within two refreshes" grep -Eq 'hotcold +\[\.\] spin$' <<<"$row"
check "the key line sits on the last line" test "$(screen | sed -n 50p | cut -c1-8)" = "h: help "

# 2. Keys: c sorts by Self, p pauses, P zooms into the row's process, ? shows help, z zeroes.
tmux send-keys -t "$SESSION" c
sleep 0.4
check "c: sorted by Self, spin first" grep -Eq '100\.00%.*\[\.\] spin$|[0-9]\.[0-9]+%.*hotcold +\[\.\] spin$' <<<"$(first_row)"
check "c: main (no Self) no longer listed" bash -c "! tmux capture-pane -t '$SESSION' -p | grep -Eq '\\[\\.\\] main\$'"
tmux send-keys -t "$SESSION" p
check "p: paused" wait_screen 'PAUSED' 2
tmux send-keys -t "$SESSION" p
sleep 0.3
check "p again: resumed" bash -c "! tmux capture-pane -t '$SESSION' -p | grep -q PAUSED"
tmux send-keys -t "$SESSION" g P
check "P: zoomed into the row's process" wait_screen "zoom: pid $HC" 2
tmux send-keys -t "$SESSION" P
sleep 0.3
check "P again: zoomed out" bash -c "! tmux capture-pane -t '$SESSION' -p | grep -q 'zoom:'"
tmux send-keys -t "$SESSION" / h o t c o l d Enter
check "/: zoomed into a command typed" wait_screen "zoom: hotcold" 2
tmux send-keys -t "$SESSION" Escape
tmux send-keys -t "$SESSION" '?'
check "?: help" wait_screen 'bpfprof top: keys' 2
tmux send-keys -t "$SESSION" x
sleep 0.3
check "any key closes the help" bash -c "! tmux capture-pane -t '$SESSION' -p | grep -q 'bpfprof top: keys'"
tmux send-keys -t "$SESSION" a
check "a: accumulating" wait_screen 'samples in .*, accumulating' 3
# 3. The window's size is honoured (SIGWINCH): lines fit 100 columns, the key line moves up.
tmux resize-window -t "$SESSION" -x 100 -y 30 2>/dev/null
sleep 0.5
check "resized: no line wider than 100 columns" test "$(screen | awk '{ if (length > m) m = length } END { print m + 0 }')" -le 100
check "resized: the key line on line 30" test "$(screen | sed -n 30p | cut -c1-8)" = "h: help "

# 4. q: exit status 0, the terminal as it was, no program of ours left.
tmux send-keys -t "$SESSION" q
wait_exit
check "q: exit status 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "q: terminal restored (main screen, icanon, echo, isig)" terminal_restored
check "q: no BPF program of ours left" test -z "$(progs_left "$ids")"
cleanup

# 5. SIGTERM, and a crash (SIGSEGV: the terminal is restored before bpfprof dies of it), in
# system-wide runs: the same.  signalled SIG STATUS
signalled() {
	start_top -d 1
	wait_screen 'samples in' 10
	pid=$(top_pid)
	ids=$(prog_ids_of "$pid")
	kill -"$1" "$pid"
	wait_exit
	check "SIG$1: exit status $2" test "$(cat "$TMP/rc" 2>/dev/null)" = "$2"
	check "SIG$1: terminal restored" terminal_restored
	check "SIG$1: no BPF program of ours left" test -z "$(progs_left "$ids")"
	cleanup
}
signalled TERM 0
signalled SEGV 139

# 6. Plain text when stdout is no terminal: a refresh a second, for the 3 s asked.
"$BPFPROF" top --stdio -d 1 -p "$HC" 3 >"$TMP/stdio.txt" 2>"$TMP/stdio.err"; rc=$?
n=$(grep -c '^   bpfprof top:' "$TMP/stdio.txt")
echo "# $n refreshes in 3 s"
check "--stdio: exit status 0" test "$rc" -eq 0
check "--stdio -d 1 for 3 s: 3 refreshes (2 to 4)" test "$n" -ge 2 -a "$n" -le 4
check "--stdio: spin in every refresh" test "$(grep -Ec 'hotcold +\[\.\] spin$' "$TMP/stdio.txt")" -eq "$n"
check "--stdio: no terminal escapes" bash -c "! grep -q $'\\x1b' '$TMP/stdio.txt'"
"$BPFPROF" top -d 1 -p "$HC" 1.5 | cat >"$TMP/piped.txt"
check "piped without --stdio: plain refreshes" grep -q '^   bpfprof top:' "$TMP/piped.txt"

# 6b. The reader gone (| head -1, | true): top ends at once, exit status 0 and not a word, rather
# than at its next refresh's write (EPIPE).  Bounds far from the refreshes it would wait for.
elapsed_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", e - s }'; }
t0=$(date +%s.%N)
{ "$BPFPROF" top --stdio -d 30 -a 60 2>"$TMP/gone.err"; echo $? >"$TMP/gone.rc"; } | true
took=$(elapsed_since "$t0")
echo "# | true: top ended after ${took} s (its first refresh is due at 30 s)"
check "| true: top ends long before its first refresh" awk -v t="$took" 'BEGIN { exit !(t < 20) }'
check "| true: exit status 0, nothing said" test "$(cat "$TMP/gone.rc")" = 0 -a ! -s "$TMP/gone.err"
{ "$BPFPROF" top --stdio -d 8 -a 60 2>"$TMP/head.err"; echo $? >"$TMP/head.rc"; } |
	{ head -1 >"$TMP/head.txt"; date +%s.%N >"$TMP/head.t"; }
took=$(elapsed_since "$(cat "$TMP/head.t")")
echo "# | head -1: top ended ${took} s after head did (its next refresh is due 8 s after the first)"
check "| head -1: the first refresh's header line" grep -q '^   bpfprof top:' "$TMP/head.txt"
check "| head -1: top ends at once, not at its next refresh" awk -v t="$took" 'BEGIN { exit !(t < 4) }'
check "| head -1: exit status 0, nothing said" test "$(cat "$TMP/head.rc")" = 0 -a ! -s "$TMP/head.err"

# 7. --sort, -E, -v (own CPU), and an event: every sched_switch a sample.
"$BPFPROF" top --stdio -d 1 -p "$HC" -s comm,pid,sym -E 5 -v 1.2 >"$TMP/sort.txt" 2>/dev/null
check "--sort comm,pid,sym: columns" grep -Eq '^  Children      Self  Command +Pid  Symbol' "$TMP/sort.txt"
check "--sort comm,pid,sym: the workload's row" grep -Eq "hotcold +$HC  \\[\\.\\] spin" "$TMP/sort.txt"
check "-E 5: five rows" test "$(awk '/Children/ { f = 1; next } f && NF' "$TMP/sort.txt" | wc -l)" -le 5
check "-v: own CPU per refresh" grep -Eq '^   own CPU: [0-9.]+ ms this refresh, [0-9.]+ ms/s' "$TMP/sort.txt"
"$BPFPROF" top --stdio -e sched:sched_switch -d 1 -a 1.5 >"$TMP/ev.txt" 2>"$TMP/ev.err"; rc=$?
check "-e sched:sched_switch: exit status 0" test "$rc" -eq 0
check "-e sched:sched_switch: header names the event" grep -q '\[every sched:sched_switch\]' "$TMP/ev.txt"
check "-e sched:sched_switch: kernel frames of the switch" grep -Eq '\[k\] (__)?schedule$' "$TMP/ev.txt"

# 8. Bad input: one line, non-zero.
expect_one_error "-d 0 refused" "invalid delay '0'" -- top -d 0
expect_one_error "-d abc refused" "invalid delay 'abc'" -- top -d abc
expect_one_error "--sort nope refused" "invalid sort keys 'nope'" -- top --sort nope
expect_one_error "-f does not apply to top" "option '-f' does not apply to top" -- top -f
kill $HC 2>/dev/null
