// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices/console.h"
#include "host_limits.h"
#include "timers/clock.h"

/*
 * The writer takes no signal but the two meant for it: the kick that
 * interrupts a write nobody reads (console_close) and a forbidden call's
 * report. Then it confines itself and says how that went.
 */
static int writer_start(struct console *c)
{
	sigset_t set;
	int r;

	sigemptyset(&set);
	sigaddset(&set, c->thread.wake_signal);
	sigaddset(&set, SIGSYS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	r = c->thread.confine(c->confine_err, sizeof(c->confine_err));
	pthread_mutex_lock(&c->lock);
	c->confined = r < 0 ? r : 1;
	pthread_cond_broadcast(&c->drained);
	return r;
}

/* CLOCK_MONOTONIC ns as the absolute time the pthread waits take. */
static struct timespec monotonic_at(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* The writer: one contiguous run of the ring at a time, lock dropped. */
static void *console_writer(void *arg)
{
	struct console *c = arg;

	if (writer_start(c) < 0) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	for (;;) {
		size_t tail, run;
		ssize_t n;
		bool room_again;

		while (!c->queued && !c->closing)
			pthread_cond_wait(&c->more, &c->lock);
		if (!c->queued)
			break;
		tail = (c->head + CONSOLE_RING_SIZE - c->queued) %
		       CONSOLE_RING_SIZE;
		run = c->queued < CONSOLE_RING_SIZE - tail ?
			      c->queued :
			      CONSOLE_RING_SIZE - tail;
		pthread_mutex_unlock(&c->lock);
		n = write(c->fd, c->ring + tail, run);
		pthread_mutex_lock(&c->lock);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* a reader that went away must not take the VM down */
			fprintf(stderr,
				"lull: the console stopped taking output (%s): the rest is dropped\n",
				n < 0 ? strerror(errno) : "nothing written");
			c->closed = true;
			c->dropped += c->queued;
			c->queued = 0;
		} else {
			/* close may have given up on these bytes meanwhile */
			c->queued -=
				(size_t)n < c->queued ? (size_t)n : c->queued;
		}
		if (!c->queued)
			pthread_cond_broadcast(&c->drained);
		room_again = c->room_wanted && c->room &&
			     (c->closed ||
			      CONSOLE_RING_SIZE - c->queued >= c->room_wanted);
		if (room_again) {
			/* without our lock: the UART calls us under its own */
			c->room_wanted = 0;
			pthread_mutex_unlock(&c->lock);
			c->room(c->room_opaque);
			pthread_mutex_lock(&c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int console_open(struct console *c, const char *path, uint64_t limit,
		 const struct console_thread *thread, char *err, size_t errlen)
{
	pthread_condattr_t attr;
	sigset_t all, old;
	int r;

	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->more, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->drained, &attr);
	pthread_condattr_destroy(&attr);
	c->limit = limit;
	c->thread = *thread;
	c->fd = STDOUT_FILENO;
	if (path && strcmp(path, "-")) {
		/*
		 * Non-blocking, so that a FIFO nobody reads fails at once
		 * (ENXIO) instead of holding lull in open() before --timeout
		 * even starts; writes block again afterwards.
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
		fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
		c->own_fd = true;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&c->writer, NULL, console_writer, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		snprintf(err, errlen, "cannot start the console thread: %s%s",
			 strerror(r), host_task_limit_hint(r));
		return -r;
	}
	pthread_setname_np(c->writer, "console");
	c->writer_started = true;
	pthread_mutex_lock(&c->lock);
	while (!c->confined)
		pthread_cond_wait(&c->drained, &c->lock);
	r = c->confined;
	pthread_mutex_unlock(&c->lock);
	if (r < 0) {
		snprintf(err, errlen, "%s", c->confine_err);
		pthread_join(c->writer, NULL);
		c->writer_started = false;
		return r;
	}
	return 0;
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
		/* whole lines to the writer: one wake-up, one write each */
		if (ch == '\n' || c->queued >= CONSOLE_RING_SIZE / 2)
			pthread_cond_signal(&c->more);
	}
	pthread_mutex_unlock(&c->lock);
}

bool console_has_room(struct console *c, size_t n)
{
	bool room;

	pthread_mutex_lock(&c->lock);
	room = c->closed || CONSOLE_RING_SIZE - c->queued >= n;
	if (!room && n > c->room_wanted)
		c->room_wanted = n;
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
	struct timespec until = monotonic_at(clock_now_ns() + CONSOLE_DRAIN_NS);

	if (c->fd < 0)
		return;
	if (c->writer_started) {
		pthread_mutex_lock(&c->lock);
		c->closing = true;
		pthread_cond_signal(&c->more);
		while (c->queued &&
		       pthread_cond_timedwait(&c->drained, &c->lock, &until) !=
			       ETIMEDOUT)
			;
		if (c->queued) {
			/* a reader that never reads: stop waiting for it */
			c->dropped += c->queued;
			c->queued = 0;
		}
		pthread_mutex_unlock(&c->lock);
		/*
		 * With nothing queued and closing set, the writer ends as soon
		 * as its write returns; the kick (no SA_RESTART) makes a
		 * blocked write return, and a kick that came just before the
		 * write began is followed by another.
		 */
		for (;;) {
			struct timespec soon =
				monotonic_at(clock_now_ns() + 10000000ull);

			if (pthread_clockjoin_np(c->writer, NULL,
						 CLOCK_MONOTONIC,
						 &soon) != ETIMEDOUT)
				break;
			pthread_kill(c->writer, c->thread.wake_signal);
		}
		c->writer_started = false;
	}
	if (c->own_fd)
		close(c->fd);
	c->fd = -1;
}
