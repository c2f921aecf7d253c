/* SPDX-License-Identifier: MIT */
/*
 * COM1: enough of a 16550 for a polling driver and for an interrupt-driven
 * one. Bytes written go to the console; the transmitter reads as ready
 * (LSR THRE|TEMT) while the console has room for a FIFO's worth, so a guest
 * waits for a slow reader instead of losing output. Nothing is ever
 * received.
 *
 * Interrupts: of the 16550's four sources (line status, received data,
 * THR empty, modem status, in IIR's priority order) only "THR empty" ever
 * happens here: no byte is received, no line error or modem change occurs.
 * It is pending while IER.ETBEI is set once the THR has emptied: when
 * ETBEI goes 0->1 with the THR empty, when a THR write leaves room, when
 * the console's ring has room again after it was full. But the first IIR
 * read after THR writes (ETBEI set) finds the FIFO still sending: no
 * interrupt, and the line falls and rises, a new edge for the next call.
 * A handler thus sends a FIFO's worth, finds nothing pending, returns and
 * is called again; finding THRE at once, Linux's 8250 handler would loop
 * with interrupts off for up to 512 FIFOs, keeping every other interrupt
 * out. Reading IIR while it names THRE, writing THR, or clearing ETBEI
 * clears it. The interrupt
 * output reaches the line (the irq callback, ISA IRQ 4 on a PC) only while
 * MCR.OUT2 is set, as on every PC; MCR loopback disconnects it.
 *
 * A guest that polls and never sets IER sees exactly the old UART.
 */
#ifndef LULL_SERIAL_H
#define LULL_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/console.h"

#define SERIAL_PORTS 8

/* The UART's interrupt line changed to `level`; called with the UART's
 * lock held, so the line's changes arrive in order. */
typedef void serial_irq_fn(void *opaque, bool level);

struct serial {
	pthread_mutex_t lock; /* vCPUs and the console's owner share it */
	uint8_t regs[SERIAL_PORTS];
	uint8_t dll, dlm; /* the divisor latch, behind LCR.DLAB */
	bool fifo_enabled; /* FCR bit 0: IIR's FIFO bits */
	bool thre_pending; /* the "THR empty" interrupt */
	bool thr_busy; /* seen busy since it last emptied */
	/* written to with ETBEI set: the next IIR read finds it sending */
	bool written_since_iir;
	bool line; /* the interrupt line as last driven */
	struct console *console;
	serial_irq_fn *irq;
	void *irq_opaque;
};

void serial_init(struct serial *s, struct console *console);
/* Connects the interrupt line (before any vCPU runs); without it the
 * UART raises none. */
void serial_set_irq(struct serial *s, serial_irq_fn *irq, void *opaque);
/* One byte at COM1 + offset, from any vCPU thread. */
void serial_io(struct serial *s, uint16_t offset, bool out, uint8_t *data);
/* The console has room again (its room callback, from console_flush). */
void serial_console_room(void *serial);

#endif
