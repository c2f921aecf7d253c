// SPDX-License-Identifier: MIT
/*
 * abi: conformance suite for lull's hypercalls (lull_abi.h), bad
 * arguments included. One line per case, kvm-unit-tests style:
 *   PASS name          or   FAIL name: detail
 * and a summary "abi: PASS n/n" (or "abi: FAIL k/n failed"). Runs on
 * vCPU 0 (other vCPUs only serve as IPI targets for the bad-vCPU case);
 * lull only. Interrupts are off except inside the waiting helpers.
 *
 * No case depends on how fast the host is: under nested emulation an exit
 * takes a millisecond and a kick several. A wait for something that must
 * come gives up only after HANG_NS. "Nothing more came" is checked with a
 * fence (below) or with the shared-page counters after an exit, not by
 * waiting a while. A timer that must still be pending when the next
 * hypercall arrives is armed many measured round trips ahead, and the
 * case is retried with a longer lead when that call came back after the
 * deadline anyway.
 */
#include "guest.h"

#define VEC_A 0x60
#define VEC_B 0x61
#define VEC_C 0x62
#define VEC_FENCE 0x50 /* below every vector a case checks */
#define S_A 2 /* slots used by the cases (0 and 1 are Xen's) */
#define S_B 3
#define MS 1000000ull
#define US 1000ull
#define HANG_NS (2000 * MS) /* only a hang makes a wait this long */
#define TRIES 5 /* leads tried: lead_ns() and 4 doublings */

struct hits {
	uint64_t count, first, last;
};

static struct hits hits[256];
static unsigned passed, failed;
static unsigned fences_missed; /* fences not handled within HANG_NS */

static void on_irq(unsigned vector)
{
	struct hits *h = &hits[vector];
	uint64_t now = clock_ns();

	if (!h->count++)
		h->first = now;
	h->last = now;
}

static void reset_hits(void)
{
	memset(hits, 0, sizeof(hits));
}

/* Busy with interrupts on for ns: busy means timers fire on time. */
static void run_for(uint64_t ns)
{
	uint64_t until = clock_ns() + ns;

	sti();
	while (clock_ns() < until)
		cpu_relax();
	cli();
}

/*
 * Busy with interrupts on until vector v was handled n times; gives up
 * HANG_NS after due, when it should have come at the latest. True if it
 * came.
 */
static bool wait_hits(unsigned v, uint64_t n, uint64_t due)
{
	uint64_t until = due + HANG_NS;

	sti();
	while (READ_ONCE(hits[v].count) < n && clock_ns() < until)
		cpu_relax();
	cli();
	return hits[v].count >= n;
}

static bool wait_hit(unsigned v, uint64_t due)
{
	return wait_hits(v, 1, due);
}

/* lull writes the counters while this vCPU is out of the guest. */
static struct lull_slot_counters counters(unsigned slot)
{
	volatile struct lull_slot_counters *c = &shared_page()->slot[slot];

	return (struct lull_slot_counters){ c->delivered, c->merged };
}

/* Expirations of slot between two counter reads, merged ones included. */
static uint64_t expirations(struct lull_slot_counters a,
			    struct lull_slot_counters b)
{
	return (b.delivered - a.delivered) + (b.merged - a.merged);
}

/*
 * lull runs every timer that is due on each return to the VMM
 * (docs/architecture.md): once this hypercall is back, every expiry due
 * before it was made has happened and is counted in the shared page.
 */
static void host_catch_up(void)
{
	lull_nop();
}

/*
 * A one-shot on VEC_FENCE in slot at `when`, waited for with interrupts
 * on. Once it is handled, so is every expiry on a higher vector due no
 * later than `when`: that was raised in the same host advance as the fence
 * or an earlier one, and of the vectors owed at once the highest is
 * delivered first. It replaces "run a while longer and see that nothing
 * else came", which a slow host can fool. False only on a hang.
 */
static bool fence(unsigned slot, uint64_t when)
{
	hits[VEC_FENCE].count = 0;
	lull_timer_set(slot, when, VEC_FENCE, 0, 0, 0);
	if (wait_hit(VEC_FENCE, when))
		return true;
	fences_missed++;
	return false;
}

/* Everything raised so far is handled (after a try that was abandoned). */
static void flush(unsigned slot)
{
	fence(slot, clock_ns());
}

/* The slowest of a few hypercall round trips: what an exit costs now. */
static uint64_t hcall_rtt(void)
{
	uint64_t worst = 0;

	for (int i = 0; i < 4; i++) {
		uint64_t t = clock_ns();

		lull_nop();
		t = clock_ns() - t;
		if (t > worst)
			worst = t;
	}
	return worst;
}

/*
 * How far ahead to arm a timer that must still be pending when the next
 * hypercall or two (or the vCPU's halt, one exit too) reach lull. The
 * callers check afterwards that it was far enough and double it if not.
 */
static uint64_t lead_ns(void)
{
	uint64_t lead = 64 * hcall_rtt();

	return lead > 2 * MS ? lead : 2 * MS;
}

static void result(const char *name, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void result(const char *name, bool ok, const char *fmt, ...)
{
	char detail[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (ok) {
		passed++;
		printf("PASS %s\n", name);
	} else {
		failed++;
		printf("FAIL %s: %s\n", name, detail);
	}
}

#define EXPECT_RC(name, call, want)                                          \
	do {                                                                 \
		long rc_ = (call);                                           \
		result(name, rc_ == (long)(want), "%s returned %ld, want %ld", \
		       #call, rc_, (long)(want));                            \
	} while (0)

static void case_discovery(void)
{
	struct cpuid_regs sig = cpuid(LULL_CPUID_SIGNATURE, 0);

	result("cpuid_signature",
	       sig.ebx == LULL_SIGNATURE_EBX && sig.ecx == LULL_SIGNATURE_ECX &&
		       sig.edx == LULL_SIGNATURE_EDX &&
		       sig.eax >= LULL_CPUID_TIMING,
	       "max leaf %#x", sig.eax);
	result("cpuid_features",
	       (lull_info.features & (LULL_FEAT_PVCLOCK | LULL_FEAT_TIMERS |
				      LULL_FEAT_IPI)) ==
			       (LULL_FEAT_PVCLOCK | LULL_FEAT_TIMERS | LULL_FEAT_IPI) &&
		       lull_info.hcall_port == LULL_HCALL_PORT &&
		       lull_info.nr_slots >= 4 &&
		       lull_info.nr_slots <= LULL_MAX_SLOTS &&
		       lull_info.nr_vcpus == smp_count(),
	       "features %#x port %#x slots %u vcpus %u",
	       lull_info.features, lull_info.hcall_port, lull_info.nr_slots,
	       lull_info.nr_vcpus);
	result("cpuid_timing",
	       lull_info.abi_version == LULL_ABI_VERSION &&
		       lull_info.period_floor_ns == LULL_PERIOD_FLOOR_NS &&
		       lull_info.missed_policy <= LULL_MISSED_NONE &&
		       lull_info.timer_mode <= LULL_MODE_STRICT,
	       "version %u floor %u policy %u mode %u",
	       lull_info.abi_version, lull_info.period_floor_ns,
	       lull_info.missed_policy, lull_info.timer_mode);
	result("missed_ticks_policy_reported",
	       lull_info.missed_policy <= LULL_MISSED_NONE, "ecx %u",
	       lull_info.missed_policy);
	printf("abi: missed-ticks policy %s, timer mode %s, %u slots, %u vcpus\n",
	       lull_info.missed_policy == LULL_MISSED_ONE ? "one" :
	       lull_info.missed_policy == LULL_MISSED_ALL ? "all" : "none",
	       lull_info.timer_mode == LULL_MODE_STRICT ? "strict" : "deferrable",
	       lull_info.nr_slots, lull_info.nr_vcpus);
}

static void case_nop_and_unknown(void)
{
	EXPECT_RC("nop_returns_version", lull_nop(), LULL_ABI_VERSION);
	EXPECT_RC("unknown_op_max_plus_1",
		  lull_hcall(LULL_HC_MAX + 1, 0, 0, 0, 0, 0, 0), -LULL_ENOSYS);
	EXPECT_RC("unknown_op_huge", lull_hcall(~0ull, 0, 0, 0, 0, 0, 0),
		  -LULL_ENOSYS);
	/* a valid op number in eax with high bits set is still unknown */
	EXPECT_RC("unknown_op_high_bits",
		  lull_hcall((1ull << 32) | LULL_HC_NOP, 0, 0, 0, 0, 0, 0),
		  -LULL_ENOSYS);
}

static void case_shared_page(void)
{
	uint64_t own = (uintptr_t)shared_page();
	uint64_t ram = rt_boot.ram_end;
	uint64_t t0, t1;

	EXPECT_RC("shared_page_unaligned", lull_set_shared_page(own + 8),
		  -LULL_EFAULT);
	if (ram)
		EXPECT_RC("shared_page_outside_ram", lull_set_shared_page(ram),
			  -LULL_EFAULT);
	EXPECT_RC("shared_page_huge", lull_set_shared_page(~0xfffull),
		  -LULL_EFAULT);
	EXPECT_RC("shared_page_1ull<<52", lull_set_shared_page(1ull << 52),
		  -LULL_EFAULT);
	EXPECT_RC("shared_page_valid", lull_set_shared_page(own), 0);
	result("shared_page_fields",
	       shared_page()->vcpu_id == smp_id() &&
		       shared_page()->nr_slots == lull_info.nr_slots,
	       "vcpu_id %u nr_slots %u", shared_page()->vcpu_id,
	       shared_page()->nr_slots);
	t0 = clock_ns();
	run_for(2 * MS);
	t1 = clock_ns();
	result("pvclock_advances",
	       !(shared_page()->clock.version & 1) && t1 >= t0 + 2 * MS &&
		       t1 < t0 + HANG_NS,
	       "version %u, %lu ns in a 2 ms busy wait",
	       shared_page()->clock.version, t1 - t0);
	/* docs/abi.md: lull's records never promise cross-vCPU exactness */
	result("pvclock_not_tsc_stable",
	       !(shared_page()->clock.flags & LULL_PVCLOCK_TSC_STABLE),
	       "pvclock flags %#x", shared_page()->clock.flags);
	printf("abi: invariant TSC %s\n",
	       cpuid(0x80000007, 0).edx & (1u << 8) ? "yes" : "no");
}

static void case_timer_set_bad_args(void)
{
	uint64_t later = clock_ns() + 1000 * MS;
	unsigned n = lull_info.nr_slots;

	EXPECT_RC("timer_set_slot_eq_nr_slots",
		  lull_timer_set(n, later, VEC_A, 0, 0, 0), -LULL_EINVAL);
	EXPECT_RC("timer_set_slot_huge",
		  lull_timer_set(~0ull, later, VEC_A, 0, 0, 0), -LULL_EINVAL);
	EXPECT_RC("timer_set_vector_31",
		  lull_timer_set(S_A, later, 31, 0, 0, 0), -LULL_EINVAL);
	EXPECT_RC("timer_set_vector_256",
		  lull_timer_set(S_A, later, 256, 0, 0, 0), -LULL_EINVAL);
	EXPECT_RC("timer_set_vector_0", lull_timer_set(S_A, later, 0, 0, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("timer_set_unknown_flag_bit3",
		  lull_timer_set(S_A, later, VEC_A, 1u << 3, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("timer_set_unknown_flag_bit63",
		  lull_timer_set(S_A, later, VEC_A, 1ull << 63, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("timer_set_periodic_period_0",
		  lull_timer_set(S_A, later, VEC_A, LULL_TIMER_PERIODIC, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("timer_stop_bad_slot", lull_timer_stop(n), -LULL_EINVAL);
	EXPECT_RC("timer_stop_idle_after_bad_sets", lull_timer_stop(S_A), 0);
	/* the edges of the vector range are valid */
	EXPECT_RC("timer_set_vector_32", lull_timer_set(S_A, later, 32, 0, 0, 0),
		  0);
	EXPECT_RC("timer_set_vector_255",
		  lull_timer_set(S_A, later, 255, 0, 0, 0), 0);
	lull_timer_stop(S_A);
}

static void case_period_floor(void)
{
	struct lull_slot_counters c0 = counters(S_A), c1;
	uint64_t t_set, t_stop, limit, n;
	long rc;

	reset_hits();
	t_set = clock_ns();
	rc = lull_timer_set(S_A, t_set + 1000, VEC_A, LULL_TIMER_PERIODIC,
			    1000, 0); /* 1 µs: below the floor */
	run_for(20 * MS);
	/* a slow host may not have delivered two yet: the limit scales */
	wait_hits(VEC_A, 2, clock_ns());
	lull_timer_stop(S_A);
	t_stop = clock_ns();
	c1 = counters(S_A);
	/* expiries at first + k * floor, first >= t_set, all before t_stop */
	limit = (t_stop - t_set) / LULL_PERIOD_FLOOR_NS + 2;
	n = expirations(c0, c1);
	result("period_below_floor_raised",
	       rc >= 0 && hits[VEC_A].count >= 2 && hits[VEC_A].count <= limit &&
		       n <= limit,
	       "rc %ld, %lu deliveries and %lu expirations in %lu ns (floor allows %lu)",
	       rc, hits[VEC_A].count, n, t_stop - t_set, limit);
	if (hits[VEC_A].count >= 2) {
		uint64_t mean = (hits[VEC_A].last - hits[VEC_A].first) /
				(hits[VEC_A].count - 1);

		result("period_floor_mean_spacing",
		       mean >= LULL_PERIOD_FLOOR_NS * 9 / 10,
		       "mean spacing %lu ns < floor %llu", mean,
		       LULL_PERIOD_FLOOR_NS);
	}
	flush(S_B); /* a tick owed at the stop */
}

/*
 * "At once" needs no time to pass: the expiry is run and counted before
 * TIMER_SET returns (lull runs what is due before it enters the guest
 * again); delivery then waits only for IF=1.
 */
static void fires_at_once(const char *name, uint64_t deadline)
{
	struct lull_slot_counters c0, c1;
	long rc;

	reset_hits();
	c0 = counters(S_A);
	rc = lull_timer_set(S_A, deadline, VEC_A, 0, 0, 0);
	c1 = counters(S_A);
	result(name,
	       rc >= 0 && expirations(c0, c1) == 1 &&
		       wait_hit(VEC_A, clock_ns()),
	       "rc %ld, counted delivered +%lu merged +%lu when TIMER_SET returned, handled %lu",
	       rc, c1.delivered - c0.delivered, c1.merged - c0.merged,
	       hits[VEC_A].count);
}

static void case_deadlines(void)
{
	uint64_t now;
	long rc;

	/*
	 * Where the host's TSC is unstable the guest clock may lead lull's
	 * by a few ms (docs/abi.md, the TSC-stable flag): "in the past" is
	 * taken well beyond that, so it is past on both clocks.
	 */
	fires_at_once("deadline_in_past_fires_at_once", clock_ns() - 50 * MS);
	fires_at_once("deadline_zero_fires_at_once", 0);

	/* still pending after 20 ms and an exit that ran all that was due */
	reset_hits();
	rc = lull_timer_set(S_A, ~0ull, VEC_A, 0, 0, 0);
	run_for(20 * MS);
	host_catch_up();
	result("deadline_uint64_max_clamped",
	       rc >= 0 && hits[VEC_A].count == 0 && lull_timer_stop(S_A) == 1,
	       "rc %ld, fired %lu (a wrapped deadline fires at once)", rc,
	       hits[VEC_A].count);
	reset_hits();
	rc = lull_timer_set(S_A, clock_ns() + (1ull << 62), VEC_A,
			    LULL_TIMER_PERIODIC, ~0ull, ~0ull);
	run_for(10 * MS);
	host_catch_up();
	result("huge_deadline_period_tolerance_clamped",
	       rc >= 0 && hits[VEC_A].count == 0 && lull_timer_stop(S_A) == 1,
	       "rc %ld, fired %lu", rc, hits[VEC_A].count);

	reset_hits();
	now = clock_ns();
	rc = lull_timer_set(S_A, now + 2 * MS, VEC_A, 0, 0, 500 * US);
	result("tolerance_not_early",
	       rc >= 0 && wait_hit(VEC_A, now + 2 * MS) &&
		       hits[VEC_A].first >= now + 2 * MS,
	       "rc %ld, fired %lu at +%lu ns", rc, hits[VEC_A].count,
	       hits[VEC_A].first - now);
}

static void case_stop_and_rearm(void)
{
	struct lull_slot_counters c0, c1;
	uint64_t lead = lead_ns(), now, done;
	long rc;

	/*
	 * The stop must reach lull before the deadline, or lull rightly
	 * fires the timer first: that try proves nothing and is repeated
	 * with twice the lead. done is read after the stop came back, so
	 * done < deadline means lull handled it in time.
	 */
	for (int i = 0;; i++) {
		reset_hits();
		c0 = counters(S_A);
		now = clock_ns();
		lull_timer_set(S_A, now + lead, VEC_A, 0, 0, 0);
		rc = lull_timer_stop(S_A);
		done = clock_ns();
		if (done < now + lead || i == TRIES - 1)
			break;
		flush(S_B);
		lead *= 2;
	}
	result("timer_stop_pending_returns_1", rc == 1,
	       "returned %ld; the stop came back %ld ns before the deadline",
	       rc, (long)(now + lead - done));
	EXPECT_RC("timer_stop_idle_returns_0", lull_timer_stop(S_A), 0);
	fence(S_B, now + 2 * lead);
	c1 = counters(S_A);
	result("stopped_timer_does_not_fire",
	       hits[VEC_A].count == 0 && expirations(c0, c1) == 0,
	       "fired %lu times, %lu expirations", hits[VEC_A].count,
	       expirations(c0, c1));

	/* the re-arm must reach lull before the old deadline, as above */
	lead = lead_ns();
	for (int i = 0;; i++) {
		reset_hits();
		now = clock_ns();
		lull_timer_set(S_A, now + lead, VEC_A, 0, 0, 0);
		rc = lull_timer_set(S_A, now + 2 * lead, VEC_B, 0, 0, 0);
		done = clock_ns();
		if (done < now + lead || i == TRIES - 1)
			break;
		lull_timer_stop(S_A);
		flush(S_B);
		lead *= 2;
	}
	wait_hit(VEC_B, now + 2 * lead);
	fence(S_B, now + 3 * lead); /* the old one, or the new one again */
	result("rearm_replaces",
	       rc >= 0 && done < now + lead && hits[VEC_A].count == 0 &&
		       hits[VEC_B].count == 1 &&
		       hits[VEC_B].first >= now + 2 * lead,
	       "old vector fired %lu, new fired %lu at +%lu ns (old due at +%lu, new at +%lu, re-armed at +%lu)",
	       hits[VEC_A].count, hits[VEC_B].count, hits[VEC_B].first - now,
	       lead, 2 * lead, done - now);
	EXPECT_RC("oneshot_idle_after_firing", lull_timer_stop(S_A), 0);

	/* one-shot: not early, once */
	reset_hits();
	now = clock_ns();
	rc = lull_timer_set(S_B, now + 3 * MS, VEC_C, 0, 0, 0);
	wait_hit(VEC_C, now + 3 * MS);
	fence(S_A, now + 6 * MS);
	result("oneshot_fires_once_not_early",
	       rc >= 0 && hits[VEC_C].count == 1 &&
		       hits[VEC_C].first >= now + 3 * MS,
	       "fired %lu at +%lu ns", hits[VEC_C].count,
	       hits[VEC_C].first - now);
}

static void case_ipi(void)
{
	reset_hits();
	EXPECT_RC("ipi_self_returns_0", lull_send_ipi(smp_id(), VEC_A), 0);
	result("ipi_self_delivered", wait_hit(VEC_A, clock_ns()),
	       "not delivered");
	EXPECT_RC("ipi_bad_vcpu", lull_send_ipi(smp_count(), VEC_A),
		  -LULL_ESRCH);
	EXPECT_RC("ipi_bad_vcpu_huge", lull_send_ipi(~0ull, VEC_A),
		  -LULL_ESRCH);
	EXPECT_RC("ipi_bad_vector", lull_send_ipi(smp_id(), 31), -LULL_EINVAL);
}

static void case_xen(void)
{
	const unsigned s0 = LULL_XEN_SINGLESHOT_SLOT, s1 = LULL_XEN_PERIODIC_SLOT;
	struct lull_slot_counters c0, c1, c_sync;
	uint64_t now, set, lead, done, sync, period = MS, lo, hi;
	long rc;

	reset_hits();
	now = clock_ns();
	rc = lull_xen_set_singleshot(now + 2 * MS, VEC_A);
	wait_hit(VEC_A, now + 2 * MS);
	fence(S_A, now + 4 * MS);
	result("xen_singleshot_fires_once",
	       rc >= 0 && hits[VEC_A].count == 1 &&
		       hits[VEC_A].first >= now + 2 * MS,
	       "rc %ld, fired %lu at +%lu ns", rc, hits[VEC_A].count,
	       hits[VEC_A].first - now);
	EXPECT_RC("xen_singleshot_uses_slot_0_idle_after",
		  lull_timer_stop(s0), 0);

	/* the stop must reach lull before the deadline (case_stop_and_rearm) */
	lead = lead_ns();
	for (int i = 0;; i++) {
		reset_hits();
		c0 = counters(s0);
		now = clock_ns();
		lull_xen_set_singleshot(now + lead, VEC_A);
		rc = lull_xen_stop_singleshot();
		done = clock_ns();
		if (done < now + lead || i == TRIES - 1)
			break;
		flush(S_A);
		lead *= 2;
	}
	fence(S_A, now + 2 * lead);
	c1 = counters(s0);
	result("xen_stop_singleshot",
	       rc == 1 && hits[VEC_A].count == 0 && expirations(c0, c1) == 0,
	       "rc %ld, fired %lu, %lu expirations (stopped %ld ns before the deadline)",
	       rc, hits[VEC_A].count, expirations(c0, c1),
	       (long)(now + lead - done));
	reset_hits();
	lull_xen_set_singleshot(clock_ns() + HANG_NS, VEC_A);
	EXPECT_RC("xen_singleshot_is_slot_0", lull_timer_stop(s0), 1);
	EXPECT_RC("xen_singleshot_bad_vector",
		  lull_xen_set_singleshot(clock_ns() + MS, 7), -LULL_EINVAL);

	/*
	 * Periodic, first tick one period after the set. A slow host may
	 * deliver late ticks merged, so the rate is checked on the counters:
	 * after host_catch_up() every tick due before it is counted, and no
	 * tick can be counted before it is due.
	 */
	reset_hits();
	c0 = counters(s1);
	now = clock_ns();
	rc = lull_xen_set_periodic(period, VEC_B);
	set = clock_ns();
	wait_hits(VEC_B, 5, set + 5 * period);
	sync = clock_ns();
	host_catch_up();
	c_sync = counters(s1);
	rc = rc < 0 ? rc : lull_timer_stop(s1);
	done = clock_ns();
	c1 = counters(s1);
	/* ticks at set' + k * period, k >= 1, set' in [now, set] */
	lo = (sync - set) / period;
	lo = lo ? lo - 1 : 0; /* the wheel may run a tick up to a tick late */
	hi = (done - now) / period;
	/*
	 * Counted by the host's clock, read by the guest's: where the TSC
	 * is not stable the guest's record runs, between two anchors, at a
	 * measured rate that may be up to 1/8 off (docs/architecture.md,
	 * "Time"; a delivered tick steps it forward first, a counted one
	 * does not), so the counters may lead the guest's clock by that:
	 * a clock 1/8 slow shows 7/8 of the host's time, which is then 8/7
	 * of what the guest read.
	 */
	if (!(shared_page()->clock.flags & LULL_PVCLOCK_TSC_STABLE))
		hi = (done - now + (done - now) / 7) / period;
	result("xen_periodic_ticks",
	       rc == 1 && hits[VEC_B].count >= 5 &&
		       hits[VEC_B].first >= now + period &&
		       expirations(c0, c_sync) >= lo &&
		       expirations(c0, c1) <= hi &&
		       hits[VEC_B].count <= expirations(c0, c1),
	       "rc %ld, %lu handled, %lu ticks by +%lu ns (want >= %lu), %lu by +%lu ns (want <= %lu), first at +%lu ns",
	       rc, hits[VEC_B].count, expirations(c0, c_sync), sync - now, lo,
	       expirations(c0, c1), done - now, hi, hits[VEC_B].first - now);
	result("xen_periodic_is_slot_1", rc == 1,
	       "TIMER_STOP(1) returned %ld, want 1", rc);
	flush(S_A);

	/* interrupts are off: a tick before the stop is owed, once */
	lull_xen_set_periodic(period, VEC_B);
	rc = lull_xen_stop_periodic();
	c0 = counters(s1);
	reset_hits();
	fence(S_A, clock_ns() + 5 * period);
	c1 = counters(s1);
	result("xen_stop_periodic",
	       rc >= 0 && hits[VEC_B].count <= 1 && expirations(c0, c1) == 0,
	       "rc %ld, %lu ticks handled and %lu expired after the stop", rc,
	       hits[VEC_B].count, expirations(c0, c1));
	EXPECT_RC("xen_periodic_idle_after_stop", lull_timer_stop(s1), 0);
	EXPECT_RC("xen_periodic_bad_vector", lull_xen_set_periodic(MS, 256),
		  -LULL_EINVAL);
}

static void case_counters(void)
{
	struct lull_slot_counters c0, c1;
	uint64_t now, until;

	/* one hard one-shot: exactly one delivery */
	reset_hits();
	c0 = counters(S_B);
	now = clock_ns();
	lull_timer_set(S_B, now + MS, VEC_C, 0, 0, 0);
	wait_hit(VEC_C, now + MS);
	fence(S_A, now + 2 * MS);
	c1 = counters(S_B);
	result("counter_delivered_oneshot",
	       c1.delivered - c0.delivered == 1 && c1.merged == c0.merged,
	       "delivered +%lu merged +%lu", c1.delivered - c0.delivered,
	       c1.merged - c0.merged);

	/*
	 * A periodic timer at the floor while interrupts are off: every
	 * expiry after the first finds its vector still owed and merges.
	 * Expiries happen when lull kicks the vCPU, which a slow host does
	 * late: spin until the counters show ten merges, however long that
	 * takes short of a hang.
	 */
	reset_hits();
	c0 = counters(S_B);
	now = clock_ns();
	until = now + HANG_NS;
	lull_timer_set(S_B, now + LULL_PERIOD_FLOOR_NS, VEC_C,
		       LULL_TIMER_PERIODIC, LULL_PERIOD_FLOOR_NS, 0);
	while (counters(S_B).merged - c0.merged < 10 && clock_ns() < until)
		cpu_relax(); /* interrupts off */
	lull_timer_stop(S_B);
	wait_hit(VEC_C, clock_ns()); /* the owed delivery, once IF=1 */
	flush(S_A);
	c1 = counters(S_B);
	result("counter_merged_while_masked",
	       c1.merged - c0.merged >= 10 && hits[VEC_C].count >= 1 &&
		       hits[VEC_C].count <= 2 &&
		       c1.delivered - c0.delivered >= hits[VEC_C].count,
	       "delivered +%lu merged +%lu handled %lu in %lu ns",
	       c1.delivered - c0.delivered, c1.merged - c0.merged,
	       hits[VEC_C].count, clock_ns() - now);
}

static void case_deferrable(void)
{
	bool strict = lull_info.timer_mode == LULL_MODE_STRICT;
	uint64_t now, lead, halt_at, wake_at;
	bool held_up;

	/*
	 * busy: a deferrable timer fires on time. Nothing else is armed and
	 * the busy loop makes no exit, so only lull's kick for this timer
	 * can bring it in; deferred, it would never come.
	 */
	reset_hits();
	now = clock_ns();
	lull_timer_set(S_A, now + 2 * MS, VEC_A, LULL_TIMER_DEFERRABLE, 0, 0);
	wait_hit(VEC_A, now + 2 * MS);
	result("deferrable_busy_on_time",
	       hits[VEC_A].count == 1 && hits[VEC_A].first >= now + 2 * MS,
	       "fired %lu at +%lu ns", hits[VEC_A].count,
	       hits[VEC_A].first - now);

	/*
	 * halted: a deferrable timer A must not wake the vCPU; it comes
	 * with the hard timer B that does, after it (B's vector is higher).
	 * Strict mode: A is hard and wakes the vCPU on its own, B (far
	 * off) is still pending then. Only a vCPU halted before A is due
	 * tests that: it halts one exit after halt_at, so a try in which
	 * less than half the lead (>= 32 round trips) was left at halt_at
	 * is repeated with twice the lead. So is one in which A came more
	 * than half the lead after it was due, ahead of B: the halt reached
	 * the host only then (a host that held the vCPU up between halt_at
	 * and the HLT's exit), and an A already due is taken with it. A
	 * deferrable timer that woke the host would come within the slop.
	 */
	lead = lead_ns();
	for (int i = 0;; i++) {
		reset_hits();
		now = clock_ns();
		wake_at = now + (strict ? HANG_NS : 2 * lead);
		lull_timer_set(S_A, now + lead, VEC_A, LULL_TIMER_DEFERRABLE,
			       0, 0);
		lull_timer_set(S_B, wake_at, VEC_B, 0, 0, 0);
		halt_at = clock_ns();
		while (!READ_ONCE(hits[VEC_B].count) &&
		       !(strict && READ_ONCE(hits[VEC_A].count))) {
			sti_hlt();
			cli();
		}
		if (!strict)
			wait_hit(VEC_A, clock_ns());
		held_up = !strict && hits[VEC_A].count &&
			  hits[VEC_A].first < hits[VEC_B].first &&
			  hits[VEC_A].first > now + lead + lead / 2;
		if ((halt_at + lead / 2 <= now + lead && !held_up) ||
		    i == TRIES - 1)
			break;
		lull_timer_stop(S_A);
		lull_timer_stop(S_B);
		flush(S_A);
		lead *= 2;
	}
	if (strict)
		result("deferrable_halted_strict_on_time",
		       hits[VEC_A].count == 1 && hits[VEC_B].count == 0 &&
			       hits[VEC_A].first >= now + lead &&
			       lull_timer_stop(S_B) == 1,
		       "fired %lu at +%lu ns (due at +%lu, halted at +%lu), hard timer %lu",
		       hits[VEC_A].count, hits[VEC_A].first - now, lead,
		       halt_at - now, hits[VEC_B].count);
	else
		result("deferrable_halted_waits_for_wake",
		       hits[VEC_A].count == 1 &&
			       hits[VEC_A].first >= hits[VEC_B].first &&
			       hits[VEC_A].first >= wake_at,
		       "fired %lu at +%lu ns (due at +%lu, halted at +%lu, hard wake at +%lu)",
		       hits[VEC_A].count, hits[VEC_A].first - now, lead,
		       halt_at - now, wake_at - now);
}

/* ---- the upcall (docs/abi.md "Upcall delivery") ---- */

#define U_A 4 /* upcall-bound slots */
#define U_B 5
#define U_C 6

static uint64_t slot_hits[LULL_MAX_SLOTS];
/* U_A's function arms this slot due now and exits, mid-scan; 0: none */
static unsigned arm_in_scan;

static void on_slot(unsigned slot)
{
	slot_hits[slot]++;
	if (slot == U_A && arm_in_scan) {
		unsigned s = arm_in_scan;

		uint64_t until = clock_ns() + HANG_NS;

		arm_in_scan = 0;
		lull_timer_set(s, clock_ns(), 0, LULL_TIMER_UPCALL, 0, 0);
		/* each exit runs the wheel: s expires at one of them */
		while (!(__atomic_load_n(&shared_page()->upcall_bits[0],
					 __ATOMIC_SEQ_CST) &
			 (1ull << s)) &&
		       clock_ns() < until)
			host_catch_up();
	}
}

static void reset_slot_hits(void)
{
	memset(slot_hits, 0, sizeof(slot_hits));
}

/* Busy with interrupts on until `slot` was dispatched n times, or a hang. */
static bool wait_slot(unsigned slot, uint64_t n, uint64_t due)
{
	uint64_t until = due + HANG_NS;

	sti();
	while (READ_ONCE(slot_hits[slot]) < n && clock_ns() < until)
		cpu_relax();
	cli();
	return slot_hits[slot] >= n;
}

static uint64_t read_pending(void)
{
	return __atomic_load_n(&shared_page()->upcall_pending,
			       __ATOMIC_SEQ_CST);
}

static uint64_t read_bits(void)
{
	return __atomic_load_n(&shared_page()->upcall_bits[0],
			       __ATOMIC_SEQ_CST);
}

static void case_upcall_args(void)
{
	uint64_t later = clock_ns() + 1000 * MS;

	result("upcall_feature_bit",
	       (lull_info.features & LULL_FEAT_UPCALL) != 0, "features %#x",
	       lull_info.features);
	EXPECT_RC("upcall_flag_without_vector",
		  lull_timer_set(U_A, later, 0, LULL_TIMER_UPCALL, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("upcall_vector_31", lull_set_upcall_vector(31), -LULL_EINVAL);
	EXPECT_RC("upcall_vector_256", lull_set_upcall_vector(256),
		  -LULL_EINVAL);
	EXPECT_RC("upcall_vector_high_bits",
		  lull_set_upcall_vector((1ull << 32) | UPCALL_VECTOR),
		  -LULL_EINVAL);
	EXPECT_RC("upcall_vector_valid", upcall_init(), 0);
	EXPECT_RC("upcall_vector_unset", lull_set_upcall_vector(0), 0);
	EXPECT_RC("upcall_flag_after_unset",
		  lull_timer_set(U_A, later, 0, LULL_TIMER_UPCALL, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("upcall_vector_again", lull_set_upcall_vector(UPCALL_VECTOR),
		  0);
	EXPECT_RC("upcall_flag_with_a_vector",
		  lull_timer_set(U_A, later, VEC_A, LULL_TIMER_UPCALL, 0, 0),
		  -LULL_EINVAL);
	EXPECT_RC("upcall_flag_bound",
		  lull_timer_set(U_A, later, 0, LULL_TIMER_UPCALL, 0, 0), 0);
	EXPECT_RC("upcall_bound_slot_stops", lull_timer_stop(U_A), 1);
}

/* Two slots due together, interrupts on: both bits, one upcall. */
static void case_upcall_two_slots(void)
{
	struct lull_slot_counters a0, b0, a1, b1;
	uint64_t up0, now, due, lead = lead_ns();

	/* both must be armed before they are due: then one advance runs both */
	for (int i = 0;; i++) {
		a0 = counters(U_A);
		b0 = counters(U_B);
		up0 = upcall_count();
		reset_slot_hits();
		now = clock_ns();
		due = now + lead;
		lull_timer_set(U_A, due, 0, LULL_TIMER_UPCALL, 0, 0);
		lull_timer_set(U_B, due, 0, LULL_TIMER_UPCALL, 0, 0);
		if (clock_ns() < due || i == TRIES - 1)
			break;
		wait_slot(U_B, 1, due);
		flush(S_A);
		lead *= 2;
	}
	wait_slot(U_A, 1, due);
	wait_slot(U_B, 1, due);
	fence(S_A, due + MS);
	a1 = counters(U_A);
	b1 = counters(U_B);
	result("upcall_two_slots_one_upcall",
	       slot_hits[U_A] == 1 && slot_hits[U_B] == 1 &&
		       upcall_count() - up0 == 1 &&
		       slot_hits[U_A - 1] + slot_hits[U_C] == 0,
	       "dispatched A %lu B %lu in %lu upcall(s)", slot_hits[U_A],
	       slot_hits[U_B], upcall_count() - up0);
	result("upcall_counters_exact",
	       a1.delivered - a0.delivered == 1 && a1.merged == a0.merged &&
		       b1.delivered - b0.delivered == 1 &&
		       b1.merged == b0.merged,
	       "A delivered +%lu merged +%lu, B delivered +%lu merged +%lu",
	       a1.delivered - a0.delivered, a1.merged - a0.merged,
	       b1.delivered - b0.delivered, b1.merged - b0.merged);
	result("upcall_acked_and_taken", read_pending() == 0 && read_bits() == 0,
	       "pending %lu bits %#lx", read_pending(), read_bits());
}

/*
 * Due while interrupts are off: the first expiry sets pending and raises,
 * the others only set their bits. sti: exactly one upcall takes them all.
 */
static void case_upcall_masked(void)
{
	uint64_t up0 = upcall_count(), now = clock_ns(), until;
	uint64_t want = (1ull << U_A) | (1ull << U_B) | (1ull << U_C);
	uint64_t bits, pending;

	reset_slot_hits();
	lull_timer_set(U_A, now + 1 * MS, 0, LULL_TIMER_UPCALL, 0, 0);
	lull_timer_set(U_B, now + 2 * MS, 0, LULL_TIMER_UPCALL, 0, 0);
	lull_timer_set(U_C, now + 3 * MS, 0, LULL_TIMER_UPCALL, 0, 0);
	until = now + HANG_NS;
	while ((read_bits() & want) != want && clock_ns() < until)
		host_catch_up(); /* interrupts off: each exit runs the wheel */
	bits = read_bits();
	pending = read_pending();
	wait_slot(U_C, 1, clock_ns());
	fence(S_A, clock_ns());
	result("upcall_while_masked_one_upcall",
	       (bits & want) == want && pending == 1 &&
		       upcall_count() - up0 == 1 && slot_hits[U_A] == 1 &&
		       slot_hits[U_B] == 1 && slot_hits[U_C] == 1,
	       "bits %#lx pending %lu, then %lu upcall(s): A %lu B %lu C %lu",
	       bits, pending, upcall_count() - up0, slot_hits[U_A],
	       slot_hits[U_B], slot_hits[U_C]);
}

/*
 * An expiry after the handler's ack, while it scans: U_A's function arms
 * U_B due now and exits. U_B's bit lands in a word the scan already took,
 * so a second upcall must bring it: dispatched once, not lost.
 */
static void case_upcall_expiry_during_scan(void)
{
	struct lull_slot_counters b0 = counters(U_B), b1;
	uint64_t up0 = upcall_count(), empty0 = upcall_empty();
	uint64_t now = clock_ns();

	reset_slot_hits();
	arm_in_scan = U_B;
	lull_timer_set(U_A, now + MS, 0, LULL_TIMER_UPCALL, 0, 0);
	wait_slot(U_A, 1, now + MS);
	wait_slot(U_B, 1, clock_ns());
	fence(S_A, clock_ns());
	b1 = counters(U_B);
	result("upcall_expiry_during_scan_not_lost",
	       slot_hits[U_A] == 1 && slot_hits[U_B] == 1 &&
		       upcall_count() - up0 == 2 &&
		       upcall_empty() == empty0 &&
		       b1.delivered - b0.delivered == 1 &&
		       b1.merged == b0.merged,
	       "A %lu B %lu in %lu upcall(s), %lu empty, B delivered +%lu merged +%lu",
	       slot_hits[U_A], slot_hits[U_B], upcall_count() - up0,
	       upcall_empty() - empty0, b1.delivered - b0.delivered,
	       b1.merged - b0.merged);
}

/*
 * Acked with a bit still pending (the guest clears upcall_pending but
 * leaves the bits, interrupts off): the next expiry raises again, and the
 * one upcall takes both bits. Then an expiry onto a bit still set merges.
 */
static void case_upcall_ack_with_bits_pending(void)
{
	struct lull_slot_counters a0 = counters(U_A), a1;
	uint64_t up0 = upcall_count(), now = clock_ns(), until = now + HANG_NS;
	uint64_t pending_after;

	reset_slot_hits();
	lull_timer_set(U_A, now, 0, LULL_TIMER_UPCALL, 0, 0);
	while (!(read_bits() & (1ull << U_A)) && clock_ns() < until)
		host_catch_up();
	__atomic_store_n(&shared_page()->upcall_pending, 0, __ATOMIC_SEQ_CST);
	lull_timer_set(U_B, clock_ns(), 0, LULL_TIMER_UPCALL, 0, 0);
	while (!(read_bits() & (1ull << U_B)) && clock_ns() < until)
		host_catch_up();
	pending_after = read_pending();
	/* U_A again while its bit is still set: merged, no new raise */
	lull_timer_set(U_A, clock_ns(), 0, LULL_TIMER_UPCALL, 0, 0);
	while (counters(U_A).merged == a0.merged && clock_ns() < until)
		host_catch_up();
	a1 = counters(U_A);
	wait_slot(U_B, 1, clock_ns());
	fence(S_A, clock_ns());
	result("upcall_ack_with_bits_pending",
	       pending_after == 1 && upcall_count() - up0 == 1 &&
		       slot_hits[U_A] == 1 && slot_hits[U_B] == 1,
	       "pending %lu after the second expiry; %lu upcall(s): A %lu B %lu",
	       pending_after, upcall_count() - up0, slot_hits[U_A],
	       slot_hits[U_B]);
	result("upcall_expiry_onto_set_bit_merges",
	       a1.delivered - a0.delivered == 1 && a1.merged - a0.merged == 1,
	       "A delivered +%lu merged +%lu", a1.delivered - a0.delivered,
	       a1.merged - a0.merged);
}

/* Unset, the upcall is masked: a bound slot's expiry is dropped, counted. */
static void case_upcall_unset_drops(void)
{
	struct lull_slot_counters a0, a1;
	uint64_t up0 = upcall_count(), lead = lead_ns(), due, until;

	/* the unset must reach lull before the deadline */
	for (int i = 0;; i++) {
		a0 = counters(U_A);
		reset_slot_hits();
		due = clock_ns() + lead;
		lull_timer_set(U_A, due, 0, LULL_TIMER_UPCALL, 0, 0);
		lull_set_upcall_vector(0);
		if (clock_ns() < due || i == TRIES - 1)
			break;
		lull_timer_stop(U_A);
		lull_set_upcall_vector(UPCALL_VECTOR);
		flush(S_A);
		up0 = upcall_count();
		lead *= 2;
	}
	until = due + HANG_NS;
	while (expirations(a0, counters(U_A)) == 0 && clock_ns() < until)
		host_catch_up();
	a1 = counters(U_A);
	fence(S_A, clock_ns());
	result("upcall_unset_drops_and_counts",
	       a1.delivered == a0.delivered && a1.merged - a0.merged == 1 &&
		       upcall_count() == up0 && slot_hits[U_A] == 0 &&
		       read_bits() == 0,
	       "delivered +%lu merged +%lu, %lu upcall(s), bits %#lx",
	       a1.delivered - a0.delivered, a1.merged - a0.merged,
	       upcall_count() - up0, read_bits());
	lull_set_upcall_vector(UPCALL_VECTOR);
}

/* A periodic vector slot beside an upcall slot: each keeps its delivery. */
static void case_upcall_beside_vector(void)
{
	uint64_t up0 = upcall_count(), now = clock_ns();

	reset_hits();
	reset_slot_hits();
	lull_timer_set(U_A, now + 2 * MS, 0, LULL_TIMER_UPCALL, 0, 0);
	lull_timer_set(S_B, now + 2 * MS, VEC_C, 0, 0, 0);
	wait_slot(U_A, 1, now + 2 * MS);
	wait_hit(VEC_C, now + 2 * MS);
	fence(S_A, now + 3 * MS);
	result("upcall_beside_vector_slot",
	       slot_hits[U_A] == 1 && hits[VEC_C].count == 1 &&
		       upcall_count() - up0 == 1 && !(read_bits() & (1ull << S_B)),
	       "upcall slot %lu, vector slot %lu, %lu upcall(s)",
	       slot_hits[U_A], hits[VEC_C].count, upcall_count() - up0);
}

static void case_upcall(void)
{
	upcall_bind(U_A, on_slot);
	upcall_bind(U_B, on_slot);
	upcall_bind(U_C, on_slot);
	case_upcall_args();
	case_upcall_two_slots();
	case_upcall_masked();
	case_upcall_expiry_during_scan();
	case_upcall_ack_with_bits_pending();
	case_upcall_unset_drops();
	case_upcall_beside_vector();
	printf("abi: upcalls %lu, of them empty %lu\n", upcall_count(),
	       upcall_empty());
}

#define MSR_APIC_BASE 0x1b
#define MSR_X2APIC(reg) (0x800 + (reg) / 16)
#define APIC_BASE_EXTD (1u << 10)
#define APIC_TPR 0x080
#define APIC_EOI 0x0b0
#define APIC_SVR 0x0f0
#define APIC_LVT_TIMER 0x320
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_DIV 0x3e0
#define VEC_APIC_TIMER 0x80 /* class 8: above the TPR below */
#define VEC_PV_UNDER_APIC 0x70

/* With the APIC software-enabled every delivery is in service until EOI. */
static void on_irq_eoi(unsigned vector)
{
	on_irq(vector);
	wrmsr(MSR_X2APIC(APIC_EOI), 0);
}

/*
 * lull's PV timers and the local APIC's own timer in one guest: with the
 * APIC software-enabled, a PV slot's vector obeys the TPR like any other
 * and needs an EOI, and both timers fire, neither early.
 */
static void case_apic_coexists(void)
{
	uint64_t now, pv_due, apic_due, held_at;
	bool held, both;

	if (!(cpuid(1, 0).ecx & (1u << 21))) {
		result("apic_and_pv_timers", false, "CPUID advertises no x2APIC");
		return;
	}
	reset_hits();
	irq_set_handler(VEC_APIC_TIMER, on_irq_eoi);
	irq_set_handler(VEC_PV_UNDER_APIC, on_irq_eoi);
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	wrmsr(MSR_X2APIC(APIC_SVR), 0x1ff);
	wrmsr(MSR_X2APIC(APIC_TPR), 0x70); /* holds back class 7 */

	now = clock_ns();
	pv_due = now + 2 * MS;
	apic_due = now + 4 * MS;
	lull_timer_set(S_A, pv_due, VEC_PV_UNDER_APIC, 0, 0, 0);
	wrmsr(MSR_X2APIC(APIC_TIMER_DIV), 0xb); /* divide by 1: 1 ns a count */
	wrmsr(MSR_X2APIC(APIC_LVT_TIMER), VEC_APIC_TIMER);
	wrmsr(MSR_X2APIC(APIC_TIMER_INIT), 4 * MS);
	wait_hit(VEC_APIC_TIMER, apic_due);
	held_at = clock_ns();
	held = hits[VEC_PV_UNDER_APIC].count == 0;
	wrmsr(MSR_X2APIC(APIC_TPR), 0);
	wait_hit(VEC_PV_UNDER_APIC, pv_due);
	both = hits[VEC_APIC_TIMER].count == 1 &&
	       hits[VEC_PV_UNDER_APIC].count == 1;
	result("apic_and_pv_timers",
	       held && both && hits[VEC_APIC_TIMER].first >= apic_due &&
		       hits[VEC_PV_UNDER_APIC].first >= held_at,
	       "held by TPR %d; APIC timer %lu at +%lu ns (due +%lu); PV %lu at +%lu (due +%lu)",
	       held, hits[VEC_APIC_TIMER].count,
	       hits[VEC_APIC_TIMER].first - now, apic_due - now,
	       hits[VEC_PV_UNDER_APIC].count,
	       hits[VEC_PV_UNDER_APIC].first - now, pv_due - now);
	/* back to the regime the other cases expect: no EOI */
	wrmsr(MSR_X2APIC(APIC_SVR), 0xff);
}

int guest_main(void)
{
	if (rt_boot.hv != HV_LULL) {
		printf("abi: SKIP needs lull (hv %s)\n", hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	for (unsigned v = VEC_A; v <= VEC_C; v++)
		irq_set_handler(v, on_irq);
	irq_set_handler(VEC_FENCE, on_irq);
	irq_set_handler(32, on_irq);
	irq_set_handler(255, on_irq);
	cli();

	case_discovery();
	case_nop_and_unknown();
	case_shared_page();
	printf("abi: hypercall round trip %lu ns\n", hcall_rtt());
	case_timer_set_bad_args();
	case_period_floor();
	case_deadlines();
	case_stop_and_rearm();
	case_ipi();
	case_xen();
	case_counters();
	case_deferrable();
	case_apic_coexists();
	case_upcall();

	for (unsigned s = 0; s < lull_info.nr_slots; s++)
		lull_timer_stop(s);
	/*
	 * Every fence came: no vector stayed owed for HANG_NS with
	 * interrupts on (an interrupt window that never opened).
	 */
	result("fences_delivered", fences_missed == 0,
	       "%u fence(s) not handled within %llu ns", fences_missed,
	       HANG_NS);
	result("no_unexpected_interrupts", irq_unexpected_count() == 0,
	       "%lu interrupt(s) on vectors without a handler",
	       irq_unexpected_count());
	if (failed) {
		printf("abi: FAIL %u/%u failed\n", failed, passed + failed);
		return 1;
	}
	printf("abi: PASS %u/%u\n", passed, passed);
	return 0;
}
