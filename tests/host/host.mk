# The host unit tests' binaries, included by the top Makefile, which keeps
# their flags (HOST_CFLAGS), the link recipe and the host-tests target.
# Each binary is one entry of a table below, made by host_test into its
# rule and the variables the recipe reads: HOST_SRCS_<name>, HOST_DEFINES_<name>,
# HOST_INCLUDES_<name>, HOST_RENAMES_<name>, HOST_LDFLAGS_<name>. The
# entries' order is HOST_TESTS', the list the runner is given.

# --- what the entries share ------------------------------------------------

# The kernel's libc-named functions under test are renamed in both the
# kernel source and the test, so they do not replace the host C library's.
HOST_RENAME_PRINTF := -Dvsnprintf=kern_vsnprintf -Dsnprintf=kern_snprintf
HOST_RENAME_STRING := -Dmemcpy=kern_memcpy -Dmemmove=kern_memmove \
    -Dmemset=kern_memset -Dmemcmp=kern_memcmp -Dstrlen=kern_strlen \
    -Dstrcmp=kern_strcmp -Dstrncmp=kern_strncmp -Dstrchr=kern_strchr \
    -Dstrlcpy=kern_strlcpy
# kern/arg.c's table of keys (ARG_DEFINE_*) is bounded by kernel.lds in
# the kernel; on the host the linker bounds section arg_keys itself.
HOST_RENAME_ARG_KEYS := -Darg_keys_start=__start_arg_keys \
    -Darg_keys_end=__stop_arg_keys
# What a binary that links kern/arg.c and kern/string.c renames.
HOST_RENAME_ARG := $(HOST_RENAME_STRING) $(HOST_RENAME_ARG_KEYS)

# tests/host/model/ shadows the headers that reach the hardware or the
# rest of the kernel (machine/cpu.h, kern/percpu.h, kern/thread.h), so it
# comes before -I. and -Iarch/x86.
HOST_MODEL := -Itests/host/model
HOST_MODEL_HDRS := tests/host/host_test.h tests/host/host_env.h \
    $(wildcard tests/host/model/*/*.h) $(wildcard kern/perfmon/*_i.h)

# The tests see each overflow report the driver makes (and can reload the
# counter from it, as perfmon does for sampling) through a wrapper.
HOST_WRAP_OVERFLOW := -Wl,--wrap=perfmon_sample_report_overflow

# The Intel PMU driver, the x86 layer it shares with AMD's (pmu_x86.c) and
# perfmon, unchanged, over a register model of the PMU and a single-CPU
# kernel environment. perfmon and the driver register one device per
# process: one binary per PMU configuration (PMU_TEST_VERSION), plus one
# for detection alone, one for setup on PMUs whose MSRs misbehave (which
# registers only once, last) and one for the model itself. The dependency
# file keeps only the last source's headers, hence the header lists.
# The register model's source is the model kernel's too
# (arch/x86/pmu/model/); pmu_model_host.c answers the shadow
# machine/cpu.h's accessors with it.
# The driver reads a boot argument, so kern/arg.c links too, with the
# kernel's string functions renamed, and so does fw_cfg, which only
# arg_setup calls and no host test does (the command line stays empty).
HOST_PMU_MODEL_SRCS := arch/x86/pmu/model/pmu_model.c \
    arch/x86/pmu/model/pmu_model_count.c tests/host/pmu/pmu_model_host.c
HOST_PMU_SRCS := $(HOST_PMU_MODEL_SRCS) tests/host/host_env.c \
    kern/errno.c arch/x86/pmu/pmu_intel.c arch/x86/pmu/pmu_intel_setup.c \
    arch/x86/pmu/pmu_intel_detect.c arch/x86/pmu/pmu_x86.c \
    arch/x86/pmu/pmu_x86_test.c $(PERFMON_CORE_SRCS) \
    kern/arg.c kern/string.c arch/x86/machine/fwcfg.c
HOST_PMU_HDRS := tests/host/host_test.h arch/x86/pmu/model/pmu_model.h \
    arch/x86/pmu/model/pmu_model_i.h arch/x86/pmu/model/pmu_model_env.h \
    tests/host/host_env.h $(wildcard tests/host/model/*/*.h) \
    $(wildcard kern/perfmon/*_i.h) arch/x86/pmu/pmu_intel.h arch/x86/pmu/pmu_intel_i.h \
    arch/x86/pmu/pmu_x86.h arch/x86/pmu/pmu_x86_test.h \
    arch/x86/machine/stack.h
# The main suite's files, by behaviour, over their fixture.
HOST_PMU_INTEL_TESTS := $(addprefix tests/host/pmu/,test_pmu_intel.c \
    test_pmu_intel_count.c test_pmu_intel_pmi.c test_pmu_intel_preset.c \
    test_pmu_intel_sample.c pmu_test_intel.c pmu_test_intel.h)
HOST_PMU_SAMPLE := $(addprefix tests/host/pmu/,pmu_sample_test.c \
    pmu_sample_switch.c pmu_sample_table.c)
HOST_PMU_SAMPLE_HDRS := tests/host/pmu/pmu_sample_test.h \
    tests/host/pmu/pmu_sample_test_i.h

# The AMD PMU driver, the x86 layer and perfmon, unchanged, over the AMD
# register model (arch/x86/pmu/model/pmu_model_amd.c, the model kernel's
# too; pmu_model_amd_host.c answers the shadow accessors with it), one
# binary per PMU configuration (PMU_TEST_CONFIG), plus one for detection and setup on PMUs
# that are absent or misbehave (which never registers). kern/arg.c is not
# linked: each test defines the arg_is_set answer the driver asks for.
HOST_PMU_AMD_SRCS := arch/x86/pmu/model/pmu_model_amd.c \
    tests/host/pmu/pmu_model_amd_host.c tests/host/host_env.c \
    kern/errno.c arch/x86/pmu/pmu_amd.c arch/x86/pmu/pmu_amd_setup.c \
    arch/x86/pmu/pmu_amd_detect.c \
    arch/x86/pmu/pmu_x86.c arch/x86/pmu/pmu_x86_test.c $(PERFMON_CORE_SRCS) \
    kern/string.c
HOST_PMU_AMD_HDRS := tests/host/host_test.h arch/x86/pmu/model/pmu_model_amd.h \
    arch/x86/pmu/model/pmu_model_env.h \
    tests/host/host_env.h $(wildcard tests/host/model/*/*.h) \
    $(wildcard kern/perfmon/*_i.h) arch/x86/pmu/pmu_amd.h arch/x86/pmu/pmu_amd_i.h \
    arch/x86/pmu/pmu_x86.h arch/x86/pmu/pmu_x86_test.h \
    arch/x86/machine/stack.h

# The main suite's files, over their fixture.
HOST_PMU_AMD_TESTS := $(addprefix tests/host/pmu/,test_pmu_amd.c \
    test_pmu_amd_sample.c pmu_test_amd.c pmu_test_amd.h)

# perfmon's core, unchanged, over a fake PMU device
# (tests/host/perfmon/pmu_fake.c) whose counters count what the test says,
# with the TSC held: the multiplexing policy, slots and times with exact
# expectations. One binary per device (PX_CONFIG: its number of counters;
# width and interrupt with it), since perfmon registers one hardware device
# per process. The tests are in two files over a shared fixture; each
# binary links both (the harness registers every linked test at start-up).
HOST_PX_SRCS := tests/host/perfmon/test_perfmon_mux.c \
    tests/host/perfmon/test_perfmon_mux_groups.c \
    tests/host/perfmon/mux_fixture.c \
    tests/host/perfmon/pmu_fake.c tests/host/host_env.c \
    kern/errno.c $(PERFMON_CORE_SRCS) kern/arg.c kern/string.c \
    arch/x86/machine/fwcfg.c
HOST_PX_HDRS := tests/host/host_test.h tests/host/perfmon/pmu_fake.h \
    tests/host/host_env.h $(wildcard tests/host/model/*/*.h) \
    $(wildcard kern/perfmon/*_i.h) tests/host/perfmon/mux_fixture.h

# perfmon's device registry with two hardware devices of the test's own
# (tests/host/perfmon/test_perfmon_devs.c): where events go, what is
# refused.
HOST_DEVS_SRCS := tests/host/host_env.c kern/errno.c $(PERFMON_CORE_SRCS) \
    kern/arg.c kern/string.c arch/x86/machine/fwcfg.c

# The session ring, kern/perfmon/perfmon_session.c and the NMI rule of
# kern/perfmon/perfmon_nmi.c unchanged, with host
# threads for CPUs and a signal for the NMI (tests/host/session/: its
# kernel functions in ring_env.c, the CPU's shadow headers in model/).
# Built twice: with the sanitizers of HOST_CFLAGS, and with
# ThreadSanitizer instead where the compiler has it and its binaries run
# here (HOST_TSAN: probed once per make).
HOST_RING_SRCS := tests/host/session/test_session_ring.c \
    tests/host/session/ring_env.c kern/perfmon/perfmon_session.c \
    kern/perfmon/perfmon_nmi.c \
    tests/host/host_test.h tests/host/session/ring_env.h \
    $(wildcard tests/host/session/model/*/*.h) kern/perfmon_session.h \
    kern/perfmon_nmi.h
HOST_RING_INCLUDES := -Itests/host/session/model
HOST_TSAN := $(shell t=$$(mktemp) && printf 'int main(void) { return 0; }\n' \
    | $(HOSTCC) -fsanitize=thread -x c -o $$t - 2>/dev/null && $$t \
    && echo yes; rm -f $$t)

# --- the table ----------------------------------------------------------------

# $(call host_test,NAME,SOURCES,DEFINES,INCLUDES,RENAMES,LDFLAGS): the
# binary $(BUILD)/host/test_NAME, made from the .c files of SOURCES (the
# other prerequisites are headers), with the defines, include directories
# (before HOST_CFLAGS'), renames and link flags given.
HOST_TESTS :=
define host_test
HOST_TESTS += $(1)
$(BUILD)/host/test_$(1): $(2)
HOST_SRCS_$(1) := $(2)
HOST_DEFINES_$(1) := $(3)
HOST_INCLUDES_$(1) := $(4)
HOST_RENAMES_$(1) := $(5)
HOST_LDFLAGS_$(1) := $(6)
endef

# $(call host_family,PREFIX,NAME=N ...,MACRO,SOURCES,INCLUDES,RENAMES,LDFLAGS):
# one entry per NAME=N, the binary PREFIXNAME built with -DMACRO=N.
host_family = $(foreach e,$(2),$(eval $(call host_test,$(1)$(firstword \
    $(subst =, ,$(e))),$(4),-D$(3)=$(lastword $(subst =, ,$(e))),$(5),$(6),$(7))))

# The kernel's library, each file with its test.
$(eval $(call host_test,printf,tests/host/kern/test_printf.c kern/printf.c,,,$(HOST_RENAME_PRINTF)))
$(eval $(call host_test,init_order,tests/host/kern/test_init_order.c kern/init_order.c))
$(eval $(call host_test,string,tests/host/kern/test_string.c kern/string.c,,,$(HOST_RENAME_STRING)))
$(eval $(call host_test,arg,tests/host/kern/test_arg.c kern/arg.c kern/string.c,,,$(HOST_RENAME_ARG)))
$(eval $(call host_test,clock_calib,tests/host/kern/test_clock_calib.c kern/clock_calib.c))
$(eval $(call host_test,timer,tests/host/kern/test_timer.c))
$(eval $(call host_test,perf_num,tests/host/kern/test_perf_num.c kern/perf/perf_num.c kern/printf.c,,,$(HOST_RENAME_PRINTF)))
$(eval $(call host_test,shell_split,tests/host/kern/test_shell_split.c kern/shell_split.c))

# The Intel register model alone, then the driver: detection, setup on
# misbehaving MSRs, one binary per PMU version, and the quirks of real
# machines and hypervisors the main suite's are not
# (test_pmu_intel_quirks.c), one binary each (QUIRK_CONFIG).
$(eval $(call host_test,pmu_model,tests/host/pmu/test_pmu_model.c $(HOST_PMU_MODEL_SRCS) $(HOST_PMU_HDRS),,$(HOST_MODEL)))
$(eval $(call host_test,pmu_intel_detect,tests/host/pmu/test_pmu_intel_detect.c $(HOST_PMU_SRCS) $(HOST_PMU_HDRS),,$(HOST_MODEL),$(HOST_RENAME_ARG)))
$(eval $(call host_test,pmu_intel_probe,tests/host/pmu/test_pmu_intel_probe.c $(HOST_PMU_SRCS) $(HOST_PMU_HDRS),,$(HOST_MODEL),$(HOST_RENAME_ARG)))
$(call host_family,pmu_intel_,v1=1 v2=2 v5=5,PMU_TEST_VERSION,$(HOST_PMU_INTEL_TESTS) $(HOST_PMU_SAMPLE) $(HOST_PMU_SRCS) $(HOST_PMU_HDRS) $(HOST_PMU_SAMPLE_HDRS),$(HOST_MODEL),$(HOST_RENAME_ARG),$(HOST_WRAP_OVERFLOW))
$(call host_family,pmu_intel_,fixedonly=1 partial=2 firmware=3,QUIRK_CONFIG,tests/host/pmu/test_pmu_intel_quirks.c $(HOST_PMU_SRCS) $(HOST_PMU_HDRS),$(HOST_MODEL),$(HOST_RENAME_ARG))

# The AMD driver, one binary per PMU configuration, then detection.
$(call host_family,pmu_amd_,legacy=1 extcore=2 v2=3 zen4=4 poll=5 fam15h=6,PMU_TEST_CONFIG,$(HOST_PMU_AMD_TESTS) $(HOST_PMU_SAMPLE) $(HOST_PMU_AMD_SRCS) $(HOST_PMU_AMD_HDRS) $(HOST_PMU_SAMPLE_HDRS),$(HOST_MODEL),$(HOST_RENAME_STRING))
$(eval $(call host_test,pmu_amd_detect,tests/host/pmu/test_pmu_amd_detect.c $(HOST_PMU_AMD_SRCS) $(HOST_PMU_AMD_HDRS),,$(HOST_MODEL),$(HOST_RENAME_STRING)))

# perfmon's core over the fake device, one binary per PX_CONFIG, then the
# device registry.
$(call host_family,perfmon_mux_,1=1 2=2 4=4 16=16,PX_CONFIG,$(HOST_PX_SRCS) $(HOST_PX_HDRS),$(HOST_MODEL),$(HOST_RENAME_ARG))
$(eval $(call host_test,perfmon_devs,tests/host/perfmon/test_perfmon_devs.c $(HOST_DEVS_SRCS) $(HOST_MODEL_HDRS),,$(HOST_MODEL),$(HOST_RENAME_ARG)))

# The session ring's stress test, then the same under ThreadSanitizer.
$(eval $(call host_test,session_ring,$(HOST_RING_SRCS),,$(HOST_RING_INCLUDES),,-pthread))
ifeq ($(HOST_TSAN),yes)
$(eval $(call host_test,session_ring_tsan,$(HOST_RING_SRCS),,$(HOST_RING_INCLUDES),,-pthread))
$(BUILD)/host/test_session_ring_tsan: HOST_CFLAGS := \
    $(filter-out -fsanitize=%,$(HOST_CFLAGS)) -fsanitize=thread
endif

# Host tests in Python (tools/perf/test_NAME.py, KTAP on stdout), run by the
# runner with the C ones.
HOST_PY_TESTS := tools/perf/test_perf_convert.py tools/perf/test_flamegraph.py
