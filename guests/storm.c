// SPDX-License-Identifier: MIT
/*
 * storm: a timer storm, the kind of load an untrusted guest can make.
 *
 * Every vCPU arms every one of its slots as a periodic timer with a 1 ns
 * period (lull raises it to the 100 us floor), half of them deferrable,
 * all on one vector, then alternates busy stretches and halts for
 * seconds=N (default 1). Each vCPU then stops every slot and checks that
 * no tick arrives after a fence (a one-shot on a lower vector, which lull
 * delivers after anything the storm still owed). It passes if every vCPU
 * got ticks and the VMM kept answering; what it measures is that lull
 * survives, with bounded work per wake, and keeps the guest's time moving.
 *   storm: PASS vcpus=N slots=S seconds=T ticks=..
 */
#include "guest.h"

#define VEC_STORM 0x40
#define VEC_FENCE 0x3f
#define MAX_VCPUS 64

static volatile uint64_t ticks[MAX_VCPUS];
static unsigned finished, failed; /* APs that are done, and of those failed */
static uint64_t end_ns;

static void on_tick(unsigned vector)
{
	(void)vector;
	ticks[smp_id()]++;
}

static volatile uint64_t fences[MAX_VCPUS];

static void on_fence(unsigned vector)
{
	(void)vector;
	fences[smp_id()]++;
}

/*
 * Waits for a 1 ms one-shot on slot 0 with a vector below the storm's:
 * anything the storm still had owed is delivered first (higher vectors
 * go first), so after the fence the storm's queue is empty.
 */
static void fence(unsigned id)
{
	uint64_t seen = fences[id];

	lull_timer_set(0, clock_ns() + 1000000, VEC_FENCE, 0, 0, 0);
	while (fences[id] == seen) {
		sti_hlt();
		cli();
	}
}

/* Returns the ticks that arrived after all slots were stopped. */
static uint64_t storm(unsigned id)
{
	unsigned slots = lull_info.nr_slots;
	uint64_t now = clock_ns(), after;

	for (unsigned s = 0; s < slots; s++)
		lull_timer_set(s, now + s, VEC_STORM,
			       LULL_TIMER_PERIODIC |
				       (s % 2 ? LULL_TIMER_DEFERRABLE : 0),
			       1, 0);
	while (clock_ns() < end_ns) {
		/* busy a little (deferrable ticks due now), then halt */
		sti();
		for (int i = 0; i < 50; i++)
			cpu_relax();
		sti_hlt();
		cli();
	}
	for (unsigned s = 0; s < slots; s++)
		lull_timer_stop(s);
	fence(id);
	after = ticks[id];
	fence(id);
	return ticks[id] - after;
}

void guest_ap_main(unsigned id)
{
	uint64_t late;

	smp_wait_gate(); /* until vCPU 0 has set up */
	late = storm(id);

	if (late) {
		printf("storm: vcpu %u: %lu ticks after every slot was stopped\n",
		       id, late);
		__atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
	for (;;) {
		cli();
		hlt();
	}
}

int guest_main(void)
{
	unsigned n = smp_count(), bad;
	uint64_t total = 0, late;

	if (rt_boot.hv != HV_LULL) {
		printf("storm: SKIP needs lull's timer slots (hv %s)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	irq_set_handler(VEC_STORM, on_tick);
	irq_set_handler(VEC_FENCE, on_fence);
	end_ns = clock_ns() + cmdline_u64("seconds", 1) * 1000000000ull;
	printf("storm: %u vcpus x %u slots, 100 us periodic, %lu s\n", n,
	       lull_info.nr_slots, cmdline_u64("seconds", 1));
	smp_open_gate();
	late = storm(0);
	while (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) < n - 1)
		cpu_relax();
	bad = __atomic_load_n(&failed, __ATOMIC_RELAXED) + (late ? 1 : 0);
	for (unsigned i = 0; i < n; i++) {
		if (!ticks[i]) {
			printf("storm: FAIL vcpu %u got no tick\n", i);
			return 1;
		}
		total += ticks[i];
	}
	if (bad) {
		printf("storm: FAIL %u vcpu(s) got ticks after stopping every slot\n",
		       bad);
		return 1;
	}
	if (irq_unexpected_count()) {
		printf("storm: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	printf("storm: PASS vcpus=%u slots=%u seconds=%lu ticks=%lu\n", n,
	       lull_info.nr_slots, cmdline_u64("seconds", 1), total);
	return 0;
}
