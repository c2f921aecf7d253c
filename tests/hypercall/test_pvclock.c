// SPDX-License-Identifier: MIT
/*
 * The pvclock scale a guest is given: for any TSC rate, mul/shift turn one
 * second of ticks into one second of ns, and deltas scale as a guest
 * computes them; the APIC's TSC-deadline conversion back to host time; and
 * records that follow the host clock's rate, forward only.
 */
#include <cpuid.h>
#include <criterion/criterion.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "timers/clock.h"
#include "vcpu/pvclock.h"

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

/*
 * A rate as far off the nominal one as lull takes (an eighth), on TSCs
 * whose nominal multiplier is anywhere in [2^31, 2^32), the top of it
 * included (2096013 kHz, 1000000001 Hz): the rate has a scale of its own,
 * exact to the multiplier's precision, never a multiplier that overflowed.
 */
Test(pvclock, a_rate_off_the_nominal_one_is_exact_at_any_tsc_frequency)
{
	static const uint64_t more_hz[] = { 1000000001ull, 2000000001ull,
					    2096013000ull, 4000000001ull };
	static const uint64_t ppm[] = { 875000, 950000, 1000000, 1000050,
					1050000, 1125000 };

	for (unsigned i = 0; i < 11; i++) {
		uint64_t hz = i < 7 ? rates_hz[i] : more_hz[i - 7];

		for (unsigned j = 0; j < sizeof(ppm) / sizeof(ppm[0]); j++) {
			uint64_t want = 1000000000ull / 1000000 * ppm[j], ns;
			uint32_t mul;
			int8_t shift;

			pvclock_scale_ratio(want, hz, &mul, &shift);
			cr_assert_geq(mul, 1u << 31, "%lu Hz at %lu ppm: mul 0x%x",
				      hz, ppm[j], mul);
			ns = pvclock_delta_ns(hz, mul, shift);
			cr_assert(ns <= want && ns >= want - 2,
				  "%lu Hz at %lu ppm: a second of ticks is %lu ns",
				  hz, ppm[j], ns);
		}
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
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, 1, false), 0, "a past deadline is due");
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, 999000000ull, false), 0,
		     "1 ms past is due");
	t = pvclock_tsc_to_ns(&src, -1, 3000000000ull, false);
	cr_assert(t >= before + 1999000000ull && t <= clock_now_ns() + 2000010000ull,
		  "two seconds ahead: %ld ns", (long)(t - before));
	t = pvclock_tsc_to_ns(&src, -1, UINT64_MAX, false);
	cr_assert_leq(t, clock_now_ns() + LULL_HORIZON_NS, "clamped");
}

/*
 * The tests from here on read the host's TSC beside its CLOCK_MONOTONIC, as
 * lull does where a guest's TSC runs at an offset from it. They need a TSC
 * that runs at one rate whatever the CPU's power state (CPUID 0x80000007
 * EDX bit 8, the invariant TSC), and run pinned to one CPU, so that TSCs
 * out of step between CPUs (a host kernel that calls its TSC unstable for
 * it) cannot matter. Where the TSC is not invariant they SKIP, saying why.
 */
static void need_host_tsc(void)
{
	unsigned eax, ebx, ecx, edx;
	cpu_set_t one;

	if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) ||
	    !(edx & (1u << 8)))
		cr_skip_test("SKIP: this host's TSC is not invariant (CPUID "
			     "0x80000007 EDX bit 8): its rate against "
			     "CLOCK_MONOTONIC is not fixed");
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
}

/* The host TSC's rate, measured against CLOCK_MONOTONIC over 50 ms. */
static uint64_t host_tsc_hz(void)
{
	const struct timespec pause = { .tv_nsec = 50000000 };
	uint64_t t0, n0;

	need_host_tsc();
	t0 = __builtin_ia32_rdtsc();
	n0 = clock_now_ns();
	nanosleep(&pause, NULL);
	return (uint64_t)((unsigned __int128)(__builtin_ia32_rdtsc() - t0) *
			  1000000000ull / (clock_now_ns() - n0));
}

/* A TSC that runs with the host's: the offset says where it is. */
Test(pvclock, offset_tsc_deadline_counts_from_the_host_tsc)
{
	struct pvclock_src src = { .tsc_khz = 1000000 };
	uint64_t base = 1ull << 40, before, t;

	need_host_tsc();
	pvclock_scale(1000000000ull, &src.mul, &src.shift);
	src.ready = true;
	before = clock_now_ns();
	/* the guest TSC read `base` just before now */
	src.tsc_offset = (int64_t)(base - __builtin_ia32_rdtsc());
	cr_assert_eq(pvclock_tsc_to_ns(&src, -1, base, false), 0, "reached is due");
	t = pvclock_tsc_to_ns(&src, -1, base + 1000000000ull, false);
	/* however fast the host's TSC runs, a second of ticks is not yet */
	cr_assert(t > before + 900000000ull && t <= clock_now_ns() + 1000010000ull,
		  "a second ahead: %ld ns", (long)(t - before));
}

/* A vCPU whose TSC is the host's (offset 0), said to run at hz. */
static void offset_src(struct pvclock_src *src, uint64_t hz)
{
	memset(src, 0, sizeof(*src));
	pvclock_start(src, (uint32_t)(hz / 1000), 0);
}

/* What a guest reads from rec at its TSC now. */
static uint64_t guest_reads(const struct lull_pvclock *rec)
{
	return rec->system_time +
	       pvclock_delta_ns(__builtin_ia32_rdtsc() - rec->tsc_timestamp,
				rec->tsc_to_system_mul, rec->tsc_shift);
}

/* What a guest reads from rec, and *host the host's clock with it: read
 * between two reads of the clock, the closest pair of a few, so that a
 * preemption on a busy host is not taken for the clocks' parting. */
static uint64_t guest_reads_at(const struct lull_pvclock *rec, uint64_t *host)
{
	uint64_t best = UINT64_MAX, guest = 0, at = 0;

	for (int i = 0; i < 8; i++) {
		uint64_t before = clock_now_ns(), g = guest_reads(rec);
		uint64_t after = clock_now_ns();

		if (after - before < best) {
			best = after - before;
			guest = g;
			at = before + best / 2;
		}
	}
	*host = at;
	return guest;
}

static void sleep_ms(long ms)
{
	const struct timespec t = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&t, NULL);
}

/* The first record of a vCPU said to run at hz, 20 ms old. */
static void written_20ms_ago(struct pvclock_src *src, struct lull_pvclock *rec,
			     uint64_t hz)
{
	offset_src(src, hz);
	pvclock_write(src, rec);
	cr_assert_eq(rec->version, 2, "the first record is the second version");
	sleep_ms(20);
}

/* A record told the TSC runs a ninth faster than it does counts its ns
 * slow and falls behind the host's clock: catch-up moves it forward to
 * the clock. */
Test(pvclock, a_record_that_lags_is_stepped_forward_to_the_host_clock)
{
	struct pvclock_src src;
	struct lull_pvclock rec = { 0 };
	uint64_t before, after, host;

	written_20ms_ago(&src, &rec, host_tsc_hz() * 10 / 9); /* ns come slow */
	before = guest_reads(&rec);
	cr_assert_lt(before, clock_now_ns(), "the record should lag by now");
	pvclock_catch_up(&src, &rec);
	cr_assert_eq(src.steps, 1);
	cr_assert_eq(rec.version % 2, 0, "a finished record");
	cr_assert_geq(guest_reads(&rec), before, "stepped back");
	after = guest_reads_at(&rec, &host);
	cr_assert_geq(after + 1000, host, "still behind the host's clock by %ld ns",
		      (long)(host - after));
}

Test(pvclock, a_record_that_leads_is_left_alone_by_catch_up)
{
	struct pvclock_src src;
	struct lull_pvclock rec = { 0 };

	written_20ms_ago(&src, &rec, host_tsc_hz() * 9 / 10); /* ns come fast */
	pvclock_catch_up(&src, &rec);
	cr_assert_eq(rec.version, 2, "a leading record was rewritten");
	cr_assert_eq(src.steps, 0);
}

/*
 * Told the TSC runs 5% faster than it does, as if NTP made the host's
 * clock 5% faster, and 5% slower: the next resync measures the host
 * clock's rate, and the new record continues the old one (no step back)
 * and runs at it; told slower, the old record ran 5% fast and leads by
 * ~30 ms, which the new one sheds at the most it may, 1/64. Whether the rate's multiplier at the nominal shift
 * would pass 2^32 depends on the host TSC's frequency (it does at 2.096
 * GHz for +5%): either way the record must follow the clock.
 */
Test(pvclock, resync_follows_the_host_clock_rate_and_never_steps_back)
{
	static const int claimed_ppm[] = { 50000, -50000 };
	/* over 0.1 s: the host's clock, and 1/64 less where a lead is shed */
	static const int64_t shed_ns[] = { 0, 100000000 / 64 };
	uint64_t hz = host_tsc_hz();
	struct pvclock_src src[2];
	struct lull_pvclock rec[2] = { 0 }, old;

	for (int i = 0; i < 2; i++) {
		int64_t ppm;

		offset_src(&src[i], hz + hz / 1000000 * claimed_ppm[i]);
		pvclock_write(&src[i], &rec[i]);
		cr_assert_not(pvclock_rate_ppm(&src[i], &ppm),
			      "a rate from one record: %ld ppm", (long)ppm);
	}
	sleep_ms(600);
	for (int i = 0; i < 2; i++) {
		uint64_t start, host, now;
		int64_t ppm, ran;

		old = rec[i];
		pvclock_write(&src[i], &rec[i]);
		cr_assert(pvclock_rate_ppm(&src[i], &ppm), "no rate measured");
		cr_assert(ppm > claimed_ppm[i] - 5000 && ppm < claimed_ppm[i] + 5000,
			  "told %+d ppm, the host clock ran %ld ppm against "
			  "the nominal rate (host TSC %lu Hz)",
			  claimed_ppm[i], (long)ppm, hz);
		cr_assert_geq(rec[i].system_time,
			      old.system_time +
				      pvclock_delta_ns(rec[i].tsc_timestamp -
							       old.tsc_timestamp,
						       old.tsc_to_system_mul,
						       old.tsc_shift),
			      "the new record starts before the old one's reading");
		start = guest_reads_at(&rec[i], &host);
		sleep_ms(100);
		/* at the host clock's rate: within 100 us over 0.1 s (not 5 ms) */
		ran = (int64_t)(guest_reads_at(&rec[i], &now) - start);
		ran -= (int64_t)(now - host) - shed_ns[i];
		cr_assert(ran > -100000 && ran < 100000,
			  "told %+d ppm, over 0.1 s the record ran %ld ns more "
			  "than the host's clock less what it sheds of a lead",
			  claimed_ppm[i], (long)ran);
	}
}
