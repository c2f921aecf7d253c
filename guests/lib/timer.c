// SPDX-License-Identifier: MIT
/* timer.c: see timer.h. */
#include "clock.h"
#include "lapic.h"
#include "lull.h"
#include "rt.h"
#include "smp.h"
#include "timer.h"

static enum timer_backend backend;
/* Per vCPU: the slot the LAPIC timer stands for, plus one (0 = none). */
static unsigned lapic_slot[RT_MAX_VCPUS];

enum timer_backend timer_init(void)
{
	if (rt_boot.hv == HV_LULL && (lull_info.features & LULL_FEAT_TIMERS))
		backend = TIMER_LULL;
	else if (clock_available() && lapic_init())
		backend = TIMER_LAPIC;
	else
		backend = TIMER_NONE;
	return backend;
}

enum timer_backend timer_backend(void)
{
	return backend;
}

const char *timer_backend_name(void)
{
	switch (backend) {
	case TIMER_LULL:
		return "lull";
	case TIMER_LAPIC:
		return "lapic";
	default:
		return "none";
	}
}

long timer_oneshot(unsigned slot, uint64_t deadline_ns, unsigned vector,
		   unsigned flags)
{
	uint64_t now;

	switch (backend) {
	case TIMER_LULL:
		return lull_timer_set(slot, deadline_ns,
				      flags & TIMER_UPCALL ? 0 : vector, flags,
				      0, 0);
	case TIMER_LAPIC:
		now = clock_ns();
		lapic_slot[smp_id()] = slot + 1;
		lapic_timer_start(vector,
				  lapic_ns_to_count(deadline_ns > now ?
							    deadline_ns - now :
							    0),
				  false);
		return 0;
	default:
		return -LULL_ENOSYS;
	}
}

long timer_periodic(unsigned slot, uint64_t period_ns, unsigned vector,
		    unsigned flags)
{
	switch (backend) {
	case TIMER_LULL:
		return lull_timer_set(slot, clock_ns() + period_ns,
				      flags & TIMER_UPCALL ? 0 : vector,
				      flags | LULL_TIMER_PERIODIC, period_ns,
				      0);
	case TIMER_LAPIC:
		if (!period_ns)
			return -LULL_EINVAL;
		lapic_slot[smp_id()] = slot + 1;
		lapic_timer_start(vector, lapic_ns_to_count(period_ns), true);
		return 0;
	default:
		return -LULL_ENOSYS;
	}
}

long timer_stop(unsigned slot)
{
	switch (backend) {
	case TIMER_LULL:
		return lull_timer_stop(slot);
	case TIMER_LAPIC:
		if (lapic_slot[smp_id()] != slot + 1)
			return 0;
		lapic_slot[smp_id()] = 0;
		lapic_timer_stop();
		return 1;
	default:
		return -LULL_ENOSYS;
	}
}

void timer_irq_done(void)
{
	if (backend == TIMER_LAPIC)
		lapic_eoi();
}
