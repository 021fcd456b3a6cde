#!/bin/sh
# Regenerate the committed vmlinux.h for this machine's architecture from the running kernel's BTF.
# CO-RE relocates field offsets at load time, so one header serves every kernel with BTF.
set -eu
arch=$(uname -m)
case "$arch" in
x86_64) dir=x86 ;;
aarch64) dir=arm64 ;;
*) echo "gen.sh: unsupported architecture $arch" >&2; exit 1 ;;
esac
btf=${1:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen.sh: $btf not readable (kernel built without CONFIG_DEBUG_INFO_BTF?)" >&2; exit 1; }
out=$(dirname "$0")/$dir/vmlinux.h
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
