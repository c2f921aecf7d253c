/* SPDX-License-Identifier: MIT */
/*
 * COM1: enough of an 8250/16550 for a polling driver. The transmitter is
 * always ready (LSR THRE|TEMT), bytes go to the console, nothing is ever
 * received, and no interrupt is raised.
 */
#ifndef LULL_SERIAL_H
#define LULL_SERIAL_H

#include <stdbool.h>
#include <stdint.h>

struct vm;

#define SERIAL_PORTS 8

void serial_io(struct vm *vm, uint16_t offset, bool out, uint8_t *data);

#endif
