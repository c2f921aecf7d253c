// SPDX-License-Identifier: MIT
/* pit.c: see pit.h. */
#include "pit.h"
#include "x86.h"

#define PIT_CH0 0x40
#define PIT_CMD 0x43
/* channel 0, low then high byte, mode 2 (rate generator) */
#define CMD_CH0_LOHI_MODE2 0x34
#define CMD_CH0_LATCH 0x00

/* A PIT ticks every 838 ns: far fewer reads than this see it move. */
#define PRESENCE_READS 10000

uint16_t pit_read(void)
{
	uint8_t lo, hi;

	outb(PIT_CMD, CMD_CH0_LATCH);
	lo = inb(PIT_CH0);
	hi = inb(PIT_CH0);
	return (uint16_t)(lo | hi << 8);
}

/*
 * Where no PIT decodes the ports, every read is all ones: a counter that
 * never moves is taken for no PIT.
 */
bool pit_start(void)
{
	uint16_t first;

	outb(PIT_CMD, CMD_CH0_LOHI_MODE2);
	outb(PIT_CH0, 0); /* 0 = 65536 */
	outb(PIT_CH0, 0);
	first = pit_read();
	for (int i = 0; i < PRESENCE_READS; i++)
		if (pit_read() != first)
			return true;
	return false;
}
