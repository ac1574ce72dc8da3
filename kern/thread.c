/* Temporary: boot context only, until the scheduler lands. */
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/thread.h>

static struct thread thread_boot0;

void
thread_bootstrap(void)
{
    struct cpu_head *head = (struct cpu_head *)percpu_local_base();

    head->thread = &thread_boot0;
}

void
thread_preempt_enable(void)
{
    barrier();
    thread_self()->preempt_level--;
}

void
thread_preempt_check(void)
{
}

void
thread_exit(void)
{
    panic("thread_exit: no scheduler yet");
}
