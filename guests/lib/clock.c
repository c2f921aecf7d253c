// SPDX-License-Identifier: MIT
/* clock.c: see clock.h. */
#include "clock.h"
#include "layout.h"
#include "lull.h"
#include "printf.h"
#include "rt.h"
#include "smp.h"
#include "tsc.h"
#include "x86.h"

#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)
#define NSEC_PER_SEC 1000000000ull

union page {
	struct lull_shared_page shared;
	uint8_t bytes[4096];
};

static union page pages[RT_MAX_VCPUS] __attribute__((aligned(4096)));
static enum clock_source source;
static struct lull_pvclock tsc_record; /* CLOCK_TSC: every vCPU's copy */
static uint64_t tsc_rate;
static const char *tsc_how = "none";
static char tsc_name[32]; /* "tsc-" and tsc_how */

struct lull_shared_page *shared_page_of(unsigned i)
{
	return &pages[i].shared;
}

struct lull_shared_page *shared_page(void)
{
	return &pages[smp_id()].shared;
}

/* hz * 2^s > 10^9, exactly */
static bool scaled_above_ns(uint64_t hz, int s)
{
	if (s >= 0)
		return ((unsigned __int128)hz << s) > NSEC_PER_SEC;
	return hz > (NSEC_PER_SEC << -s);
}

/*
 * The pvclock scale for hz: ns = ((delta << shift) * mul) >> 32 with
 * mul = 10^9 * 2^32 / (hz * 2^shift). The smallest shift with
 * hz * 2^shift > 10^9 keeps mul below 2^32 and at least 2^31, the most
 * precision 32 bits hold. 10^9 * 2^32 fits 64 bits, and so does the
 * divisor (at most 2 * 10^9); a negative shift drops at most a few low
 * bits of hz, a relative error of ~10^-9. (No 128-bit division here:
 * there is no libgcc.)
 */
static void pvclock_scale(uint64_t hz, int8_t *shift, uint32_t *mul)
{
	uint64_t den;
	int s = 0;

	while (scaled_above_ns(hz, s - 1))
		s--;
	while (!scaled_above_ns(hz, s))
		s++;
	den = s >= 0 ? hz << s : hz >> -s;
	*shift = (int8_t)s;
	*mul = (uint32_t)((NSEC_PER_SEC << 32) / den);
}

/*
 * vCPU 0, before the others run: pick the clock. lull's shared page or
 * KVM's kvmclock when the hypervisor offers one; else the TSC at a rate
 * from CPUID or measured against the PIT (tsc.c), written as a pvclock
 * record that starts at 0 now, so that every reader is the same.
 */
void clock_init(void)
{
	uint32_t base = rt_boot.hv_base;

	if (rt_boot.hv == HV_LULL && (lull_info.features & LULL_FEAT_PVCLOCK)) {
		source = CLOCK_LULL;
		return;
	}
	if (rt_boot.hv == HV_KVM && cpuid(base, 0).eax >= base + 1 &&
	    (cpuid(base + 1, 0).eax & KVM_FEATURE_CLOCKSOURCE2)) {
		source = CLOCK_KVM;
		return;
	}
	tsc_rate = tsc_hz(&tsc_how);
	if (!tsc_rate) {
		source = CLOCK_NONE;
		return;
	}
	snprintf(tsc_name, sizeof(tsc_name), "tsc-%s", tsc_how);
	pvclock_scale(tsc_rate, &tsc_record.tsc_shift,
		      &tsc_record.tsc_to_system_mul);
	tsc_record.flags = LULL_PVCLOCK_TSC_STABLE;
	tsc_record.tsc_timestamp = rdtsc_ordered();
	source = CLOCK_TSC;
}

int clock_init_this_vcpu(void)
{
	struct lull_shared_page *page = shared_page();
	long r;

	switch (source) {
	case CLOCK_LULL:
		r = lull_set_shared_page((uintptr_t)page);
		return r < 0 ? (int)r : 0;
	case CLOCK_KVM:
		wrmsr(MSR_KVM_SYSTEM_TIME_NEW, (uintptr_t)page | 1);
		return 0;
	case CLOCK_TSC:
		page->clock = tsc_record;
		return 0;
	default:
		return 0;
	}
}

enum clock_source clock_source(void)
{
	return source;
}

const char *clock_name(void)
{
	switch (source) {
	case CLOCK_LULL:
		return "lull-pvclock";
	case CLOCK_KVM:
		return "kvmclock";
	case CLOCK_TSC:
		return tsc_name;
	default:
		return "none";
	}
}

uint64_t clock_tsc_hz(const char **how)
{
	*how = tsc_how;
	return tsc_rate;
}

bool clock_available(void)
{
	return source != CLOCK_NONE;
}

/* One consistent reading of record c: the TSC it read and its scale, and
 * the ns they give. */
struct pvclock_reading {
	uint64_t ns, tsc;
	uint32_t mul;
	int8_t shift;
};

static struct pvclock_reading read_record(const volatile struct lull_pvclock *c)
{
	struct pvclock_reading r;
	uint32_t version;

	do {
		uint64_t tsc_ts, sys, d;

		version = c->version;
		barrier();
		tsc_ts = c->tsc_timestamp;
		sys = c->system_time;
		r.mul = c->tsc_to_system_mul;
		r.shift = c->tsc_shift;
		r.tsc = rdtsc_ordered();
		d = r.tsc - tsc_ts;
		if (r.shift < 0)
			d >>= -r.shift;
		else
			d <<= r.shift;
		r.ns = sys + (uint64_t)(((unsigned __int128)d * r.mul) >> 32);
		barrier();
	} while ((version & 1) || version != c->version);
	return r;
}

uint64_t pvclock_read(const volatile struct lull_pvclock *c)
{
	return read_record(c).ns;
}

/*
 * The pvclock formula backwards, from a reading taken now rather than from
 * the record's own timestamp: kvmclock's record may be minutes old, and
 * only a short ns - now keeps the division in 64 bits (there is no
 * libgcc for a 128-bit one). Each step rounds up, so the forward formula
 * applied to the result gives at least ns.
 */
uint64_t clock_tsc_at(uint64_t ns)
{
	struct pvclock_reading now;
	uint64_t delta, scaled, q, r;

	if (source == CLOCK_NONE)
		return 0;
	now = read_record(&shared_page()->clock);
	if (ns <= now.ns || !now.mul)
		return now.tsc;
	delta = ns - now.ns;
	/* scaled = ceil(delta * 2^32 / mul), in two parts that fit */
	q = delta / now.mul;
	r = delta % now.mul;
	if (q >= 1ull << 31)
		return UINT64_MAX;
	scaled = (q << 32) + ((r << 32) + now.mul - 1) / now.mul;
	if (now.shift >= 0)
		delta = (scaled + (1ull << now.shift) - 1) >> now.shift;
	else if (scaled >> (63 + now.shift))
		return UINT64_MAX;
	else
		delta = scaled << -now.shift;
	return now.tsc + delta;
}

/* The largest reading any vCPU has returned, for unstable-TSC records. */
static uint64_t last_ns;

uint64_t clock_ns(void)
{
	const volatile struct lull_pvclock *c;
	uint64_t ns, last;

	if (source == CLOCK_NONE)
		return 0;
	c = &shared_page()->clock;
	ns = pvclock_read(c);
	if (c->flags & LULL_PVCLOCK_TSC_STABLE)
		return ns;
	/*
	 * Without a stable TSC the hypervisor moves this vCPU's TSC offset and
	 * re-anchors the record, so a reading may fall behind an earlier one,
	 * here or on another vCPU: time never goes back (docs/abi.md).
	 */
	last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	do {
		if (ns <= last)
			return last;
	} while (!__atomic_compare_exchange_n(&last_ns, &last, ns, false,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return ns;
}

void clock_wait_until(uint64_t t)
{
	while (clock_ns() < t)
		cpu_relax();
}
