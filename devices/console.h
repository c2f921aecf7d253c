/* SPDX-License-Identifier: MIT */
/*
 * Where guest console bytes (COM1 and debugcon) go: stdout or a file.
 *
 * vCPUs never write to the host themselves. console_putc() only queues a
 * byte in a bounded ring, under one lock, and a writer thread of the
 * console's own does the (blocking) writes, a line at a time. So a reader
 * that stops reading stalls nobody but the writer: while the ring is full,
 * the UART's LSR says "transmitter busy" (console_has_room), and a guest
 * that polls it, as a guest driving a real UART does, waits and loses
 * nothing; what arrives anyway (debugcon has no flow control) is dropped.
 *
 * Nothing the guest writes can take the VM down or fill the host's disk:
 * a destination that stops taking bytes (a closed pipe, a full disk) is
 * marked closed, and past `limit` bytes (--console-limit) output is not
 * queued. What is dropped is counted, and lull says so once on stderr.
 * console_close() waits at most a second for the ring to drain.
 *
 * The writer confines itself before console_open() returns, and takes no
 * signal but its wake signal, with which console_close() interrupts a
 * write that nobody reads. Both come from the caller (struct
 * console_thread): the console knows neither the sandbox nor the vCPUs.
 */
#ifndef LULL_CONSOLE_H
#define LULL_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_RING_SIZE 65536
#define CONSOLE_DRAIN_NS 1000000000ull /* the most close waits for it */

/* What the writer thread needs of the process it runs in. */
struct console_thread {
	/* Interrupts a blocking write: blocked in every other thread and
	 * handled without SA_RESTART (lull's: SIG_VCPU_KICK). */
	int wake_signal;
	/* Confines the writer once it runs (lull's: sandbox_enter_console);
	 * < 0 with a sentence in err fails console_open. */
	int (*confine)(char *err, size_t errlen);
};

struct console {
	int fd;
	bool own_fd;
	pthread_mutex_t lock;
	pthread_cond_t more; /* a line queued, or closing */
	pthread_cond_t drained; /* the ring emptied */
	pthread_t writer;
	bool writer_started;
	bool closing;
	char ring[CONSOLE_RING_SIZE];
	size_t head, queued; /* next free slot; bytes waiting */
	uint64_t first_byte_ns; /* 0 until the guest writes */
	uint64_t bytes; /* everything the guest wrote */
	uint64_t limit; /* bytes queued at most; 0: no limit */
	uint64_t accepted; /* bytes queued so far */
	uint64_t dropped; /* past the limit, ring full, or destination closed */
	bool closed; /* the destination stopped taking bytes */
	struct console_thread thread;
	int confined; /* 0 until the writer has confined itself; 1, or -errno */
	char confine_err[160];
	bool limit_said, full_said;
	/* console_has_room said no; room() is owed when there is room */
	size_t room_wanted;
	void (*room)(void *opaque);
	void *room_opaque;
};

/* Opens path ("-" or NULL: stdout) and starts the writer; fails if the
 * writer cannot confine itself. On failure c->fd is -1 where the file
 * could not be opened (the caller's path); otherwise the writer did not
 * start (the host's refusal). */
int console_open(struct console *c, const char *path, uint64_t limit,
		 const struct console_thread *thread, char *err, size_t errlen);
/* Queues one byte, or drops and counts it; never blocks on the host. */
void console_putc(struct console *c, uint8_t ch);
/* Room for n more bytes in the ring (the UART's transmitter is free).
 * After a no, the room callback is called once there is room. */
bool console_has_room(struct console *c, size_t n);
/* Sets the callback (after console_open) that says the ring has room
 * again: the UART's "THR empty" interrupt. It runs on the writer thread
 * without the console lock, so it may take locks that are held around
 * console calls. */
void console_set_room_callback(struct console *c, void (*room)(void *),
			       void *opaque);
/* Waits up to CONSOLE_DRAIN_NS for the ring to drain, then stops the
 * writer (what is left counts as dropped; a blocked write is interrupted)
 * and closes the file. */
void console_close(struct console *c);

#endif
