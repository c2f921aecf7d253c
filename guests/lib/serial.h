/* SPDX-License-Identifier: MIT */
/*
 * serial.h: polled 8250 output on COM1 (0x3f8).
 *
 * serial_write() sends a whole buffer under one lock, so text written in
 * one call by one vCPU is never interleaved with another vCPU's. Safe to
 * call from interrupt handlers only if the interrupted code does not hold
 * the lock (the guests here print from handlers only on fatal exceptions).
 */
#ifndef GUEST_SERIAL_H
#define GUEST_SERIAL_H

#include <stddef.h>

void serial_write(const char *s, size_t len);

#endif
