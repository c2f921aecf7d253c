/* SPDX-License-Identifier: MIT */
/*
 * lapic.h: the local APIC timer, for runs without lull.
 *
 * lull has no local APIC; this is for any machine whose CPUID.1:EDX[9]
 * says there is one (QEMU with KVM or TCG, bare metal). The APIC is used
 * in the mode it is in: xAPIC through its MMIO page (APIC_BASE MSR), or
 * x2APIC through MSRs 0x800 + reg / 16; a globally disabled APIC is
 * enabled. The timer runs at divide-by-1; its rate is measured once
 * against the runtime's clock (clock.h) by the first lapic_init() (KVM's
 * and QEMU's emulated APIC bus runs at 1 GHz, and that is what we
 * measure - see docs/guests.md). Every delivered LAPIC interrupt needs
 * lapic_eoi(); the spurious vector (0xff) has a handler that only counts.
 */
#ifndef GUEST_LAPIC_H
#define GUEST_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

/* Software-enable this vCPU's APIC; false if there is none or no clock. */
bool lapic_init(void);
/* "xapic", "x2apic" or "none" (before lapic_init() or without an APIC). */
const char *lapic_mode_name(void);
uint64_t lapic_timer_hz(void);
void lapic_timer_start(unsigned vector, uint32_t count, bool periodic);
void lapic_timer_stop(void);
uint32_t lapic_timer_current(void);
void lapic_eoi(void);
/* EOI for a vector without a handler, if the APIC has it in service. */
void lapic_ack_stray(unsigned vector);
uint64_t lapic_spurious_count(void);
/* ns -> timer counts, rounded up so a deadline is never early; >= 1. */
uint32_t lapic_ns_to_count(uint64_t ns);

#endif
