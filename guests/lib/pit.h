/* SPDX-License-Identifier: MIT */
/*
 * pit.h: the i8254 PIT's channel 0 as a polled reference clock.
 *
 * The PIT counts at 1.193182 MHz by definition, whatever the machine,
 * which makes it a reference for measuring the TSC where nothing tells
 * its rate (tsc.c). Channel 0 is used because its gate is always open;
 * channel 2's needs port 0x61, which QEMU microvm does not have. Its
 * output, IRQ 0, does not reach the CPU: the IOAPIC pins and the APIC's
 * LINT0 stay masked, as reset leaves them.
 */
#ifndef GUEST_PIT_H
#define GUEST_PIT_H

#include <stdbool.h>
#include <stdint.h>

#define PIT_HZ 1193182u

/* Channel 0 free-running (mode 2, period 65536); false if no PIT answers. */
bool pit_start(void);
/* The current count: it counts down and wraps every 65536 ticks. */
uint16_t pit_read(void);

#endif
