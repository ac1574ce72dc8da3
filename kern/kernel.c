/*
 * Kernel entry after the boot code: early console and CPU setup, the init
 * operations, then the main thread (tests or the shell).
 */
#include <stdint.h>

#include <kern/arg.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/printf.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/boot.h>
#include <machine/cpu.h>
#include <machine/qemu.h>
#include <machine/trap.h>
#include <machine/uart.h>

void kernel_main(uint32_t magic, uint32_t info_phys);

void
kernel_main(uint32_t magic, uint32_t info_phys)
{
    const char *tests;
    uint64_t level;

    uart_setup();
    cpu_setup_bsp();
    thread_bootstrap();
    trap_setup();
    boot_info_parse(magic, info_phys);
    boot_switch_to_kernel_pml4();
    arg_setup(boot_info.cmdline);

    if (arg_get_u64("loglevel", &level) == 0) {
        log_set_level((int)level);
    }

    log_info("perfmon kernel booting, command line: %s", arg_cmdline());
    init_run_all();

    tests = arg_get("test");

    if (tests != NULL) {
        unsigned int nr_failed = test_run_all(tests);

        qemu_exit(nr_failed == 0 ? QEMU_EXIT_PASS : QEMU_EXIT_FAIL);
    }

    log_info("no test= on the command line: halting");
    cpu_halt_forever();
}
