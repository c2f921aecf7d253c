/* SPDX-License-Identifier: MIT */
/*
 * The guest clock: a pvclock record (Xen vcpu_time_info / KVM
 * pvclock_vcpu_time_info layout) that maps the guest's TSC to host
 * CLOCK_MONOTONIC nanoseconds, so guest deadlines and host timers share
 * one time base and need no conversion.
 *
 * The guest's TSC runs at its nominal rate (KVM_GET_TSC_KHZ, what the
 * host kernel calibrated) and CLOCK_MONOTONIC does not: NTP corrects it,
 * by tens of ppm on most hosts and by up to a tenth while it slews. So
 * each record runs at the rate CLOCK_MONOTONIC ran against the TSC over
 * the last resync interval, re-measured every PVCLOCK_RESYNC_NS (the first
 * time after PVCLOCK_FIRST_RESYNC_NS) while the vCPU is in the VMM anyway,
 * and continues the record before it: the guest's clock never steps back.
 * Where it leads the host's clock, the next record runs slower by the lead
 * until it is gone; where it lags, it is stepped forward to the host's
 * clock before any timer of the vCPU's is delivered (pvclock_catch_up), so
 * that no timer is early by the guest's clock.
 *
 * The record never carries LULL_PVCLOCK_TSC_STABLE (publish() says why):
 * the guest keeps its own clock monotonic (docs/abi.md). Where KVM does
 * not call the host's TSC stable (KVM_GET_CLOCK without
 * KVM_CLOCK_TSC_STABLE: unsynchronized host CPUs, often a nested host),
 * there are two kinds of host, and lull tells them apart by watching a
 * new vCPU's TSC across a few milliseconds:
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
/* The first record is re-anchored sooner, to have the rate soon. */
#define PVCLOCK_FIRST_RESYNC_NS 100000000ull

struct pvclock_src {
	bool tsc_stable; /* KVM_CLOCK_TSC_STABLE: its TSC runs at the host's */
	bool tsc_held; /* KVM holds the TSC while out and catches it up */
	int64_t tsc_offset; /* guest TSC - host TSC, unless held */
	uint32_t tsc_khz;
	uint64_t tsc_zero_raw_ns; /* CLOCK_MONOTONIC_RAW at TSC 0, KVM's line */
	uint32_t mul; /* the nominal scale, tsc_khz's */
	int8_t shift;
	uint64_t last_sync_ns;
	bool ready;
	/* the record as last written (the guest's copy is the guest's) */
	bool anchored;
	uint64_t rec_tsc, rec_ns;
	uint32_t rec_mul;
	int8_t rec_shift;
	/* CLOCK_MONOTONIC's rate against the TSC, and where it was measured */
	uint32_t rate_mul;
	int8_t rate_shift;
	uint64_t rate_tsc, rate_ns;
	bool rate_measured;
	uint64_t steps; /* records stepped forward by pvclock_catch_up */
};

/* mul/shift such that ns = ((tsc << shift) * mul) >> 32 (shift < 0: >>),
 * mul in [2^31, 2^32): `ticks` of the TSC are `ns` (ticks > 0). */
void pvclock_scale_ratio(uint64_t ns, uint64_t ticks, uint32_t *mul,
			 int8_t *shift);
/* The same for a TSC at tsc_hz: tsc_hz ticks are a second. */
void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift);
/* Guest ns for a TSC delta, exactly as a guest computes it. */
uint64_t pvclock_delta_ns(uint64_t tsc_delta, uint32_t mul, int8_t shift);
/* Measures the guest TSC offset of a vCPU (its fd) and sets the scale;
 * tsc_zero_raw_ns is when the VM's first vCPU was created, read on
 * CLOCK_MONOTONIC_RAW. */
int pvclock_init(struct pvclock_src *src, int vcpu_fd, uint32_t tsc_khz,
		 uint64_t tsc_zero_raw_ns);
/* pvclock_init once the offset is known: the scale, no record yet. */
void pvclock_start(struct pvclock_src *src, uint32_t tsc_khz,
		   uint64_t tsc_zero_raw_ns);
/* Whether KVM holds the TSC of a vCPU that is out of KVM_RUN (above),
 * asked of one that has not run yet: sleeps 2-6 ms, so ask only where
 * the TSC is not stable. */
bool pvclock_tsc_held(int vcpu_fd, uint32_t tsc_khz);
/* Host CLOCK_MONOTONIC ns by which the vCPU reads at least `tsc` (at most
 * LULL_HORIZON_NS ahead); 0 if it would now. stays_out: the vCPU is
 * halted and enters only once that time comes (else it runs on now). A
 * held TSC is read through vcpu_fd (< 0: KVM's line alone), and lull
 * only approximates KVM's line, from below: where the TSC is held, ask
 * again when that time comes. */
uint64_t pvclock_tsc_to_ns(const struct pvclock_src *src, int vcpu_fd,
			   uint64_t tsc, bool stays_out);
/* Writes a fresh record (version odd while writing, then even) that
 * continues the last one at the rate CLOCK_MONOTONIC ran since. */
void pvclock_write(struct pvclock_src *src, struct lull_pvclock *rec);
/* CLOCK_MONOTONIC's rate against the TSC's nominal one, as last
 * measured, in ppm; false where none was measured yet (no record, or
 * none rewritten at least PVCLOCK_FIRST_RESYNC_NS / 2 after the first). */
bool pvclock_rate_ppm(const struct pvclock_src *src, int64_t *ppm);
/* Whether the record is due to be written again at host time now. */
bool pvclock_resync_due(const struct pvclock_src *src, uint64_t now);
/* Where the record reads behind the host's clock now, writes one that
 * starts at the host's clock; else writes nothing. */
void pvclock_catch_up(struct pvclock_src *src, struct lull_pvclock *rec);

#endif
