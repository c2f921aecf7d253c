/* SPDX-License-Identifier: MIT */
/*
 * tsc.h: the TSC's rate, for a clock where the hypervisor offers none.
 *
 * In order: CPUID 0x15 (crystal clock x TSC/crystal ratio), the
 * hypervisor's leaf base + 0x10 (TSC kHz: 0x40000010, VMware's, also
 * offered by KVM VMMs), else measured against the PIT (pit.h): the
 * median of three 20 ms windows, so that one window stretched by the
 * host (a vCPU descheduled past the PIT's 55 ms wrap) cannot skew it.
 */
#ifndef GUEST_TSC_H
#define GUEST_TSC_H

#include <stdint.h>

/* TSC ticks per second, 0 if unknown; *how names the source. */
uint64_t tsc_hz(const char **how);

#endif
