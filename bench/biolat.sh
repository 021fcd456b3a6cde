#!/bin/bash
# bpfprof biolat: IOPS of 4 KiB O_DIRECT random reads (fio, one psync job, or dd) untraced, under
# bpfprof biolat with and without --heatmap, under bpftrace's biolatency equivalent and under perf
# record, in interleaved rounds: each traced run is divided by the two untraced runs around it in
# its round, and the median of those ratios is printed (target >= 0.99).  The reads go to a file
# on the disk under /tmp, as users run it, so every read reaches the disk.
# On a shared machine IOPS are noisy (the noise line says how much), so the bench also measures
# what the tracers cost directly: the BPF programs' run time per I/O from the kernel's BPF
# statistics (kernel.bpf_stats_enabled, on for those runs only).
# Then the bytes bpfprof reads from the kernel per second of heat map versus the perf.data that
# perf record writes for the same run.
# The row "biolat BPF ns per I/O" is issue 15's target (<= 500 ns): the median of BPF_REPS runs
# (default 5) of `biolat --disk DISK`; BASE=/path/to/another/bpfprof adds its median, its runs
# alternating with this tree's.
# Settings: REPS rounds (default 7), SECS seconds per run (default 3), IOPS=0 for the BPF run
# times alone.
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-7}
SECS=${SECS:-3}
BPF_REPS=${BPF_REPS:-5}
BASE=${BASE:-}
if [ "$(id -u)" != 0 ]; then
	echo "biolat bench: needs root (BPF, tracepoints); skipped"
	exit 0
fi

# perf and bpftrace's tracepoint probes need tracefs; mount it for the bench if it is not there.
mounted_tracefs= stats_was=
if ! [ -e /sys/kernel/tracing/events/block ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && mounted_tracefs=1
fi
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	[ -n "$stats_was" ] && sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	[ -n "$mounted_tracefs" ] && umount /sys/kernel/tracing
	rm -rf "$BTMP"
}
trap cleanup EXIT

if have fio; then
	echo "## load: fio --direct=1 --rw=randread --bs=4k --ioengine=psync --runtime=$SECS --time_based (1 job)"
	# iops FILE: IOPS of one run; terse format v3: field 8 is read IOPS
	iops() {
		fio --name=r --filename="$1" --direct=1 --rw=randread --bs=4k --ioengine=psync \
			--runtime="$SECS" --time_based --output-format=terse --terse-version=3 2>/dev/null |
			cut -d';' -f8
	}
else
	echo "## load: dd iflag=direct bs=4k, sequential (install fio for random reads)"
	iops() {
		local t0 t1 n=$((3000 * SECS))
		t0=$(date +%s.%N)
		dd if="$1" of=/dev/null bs=4k count=$n iflag=direct status=none
		t1=$(date +%s.%N)
		awk -v n=$n -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", n / (b - a) }'
	}
fi

BT_PROG='tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
	@usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
	delete(@start[args->dev, args->sector]); }'

# start_tracer NAME DISK: starts it in the background ($TR), returning once it is attached.
start_tracer() {
	local out="$BTMP/tracer.out" i ready
	: >"$out"
	case $1 in
	biolat) "$BPFPROF" biolat --disk "$2" >"$out" 2>&1 & ready="^Tracing" ;;
	base) "$BASE" biolat --disk "$2" >"$out" 2>&1 & ready="^Tracing" ;;
	heatmap) "$BPFPROF" biolat -v --disk "$2" --heatmap "$BTMP/h.svg" >"$out" 2>&1 &
		ready="^Tracing" ;;
	bpftrace) bpftrace -e "$BT_PROG" >"$out" 2>&1 & ready="^Attaching" ;;
	perf) perf record -q -e block:block_rq_issue -e block:block_rq_complete -a \
		-o "$BTMP/perf.data" >"$out" 2>&1 & ready= ;;
	esac
	TR=$!
	if [ -z "$ready" ]; then
		sleep 1 # perf record -q prints nothing once ready
		return 0
	fi
	for i in $(seq 300); do
		grep -q "$ready" "$out" && return 0
		kill -0 "$TR" 2>/dev/null || break
		sleep 0.1
	done
	echo "biolat bench: $1 did not start: $(head -n 3 "$out")" >&2
	kill "$TR" 2>/dev/null
	return 1
}
stop_tracer() { kill -INT "$TR"; wait "$TR" 2>/dev/null; }

configs=(biolat heatmap)
have bpftrace && configs+=(bpftrace)
have perf && [ -e /sys/kernel/tracing/events/block ] && configs+=(perf)
label() {
	case $1 in
	biolat) echo "bpfprof biolat --disk $2" ;;
	base) echo "BASE biolat --disk $2" ;;
	heatmap) echo "bpfprof biolat --disk $2 --heatmap" ;;
	bpftrace) echo "bpftrace biolatency (block tracepoints)" ;;
	perf) echo "perf record -e block:block_rq_issue,complete -a" ;;
	esac
}
med() { tr ' ' '\n' | grep -v '^$' | median; }
spread() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%s-%s", a[1], a[NR] }'; }

# bench TARGET-FILE DISK: the interleaved rounds and their summary.
bench() {
	local file=$1 disk=$2 r k c t0 t1 b1 b2 base line
	declare -A got all rat
	for r in $(seq "$REPS"); do
		b1=$(iops "$file")
		got=()
		# rotate the order so that no configuration always runs first or last in a round
		for ((k = 0; k < ${#configs[@]}; k++)); do
			c=${configs[$(( (k + r) % ${#configs[@]} ))]}
			t0=$(date +%s.%N)
			start_tracer "$c" "$disk" || continue
			got[$c]=$(iops "$file")
			stop_tracer
			t1=$(date +%s.%N)
			# "heat map: 7 columns of 1.000 s, 7168 bytes read from the kernel"
			[ "$c" = heatmap ] && sed -n 's/.*heat map: \([0-9]*\) columns of .*, \([0-9]*\) bytes read.*/\1 \2/p' \
				"$BTMP/tracer.out" >"$BTMP/heatmap.bytes"
			[ "$c" = perf ] && echo "$(stat -c %s "$BTMP/perf.data") $(awk -v a="$t0" -v b="$t1" \
				'BEGIN { print b - a }')" >"$BTMP/perf.bytes"
		done
		b2=$(iops "$file")
		base=$(awk -v a="$b1" -v b="$b2" 'BEGIN { print (a + b) / 2 }')
		all[base]+="$b1 $b2 "
		all[noise]+="$(awk -v a="$b1" -v b="$b2" 'BEGIN { d = a - b; if (d < 0) d = -d; print d / ((a + b) / 2) }') "
		line="round $r: untraced $b1 / $b2"
		for c in "${configs[@]}"; do
			[ -n "${got[$c]:-}" ] || continue
			all[$c]+="${got[$c]} "
			rat[$c]+="$(ratio "${got[$c]}" "$base") "
			line+=", $c ${got[$c]}"
		done
		echo "# $line"
	done
	base=$(echo "${all[base]}" | med)
	printf "%-48s %8.0f IOPS\n" "untraced" "$base"
	for c in "${configs[@]}"; do
		[ -n "${rat[$c]:-}" ] || continue
		r=$(echo "${all[$c]}" | med)
		# cost per I/O from the medians: 1/traced - 1/untraced
		printf "%-48s %8.0f IOPS  ratio %s (rounds %s)  %+.2f us/IO\n" "$(label "$c" "$disk")" "$r" \
			"$(echo "${rat[$c]}" | med)" "$(echo "${rat[$c]}" | spread)" \
			"$(awk -v t="$r" -v b="$base" 'BEGIN { print 1e6 / t - 1e6 / b }')"
	done
	echo "noise: median difference between the two untraced runs of a round: $(echo "${all[noise]}" | med | awk '{ printf "%.3f", $1 }')"
	bytes_summary
}

# bytes_summary: heat map bytes read by bpfprof vs perf.data, from the last round's runs.
bytes_summary() {
	local hcols hb hps= pb psecs pps
	if read -r hcols hb 2>/dev/null <"$BTMP/heatmap.bytes" && [ -n "$hb" ]; then
		hps=$(awk -v b="$hb" -v c="$hcols" 'BEGIN { printf "%.0f", b / c }')
		echo "bytes: bpfprof biolat --heatmap read $hb bytes for $hcols columns of 1 s: $hps bytes per second of heat map"
	fi
	if read -r pb psecs 2>/dev/null <"$BTMP/perf.bytes" && [ -n "$pb" ]; then
		pps=$(awk -v b="$pb" -v s="$psecs" 'BEGIN { printf "%.0f", b / s }')
		echo "bytes: perf record wrote $pb bytes of perf.data in $psecs s: $pps bytes per second"
		[ -n "$hps" ] && echo "bytes: perf.data per second / heat map per second: $(ratio "$pps" "$hps")"
	fi
	rm -f "$BTMP/heatmap.bytes" "$BTMP/perf.bytes"
}

# bpf_cost NAME DISK FILE: "NS COUNT", the tracer's BPF run time per I/O and the I/Os (runs of
# its busiest program, the completion one) over one load run.  Its programs are the block ones
# that appeared after it started (bpftool 7.1 does not list the owning PIDs).
bpf_cost() {
	local before
	before=$(bpftool prog show 2>/dev/null | awk -F: '/^[0-9]+:/ { print $1 }' | tr '\n' ' ')
	start_tracer "$1" "$2" || return
	iops "$3" >/dev/null
	bpftool prog show >"$BTMP/progs" 2>/dev/null
	stop_tracer
	awk -v before=" $before" '
		/^[0-9]+: / { id = $1; sub(":", "", id); rt = rc = 0; name = ""
			for (i = 1; i < NF; i++) {
				if ($i == "name") name = $(i + 1)
				if ($i == "run_time_ns") rt = $(i + 1)
				if ($i == "run_cnt") rc = $(i + 1)
			}
			if (index(before, " " id " ") || name !~ /issue|compl|insert|requeue|merge|block_rq/)
				next
			t += rt; if (rc > c) c = rc }
		END { if (c) printf "%.0f %d\n", t / c, c }' "$BTMP/progs"
}

file=$BTMP/randread.dat
disk=$(findmnt -no SOURCE -T "$BTMP" 2>/dev/null)
disk=${disk#/dev/}
[ -e "/sys/class/block/$disk/partition" ] &&
	disk=$(basename "$(dirname "$(readlink -f "/sys/class/block/$disk")")")
if [ ! -e "/sys/block/$disk" ]; then
	echo "biolat bench: $BTMP is not on a block device; skipped"
	exit 0
fi
dd if=/dev/urandom of="$file" bs=1M count=512 conv=fsync status=none || exit 1
if [ "${IOPS:-1}" != 0 ]; then
	echo
	echo "## IOPS: 512 MiB file on $disk, $REPS rounds of ${SECS} s runs"
	bench "$file" "$disk"
fi

echo
echo "## BPF run time per block I/O (kernel.bpf_stats_enabled), one ${SECS} s run each"
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
if [ -n "$stats_was" ] && sysctl -qw kernel.bpf_stats_enabled=1; then
	echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	declare -A ns_runs=()
	for r in $(seq "$BPF_REPS"); do
		for c in biolat ${BASE:+base}; do
			read -r ns n < <(bpf_cost "$c" "$disk" "$BTMP/randread.dat")
			[ -n "${ns:-}" ] && ns_runs[$c]+="$ns "
		done
	done
	for c in biolat ${BASE:+base}; do
		[ -n "${ns_runs[$c]:-}" ] || continue
		printf "%-48s %6s ns per I/O (median of %d runs: %s; target <= 500)\n" \
			"$([ "$c" = base ] && echo "BASE biolat BPF ns per I/O" || echo "biolat BPF ns per I/O")" \
			"$(echo "${ns_runs[$c]}" | med)" "$BPF_REPS" "${ns_runs[$c]% }"
	done
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	for c in heatmap bpftrace; do
		[ "$c" = bpftrace ] && ! have bpftrace && continue
		read -r ns n < <(bpf_cost "$c" "$disk" "$file")
		[ -n "${ns:-}" ] && printf "%-48s %6s ns per I/O (%s I/Os)\n" "$(label "$c" "$disk")" "$ns" "$n"
	done
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	stats_was=
else
	echo "cannot enable kernel.bpf_stats_enabled; skipped"
fi
exit 0
