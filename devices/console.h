/* SPDX-License-Identifier: MIT */
/*
 * Where guest console bytes (COM1 and debugcon) go: stdout or a file.
 *
 * vCPUs never write to the host themselves. console_putc() only queues a
 * byte in a bounded ring, under one lock, and wakes the console's owner
 * (lull's main thread) through an eventfd, a line at a time. The owner
 * waits on console_poll_fds() and calls console_flush(), which writes what
 * the destination takes without ever blocking. So a reader that stops
 * reading stalls nobody: while the ring is full, the UART's LSR says
 * "transmitter busy" (console_has_room), and a guest that polls it, as a
 * guest driving a real UART does, waits and loses nothing; what arrives
 * anyway (debugcon has no flow control) is dropped.
 *
 * The console has no thread of its own, so that a VM is as few host tasks
 * as it can be (at 10,000 VMs a host's task limit is near). Writing never
 * blocks because the console writes through an open file description of
 * its own made non-blocking: the file it opened, or stdout opened again
 * through /proc (a pipe, FIFO or terminal; the description stdout shares
 * with the shell keeps its flags), sent to with MSG_DONTWAIT where stdout
 * is a socket. A regular file or block device is written as it is. Where
 * stdout cannot be opened again (a terminal another user owns), it is
 * written as it is too, and a terminal that stops (^S) holds the owner's
 * writes until it goes on.
 *
 * Nothing the guest writes can take the VM down or fill the host's disk:
 * a destination that stops taking bytes (a closed pipe, a full disk) is
 * marked closed, and past `limit` bytes (--console-limit) output is not
 * queued. What is dropped is counted, and lull says so once on stderr.
 * console_close() waits at most a second for the ring to drain.
 */
#ifndef LULL_CONSOLE_H
#define LULL_CONSOLE_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_RING_SIZE 65536
#define CONSOLE_DRAIN_NS 1000000000ull /* the most close waits for it */
#define CONSOLE_POLL_FDS 2

struct console {
	int fd; /* the destination as opened; -1: none */
	bool own_fd;
	int out_fd; /* what is written: fd, or a non-blocking open of it */
	bool out_socket; /* sent to with MSG_DONTWAIT */
	bool out_polled; /* blocking: written only when poll finds room */
	bool out_full; /* the last write found no room: wait for POLLOUT */
	int wake_fd; /* eventfd the owner waits on; -1: nobody waits */
	bool wake_sent; /* a wake the owner has not taken yet */
	pthread_mutex_t lock;
	size_t head, queued; /* next free slot; bytes waiting */
	uint64_t first_byte_ns; /* 0 until the guest writes */
	uint64_t bytes; /* everything the guest wrote */
	uint64_t limit; /* bytes queued at most; 0: no limit */
	uint64_t accepted; /* bytes queued so far */
	uint64_t dropped; /* past the limit, ring full, or destination closed */
	bool closed; /* the destination stopped taking bytes */
	bool limit_said, full_said;
	/* console_has_room said no; room() is owed when there is room */
	size_t room_wanted;
	void (*room)(void *opaque);
	void *room_opaque;
	/* last, and not cleared by console_init(): a byte means something
	 * only once queued, and pages output never reached stay untouched */
	char ring[CONSOLE_RING_SIZE];
};

/* A console with no destination: bytes only queue (tests, fuzzers). */
void console_init(struct console *c, uint64_t limit);
/* Opens path ("-" or NULL: stdout) for writing without blocking. On
 * failure c->fd is -1 where the file could not be opened (the caller's
 * path); otherwise the host refused the rest (an eventfd). */
int console_open(struct console *c, const char *path, uint64_t limit, char *err,
		 size_t errlen);
/* What the owner waits on: the wake, and room at the destination when the
 * last write found none. Returns how many of fds[CONSOLE_POLL_FDS] it set. */
unsigned console_poll_fds(struct console *c, struct pollfd *fds);
/* The owner, woken or not: writes what the destination takes now. */
void console_flush(struct console *c);
/* Queues one byte, or drops and counts it; never blocks on the host. */
void console_putc(struct console *c, uint8_t ch);
/* Room for n more bytes in the ring (the UART's transmitter is free).
 * After a no, the room callback is called once there is room. */
bool console_has_room(struct console *c, size_t n);
/* Sets the callback (after console_open) that says the ring has room
 * again: the UART's "THR empty" interrupt. It runs in console_flush()
 * without the console lock, so it may take locks that are held around
 * console calls. */
void console_set_room_callback(struct console *c, void (*room)(void *),
			       void *opaque);
/* Waits up to CONSOLE_DRAIN_NS for the ring to drain (what is left counts
 * as dropped) and closes what console_open opened. */
void console_close(struct console *c);

#endif
