// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "console.h"

int console_open(struct console *c, const char *path, uint64_t limit,
		 char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->limit = limit;
	c->fd = STDOUT_FILENO;
	if (!path || !strcmp(path, "-"))
		return 0;
	/*
	 * Non-blocking, so that a FIFO nobody reads fails at once (ENXIO)
	 * instead of holding lull in open() before --timeout even starts;
	 * writes block again afterwards.
	 */
	c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK,
		     0644);
	if (c->fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot open console file %s: %s", path,
			 e == ENXIO ? "a FIFO with no reader" : strerror(e));
		c->fd = -1;
		return -e;
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
	c->own_fd = true;
	return 0;
}

static void flush_locked(struct console *c)
{
	size_t off = 0, len = c->len;

	if (c->limit && c->written + len > c->limit) {
		len = (size_t)(c->limit - c->written);
		if (!c->limit_said) {
			c->limit_said = true;
			fprintf(stderr,
				"lull: console output past --console-limit %lu bytes is dropped\n",
				c->limit);
		}
	}
	while (!c->closed && off < len) {
		ssize_t n = write(c->fd, c->buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* a reader that went away must not take the VM down */
			c->closed = true;
			fprintf(stderr,
				"lull: the console stopped taking output (%s): the rest is dropped\n",
				n < 0 ? strerror(errno) : "short write");
			break;
		}
		off += (size_t)n;
	}
	c->written += off;
	c->dropped += c->len - off;
	c->len = 0;
}

void console_putc(struct console *c, uint8_t ch)
{
	pthread_mutex_lock(&c->lock);
	if (!c->bytes++)
		c->first_byte_ns = clock_now_ns();
	c->buf[c->len++] = (char)ch;
	if (ch == '\n' || c->len == sizeof(c->buf))
		flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

void console_flush(struct console *c)
{
	pthread_mutex_lock(&c->lock);
	flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

void console_close(struct console *c)
{
	if (c->fd < 0)
		return;
	console_flush(c);
	if (c->own_fd)
		close(c->fd);
	c->fd = -1;
}
