/* SPDX-License-Identifier: MIT */
/*
 * The I/O APIC: an 82093AA-style interrupt router, PLATFORM_IOAPIC_PINS
 * pins, at PLATFORM_IOAPIC_GPA. A device drives a pin's line
 * (ioapic_set_irq); the pin's redirection entry, which the guest programs,
 * turns it into a message to local APICs (the deliver callback the VM
 * sets routes it like an IPI).
 *
 * Registers, reached through IOREGSEL (offset 0x00) and IOWIN (0x10), all
 * 32 bits: ID (0, bits 27:24), version (1: 0x20, highest entry 23, as KVM
 * and QEMU answer), arbitration (2, the ID) and the redirection table
 * (0x10 + 2n: low half, 0x11 + 2n: high half). The version-0x20 EOI
 * register (0x40) clears remote IRR for a vector.
 *
 * Delivery follows the 82093AA. An edge pin sends its vector on a rising
 * edge while unmasked (an edge while masked is lost). A level pin sends it
 * while its line is high, unmasked and remote IRR clear, and sets remote
 * IRR; the local APIC's EOI of that vector (ioapic_eoi), or a write to the
 * EOI register, clears remote IRR and sends again if the line is still
 * high. An entry switched to edge drops its remote IRR, and an EOI
 * matches each entry's vector as it is then (both as KVM and QEMU do;
 * Linux relies on the first to clear a stuck remote IRR). The line's
 * level is the asserted state: polarity is stored and read back but not
 * applied, as KVM and QEMU do.
 *
 * Fixed and lowest-priority delivery are sent (lowest priority as fixed,
 * to every destination named); the other modes are not modelled: each
 * message due in one is counted (a level pin's each time it falls due),
 * the first logged. The destination is 8 bits in the xAPIC format
 * (physical: an APIC ID, 0xff all; logical: matched against the xAPIC
 * LDR and DFR, or, at an APIC in x2APIC mode, its x2APIC LDR: members of
 * cluster 0, as KVM matches them); an x2APIC guest without interrupt
 * remapping mostly uses physical destinations, its 8-bit APIC IDs. Delivery status reads 0: a
 * message is sent at once.
 *
 * Accesses a guest should not make (not 32 bits, not a register, a
 * register index that does not exist, a write to the version or
 * arbitration register, reserved bits) change nothing but
 * what they may, read all ones where there is nothing to read, and are
 * counted, the first logged.
 *
 * Any thread: one lock. The deliver callback runs under it, so it must not
 * call back into the I/O APIC.
 */
#ifndef LULL_IOAPIC_H
#define LULL_IOAPIC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "apicdef.h"
#include "platform.h"

#define IOAPIC_REGSEL 0x00
#define IOAPIC_WINDOW 0x10
#define IOAPIC_EOI 0x40

#define IOAPIC_REG_ID 0x00
#define IOAPIC_REG_VERSION 0x01
#define IOAPIC_REG_ARB 0x02
#define IOAPIC_REG_REDIR 0x10 /* + 2 * pin: low half; + 1: high half */

#define IOAPIC_VERSION 0x20u
#define IOAPIC_VERSION_VALUE \
	(IOAPIC_VERSION | ((PLATFORM_IOAPIC_PINS - 1u) << 16))

/* Redirection entry bits */
#define IOAPIC_VECTOR_MASK 0xffull
#define IOAPIC_DELIVERY_MODE_SHIFT 8
#define IOAPIC_DEST_LOGICAL (1ull << 11)
#define IOAPIC_DELIVERY_STATUS (1ull << 12)
#define IOAPIC_POLARITY_LOW (1ull << 13)
#define IOAPIC_REMOTE_IRR (1ull << 14)
#define IOAPIC_TRIGGER_LEVEL (1ull << 15)
#define IOAPIC_MASKED (1ull << 16)
#define IOAPIC_DEST_SHIFT 56
/* what the guest may write: vector, mode, destination mode, polarity,
 * trigger, mask and the destination */
#define IOAPIC_WRITABLE (0xffull << 56 | 0x1afffull)

/* Sends one message to the local APICs it names (any thread). */
typedef void ioapic_deliver_fn(void *opaque, const struct apic_ipi *msg);

struct ioapic {
	pthread_mutex_t lock;
	uint32_t id; /* the ID register: bits 27:24 */
	uint32_t regsel;
	uint64_t redir[PLATFORM_IOAPIC_PINS];
	uint32_t lines; /* each pin's line, as last set */
	ioapic_deliver_fn *deliver;
	void *opaque;

	struct ioapic_counts {
		uint64_t delivered; /* messages sent */
		uint64_t unsupported; /* messages in a mode lull does not model */
		uint64_t invalid; /* accesses a guest should not make */
	} counts;
	bool unsupported_said, invalid_said;
};

/* Reset: every pin masked, edge, lines low; ID PLATFORM_IOAPIC_ID. */
void ioapic_init(struct ioapic *io, ioapic_deliver_fn *deliver,
		 void *opaque);
/* Drives pin's line to `level` (true: asserted). Any thread. */
void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level);
/* A local APIC's EOI of a vector it accepted level-triggered. */
void ioapic_eoi(struct ioapic *io, uint8_t vector);
/* The counters as of now, read under the lock. Any thread. */
struct ioapic_counts ioapic_counts(struct ioapic *io);
/* One guest access at `offset` into the I/O APIC's page; never fails. */
void ioapic_mmio(struct ioapic *io, uint64_t offset, bool write,
		 unsigned len, uint8_t *data);

#endif
