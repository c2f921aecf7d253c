// SPDX-License-Identifier: MIT
/* printf.c: see printf.h. */
#include <stdbool.h>
#include <stdint.h>

#include "printf.h"
#include "serial.h"

struct out {
	char *buf;
	size_t size;
	size_t len; /* would-be length, may exceed size */
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width,
		       bool left, char pad)
{
	int fill = width > (int)n ? width - (int)n : 0;

	if (!left)
		while (fill-- > 0)
			put(o, pad);
	for (size_t i = 0; i < n; i++)
		put(o, s[i]);
	if (left)
		while (fill-- > 0)
			put(o, ' ');
}

static void put_number(struct out *o, uint64_t v, bool neg, unsigned base,
		       bool upper, int width, bool left, char pad)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	size_t n = 0;

	do {
		tmp[sizeof(tmp) - 1 - n++] = digits[v % base];
		v /= base;
	} while (v);
	if (neg) {
		if (pad == '0') {
			/* the sign goes before the zeros */
			put(o, '-');
			width--;
		} else {
			tmp[sizeof(tmp) - 1 - n++] = '-';
		}
	}
	put_padded(o, tmp + sizeof(tmp) - n, n, width, left, pad);
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { .buf = buf, .size = size, .len = 0 };

	for (; *fmt; fmt++) {
		bool left = false, is_signed = false, upper = false, alt = false;
		char pad = ' ';
		int width = 0, lng = 0;
		unsigned base = 10;
		uint64_t v;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '#')
				alt = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		if (left)
			pad = ' ';

		switch (*fmt) {
		case '\0':
			fmt--;
			continue;
		case '%':
			put(&o, '%');
			continue;
		case 'c': {
			char c = (char)va_arg(ap, int);

			put_padded(&o, &c, 1, width, left, ' ');
			continue;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t n = 0;

			if (!s)
				s = "(null)";
			while (s[n])
				n++;
			put_padded(&o, s, n, width, left, ' ');
			continue;
		}
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_number(&o, (uintptr_t)va_arg(ap, void *), false, 16,
				   false, width, left, pad);
			continue;
		case 'd':
		case 'i':
			is_signed = true;
			break;
		case 'u':
			break;
		case 'X':
			upper = true;
			/* fall through */
		case 'x':
			base = 16;
			if (alt) {
				put(&o, '0');
				put(&o, 'x');
			}
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			continue;
		}

		if (is_signed) {
			int64_t s = lng ? va_arg(ap, int64_t) : va_arg(ap, int);

			v = s < 0 ? -(uint64_t)s : (uint64_t)s;
			put_number(&o, v, s < 0, base, upper, width, left, pad);
		} else {
			v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			put_number(&o, v, false, base, upper, width, left, pad);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int printf(const char *fmt, ...)
{
	char buf[PRINTF_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	serial_write(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	return n;
}
