// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "devices/ioapic.h"

/* Bits a guest writes in vain: reserved, not read-only ones it read back */
#define IOAPIC_RESERVED (~(IOAPIC_WRITABLE | IOAPIC_DELIVERY_STATUS | \
			   IOAPIC_REMOTE_IRR))

void ioapic_init(struct ioapic *io, ioapic_deliver_fn *deliver, void *opaque)
{
	memset(io, 0, sizeof(*io));
	pthread_mutex_init(&io->lock, NULL);
	io->id = (uint32_t)PLATFORM_IOAPIC_ID << 24;
	for (unsigned pin = 0; pin < PLATFORM_IOAPIC_PINS; pin++)
		io->redir[pin] = IOAPIC_MASKED;
	io->deliver = deliver;
	io->opaque = opaque;
}

/* Counts what a guest should not do; the first one is said. */
static void invalid(struct ioapic *io, const char *what, uint64_t value)
{
	io->counts.invalid++;
	if (io->invalid_said)
		return;
	io->invalid_said = true;
	fprintf(stderr,
		"lull: I/O APIC: %s (0x%" PRIx64
		"): ignored; further ones are only counted\n",
		what, value);
}

/* Sends pin's message; false if its delivery mode is not modelled. */
static bool send(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->redir[pin];
	unsigned mode = (unsigned)(e >> IOAPIC_DELIVERY_MODE_SHIFT) & 7;
	struct apic_ipi msg = {
		.dest = (uint32_t)(e >> IOAPIC_DEST_SHIFT),
		.vector = (uint8_t)(e & IOAPIC_VECTOR_MASK),
		.mode = (uint8_t)mode,
		.shorthand = APIC_SH_NONE,
		.logical = e & IOAPIC_DEST_LOGICAL,
		.x2apic = false, /* the message's format: 8-bit destination */
		.level = e & IOAPIC_TRIGGER_LEVEL,
	};

	if (mode != APIC_DM_FIXED && mode != APIC_DM_LOWEST) {
		io->counts.unsupported++;
		if (!io->unsupported_said)
			fprintf(stderr,
				"lull: I/O APIC: pin %u's delivery mode %u is not supported: dropped; further ones are only counted\n",
				pin, mode);
		io->unsupported_said = true;
		return false;
	}
	io->counts.delivered++;
	io->deliver(io->opaque, &msg);
	return true;
}

/* A level pin sends while its line is high, unmasked and not in service. */
static void service_level(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->redir[pin];

	if (!(e & IOAPIC_TRIGGER_LEVEL) || (e & IOAPIC_MASKED) ||
	    (e & IOAPIC_REMOTE_IRR) || !(io->lines & (1u << pin)))
		return;
	if (send(io, pin))
		io->redir[pin] |= IOAPIC_REMOTE_IRR;
}

void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level)
{
	uint32_t bit, was;

	if (pin >= PLATFORM_IOAPIC_PINS)
		return;
	bit = 1u << pin;
	pthread_mutex_lock(&io->lock);
	was = io->lines & bit;
	io->lines = level ? io->lines | bit : io->lines & ~bit;
	if (io->redir[pin] & IOAPIC_TRIGGER_LEVEL)
		service_level(io, pin);
	else if (level && !was && !(io->redir[pin] & IOAPIC_MASKED))
		send(io, pin);
	pthread_mutex_unlock(&io->lock);
}

/* Locked. Remote IRR clears for every level pin with this vector. */
static void eoi_locked(struct ioapic *io, uint8_t vector)
{
	for (unsigned pin = 0; pin < PLATFORM_IOAPIC_PINS; pin++) {
		uint64_t e = io->redir[pin];

		if ((e & IOAPIC_VECTOR_MASK) != vector ||
		    !(e & IOAPIC_REMOTE_IRR))
			continue;
		io->redir[pin] &= ~IOAPIC_REMOTE_IRR;
		service_level(io, pin);
	}
}

struct ioapic_counts ioapic_counts(struct ioapic *io)
{
	struct ioapic_counts c;

	pthread_mutex_lock(&io->lock);
	c = io->counts;
	pthread_mutex_unlock(&io->lock);
	return c;
}

void ioapic_eoi(struct ioapic *io, uint8_t vector)
{
	pthread_mutex_lock(&io->lock);
	eoi_locked(io, vector);
	pthread_mutex_unlock(&io->lock);
}

static uint32_t read_register(struct ioapic *io)
{
	unsigned reg = io->regsel, pin = (reg - IOAPIC_REG_REDIR) / 2;

	switch (reg) {
	case IOAPIC_REG_ID:
		return io->id;
	case IOAPIC_REG_VERSION:
		return IOAPIC_VERSION_VALUE;
	case IOAPIC_REG_ARB:
		return io->id; /* the arbitration ID is loaded from the ID */
	}
	if (reg < IOAPIC_REG_REDIR || pin >= PLATFORM_IOAPIC_PINS) {
		invalid(io, "read of a register that does not exist", reg);
		return 0xffffffffu;
	}
	return (uint32_t)(io->redir[pin] >> (reg % 2 * 32));
}

static void write_redir(struct ioapic *io, unsigned pin, bool high,
			uint32_t value)
{
	uint64_t shift = high ? 32 : 0;
	uint64_t half = 0xffffffffull << shift;
	uint64_t wanted = (uint64_t)value << shift;
	uint64_t e = io->redir[pin];

	if (wanted & IOAPIC_RESERVED)
		invalid(io, "reserved bits written in a redirection entry",
			value);
	e = (e & ~(half & IOAPIC_WRITABLE)) | (wanted & IOAPIC_WRITABLE);
	/* an edge pin has no interrupt in service to wait for */
	if (!(e & IOAPIC_TRIGGER_LEVEL))
		e &= ~IOAPIC_REMOTE_IRR;
	io->redir[pin] = e;
	service_level(io, pin);
}

static void write_register(struct ioapic *io, uint32_t value)
{
	unsigned reg = io->regsel, pin = (reg - IOAPIC_REG_REDIR) / 2;

	switch (reg) {
	case IOAPIC_REG_ID:
		if (value & ~0x0f000000u)
			invalid(io, "reserved bits written in the ID", value);
		io->id = value & 0x0f000000u;
		return;
	case IOAPIC_REG_VERSION:
	case IOAPIC_REG_ARB:
		invalid(io, "write to a read-only register", reg);
		return;
	}
	if (reg < IOAPIC_REG_REDIR || pin >= PLATFORM_IOAPIC_PINS) {
		invalid(io, "write to a register that does not exist", reg);
		return;
	}
	write_redir(io, pin, reg % 2, value);
}

void ioapic_mmio(struct ioapic *io, uint64_t offset, bool write,
		 unsigned len, uint8_t *data)
{
	uint32_t value = 0xffffffffu;

	if (write && len == 4)
		memcpy(&value, data, 4);
	pthread_mutex_lock(&io->lock);
	if (len != 4) {
		invalid(io, "access that is not 32 bits wide", offset);
	} else if (offset == IOAPIC_REGSEL) {
		if (write && (value & ~0xffu))
			invalid(io, "reserved bits written in IOREGSEL", value);
		if (write)
			io->regsel = value & 0xff;
		else
			value = io->regsel;
	} else if (offset == IOAPIC_WINDOW) {
		if (write)
			write_register(io, value);
		else
			value = read_register(io);
	} else if (offset == IOAPIC_EOI && write) {
		if (value & ~0xffu)
			invalid(io, "reserved bits written in the EOI register",
				value);
		eoi_locked(io, (uint8_t)value);
	} else {
		invalid(io, "access to an offset with no register", offset);
	}
	pthread_mutex_unlock(&io->lock);
	if (!write)
		memcpy(data, &value, len > 4 ? 4 : len);
	if (!write && len > 4)
		memset(data + 4, 0xff, len > 8 ? 4 : len - 4);
}
