/* SPDX-License-Identifier: MIT */
/*
 * COM1: enough of an 8250/16550 for a polling driver. Bytes written go to
 * the console; the transmitter reads as ready (LSR THRE|TEMT) while the
 * console has room for a FIFO's worth, so a polling guest waits for a slow
 * reader instead of losing output. Nothing is ever received, and no
 * interrupt is raised.
 */
#ifndef LULL_SERIAL_H
#define LULL_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "console.h"

#define SERIAL_PORTS 8

struct serial {
	pthread_mutex_t lock; /* vCPUs share the one UART */
	uint8_t regs[SERIAL_PORTS];
	uint8_t dll, dlm; /* the divisor latch, behind LCR.DLAB */
	struct console *console;
};

void serial_init(struct serial *s, struct console *console);
/* One byte at COM1 + offset, from any vCPU thread. */
void serial_io(struct serial *s, uint16_t offset, bool out, uint8_t *data);

#endif
