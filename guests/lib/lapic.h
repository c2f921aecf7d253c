/* SPDX-License-Identifier: MIT */
/*
 * lapic.h: the xAPIC (MMIO at 0xfee00000) timer, for runs without lull.
 *
 * lull has no local APIC; these are used only under QEMU/KVM. The timer
 * runs at divide-by-1; its rate is measured once against kvmclock by
 * lapic_init() on vCPU 0 (KVM's emulated APIC bus runs at 1 GHz, and that
 * is what we measure on this host - see docs/guests.md). Every delivered
 * LAPIC interrupt needs lapic_eoi().
 */
#ifndef GUEST_LAPIC_H
#define GUEST_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

/* Software-enable this vCPU's APIC; false if there is none. */
bool lapic_init(void);
uint64_t lapic_timer_hz(void);
void lapic_timer_start(unsigned vector, uint32_t count, bool periodic);
void lapic_timer_stop(void);
uint32_t lapic_timer_current(void);
void lapic_eoi(void);
/* ns -> timer counts, rounded up so a deadline is never early; >= 1. */
uint32_t lapic_ns_to_count(uint64_t ns);

#endif
