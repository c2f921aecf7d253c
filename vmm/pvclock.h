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
 * the record goes out without LULL_PVCLOCK_TSC_STABLE, which tells the
 * guest that readings may step and to keep its own clock monotonic
 * (docs/abi.md). There are then two kinds of host, and lull tells them
 * apart by watching a new vCPU's TSC across a few milliseconds:
 *
 *  - The guest TSC still runs with the host's, at a fixed offset (the
 *    host kernel trusts its TSC; KVM only lacks its master clock): lull
 *    uses the offset, as where the TSC is stable.
 *  - The host kernel calls its TSC unstable: KVM holds the guest TSC still
 *    while the vCPU is out and, at each entry, catches it up to its line
 *    for the VM, "the TSC was 0 when the first vCPU was created and counts
 *    at tsc_khz since", on CLOCK_MONOTONIC_RAW (the other vCPUs are
 *    synchronized to it). At its next entry a vCPU therefore reads at
 *    least the larger of the TSC it was held at and that line.
 *    lull counts the line on CLOCK_MONOTONIC_RAW too, from just after
 *    KVM_CREATE_VCPU returned, so that it stays KVM's where NTP slews the
 *    host's CLOCK_MONOTONIC, and it errs below KVM's line, never above:
 *    the record follows it (a guest clock that errs, errs ahead), and a
 *    TSC deadline, due once that larger value reaches it, which no host
 *    clock can say in advance, is armed by it and checked again when its
 *    timer runs (pvclock_tsc_to_ns), so it never fires early.
 */
#ifndef LULL_PVCLOCK_H
#define LULL_PVCLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "lull_abi.h"

#define PVCLOCK_RESYNC_NS 1000000000ull

struct pvclock_src {
	bool tsc_stable; /* KVM_CLOCK_TSC_STABLE, and the guest is told so */
	bool tsc_held; /* KVM holds the TSC while out and catches it up */
	int64_t tsc_offset; /* guest TSC - host TSC, unless held */
	uint32_t tsc_khz;
	uint64_t tsc_zero_raw_ns; /* CLOCK_MONOTONIC_RAW at TSC 0, KVM's line */
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
 * tsc_zero_raw_ns is when the VM's first vCPU was created, read on
 * CLOCK_MONOTONIC_RAW. */
int pvclock_init(struct pvclock_src *src, int vcpu_fd, uint32_t tsc_khz,
		 uint64_t tsc_zero_raw_ns);
/* Whether KVM holds the TSC of a vCPU that is out of KVM_RUN (above),
 * asked of one that has not run yet: sleeps 2-6 ms, so ask only where
 * the TSC is not stable. */
bool pvclock_tsc_held(int vcpu_fd, uint32_t tsc_khz);
/* Host CLOCK_MONOTONIC ns by which the vCPU, once it next enters, reads
 * at least `tsc` (at most LULL_HORIZON_NS ahead); 0 if it would now. A
 * held TSC is read through vcpu_fd (< 0: KVM's line alone), and lull
 * only approximates KVM's line, from below: where the TSC is held, ask
 * again when that time comes. */
uint64_t pvclock_tsc_to_ns(const struct pvclock_src *src, int vcpu_fd,
			   uint64_t tsc);
/* Writes a fresh record (version odd while writing, then even). */
void pvclock_write(struct pvclock_src *src, struct lull_pvclock *rec);

#endif
