// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/console.h"
#include "host_limits.h"
#include "timers/clock.h"

_Static_assert(sizeof(struct console) - offsetof(struct console, ring) <
		       CONSOLE_RING_SIZE + _Alignof(struct console),
	       "the ring is the console's last member");

void console_init(struct console *c, uint64_t limit)
{
	memset(c, 0, offsetof(struct console, ring));
	pthread_mutex_init(&c->lock, NULL);
	c->fd = c->out_fd = c->wake_fd = -1;
	c->limit = limit;
}

/*
 * stdout as a description of our own with O_NONBLOCK set: flags belong to
 * the description, and the one stdout shares with the shell must keep its
 * own. A pipe or FIFO with no reader left is a destination that stopped.
 */
static void open_stdout(struct console *c)
{
	struct stat st;
	int fd;

	c->out_fd = c->fd;
	if (fstat(c->fd, &st) < 0 || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return; /* a bad fd fails its first write, and says so */
	if (S_ISSOCK(st.st_mode)) {
		c->out_socket = true;
		return;
	}
	if (fcntl(c->fd, F_GETFL) & O_NONBLOCK)
		return;
	fd = open("/proc/self/fd/1",
		  O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		c->out_fd = fd;
		return;
	}
	if (errno == ENXIO) {
		fputs("lull: the console's reader is gone: the guest's output is dropped\n",
		      stderr);
		c->closed = true;
		return;
	}
	/* someone else's terminal or FIFO: written only where poll says so */
	c->out_polled = true;
}

int console_open(struct console *c, const char *path, uint64_t limit, char *err,
		 size_t errlen)
{
	console_init(c, limit);
	if (path && strcmp(path, "-")) {
		/*
		 * Non-blocking for good: a FIFO nobody reads fails at once
		 * (ENXIO) instead of holding lull in open() before --timeout
		 * even starts, and no write of the owner's ever waits.
		 */
		c->fd = open(path,
			     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				     O_NONBLOCK,
			     0644);
		if (c->fd < 0) {
			int e = errno;

			snprintf(err, errlen, "cannot open console file %s: %s",
				 path,
				 e == ENXIO ? "a FIFO with no reader" :
					      strerror(e));
			c->fd = -1;
			return -e;
		}
		c->own_fd = true;
		c->out_fd = c->fd;
	} else {
		c->fd = STDOUT_FILENO;
		open_stdout(c);
	}
	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->wake_fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot make the console's eventfd: %s%s",
			 strerror(e), host_fd_limit_hint(e));
		return -e;
	}
	return 0;
}

/* Without waiting: n bytes or fewer written, 0 for no room, -1 for gone. */
static ssize_t write_some(struct console *c, const char *buf, size_t n)
{
	ssize_t w;

	if (c->out_polled) {
		struct pollfd p = { .fd = c->out_fd, .events = POLLOUT };

		if (poll(&p, 1, 0) == 0)
			return 0;
		/* a pipe with room takes this much without blocking */
		if (n > PIPE_BUF)
			n = PIPE_BUF;
	}
	do {
		w = c->out_socket ? send(c->out_fd, buf, n, MSG_DONTWAIT) :
				    write(c->out_fd, buf, n);
	} while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (w <= 0) {
		/* a reader that went away must not take the VM down */
		fprintf(stderr,
			"lull: the console stopped taking output (%s): the rest is dropped\n",
			w < 0 ? strerror(errno) : "nothing written");
		return -1;
	}
	return w;
}

void console_flush(struct console *c)
{
	uint64_t count;
	bool room_again;

	if (c->wake_fd >= 0) {
		/* nothing to read: called for room or a timeout, not a wake */
		ssize_t r = read(c->wake_fd, &count, sizeof(count));

		(void)r;
	}
	pthread_mutex_lock(&c->lock);
	c->wake_sent = false;
	c->out_full = false;
	while (c->queued && !c->closed) {
		/* one contiguous run of the ring at a time, lock dropped */
		size_t tail = (c->head + CONSOLE_RING_SIZE - c->queued) %
			      CONSOLE_RING_SIZE;
		size_t run = c->queued < CONSOLE_RING_SIZE - tail ?
				     c->queued :
				     CONSOLE_RING_SIZE - tail;
		ssize_t n;

		pthread_mutex_unlock(&c->lock);
		n = write_some(c, c->ring + tail, run);
		pthread_mutex_lock(&c->lock);
		if (n < 0) {
			c->closed = true;
		} else if (n == 0) {
			c->out_full = true;
			break;
		} else {
			c->queued -= (size_t)n;
		}
	}
	if (c->closed) {
		c->dropped += c->queued;
		c->queued = 0;
	}
	room_again =
		c->room_wanted && c->room &&
		(c->closed || CONSOLE_RING_SIZE - c->queued >= c->room_wanted);
	if (room_again)
		c->room_wanted = 0;
	pthread_mutex_unlock(&c->lock);
	/* without our lock: the UART calls us under its own */
	if (room_again)
		c->room(c->room_opaque);
}

unsigned console_poll_fds(struct console *c, struct pollfd *fds)
{
	unsigned n = 0;

	if (c->wake_fd >= 0)
		fds[n++] =
			(struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
	pthread_mutex_lock(&c->lock);
	if (c->out_full && c->queued && !c->closed)
		fds[n++] =
			(struct pollfd){ .fd = c->out_fd, .events = POLLOUT };
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Under the lock: the owner is told once until it has flushed. */
static void wake_owner(struct console *c)
{
	static const uint64_t one = 1;

	if (c->wake_fd < 0 || c->wake_sent)
		return;
	c->wake_sent = write(c->wake_fd, &one, sizeof(one)) == sizeof(one);
}

void console_putc(struct console *c, uint8_t ch)
{
	pthread_mutex_lock(&c->lock);
	if (!c->bytes++)
		c->first_byte_ns = clock_now_ns();
	if (c->closed) {
		c->dropped++;
	} else if (c->limit && c->accepted >= c->limit) {
		if (!c->limit_said)
			fprintf(stderr,
				"lull: console output past --console-limit %lu bytes is dropped\n",
				c->limit);
		c->limit_said = true;
		c->dropped++;
	} else if (c->queued == CONSOLE_RING_SIZE) {
		/* debugcon cannot wait, and a guest may ignore the UART's LSR */
		if (!c->full_said)
			fputs("lull: the console's reader is not keeping up: output the guest did not wait for is dropped\n",
			      stderr);
		c->full_said = true;
		c->dropped++;
	} else {
		c->ring[c->head] = (char)ch;
		c->head = (c->head + 1) % CONSOLE_RING_SIZE;
		c->queued++;
		c->accepted++;
		/* whole lines to the owner: one wake-up, one write each */
		if (ch == '\n' || c->queued >= CONSOLE_RING_SIZE / 2)
			wake_owner(c);
	}
	pthread_mutex_unlock(&c->lock);
}

bool console_has_room(struct console *c, size_t n)
{
	bool room;

	pthread_mutex_lock(&c->lock);
	room = c->closed || CONSOLE_RING_SIZE - c->queued >= n;
	if (!room && n > c->room_wanted) {
		c->room_wanted = n;
		/* a partial line may be all that fills the ring */
		wake_owner(c);
	}
	pthread_mutex_unlock(&c->lock);
	return room;
}

void console_set_room_callback(struct console *c, void (*room)(void *),
			       void *opaque)
{
	pthread_mutex_lock(&c->lock);
	c->room = room;
	c->room_opaque = opaque;
	pthread_mutex_unlock(&c->lock);
}

void console_close(struct console *c)
{
	uint64_t until = clock_now_ns() + CONSOLE_DRAIN_NS;

	if (c->fd < 0)
		return;
	for (;;) {
		struct pollfd out = { .fd = c->out_fd, .events = POLLOUT };
		uint64_t now = clock_now_ns();

		console_flush(c);
		if (!c->queued || now >= until)
			break;
		poll(&out, 1, (int)((until - now + 999999) / 1000000));
	}
	pthread_mutex_lock(&c->lock);
	/* a reader that never reads: stop waiting for it */
	c->dropped += c->queued;
	c->queued = 0;
	pthread_mutex_unlock(&c->lock);
	if (c->out_fd >= 0 && c->out_fd != c->fd)
		close(c->out_fd);
	if (c->own_fd)
		close(c->fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	c->fd = c->out_fd = c->wake_fd = -1;
}
