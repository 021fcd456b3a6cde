# bpfprof: one binary, every BPF object embedded as a bpftool skeleton.
BPFTOOL ?= bpftool
CLANG   ?= clang
OBJCOPY_BPF ?= llvm-objcopy
CC      ?= cc
OUT     := build
# BPF objects, skeletons and generated headers: the same for every build of the user side (the
# sanitizer build in build/asan/ reads the normal build's).
GEN     := $(OUT)
# The binary: ./bpfprof, or build/asan/bpfprof for the sanitizer build.
BIN     := bpfprof

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_DIR := vmlinux/$(ARCH)

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(GEN)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(GEN)/%.skel.h,$(BPF_SRCS))
# user/main.c and one folder per responsibility (README: Layout); objects mirror it in build/obj.
USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_HDRS := $(wildcard user/*/*.h)
USER_OBJS := $(patsubst user/%.c,$(OUT)/obj/%.o,$(USER_SRCS)) $(OUT)/obj/profile.pb-c.o
# Everything but main(): unit tests link against it.
LIB_OBJS  := $(filter-out $(OUT)/obj/main.o,$(USER_OBJS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
# tests/workloads/libX.c is a shared library, build/workloads/libX.so; X.cc is C++
WORKLOAD_LIB_SRCS := $(wildcard tests/workloads/lib*.c)
WORKLOAD_BINS := $(patsubst tests/workloads/%.c,$(OUT)/workloads/%,$(filter-out $(WORKLOAD_LIB_SRCS),$(WORKLOAD_SRCS))) \
		 $(patsubst tests/workloads/%.c,$(OUT)/workloads/%.so,$(WORKLOAD_LIB_SRCS)) \
		 $(patsubst tests/workloads/%.cc,$(OUT)/workloads/%,$(wildcard tests/workloads/*.cc))

# CFLAGS is the user's (make CFLAGS=-O0, or -fsanitize=...): a command-line CFLAGS replaces
# every assignment to it here, += included, so what the build needs lives apart from it.
CFLAGS  ?= -O2 -g
override CPPFLAGS += -D_GNU_SOURCE -Iinclude -Iuser -I$(GEN)
override WARNINGS := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
# Set by the sanitizer build (make asan) for compiling and linking alike.
SAN_FLAGS :=
COMPILE  = $(CC) $(CPPFLAGS) $(WARNINGS) $(SAN_FLAGS) $(CFLAGS)
# libcurl is not linked: --push loads it (user/export/curlrt.h), every other run starts without
# its 30 libraries; nor is capstone, which annotate loads (3 ms and 3 MB of relocations a start)
LDLIBS  := -lbpf -ldw -lelf -lz -lprotobuf-c -ldl -lm -lpthread
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(VMLINUX_DIR) -Iinclude -Ibpf \
	      -Wall -Wno-unused-function -Wno-compare-distinct-pointer-types

.PHONY: all clean deps test unit integration demo bench workloads asan asan-build fuzz fuzz-build programs
# Keep generated skeletons and BPF objects: they are intermediate files to make, not to us.
.SECONDARY:
all: $(BIN)

$(BIN): $(USER_OBJS)
	$(COMPILE) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# Linked by bpftool (as libbpf-tools does), which leaves out the DWARF that -g put beside the BTF:
# the object embedded in the binary is a third of the size (profile: 1.8 MB -> 0.65 MB) and the
# pages libbpf reads of it at every start, fewer.  The BPF backend names every branch target with
# a symbol of its own (LBB0_12: 3,016 of profile's 3,125), which libbpf's open walks once per
# program section, ~40k symbol reads at every start (4.4 M instructions, ~0.2 ms of CPU): they
# go (no relocation names one; jumps are relative).
$(GEN)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) $(wildcard include/*.h) $(VMLINUX_DIR)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $(@:.bpf.o=.unlinked.o)
	$(BPFTOOL) gen object $@ $(@:.bpf.o=.unlinked.o)
	$(OBJCOPY_BPF) --wildcard --strip-symbol='LBB*' $@

$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Syscall numbers by name for the build's architecture (user/probe/: syscalls:sys_enter_* on one
# raw tracepoint): the kernel has no run-time name -> number map.
$(GEN)/syscall_nrs.h:
	@mkdir -p $(@D)
	echo '#include <asm/unistd.h>' | $(CC) -dM -E - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$$/SYSCALL(\1, \2)/p' | sort > $@.tmp && mv $@.tmp $@

# pprof's schema (proto/profile.proto) as C: protobuf-c's message structs, packer and unpacker.
$(GEN)/profile.pb-c.c $(GEN)/profile.pb-c.h &: proto/profile.proto
	@mkdir -p $(GEN)
	protoc-c --proto_path=proto --c_out=$(GEN) $<

# Generated code: compiled as protoc-c wrote it, without our warnings.
$(OUT)/obj/profile.pb-c.o: $(GEN)/profile.pb-c.c $(GEN)/profile.pb-c.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SAN_FLAGS) $(CFLAGS) -c $< -o $@

# Every user object may include any skeleton or shared header; rebuilding all of them is cheap.
$(OUT)/obj/%.o: user/%.c $(USER_HDRS) $(wildcard include/*.h) $(SKELS) $(GEN)/syscall_nrs.h \
		$(GEN)/profile.pb-c.h
	@mkdir -p $(@D)
	$(COMPILE) -c $< -o $@

$(OUT)/tests/%: tests/unit/%.c tests/unit/test.h tests/unit/test_elf.h $(LIB_OBJS)
	@mkdir -p $(@D)
	$(COMPILE) -Itests/unit -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LDLIBS)

# Objects the unit tests read (tests/unit/fixtures/X.c): optimised with debug info, as the code
# they stand for is built; X.debug its separate debug file, X.stripped without its debug info.
UNIT_FIXTURES := $(patsubst tests/unit/fixtures/%.c,$(OUT)/tests/fixtures/%,$(wildcard tests/unit/fixtures/*.c))
$(OUT)/tests/fixtures/%: tests/unit/fixtures/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wl,--build-id -o $@ $<
	objcopy --only-keep-debug $@ $@.debug
	objcopy --strip-debug $@ $@.stripped
$(OUT)/tests/test_srcline: $(UNIT_FIXTURES)
$(OUT)/tests/test_argnames: $(UNIT_FIXTURES)

# Workloads keep frame pointers and are not optimised (gcc 12 drops the frame of a leaf such as
# spin() at -O1 whatever the flags), so their call structure is the one in the source: tests assert
# on it.  A workload may set its own flags (appended, so they win) in a
# "// build: FLAGS" line.
$(OUT)/workloads/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(CC) -O0 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		$$(sed -n 's|^// build: ||p' $<) -o $@ $< -lpthread -lm

$(OUT)/workloads/lib%.so: tests/workloads/lib%.c
	@mkdir -p $(@D)
	$(CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -fno-optimize-sibling-calls \
		-shared -fPIC $$(sed -n 's|^// build: ||p' $<) -o $@ $<

$(OUT)/workloads/%: tests/workloads/%.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		$$(sed -n 's|^// build: ||p' $<) -o $@ $< -lpthread -lm

workloads: $(WORKLOAD_BINS)

BENCH_TOOLS := $(patsubst bench/%.c,$(OUT)/bench/%,$(wildcard bench/*.c))
$(OUT)/bench/%: bench/%.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(COMPILE) -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LDLIBS)

unit: $(UNIT_BINS)
	tests/run.sh unit

# The sanitizer build: clang's ASan and UBSan (compiler-rt) over the same sources and unit tests,
# in $(OUT)/asan/ so the normal build is untouched.  The BPF objects and skeletons are shared: they
# are not code that runs here.  Any finding aborts the program (-fno-sanitize-recover), and
# tests/asan/run.sh turns that into a failed test.
ASAN_OUT   := $(OUT)/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
asan-build: $(SKELS) $(GEN)/syscall_nrs.h
	+$(MAKE) --no-print-directory OUT=$(ASAN_OUT) GEN=$(GEN) BIN=$(ASAN_OUT)/bpfprof \
		CC=$(CLANG) SAN_FLAGS='$(ASAN_FLAGS)' programs

# The binary and the unit tests (what the sanitizer build makes).
programs: $(BIN) $(UNIT_BINS)

asan: asan-build $(WORKLOAD_BINS)
	tests/run.sh asan

# libFuzzer harnesses (tests/fuzz/fuzz_NAME.c) over the parsers of files other users write.  Only
# the parsers and what they call are built with coverage, so the fuzzer steers by their branches.
FUZZ_SRCS     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS     := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_LIB_SRCS := user/sym/perfmap.c user/sym/ksyms.c user/sym/elf_syms.c user/sym/debuginfo.c \
		 user/sym/untrusted.c user/unwind/cfi.c user/core/common.c user/core/hashtab.c user/core/grow.c \
		 user/core/slotidx.c \
		 user/in/profile_in.c user/in/pprof_read.c user/sym/stackagg.c user/out/stack.c \
		 user/out/pprof.c user/probe/usdt.c user/sym/srcline.c user/sym/srccache.c \
		 user/core/diskcache.c user/sym/demangle.c
FUZZ_LIB_OBJS := $(patsubst user/%.c,$(OUT)/fuzz/obj/%.o,$(FUZZ_LIB_SRCS)) \
		 $(OUT)/fuzz/obj/profile.pb-c.o
# Per harness, for make fuzz; make test runs each for a few seconds.
FUZZ_SECONDS  ?= 60

$(OUT)/fuzz/obj/profile.pb-c.o: $(GEN)/profile.pb-c.c $(GEN)/profile.pb-c.h
	@mkdir -p $(@D)
	$(CLANG) $(CPPFLAGS) $(ASAN_FLAGS) -fsanitize=fuzzer-no-link $(CFLAGS) -c $< -o $@

$(OUT)/fuzz/obj/%.o: user/%.c $(USER_HDRS) $(wildcard include/*.h) $(GEN)/profile.pb-c.h
	@mkdir -p $(@D)
	$(CLANG) $(CPPFLAGS) $(WARNINGS) $(ASAN_FLAGS) -fsanitize=fuzzer-no-link $(CFLAGS) -c $< -o $@

$(OUT)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	$(CLANG) $(CPPFLAGS) $(WARNINGS) $(ASAN_FLAGS) -fsanitize=fuzzer $(CFLAGS) -o $@ $< \
		$(FUZZ_LIB_OBJS) $(LDFLAGS) $(LDLIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run.sh fuzz

integration: bpfprof $(WORKLOAD_BINS)
	tests/run.sh integration

test: deps
	$(MAKE) --no-print-directory bpfprof $(UNIT_BINS) $(WORKLOAD_BINS) asan-build fuzz-build
	tests/run.sh all

# Installs only what is missing; prints nothing to do when everything is there.
# BUILD_PKGS build and run bpfprof; TEST_PKGS are only what the tests and
# benchmarks compare with or drive (perf, bpftrace, fio, a local debuginfod; sys/sdt.h for the
# USDT workload).
BUILD_PKGS := clang llvm libbpf-dev bpftool libelf-dev libdw-dev libdebuginfod-dev zlib1g-dev make gcc g++ \
	      libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev libcapstone-dev
TEST_PKGS := linux-perf bpftrace fio util-linux procps libxml2-utils time debuginfod golang-go chromium \
	     systemtap-sdt-dev tmux
DEB_PKGS := $(BUILD_PKGS) $(TEST_PKGS)
deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	else echo "deps: installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

demo: deps
	$(MAKE) --no-print-directory bpfprof $(OUT)/workloads/hotcold
	./bpfprof profile -F 999 --svg $(OUT)/demo.svg -o $(OUT)/demo.txt -- $(OUT)/workloads/hotcold 2
	@head -n 30 $(OUT)/demo.txt
	@echo "flame graph: $(CURDIR)/$(OUT)/demo.svg   report: $(CURDIR)/$(OUT)/demo.txt"

bench: bpfprof $(WORKLOAD_BINS) $(BENCH_TOOLS)
	@for b in bench/*.sh; do echo "== $$b"; bash $$b || exit 1; done

clean:
	rm -rf $(OUT) bpfprof
