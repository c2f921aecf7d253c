// SPDX-License-Identifier: MIT
/*
 * abi: conformance suite for lull's hypercalls (lull_abi.h), bad
 * arguments included. One line per case, kvm-unit-tests style:
 *   PASS name          or   FAIL name: detail
 * and a summary "abi: PASS n/n" (or "abi: FAIL k/n failed"). Runs on
 * vCPU 0 (other vCPUs only serve as IPI targets for the bad-vCPU case);
 * lull only. Interrupts are off except inside the waiting helpers.
 */
#include "guest.h"

#define VEC_A 0x60
#define VEC_B 0x61
#define VEC_C 0x62
#define S_A 2 /* slots used by the cases (0 and 1 are Xen's) */
#define S_B 3
#define MS 1000000ull
#define US 1000ull

struct hits {
	uint64_t count, first, last;
};

static struct hits hits[256];
static unsigned passed, failed;

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

/* Busy with interrupts on until vector v hit or ns passed; true if hit. */
static bool wait_hit(unsigned v, uint64_t ns)
{
	uint64_t until = clock_ns() + ns;

	sti();
	while (!READ_ONCE(hits[v].count) && clock_ns() < until)
		cpu_relax();
	cli();
	return hits[v].count != 0;
}

static struct lull_slot_counters counters(unsigned slot)
{
	return shared_page()->slot[slot];
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
		       t1 < t0 + 1000 * MS,
	       "version %u, %lu ns in a 2 ms busy wait",
	       shared_page()->clock.version, t1 - t0);
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
	EXPECT_RC("timer_set_unknown_flag_bit2",
		  lull_timer_set(S_A, later, VEC_A, 1u << 2, 0, 0),
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
	uint64_t t_set, t_stop, limit, expirations;
	long rc;

	reset_hits();
	t_set = clock_ns();
	rc = lull_timer_set(S_A, t_set + 1000, VEC_A, LULL_TIMER_PERIODIC,
			    1000, 0); /* 1 µs: below the floor */
	run_for(20 * MS);
	lull_timer_stop(S_A);
	t_stop = clock_ns();
	c1 = counters(S_A);
	/* expiries at first + k * floor, first >= t_set, all before t_stop */
	limit = (t_stop - t_set) / LULL_PERIOD_FLOOR_NS + 2;
	expirations = (c1.delivered - c0.delivered) + (c1.merged - c0.merged);
	result("period_below_floor_raised",
	       rc >= 0 && hits[VEC_A].count >= 2 && hits[VEC_A].count <= limit &&
		       expirations <= limit,
	       "rc %ld, %lu deliveries and %lu expirations in %lu ns (floor allows %lu)",
	       rc, hits[VEC_A].count, expirations, t_stop - t_set, limit);
	if (hits[VEC_A].count >= 2) {
		uint64_t mean = (hits[VEC_A].last - hits[VEC_A].first) /
				(hits[VEC_A].count - 1);

		result("period_floor_mean_spacing",
		       mean >= LULL_PERIOD_FLOOR_NS * 9 / 10,
		       "mean spacing %lu ns < floor %llu", mean,
		       LULL_PERIOD_FLOOR_NS);
	}
}

static void case_deadlines(void)
{
	uint64_t now;
	long rc;

	reset_hits();
	now = clock_ns();
	rc = lull_timer_set(S_A, now - MS, VEC_A, 0, 0, 0);
	result("deadline_in_past_fires_at_once",
	       rc >= 0 && wait_hit(VEC_A, 5 * MS),
	       "rc %ld, fired %lu", rc, hits[VEC_A].count);
	reset_hits();
	rc = lull_timer_set(S_A, 0, VEC_A, 0, 0, 0);
	result("deadline_zero_fires_at_once", rc >= 0 && wait_hit(VEC_A, 5 * MS),
	       "rc %ld, fired %lu", rc, hits[VEC_A].count);

	reset_hits();
	rc = lull_timer_set(S_A, ~0ull, VEC_A, 0, 0, 0);
	run_for(20 * MS);
	result("deadline_uint64_max_clamped",
	       rc >= 0 && hits[VEC_A].count == 0 && lull_timer_stop(S_A) == 1,
	       "rc %ld, fired %lu (a wrapped deadline fires at once)", rc,
	       hits[VEC_A].count);
	reset_hits();
	rc = lull_timer_set(S_A, clock_ns() + (1ull << 62), VEC_A,
			    LULL_TIMER_PERIODIC, ~0ull, ~0ull);
	run_for(10 * MS);
	result("huge_deadline_period_tolerance_clamped",
	       rc >= 0 && hits[VEC_A].count == 0 && lull_timer_stop(S_A) == 1,
	       "rc %ld, fired %lu", rc, hits[VEC_A].count);

	reset_hits();
	now = clock_ns();
	rc = lull_timer_set(S_A, now + 2 * MS, VEC_A, 0, 0, 500 * US);
	result("tolerance_not_early",
	       rc >= 0 && wait_hit(VEC_A, 50 * MS) &&
		       hits[VEC_A].first >= now + 2 * MS,
	       "rc %ld, fired %lu at +%lu ns", rc, hits[VEC_A].count,
	       hits[VEC_A].first - now);
}

static void case_stop_and_rearm(void)
{
	uint64_t now;
	long rc;

	reset_hits();
	lull_timer_set(S_A, clock_ns() + 2 * MS, VEC_A, 0, 0, 0);
	EXPECT_RC("timer_stop_pending_returns_1", lull_timer_stop(S_A), 1);
	EXPECT_RC("timer_stop_idle_returns_0", lull_timer_stop(S_A), 0);
	run_for(5 * MS);
	result("stopped_timer_does_not_fire", hits[VEC_A].count == 0,
	       "fired %lu times", hits[VEC_A].count);

	reset_hits();
	now = clock_ns();
	lull_timer_set(S_A, now + 2 * MS, VEC_A, 0, 0, 0);
	rc = lull_timer_set(S_A, now + 4 * MS, VEC_B, 0, 0, 0);
	wait_hit(VEC_B, 50 * MS);
	run_for(2 * MS);
	result("rearm_replaces",
	       rc >= 0 && hits[VEC_A].count == 0 && hits[VEC_B].count == 1 &&
		       hits[VEC_B].first >= now + 4 * MS,
	       "old vector fired %lu, new fired %lu at +%lu ns",
	       hits[VEC_A].count, hits[VEC_B].count, hits[VEC_B].first - now);
	EXPECT_RC("oneshot_idle_after_firing", lull_timer_stop(S_A), 0);

	/* one-shot: not early, once */
	reset_hits();
	now = clock_ns();
	rc = lull_timer_set(S_B, now + 3 * MS, VEC_C, 0, 0, 0);
	wait_hit(VEC_C, 50 * MS);
	run_for(3 * MS);
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
	result("ipi_self_delivered", wait_hit(VEC_A, 5 * MS), "not delivered");
	EXPECT_RC("ipi_bad_vcpu", lull_send_ipi(smp_count(), VEC_A),
		  -LULL_ESRCH);
	EXPECT_RC("ipi_bad_vcpu_huge", lull_send_ipi(~0ull, VEC_A),
		  -LULL_ESRCH);
	EXPECT_RC("ipi_bad_vector", lull_send_ipi(smp_id(), 31), -LULL_EINVAL);
}

static void case_xen(void)
{
	uint64_t now;
	long rc;

	reset_hits();
	now = clock_ns();
	rc = lull_xen_set_singleshot(now + 2 * MS, VEC_A);
	wait_hit(VEC_A, 50 * MS);
	run_for(2 * MS);
	result("xen_singleshot_fires_once",
	       rc >= 0 && hits[VEC_A].count == 1 &&
		       hits[VEC_A].first >= now + 2 * MS,
	       "rc %ld, fired %lu at +%lu ns", rc, hits[VEC_A].count,
	       hits[VEC_A].first - now);
	EXPECT_RC("xen_singleshot_uses_slot_0_idle_after",
		  lull_timer_stop(LULL_XEN_SINGLESHOT_SLOT), 0);
	reset_hits();
	lull_xen_set_singleshot(clock_ns() + 2 * MS, VEC_A);
	rc = lull_xen_stop_singleshot();
	run_for(5 * MS);
	result("xen_stop_singleshot", rc >= 0 && hits[VEC_A].count == 0,
	       "rc %ld, fired %lu", rc, hits[VEC_A].count);
	reset_hits();
	lull_xen_set_singleshot(clock_ns() + 100 * MS, VEC_A);
	EXPECT_RC("xen_singleshot_is_slot_0",
		  lull_timer_stop(LULL_XEN_SINGLESHOT_SLOT), 1);
	EXPECT_RC("xen_singleshot_bad_vector",
		  lull_xen_set_singleshot(clock_ns() + MS, 7), -LULL_EINVAL);

	reset_hits();
	now = clock_ns();
	rc = lull_xen_set_periodic(1 * MS, VEC_B);
	run_for(10 * MS);
	result("xen_periodic_ticks",
	       rc >= 0 && hits[VEC_B].count >= 5 && hits[VEC_B].count <= 11 &&
		       hits[VEC_B].first >= now + 1 * MS,
	       "rc %ld, %lu ticks in 10 ms, first at +%lu ns", rc,
	       hits[VEC_B].count, hits[VEC_B].first - now);
	EXPECT_RC("xen_periodic_is_slot_1",
		  lull_timer_stop(LULL_XEN_PERIODIC_SLOT), 1);
	lull_xen_set_periodic(1 * MS, VEC_B);
	rc = lull_xen_stop_periodic();
	reset_hits();
	run_for(5 * MS);
	result("xen_stop_periodic", rc >= 0 && hits[VEC_B].count <= 1,
	       "rc %ld, %lu ticks after stop", rc, hits[VEC_B].count);
	EXPECT_RC("xen_periodic_idle_after_stop",
		  lull_timer_stop(LULL_XEN_PERIODIC_SLOT), 0);
	EXPECT_RC("xen_periodic_bad_vector", lull_xen_set_periodic(MS, 256),
		  -LULL_EINVAL);
}

static void case_counters(void)
{
	struct lull_slot_counters c0, c1;
	uint64_t now;

	/* one hard one-shot: exactly one delivery */
	reset_hits();
	c0 = counters(S_B);
	lull_timer_set(S_B, clock_ns() + MS, VEC_C, 0, 0, 0);
	wait_hit(VEC_C, 50 * MS);
	run_for(MS);
	c1 = counters(S_B);
	result("counter_delivered_oneshot",
	       c1.delivered - c0.delivered == 1 && c1.merged == c0.merged,
	       "delivered +%lu merged +%lu", c1.delivered - c0.delivered,
	       c1.merged - c0.merged);

	/*
	 * A periodic timer at the floor while interrupts are off: every
	 * expiry after the first finds its vector still owed and merges.
	 */
	reset_hits();
	c0 = counters(S_B);
	now = clock_ns();
	lull_timer_set(S_B, now + LULL_PERIOD_FLOOR_NS, VEC_C,
		       LULL_TIMER_PERIODIC, LULL_PERIOD_FLOOR_NS, 0);
	clock_wait_until(now + 5 * MS); /* interrupts off */
	lull_timer_stop(S_B);
	wait_hit(VEC_C, 50 * MS); /* the owed delivery, once IF=1 */
	run_for(MS);
	c1 = counters(S_B);
	result("counter_merged_while_masked",
	       c1.merged - c0.merged >= 10 && hits[VEC_C].count >= 1 &&
		       hits[VEC_C].count <= 2 &&
		       c1.delivered - c0.delivered >= hits[VEC_C].count,
	       "delivered +%lu merged +%lu handled %lu",
	       c1.delivered - c0.delivered, c1.merged - c0.merged,
	       hits[VEC_C].count);
}

static void case_deferrable(void)
{
	uint64_t now;

	/* busy: a deferrable timer fires on time */
	reset_hits();
	now = clock_ns();
	lull_timer_set(S_A, now + 2 * MS, VEC_A, LULL_TIMER_DEFERRABLE, 0, 0);
	wait_hit(VEC_A, 50 * MS);
	result("deferrable_busy_on_time",
	       hits[VEC_A].count == 1 && hits[VEC_A].first >= now + 2 * MS &&
		       hits[VEC_A].first < now + 20 * MS,
	       "fired %lu at +%lu ns", hits[VEC_A].count,
	       hits[VEC_A].first - now);

	/*
	 * halted: a deferrable timer due at +2 ms must not wake the vCPU;
	 * it comes with the hard one at +30 ms (strict mode: on time).
	 */
	reset_hits();
	now = clock_ns();
	lull_timer_set(S_A, now + 2 * MS, VEC_A, LULL_TIMER_DEFERRABLE, 0, 0);
	lull_timer_set(S_B, now + 30 * MS, VEC_B, 0, 0, 0);
	while (!READ_ONCE(hits[VEC_B].count)) {
		sti_hlt();
		cli();
	}
	wait_hit(VEC_A, 20 * MS);
	if (lull_info.timer_mode == LULL_MODE_STRICT)
		result("deferrable_halted_strict_on_time",
		       hits[VEC_A].count == 1 &&
			       hits[VEC_A].first < now + 30 * MS,
		       "fired %lu at +%lu ns", hits[VEC_A].count,
		       hits[VEC_A].first - now);
	else
		result("deferrable_halted_waits_for_wake",
		       hits[VEC_A].count == 1 &&
			       hits[VEC_A].first >= now + 30 * MS,
		       "fired %lu at +%lu ns (hard wake at +30 ms)",
		       hits[VEC_A].count, hits[VEC_A].first - now);
}

int guest_main(void)
{
	if (rt_boot.hv != HV_LULL) {
		printf("abi: SKIP needs lull (hv %s)\n", hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	for (unsigned v = VEC_A; v <= VEC_C; v++)
		irq_set_handler(v, on_irq);
	irq_set_handler(32, on_irq);
	irq_set_handler(255, on_irq);
	cli();

	case_discovery();
	case_nop_and_unknown();
	case_shared_page();
	case_timer_set_bad_args();
	case_period_floor();
	case_deadlines();
	case_stop_and_rearm();
	case_ipi();
	case_xen();
	case_counters();
	case_deferrable();

	for (unsigned s = 0; s < lull_info.nr_slots; s++)
		lull_timer_stop(s);
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
