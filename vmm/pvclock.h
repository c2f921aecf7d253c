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
 * KVM moves the guest's TSC offset as the vCPU comes and goes: it freezes
 * the guest TSC while the vCPU is out and, on the next entry, catches it
 * up towards "rate x host time since the vCPU's TSC was set". Each anchor
 * then measures the offset afresh, and the vCPU anchors only right after
 * an exit, before it has slept (vcpu_ops.resync): a measurement after an
 * idle sleep would catch the TSC frozen and throw the guest clock forward
 * by the sleep. The record goes out without LULL_PVCLOCK_TSC_STABLE, which
 * tells the guest that readings may step and to keep its own clock
 * monotonic (docs/abi.md).
 */
#ifndef LULL_PVCLOCK_H
#define LULL_PVCLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "lull_abi.h"

#define PVCLOCK_RESYNC_NS 1000000000ull

struct pvclock_src {
	int vcpu_fd;
	bool tsc_stable; /* KVM_CLOCK_TSC_STABLE: offset fixed, measured once */
	int64_t tsc_offset; /* guest TSC - host TSC */
	uint32_t mul;
	int8_t shift;
	uint64_t last_sync_ns;
	bool ready;
};

/* mul/shift such that ns = ((tsc << shift) * mul) >> 32 (shift < 0: >>). */
void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift);
/* Guest ns for a TSC delta, exactly as a guest computes it. */
uint64_t pvclock_delta_ns(uint64_t tsc_delta, uint32_t mul, int8_t shift);
/* Measures the guest TSC offset of a vCPU (its fd) and sets the scale. */
int pvclock_init(struct pvclock_src *src, int vcpu_fd, uint32_t tsc_khz);
/* Writes a fresh record (version odd while writing, then even); without a
 * stable TSC, re-measures the offset first. */
void pvclock_write(struct pvclock_src *src, struct lull_pvclock *rec);

#endif
