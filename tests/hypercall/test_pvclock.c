// SPDX-License-Identifier: MIT
/*
 * The pvclock scale a guest is given: for any TSC rate, mul/shift turn one
 * second of ticks into one second of ns, and deltas scale as a guest
 * computes them; and the APIC's TSC-deadline conversion back to host time.
 */
#include <criterion/criterion.h>

#include "clock.h"
#include "pvclock.h"

static const uint64_t rates_hz[] = { 1000000ull,    100000000ull,
				     999999999ull,  1000000000ull,
				     2094287000ull, 3999999999ull,
				     10000000000ull };

Test(pvclock, scale_turns_a_second_of_ticks_into_a_second)
{
	for (unsigned i = 0; i < sizeof(rates_hz) / sizeof(rates_hz[0]); i++) {
		uint64_t hz = rates_hz[i], ns;
		uint32_t mul;
		int8_t shift;

		pvclock_scale(hz, &mul, &shift);
		cr_assert_geq(mul, 1u << 31, "%lu Hz: mul 0x%x has no top bit",
			      hz, mul);
		ns = pvclock_delta_ns(hz, mul, shift);
		/* 32 bits of mul: within 1 ns in 2^31, and never over */
		cr_assert(ns <= 1000000000ull && ns >= 1000000000ull - 2,
			  "%lu Hz: a second of ticks is %lu ns", hz, ns);
		cr_assert_eq(pvclock_delta_ns(0, mul, shift), 0);
	}
}

Test(pvclock, deltas_are_monotonic_and_linear)
{
	uint32_t mul;
	int8_t shift;
	uint64_t prev = 0;

	pvclock_scale(2094287000ull, &mul, &shift);
	for (uint64_t d = 1; d < (1ull << 40); d = d * 3 + 1) {
		uint64_t ns = pvclock_delta_ns(d, mul, shift);

		cr_assert_geq(ns, prev, "not monotonic at %lu", d);
		prev = ns;
	}
	/* an hour of ticks at 2.094287 GHz */
	cr_assert(pvclock_delta_ns(2094287000ull * 3600, mul, shift) >=
			  3600000000000ull - 3600 * 2,
		  "an hour drifts");
}

/* A TSC that KVM holds while the vCPU is out, read off KVM's line alone. */
Test(pvclock, held_tsc_deadline_past_is_0_and_far_is_clamped)
{
	struct pvclock_src src = { .tsc_held = true, .tsc_khz = 1000000 };
	uint64_t before, t;

	pvclock_scale(1000000000ull, &src.mul, &src.shift);
	src.ready = true;
	/* the guest TSC was 0 a second ago, at 1 GHz: now it reads ~1e9 */
	src.tsc_zero_raw_ns = clock_raw_ns() - 1000000000ull;
	before = clock_now_ns();
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, 1), 0, "a past deadline is due");
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, 999000000ull), 0,
		     "1 ms past is due");
	t = pvclock_tsc_to_ns(&src, -1, 3000000000ull);
	cr_assert(t >= before + 1999000000ull && t <= clock_now_ns() + 2000010000ull,
		  "two seconds ahead: %ld ns", (long)(t - before));
	t = pvclock_tsc_to_ns(&src, -1, UINT64_MAX);
	cr_assert_leq(t, clock_now_ns() + LULL_HORIZON_NS, "clamped");
}

/* A TSC that runs with the host's: the offset says where it is. */
Test(pvclock, offset_tsc_deadline_counts_from_the_host_tsc)
{
	struct pvclock_src src = { .tsc_khz = 1000000 };
	uint64_t base = 1ull << 40, before, t;

	pvclock_scale(1000000000ull, &src.mul, &src.shift);
	src.ready = true;
	before = clock_now_ns();
	/* the guest TSC read `base` just before now */
	src.tsc_offset = (int64_t)(base - __builtin_ia32_rdtsc());
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, base), 0, "reached is due");
	t = pvclock_tsc_to_ns(&src, -1, base + 1000000000ull);
	/* however fast the host's TSC runs, a second of ticks is not yet */
	cr_assert(t > before + 900000000ull && t <= clock_now_ns() + 1000010000ull,
		  "a second ahead: %ld ns", (long)(t - before));
}
