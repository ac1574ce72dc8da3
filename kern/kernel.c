/*
 * Kernel entry after the boot code: early console and CPU setup, the init
 * operations, then the main thread (tests or the shell).
 */
#include <stdint.h>

#include <kern/arg.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/boot.h>
#include <machine/cpu.h>
#include <machine/qemu.h>
#include <machine/ipi.h>
#include <machine/trap.h>
#include <machine/uart.h>

void kernel_main(uint32_t magic, uint32_t info_phys);

/* Boot options: the tests to run (kern/test.h), the log level. */
ARG_DEFINE_STRING("test");
ARG_DEFINE_U64("loglevel", 0, 7);

/* Runs the tests the command line selects, or the shell. */
static void
kernel_main_thread(void *arg)
{
    const char *tests = arg_get("test");

    (void)arg;

    if (tests != NULL) {
        /* A misspelt option fails the run: the tests ran without it. */
        unsigned int nr_failed = test_run_all(tests) + arg_nr_errors();

        qemu_exit(nr_failed == 0 ? QEMU_EXIT_PASS : QEMU_EXIT_FAIL);
    }

    shell_run();
}

void
kernel_main(uint32_t magic, uint32_t info_phys)
{
    struct thread_attr attr = { .name = "main" };
    uint64_t level;
    int error;

    uart_setup();
    cpu_setup_bsp();
    thread_bootstrap();
    trap_setup();
    ipi_setup();
    boot_info_parse(magic, info_phys);
    boot_switch_to_kernel_pml4();
    arg_setup(boot_info.cmdline);
    log_info("perfmon kernel booting, command line: %s",
             (arg_cmdline()[0] == '\0') ? "(empty)" : arg_cmdline());

    /* Checked at the default level, so that loglevel=0 cannot hide it. */
    arg_check();

    if (arg_get_u64("loglevel", &level) == 0 && level <= LOG_DEBUG) {
        log_set_level((int)level);
    }

    /*
     * Init operations run with interrupts enabled (each interrupt source
     * appears only once its module is set up) and preemption disabled, so
     * they may wait for other CPUs, e.g. through xcall.
     */
    cpu_intr_enable();
    init_run_all();

    error = thread_create(NULL, &attr, kernel_main_thread, NULL);

    if (error) {
        panic("kernel: cannot create the main thread (error %d)", error);
    }

    thread_run_idle();
}
