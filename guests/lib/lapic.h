/* SPDX-License-Identifier: MIT */
/*
 * lapic.h: the local APIC timer.
 *
 * For any machine whose CPUID.1:EDX[9] says there is a local APIC (QEMU
 * with KVM or TCG, bare metal, lull once it emulates one). The APIC is
 * used in the mode it is in: xAPIC through its MMIO page (APIC_BASE MSR),
 * or x2APIC through MSRs 0x800 + reg / 16; lapic_init_x2apic() switches
 * to x2APIC first where CPUID.1:ECX[21] offers it. A globally disabled
 * APIC is enabled. The timer runs at divide-by-1, in one-shot, periodic
 * or (CPUID.1:ECX[24]) TSC-deadline mode.
 *
 * The timer's rate: the hypervisor's CPUID leaf base + 0x10 (EBX, APIC
 * bus kHz) when it has one; else measured once against the runtime's
 * clock (clock.h) by the first lapic_init(), and a measurement whose
 * bounds hold 1 GHz is taken as exactly 1 GHz, the bus clock KVM, QEMU and
 * lull all emulate (see lapic.c). Every delivered LAPIC interrupt needs
 * lapic_eoi(); the spurious vector (0xff) has a handler that only counts.
 */
#ifndef GUEST_LAPIC_H
#define GUEST_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

/* Software-enable this vCPU's APIC; false if there is none or no clock. */
bool lapic_init(void);
/* lapic_init(), in x2APIC mode when CPUID.1:ECX[21] offers it. */
bool lapic_init_x2apic(void);
/* "xapic", "x2apic" or "none" (before lapic_init() or without an APIC). */
const char *lapic_mode_name(void);
uint64_t lapic_timer_hz(void);
/* What lapic_timer_hz() came from: "cpuid-hv-0x10", "nominal-1ghz" or
 * "measured"; and the measurement itself (0 if none was taken). */
const char *lapic_timer_hz_source(void);
uint64_t lapic_timer_hz_measured(void);
void lapic_timer_start(unsigned vector, uint32_t count, bool periodic);
/* Re-arms the started timer with only the initial-count write: the one
 * register a one-shot tick writes per tick (the rest stay as set). */
void lapic_timer_set_count(uint32_t count);
void lapic_timer_stop(void);
uint32_t lapic_timer_current(void);

/* CPUID.1:ECX[24]: the timer has a TSC-deadline mode. */
bool lapic_has_tsc_deadline(void);
/* TSC-deadline mode on `vector`, disarmed until lapic_set_tsc_deadline(). */
void lapic_deadline_start(unsigned vector);
/* Fires once the TSC reaches tsc (at once if it has); 0 disarms. */
void lapic_set_tsc_deadline(uint64_t tsc);

void lapic_eoi(void);
/* EOI for a vector without a handler, if the APIC has it in service. */
void lapic_ack_stray(unsigned vector);
uint64_t lapic_spurious_count(void);
/* ns -> timer counts, rounded up so a deadline is never early; >= 1. */
uint32_t lapic_ns_to_count(uint64_t ns);

#endif
