/*
 * Port I/O. Any context.
 */
#ifndef X86_IO_H
#define X86_IO_H

#include <stdint.h>

static inline void
io_write_byte(uint16_t port, uint8_t value)
{
    __asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

/* Write len bytes to one port, in one string instruction. */
static inline void
io_write_bytes(uint16_t port, const void *buf, unsigned long len)
{
    __asm__ volatile("rep outsb" : "+S"(buf), "+c"(len) : "d"(port)
                     : "memory");
}

static inline uint8_t
io_read_byte(uint16_t port)
{
    uint8_t value;

    __asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline uint32_t
io_read_long(uint16_t port)
{
    uint32_t value;

    __asm__ volatile("inl %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline void
io_write_word(uint16_t port, uint16_t value)
{
    __asm__ volatile("outw %0, %1" : : "a"(value), "Nd"(port));
}

static inline void
io_write_long(uint16_t port, uint32_t value)
{
    __asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port));
}

#endif /* X86_IO_H */
