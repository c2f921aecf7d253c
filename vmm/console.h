/* SPDX-License-Identifier: MIT */
/*
 * Where guest console bytes (COM1 and debugcon) go: stdout or a file.
 * Bytes from all vCPUs are line-buffered under one lock so lines from
 * different vCPUs do not interleave; everything is flushed at exit.
 */
#ifndef LULL_CONSOLE_H
#define LULL_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct console {
	int fd;
	bool own_fd;
	pthread_mutex_t lock;
	size_t len;
	uint64_t first_byte_ns; /* 0 until the guest writes */
	uint64_t bytes;
	char buf[4096];
};

int console_open(struct console *c, const char *path, char *err, size_t errlen);
void console_putc(struct console *c, uint8_t ch);
void console_flush(struct console *c);
void console_close(struct console *c);

#endif
