// SPDX-License-Identifier: MIT
/* tsc.c: see tsc.h. */
#include "pit.h"
#include "rt.h"
#include "stats.h"
#include "tsc.h"
#include "x86.h"

#define CPUID_TSC_CRYSTAL 0x15
#define HV_LEAF_TIMING 0x10 /* base + 0x10: eax TSC kHz, ebx APIC bus kHz */
#define HV_LEAVES_MAX 0x100 /* one hypervisor's leaves span at most this */

#define WINDOW_TICKS (PIT_HZ / 50) /* 20 ms */
#define WINDOWS 3

/* eax = denominator, ebx = numerator of TSC / crystal; ecx = crystal Hz. */
static uint64_t from_crystal(void)
{
	struct cpuid_regs r;

	if (cpuid(0, 0).eax < CPUID_TSC_CRYSTAL)
		return 0;
	r = cpuid(CPUID_TSC_CRYSTAL, 0);
	if (!r.eax || !r.ebx || !r.ecx)
		return 0;
	return (uint64_t)r.ecx * r.ebx / r.eax;
}

/*
 * Only where the hypervisor's own max leaf covers it: past the end the
 * leaf returns another leaf's data (Intel), not zeros.
 */
static uint64_t from_hypervisor(void)
{
	uint32_t base = rt_boot.hv_base ? rt_boot.hv_base : 0x40000000u;
	uint32_t max = cpuid(base, 0).eax;

	if (max < base + HV_LEAF_TIMING || max >= base + HV_LEAVES_MAX)
		return 0;
	return (uint64_t)cpuid(base + HV_LEAF_TIMING, 0).eax * 1000;
}

/*
 * One window: TSC ticks over at least WINDOW_TICKS PIT ticks, both ends
 * taken right after a PIT read. Polls must be closer than the counter's
 * 65536-tick wrap (55 ms); interrupts are off.
 */
static uint64_t pit_window(void)
{
	uint16_t prev = pit_read(), cur;
	uint64_t t0, t1, ticks = 0;

	/* start on a count change: the edge is then at most one read old */
	while ((cur = pit_read()) == prev)
		;
	t0 = rdtsc_ordered();
	prev = cur;
	do {
		cur = pit_read();
		t1 = rdtsc_ordered();
		ticks += (uint16_t)(prev - cur);
		prev = cur;
	} while (ticks < WINDOW_TICKS);
	return (t1 - t0) * PIT_HZ / ticks;
}

static uint64_t from_pit(void)
{
	uint64_t hz[WINDOWS];
	uint64_t flags;

	if (!pit_start())
		return 0;
	flags = irq_save();
	for (unsigned i = 0; i < WINDOWS; i++)
		hz[i] = pit_window();
	irq_restore(flags);
	sort_u64(hz, WINDOWS);
	return hz[WINDOWS / 2];
}

uint64_t tsc_hz(const char **how)
{
	uint64_t hz;

	if ((hz = from_crystal())) {
		*how = "cpuid-0x15";
		return hz;
	}
	if ((hz = from_hypervisor())) {
		*how = "cpuid-hv-0x10";
		return hz;
	}
	if ((hz = from_pit())) {
		*how = "pit";
		return hz;
	}
	*how = "none";
	return 0;
}
