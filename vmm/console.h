/* SPDX-License-Identifier: MIT */
/*
 * Where guest console bytes (COM1 and debugcon) go: stdout or a file.
 * Bytes from all vCPUs are line-buffered under one lock so lines from
 * different vCPUs do not interleave; everything is flushed at exit.
 *
 * Nothing the guest writes can take the VM down or fill the host's disk:
 * a destination that stops taking bytes (a closed pipe, a full disk) is
 * marked closed and what follows is dropped, and past `limit` bytes
 * (--console-limit) output is dropped too; both are counted, and lull
 * says so once on stderr.
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
	uint64_t bytes; /* everything the guest wrote */
	uint64_t limit; /* bytes written out at most; 0: no limit */
	bool limit_said;
	uint64_t written; /* never more than limit */
	uint64_t dropped; /* past the limit, or after the destination closed */
	bool closed;
	char buf[4096];
};

int console_open(struct console *c, const char *path, uint64_t limit,
		 char *err, size_t errlen);
void console_putc(struct console *c, uint8_t ch);
void console_flush(struct console *c);
void console_close(struct console *c);

#endif
