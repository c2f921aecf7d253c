// SPDX-License-Identifier: MIT
/* clock.c: see clock.h. */
#include "clock.h"
#include "layout.h"
#include "lull.h"
#include "rt.h"
#include "smp.h"
#include "x86.h"

#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)

union page {
	struct lull_shared_page shared;
	uint8_t bytes[4096];
};

static union page pages[RT_MAX_VCPUS] __attribute__((aligned(4096)));
static bool have_clock;

struct lull_shared_page *shared_page_of(unsigned i)
{
	return &pages[i].shared;
}

struct lull_shared_page *shared_page(void)
{
	return &pages[smp_id()].shared;
}

int clock_init_this_vcpu(void)
{
	uint64_t gpa = (uintptr_t)shared_page();

	if (rt_boot.hv == HV_LULL) {
		long r = lull_set_shared_page(gpa);

		if (r < 0)
			return (int)r;
		have_clock = true;
	} else if (rt_boot.hv == HV_KVM &&
		   (cpuid(0x40000001, 0).eax & KVM_FEATURE_CLOCKSOURCE2)) {
		wrmsr(MSR_KVM_SYSTEM_TIME_NEW, gpa | 1);
		have_clock = true;
	}
	return 0;
}

bool clock_available(void)
{
	return have_clock;
}

uint64_t pvclock_read(const volatile struct lull_pvclock *c)
{
	uint32_t version;
	uint64_t ns;

	do {
		uint64_t delta, tsc_ts, sys;
		uint32_t mul;
		int8_t shift;

		version = c->version;
		barrier();
		tsc_ts = c->tsc_timestamp;
		sys = c->system_time;
		mul = c->tsc_to_system_mul;
		shift = c->tsc_shift;
		delta = rdtsc_ordered() - tsc_ts;
		if (shift < 0)
			delta >>= -shift;
		else
			delta <<= shift;
		ns = sys + (uint64_t)(((unsigned __int128)delta * mul) >> 32);
		barrier();
	} while ((version & 1) || version != c->version);
	return ns;
}

uint64_t clock_ns(void)
{
	if (!have_clock)
		return 0;
	return pvclock_read(&shared_page()->clock);
}

void clock_wait_until(uint64_t t)
{
	while (clock_ns() < t)
		cpu_relax();
}
