/* SPDX-License-Identifier: MIT */
/*
 * printf.h: a small printf to the serial line.
 *
 * Conversions: %d %i %u %x %X %p %s %c %%, flags '-', '0' and '#' (0x prefix), a field
 * width, length modifiers l, ll, z. printf() formats into a buffer on the
 * stack (at most PRINTF_MAX bytes, silently truncated) and writes it with
 * one serial_write(), so one call is one unbroken piece of output.
 */
#ifndef GUEST_PRINTF_H
#define GUEST_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

#define PRINTF_MAX 512

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
