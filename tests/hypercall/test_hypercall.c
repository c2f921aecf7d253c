// SPDX-License-Identifier: MIT
/*
 * The hypercall decoder against random register contents, without KVM:
 * a VM with plain malloc'd "RAM" and vCPUs that have a wheel but no fd.
 * Every result must be what the ABI says for those arguments, computed
 * here independently, and the decoder must never crash (run it under ASan).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timers/clock.h"
#include "vmm/hypercall.h"
#include "vmm/vm.h"

#define RAM_SIZE (4ull << 20)
#define NR_VCPUS 3
#define NR_SLOTS 16
#define NOW 1000000000000ull

static struct vm vm;

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	vm.cfg.nr_vcpus = NR_VCPUS;
	vm.cfg.nr_slots = NR_SLOTS;
	vm.ram_size = RAM_SIZE;
	vm.ram = calloc(1, RAM_SIZE);
	vm.cpus = calloc(NR_VCPUS, sizeof(*vm.cpus));
	cr_assert(vm.ram && vm.cpus);
	for (unsigned i = 0; i < NR_VCPUS; i++) {
		cr_assert_eq(vcpu_init(&vm.cpus[i].vcpu, i, -1, -1, NULL, &vm,
				       &vm.stop, 50000, NOW),
			     0);
		pvtimer_init(&vm.cpus[i].pv, &vm.cpus[i].vcpu, NR_SLOTS, false,
			     LULL_MISSED_ONE);
	}
	vm.nr_cpus_made = NR_VCPUS;
}

static void teardown(void)
{
	free(vm.ram);
	free(vm.cpus);
}

TestSuite(hypercall, .init = setup, .fini = teardown);

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: small, seedable, good enough to pick test inputs */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Mostly small values near the edges, sometimes anything at all. */
static uint64_t interesting(void)
{
	static const uint64_t edges[] = { 0, 1, 2, 31, 32, 255, 256, NR_SLOTS - 1,
					  NR_SLOTS, NR_VCPUS, 4095, 4096,
					  RAM_SIZE - 4096, RAM_SIZE,
					  UINT64_MAX, UINT64_MAX - 4095,
					  1ull << 63, LULL_PERIOD_FLOOR_NS - 1 };

	switch (rnd() % 4) {
	case 0:
		return edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return rnd() % 300;
	case 2:
		return (rnd() % (RAM_SIZE / 4096 + 2)) * 4096;
	default:
		return rnd();
	}
}

static bool vector_ok(uint64_t v)
{
	return v >= 32 && v <= 255;
}

/* Per vCPU, what the calls so far leave behind that later answers depend on. */
struct model {
	bool shared_page;
	uint64_t upcall_vector;
};

static struct model model[NR_VCPUS];

/* What the ABI (docs/abi.md) says the call must return. */
static int64_t expected(const struct hc_args *a, const struct model *m)
{
	switch (a->op) {
	case LULL_HC_NOP:
		return LULL_ABI_VERSION;
	case LULL_HC_SET_SHARED_PAGE:
		return (a->a0 % 4096 || a->a0 > RAM_SIZE - 4096) ? -LULL_EFAULT : 0;
	case LULL_HC_TIMER_SET:
		if (a->a0 >= NR_SLOTS ||
		    (a->a3 & ~(uint64_t)LULL_TIMER_FLAGS_ALL))
			return -LULL_EINVAL;
		if (a->a3 & LULL_TIMER_UPCALL) {
			if (a->a2 != 0 || !m->upcall_vector)
				return -LULL_EINVAL;
		} else if (!vector_ok(a->a2)) {
			return -LULL_EINVAL;
		}
		if ((a->a3 & LULL_TIMER_PERIODIC) && !a->a4)
			return -LULL_EINVAL;
		return 0;
	case LULL_HC_SET_UPCALL_VECTOR:
		if (a->a0 && !vector_ok(a->a0))
			return -LULL_EINVAL;
		return m->shared_page ? 0 : -LULL_EINVAL;
	case LULL_HC_TIMER_STOP:
		return a->a0 >= NR_SLOTS ? -LULL_EINVAL : -1000; /* 0 or 1 */
	case LULL_HC_SEND_IPI:
		if (a->a0 >= NR_VCPUS)
			return -LULL_ESRCH;
		return vector_ok(a->a1) ? 0 : -LULL_EINVAL;
	case LULL_HC_XEN_SET_SINGLESHOT:
	case LULL_HC_XEN_SET_PERIODIC:
		return vector_ok(a->a1) ? 0 : -LULL_EINVAL;
	case LULL_HC_XEN_STOP_SINGLESHOT:
	case LULL_HC_XEN_STOP_PERIODIC:
		return -1000;
	default:
		return -LULL_ENOSYS;
	}
}

Test(hypercall, random_registers_get_the_documented_answer)
{
	const char *env = getenv("LULL_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : clock_now_ns();
	unsigned long calls = 200000;

	fprintf(stderr, "hypercall: seed %lu (set LULL_TEST_SEED to replay)\n", seed);
	rng_state = seed;
	memset(model, 0, sizeof(model));
	for (unsigned long i = 0; i < calls; i++) {
		struct hc_args a = {
			.op = rnd() % 3 ? rnd() % (LULL_HC_MAX + 2) : rnd(),
			.a0 = interesting(), .a1 = interesting(),
			.a2 = interesting(), .a3 = interesting() & (rnd() % 2 ? 7 : ~0ull),
			.a4 = interesting(), .a5 = interesting(),
		};
		unsigned c = (unsigned)(rnd() % NR_VCPUS);
		struct vm_cpu *cpu = &vm.cpus[c];
		int64_t want, got;

		/* an upcall-bound slot takes vector 0: make that common */
		if (a.op == LULL_HC_TIMER_SET && (a.a3 & LULL_TIMER_UPCALL) &&
		    rnd() % 2)
			a.a2 = 0;
		want = expected(&a, &model[c]);
		got = hypercall(&vm, cpu, &a, NOW + i);
		if (a.op == LULL_HC_SET_SHARED_PAGE && got == 0)
			model[c].shared_page = true;
		if (a.op == LULL_HC_SET_UPCALL_VECTOR && got == 0)
			model[c].upcall_vector = a.a0;

		if (want == -1000)
			cr_assert(got == 0 || got == 1,
				  "op %lu slot %lu: stop returned %ld (seed %lu)",
				  a.op, a.a0, got, seed);
		else
			cr_assert_eq(got, want,
				     "op %lu args %lx %lx %lx %lx %lx %lx: got %ld, want %ld (seed %lu)",
				     a.op, a.a0, a.a1, a.a2, a.a3, a.a4, a.a5, got,
				     want, seed);
		/* Keep the wheels small and exercise the expiry path too. */
		if (i % 64 == 0)
			for (unsigned c = 0; c < NR_VCPUS; c++)
				wheel_advance(&vm.cpus[c].vcpu.wheel, NOW + i);
	}
	cr_assert_gt(atomic_load(&vm.hc_errors[HC_ERR_OP]), 0);
	cr_assert_eq(atomic_load(&vm.hc_calls), calls);
	for (unsigned c = 0; c < NR_VCPUS; c++)
		cr_assert_eq(vm.cpus[c].pv.upcall_vector, model[c].upcall_vector);
}

Test(hypercall, past_deadline_fires_at_next_advance)
{
	struct vm_cpu *cpu = &vm.cpus[0];
	struct hc_args a = { .op = LULL_HC_TIMER_SET, .a0 = 3, .a1 = 5,
			     .a2 = 40 };

	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	wheel_advance(&cpu->vcpu.wheel, NOW);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), 40);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_hard, 1);
}

Test(hypercall, absurd_deadline_is_clamped_not_wrapped)
{
	struct vm_cpu *cpu = &vm.cpus[0];
	struct hc_args a = { .op = LULL_HC_TIMER_SET, .a0 = 0,
			     .a1 = UINT64_MAX, .a2 = 40, .a5 = UINT64_MAX };

	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	cr_assert_eq(wheel_timer_expires(&cpu->pv.slot[0].timer),
		     NOW + LULL_HORIZON_NS);
	wheel_advance(&cpu->vcpu.wheel, NOW + LULL_HORIZON_NS - 1);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), -1, "fired early");
}

Test(hypercall, short_period_is_raised_to_the_floor)
{
	struct vm_cpu *cpu = &vm.cpus[1];
	struct hc_args a = { .op = LULL_HC_TIMER_SET, .a0 = 2, .a1 = NOW + 1000,
			     .a2 = 50, .a3 = LULL_TIMER_PERIODIC, .a4 = 1 };

	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	cr_assert_eq(cpu->pv.slot[2].period, LULL_PERIOD_FLOOR_NS);
	cr_assert_eq(cpu->vcpu.stats.periods_floored, 1, "and counted");
	a.a4 = LULL_PERIOD_FLOOR_NS;
	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	cr_assert_eq(cpu->vcpu.stats.periods_floored, 1, "the floor is allowed");
}

Test(hypercall, xen_short_period_is_raised_to_the_floor_and_counted)
{
	struct vm_cpu *cpu = &vm.cpus[0];
	struct hc_args a = { .op = LULL_HC_XEN_SET_PERIODIC, .a0 = 1,
			     .a1 = 0x40 };

	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	cr_assert_eq(cpu->pv.slot[LULL_XEN_PERIODIC_SLOT].period,
		     LULL_PERIOD_FLOOR_NS);
	cr_assert_eq(cpu->vcpu.stats.periods_floored, 1);
}

Test(hypercall, missed_ticks_collapse_and_are_counted)
{
	struct vm_cpu *cpu = &vm.cpus[2];
	struct lull_shared_page *page;
	struct hc_args reg = { .op = LULL_HC_SET_SHARED_PAGE, .a0 = 0x10000 };
	struct hc_args tick = { .op = LULL_HC_TIMER_SET, .a0 = 4, .a1 = NOW + 1000000,
				.a2 = 60,
				.a3 = LULL_TIMER_PERIODIC | LULL_TIMER_DEFERRABLE,
				.a4 = 1000000 };

	cr_assert_eq(hypercall(&vm, cpu, &reg, NOW), 0);
	cr_assert_eq(hypercall(&vm, cpu, &tick, NOW), 0);
	page = (void *)(vm.ram + 0x10000);
	/* Deferrable: it never asks for a wakeup... */
	cr_assert_eq(wheel_next_hard_expiry(&cpu->vcpu.wheel), WHEEL_NEVER);
	/* ...and when the vCPU runs 10.5 periods later, one tick, 9 merged. */
	wheel_advance(&cpu->vcpu.wheel, NOW + 10500000);
	cr_assert_eq(page->slot[4].delivered, 1);
	cr_assert_eq(page->slot[4].merged, 9);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_deferred, 1);
	cr_assert_eq(wheel_timer_expires(&cpu->pv.slot[4].timer), NOW + 11000000,
		     "the next tick keeps the original phase");
}

/* A deferrable timer with a bound wakes a halted vCPU at deadline + bound:
 * the halt sleeps until wheel_next_hard_expiry() (plus the slop). */
Test(hypercall, bounded_deferrable_wakes_at_its_bound)
{
	struct vm_cpu *cpu = &vm.cpus[0];
	struct hc_args a = { .op = LULL_HC_TIMER_SET, .a0 = 5,
			     .a1 = NOW + 1000000, .a2 = 70,
			     .a3 = LULL_TIMER_DEFERRABLE, .a5 = 3000000 };
	uint64_t wake;

	cr_assert_eq(hypercall(&vm, cpu, &a, NOW), 0);
	wake = wheel_next_hard_expiry(&cpu->vcpu.wheel);
	cr_assert(wake >= NOW + 4000000 && wake < NOW + 4000000 + 1024,
		  "wakes at %lu ns, not at the 4 ms bound",
		  (unsigned long)(wake - NOW));
	wheel_advance(&cpu->vcpu.wheel, wake);
	cr_assert_eq(apic_deliverable(&cpu->vcpu.apic), 70);
	cr_assert_eq(cpu->vcpu.stats.timers_fired_deferred, 1);
}

static void late_ticks(unsigned policy, uint64_t *delivered,
		       uint64_t *merged, uint32_t *owed)
{
	struct vm_cpu *cpu = &vm.cpus[1];
	struct lull_shared_page *page = (void *)(vm.ram + 0x20000);
	struct hc_args reg = { .op = LULL_HC_SET_SHARED_PAGE, .a0 = 0x20000 };
	struct hc_args tick = { .op = LULL_HC_TIMER_SET, .a0 = 4,
				.a1 = NOW + 1000000, .a2 = 61,
				.a3 = LULL_TIMER_PERIODIC |
				      LULL_TIMER_DEFERRABLE,
				.a4 = 1000000 };

	cpu->pv.missed_policy = policy;
	cr_assert_eq(hypercall(&vm, cpu, &reg, NOW), 0);
	cr_assert_eq(hypercall(&vm, cpu, &tick, NOW), 0);
	/* the vCPU runs again 5.5 periods after the first tick was due */
	wheel_advance(&cpu->vcpu.wheel, NOW + 6500000);
	*delivered = page->slot[4].delivered;
	*merged = page->slot[4].merged;
	*owed = cpu->vcpu.apic.owed[61];
}

Test(hypercall, missed_ticks_all_owes_each_late_tick)
{
	uint64_t delivered, merged;
	uint32_t owed;

	late_ticks(LULL_MISSED_ALL, &delivered, &merged, &owed);
	cr_assert_eq(delivered, 6);
	cr_assert_eq(merged, 0);
	cr_assert_eq(owed, 6, "one interrupt per tick, each owed");
}

Test(hypercall, missed_ticks_none_drops_the_late_ones)
{
	uint64_t delivered, merged;
	uint32_t owed;

	late_ticks(LULL_MISSED_NONE, &delivered, &merged, &owed);
	cr_assert_eq(delivered, 0);
	cr_assert_eq(merged, 6);
	cr_assert_eq(owed, 0, "nothing raised for a late tick");
}

Test(hypercall, ipi_reaches_the_target_queue)
{
	struct hc_args a = { .op = LULL_HC_SEND_IPI, .a0 = 2, .a1 = 77 };

	cr_assert_eq(hypercall(&vm, &vm.cpus[0], &a, NOW), 0);
	cr_assert_eq(atomic_load(&vm.cpus[2].vcpu.posted[77 / 64]),
		     1ull << (77 % 64));
}
