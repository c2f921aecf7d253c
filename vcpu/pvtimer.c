// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <string.h>

#include "container_of.h"
#include "timers/clock.h"
#include "timers/periodic.h"
#include "vcpu/pvtimer.h"
#include "vcpu/vcpu.h"

static void count(struct pvtimer_slot *s, uint64_t delivered, uint64_t merged)
{
	struct lull_shared_page *page = s->pv->shared;

	if (!page)
		return;
	page->slot[s->index].delivered += delivered;
	page->slot[s->index].merged += merged;
}

/*
 * Xen's evtchn_set_pending for a timer slot: the bit first, then the one
 * flag that says "look at the bits". The guest clears the flag before it
 * takes the bits, so an expiry either finds the flag still set (its bit is
 * taken by the scan under way or about to start) or sets it and raises a
 * new upcall: never lost, never delivered twice. `deliver` expiries (more
 * than one only under --missed-ticks all) collapse into the one bit.
 */
static void upcall_expired(struct pvtimer_slot *s, uint64_t deliver,
			   uint64_t merged, uint64_t expiry)
{
	struct pvtimer *pv = s->pv;
	struct lull_shared_page *page = pv->shared;
	uint64_t bit = 1ull << (s->index % 64);
	uint32_t raise = 0;

	/* the hypercall checks both; unset later, the upcall is masked */
	if (!page || !pv->upcall_vector) {
		count(s, 0, merged + deliver);
	} else if (deliver) {
		uint64_t old = __atomic_fetch_or(&page->upcall_bits[s->index / 64],
						 bit, __ATOMIC_SEQ_CST);

		if (old & bit)
			count(s, 0, merged + deliver);
		else
			count(s, 1, merged + deliver - 1);
		raise = !__atomic_exchange_n(&page->upcall_pending, 1,
					     __ATOMIC_SEQ_CST);
	} else {
		count(s, 0, merged);
	}
	/*
	 * times 0 only counts the expiry (timers_fired_*). A raise onto an
	 * upcall vector still owed merges into it, which is right: that
	 * delivery has not scanned the bits yet.
	 */
	vcpu_raise_timer(pv->vcpu, pv->upcall_vector, raise, false,
			 s->deferred, expiry);
}

/* A late periodic slot follows the missed-ticks policy (periodic.h). */
static void slot_expired(struct wheel_timer *t, uint64_t now)
{
	struct pvtimer_slot *s = container_of(t, struct pvtimer_slot, timer);
	struct pvtimer *pv = s->pv;
	uint64_t expiry = wheel_timer_expires(t);
	uint64_t deliver = 1, merged = 0, merged_on_raise;

	if (s->period) {
		/* slack, or a bounded deferral; 0 for an unbounded one */
		struct periodic_catch_up c =
			periodic_catch_up(pv->missed_policy, expiry, s->period,
					  s->tolerance, now);

		vcpu_count_catch_up(pv->vcpu, &c);
		deliver = c.deliver;
		merged = c.merged;
		vcpu_timer_arm(pv->vcpu, t, c.next, s->deferred, s->tolerance);
	}
	if (s->upcall) {
		upcall_expired(s, deliver, merged, expiry);
		return;
	}
	/* A raise onto a vector still owed to the guest merges into it. */
	merged_on_raise = vcpu_raise_timer(
		pv->vcpu, s->vector, (uint32_t)deliver,
		pv->missed_policy == LULL_MISSED_ALL, s->deferred, expiry);
	count(s, deliver - merged_on_raise, merged + merged_on_raise);
}

void pvtimer_init(struct pvtimer *pv, struct vcpu *v, unsigned nr_slots,
		  bool strict, unsigned missed_policy)
{
	memset(pv, 0, sizeof(*pv));
	pv->vcpu = v;
	pv->nr_slots = nr_slots;
	pv->strict = strict;
	pv->missed_policy = missed_policy;
	for (unsigned i = 0; i < LULL_MAX_SLOTS; i++) {
		pv->slot[i].pv = pv;
		pv->slot[i].index = (uint16_t)i;
		wheel_timer_init(&pv->slot[i].timer, slot_expired, 0);
	}
}

void pvtimer_set(struct pvtimer *pv, unsigned slot, uint64_t deadline,
		 uint8_t vector, unsigned flags, uint64_t period,
		 uint64_t tolerance)
{
	struct pvtimer_slot *s = &pv->slot[slot];
	bool deferred = (flags & LULL_TIMER_DEFERRABLE) && !pv->strict;

	s->deferred = deferred;
	s->upcall = flags & LULL_TIMER_UPCALL;
	s->vector = vector;
	s->period = (flags & LULL_TIMER_PERIODIC) ? period : 0;
	/* Strict mode is the classic VMM: no slack, no deferral, no bound. */
	s->tolerance = pv->strict ? 0 : tolerance;
	vcpu_timer_arm(pv->vcpu, &s->timer, deadline, deferred, s->tolerance);
}

int pvtimer_stop(struct pvtimer *pv, unsigned slot)
{
	return vcpu_timer_stop(pv->vcpu, &pv->slot[slot].timer);
}

void pvtimer_set_upcall_vector(struct pvtimer *pv, uint8_t vector)
{
	pv->upcall_vector = vector;
}

void pvtimer_set_shared(struct pvtimer *pv, struct lull_shared_page *page)
{
	memset(page, 0, sizeof(*page));
	page->vcpu_id = pv->vcpu->index;
	page->nr_slots = pv->nr_slots;
	pv->shared = page;
	if (pv->clock.ready)
		pvclock_write(&pv->clock, &page->clock);
}

void pvtimer_resync(struct pvtimer *pv, uint64_t now)
{
	if (!pv->shared)
		return;
	if (pvclock_resync_due(&pv->clock, now))
		pvclock_write(&pv->clock, &pv->shared->clock);
	else if (wheel_next_expiry(&pv->vcpu->wheel) <= now)
		/* no timer is early by the guest's clock: pvclock.h */
		pvclock_catch_up(&pv->clock, &pv->shared->clock);
}
