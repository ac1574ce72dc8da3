# perfmon kernel: one non-recursive Makefile. `make help` lists targets.

CROSS_COMPILE ?=
CC      := $(CROSS_COMPILE)gcc
LD      := $(CROSS_COMPILE)ld
NM      := $(CROSS_COMPILE)nm
HOSTCC  ?= gcc
PYTHON  ?= python3

# DEBUG=1 builds the kernel at -Og for gdb, in its own directory so that
# objects of the two flavours never mix (build/ stays the -O2 one).
BUILD_ROOT := build
ifeq ($(DEBUG),1)
BUILD   := $(BUILD_ROOT)/debug
OPT     := -Og
else
BUILD   := $(BUILD_ROOT)
OPT     := -O2
endif
SMP     ?= 4
ACCEL   ?= auto
MEM     ?= 512M
ARGS    ?=
TESTS   ?=
GDB_PORT ?= 1234

# Quiet by default; make V=1 shows the commands.
ifeq ($(V),1)
Q :=
quiet = @true
else
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2)
endif

KERNEL_ELF := $(BUILD)/kernel.elf
ISO        := $(BUILD)/perfmon.iso
# The model kernel (below, "the model kernel"), built with them.
MODEL_BUILD := $(BUILD)/model
MODEL_ELF  := $(MODEL_BUILD)/kernel.elf
MODEL_ISO  := $(BUILD)/perfmon-model.iso

KERNEL_CFLAGS := -std=gnu11 $(OPT) -g -Wall -Wextra -Werror \
    -ffreestanding -fno-pic -fno-pie -fno-stack-protector -fno-common \
    -mno-red-zone -mcmodel=kernel -mgeneral-regs-only -mno-80387 \
    -mno-mmx -mno-sse -mno-sse2 -mno-avx \
    -fno-omit-frame-pointer -fno-asynchronous-unwind-tables \
    -fno-tree-loop-distribute-patterns -fno-toplevel-reorder \
    -I. -Iarch/x86 -Itests/lib -MMD -MP
KERNEL_LDFLAGS := -nostdlib -static -z max-page-size=0x1000 \
    --no-warn-rwx-segments -z noexecstack --build-id=sha1 -T kernel.lds

# The in-kernel suites sit in tests/ by subject, in folders at any depth
# (tests/lib/ holds what they share, found through -Itests/lib); tests/host/
# is built for the host. The runner compares each boot's results with the
# list of tests these sources define ($(BUILD)/tests.list, beside the ISO).
TEST_SRCS := $(sort $(filter-out tests/host/%,$(shell find tests -name '*.c')))
KERNEL_SRCS := $(wildcard kern/*.c kern/perfmon/*.c kern/perf/*.c) \
    $(wildcard arch/x86/machine/*.c) $(wildcard arch/x86/machine/*.S) \
    $(wildcard arch/x86/pmu/*.c) $(TEST_SRCS)
KERNEL_OBJS := $(addprefix $(BUILD)/,$(addsuffix .o,$(basename $(KERNEL_SRCS))))

# The source list itself, rewritten only when it changes: make compares
# times, so a deleted source would otherwise leave the link and the test
# list as they were.
SRCS_STAMP := $(BUILD)/srcs.list
$(shell mkdir -p $(BUILD) && echo '$(KERNEL_SRCS)' | cmp -s - $(SRCS_STAMP) \
    || echo '$(KERNEL_SRCS)' > $(SRCS_STAMP))

HOST_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror \
    -fsanitize=address,undefined -fno-omit-frame-pointer \
    -I. -Iarch/x86 -Itests/host -MMD -MP

.PHONY: all deps run check check-model check-hw debug clean help lint bench bench-scale torture \
        host-tests iso soak profile

all: $(ISO) $(MODEL_ISO) host-tests

help:
	@echo "make            build build/kernel.elf, the ISO and the host tests"
	@echo "make run        boot in QEMU with the serial shell on this terminal"
	@echo "make check      boot the in-kernel suites on 1, 2 and 4 CPUs, the"
	@echo "                shell and runner checks, the host tests and the docs"
	@echo "                check: a line per boot, a recap of failures,"
	@echo "                'N passed, N failed'; serial logs in build/logs/"
	@echo "make check-model  the perfmon suites in the model kernel on"
	@echo "                modelled Intel and AMD PMUs (docs/testing.md)"
	@echo "make soak       the kernel suites of make check RUNS=10 times on"
	@echo "                SMP='1 2 4 8 64' CPUs: proves a change flake-free"
	@echo "make check-hw   the hardware PMU suites under KVM (needs an Intel or"
	@echo "                AMD host PMU; fails, saying why, when nothing was tested)"
	@echo "make bench      perfmon benchmark under TCG -icount (instructions;"
	@echo "                about 2 minutes)"
	@echo "make bench-scale  the benchmark's scaling study at 2 to 64 CPUs (long)"
	@echo "make torture    the long perfmon torture run (progress every 10 s)"
	@echo "make profile    boot, sample WORKLOAD on EVENT every PERIOD events,"
	@echo "                write build/profile/: perf script text, folded"
	@echo "                stacks, flamegraph.svg, perf.data for Linux perf;"
	@echo "                adds the kernel ELF to perf's build-id cache, so"
	@echo "                perf report -i build/profile/perf.data (script,"
	@echo "                annotate, diff, ...) shows the kernel's symbols"
	@echo "make debug      boot with QEMU waiting for gdb on GDB_PORT; it prints"
	@echo "                the gdb line to run (gdb -x tools/build/gdbinit)"
	@echo "make lint       cppcheck over kern/, arch/ and tests/: prints"
	@echo "                'lint: cppcheck clean (N files)' or the findings"
	@echo "make deps       install QEMU, GRUB, the ISO tools, cppcheck, gdb and"
	@echo "                Linux perf when missing (as root, apt-get)"
	@echo "make clean      remove build/"
	@echo ""
	@echo "Variables:"
	@echo "  SMP=n         CPUs (1 to 64; default 4, check: 1 2 4, soak: 1 2 4 8 64)"
	@echo "  MEM=512M      guest memory (at least 64M)"
	@echo "  ACCEL=kvm|tcg accelerator (default: KVM only with vmx/svm)"
	@echo "  TESTS=sel     tests to run (check, run): suites, suite.name, globs"
	@echo "                e.g. TESTS='kmem,perfmon.*'"
	@echo "  ARGS='words'  extra kernel command line (run, check, torture, ...)"
	@echo "  TORTURE_OPS=n operations per CPU for make torture (default 500000)"
	@echo "  RUNS=n        runs for make soak (default 10)"
	@echo "  WORKLOAD='calltree 1000'  make profile's workload (spin MS,"
	@echo "                pingpong N, calltree N); EVENT=emit, PERIOD=13 (events"
	@echo "                per sample; empty: perf record's -F 4000); FREQ=HZ"
	@echo "                (samples a second instead of PERIOD); SMP=2;"
	@echo "                BUILDID_DIR=dir perf's build-id cache (default"
	@echo "                ~/.debug; else read with perf --buildid-dir dir)"
	@echo "  GDB_PORT=n    TCP port make debug's QEMU waits on (default 1234)"
	@echo "  DEBUG=1       build the kernel at -Og instead of -O2, in build/debug/"
	@echo "                (any target: make debug DEBUG=1, make run DEBUG=1)"
	@echo "  V=1           show build commands; check prints every test's line"
	@echo "  -j2           build on two cores"

deps:
	@tools/build/install-deps

# --- kernel ---------------------------------------------------------------

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(KERNEL_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(call quiet,AS,$<)
	$(Q)$(CC) $(KERNEL_CFLAGS) -c $< -o $@

$(BUILD)/ksyms-empty.S: tools/build/gen-ksyms
	@mkdir -p $(BUILD)
	$(Q)$(PYTHON) tools/build/gen-ksyms --empty > $@

$(BUILD)/ksyms-empty.o: $(BUILD)/ksyms-empty.S
	$(Q)$(CC) -c $< -o $@

# First link without symbols, then again with the generated table, which
# sits after all code so no function moves (checked).
$(BUILD)/kernel.pass1.elf: $(KERNEL_OBJS) $(BUILD)/ksyms-empty.o kernel.lds $(SRCS_STAMP)
	$(call quiet,LD,$@)
	$(Q)$(LD) $(KERNEL_LDFLAGS) -o $@ $(KERNEL_OBJS) $(BUILD)/ksyms-empty.o

$(BUILD)/ksyms.S: $(BUILD)/kernel.pass1.elf tools/build/gen-ksyms
	$(Q)$(PYTHON) tools/build/gen-ksyms $(NM) $< > $@

$(BUILD)/ksyms.o: $(BUILD)/ksyms.S
	$(Q)$(CC) -c $< -o $@

$(KERNEL_ELF): $(KERNEL_OBJS) $(BUILD)/ksyms.o kernel.lds
	$(call quiet,LD,$@)
	$(Q)$(LD) $(KERNEL_LDFLAGS) -o $@ $(KERNEL_OBJS) $(BUILD)/ksyms.o
	$(Q)$(PYTHON) tools/build/gen-ksyms --check $(NM) $(BUILD)/kernel.pass1.elf $@

$(BUILD)/tests.list: $(TEST_SRCS) $(SRCS_STAMP) tools/test/runner_tests.py
	@mkdir -p $(BUILD)
	$(Q)$(PYTHON) tools/test/runner_tests.py $(TEST_SRCS) > $@.tmp
	$(Q)mv $@.tmp $@

$(ISO): $(KERNEL_ELF) tools/build/grub.cfg $(BUILD)/tests.list
	@mkdir -p $(BUILD)/iso/boot/grub
	$(call quiet,ISO,$@)
	$(Q)cp $(KERNEL_ELF) $(BUILD)/iso/boot/kernel.elf
	$(Q)cp tools/build/grub.cfg $(BUILD)/iso/boot/grub/grub.cfg
	$(Q)grub-mkrescue -o $@ $(BUILD)/iso >$(BUILD)/grub-mkrescue.log 2>&1 \
	    || { cat $(BUILD)/grub-mkrescue.log; exit 1; }

iso: $(ISO)

# --- the model kernel ------------------------------------------------------

# A second kernel whose PMU drivers (arch/x86/pmu/*.c) and hardware suites
# (tests/hw/*.c) reach the register models of arch/x86/pmu/model/ (the
# host tests' own) instead of the machine: those sources are compiled
# again with pmu_model_redirect.h forced in, the models and their kernel
# glue (pmu_model_kern.c) are added, and the link wraps pmu_soft_count so
# that the models count the software PMU's emitted units. Every other
# object is the production kernel's. pmu_model= on the command line picks
# the PMU (docs/cmdline.md); make check-model boots it.
MODEL_REDIRECTED := $(wildcard arch/x86/pmu/*.c tests/hw/*.c)
MODEL_SRCS  := $(wildcard arch/x86/pmu/model/*.c)
MODEL_OBJS  := $(filter-out $(addprefix $(BUILD)/,$(MODEL_REDIRECTED:.c=.o)),\
    $(KERNEL_OBJS)) $(addprefix $(MODEL_BUILD)/,$(MODEL_REDIRECTED:.c=.o) \
    $(MODEL_SRCS:.c=.o))
MODEL_LDFLAGS := $(KERNEL_LDFLAGS) --wrap=pmu_soft_count

$(MODEL_BUILD)/arch/x86/pmu/model/%.o: arch/x86/pmu/model/%.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(KERNEL_CFLAGS) -c $< -o $@

$(MODEL_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(KERNEL_CFLAGS) -include arch/x86/pmu/model/pmu_model_redirect.h \
	    -c $< -o $@

$(MODEL_BUILD)/kernel.pass1.elf: $(MODEL_OBJS) $(BUILD)/ksyms-empty.o kernel.lds $(SRCS_STAMP)
	$(call quiet,LD,$@)
	$(Q)$(LD) $(MODEL_LDFLAGS) -o $@ $(MODEL_OBJS) $(BUILD)/ksyms-empty.o

$(MODEL_BUILD)/ksyms.S: $(MODEL_BUILD)/kernel.pass1.elf tools/build/gen-ksyms
	$(Q)$(PYTHON) tools/build/gen-ksyms $(NM) $< > $@

$(MODEL_BUILD)/ksyms.o: $(MODEL_BUILD)/ksyms.S
	$(Q)$(CC) -c $< -o $@

$(MODEL_ELF): $(MODEL_OBJS) $(MODEL_BUILD)/ksyms.o kernel.lds
	$(call quiet,LD,$@)
	$(Q)$(LD) $(MODEL_LDFLAGS) -o $@ $(MODEL_OBJS) $(MODEL_BUILD)/ksyms.o
	$(Q)$(PYTHON) tools/build/gen-ksyms --check $(NM) $(MODEL_BUILD)/kernel.pass1.elf $@

$(MODEL_ISO): $(MODEL_ELF) tools/build/grub.cfg $(BUILD)/tests.list
	@mkdir -p $(MODEL_BUILD)/iso/boot/grub
	$(call quiet,ISO,$@)
	$(Q)cp $(MODEL_ELF) $(MODEL_BUILD)/iso/boot/kernel.elf
	$(Q)cp tools/build/grub.cfg $(MODEL_BUILD)/iso/boot/grub/grub.cfg
	$(Q)grub-mkrescue -o $@ $(MODEL_BUILD)/iso >$(MODEL_BUILD)/grub-mkrescue.log 2>&1 \
	    || { cat $(MODEL_BUILD)/grub-mkrescue.log; exit 1; }

# --- host unit tests --------------------------------------------------------

# The core's sources, one list for the kernel and the host builds: every
# perfmon*.c of kern/perfmon/ (the software PMU's device, pmu_soft*.c,
# is the kernel's alone).
PERFMON_CORE_SRCS := $(wildcard kern/perfmon/perfmon*.c)

# The binaries, one entry each (HOST_TESTS, HOST_PY_TESTS and each
# binary's sources, defines, includes, renames and link flags).
include tests/host/host.mk

# gcc's dependency file names every header, and the last source as the
# file the binary is made from; an empty rule for each source too (the
# printf) keeps a source that moved or went away from stopping the next
# make. The files are named .dep: the .d files of older trees lacked
# those rules and are left unread. The sources compiled are the entry's
# own (HOST_SRCS_<name>), not the prerequisites: a moved source that an
# old .dep still names is a prerequisite, not a file to compile.
$(BUILD)/host/test_%:
	@mkdir -p $(dir $@)
	$(call quiet,HOSTCC,$@)
	$(Q)$(HOSTCC) $(HOST_INCLUDES_$*) $(HOST_CFLAGS) $(HOST_RENAMES_$*) \
	    $(HOST_DEFINES_$*) $(HOST_LDFLAGS_$*) -MF $@.dep -o $@ \
	    $(filter %.c,$(HOST_SRCS_$*))
	$(Q)printf '%s:\n' $(filter %.c,$(HOST_SRCS_$*)) >> $@.dep

host-tests: $(addprefix $(BUILD)/host/test_,$(HOST_TESTS))

# --- running ----------------------------------------------------------------

run: deps $(ISO)
	$(PYTHON) tools/test/runner.py run --iso $(ISO) --smp $(SMP) --accel $(ACCEL) \
	    --mem $(MEM) --cmdline "$(strip $(if $(TESTS),test=$(TESTS)) $(ARGS))"

# make profile: one boot records WORKLOAD through the capture channel
# (QEMU's debugcon, to build/profile/capture.txt); tools/perf/perf_profile.py
# converts the dump. The emit period is prime to the calltree's 20 units
# a round, so that samples fall on every unit in turn.
WORKLOAD ?= calltree 1000
EVENT    ?= emit
PERIOD   ?= 13
FREQ     ?=
# The kernel ELF goes to Linux perf's build-id cache, BUILDID_DIR (empty:
# perf's own, ~/.debug), where perf finds it by the perf.data's build id.
PROFILE_SMP := $(if $(filter command line,$(origin SMP)),$(SMP),2)
BUILDID_DIR ?=
profile: deps $(ISO)
	@$(PYTHON) tools/perf/perf_profile.py --iso $(ISO) --elf $(KERNEL_ELF) --nm $(NM) \
	    --out $(BUILD)/profile --smp $(PROFILE_SMP) --accel $(ACCEL) \
	    --mem $(MEM) --workload "$(WORKLOAD)" --event "$(EVENT)" \
	    --period "$(PERIOD)" --freq "$(FREQ)" --buildid-dir "$(BUILDID_DIR)"

# gdb reads tools/build/gdbinit; $port and $elf tell it where when not the
# defaults (1234, build/kernel.elf). $(info) prints the line verbatim.
GDB_LINE := $(strip gdb $(if $(filter-out 1234,$(GDB_PORT)),-ex 'set $$port = \
    $(GDB_PORT)') $(if $(filter 1,$(DEBUG)),-ex 'set $$elf = \
    "$(KERNEL_ELF)"') -x tools/build/gdbinit)
NOTHING :=
debug: deps $(ISO)
	$(info QEMU waits for gdb on localhost:$(GDB_PORT); in another terminal run:)
	$(info $(NOTHING)    $(GDB_LINE))
	$(PYTHON) tools/test/runner.py run --iso $(ISO) --smp $(SMP) --accel tcg \
	    --mem $(MEM) --cmdline "panic=halt $(ARGS)" --gdb $(GDB_PORT)

check: deps all
	@$(PYTHON) tools/test/runner.py check --iso $(ISO) --smp "$(CHECK_SMP)" \
	    --model-iso $(MODEL_ISO) \
	    --accel $(ACCEL) --mem $(MEM) --host-tests $(BUILD)/host \
	    --host-list "$(HOST_TESTS)" --host-py "$(HOST_PY_TESTS)" --tests "$(TESTS)" --cmdline "$(ARGS)" \
	    --logdir $(BUILD)/logs $(if $(filter 1,$(V)),--verbose)

# The perfmon suites in the model kernel, on modelled Intel and AMD PMUs
# (tools/test/runner_checks.py: MODEL_BOOTS); TESTS= selects.
check-model: deps $(MODEL_ISO)
	@$(PYTHON) tools/test/runner.py check-model --iso $(MODEL_ISO) \
	    --accel $(ACCEL) --mem $(MEM) --tests "$(TESTS)" --cmdline "$(ARGS)" \
	    --logdir $(BUILD)/logs-model $(if $(filter 1,$(V)),--verbose)

CHECK_SMP := $(if $(filter command line,$(origin SMP)),$(SMP),1 2 4)

# The kernel boots of `make check`, RUNS times over, at more CPU counts: a
# flake that shows once in ten runs shows here, with its replay command.
RUNS ?= 10
SOAK_SMP := $(if $(filter command line,$(origin SMP)),$(SMP),1 2 4 8 64)
soak: deps $(ISO)
	@$(PYTHON) tools/test/soak.py --iso $(ISO) --runs $(RUNS) --smp "$(SOAK_SMP)" \
	    --accel $(ACCEL) --mem $(MEM)

# The hardware PMU suites, under KVM with the host PMU exposed, booted twice:
# on Intel pmu_hw and pmu_intel_hw, with full-width counter writes where the
# CPU has them, then 32-bit writes (pmu_intel.full_width=0); on AMD pmu_hw,
# with the PMI, then polled (pmu_amd.pmi=0). Only a host with a PMU and
# hardware virtualization can run them; elsewhere every test skips and the
# run fails, saying why, since it tested nothing.
check-hw: deps $(ISO)
	@$(PYTHON) tools/test/runner.py check-hw --iso $(ISO) --smp $(SMP) \
	    --accel $(ACCEL) --mem $(MEM) \
	    --timeout 600 --cmdline "$(ARGS)"

# The benchmark boots on 2 CPUs; under TCG with -icount shift=0.
bench: deps $(ISO)
	@$(PYTHON) tools/test/runner.py bench --iso $(ISO) --smp 2 --accel $(ACCEL) \
	    --mem $(MEM) --cmdline "$(ARGS)" --timeout 600

# The scaling study: the same cases at 2, 8, 32 and 64 CPUs (long).
bench-scale: deps $(ISO)
	@$(PYTHON) tools/test/runner.py bench-scale --iso $(ISO) --accel $(ACCEL) \
	    --mem $(MEM) --cmdline "$(ARGS)" --timeout 600

# The long perfmon torture run: TORTURE_OPS operations per CPU, narrow
# counters with the emulated overflow interrupt.
TORTURE_OPS ?= 500000
torture: deps $(ISO)
	@$(PYTHON) tools/test/runner.py boot --name torture --iso $(ISO) --smp $(SMP) \
	    --accel $(ACCEL) --mem $(MEM) --timeout 3600 --progress --cmdline \
	    "test=perfmon_torture torture.ops=$(TORTURE_OPS) pmu_soft.width=12 pmu_soft.intr=1 $(ARGS)"

# cppcheck over every C file of the kernel and the tests; a finding fails
# the target, tools/build/cppcheck.supp holds the reasoned exceptions. The host
# tests built once per PMU configuration are checked in one of them.
LINT_SRCS := $(wildcard kern/*.c kern/*/*.c arch/x86/*/*.c arch/x86/pmu/model/*.c) \
    $(sort $(shell find tests -name '*.c'))

lint: deps
	$(call quiet,LINT,cppcheck)
	$(Q)cppcheck --quiet --error-exitcode=1 \
	    --enable=warning,performance,portability \
	    --inline-suppr --suppressions-list=tools/build/cppcheck.supp \
	    -I. -Iarch/x86 -Itests/lib -Itests/host -D__x86_64__ \
	    -DPMU_TEST_VERSION=5 -DPMU_TEST_CONFIG=4 -DPX_CONFIG=2 -DQUIRK_CONFIG=3 \
	    $(LINT_SRCS)
	@echo "lint: cppcheck clean ($(words $(LINT_SRCS)) files)"

clean:
	rm -rf $(BUILD_ROOT)

-include $(KERNEL_OBJS:.o=.d)
-include $(filter $(MODEL_BUILD)/%,$(MODEL_OBJS:.o=.d))
-include $(wildcard $(BUILD)/host/*.dep)
