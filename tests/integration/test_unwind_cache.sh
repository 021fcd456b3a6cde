#!/bin/bash
# The persistent unwind-table cache: a second run reads its tables back instead of building them;
# a corrupt, truncated, foreign or linked cache file is rejected and rebuilt, never trusted; the
# directory is root's alone (a writable or linked one is refused); the size bound evicts the least
# recently used files; --no-unwind-cache bypasses it.  Every run uses a private cache directory
# ($XDG_CACHE_HOME), so the tests neither see nor touch /var/cache/bpfprof.
. "$(dirname "$0")/lib.sh"
need_root "unwind cache" || exit 0

export XDG_CACHE_HOME=$TMP/xdg
CDIR=$XDG_CACHE_HOME/bpfprof
FULL='_start;__libc_start_main[^;]*;__libc_start_call_main;main;driver'
B=hotcold_nofp
# run NAME [OPTIONS...]: a short profile of the no-frame-pointer workload, -v on stderr
run() {
	local n=$1; shift
	"$BPFPROF" profile -F 499 -f -U --unwind eh -v "$@" -- "$WL/$B" 0.5 >"$TMP/$n.out" 2>"$TMP/$n.err"
}
# stat_of NAME FIELD: "N tables from the cache", "N built and stored", "N rejected", "N evicted"
stat_of() { grep -Eo "[0-9]+ $2" "$TMP/$1.err" | head -1 | awk '{ print $1 + 0 }'; }
complete() { folded_sum "$TMP/$1.out" "^$B;$FULL;hot_[ab];spin "; }
all() { folded_sum "$TMP/$1.out" "^$B;"; }

# 1. Cold: tables built and stored, in a directory created 0700.
run cold; rc=$?
check "cold run exits 0" test "$rc" -eq 0
cold_stored=$(stat_of cold "built and stored")
echo "# cold: $(grep 'unwind cache' "$TMP/cold.err" | sed 's/^bpfprof: //')"
check "cold run: tables built and stored" test "${cold_stored:-0}" -gt 0
check "cold run: none from the cache" test "$(stat_of cold 'tables from the cache')" -eq 0
check "cache directory is 0700, root's" test "$(stat -c '%a %u' "$CDIR")" = "700 0"
check "cache directory not world-writable" test -z "$(find "$CDIR" -maxdepth 0 -perm -o+w)"
check "cache files 0600" test -z "$(find "$CDIR" -type f ! -perm 600)"
nfiles=$(find "$CDIR" -name '*.unw' | wc -l)
check "one cache file per stored table" test "$nfiles" -eq "$cold_stored"

# 2. Warm: every table from the cache, nothing built, and the stacks as complete as when built.
run warm
warm_hits=$(stat_of warm "tables from the cache")
echo "# warm: $(grep 'unwind cache' "$TMP/warm.err" | sed 's/^bpfprof: //'); complete $(complete warm) of $(all warm)"
check "warm run: tables from the cache" test "$warm_hits" -gt 0
check "warm run: nothing built" test "$(stat_of warm 'built and stored')" -eq 0
check "warm run: '(cached)' on the tables loaded" grep -q "unwind: loaded .*$B: .*(cached)" "$TMP/warm.err"
check "warm run: full stacks from cached tables" test "$(complete warm)" -gt 0
check "warm run: at least 80% of stacks complete" \
	test $((100 * $(complete warm))) -ge $((80 * $(all warm)))

# 3. Flipped bytes in every cache file (rows, header): detected, rebuilt, the stacks still right.
i=0
for f in "$CDIR"/*.unw; do
	size=$(stat -c %s "$f")
	# alternately a row byte near the end and a header byte (the row count)
	if [ $((i % 2)) -eq 0 ]; then off=$((size - 5)); else off=116; fi
	printf '\xa5' | dd of="$f" bs=1 seek=$off conv=notrunc status=none
	i=$((i + 1))
done
run corrupt
rej=$(stat_of corrupt "rejected")
echo "# flipped bytes: $(grep 'unwind cache' "$TMP/corrupt.err" | sed 's/^bpfprof: //')"
check "flipped bytes: every corrupt file loaded is rejected" test "$rej" -ge "$warm_hits"
check "flipped bytes: no table from a corrupt file" test "$(stat_of corrupt 'tables from the cache')" -eq 0
check "flipped bytes: the tables rebuilt and stored again" test "$(stat_of corrupt 'built and stored')" -ge "$warm_hits"
check "flipped bytes: full stacks" test "$(complete corrupt)" -gt 0
run rewarm
check "after the rebuild: tables from the cache again" test "$(stat_of rewarm 'tables from the cache')" -eq "$warm_hits"

# 4. Truncated, foreign (another version), a symbolic link and a FIFO in a cache file's place.
files=("$CDIR"/*.unw)
truncate -s 100 "${files[0]}"
[ ${#files[@]} -gt 1 ] && printf '\x63\x00\x00\x00' | dd of="${files[1]}" bs=1 seek=8 conv=notrunc status=none
if [ ${#files[@]} -gt 2 ]; then rm -f "${files[2]}"; ln -s /etc/passwd "${files[2]}"; fi
if [ ${#files[@]} -gt 3 ]; then rm -f "${files[3]}"; mkfifo "${files[3]}"; fi
want=$(( ${#files[@]} < 4 ? ${#files[@]} : 4 ))
timeout 30 bash -c "$(declare -f run); B=$B BPFPROF=$BPFPROF WL=$WL TMP=$TMP run hostile"; rc=$?
check "hostile cache files: run exits 0 (no hang on a FIFO)" test "$rc" -eq 0
check "hostile cache files: each rejected" test "$(stat_of hostile rejected)" -ge "$want"
check "hostile cache files: the link's target untouched" test -s /etc/passwd
check "hostile cache files: full stacks" test "$(complete hostile)" -gt 0
check "hostile cache files: replaced by regular files" test -z "$(find "$CDIR" ! -type f ! -type d)"

# 5. An unsafe directory is refused (one line, for the unwind tables and the inline chains alike),
# the run goes on without the cache.
chmod 0777 "$CDIR"
run writable; rc=$?
check "world-writable directory: run exits 0" test "$rc" -eq 0
check "world-writable directory: refused, said once" \
	test "$(grep -c "cache .* not used: writable by group or others" "$TMP/writable.err")" -eq 1
check "world-writable directory: not used" grep -q "unwind cache: not used" "$TMP/writable.err"
chmod 0700 "$CDIR"
mv "$CDIR" "$TMP/realcache"; ln -s "$TMP/realcache" "$CDIR"
run linked
check "directory behind a symbolic link: refused" grep -q "cache .*a symbolic link" "$TMP/linked.err"
rm "$CDIR"; mv "$TMP/realcache" "$CDIR"
chown 65534 "$CDIR"
run foreign
check "directory of another user: refused" grep -q "cache .*owned by another user" "$TMP/foreign.err"
chown 0 "$CDIR"

# 6. --no-unwind-cache: neither read nor written.
before=$(find "$CDIR" -type f -newer "$TMP/rewarm.err" | wc -l)
run bypass --no-unwind-cache
check "--no-unwind-cache: the cache not used" grep -q "unwind cache: not used" "$TMP/bypass.err"
check "--no-unwind-cache: no file touched" test "$(find "$CDIR" -type f -newer "$TMP/rewarm.err" | wc -l)" -eq "$before"
check "--no-unwind-cache: full stacks" test "$(complete bypass)" -gt 0

# 7. The size bound: an old 3 MB file is evicted first when a run stores into a 1 MB cache.
rm -f "$CDIR"/*
head -c 3000000 /dev/zero >"$CDIR/b-00-0.unw"; chmod 600 "$CDIR/b-00-0.unw"; touch -d '2 days ago' "$CDIR/b-00-0.unw"
run bound --unwind-cache-mb 1
echo "# bound: $(grep 'unwind cache' "$TMP/bound.err" | sed 's/^bpfprof: //')"
check "size bound: the least recently used file evicted" test ! -e "$CDIR/b-00-0.unw"
check "size bound: eviction counted" test "$(stat_of bound evicted)" -ge 1
check "size bound: the directory within 1 MB" test "$(du -sk "$CDIR" | cut -f1)" -le 1024
check "size bound: the new tables kept" test "$(find "$CDIR" -name '*.unw' | wc -l)" -gt 0

# 8. The kernel's struct fields the walks read: streamed from its BTF once a boot, then kept; a
# corrupt copy rejected and made again.
rm -f "$CDIR"/kf-*
run kfcold
if grep -q "kernel struct fields" "$TMP/kfcold.err"; then
	check "kernel fields, cold: read from the BTF" grep -q "kernel struct fields read from the kernel's BTF" "$TMP/kfcold.err"
	check "kernel fields, cold: kept for the boot" test "$(find "$CDIR" -name 'kf-*' | wc -l)" -eq 1
	run kfwarm
	check "kernel fields, warm: from the cache" grep -q "kernel struct fields kept from an earlier run of this boot" "$TMP/kfwarm.err"
	check "kernel fields, warm: full stacks" test "$(complete kfwarm)" -gt 0
	f=$(find "$CDIR" -name 'kf-*' | head -1)
	printf '\xa5' | dd of="$f" bs=1 seek=$(( $(stat -c %s "$f") - 3 )) conv=notrunc status=none
	run kfbad
	check "kernel fields, flipped byte: rejected" grep -q "cache: .*/kf-.* rejected (corrupt or not ours)" "$TMP/kfbad.err"
	check "kernel fields, flipped byte: read from the BTF again" grep -q "kernel struct fields read from the kernel's BTF" "$TMP/kfbad.err"
	run kfagain
	check "kernel fields, after the rebuild: from the cache again" grep -q "kernel struct fields kept from an earlier run of this boot" "$TMP/kfagain.err"
else
	skip "kernel fields kept" "no kernel struct field found in this kernel's BTF"
fi

# 9. Bad input: the bound's range.
expect_one_error "--unwind-cache-mb 0: one line" "unwind-cache-mb" -- profile --unwind-cache-mb 0 -a 1
