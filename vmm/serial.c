// SPDX-License-Identifier: MIT
#include "serial.h"
#include "vm.h"

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

static uint8_t serial_read(struct vm *vm, uint16_t reg)
{
	bool dlab = vm->serial_regs[UART_LCR] & UART_LCR_DLAB;

	switch (reg) {
	case UART_THR:
		return dlab ? vm->serial_dll : 0;
	case UART_IER:
		return dlab ? vm->serial_dlm : vm->serial_regs[UART_IER];
	case UART_IIR:
		return UART_IIR_NO_INT;
	case UART_LSR:
		/* the console's backpressure: busy while its ring is full */
		return console_has_room(&vm->console, UART_FIFO_SIZE) ?
			       UART_LSR_THRE | UART_LSR_TEMT :
			       0;
	case UART_MSR:
		return UART_MSR_IDLE;
	default:
		return vm->serial_regs[reg];
	}
}

static void serial_write(struct vm *vm, uint16_t reg, uint8_t val)
{
	bool dlab = vm->serial_regs[UART_LCR] & UART_LCR_DLAB;

	switch (reg) {
	case UART_THR:
		if (dlab)
			vm->serial_dll = val;
		else
			console_putc(&vm->console, val);
		break;
	case UART_IER:
		if (dlab)
			vm->serial_dlm = val;
		else
			vm->serial_regs[UART_IER] = val & 0x0f;
		break;
	case UART_IIR:
	case UART_LSR:
	case UART_MSR:
		break; /* FCR: no FIFO to reset; LSR/MSR are read-only */
	default:
		vm->serial_regs[reg] = val;
		break;
	}
}

void serial_io(struct vm *vm, uint16_t offset, bool out, uint8_t *data)
{
	pthread_mutex_lock(&vm->serial_lock);
	if (out)
		serial_write(vm, offset, *data);
	else
		*data = serial_read(vm, offset);
	pthread_mutex_unlock(&vm->serial_lock);
}
