// SPDX-License-Identifier: MIT
/*
 * COM1's interrupt model: the THRE interrupt's raise and clear rules, IIR,
 * OUT2 gating of the line, and the console's backpressure. Most tests use
 * a console with no destination (bytes only queue); the last one flushes
 * the real console into a FIFO that the test drains, as lull's main thread
 * does.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devices/serial.h"
#include "lull_abi.h"

enum { THR, IER, IIR, LCR, MCR, LSR, MSR, SCR };
#define FCR IIR
#define ETBEI 0x02
#define OUT2 0x08
#define LOOP 0x10
#define IIR_NONE 0x01
#define IIR_THRE 0x02

static struct console con; /* big: not on the stack */
static struct serial uart;
static atomic_bool line;
static atomic_uint line_changes;

static void irq(void *opaque, bool level)
{
	(void)opaque;
	atomic_store(&line, level);
	atomic_fetch_add(&line_changes, 1);
}

/* A console whose ring fills and never drains: no file. */
static void quiet_console(void)
{
	console_init(&con, 0);
	serial_init(&uart, &con);
	serial_set_irq(&uart, irq, NULL);
	atomic_store(&line, false);
	atomic_store(&line_changes, 0);
}

static uint8_t in(unsigned reg)
{
	uint8_t v = 0xaa;

	serial_io(&uart, (uint16_t)reg, false, &v);
	return v;
}

static void out(unsigned reg, uint8_t v)
{
	serial_io(&uart, (uint16_t)reg, true, &v);
}

TestSuite(serial, .init = quiet_console);

Test(serial, polled_uart_is_as_before)
{
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(in(LSR), 0x60);
	cr_assert_eq(in(IER), 0);
	cr_assert_eq(in(MSR), 0xb0);
	out(MCR, 0x0b); /* DTR, RTS, OUT2: what Linux's early console sets */
	for (const char *p = "hello\n"; *p; p++)
		out(THR, (uint8_t)*p);
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(atomic_load(&line_changes), 0);
	cr_assert_eq(con.queued, 6);
	cr_assert_eq(memcmp(con.ring, "hello\n", 6), 0);
}

Test(serial, enabling_etbei_with_empty_thr_raises_thre)
{
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), IIR_THRE);
	cr_assert_eq(in(IIR), IIR_NONE, "reading IIR cleared it");
	out(IER, ETBEI); /* no 0->1 change: nothing new */
	cr_assert_eq(in(IIR), IIR_NONE);
	out(IER, 0);
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), IIR_THRE);
}

/* Linux's 8250 start-up test: the THRE interrupt comes back each time. */
Test(serial, thre_reasserts_like_linux_expects)
{
	out(IER, ETBEI);
	cr_assert_eq(in(IIR)&0x0f, IIR_THRE);
	out(IER, 0);
	out(IER, ETBEI);
	cr_assert_eq(in(IIR)&0x0f, IIR_THRE);
	out(IER, 0);
	cr_assert_eq(in(IIR), IIR_NONE);
}

Test(serial, thr_write_reraises_once_sent_and_clearing_etbei_clears)
{
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), IIR_THRE);
	out(THR, 'x');
	cr_assert_eq(in(LSR), 0x60, "a polling writer may go on");
	cr_assert_eq(in(IIR), IIR_NONE, "still sending when first looked at");
	cr_assert_eq(in(IIR), IIR_THRE, "then the FIFO is empty");
	out(THR, 'y');
	out(IER, 0);
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(in(IIR), IIR_NONE, "ETBEI clear: no THRE");
	out(IER, ETBEI);
	out(THR, 'z'); /* writing THR clears it, the byte leaves, it is back */
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(in(IIR), IIR_THRE);
}

/* Of line status, received data, THRE and modem status, only THRE ever
 * happens (nothing is received, no line or modem change occurs). */
Test(serial, iir_names_thre_with_every_source_enabled)
{
	out(IER, 0x0f);
	cr_assert_eq(in(IER), 0x0f);
	cr_assert_eq(in(IIR), IIR_THRE);
	cr_assert_eq(in(IIR), IIR_NONE);
	out(IER, 0xff);
	cr_assert_eq(in(IER), 0x0f, "the high bits are not writable");
}

Test(serial, fifo_bits_follow_fcr)
{
	out(FCR, 0x07);
	cr_assert_eq(in(IIR), 0xc1);
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), 0xc2);
	out(FCR, 0x00);
	out(THR, 'a');
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(in(IIR), IIR_THRE);
}

Test(serial, out2_gates_the_line)
{
	out(IER, ETBEI);
	cr_assert_not(atomic_load(&line));
	cr_assert_eq(atomic_load(&line_changes), 0, "OUT2 clear: no line");
	out(MCR, OUT2);
	cr_assert(atomic_load(&line));
	out(MCR, 0);
	cr_assert_not(atomic_load(&line));
	out(MCR, OUT2 | LOOP);
	cr_assert_not(atomic_load(&line), "loopback disconnects it");
	out(MCR, OUT2);
	cr_assert(atomic_load(&line));
	cr_assert_eq(in(IIR), IIR_THRE);
	cr_assert_not(atomic_load(&line), "reading IIR lowered it");
}

/*
 * As Linux's 8250 handler drives it: the line falls at the IIR read that
 * names THRE, rises at the first write (the THR is empty again), and the
 * handler's next look at IIR finds nothing, so it returns; the line falls
 * and rises there, a new edge for the next call whatever the controller
 * latched before.
 */
Test(serial, a_handler_sends_one_fifo_per_call)
{
	out(MCR, OUT2);
	out(IER, ETBEI);
	cr_assert_eq(atomic_load(&line_changes), 1);
	for (unsigned burst = 0; burst < 3; burst++) {
		unsigned edges;

		cr_assert_eq(in(IIR), IIR_THRE);
		cr_assert_not(atomic_load(&line));
		for (unsigned i = 0; i < 16; i++)
			out(THR, 'a');
		cr_assert(atomic_load(&line));
		edges = atomic_load(&line_changes);
		cr_assert_eq(in(IIR), IIR_NONE, "the handler would loop");
		cr_assert(atomic_load(&line));
		cr_assert_eq(atomic_load(&line_changes), edges + 2,
			     "no new edge");
	}
	cr_assert_eq(in(IIR), IIR_THRE, "the next call");
}

Test(serial, loopback_msr_mirrors_mcr)
{
	out(MCR, LOOP | 0x0f);
	cr_assert_eq(in(MSR)&0xf0, 0xf0);
	out(MCR, LOOP | OUT2 | 0x02);
	cr_assert_eq(in(MSR)&0xf0, 0x90, "RTS->CTS, OUT2->DCD");
	out(MCR, 0);
	cr_assert_eq(in(MSR), 0xb0);
}

/* Fills the ring through the THR until the UART says busy. */
static unsigned fill_until_busy(void)
{
	unsigned sent = 0;

	while (in(LSR)&0x20) {
		out(THR, 'f');
		sent++;
		cr_assert_lt(sent, 2 * CONSOLE_RING_SIZE + 4 * 65536,
			     "the transmitter never got busy");
	}
	return sent;
}

Test(serial, busy_thr_raises_thre_when_room_returns)
{
	out(MCR, OUT2);
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), IIR_THRE);
	fill_until_busy();
	cr_assert_eq(in(LSR), 0);
	cr_assert_eq(in(IIR), IIR_NONE, "busy: no THRE");
	cr_assert_not(atomic_load(&line));
	serial_console_room(&uart); /* a spurious call: still no room */
	cr_assert_eq(in(IIR), IIR_NONE);
	pthread_mutex_lock(&con.lock);
	con.queued -= 1000; /* what the writer does */
	pthread_mutex_unlock(&con.lock);
	serial_console_room(&uart);
	cr_assert(atomic_load(&line));
	cr_assert_eq(in(LSR), 0x60);
	cr_assert_eq(in(IIR), IIR_THRE);
	serial_console_room(&uart); /* once per busy spell */
	cr_assert_eq(in(IIR), IIR_NONE);
}

Test(serial, room_without_etbei_raises_nothing)
{
	out(MCR, OUT2);
	fill_until_busy();
	pthread_mutex_lock(&con.lock);
	con.queued = 0;
	pthread_mutex_unlock(&con.lock);
	serial_console_room(&uart);
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert_eq(atomic_load(&line_changes), 0);
}

/* ---- the real console, flushed by its owner: the room callback ---- */

Test(serial_writer, room_callback_raises_thre_after_backpressure)
{
	char dir[] = "/tmp/lull-serial-XXXXXX", path[64], err[160];
	char sink[65536];
	int reader;

	signal(SIGPIPE, SIG_IGN);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	reader = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(reader, 0);
	cr_assert_eq(console_open(&con, path, 0, err, sizeof(err)), 0, "%s",
		     err);
	serial_init(&uart, &con);
	serial_set_irq(&uart, irq, NULL);
	console_set_room_callback(&con, serial_console_room, &uart);
	atomic_store(&line, false);

	out(MCR, OUT2);
	out(IER, ETBEI);
	cr_assert_eq(in(IIR), IIR_THRE);
	/* the pipe fills, then the ring: the owner finds no room */
	do {
		fill_until_busy();
		console_flush(&con);
	} while (!con.out_full);
	fill_until_busy();
	console_flush(&con);
	cr_assert(con.out_full, "the owner waits for room at the FIFO");
	cr_assert_not(atomic_load(&line), "no THRE while the ring is full");
	/* the reader reads: the owner empties the ring, the THR empties */
	while (!atomic_load(&line)) {
		ssize_t n = read(reader, sink, sizeof(sink));

		cr_assert(n > 0, "the FIFO had the ring's bytes");
		console_flush(&con);
	}
	/* the first look after writes finds it sending, then it is empty */
	cr_assert_eq(in(IIR), IIR_NONE);
	cr_assert(atomic_load(&line), "a new edge for the next call");
	cr_assert_eq(in(IIR), IIR_THRE);
	close(reader);
	console_close(&con);
	unlink(path);
	rmdir(dir);
}
