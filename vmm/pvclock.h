/* SPDX-License-Identifier: MIT */
/*
 * The guest clock: a pvclock record (Xen vcpu_time_info / KVM
 * pvclock_vcpu_time_info layout) that maps the guest's TSC to host
 * CLOCK_MONOTONIC nanoseconds, so guest deadlines and host timers share
 * one time base and need no conversion.
 *
 * The scale comes from KVM_GET_TSC_KHZ; the anchor (a guest TSC value and
 * the host time it corresponds to) is re-taken every PVCLOCK_RESYNC_NS while
 * the vCPU is in the VMM anyway, which bounds the drift a kHz-rounded
 * frequency would otherwise accumulate.
 *
 * Where KVM does not call the host's TSC stable (KVM_GET_CLOCK without
 * KVM_CLOCK_TSC_STABLE: unsynchronized host CPUs, often a nested host),
 * there is no fixed offset to measure. KVM freezes the guest TSC while the
 * vCPU is out and, at each entry, catches it up to its own line for the
 * VM: "the TSC was 0 when the first vCPU was created, and counts at
 * tsc_khz since" (the others are synchronized to it). The guest TSC is
 * never behind that line, so the record follows the line itself, with the
 * creation time taken just after KVM_CREATE_VCPU returned: a guest clock
 * that errs, errs late, and no timer looks early. The record goes out
 * without LULL_PVCLOCK_TSC_STABLE, which tells the guest that readings
 * may step and to keep its own clock monotonic (docs/abi.md).
 */
#ifndef LULL_PVCLOCK_H
#define LULL_PVCLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "lull_abi.h"

#define PVCLOCK_RESYNC_NS 1000000000ull

struct pvclock_src {
	bool tsc_stable; /* KVM_CLOCK_TSC_STABLE: the offset holds */
	int64_t tsc_offset; /* guest TSC - host TSC, when stable */
	uint32_t tsc_khz;
	uint64_t tsc_zero_ns; /* host ns at guest TSC 0, when not stable */
	uint32_t mul;
	int8_t shift;
	uint64_t last_sync_ns;
	bool ready;
};

/* mul/shift such that ns = ((tsc << shift) * mul) >> 32 (shift < 0: >>). */
void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift);
/* Guest ns for a TSC delta, exactly as a guest computes it. */
uint64_t pvclock_delta_ns(uint64_t tsc_delta, uint32_t mul, int8_t shift);
/* Measures the guest TSC offset of a vCPU (its fd) and sets the scale;
 * tsc_zero_ns is when the VM's first vCPU was created. */
int pvclock_init(struct pvclock_src *src, int vcpu_fd, uint32_t tsc_khz,
		 uint64_t tsc_zero_ns);
/* Host ns at which the guest TSC reads `tsc`: now if it already has, at
 * most LULL_HORIZON_NS ahead. Where the TSC is not stable it asks KVM for
 * the guest's TSC through vcpu_fd (< 0: KVM's line instead). */
uint64_t pvclock_tsc_to_ns(const struct pvclock_src *src, int vcpu_fd,
			   uint64_t tsc);
/* Writes a fresh record (version odd while writing, then even). */
void pvclock_write(struct pvclock_src *src, struct lull_pvclock *rec);

#endif
