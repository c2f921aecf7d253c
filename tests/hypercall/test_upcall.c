// SPDX-License-Identifier: MIT
/*
 * The upcall (docs/abi.md "Upcall delivery") without KVM: the hypercall's
 * and the UPCALL flag's validation, and what an expiry of a bound slot
 * leaves in the shared page (bit, pending flag, counters) and in the APIC
 * (one owed upcall vector, or none). The guest's half of the protocol is
 * played here by hand, with the same atomic operations a guest uses.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/hypercall.h"
#include "vmm/vm.h"

#define RAM_SIZE (1ull << 20)
#define NR_SLOTS 128
#define NOW 1000000000000ull
#define PAGE_GPA 0x8000
#define UPCALL 0xe0

static struct vm vm;
static struct vm_cpu *cpu;
static struct lull_shared_page *page;

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	vm.cfg.nr_vcpus = 1;
	vm.cfg.nr_slots = NR_SLOTS;
	vm.ram_size = RAM_SIZE;
	vm.ram = calloc(1, RAM_SIZE);
	vm.cpus = calloc(1, sizeof(*vm.cpus));
	cr_assert(vm.ram && vm.cpus);
	cpu = &vm.cpus[0];
	cr_assert_eq(vcpu_init(&cpu->vcpu, 0, -1, -1, NULL, &vm, &vm.stop,
			       50000, NOW),
		     0);
	pvtimer_init(&cpu->pv, &cpu->vcpu, NR_SLOTS, false, LULL_MISSED_ONE);
	vm.nr_cpus_made = 1;
	page = (void *)(vm.ram + PAGE_GPA);
}

static void teardown(void)
{
	free(vm.ram);
	free(vm.cpus);
}

TestSuite(upcall, .init = setup, .fini = teardown);

static int64_t hc(uint64_t op, uint64_t a0, uint64_t a1, uint64_t a2,
		  uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct hc_args a = { .op = op, .a0 = a0, .a1 = a1, .a2 = a2,
			     .a3 = a3, .a4 = a4, .a5 = a5 };

	return hypercall(&vm, cpu, &a, NOW);
}

static void register_page_and_vector(void)
{
	cr_assert_eq(hc(LULL_HC_SET_SHARED_PAGE, PAGE_GPA, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, UPCALL, 0, 0, 0, 0, 0), 0);
}

/* A one-shot hard slot bound to the upcall, due at NOW + at µs. */
static void bind_slot(unsigned slot, uint64_t at_us)
{
	cr_assert_eq(hc(LULL_HC_TIMER_SET, slot, NOW + at_us * 1000, 0,
			LULL_TIMER_UPCALL, 0, 0),
		     0);
}

/*
 * The vCPU runs at NOW + at µs + 200 µs: the wheel rounds expiries up to
 * its granularity (65 µs at a millisecond's distance), never down.
 */
static void run_until(uint64_t at_us)
{
	wheel_advance(&cpu->vcpu.wheel, NOW + at_us * 1000 + 200000);
}

/* The guest's handler, minus the dispatch: ack, then take every word. */
static void guest_ack(uint64_t bits[2])
{
	__atomic_store_n(&page->upcall_pending, 0, __ATOMIC_SEQ_CST);
	for (unsigned w = 0; w < 2; w++)
		bits[w] = __atomic_exchange_n(&page->upcall_bits[w], 0,
					      __ATOMIC_SEQ_CST);
}

/* The APIC delivers what is owed: how many upcalls were pending. */
static unsigned deliver_all(void)
{
	unsigned n = 0;

	while (apic_deliverable(&cpu->vcpu.apic) == UPCALL) {
		apic_delivered(&cpu->vcpu.apic, UPCALL);
		n++;
	}
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), -1,
		     "only the upcall vector was expected");
	return n;
}

Test(upcall, vector_needs_a_shared_page_and_a_valid_vector)
{
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, UPCALL, 0, 0, 0, 0, 0),
		     -LULL_EINVAL);
	cr_assert_eq(atomic_load(&vm.hc_errors[HC_ERR_POINTER]), 1);
	cr_assert_eq(cpu->pv.upcall_vector, 0);
	cr_assert_eq(hc(LULL_HC_SET_SHARED_PAGE, PAGE_GPA, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 31, 0, 0, 0, 0, 0),
		     -LULL_EINVAL);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 256, 0, 0, 0, 0, 0),
		     -LULL_EINVAL);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 1ull << 32 | UPCALL, 0, 0,
			0, 0, 0),
		     -LULL_EINVAL, "no truncation to 32 bits");
	cr_assert_eq(atomic_load(&vm.hc_errors[HC_ERR_VECTOR]), 3);
	cr_assert_eq(cpu->pv.upcall_vector, 0);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 32, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(cpu->pv.upcall_vector, 32);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 255, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(cpu->pv.upcall_vector, 255);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 0, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(cpu->pv.upcall_vector, 0, "0 unsets");
}

Test(upcall, flag_needs_an_upcall_vector_and_vector_zero)
{
	cr_assert_eq(hc(LULL_HC_SET_SHARED_PAGE, PAGE_GPA, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 0, LULL_TIMER_UPCALL,
			0, 0),
		     -LULL_EINVAL, "no upcall vector set");
	cr_assert_eq(atomic_load(&vm.hc_errors[HC_ERR_FLAGS]), 1);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, UPCALL, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 40, LULL_TIMER_UPCALL,
			0, 0),
		     -LULL_EINVAL, "a vector with UPCALL");
	cr_assert_eq(atomic_load(&vm.hc_errors[HC_ERR_VECTOR]), 1);
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 0, 1u << 3, 0, 0),
		     -LULL_EINVAL, "bit 3 is not a flag");
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 0, 0, 0, 0),
		     -LULL_EINVAL, "vector 0 without UPCALL");
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 0,
			LULL_TIMER_UPCALL | LULL_TIMER_PERIODIC, 0, 0),
		     -LULL_EINVAL, "zero period");
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 1, NOW + 10, 0,
			LULL_TIMER_UPCALL | LULL_TIMER_DEFERRABLE |
				LULL_TIMER_PERIODIC,
			1000000, 0),
		     0);
	cr_assert(cpu->pv.slot[1].upcall);
}

/* Two slots due together, in different words: two bits, one injection. */
Test(upcall, two_expiries_one_upcall)
{
	uint64_t bits[2];

	register_page_and_vector();
	bind_slot(3, 1000);
	bind_slot(70, 1000);
	run_until(1000);
	cr_assert_eq(page->upcall_bits[0], 1ull << 3);
	cr_assert_eq(page->upcall_bits[1], 1ull << (70 - 64));
	cr_assert_eq(page->upcall_pending, 1);
	cr_assert_eq(page->slot[3].delivered, 1);
	cr_assert_eq(page->slot[70].delivered, 1);
	cr_assert_eq(page->slot[3].merged + page->slot[70].merged, 0);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_hard, 2,
		     "each expiry counts, raised or not");
	cr_assert_eq(deliver_all(), 1);
	guest_ack(bits);
	cr_assert_eq(bits[0], 1ull << 3);
	cr_assert_eq(bits[1], 1ull << 6);
	cr_assert_eq(page->upcall_pending, 0);
}

/* An expiry while the bit is still set merges; pending still 1: no raise. */
Test(upcall, expiry_onto_a_set_bit_merges)
{
	register_page_and_vector();
	bind_slot(5, 1000);
	run_until(1000);
	cr_assert_eq(deliver_all(), 1);
	bind_slot(5, 2000);
	run_until(2000);
	cr_assert_eq(page->slot[5].delivered, 1);
	cr_assert_eq(page->slot[5].merged, 1);
	cr_assert_eq(deliver_all(), 0, "pending was still 1: no second raise");
}

/* After the ack the next expiry raises again, even with other bits set. */
Test(upcall, expiry_after_ack_raises_a_second_upcall)
{
	uint64_t bits[2];

	register_page_and_vector();
	bind_slot(7, 1000);
	run_until(1000);
	cr_assert_eq(deliver_all(), 1);
	/* the guest acks; a slot expires before it takes the bits */
	__atomic_store_n(&page->upcall_pending, 0, __ATOMIC_SEQ_CST);
	bind_slot(8, 1500);
	run_until(1500);
	cr_assert_eq(page->upcall_pending, 1);
	cr_assert_eq(deliver_all(), 1, "the late bit raised its own upcall");
	for (unsigned w = 0; w < 2; w++)
		bits[w] = __atomic_exchange_n(&page->upcall_bits[w], 0,
					      __ATOMIC_SEQ_CST);
	cr_assert_eq(bits[0], (1ull << 7) | (1ull << 8),
		     "the scan takes both: the second upcall finds none");
	cr_assert_eq(page->slot[7].delivered + page->slot[8].delivered, 2);
	/* the second upcall's handler: ack, empty scan */
	guest_ack(bits);
	cr_assert_eq(bits[0] | bits[1], 0);
	bind_slot(7, 3000);
	run_until(3000);
	cr_assert_eq(deliver_all(), 1);
	cr_assert_eq(page->slot[7].delivered, 2);
	cr_assert_eq(page->slot[7].merged, 0);
}

/* Raised while the guest has interrupts off: one owed vector, all bits. */
Test(upcall, many_expiries_while_undelivered_are_one_upcall)
{
	uint64_t bits[2];

	register_page_and_vector();
	for (unsigned s = 0; s < NR_SLOTS; s++)
		bind_slot(s, 1000 + s);
	run_until(1000 + NR_SLOTS);
	cr_assert_eq(cpu->vcpu.apic.owed[UPCALL], 1);
	cr_assert_eq(deliver_all(), 1);
	guest_ack(bits);
	cr_assert_eq(bits[0], UINT64_MAX);
	cr_assert_eq(bits[1], UINT64_MAX);
	for (unsigned s = 0; s < NR_SLOTS; s++)
		cr_assert_eq(page->slot[s].delivered, 1);
}

/* Vector slots beside upcall slots work as before. */
Test(upcall, vector_slots_are_unchanged)
{
	register_page_and_vector();
	bind_slot(2, 1000);
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 3, NOW + 1000000, 0x31, 0, 0, 0), 0);
	run_until(1000);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), UPCALL);
	apic_delivered(&cpu->vcpu.apic, UPCALL);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), 0x31);
	apic_delivered(&cpu->vcpu.apic, 0x31);
	cr_assert_eq(page->upcall_bits[0], 1ull << 2, "no bit for slot 3");
	cr_assert_eq(page->slot[3].delivered, 1);
}

/* Unset, the upcall is masked: bound expiries are dropped, counted merged. */
Test(upcall, unset_vector_drops_and_counts)
{
	register_page_and_vector();
	bind_slot(4, 1000);
	cr_assert_eq(hc(LULL_HC_SET_UPCALL_VECTOR, 0, 0, 0, 0, 0, 0), 0);
	run_until(1000);
	cr_assert_eq(page->upcall_bits[0], 0);
	cr_assert_eq(page->upcall_pending, 0);
	cr_assert_eq(page->slot[4].delivered, 0);
	cr_assert_eq(page->slot[4].merged, 1);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), -1);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_hard, 1);
}

/* A late periodic slot: the k + 1 owed ticks under "all" fit one bit. */
Test(upcall, missed_ticks_all_collapse_into_the_bit)
{
	cpu->pv.missed_policy = LULL_MISSED_ALL;
	register_page_and_vector();
	cr_assert_eq(hc(LULL_HC_TIMER_SET, 9, NOW + 1000000, 0,
			LULL_TIMER_UPCALL | LULL_TIMER_PERIODIC |
				LULL_TIMER_DEFERRABLE,
			1000000, 0),
		     0);
	wheel_advance(&cpu->vcpu.wheel, NOW + 6500000);
	cr_assert_eq(page->slot[9].delivered, 1);
	cr_assert_eq(page->slot[9].merged, 5);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_deferred, 1);
	cr_assert_eq(deliver_all(), 1);
}

/* Registering the page again starts the upcall state afresh. */
Test(upcall, reregistering_the_page_clears_bits_and_pending)
{
	register_page_and_vector();
	bind_slot(6, 1000);
	run_until(1000);
	cr_assert_eq(page->upcall_pending, 1);
	cr_assert_eq(hc(LULL_HC_SET_SHARED_PAGE, PAGE_GPA, 0, 0, 0, 0, 0), 0);
	cr_assert_eq(page->upcall_pending, 0);
	cr_assert_eq(page->upcall_bits[0], 0);
	cr_assert_eq(cpu->pv.upcall_vector, UPCALL, "the vector stays set");
}
