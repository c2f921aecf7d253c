// SPDX-License-Identifier: MIT
/* upcall.c: see upcall.h. */
#include <lull_abi.h>

#include "clock.h"
#include "cmdline.h"
#include "idt.h"
#include "layout.h"
#include "lull.h"
#include "rt.h"
#include "smp.h"
#include "upcall.h"

struct upcall_cpu {
	upcall_fn fn[LULL_MAX_SLOTS];
	uint64_t upcalls, empty;
};

static struct upcall_cpu cpus[RT_MAX_VCPUS];
static uint64_t unbound;

static bool available(void)
{
	return rt_boot.hv == HV_LULL &&
	       (lull_info.features & LULL_FEAT_TIMERS) &&
	       (lull_info.features & LULL_FEAT_UPCALL);
}

int delivery_choose(void)
{
	bool vector = cmdline_is("delivery", "vector");

	if (cmdline_has("delivery") && !vector &&
	    !cmdline_is("delivery", "upcall"))
		return -1;
	return available() && !vector ? DELIVERY_UPCALL : DELIVERY_VECTOR;
}

const char *delivery_name(int delivery)
{
	return delivery == DELIVERY_UPCALL ? "upcall" : "vector";
}

/*
 * The ack comes first: an expiry after it sets upcall_pending again and
 * raises a new upcall, so a bit this scan misses is never stranded; one
 * this scan takes was set either before the ack (no new raise) or after
 * it (a new upcall that finds nothing). Bits are taken whole words at a
 * time, so an expiry is dispatched exactly once.
 */
static void upcall_irq(unsigned vector)
{
	struct lull_shared_page *page = shared_page();
	struct upcall_cpu *u = &cpus[smp_id()];
	bool any = false;

	(void)vector;
	u->upcalls++;
	__atomic_store_n(&page->upcall_pending, 0, __ATOMIC_SEQ_CST);
	for (unsigned w = 0; w < LULL_MAX_SLOTS / 64; w++) {
		uint64_t bits = __atomic_exchange_n(&page->upcall_bits[w], 0,
						    __ATOMIC_SEQ_CST);

		while (bits) {
			unsigned slot = w * 64 + (unsigned)__builtin_ctzll(bits);
			upcall_fn fn = u->fn[slot];

			bits &= bits - 1;
			any = true;
			if (fn)
				fn(slot);
			else
				__atomic_fetch_add(&unbound, 1,
						   __ATOMIC_RELAXED);
		}
	}
	if (!any)
		u->empty++;
}

long upcall_init(void)
{
	if (!available())
		return -LULL_ENOSYS;
	irq_set_handler(UPCALL_VECTOR, upcall_irq);
	return lull_set_upcall_vector(UPCALL_VECTOR);
}

void upcall_bind(unsigned slot, upcall_fn fn)
{
	if (slot < LULL_MAX_SLOTS)
		__atomic_store_n(&cpus[smp_id()].fn[slot], fn,
				 __ATOMIC_RELEASE);
}

uint64_t upcall_count(void)
{
	return cpus[smp_id()].upcalls;
}

uint64_t upcall_empty(void)
{
	return cpus[smp_id()].empty;
}

uint64_t upcall_unbound(void)
{
	return __atomic_load_n(&unbound, __ATOMIC_RELAXED);
}
