// SPDX-License-Identifier: MIT
/* serial.c: polled COM1 output, see serial.h. */
#include "serial.h"
#include "spinlock.h"
#include "x86.h"

#define COM1 0x3f8
#define UART_THR 0
#define UART_LSR 5
#define LSR_THRE (1u << 5)

/*
 * Bounded wait for the transmit holding register: a VMM whose UART model
 * never reports THRE must not hang the guest, it only loses pacing.
 */
#define THRE_SPINS 100000

static struct spinlock serial_lock;

static void serial_putc(char c)
{
	for (int i = 0; i < THRE_SPINS; i++) {
		if (inb(COM1 + UART_LSR) & LSR_THRE)
			break;
		cpu_relax();
	}
	outb(COM1 + UART_THR, (unsigned char)c);
}

void serial_write(const char *s, size_t len)
{
	spin_lock(&serial_lock);
	/* Plain '\n' (no '\r'): the output is read by tests, not terminals. */
	for (size_t i = 0; i < len; i++)
		serial_putc(s[i]);
	spin_unlock(&serial_lock);
}
