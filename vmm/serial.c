// SPDX-License-Identifier: MIT
#include <string.h>

#include "serial.h"

enum {
	UART_THR = 0, /* RBR on read; DLL when DLAB */
	UART_IER = 1, /* DLM when DLAB */
	UART_IIR = 2, /* FCR on write */
	UART_LCR = 3,
	UART_MCR = 4,
	UART_LSR = 5,
	UART_MSR = 6,
	UART_SCR = 7,
};

#define UART_LCR_DLAB 0x80
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_IIR_NO_INT 0x01
#define UART_MSR_IDLE 0xb0 /* DCD, DSR, CTS: a cable with someone there */
#define UART_FIFO_SIZE 16 /* what a guest may send once THRE is set */

static uint8_t serial_read(struct serial *s, uint16_t reg)
{
	bool dlab = s->regs[UART_LCR] & UART_LCR_DLAB;

	switch (reg) {
	case UART_THR:
		return dlab ? s->dll : 0;
	case UART_IER:
		return dlab ? s->dlm : s->regs[UART_IER];
	case UART_IIR:
		return UART_IIR_NO_INT;
	case UART_LSR:
		/* the console's backpressure: busy while its ring is full */
		return console_has_room(s->console, UART_FIFO_SIZE) ?
			       UART_LSR_THRE | UART_LSR_TEMT :
			       0;
	case UART_MSR:
		return UART_MSR_IDLE;
	default:
		return s->regs[reg];
	}
}

static void serial_write(struct serial *s, uint16_t reg, uint8_t val)
{
	bool dlab = s->regs[UART_LCR] & UART_LCR_DLAB;

	switch (reg) {
	case UART_THR:
		if (dlab)
			s->dll = val;
		else
			console_putc(s->console, val);
		break;
	case UART_IER:
		if (dlab)
			s->dlm = val;
		else
			s->regs[UART_IER] = val & 0x0f;
		break;
	case UART_IIR:
	case UART_LSR:
	case UART_MSR:
		break; /* FCR: no FIFO to reset; LSR/MSR are read-only */
	default:
		s->regs[reg] = val;
		break;
	}
}

void serial_init(struct serial *s, struct console *console)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->console = console;
}

void serial_io(struct serial *s, uint16_t offset, bool out, uint8_t *data)
{
	pthread_mutex_lock(&s->lock);
	if (out)
		serial_write(s, offset, *data);
	else
		*data = serial_read(s, offset);
	pthread_mutex_unlock(&s->lock);
}
