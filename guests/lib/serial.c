// SPDX-License-Identifier: MIT
/* serial.c: polled COM1 output, see serial.h. */
#include <stdbool.h>
#include <stdint.h>

#include "serial.h"
#include "spinlock.h"
#include "x86.h"

#define COM1 0x3f8
#define UART_THR 0
#define UART_FCR 2
#define UART_LSR 5
#define LSR_THRE (1u << 5)
#define FCR_FIFO_ON 0x07 /* enable, clear both FIFOs */
#define UART_FIFO_DEPTH 16

/*
 * Bounded wait for the transmit holding register: a VMM whose UART model
 * never reports THRE must not hang the guest, it only loses pacing.
 */
#define THRE_SPINS 100000

static struct spinlock serial_lock;
static bool fifo_on;

static void wait_thre(void)
{
	for (int i = 0; i < THRE_SPINS; i++) {
		if (inb(COM1 + UART_LSR) & LSR_THRE)
			return;
		cpu_relax();
	}
}

/*
 * With the FIFO on, THRE means the whole 16-byte FIFO is empty, so up to
 * 16 bytes go out in one `rep outsb`: one VM exit per chunk instead of two
 * per byte (an LSR read and a THR write), which is most of a tiny guest's
 * boot time on a host where every exit costs ~20 us.
 */
static void send_chunk(const char *s, size_t n)
{
	wait_thre();
	asm volatile("rep outsb"
		     : "+S"(s), "+c"(n)
		     : "d"((uint16_t)(COM1 + UART_THR))
		     : "memory");
}

/* Interrupt handlers print too (idt.c): the lock is held with IF=0. */
void serial_write(const char *s, size_t len)
{
	uint64_t flags = spin_lock_irqsave(&serial_lock);

	if (!fifo_on) {
		outb(COM1 + UART_FCR, FCR_FIFO_ON);
		fifo_on = true;
	}
	/* Plain '\n' (no '\r'): the output is read by tests, not terminals. */
	while (len) {
		size_t n = len < UART_FIFO_DEPTH ? len : UART_FIFO_DEPTH;

		send_chunk(s, n);
		s += n;
		len -= n;
	}
	spin_unlock_irqrestore(&serial_lock, flags);
}
