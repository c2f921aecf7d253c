// SPDX-License-Identifier: MIT
/*
 * The I/O APIC through its MMIO window, with a fake delivery callback that
 * records the messages it sends, and a real vCPU's local APIC (no KVM
 * behind it) for the remote IRR / EOI round trip.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "devices/ioapic.h"
#include "timers/clock.h"
#include "vcpu/vcpu.h"

#define MAX_SENT 64

static struct apic_ipi sent[MAX_SENT];
static unsigned nr_sent;

static void record(void *opaque, const struct apic_ipi *msg)
{
	(void)opaque;
	if (nr_sent < MAX_SENT)
		sent[nr_sent++] = *msg;
}

static struct ioapic io;

static struct ioapic *fresh(void)
{
	nr_sent = 0;
	ioapic_init(&io, record, NULL);
	return &io;
}

static void mmio_write(struct ioapic *a, uint64_t offset, uint32_t value)
{
	ioapic_mmio(a, offset, true, 4, (uint8_t *)&value);
}

static uint32_t mmio_read(struct ioapic *a, uint64_t offset)
{
	uint32_t value = 0x12345678;

	ioapic_mmio(a, offset, false, 4, (uint8_t *)&value);
	return value;
}

static uint32_t reg_read(struct ioapic *a, uint32_t reg)
{
	mmio_write(a, IOAPIC_REGSEL, reg);
	return mmio_read(a, IOAPIC_WINDOW);
}

static void reg_write(struct ioapic *a, uint32_t reg, uint32_t value)
{
	mmio_write(a, IOAPIC_REGSEL, reg);
	mmio_write(a, IOAPIC_WINDOW, value);
}

static void program(struct ioapic *a, unsigned pin, uint64_t entry)
{
	reg_write(a, IOAPIC_REG_REDIR + 2 * pin + 1, (uint32_t)(entry >> 32));
	reg_write(a, IOAPIC_REG_REDIR + 2 * pin, (uint32_t)entry);
}

static uint64_t entry_of(struct ioapic *a, unsigned pin)
{
	return reg_read(a, IOAPIC_REG_REDIR + 2 * pin) |
	       (uint64_t)reg_read(a, IOAPIC_REG_REDIR + 2 * pin + 1) << 32;
}

#define DEST(id) ((uint64_t)(id) << IOAPIC_DEST_SHIFT)
#define PIN PLATFORM_COM1_GSI

Test(ioapic, reset_masks_every_pin)
{
	struct ioapic *a = fresh();

	for (unsigned pin = 0; pin < PLATFORM_IOAPIC_PINS; pin++)
		cr_assert_eq(entry_of(a, pin), IOAPIC_MASKED, "pin %u", pin);
	for (unsigned pin = 0; pin < PLATFORM_IOAPIC_PINS; pin++)
		ioapic_set_irq(a, pin, true);
	cr_assert_eq(nr_sent, 0);
}

Test(ioapic, id_version_arbitration)
{
	struct ioapic *a = fresh();

	cr_assert_eq(reg_read(a, IOAPIC_REG_ID), PLATFORM_IOAPIC_ID << 24);
	cr_assert_eq(reg_read(a, IOAPIC_REG_VERSION), 0x170020u);
	reg_write(a, IOAPIC_REG_ID, 0x05000000u);
	cr_assert_eq(reg_read(a, IOAPIC_REG_ID), 0x05000000u);
	cr_assert_eq(reg_read(a, IOAPIC_REG_ARB), 0x05000000u);
	reg_write(a, IOAPIC_REG_VERSION, 0);
	cr_assert_eq(reg_read(a, IOAPIC_REG_VERSION), 0x170020u);
	cr_assert_eq(a->counts.invalid, 1);
}

Test(ioapic, regsel_reads_back_its_low_byte)
{
	struct ioapic *a = fresh();

	mmio_write(a, IOAPIC_REGSEL, 0x13);
	cr_assert_eq(mmio_read(a, IOAPIC_REGSEL), 0x13);
	mmio_write(a, IOAPIC_REGSEL, 0xdeadbe21u);
	cr_assert_eq(mmio_read(a, IOAPIC_REGSEL), 0x21);
	cr_assert_eq(a->counts.invalid, 1);
}

Test(ioapic, redirection_entry_keeps_writable_bits_only)
{
	struct ioapic *a = fresh();
	uint64_t all = ~0ull;

	program(a, 7, all);
	cr_assert_eq(entry_of(a, 7), IOAPIC_WRITABLE);
	cr_assert_geq(a->counts.invalid, 1, "reserved bits are counted");
	/* the other pins are untouched */
	cr_assert_eq(entry_of(a, 6), IOAPIC_MASKED);
	cr_assert_eq(entry_of(a, 8), IOAPIC_MASKED);
}

Test(ioapic, garbage_accesses_change_nothing)
{
	struct ioapic *a = fresh();
	uint8_t byte = 0x10;
	uint64_t wide = 0;

	program(a, PIN, 0x31 | DEST(0));
	mmio_write(a, IOAPIC_REGSEL, 0x10 + 2 * PLATFORM_IOAPIC_PINS);
	cr_assert_eq(mmio_read(a, IOAPIC_WINDOW), 0xffffffffu);
	mmio_write(a, IOAPIC_WINDOW, 0);
	mmio_write(a, IOAPIC_REGSEL, 0x05);
	cr_assert_eq(mmio_read(a, IOAPIC_WINDOW), 0xffffffffu);
	mmio_write(a, IOAPIC_REGSEL, 0xff);
	mmio_write(a, IOAPIC_WINDOW, 0);
	ioapic_mmio(a, IOAPIC_REGSEL, true, 1, &byte); /* wrong size */
	cr_assert_eq(mmio_read(a, IOAPIC_REGSEL), 0xff);
	ioapic_mmio(a, IOAPIC_WINDOW, false, 8, (uint8_t *)&wide);
	cr_assert_eq(wide, ~0ull);
	mmio_write(a, 0x20, 1); /* no register there */
	cr_assert_eq(mmio_read(a, 0x20), 0xffffffffu);
	cr_assert_eq(entry_of(a, PIN), 0x31);
	cr_assert_eq(a->counts.invalid, 8);
	for (unsigned pin = 0; pin < PLATFORM_IOAPIC_PINS; pin++)
		if (pin != PIN)
			cr_assert_eq(entry_of(a, pin), IOAPIC_MASKED);
}

Test(ioapic, edge_pin_sends_on_rising_edges_only)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x41 | DEST(1));
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 1);
	cr_assert_eq(sent[0].vector, 0x41);
	cr_assert_eq(sent[0].dest, 1);
	cr_assert_eq(sent[0].mode, APIC_DM_FIXED);
	cr_assert_not(sent[0].logical);
	cr_assert_not(sent[0].level);
	ioapic_set_irq(a, PIN, true); /* still high: no edge */
	cr_assert_eq(nr_sent, 1);
	ioapic_set_irq(a, PIN, false);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 2);
	cr_assert_eq(entry_of(a, PIN) & IOAPIC_REMOTE_IRR, 0);
}

Test(ioapic, masked_edge_is_lost)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x41 | IOAPIC_MASKED);
	ioapic_set_irq(a, PIN, true);
	program(a, PIN, 0x41);
	cr_assert_eq(nr_sent, 0, "an edge while masked is not latched");
	ioapic_set_irq(a, PIN, false);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 1);
}

Test(ioapic, level_pin_waits_for_eoi)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x52 | IOAPIC_TRIGGER_LEVEL | DEST(0));
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 1);
	cr_assert(sent[0].level);
	cr_assert(entry_of(a, PIN) & IOAPIC_REMOTE_IRR);
	ioapic_set_irq(a, PIN, false);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 1, "remote IRR holds it");
	ioapic_eoi(a, 0x53); /* another vector */
	cr_assert_eq(nr_sent, 1);
	ioapic_eoi(a, 0x52); /* line still high: again */
	cr_assert_eq(nr_sent, 2);
	cr_assert(entry_of(a, PIN) & IOAPIC_REMOTE_IRR);
	ioapic_set_irq(a, PIN, false);
	ioapic_eoi(a, 0x52); /* line low now: remote IRR clears, quiet */
	cr_assert_eq(nr_sent, 2);
	cr_assert_eq(entry_of(a, PIN) & IOAPIC_REMOTE_IRR, 0);
}

Test(ioapic, eoi_register_clears_remote_irr)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x52 | IOAPIC_TRIGGER_LEVEL);
	ioapic_set_irq(a, PIN, true);
	mmio_write(a, IOAPIC_EOI, 0x52);
	cr_assert_eq(nr_sent, 2);
}

Test(ioapic, masked_level_pin_sends_when_unmasked)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x52 | IOAPIC_TRIGGER_LEVEL | IOAPIC_MASKED);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 0);
	cr_assert_eq(entry_of(a, PIN) & IOAPIC_REMOTE_IRR, 0);
	program(a, PIN, 0x52 | IOAPIC_TRIGGER_LEVEL);
	cr_assert_eq(nr_sent, 1);
}

Test(ioapic, switching_to_edge_clears_remote_irr)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x52 | IOAPIC_TRIGGER_LEVEL);
	ioapic_set_irq(a, PIN, true);
	cr_assert(entry_of(a, PIN) & IOAPIC_REMOTE_IRR);
	program(a, PIN, 0x52);
	cr_assert_eq(entry_of(a, PIN) & IOAPIC_REMOTE_IRR, 0);
	cr_assert_eq(nr_sent, 1);
}

Test(ioapic, logical_and_lowest_priority_reach_the_message)
{
	struct ioapic *a = fresh();

	program(a, 3, 0x60 | IOAPIC_DEST_LOGICAL | 1ull << 8 | DEST(0x0c));
	ioapic_set_irq(a, 3, true);
	cr_assert_eq(nr_sent, 1);
	cr_assert(sent[0].logical);
	cr_assert_eq(sent[0].mode, APIC_DM_LOWEST);
	cr_assert_eq(sent[0].dest, 0x0c);
	cr_assert_not(sent[0].x2apic, "8-bit destination format");
}

Test(ioapic, unsupported_modes_are_counted_not_sent)
{
	struct ioapic *a = fresh();

	program(a, PIN, 0x60 | (uint64_t)APIC_DM_NMI << 8);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(a->counts.unsupported, 1);
	/* a level pin tries while its line is high: at the write, and again
	 * at the next rise, for want of remote IRR */
	program(a, PIN, 0x60 | (uint64_t)7 << 8 | IOAPIC_TRIGGER_LEVEL);
	cr_assert_eq(a->counts.unsupported, 2);
	ioapic_set_irq(a, PIN, false);
	ioapic_set_irq(a, PIN, true);
	cr_assert_eq(nr_sent, 0);
	cr_assert_eq(a->counts.unsupported, 3);
	cr_assert_eq(entry_of(a, PIN) & IOAPIC_REMOTE_IRR, 0);
}

Test(ioapic, out_of_range_pin_is_ignored)
{
	struct ioapic *a = fresh();

	ioapic_set_irq(a, PLATFORM_IOAPIC_PINS, true);
	ioapic_set_irq(a, 1000, true);
	cr_assert_eq(a->lines, 0);
}

/* ---- with real local APICs: the routing and the EOI round trip ---- */

static struct vcpu cpus[2]; /* big: not on the stack */
static atomic_bool stop;

static unsigned nr_level_eois;

static void level_eoi(struct vcpu *v, uint8_t vector)
{
	(void)v;
	nr_level_eois++;
	ioapic_eoi(&io, vector);
}

static void deliver(void *opaque, const struct apic_ipi *msg)
{
	(void)opaque;
	record(NULL, msg);
	for (unsigned i = 0; i < 2; i++)
		vcpu_send_ipi(NULL, &cpus[i], msg);
}

static const struct vcpu_ops ops = { .level_eoi = level_eoi };

static void x2apic_on(struct vcpu *v)
{
	uint64_t base;

	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD),
		     0);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_SVR,
				APIC_SVR_ENABLE | 0xff),
		     0);
}

/* What the vCPU thread does with posted vectors, then a delivery. */
static int take_one(struct vcpu *v)
{
	int vector;

	for (unsigned w = 0; w < 4; w++) {
		uint64_t bits = atomic_exchange(&v->posted[w], 0);
		uint64_t level = atomic_exchange(&v->posted_level[w], 0);

		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);

			bits &= bits - 1;
			apic_raise(&v->apic, (uint8_t)(w * 64 + b), 1, false,
				   APIC_SRC_IPI, 0);
			apic_set_trigger(&v->apic, (uint8_t)(w * 64 + b),
					 level & (1ull << b));
		}
	}
	vector = apic_deliverable(&v->apic);
	if (vector >= 0)
		apic_delivered(&v->apic, (uint8_t)vector);
	return vector;
}

static uint32_t tmr_word(struct vcpu *v, uint8_t vector)
{
	uint64_t value = 0;

	apic_rdmsr(v, MSR_X2APIC_FIRST + APIC_TMR + vector / 32, &value);
	return (uint32_t)value;
}

static void two_cpus(void)
{
	nr_sent = 0;
	nr_level_eois = 0;
	ioapic_init(&io, deliver, NULL);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(vcpu_init(&cpus[i], i, -1, -1, &ops, NULL, &stop,
				       0, clock_now_ns()),
			     0);
		x2apic_on(&cpus[i]);
	}
}

static void two_cpus_done(void)
{
	for (unsigned i = 0; i < 2; i++)
		vcpu_destroy(&cpus[i]);
}

Test(ioapic, physical_destination_reaches_that_apic_only, .init = two_cpus,
     .fini = two_cpus_done)
{
	program(&io, PIN, 0x61 | DEST(1));
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(take_one(&cpus[0]), -1);
	cr_assert_eq(take_one(&cpus[1]), 0x61);
}

Test(ioapic, physical_broadcast_reaches_both, .init = two_cpus,
     .fini = two_cpus_done)
{
	program(&io, PIN, 0x61 | DEST(0xff));
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(take_one(&cpus[0]), 0x61);
	cr_assert_eq(take_one(&cpus[1]), 0x61);
}

static void xapic_write(struct vcpu *v, unsigned reg, uint32_t value)
{
	cr_assert(apic_mmio(v, APIC_DEFAULT_BASE + reg * 16, true, 4,
			    (uint8_t *)&value));
}

/* Logical destinations use the xAPIC LDR: flat model, a bit per APIC. */
Test(ioapic, logical_destination_uses_the_xapic_ldr)
{
	nr_sent = 0;
	ioapic_init(&io, deliver, NULL);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(vcpu_init(&cpus[i], i, -1, -1, &ops, NULL, &stop,
				       0, clock_now_ns()),
			     0);
		xapic_write(&cpus[i], APIC_SVR, APIC_SVR_ENABLE | 0xff);
		xapic_write(&cpus[i], APIC_LDR, (1u << i) << 24);
	}
	program(&io, PIN, 0x62 | IOAPIC_DEST_LOGICAL | DEST(2));
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(take_one(&cpus[0]), -1);
	cr_assert_eq(take_one(&cpus[1]), 0x62);
	two_cpus_done();
}

Test(ioapic, level_vector_sets_tmr_and_its_eoi_redelivers, .init = two_cpus,
     .fini = two_cpus_done)
{
	struct vcpu *v = &cpus[0];

	program(&io, PIN, 0x71 | IOAPIC_TRIGGER_LEVEL | DEST(0));
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(take_one(v), 0x71);
	cr_assert_eq(tmr_word(v, 0x71), 1u << (0x71 % 32));
	cr_assert(entry_of(&io, PIN) & IOAPIC_REMOTE_IRR);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 0), 0);
	cr_assert_eq(nr_sent, 2, "line still high: sent again at the EOI");
	cr_assert_eq(take_one(v), 0x71);
	ioapic_set_irq(&io, PIN, false);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 0), 0);
	cr_assert_eq(nr_sent, 2);
	cr_assert_eq(entry_of(&io, PIN) & IOAPIC_REMOTE_IRR, 0);
}

Test(ioapic, edge_vector_clears_tmr_and_its_eoi_stays_local, .init = two_cpus,
     .fini = two_cpus_done)
{
	struct vcpu *v = &cpus[0];

	program(&io, PIN, 0x71 | IOAPIC_TRIGGER_LEVEL | DEST(0));
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(take_one(v), 0x71);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 0), 0);
	cr_assert_eq(take_one(v), 0x71);
	ioapic_set_irq(&io, PIN, false);
	program(&io, PIN, 0x71 | DEST(0)); /* now an edge pin */
	ioapic_set_irq(&io, PIN, true);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 0), 0);
	cr_assert_eq(nr_level_eois, 2);
	cr_assert_eq(take_one(v), 0x71);
	cr_assert_eq(tmr_word(v, 0x71), 0);
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 0), 0);
	cr_assert_eq(nr_level_eois, 2, "an edge's EOI stays in the APIC");
	cr_assert_eq(nr_sent, 3);
}
