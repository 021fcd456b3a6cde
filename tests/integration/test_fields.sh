#!/bin/bash
# Event fields: stat --by FIELD and --filter EXPR, read and evaluated in the kernel, on workloads
# of known shape (fieldwork: work(7) x100, work(9) x50, returning 10x+1; N execs of /bin/true).
. "$(dirname "$0")/lib.sh"
need_root "fields" || exit 0

W=$WL/fieldwork
# by_count FILE VALUE: the count of the --by row whose (last) column is VALUE
by_count() { awk -v v="$2" '$1 ~ /^[0-9]+$/ && $NF == v { print $1; exit }' "$1"; }
event_count() { awk -v e="$2" '$2 == e { v = $1; gsub(",", "", v); if (v ~ /^[0-9]+$/) { print v; exit } }' "$1"; }

# 1. A tracepoint's __data_loc string: every exec of /bin/true, by filename.
"$BPFPROF" stat sched:sched_process_exec --by filename -- "$W" 7 >"$TMP/exec" 2>&1
n=$(( $(by_count "$TMP/exec" /bin/true) + 0 + $(by_count "$TMP/exec" /usr/bin/true) + 0 ))
check "stat sched:sched_process_exec --by filename: /bin/true 7 times" test "$n" = 7

# 2. A user function's argument, its return value, and a filter on the argument.
"$BPFPROF" stat "u:$W:work" --by arg0 -- "$W" 0 >"$TMP/arg0" 2>&1
check "stat u:BIN:work --by arg0: 7 x100" test "$(by_count "$TMP/arg0" 7)" = 100
check "stat u:BIN:work --by arg0: 9 x50" test "$(by_count "$TMP/arg0" 9)" = 50
check "stat u:BIN:work --by arg0: no other value" \
	test "$(awk '/by arg0/ { on = 1; next } on && $1 ~ /^[0-9]+$/' "$TMP/arg0" | wc -l)" = 2
"$BPFPROF" stat "u:$W:work%return" --by retval -- "$W" 0 >"$TMP/ret" 2>&1
check "stat u:BIN:work%return --by retval: 71 x100" test "$(by_count "$TMP/ret" 71)" = 100
check "stat u:BIN:work%return --by retval: 91 x50" test "$(by_count "$TMP/ret" 91)" = 50
"$BPFPROF" stat "u:$W:work" --filter 'arg0 == 9' -- "$W" 0 >"$TMP/filt" 2>&1
check "stat u:BIN:work --filter 'arg0 == 9' counts 50" \
	test "$(event_count "$TMP/filt" fieldwork:work)" = 50
"$BPFPROF" stat "u:$W:work" --by arg0,comm --filter '!(arg0 == 9) && comm == fieldwork' \
	-- "$W" 0 >"$TMP/both" 2>&1
check "--by arg0,comm --filter '!(arg0 == 9) && comm == ...': one row, 100" \
	test "$(awk '$1 ~ /^[0-9]+$/ && $2 == 7 && $3 == "fieldwork"' "$TMP/both" | awk '{print $1}')" = 100 \
	-a "$(event_count "$TMP/both" fieldwork:work)" = 100
"$BPFPROF" stat "u:$W:work%return" --filter 'retval > 80 || retval < 0' -- "$W" 0 >"$TMP/rf" 2>&1
check "--filter on retval: 50" test "$(event_count "$TMP/rf" 'fieldwork:work%return')" = 50

# Two events whose fields sit at different places (exec's pid is its record's, fork's is the
# pseudo field): each event's own table.
"$BPFPROF" stat sched:sched_process_exec sched:sched_process_fork --by comm,pid -- "$W" 3 >"$TMP/two" 2>&1
check "--by comm,pid on two events: 3 exec rows of true, one fork row of 3" \
	test "$(awk '/sched_process_exec by/ { on = 1 } /sched_process_fork by/ { on = 0 }
		on && $2 == "true" && $1 == 1' "$TMP/two" | wc -l)" = 3 \
	-a "$(awk '/sched_process_fork by/ { on = 1 } on && $2 == "fieldwork" { print $1 }' "$TMP/two")" = 3

# 3. String filters in the kernel: ~ globs, ==, !=.
"$BPFPROF" stat sched:sched_process_exec --filter 'filename ~ "*/true"' -- "$W" 4 >"$TMP/g" 2>&1
check "--filter 'filename ~ \"*/true\"': the 4 execs of true, not the workload's" \
	test "$(event_count "$TMP/g" sched:sched_process_exec)" = 4
"$BPFPROF" stat sched:sched_process_exec --filter 'comm != true && filename ~ "*field*"' \
	-- "$W" 4 >"$TMP/g2" 2>&1
check "--filter with != and a *contains* glob: the workload's own exec" \
	test "$(event_count "$TMP/g2" sched:sched_process_exec)" = 1

# 4. A syscall's string argument, read from user memory in the kernel.
"$BPFPROF" stat sys:openat --by filename -- cat /etc/hostname >"$TMP/open" 2>&1
check "stat sys:openat --by filename: /etc/hostname once" test "$(by_count "$TMP/open" /etc/hostname)" = 1

# 5. A kernel function pointer symbolized: workqueue activity from writes and syncs.
( for i in $(seq 12); do
	dd if=/dev/zero of="$TMP/wq" bs=64k count=4 conv=fsync 2>/dev/null; sync; sleep 0.2
  done ) &
churn=$!
"$BPFPROF" stat workqueue:workqueue_queue_work --by function -a 2 >"$TMP/wq.out" 2>&1
wait "$churn"
syms=$(awk '/by function/ { on = 1; next } on && $1 ~ /^[0-9]+$/ && $2 ~ /^[A-Za-z_][A-Za-z0-9_.]*(\+0x[0-9a-f]+)?$/' "$TMP/wq.out" | wc -l)
addrs=$(awk '/by function/ { on = 1; next } on && $1 ~ /^[0-9]+$/ && $2 ~ /^0x/' "$TMP/wq.out" | wc -l)
check "stat workqueue:workqueue_queue_work --by function -a 2 names kernel functions" \
	test "$syms" -ge 1 -a "$addrs" = 0
# the busiest work the churn's writes queue (others, such as bpf_map_free_deferred from other
# tools' exits, need not come again)
top=$(awk '/by function/ { on = 1; next } on && $1 ~ /^[0-9]+$/ && $2 ~ /^(ext4|blk|wb_|virtblk)/ { print $2; exit }' "$TMP/wq.out")
if [ -n "$top" ]; then
	( for i in $(seq 12); do
		dd if=/dev/zero of="$TMP/wq" bs=64k count=4 conv=fsync 2>/dev/null; sync; sleep 0.2
	  done ) &
	churn=$!
	"$BPFPROF" stat workqueue:workqueue_queue_work --by function --filter "function == ${top%%+*}" \
		-a 2 >"$TMP/wqf.out" 2>&1
	wait "$churn"
	check "--filter 'function == NAME' (a kernel function by name): only its rows" \
		test "$(awk '/by function/ { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $2 }' "$TMP/wqf.out" | sort -u | tr '\n' ' ')" = "$top "
fi
check "--by rows busiest first" awk '/by function/ { on = 1; next }
	on && $1 ~ /^[0-9]+$/ { if (prev != "" && $1 > prev) exit 1; prev = $1 }' "$TMP/wq.out"

# 5b. The cgroup field: the cgroup v2 a task runs in, by its path under the mount (its id, the
# directory's inode number, in --filter).
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ] || ! mkdir "$CGROOT/bpfprof-fields.$$" 2>/dev/null; then
	skip "stat --by cgroup" "no cgroup v2 hierarchy to make a group in"
else
	CG=$CGROOT/bpfprof-fields.$$
	"$BPFPROF" stat "u:$W:work" --by cgroup -- sh -c "echo \$\$ >'$CG/cgroup.procs' && exec '$W' 0" \
		>"$TMP/cg" 2>&1
	check "stat --by cgroup: the workload's 150 calls under its cgroup's path" \
		test "$(by_count "$TMP/cg" "/bpfprof-fields.$$")" = 150
	"$BPFPROF" stat "u:$W:work" --filter "cgroup == $(stat -c %i "$CG")" \
		-- sh -c "echo \$\$ >'$CG/cgroup.procs' && exec '$W' 0" >"$TMP/cgf" 2>&1
	check "--filter 'cgroup == ID': the 150 calls in that cgroup" \
		test "$(event_count "$TMP/cgf" fieldwork:work)" = 150
	"$BPFPROF" stat "u:$W:work" --filter "cgroup == $(stat -c %i "$CG")" -- "$W" 0 >"$TMP/cgn" 2>&1
	check "--filter 'cgroup == ID': none from outside it" \
		test "$(event_count "$TMP/cgn" fieldwork:work)" = 0
	rmdir "$CG" 2>/dev/null
fi

# 6. funclat and profile -e --filter: only the calls that pass are timed or sampled.
"$BPFPROF" funclat "u:$W:work" --filter 'arg0 == 9' -- "$W" 0 >"$TMP/fl" 2>&1
check "funclat u:BIN:work --filter 'arg0 == 9' times 50 calls" \
	test "$(awk '$1 == "count" { print $2; exit }' "$TMP/fl")" = 50
"$BPFPROF" funclat sys:openat --filter 'filename == "/etc/hostname"' -- cat /etc/hostname >"$TMP/fo" 2>&1
check "funclat sys:openat --filter on a user string: 1 call" \
	test "$(awk '$1 == "count" { print $2; exit }' "$TMP/fo")" = 1

"$BPFPROF" profile -e "u:$W:work" --filter 'arg0 == 9' -f -- "$W" 0 >"$TMP/pf" 2>/dev/null
check "profile -e u:BIN:work --filter 'arg0 == 9': 50 stacks taken" \
	test "$(folded_sum "$TMP/pf" 'work')" = 50

# 6b. --by on funclat (a histogram per key) and profile -e (a report section / folded root
# per key), the keys built in the kernel as stat's are.
# hist_count FILE HEADING: the call count of the histogram under HEADING
hist_count() { awk -v h="$2" '$0 == h { on = 1; next } on && $1 == "count" { print $2; exit }' "$1"; }
"$BPFPROF" funclat "u:$W:work" --by arg0 -- "$W" 0 >"$TMP/flb" 2>&1
check "funclat u:BIN:work --by arg0: 7 x100, 9 x50, busiest first, no other key" \
	test "$(hist_count "$TMP/flb" 'fieldwork:work arg0=7')" = 100 \
	-a "$(hist_count "$TMP/flb" 'fieldwork:work arg0=9')" = 50 \
	-a "$(grep '^fieldwork:work' "$TMP/flb" | tr '\n' '|')" = 'fieldwork:work arg0=7|fieldwork:work arg0=9|'
"$BPFPROF" funclat "u:$W:work" --by arg0,comm --filter 'arg0 == 9' -- "$W" 0 >"$TMP/flbf" 2>&1
check "funclat --by arg0,comm --filter 'arg0 == 9': one key, 50 calls" \
	test "$(hist_count "$TMP/flbf" 'fieldwork:work arg0=9,comm=fieldwork')" = 50 \
	-a "$(grep -c '^fieldwork:work' "$TMP/flbf")" = 1
"$BPFPROF" funclat sys:openat --by filename -- cat /etc/hostname >"$TMP/flo" 2>&1
check "funclat sys:openat --by filename: /etc/hostname once" \
	test "$(hist_count "$TMP/flo" 'sys:openat filename=/etc/hostname')" = 1
expect_two_early() { # (bad-input checks of the new options; the general ones are in part 8)
	local out rc
	out=$(timeout 30 "$BPFPROF" "${@:3}" 2>&1 >/dev/null); rc=$?
	check "$1" test "$rc" = 2 -a "$(printf '%s\n' "$out" | wc -l)" = 1 -a -n "$(grep -E -e "$2" <<<"$out")"
}
expect_two_early "funclat --by retval: one line, exit 2" "funclat keys each call at its entry" \
	funclat "u:$W:work" --by retval 1
expect_two_early "profile --by on sampled perf events: one line, exit 2" \
	"--by pid: perf's sampled events have no fields" profile --by pid 1

"$BPFPROF" profile -e "u:$W:work" --by arg0 -- "$W" 0 >"$TMP/pb" 2>&1
check "profile -e u:BIN:work --by arg0: a report section per key, busiest first, 100 and 50" \
	test "$(grep '^# Samples' "$TMP/pb" | tr '\n' '|')" = \
	"# Samples: 100 of event 'fieldwork:work arg0=7'|# Samples: 50 of event 'fieldwork:work arg0=9'|"
"$BPFPROF" profile -e "u:$W:work" --by arg0 -f -- "$W" 0 >"$TMP/pbf" 2>&1
check "profile -e u:BIN:work --by arg0 -f: the key as the root frame, 100 and 50" \
	test "$(awk '/^fieldwork:work arg0=7;/ { n += $NF } END { print n + 0 }' "$TMP/pbf")" = 100 \
	-a "$(awk '/^fieldwork:work arg0=9;/ { n += $NF } END { print n + 0 }' "$TMP/pbf")" = 50
"$BPFPROF" profile -e sched:sched_process_exec --by filename -f -- "$W" 3 >"$TMP/pbe" 2>&1
check "profile -e sched:sched_process_exec --by filename: /bin/true 3 times" \
	test "$(awk '/^sched:sched_process_exec filename=(\/usr)?\/bin\/true;/ { n += $NF } END { print n + 0 }' "$TMP/pbe")" = 3

# 6b. Arguments by name: fieldwork's work(int x), from its DWARF, is arg0 by another name.
"$BPFPROF" stat "u:$W:work" --by x -- "$W" 0 >"$TMP/byname" 2>&1
check "stat u:BIN:work --by x (work's parameter, from DWARF): 7 x100, 9 x50, no other value" \
	test "$(by_count "$TMP/byname" 7)" = 100 -a "$(by_count "$TMP/byname" 9)" = 50 \
	-a "$(awk '/by x/ { on = 1; next } on && $1 ~ /^[0-9]+$/' "$TMP/byname" | wc -l)" = 2
"$BPFPROF" stat "u:$W:work" --filter 'x == 9' -- "$W" 0 >"$TMP/filtname" 2>&1
check "stat u:BIN:work --filter 'x == 9' counts 50" \
	test "$(event_count "$TMP/filtname" 'fieldwork:work')" = 50
"$BPFPROF" funclat "u:$W:work" --by x --filter 'x != 9' -- "$W" 0 >"$TMP/flname" 2>&1
check "funclat u:BIN:work --by x --filter 'x != 9': one key, 100 calls" \
	test "$(hist_count "$TMP/flname" 'fieldwork:work x=7')" = 100 \
	-a "$(grep -c '^fieldwork:work' "$TMP/flname")" = 1
"$BPFPROF" trace "u:$W:work" --fields x,arg0 -- "$W" 0 >"$TMP/trname" 2>&1
check "trace u:BIN:work --fields x,arg0: 50 lines 'x=9 arg0=9'" \
	test "$(grep -c 'fieldwork:work: x=9 arg0=9$' "$TMP/trname")" = 50
# From a separate debug file: libc's, where the distribution's debug package installed it
# (/usr/lib/debug/.build-id/); malloc is an alias of __libc_malloc(size_t bytes), found by address.
out=$("$BPFPROF" stat c:malloc --by nope -a 1 2>&1 >/dev/null)
if grep -q "no prototype known" <<<"$out"; then
	skip "libc's argument names from its debug file" "no debug file for libc here (libc6-dbg)"
else
	check "libc's argument names from its debug file: malloc's bytes (alias of __libc_malloc)" \
		grep -q "its fields: arg0, arg1, arg2, arg3, arg4, arg5, bytes, comm" <<<"$out"
fi
"$BPFPROF" list -v -x "$W" work >"$TMP/listx" 2>&1
check "list -v -x BIN: a function's arguments from its DWARF ('work  (int x)')" \
	grep -q "^u:.*/fieldwork:work  *(int x)$" "$TMP/listx"
# k:FUNC's names come from the kernel's BTF: the field is known, whether or not the kernel
# lets a kprobe or fentry program attach here.
out=$("$BPFPROF" stat k:vfs_read --by count -a 0.5 2>&1 >/dev/null); rc=$?
if [ "$rc" = 0 ]; then
	ok "stat k:vfs_read --by count (vfs_read's parameter, from BTF)"
elif [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -q "^bpfprof: cannot trace kernel function 'vfs_read'" <<<"$out"; then
	ok "stat k:vfs_read --by count: the field is known; one line refuses the attach ($(sed 's/^bpfprof: //' <<<"$out" | cut -c1-60)...)"
else
	fail "stat k:vfs_read --by count" "$out"
fi

# 7. Kernel functions' return values: kprobes / fentry where the kernel has them.
out=$("$BPFPROF" stat 'k:vfs_read%return' --by retval -a 0.5 2>&1 >/dev/null); rc=$?
if [ "$rc" = 0 ]; then
	ok "stat k:vfs_read%return --by retval"
elif grep -q "cannot trace kernel function" <<<"$out"; then
	skip "stat k:vfs_read%return --by retval" "$(head -1 <<<"$out" | sed 's/^bpfprof: //')"
else
	fail "stat k:vfs_read%return --by retval" "$out"
fi

# 8. Bad input: one line, exit 2.
expect_two() {
	local name=$1 msg=$2; shift 2
	local out rc
	out=$(timeout 30 "$BPFPROF" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" != 2 ]; then
		fail "$name" "exit status $rc (not 2) for: bpfprof $*"
	elif [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! grep -Eq "^bpfprof: .*$msg" <<<"$out"; then
		fail "$name" "message '$out' does not match '$msg'"
	else
		ok "$name"
	fi
}
expect_two "--by an unknown field names the fields" \
	"has no field 'nope'; its fields: filename, pid, old_pid, comm" \
	stat sched:sched_process_exec --by nope -a 1
expect_two "--filter an unknown field names the fields" \
	"unknown field 'nope'; the event's fields: work, function, workqueue" \
	stat workqueue:workqueue_queue_work --filter 'nope == 1' -a 1
expect_two "--filter unbalanced parentheses" "unbalanced parentheses" \
	stat sched:sched_process_exec --filter '(pid == 1 || pid == 2' -a 1
expect_two "--filter unbalanced closing parenthesis" "unbalanced parentheses" \
	stat sched:sched_process_exec --filter 'pid == 1)' -a 1
expect_two "--filter a string compared with <" "field 'filename' is a string: it compares with ==, != or ~ only" \
	stat sched:sched_process_exec --filter 'filename < 3' -a 1
expect_two "--filter a bad expression" "expected ==, !=, <, <=, >, >=, & or ~" \
	stat sched:sched_process_exec --filter 'pid = 1' -a 1
expect_two "--by on an event with no fields" "event 'cpu-clock' is counted by perf and has no fields" \
	stat cpu-clock --by pid -a 1
expect_two "--filter on an event with no fields" "event 'page-faults' is counted by perf and has no fields" \
	stat page-faults --filter 'pid == 1' -a 1
expect_two "--by retval without %return" "no field 'retval'.*FUNC%return" stat "u:$W:work" --by retval -a 1
expect_two "--by an unknown name on a user function names its arguments" \
	"has no field 'y'; its fields: arg0, arg1, arg2, arg3, arg4, arg5, x, comm" stat "u:$W:work" --by y -a 1
expect_two "--by an unknown name on a kernel function names its arguments (BTF)" \
	"has no field 'nope'; its fields: arg0, arg1, arg2, arg3, arg4, arg5, file, buf, count, pos, comm" \
	stat k:vfs_read --by nope -a 1
expect_two "--by a parameter name on a return" "no field 'x'.*arguments are the entry's" \
	stat "u:$W:work%return" --by x -a 1
expect_two "--by x:string on an int" "field 'x' is no pointer" stat "u:$W:work" --by x:string -a 1
expect_two "--by a bad cast" "unknown cast ':q9'" stat "u:$W:work" --by arg0:q9 -a 1
expect_two "%return on a tracepoint" "%return applies to functions" stat 't:sched:sched_switch%return' -a 1
expect_two "funclat --filter unknown field" "unknown field 'nope'; the event's fields: arg0" \
	funclat "u:$W:work" --filter 'nope > 1' 1
expect_two "funclat FUNC%return" "funclat times each call from its entry to its return" \
	funclat "u:$W:work%return" 1
expect_two "profile --filter on sampled perf events" "perf's sampled events have no fields" \
	profile --filter 'pid > 1' 1
expect_two "--filter a kernel function that does not exist" "no kernel function 'no_such_fn'" \
	stat workqueue:workqueue_queue_work --filter 'function == no_such_fn' -a 1
