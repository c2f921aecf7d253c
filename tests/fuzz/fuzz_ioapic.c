// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the I/O APIC (devices/ioapic.c), checked against a
 * small model of the 82093AA written from devices/ioapic.h's contract.
 *
 * Each input starts from ioapic_init with a deliver callback that records
 * every message (and checks it runs under the I/O APIC's lock, as the
 * header says). A few config bytes may program every pin at once, so that
 * the operations start from unmasked pins sharing or spreading vectors;
 * then come operations until the input runs out:
 *
 *   config  [0] bit 0: program all pins (else the reset state, all
 *           masked); bits 1-3 their delivery mode; bit 4 logical
 *           destination; bits 5-7 vector stride (0: one shared vector);
 *           [1] first vector; [2] destination; [3..5] pins made
 *           level-triggered (24 bits)
 *   REGW    reg, 4 bytes: IOREGSEL <- reg, then IOWIN <- the value
 *   REGR    reg: IOREGSEL <- reg, then a read of IOWIN
 *   ENTRY   pin (% 24), flags, 8 bytes: both halves of that redirection
 *           entry (flags bit 0: high half first; bit 1: reserved bits
 *           kept, else the value is cut to IOAPIC_WRITABLE)
 *   MMIO    flags (bit 0 write, bits 1-3 length - 1, bits 4-5 place),
 *           place, a write's data: one access of 1-8 bytes near IOREGSEL,
 *           IOWIN, the EOI register or 0x20 (place 0: a byte, bits 0-1
 *           which, bits 2-5 the distance + 8), or anywhere in the page (2
 *           bytes, modulo its size)
 *   LINE    flags (bit 0 the level), pin: ioapic_set_irq
 *   PULSE   pin: the line raised, then lowered
 *   EOI     flags (bit 0: through the EOI register), vector: ioapic_eoi
 * A pin byte below 240 is a pin (% 24); 240-254 are pins 24-38, past the
 * end and around the width of the 32-bit line mask; 255 takes a 32-bit
 * pin from the next 4 bytes. Reads past the end of the input are 0.
 *
 * The model keeps what the guest and the devices can see or set: each
 * entry's writable bits, its remote IRR, each line, the ID, IOREGSEL and
 * the three counters; every call into the I/O APIC is made on the model
 * too, which predicts its messages and the values it reads.
 *
 * Invariants after every operation (__builtin_trap() when broken):
 *  - every register (ID, version 0x170020, arbitration, the 48 halves of
 *    the redirection table) and IOREGSEL read back through the window
 *    exactly what the model holds: written bits masked by
 *    IOAPIC_WRITABLE, remote IRR as predicted, delivery status 0; an
 *    access with nothing to read (not 32 bits, no register there, a
 *    register index that does not exist) reads all ones in every byte;
 *    no access writes past its length or into a write's data;
 *  - the messages sent are exactly those predicted, in any order: an
 *    edge pin sends once per rising edge of its line while unmasked; a
 *    level pin sends while its line is high, unmasked and remote IRR
 *    clear, then sets remote IRR; an EOI (call or register) clears
 *    remote IRR of the level pins with that vector and sends again where
 *    the line is still high; each carries the entry's vector, 8-bit
 *    destination, destination mode and trigger, no shorthand, and a
 *    fixed or lowest-priority mode (lowest may arrive as fixed);
 *  - a send due in a mode ioapic.h does not model (SMI, NMI, INIT,
 *    ExtINT, reserved) sends nothing and sets no remote IRR; instead,
 *    `unsupported` counts it;
 *  - `delivered`, `unsupported` and `invalid` equal the model's counts
 *    (so they never go backwards), `delivered` the messages seen;
 *    `invalid` grows by one for each access ioapic.h says a guest should
 *    not make (including a write to a read-only register), and such an
 *    access changes nothing but its bits that may be written;
 *  - a pin past the last does nothing: no message, no count, no register
 *    change (and no undefined shift: the build has UBSan).
 *
 * Where ioapic.h is silent the model takes what KVM and QEMU do: an
 * entry switched to edge drops its remote IRR (Linux relies on it to
 * clear a stuck one), an EOI matches each entry's vector as it is now,
 * and IOREGSEL reads back the index it holds. A level pin in an
 * unmodelled mode is counted each time it is found due: on its line set
 * high, a write of its entry, an EOI of its vector.
 *
 * Nothing here is left to chance: the I/O APIC has no clock, so an input
 * always runs the same way.
 *
 * Seeds (tests/fuzz/corpus/ioapic, its README says what each does) are
 * written by hand in this encoding, with Python helpers like these:
 *   b = lambda *x: bytes(x)
 *   u32 = lambda n: n.to_bytes(4, 'little')
 *   cfg = lambda flags=0, vec=0, dest=0, level=0: \
 *       b(flags, vec, dest) + level.to_bytes(3, 'little')
 *   regw = lambda reg, v: b(0, reg) + u32(v)
 *   regr = lambda reg: b(1, reg)
 *   entry = lambda pin, e, flags=0: \
 *       b(2, pin, flags) + e.to_bytes(8, 'little')
 *   mmio = lambda flags, place, data=b'': b(3, flags) + place + data
 *   line = lambda pin, level: b(4, level, pin)
 *   pulse = lambda pin: b(5, pin)
 *   eoi = lambda vec, reg=0: b(6, reg, vec)
 *   open('edge-pin', 'wb').write(cfg() + entry(3, 0x31 | 1 << 56)
 *       + pulse(3) + line(3, 1) + line(3, 1) + ...)
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devices/ioapic.h"
#include "fuzz.h"

#define PINS PLATFORM_IOAPIC_PINS
#define MAX_OPS 512
/* One operation sends at most one message per pin (an EOI can reach all) */
#define MAX_SENT PINS

/* Read-only entry bits a guest writes back as it read them: not reserved */
#define ENTRY_READ_ONLY (IOAPIC_DELIVERY_STATUS | IOAPIC_REMOTE_IRR)
#define ENTRY_RESERVED (~(IOAPIC_WRITABLE | ENTRY_READ_ONLY))
#define ID_BITS 0x0f000000u /* bits 27:24 */
#define REGSEL_BITS 0xffu
#define EOI_VECTOR_BITS 0xffu
#define ALL_ONES 0xffffffffu
#define SENTINEL 0xa5

enum op {
	OP_REGW,
	OP_REGR,
	OP_ENTRY,
	OP_MMIO,
	OP_LINE,
	OP_PULSE,
	OP_EOI,
	NR_OPS
};

/* ---- the model: the 82093AA as ioapic.h describes it ---- */

struct model {
	uint64_t entry[PINS]; /* as written, IOAPIC_WRITABLE bits only */
	uint32_t remote_irr; /* pins sent level-triggered, not yet EOI'd */
	uint32_t lines; /* pins whose line is asserted */
	uint32_t id, regsel;
	uint64_t delivered, unsupported, invalid;
	/* messages the current operation should send */
	struct apic_ipi want[MAX_SENT];
	unsigned nr_want;
};

static struct model m;

static bool is_level(unsigned pin)
{
	return m.entry[pin] & IOAPIC_TRIGGER_LEVEL;
}

static bool is_masked(unsigned pin)
{
	return m.entry[pin] & IOAPIC_MASKED;
}

/* The pin's message is due: sent in fixed or lowest-priority mode only. */
static bool model_send(unsigned pin)
{
	uint64_t e = m.entry[pin];
	unsigned mode = (unsigned)(e >> IOAPIC_DELIVERY_MODE_SHIFT) & 7;

	if (mode != APIC_DM_FIXED && mode != APIC_DM_LOWEST) {
		m.unsupported++;
		return false;
	}
	check(m.nr_want < MAX_SENT);
	m.want[m.nr_want++] = (struct apic_ipi){
		.dest = (uint32_t)(e >> IOAPIC_DEST_SHIFT),
		.vector = (uint8_t)(e & IOAPIC_VECTOR_MASK),
		.mode = (uint8_t)mode,
		.shorthand = APIC_SH_NONE,
		.logical = e & IOAPIC_DEST_LOGICAL,
		.x2apic = false,
		.level = e & IOAPIC_TRIGGER_LEVEL,
	};
	m.delivered++;
	return true;
}

/* A level pin sends while high, unmasked and remote IRR clear. */
static void model_level_due(unsigned pin)
{
	uint32_t bit = 1u << pin;

	if (!is_level(pin) || is_masked(pin) || (m.remote_irr & bit) ||
	    !(m.lines & bit))
		return;
	if (model_send(pin))
		m.remote_irr |= bit;
}

static void model_set_irq(unsigned pin, bool level)
{
	uint32_t bit;
	bool rising;

	if (pin >= PINS)
		return;
	bit = 1u << pin;
	rising = level && !(m.lines & bit);
	m.lines = level ? m.lines | bit : m.lines & ~bit;
	if (is_level(pin))
		model_level_due(pin);
	else if (rising && !is_masked(pin))
		model_send(pin);
}

static void model_eoi(uint8_t vector)
{
	for (unsigned pin = 0; pin < PINS; pin++) {
		uint32_t bit = 1u << pin;

		if (!(m.remote_irr & bit) ||
		    (m.entry[pin] & IOAPIC_VECTOR_MASK) != vector)
			continue;
		m.remote_irr &= ~bit;
		model_level_due(pin);
	}
}

/* The register IOREGSEL names: what a read gives, or what a write does. */
static uint32_t model_window(bool write, uint32_t value)
{
	unsigned reg = m.regsel;
	bool redir =
		reg >= IOAPIC_REG_REDIR && reg < IOAPIC_REG_REDIR + 2 * PINS;
	unsigned pin = redir ? (reg - IOAPIC_REG_REDIR) / 2 : 0;
	unsigned shift = reg & 1 ? 32 : 0; /* odd registers: the high half */
	uint64_t half = 0xffffffffull << shift;
	uint64_t wanted = (uint64_t)value << shift;

	if (reg == IOAPIC_REG_ID) {
		if (!write)
			return m.id;
		if (value & ~ID_BITS)
			m.invalid++;
		m.id = value & ID_BITS;
		return 0;
	}
	if (reg == IOAPIC_REG_VERSION || reg == IOAPIC_REG_ARB) {
		if (write) {
			m.invalid++; /* read-only */
			return 0;
		}
		/* 0x20, entries 0-23; arbitration is loaded from the ID */
		return reg == IOAPIC_REG_ARB ? m.id : 0x20u | (PINS - 1) << 16;
	}
	if (!redir) {
		m.invalid++; /* no such register */
		return ALL_ONES;
	}
	if (!write) {
		uint64_t e = m.entry[pin];

		if (m.remote_irr & (1u << pin))
			e |= IOAPIC_REMOTE_IRR;
		return (uint32_t)(e >> shift);
	}
	if (wanted & ENTRY_RESERVED)
		m.invalid++;
	m.entry[pin] = (m.entry[pin] & ~half) | (wanted & IOAPIC_WRITABLE);
	if (!is_level(pin))
		m.remote_irr &= ~(1u << pin);
	model_level_due(pin);
	return 0;
}

/* One guest access; a read's value (all ones when nothing is there). */
static uint32_t model_mmio(uint64_t offset, bool write, unsigned len,
			   uint32_t value)
{
	if (len != 4) {
		m.invalid++;
		return ALL_ONES;
	}
	switch (offset) {
	case IOAPIC_REGSEL:
		if (!write)
			return m.regsel;
		if (value & ~REGSEL_BITS)
			m.invalid++;
		m.regsel = value & REGSEL_BITS;
		return 0;
	case IOAPIC_WINDOW:
		return model_window(write, value);
	case IOAPIC_EOI:
		if (!write)
			break; /* write-only */
		if (value & ~EOI_VECTOR_BITS)
			m.invalid++;
		model_eoi((uint8_t)value);
		return 0;
	}
	m.invalid++;
	return ALL_ONES;
}

/* ---- the I/O APIC under test ---- */

static struct ioapic io;
static struct apic_ipi sent[MAX_SENT];
static unsigned nr_sent;
static uint64_t nr_sent_total;

static void record(void *opaque, const struct apic_ipi *msg)
{
	check(opaque == &m);
	/* ioapic.h: the callback runs under the I/O APIC's one lock */
	check(pthread_mutex_trylock(&io.lock) == EBUSY);
	check(nr_sent < MAX_SENT);
	sent[nr_sent++] = *msg;
	nr_sent_total++;
}

static bool same_message(const struct apic_ipi *want,
			 const struct apic_ipi *got)
{
	/* lowest priority goes to every destination named, as fixed */
	bool mode_ok =
		got->mode == want->mode ||
		(want->mode == APIC_DM_LOWEST && got->mode == APIC_DM_FIXED);

	return mode_ok && got->dest == want->dest &&
	       got->vector == want->vector && got->logical == want->logical &&
	       got->level == want->level && got->shorthand == APIC_SH_NONE &&
	       !got->x2apic;
}

/* The operation sent what the model predicted, in any order. */
static void check_sent(void)
{
	bool matched[MAX_SENT] = { false };

	check(nr_sent == m.nr_want);
	for (unsigned w = 0; w < m.nr_want; w++) {
		unsigned s = 0;

		while (s < nr_sent &&
		       (matched[s] || !same_message(&m.want[w], &sent[s])))
			s++;
		check(s < nr_sent);
		matched[s] = true;
	}
	nr_sent = 0;
	m.nr_want = 0;
}

static void check_counters(void)
{
	check(io.counts.delivered == m.delivered);
	check(io.counts.delivered == nr_sent_total);
	check(io.counts.unsupported == m.unsupported);
	check(io.counts.invalid == m.invalid);
}

/*
 * One access, on the model and on the I/O APIC. The buffer is longer than
 * any access so that bytes written past `len` show up in the sentinel.
 */
static void access(uint64_t offset, bool write, unsigned len,
		   const uint8_t *bytes)
{
	uint8_t data[16];
	uint32_t value = 0, want;

	memset(data, SENTINEL, sizeof(data));
	if (write)
		memcpy(data, bytes, len);
	if (write && len == 4)
		memcpy(&value, bytes, 4);
	want = model_mmio(offset, write, len, value);
	ioapic_mmio(&io, offset, write, len, data);
	for (unsigned i = 0; i < sizeof(data); i++) {
		if (i >= len)
			check(data[i] == SENTINEL);
		else if (write)
			check(data[i] == bytes[i]);
		else if (len == 4)
			check(data[i] == (uint8_t)(want >> (8 * i)));
		else
			check(data[i] == 0xff);
	}
}

static void write32(uint64_t offset, uint32_t value)
{
	uint8_t bytes[4];

	memcpy(bytes, &value, 4);
	access(offset, true, 4, bytes);
}

static void read32(uint64_t offset)
{
	access(offset, false, 4, NULL);
}

static void set_irq(unsigned pin, bool level)
{
	model_set_irq(pin, level);
	ioapic_set_irq(&io, pin, level);
}

static void eoi(uint8_t vector)
{
	model_eoi(vector);
	ioapic_eoi(&io, vector);
}

/*
 * Every register through the window, as a guest reads it (each read is
 * checked by access()), then IOREGSEL back where it was: none of this is
 * an invalid access or sends anything.
 */
static void check_registers(void)
{
	uint64_t invalid = m.invalid;
	uint32_t regsel = m.regsel;

	read32(IOAPIC_REGSEL);
	for (unsigned reg = 0; reg < IOAPIC_REG_REDIR + 2 * PINS; reg++) {
		if (reg > IOAPIC_REG_ARB && reg < IOAPIC_REG_REDIR)
			continue;
		write32(IOAPIC_REGSEL, reg);
		read32(IOAPIC_WINDOW);
	}
	write32(IOAPIC_REGSEL, regsel);
	check(m.invalid == invalid);
}

static void check_all(void)
{
	check_sent();
	check_counters();
	check_registers();
	check_sent();
	check_counters();
}

/* ---- operations ---- */

static unsigned take_pin(struct fuzz_input *in)
{
	unsigned b = (unsigned)fuzz_take(in, 1);

	if (b < 240)
		return b % PINS;
	if (b < 255)
		return PINS + b - 240;
	return (unsigned)fuzz_take(in, 4);
}

static void reg_write(unsigned reg, uint32_t value)
{
	write32(IOAPIC_REGSEL, reg);
	write32(IOAPIC_WINDOW, value);
}

static void op_entry(struct fuzz_input *in)
{
	unsigned pin = (unsigned)fuzz_take(in, 1) % PINS;
	unsigned flags = (unsigned)fuzz_take(in, 1);
	uint64_t e = fuzz_take(in, 8);
	unsigned low = IOAPIC_REG_REDIR + 2 * pin;

	if (!(flags & 2))
		e &= IOAPIC_WRITABLE;
	if (flags & 1) {
		reg_write(low + 1, (uint32_t)(e >> 32));
		reg_write(low, (uint32_t)e);
	} else {
		reg_write(low, (uint32_t)e);
		reg_write(low + 1, (uint32_t)(e >> 32));
	}
}

static void op_mmio(struct fuzz_input *in)
{
	static const uint64_t near[] = { IOAPIC_REGSEL, IOAPIC_WINDOW,
					 IOAPIC_EOI, 0x20 };
	unsigned flags = (unsigned)fuzz_take(in, 1);
	bool write = flags & 1;
	unsigned len = 1 + (flags >> 1 & 7);
	uint64_t offset;
	uint8_t bytes[8];

	if (flags >> 4 & 3) {
		offset = fuzz_take(in, 2) % PLATFORM_IOAPIC_SIZE;
	} else {
		/* up to 8 bytes either side of a register (or of 0x20) */
		unsigned place = (unsigned)fuzz_take(in, 1);
		int delta = (int)(place >> 2 & 0xf) - 8;

		offset = (near[place & 3] + (uint64_t)(int64_t)delta) %
			 PLATFORM_IOAPIC_SIZE;
	}
	for (unsigned i = 0; write && i < len; i++)
		bytes[i] = (uint8_t)fuzz_take(in, 1);
	access(offset, write, len, bytes);
}

static void op_eoi(struct fuzz_input *in)
{
	bool through_register = fuzz_take(in, 1) & 1;
	uint8_t vector = (uint8_t)fuzz_take(in, 1);

	if (through_register)
		write32(IOAPIC_EOI, vector);
	else
		eoi(vector);
}

/* Every pin unmasked with the config's mode, vectors and destination. */
static void program_all(struct fuzz_input *in)
{
	unsigned flags = (unsigned)fuzz_take(in, 1);
	unsigned first = (unsigned)fuzz_take(in, 1), stride = flags >> 5;
	uint64_t dest = fuzz_take(in, 1), level = fuzz_take(in, 3);

	if (!(flags & 1))
		return;
	for (unsigned pin = 0; pin < PINS; pin++) {
		uint64_t e = ((first + pin * stride) & 0xff) |
			     (uint64_t)(flags >> 1 & 7)
				     << IOAPIC_DELIVERY_MODE_SHIFT |
			     dest << IOAPIC_DEST_SHIFT;

		if (flags & 0x10)
			e |= IOAPIC_DEST_LOGICAL;
		if (level >> pin & 1)
			e |= IOAPIC_TRIGGER_LEVEL;
		reg_write(IOAPIC_REG_REDIR + 2 * pin + 1, (uint32_t)(e >> 32));
		reg_write(IOAPIC_REG_REDIR + 2 * pin, (uint32_t)e);
	}
}

/* Reset, as ioapic.h's ioapic_init says. */
static void start(struct fuzz_input *in)
{
	memset(&m, 0, sizeof(m));
	for (unsigned pin = 0; pin < PINS; pin++)
		m.entry[pin] = IOAPIC_MASKED;
	m.id = (uint32_t)PLATFORM_IOAPIC_ID << 24;
	nr_sent = 0;
	nr_sent_total = 0;
	ioapic_init(&io, record, &m);
	check_all();
	program_all(in);
	check_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { .p = data, .left = size };

	start(&in);
	for (unsigned n = 0; n < MAX_OPS && in.left; n++) {
		unsigned reg, pin, flags;

		switch (fuzz_take(&in, 1) % NR_OPS) {
		case OP_REGW:
			reg = (unsigned)fuzz_take(&in, 1);
			reg_write(reg, (uint32_t)fuzz_take(&in, 4));
			break;
		case OP_REGR:
			write32(IOAPIC_REGSEL, (uint32_t)fuzz_take(&in, 1));
			read32(IOAPIC_WINDOW);
			break;
		case OP_ENTRY:
			op_entry(&in);
			break;
		case OP_MMIO:
			op_mmio(&in);
			break;
		case OP_LINE:
			flags = (unsigned)fuzz_take(&in, 1);
			set_irq(take_pin(&in), flags & 1);
			break;
		case OP_PULSE:
			pin = take_pin(&in);
			set_irq(pin, true);
			set_irq(pin, false);
			break;
		default:
			op_eoi(&in);
			break;
		}
		check_all();
	}
	pthread_mutex_destroy(&io.lock);
	return 0;
}
