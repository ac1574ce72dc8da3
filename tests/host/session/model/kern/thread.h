/*
 * Host shadow of kern/thread.h for the session ring's stress test: what
 * perfmon_session.c uses (perfmon_session_wait's delay).
 */
#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdint.h>

/* Sleep: on the host, a yield; the clock moves on by ticks. */
void thread_delay(uint64_t ticks);

#endif /* KERN_THREAD_H */
