// SPDX-License-Identifier: MIT
#include <string.h>

#include "devices/serial.h"

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

#define UART_IER_ETBEI 0x02 /* THR empty */
#define UART_IER_MASK 0x0f /* ERBFI, ETBEI, ELSI, EDSSI */
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRE 0x02
#define UART_IIR_FIFO 0xc0 /* FIFOs enabled */
#define UART_FCR_ENABLE 0x01
#define UART_LCR_DLAB 0x80
#define UART_MCR_DTR 0x01
#define UART_MCR_RTS 0x02
#define UART_MCR_OUT1 0x04
#define UART_MCR_OUT2 0x08 /* gates the interrupt line on a PC */
#define UART_MCR_LOOP 0x10
#define UART_MCR_MASK 0x1f
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_MSR_CTS 0x10
#define UART_MSR_DSR 0x20
#define UART_MSR_RI 0x40
#define UART_MSR_DCD 0x80
#define UART_MSR_IDLE 0xb0 /* DCD, DSR, CTS: a cable with someone there */
#define UART_FIFO_SIZE 16 /* what a guest may send once THRE is set */

/* The console's backpressure: the THR is busy while the ring is full.
 * Seen busy, it empties later: serial_console_room. */
static bool thr_empty(struct serial *s)
{
	bool empty = console_has_room(s->console, UART_FIFO_SIZE);

	if (!empty)
		s->thr_busy = true;
	return empty;
}

/* The highest-priority interrupt pending: only THRE ever is (header). */
static uint8_t interrupt_id(struct serial *s)
{
	if (s->thre_pending && (s->regs[UART_IER] & UART_IER_ETBEI))
		return UART_IIR_THRE;
	return UART_IIR_NO_INT;
}

/* Drives the line after each access, only when it changes. */
static void update_line(struct serial *s)
{
	uint8_t mcr = s->regs[UART_MCR];
	bool level = interrupt_id(s) != UART_IIR_NO_INT &&
		     (mcr & (UART_MCR_OUT2 | UART_MCR_LOOP)) == UART_MCR_OUT2;

	if (level == s->line || !s->irq)
		return;
	s->line = level;
	s->irq(s->irq_opaque, level);
}

/* In loopback the modem inputs are the MCR's outputs. */
static uint8_t modem_status(struct serial *s)
{
	uint8_t mcr = s->regs[UART_MCR];

	if (!(mcr & UART_MCR_LOOP))
		return UART_MSR_IDLE;
	return (mcr & UART_MCR_DTR ? UART_MSR_DSR : 0) |
	       (mcr & UART_MCR_RTS ? UART_MSR_CTS : 0) |
	       (mcr & UART_MCR_OUT1 ? UART_MSR_RI : 0) |
	       (mcr & UART_MCR_OUT2 ? UART_MSR_DCD : 0);
}

static uint8_t serial_read(struct serial *s, uint16_t reg)
{
	bool dlab = s->regs[UART_LCR] & UART_LCR_DLAB;
	uint8_t id;

	switch (reg) {
	case UART_THR:
		return dlab ? s->dll : 0;
	case UART_IER:
		return dlab ? s->dlm : s->regs[UART_IER];
	case UART_IIR:
		if (s->written_since_iir) {
			/*
			 * Right after its writes the guest finds the FIFO
			 * still sending, and it empties just after: the line
			 * falls and rises again, a new edge for a handler
			 * that returns now.
			 */
			bool pending = s->thre_pending;

			s->written_since_iir = false;
			s->thre_pending = false;
			update_line(s);
			s->thre_pending = pending;
			return UART_IIR_NO_INT |
			       (s->fifo_enabled ? UART_IIR_FIFO : 0);
		}
		id = interrupt_id(s);
		if (id == UART_IIR_THRE)
			s->thre_pending = false; /* reading it clears THRE */
		return id | (s->fifo_enabled ? UART_IIR_FIFO : 0);
	case UART_LSR:
		return thr_empty(s) ? UART_LSR_THRE | UART_LSR_TEMT : 0;
	case UART_MSR:
		return modem_status(s);
	default:
		return s->regs[reg];
	}
}

static void write_ier(struct serial *s, uint8_t val)
{
	uint8_t was = s->regs[UART_IER];

	s->regs[UART_IER] = val & UART_IER_MASK;
	if (!(val & UART_IER_ETBEI))
		s->thre_pending = false;
	else if (!(was & UART_IER_ETBEI))
		s->thre_pending = thr_empty(s);
}

static void serial_write(struct serial *s, uint16_t reg, uint8_t val)
{
	bool dlab = s->regs[UART_LCR] & UART_LCR_DLAB;

	switch (reg) {
	case UART_THR:
		if (dlab) {
			s->dll = val;
			break;
		}
		console_putc(s->console, val);
		/* sent at once: the THR is empty again if the ring has room,
		 * else once it has (serial_console_room) */
		s->thre_pending = thr_empty(s);
		if (s->regs[UART_IER] & UART_IER_ETBEI)
			s->written_since_iir = true;
		break;
	case UART_IER:
		if (dlab)
			s->dlm = val;
		else
			write_ier(s, val);
		break;
	case UART_IIR: /* FCR: no FIFO contents to reset */
		s->fifo_enabled = val & UART_FCR_ENABLE;
		break;
	case UART_MCR:
		s->regs[UART_MCR] = val & UART_MCR_MASK;
		break;
	case UART_LSR:
	case UART_MSR:
		break; /* read-only */
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

void serial_set_irq(struct serial *s, serial_irq_fn *irq, void *opaque)
{
	s->irq = irq;
	s->irq_opaque = opaque;
}

void serial_io(struct serial *s, uint16_t offset, bool out, uint8_t *data)
{
	pthread_mutex_lock(&s->lock);
	if (out)
		serial_write(s, offset, *data);
	else
		*data = serial_read(s, offset);
	update_line(s);
	pthread_mutex_unlock(&s->lock);
}

void serial_console_room(void *serial)
{
	struct serial *s = serial;

	pthread_mutex_lock(&s->lock);
	if (s->thr_busy && thr_empty(s)) {
		s->thr_busy = false;
		if (s->regs[UART_IER] & UART_IER_ETBEI)
			s->thre_pending = true;
	}
	update_line(s);
	pthread_mutex_unlock(&s->lock);
}
