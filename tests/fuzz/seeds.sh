#!/bin/bash
# Remakes the seed corpora (tests/fuzz/corpus/NAME/): small real inputs of each parser, from
# which libFuzzer mutates.  Run from anywhere; needs gcc, binutils and this machine's
# /proc/kallsyms (as root, so that it shows addresses).  The committed seeds are its output, and
# the reproducers of what the fuzzers found (repro-*), which it leaves alone.
set -eu
cd "$(dirname "$0")/corpus"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p perfmap kallsyms elf_syms cfi usdt
# perf maps as V8, the JVM's perf-map-agent and LuaJIT write them: overlapping (reused) code,
# with and without 0x, CRLF endings, spaces in names.
printf '%s\n' '7f3a4c000000 1a0 LazyCompile:~main /srv/app.js:1' \
	'7f3a4c0001a0 40 Builtin:ArgumentsAdaptorTrampoline' \
	'7f3a4c000100 80 LazyCompile:*hot /srv/app.js:42' \
	'0x7f3a4c001000 0x200 Ljava/lang/String;::hashCode' \
	'7f3a4c001100 10 trace_7#3 loop.lua:12' > perfmap/v8-jvm.map
printf '1000 10 crlf\r\n2000 0 zero size\r\n3000 ffffffffffffffff to the end\r\n' > perfmap/edges.map

# kallsyms: the head of the kernel's text, weak symbols and IBT padding from this machine, then
# data symbols and module lines (a tab before the module) in the kernel's format.
{
	awk 'NR <= 40' /proc/kallsyms
	grep -m 4 ' W ' /proc/kallsyms
	grep -m 4 ' t __pfx_' /proc/kallsyms
	printf 'ffffffff82a00000 D init_task\nffffffff83000000 b bss_thing\n'
	printf 'ffffffffc0a01000 t ext4_fill_super\t[ext4]\nffffffffc0a01000 T __pfx_ext4_fill_super\t[ext4]\n'
	printf 'ffffffffc0a03000 t virtblk_probe\t[virtio_blk]\nffffffffc0a03100 d virtblk_ops\t[virtio_blk]\n'
	printf 'ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n'
} > kallsyms/kallsyms
awk 'NR <= 12 { $1 = "0000000000000000"; print }' kallsyms/kallsyms > kallsyms/restricted

# ELF files: a small program (.symtab, .dynsym, .eh_frame with the PLT's expression and each
# shape of rule the unwinder knows), the same stripped with a build-id and a .gnu_debuglink, one
# with a compressed .debug_frame and no .eh_frame, a C++ program (personality and LSDA in its
# CIEs), a shared object, and the vdso (what bpfprof reads from memory).
cat > "$tmp/small.c" <<'C'
#include <alloca.h>
#include <stdio.h>
#include <string.h>
static __attribute__((noinline)) int leaf(int x) { return x * 3; }
__attribute__((noinline)) int framed(int n) { char *p = alloca(n); memset(p, 1, n); return p[0] + leaf(n); }
/* GCC's stack realignment (CFA = *(rbp - 8)), an outermost frame, a signal frame */
__asm__(".text\n.globl f_drap\n.type f_drap,@function\nf_drap:\n.cfi_startproc\npush %rbp\n"
	".cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\nmov %rsp, %rbp\n"
	".cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06\nnop\npop %rbp\n.cfi_def_cfa %rsp, 8\nret\n"
	".cfi_endproc\n.size f_drap, .-f_drap\n"
	".globl f_end\n.type f_end,@function\nf_end:\n.cfi_startproc\n.cfi_undefined rip\nnop\nret\n"
	".cfi_endproc\n.size f_end, .-f_end\n"
	".globl f_signal\n.type f_signal,@function\nf_signal:\n.cfi_startproc\n.cfi_signal_frame\nnop\nret\n"
	".cfi_endproc\n.size f_signal, .-f_signal\n");
int main(int argc, char **argv) { printf("%d\n", framed(argc)); return 0; }
C
cat > "$tmp/cxx.cc" <<'C'
#include <stdexcept>
__attribute__((noinline)) int thrower(int n) { if (n > 3) throw std::runtime_error("n"); return n; }
int main(int argc, char **) { try { return thrower(argc); } catch (const std::exception &) { return 1; } }
C
cc_small() { gcc -O1 -fno-omit-frame-pointer -Wl,--build-id -Wl,-z,noseparate-code "$@"; }
cc_small -o "$tmp/small" "$tmp/small.c"
strip --strip-debug -o elf_syms/small "$tmp/small"
cp elf_syms/small cfi/small
objcopy --only-keep-debug "$tmp/small" "$tmp/small.debug"
strip --strip-all -o "$tmp/stripped" "$tmp/small"
objcopy --add-gnu-debuglink="$tmp/small.debug" "$tmp/stripped" elf_syms/stripped-debuglink
# libdw reads .debug_frame only in a file with DWARF (.debug_info): -g1 keeps that small
cc_small -g1 -fno-asynchronous-unwind-tables -o "$tmp/dframe" "$tmp/small.c"
objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr \
	--compress-debug-sections=zlib "$tmp/dframe" cfi/debug-frame-zlib
g++ -O1 -Wl,-z,noseparate-code -s -o cfi/cxx "$tmp/cxx.cc"
cc_small -shared -fPIC -o "$tmp/small.so" "$tmp/small.c"
strip --strip-debug -o elf_syms/small.so "$tmp/small.so"
python3 - elf_syms/vdso <<'PY'
import re, sys
for line in open('/proc/self/maps'):
    if line.rstrip().endswith('[vdso]'):
        lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
        with open('/proc/self/mem', 'rb') as mem:
            mem.seek(lo)
            open(sys.argv[1], 'wb').write(mem.read(hi - lo))
PY
cp elf_syms/vdso cfi/vdso

# Profiles (bpfprof report, diff): bpfprof's own pprof of a short profile run, gzip'd and not,
# with wakers (offcpu --waker through folded stacks), off-CPU time, a Go program's runtime/pprof
# CPU profile, and folded stacks.  Needs root (the runs) and golang-go; make bpfprof workloads.
ROOT=$(cd ../../.. && pwd)
mkdir -p pprof
"$ROOT/bpfprof" profile -F 199 --pprof pprof/cpu.pb.gz -o /dev/null -- "$ROOT/build/workloads/hotcold" 0.3
gzip -dc pprof/cpu.pb.gz > pprof/cpu.pb
"$ROOT/bpfprof" report -f pprof/cpu.pb.gz > pprof/cpu.folded
"$ROOT/bpfprof" offcpu --pprof pprof/offcpu.pb.gz -o /dev/null -- "$ROOT/build/workloads/blocker" 3
"$ROOT/bpfprof" offcpu --waker -f -o pprof/waker.folded -- "$ROOT/build/workloads/blocker" 2
"$ROOT/bpfprof" report pprof/waker.folded --pprof pprof/waker.pb.gz -o /dev/null
mkdir -p "$tmp/go" && cp "$ROOT/tests/workloads/gocpu.go" "$tmp/go/main.go"
(cd "$tmp/go" && HOME=$tmp GOCACHE=$tmp/gocache GO111MODULE=off go build -o gocpu main.go)
"$tmp/go/gocpu" pprof/go-cpu.pprof 0.5
# SDT notes: a program with probes (one with a semaphore, one with arguments), whole and as its
# raw .note.stapsdt section.
cat > "$tmp/sdt.c" <<'C'
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short app_tick_semaphore __attribute__((section(".probes")));
unsigned short app_start_semaphore __attribute__((section(".probes")));
int main(int argc, char **argv) { DTRACE_PROBE(app, start); DTRACE_PROBE2(app, tick, argc, argv); return 0; }
C
gcc -O1 -s -o usdt/sdt "$tmp/sdt.c"
objcopy --dump-section .note.stapsdt=usdt/note.stapsdt usdt/sdt "$tmp/sdt.out"
# DWARF for inlined frames and lines: a -O2 -g program whose loop is two inlined functions deep,
# as DWARF 5, compressed (the copy inflates it), compressed without .debug_aranges (copied whole),
# and DWARF 4.  fuzz_srcline reads its address from bytes 8-15 (EI_PAD): aimed at work().
mkdir -p srcline
cat > "$tmp/inl.c" <<'C'
static inline int sq(int x) { return x * x; }
static inline int add3(int x) { return sq(x) + 3; }
__attribute__((noinline)) int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += add3(i); return s; }
int main(int argc, char **argv) { return work(argc) & 1; }
C
gcc -O2 -g -Wl,--build-id -Wl,-z,noseparate-code -o srcline/inline-dwarf5 "$tmp/inl.c"
gcc -O2 -gdwarf-4 -Wl,-z,noseparate-code -o "$tmp/inl4" "$tmp/inl.c"
objcopy --compress-debug-sections=zlib "$tmp/inl4" srcline/inline-dwarf4-zlib
objcopy --compress-debug-sections=zlib srcline/inline-dwarf5 srcline/inline-dwarf5-zlib
objcopy --compress-debug-sections=zlib --remove-section=.debug_aranges srcline/inline-dwarf5 \
	srcline/inline-zlib-no-aranges
for f in srcline/inline-*; do
	python3 - "$f" "0x$(nm "$f" | awk '$3 == "work" { print $1 }')" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[8:16] = struct.pack('<Q', int(sys.argv[2], 16) + 4)
open(sys.argv[1], 'wb').write(bytes(b))
PY
done
