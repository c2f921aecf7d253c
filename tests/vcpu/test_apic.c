// SPDX-License-Identifier: MIT
/*
 * The userspace local APIC, on a vCPU without KVM behind it: its IRR in
 * both delivery regimes, registers through the MSR and MMIO paths, the
 * timer on the vCPU's wheel, and what an ICR write asks the VM to route.
 */
#include <asm/kvm_para.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lull_abi.h"
#include "timers/clock.h"
#include "vcpu/vcpu.h"

static struct apic_ipi routed[8];
static unsigned nr_routed;

static void route(struct vcpu *v, const struct apic_ipi *ipi)
{
	(void)v;
	if (nr_routed < 8)
		routed[nr_routed++] = *ipi;
}

/* The guest TSC counts host ns here, so deadlines read plainly. */
static uint64_t tsc_is_ns(struct vcpu *v, uint64_t tsc)
{
	uint64_t now = clock_now_ns();

	(void)v;
	return tsc > now ? tsc : 0;
}

/* 4 KiB of guest RAM at gpa 0, for PV EOI's flag. */
static uint8_t ram[4096];

static void *guest_ram(struct vcpu *v, uint64_t gpa, uint64_t len)
{
	(void)v;
	return gpa < sizeof(ram) && len <= sizeof(ram) - gpa ? ram + gpa : NULL;
}

static const struct vcpu_ops ops = { .ipi = route,
				     .guest_ram = guest_ram,
				     .tsc_to_ns = tsc_is_ns };
static atomic_bool stop;
static struct vcpu cpu; /* big: not on the stack */

static struct vcpu *fresh(unsigned index)
{
	nr_routed = 0;
	cr_assert_eq(vcpu_init(&cpu, index, -1, -1, &ops, NULL, &stop, 0,
			       clock_now_ns()),
		     0);
	return &cpu;
}

static uint64_t rd(struct vcpu *v, unsigned reg)
{
	uint64_t value = 0xdead;

	cr_assert_eq(apic_rdmsr(v, MSR_X2APIC_FIRST + reg, &value), 0,
		     "reading register 0x%x", reg);
	return value;
}

static void wr(struct vcpu *v, unsigned reg, uint64_t value)
{
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + reg, value), 0,
		     "writing 0x%lx to register 0x%x", value, reg);
}

/* Reset, then x2APIC mode and software-enabled, as an OS sets it up. */
static struct vcpu *x2apic_on(unsigned index)
{
	struct vcpu *v = fresh(index);
	uint64_t base;

	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD),
		     0);
	wr(v, APIC_SVR, APIC_SVR_ENABLE | 0xff);
	return v;
}

Test(apic, reset_state_is_a_software_disabled_xapic)
{
	struct vcpu *v = fresh(0);
	uint64_t base;

	cr_assert_eq(apic_rdmsr(v, MSR_IA32_APIC_BASE, &base), 0);
	cr_assert_eq(base, APIC_DEFAULT_BASE | APIC_BASE_EN | APIC_BASE_BSP);
	fresh(3);
	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(base, APIC_DEFAULT_BASE | APIC_BASE_EN,
		     "only vCPU 0 is the BSP");
	cr_assert_eq(apic_rdmsr(v, MSR_X2APIC_FIRST + APIC_ID, &base), -EPERM,
		     "x2APIC registers fault in xAPIC mode");
	cr_assert_eq(v->apic.svr, 0xff);
	for (unsigned i = 0; i < APIC_NR_LVT; i++)
		cr_assert_eq(v->apic.lvt[i], APIC_LVT_MASKED);
}

Test(apic, x2apic_registers_and_access_rules)
{
	struct vcpu *v = x2apic_on(5);
	uint64_t value;

	cr_assert_eq(rd(v, APIC_ID), 5);
	cr_assert_eq(rd(v, APIC_VERSION), APIC_VERSION_VALUE);
	cr_assert_eq(rd(v, APIC_LDR), (0u << 16) | (1u << 5));
	cr_assert_eq(apic_rdmsr(v, MSR_X2APIC_FIRST + APIC_EOI, &value), -EPERM,
		     "EOI is write-only");
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_VERSION, 0), -EPERM,
		     "version is read-only");
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_EOI, 1), -EPERM,
		     "a non-zero EOI faults");
	cr_assert_eq(apic_wrmsr(v, MSR_X2APIC_FIRST + APIC_TPR, 1ull << 32),
		     -EPERM, "only the ICR is 64 bits wide");
	cr_assert_eq(apic_rdmsr(v, MSR_X2APIC_FIRST + 0x2f, &value), -EPERM,
		     "no CMCI LVT: its MSR is reserved");
	cr_assert_eq(apic_rdmsr(v, 0x10, &value), -ENOENT,
		     "the TSC is not the APIC's");
}

Test(apic, mode_changes_follow_the_sdm)
{
	struct vcpu *v = x2apic_on(1);
	uint64_t base;

	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, base & ~APIC_BASE_EXTD),
		     -EPERM, "x2APIC to xAPIC directly");
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, base | 1), -EPERM,
		     "reserved bit");
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, APIC_DEFAULT_BASE), 0,
		     "x2APIC to disabled");
	cr_assert_eq(
		apic_wrmsr(v, MSR_IA32_APIC_BASE,
			   APIC_DEFAULT_BASE | APIC_BASE_EN | APIC_BASE_EXTD),
		-EPERM, "disabled to x2APIC directly");
	cr_assert_eq(v->apic.svr, 0xff, "disabling reset the registers");
}

/* --no-x2apic: EXTD is reserved, as on a CPU without x2APIC. */
Test(apic, hidden_x2apic_cannot_be_entered)
{
	struct vcpu *v = fresh(0);
	uint64_t base;

	apic_hide_x2apic(v);
	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD),
		     -EPERM);
	apic_rdmsr(v, MSR_IA32_APIC_BASE, &base);
	cr_assert_eq(base & APIC_BASE_EXTD, 0, "still an xAPIC");
	cr_assert_eq(apic_wrmsr(v, MSR_IA32_APIC_BASE, APIC_DEFAULT_BASE), 0,
		     "xAPIC to disabled still works");
}

Test(apic, disabled_apic_delivers_edges_without_eoi)
{
	struct vcpu *v = fresh(0);
	struct apic *a = &v->apic;

	apic_raise(a, 40, 1, false, APIC_SRC_HARD, 1);
	apic_raise(a, 200, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_raise(a, 40, 1, false, APIC_SRC_HARD, 2), 1,
		     "an edge on a pending vector merges");
	cr_assert_eq(a->since[40], 1, "lateness counts from the oldest raise");
	cr_assert_eq(apic_deliverable(a), 200);
	apic_delivered(a, 200);
	cr_assert_eq(apic_deliverable(a), 40, "nothing in service blocks it");
	apic_delivered(a, 40);
	cr_assert_eq(apic_deliverable(a), -1);
	cr_assert_eq(a->isr[0] | a->isr[1] | a->isr[2] | a->isr[3], 0);
}

/* A hard timer whose expiry rides a delivery already owed (a deferred
 * tick's, an upcall it only sets a bit for) is timed by that delivery. */
Test(apic, a_hard_raise_joining_an_owed_delivery_times_it)
{
	struct vcpu *v = fresh(0);
	struct apic *a = &v->apic;

	apic_raise(a, 60, 1, false, APIC_SRC_DEFERRED, 5);
	cr_assert_eq(apic_raise(a, 60, 0, false, APIC_SRC_HARD, 9), 0);
	cr_assert_eq(a->source[60], APIC_SRC_HARD);
	cr_assert_eq(a->since[60], 9, "late from the hard expiry");
	apic_raise(a, 60, 1, false, APIC_SRC_HARD, 12);
	cr_assert_eq(a->since[60], 9, "and from the first hard one");
	apic_raise(a, 61, 1, false, APIC_SRC_IPI, 0);
	apic_raise(a, 61, 1, false, APIC_SRC_DEFERRED, 3);
	cr_assert_eq(a->source[61], APIC_SRC_IPI, "only hard raises take over");
	cr_assert_eq(apic_raise(a, 62, 0, false, APIC_SRC_HARD, 4), 0);
	cr_assert_eq(a->owed[62], 0, "times 0 raises nothing");
	cr_assert_eq(a->source[62], APIC_SRC_IPI);
}

Test(apic, owed_deliveries_are_capped)
{
	struct vcpu *v = fresh(0);
	struct apic *a = &v->apic;
	unsigned delivered = 0;

	cr_assert_eq(apic_raise(a, 50, 3, true, APIC_SRC_HARD, 10), 0);
	cr_assert_eq(apic_raise(a, 50, APIC_MAX_OWED, true, APIC_SRC_HARD, 30),
		     3, "beyond the cap, raises are dropped and reported");
	while (apic_deliverable(a) == 50) {
		apic_delivered(a, 50);
		delivered++;
	}
	cr_assert_eq(delivered, APIC_MAX_OWED);
}

Test(apic, priority_classes_tpr_and_eoi)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;

	wr(v, APIC_TPR, 0x40);
	apic_raise(a, 0x41, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_deliverable(a), -1, "class 4 is masked by TPR 0x40");
	apic_raise(a, 0x52, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_deliverable(a), 0x52);
	apic_delivered(a, 0x52);
	cr_assert_eq(rd(v, APIC_ISR + 2), 1u << (0x52 - 64));
	cr_assert_eq(rd(v, APIC_PPR), 0x50);
	apic_raise(a, 0x55, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_deliverable(a), -1,
		     "same class as the one in service");
	apic_raise(a, 0x61, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_deliverable(a), 0x61, "a higher class nests");
	apic_delivered(a, 0x61);
	wr(v, APIC_EOI, 0);
	cr_assert_eq(rd(v, APIC_ISR + 3), 0, "EOI retires the highest first");
	cr_assert_eq(rd(v, APIC_ISR + 2), 1u << (0x52 - 64));
	wr(v, APIC_EOI, 0);
	cr_assert_eq(apic_deliverable(a), 0x55);
	apic_delivered(a, 0x55);
	wr(v, APIC_EOI, 0);
	cr_assert_eq(apic_deliverable(a), -1, "0x41 still below the TPR");
	apic_set_cr8(a, 0);
	cr_assert_eq(rd(v, APIC_TPR), 0, "CR8 is the TPR's high nibble");
	cr_assert_eq(apic_deliverable(a), 0x41);
}

/* The guest's side of PV EOI: Linux's kvm_guest_apic_eoi_write. */
static void guest_eoi(struct vcpu *v, uint64_t flag_gpa)
{
	if (ram[flag_gpa] & KVM_PV_EOI_ENABLED) {
		ram[flag_gpa] &= (uint8_t)~KVM_PV_EOI_ENABLED;
		return;
	}
	wr(v, APIC_EOI, 0);
}

static struct vcpu *pv_eoi_on(uint64_t flag_gpa)
{
	struct vcpu *v = x2apic_on(0);

	memset(ram, 0, sizeof(ram));
	cr_assert_eq(
		apic_wrmsr(v, MSR_KVM_PV_EOI_EN, flag_gpa | KVM_MSR_ENABLED),
		0);
	return v;
}

/* One delivery of `vector`, then an entry, the guest's EOI, an exit. */
static void deliver_and_eoi(struct vcpu *v, uint8_t vector, uint64_t flag)
{
	apic_raise(&v->apic, vector, 1, false, APIC_SRC_IPI, 0);
	cr_assert_eq(apic_deliverable(&v->apic), vector);
	apic_delivered(&v->apic, vector);
	apic_pv_eoi_offer(v);
	guest_eoi(v, flag);
	apic_pv_eoi_collect(v);
}

Test(apic, pv_eoi_retires_the_lone_vector_without_an_exit)
{
	struct vcpu *v = pv_eoi_on(0x100);
	uint64_t msr = 0;

	cr_assert_eq(apic_rdmsr(v, MSR_KVM_PV_EOI_EN, &msr), 0);
	cr_assert_eq(msr, 0x101);
	deliver_and_eoi(v, 0x31, 0x100);
	cr_assert_eq(v->apic.pv_eois, 1, "the flag was offered and cleared");
	cr_assert_eq(rd(v, APIC_ISR + 1), 0, "0x31 retired at the exit");
	cr_assert_eq(ram[0x100], 0);

	/* an entry and exit before the guest's EOI takes the offer back */
	apic_raise(&v->apic, 0x32, 1, false, APIC_SRC_IPI, 0);
	apic_delivered(&v->apic, 0x32);
	apic_pv_eoi_offer(v);
	cr_assert_eq(ram[0x100], KVM_PV_EOI_ENABLED);
	apic_pv_eoi_collect(v);
	cr_assert_eq(ram[0x100], 0, "taken back");
	cr_assert_eq(rd(v, APIC_ISR + 1), 1u << 0x12, "still in service");
	apic_pv_eoi_offer(v);
	guest_eoi(v, 0x100);
	apic_pv_eoi_collect(v);
	cr_assert_eq(rd(v, APIC_ISR + 1), 0);
	cr_assert_eq(v->apic.pv_eois, 2);
}

Test(apic, pv_eoi_is_not_offered_where_the_eoi_must_exit)
{
	struct vcpu *v = pv_eoi_on(0x40);
	struct apic *a = &v->apic;

	/* something pending behind the one in service */
	apic_raise(a, 0x31, 1, false, APIC_SRC_IPI, 0);
	apic_delivered(a, 0x31);
	apic_raise(a, 0x32, 1, false, APIC_SRC_IPI, 0);
	apic_pv_eoi_offer(v);
	cr_assert_eq(ram[0x40], 0, "0x32 waits for the EOI: it must exit");
	apic_pv_eoi_collect(v);
	wr(v, APIC_EOI, 0);
	/* two in service (a nested interrupt) */
	apic_delivered(a, 0x32);
	apic_raise(a, 0x51, 1, false, APIC_SRC_IPI, 0);
	apic_delivered(a, 0x51);
	apic_pv_eoi_offer(v);
	cr_assert_eq(ram[0x40], 0, "two vectors in service");
	wr(v, APIC_EOI, 0);
	wr(v, APIC_EOI, 0);
	/* level-triggered: the I/O APIC waits for its EOI */
	apic_raise(a, 0x61, 1, false, APIC_SRC_IPI, 0);
	apic_set_trigger(a, 0x61, true);
	apic_delivered(a, 0x61);
	apic_pv_eoi_offer(v);
	cr_assert_eq(ram[0x40], 0, "a level-triggered vector in service");
	wr(v, APIC_EOI, 0);
	cr_assert_eq(a->pv_eois, 0);
}

Test(apic, pv_eoi_msr_faults_outside_ram_and_ends_at_init)
{
	struct vcpu *v = pv_eoi_on(0x100);
	uint64_t msr = 1;

	cr_assert_eq(apic_wrmsr(v, MSR_KVM_PV_EOI_EN, 0x102 | KVM_MSR_ENABLED),
		     -EPERM, "not 4-byte aligned");
	cr_assert_eq(
		apic_wrmsr(v, MSR_KVM_PV_EOI_EN, sizeof(ram) | KVM_MSR_ENABLED),
		-EPERM, "outside RAM");
	cr_assert_eq(apic_wrmsr(v, MSR_KVM_PV_EOI_EN, ~0ull), -EPERM);
	cr_assert_eq(apic_rdmsr(v, MSR_KVM_PV_EOI_EN, &msr), 0);
	cr_assert_eq(msr, 0x101, "a faulting write changes nothing");

	cr_assert_eq(apic_wrmsr(v, MSR_KVM_PV_EOI_EN, 0x100), 0, "disabled");
	apic_raise(&v->apic, 0x31, 1, false, APIC_SRC_IPI, 0);
	apic_delivered(&v->apic, 0x31);
	apic_pv_eoi_offer(v);
	cr_assert_eq(ram[0x100], 0, "off: never offered");
	wr(v, APIC_EOI, 0);

	cr_assert_eq(apic_wrmsr(v, MSR_KVM_PV_EOI_EN, 0x101), 0);
	apic_init_reset(v);
	cr_assert_eq(apic_rdmsr(v, MSR_KVM_PV_EOI_EN, &msr), 0);
	cr_assert_eq(msr, 0, "INIT turns it off");
}

/* --no-pv-eoi: CPUID hides it, and its MSR faults. */
Test(apic, hidden_pv_eoi_faults)
{
	struct vcpu *v = x2apic_on(0);
	uint64_t msr;

	apic_hide_pv_eoi(v);
	cr_assert_eq(apic_wrmsr(v, MSR_KVM_PV_EOI_EN, 0x101), -EPERM);
	cr_assert_eq(apic_rdmsr(v, MSR_KVM_PV_EOI_EN, &msr), -EPERM);
	cr_assert_null(v->apic.pv_eoi_flag);
}

Test(apic, one_shot_timer_lives_on_the_wheel)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;
	uint64_t before, after, expires;
	uint64_t count;

	wr(v, APIC_TIMER_DIVIDE, 0x3); /* divide by 16 */
	wr(v, APIC_LVT_TIMER, 0x80);
	before = clock_now_ns();
	wr(v, APIC_TIMER_INITIAL, 1000000);
	after = clock_now_ns();
	expires = wheel_timer_expires(&a->timer);
	cr_assert(wheel_timer_pending(&a->timer));
	cr_assert(expires >= before + 16000000 && expires <= after + 16000000,
		  "1e6 counts at 1 GHz / 16");
	count = rd(v, APIC_TIMER_CURRENT);
	cr_assert(count > 0 && count <= 1000000, "current count %lu", count);
	wheel_advance(&v->wheel, expires + 2048);
	cr_assert_eq(apic_deliverable(a), 0x80);
	cr_assert_eq(v->stats.timers_fired_hard, 1);
	cr_assert_eq(rd(v, APIC_TIMER_CURRENT), 0, "one-shot: 0 once fired");
	cr_assert_not(wheel_timer_pending(&a->timer));
}

Test(apic, masked_timer_counts_silently_and_zero_stops_it)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;

	wr(v, APIC_TIMER_DIVIDE, 0xb); /* divide by 1 */
	wr(v, APIC_LVT_TIMER, APIC_LVT_MASKED | 0x80);
	wr(v, APIC_TIMER_INITIAL, 1000);
	wheel_advance(&v->wheel, clock_now_ns() + 1000000);
	cr_assert_eq(a->timer_fired, 1);
	cr_assert_eq(apic_deliverable(a), -1);
	wr(v, APIC_LVT_TIMER, 0x80);
	wr(v, APIC_TIMER_INITIAL, 1000000);
	wr(v, APIC_TIMER_INITIAL, 0);
	cr_assert_not(wheel_timer_pending(&a->timer));
}

Test(apic, periodic_timer_keeps_its_phase_and_floor)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;
	uint64_t first;

	wr(v, APIC_TIMER_DIVIDE, 0xb);
	wr(v, APIC_LVT_TIMER, (APIC_TIMER_PERIODIC << 17) | 0x90);
	wr(v, APIC_TIMER_INITIAL, 10);
	cr_assert_eq(a->timer_period_ns, LULL_PERIOD_FLOOR_NS,
		     "a 10 ns period is raised to the floor");
	cr_assert_eq(v->stats.periods_floored, 1, "and counted");
	first = wheel_timer_expires(&a->timer);
	wheel_advance(&v->wheel, first + 2048);
	cr_assert_eq(apic_deliverable(a), 0x90);
	cr_assert_eq(wheel_timer_expires(&a->timer),
		     first + LULL_PERIOD_FLOOR_NS);
}

/* A periodic count reloads at each expiry, whether or not the wheel has
 * run the timer yet (the vCPU reads it from inside the guest). */
Test(apic, periodic_current_count_reloads_before_the_wheel_runs)
{
	struct vcpu *v = x2apic_on(0);
	uint64_t count;

	wr(v, APIC_TIMER_DIVIDE, 0xb);
	wr(v, APIC_LVT_TIMER, (APIC_TIMER_PERIODIC << 17) | 0x90);
	wr(v, APIC_TIMER_INITIAL, 1000000); /* 1 ms */
	usleep(2500);
	count = rd(v, APIC_TIMER_CURRENT);
	cr_assert(count > 0 && count <= 1000000, "current count %lu", count);
}

#define BOUND_NS 10000000ull
/* the grid's step: the last sixteenth of the bound is the host's */
#define GRID_NS (BOUND_NS - BOUND_NS / 16)

/* Where the wheel wakes the host for a halted vCPU's timer, expiring at
 * `expires`: the tick after the first point of the grid from it. */
static uint64_t grid_wake(uint64_t expires)
{
	uint64_t grid = (expires + GRID_NS - 1) / GRID_NS * GRID_NS;

	return (grid + 1023) & ~1023ull;
}

/*
 * Hard by default in every mode; under a max deferral B, deferrable in
 * every mode, waking a halted vCPU's host at the first multiple of B -
 * B/16 on CLOCK_MONOTONIC at or after the expiry (the same instants in
 * every VM), never before the expiry, and hard where the expiry is such a
 * multiple.
 */
Test(apic, the_timer_defers_to_the_grid_only_when_asked)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;
	uint64_t expires, at;

	wr(v, APIC_LVT_TIMER, (APIC_TIMER_PERIODIC << 17) | 0x90);
	wr(v, APIC_TIMER_DIVIDE, 0xb);
	wr(v, APIC_TIMER_INITIAL, 4000000);
	expires = wheel_timer_expires(&a->timer);
	cr_assert(wheel_next_hard_expiry(&v->wheel) <= expires + 1024,
		  "hard by default");
	wr(v, APIC_LVT_TIMER, 0x90);
	wr(v, APIC_TIMER_INITIAL, 4000000);
	expires = wheel_timer_expires(&a->timer);
	cr_assert(wheel_next_hard_expiry(&v->wheel) <= expires + 1024,
		  "a one-shot is hard by default");

	apic_set_timer_policy(v, BOUND_NS, LULL_MISSED_ONE);
	for (unsigned mode = 0; mode < 3; mode++) {
		static const char *const names[] = { "one-shot", "periodic",
						     "TSC-deadline" };

		wr(v, APIC_LVT_TIMER, (mode << 17) | 0x90);
		if (mode == APIC_TIMER_TSC_DEADLINE)
			apic_wrmsr(v, MSR_IA32_TSC_DEADLINE,
				   clock_now_ns() + 4000000);
		else
			wr(v, APIC_TIMER_INITIAL, 4000000);
		expires = wheel_timer_expires(&a->timer);
		at = wheel_next_hard_expiry(&v->wheel);
		cr_assert_eq(at, grid_wake(expires),
			     "%s at %lu: wakes the host at %lu, not at the "
			     "next multiple of %llu",
			     names[mode], expires, at, GRID_NS);
		cr_assert_geq(at, expires, "%s: earlier than its expiry",
			      names[mode]);
		cr_assert_lt(at, expires + GRID_NS + 1024,
			     "%s: over 15/16 of its bound", names[mode]);
	}
	/* a deadline on the grid wakes the host at it */
	expires = (clock_now_ns() / GRID_NS + 2) * GRID_NS;
	apic_wrmsr(v, MSR_IA32_TSC_DEADLINE, expires);
	cr_assert_eq(wheel_next_hard_expiry(&v->wheel),
		     expires + 1024 - 1 - (expires + 1023) % 1024,
		     "a deadline on the grid is hard");
}

/* Under the policy, a halted vCPU's timer that ran at its grid point
 * counts as deferred and aligned; one that ran on time counts as neither. */
Test(apic, deferred_expiries_are_counted)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;
	uint64_t expires;

	apic_set_timer_policy(v, BOUND_NS, LULL_MISSED_ONE);
	wr(v, APIC_LVT_TIMER, 0x90);
	wr(v, APIC_TIMER_DIVIDE, 0xb);
	do {
		wr(v, APIC_TIMER_INITIAL, 2000000);
		expires = wheel_timer_expires(&a->timer);
	} while (expires % GRID_NS == 0);
	wheel_advance(&v->wheel, expires + 2048);
	cr_assert_eq(a->timer_fired, 1);
	cr_assert_eq(a->timer_deferred, 0, "ran on time, counted deferred");
	cr_assert_eq(apic_deliverable(a), 0x90);
	apic_delivered(a, 0x90);
	wr(v, APIC_EOI, 0);

	do {
		wr(v, APIC_TIMER_INITIAL, 2000000);
		expires = wheel_timer_expires(&a->timer);
	} while (expires % GRID_NS == 0);
	v->halted = true;
	wheel_advance(&v->wheel, wheel_next_hard_expiry(&v->wheel));
	cr_assert_eq(a->timer_fired, 2);
	cr_assert_eq(a->timer_deferred, 1);
	cr_assert_eq(a->timer_aligned, 1);
	cr_assert_eq(v->stats.timers_fired_deferred, 2, "both were deferrable");
	cr_assert_eq(apic_deliverable(a), 0x90, "deferred, not lost");
}

Test(apic, tsc_deadline_past_zero_and_readback)
{
	struct vcpu *v = x2apic_on(0);
	struct apic *a = &v->apic;
	uint64_t value, now = clock_now_ns();

	apic_wrmsr(v, MSR_IA32_TSC_DEADLINE, now + 5000000);
	cr_assert_not(wheel_timer_pending(&a->timer),
		      "ignored outside TSC-deadline mode");
	wr(v, APIC_LVT_TIMER, (APIC_TIMER_TSC_DEADLINE << 17) | 0xa0);
	apic_wrmsr(v, MSR_IA32_TSC_DEADLINE, now + 5000000);
	apic_rdmsr(v, MSR_IA32_TSC_DEADLINE, &value);
	cr_assert_eq(value, now + 5000000);
	apic_wrmsr(v, MSR_IA32_TSC_DEADLINE, 0);
	cr_assert_not(wheel_timer_pending(&a->timer), "0 disarms");
	apic_wrmsr(v, MSR_IA32_TSC_DEADLINE, 1);
	wheel_advance(&v->wheel, clock_now_ns() + 2048);
	cr_assert_eq(apic_deliverable(a), 0xa0,
		     "a past deadline fires at once");
	apic_rdmsr(v, MSR_IA32_TSC_DEADLINE, &value);
	cr_assert_eq(value, 0, "and reads 0 after");
	cr_assert_eq(rd(v, APIC_TIMER_CURRENT), 0);
}

Test(apic, software_disable_masks_every_lvt)
{
	struct vcpu *v = x2apic_on(0);

	wr(v, APIC_LVT_LINT0, 0x700);
	cr_assert_eq(rd(v, APIC_LVT_LINT0), 0x700);
	wr(v, APIC_SVR, 0x1f);
	cr_assert_eq(rd(v, APIC_SVR), 0x1f, "the spurious vector reads back");
	cr_assert_eq(rd(v, APIC_LVT_LINT0), 0x700 | APIC_LVT_MASKED);
	wr(v, APIC_LVT_LINT0, 0x700);
	cr_assert_eq(rd(v, APIC_LVT_LINT0), 0x700 | APIC_LVT_MASKED,
		     "and keeps them masked");
}

Test(apic, icr_self_others_and_errors)
{
	struct vcpu *v = x2apic_on(2);
	struct apic *a = &v->apic;

	wr(v, APIC_ICR, (APIC_SH_SELF << 18) | 0x70);
	cr_assert_eq(apic_deliverable(a), 0x70, "self shorthand stays local");
	cr_assert_eq(nr_routed, 0);
	wr(v, APIC_SELF_IPI, 0x71);
	cr_assert_eq(apic_deliverable(a), 0x71);
	wr(v, APIC_ICR, (7ull << 32) | (APIC_DM_SIPI << 8) | 0x08);
	cr_assert_eq(nr_routed, 1);
	cr_assert_eq(routed[0].dest, 7);
	cr_assert_eq(routed[0].mode, APIC_DM_SIPI);
	cr_assert_eq(routed[0].vector, 0x08);
	cr_assert(routed[0].x2apic);
	/* INIT level de-assert (trigger level, level 0) is a no-op */
	wr(v, APIC_ICR, (1ull << 32) | (1u << 15) | (APIC_DM_INIT << 8));
	cr_assert_eq(nr_routed, 1);
	wr(v, APIC_ICR, (1ull << 32) | 0x05); /* fixed vector 5: illegal */
	cr_assert_eq(nr_routed, 1);
	cr_assert_eq(rd(v, APIC_ESR), 0, "ESR latches on its next write");
	wr(v, APIC_ESR, 0);
	cr_assert_eq(rd(v, APIC_ESR), APIC_ESR_SEND_ILLEGAL);
}

/* An NMI IPI reaches its target, counted there for its thread to queue. */
Test(apic, nmi_ipi_is_posted_to_its_target)
{
	struct vcpu *v = x2apic_on(3);
	struct apic_ipi nmi = { .x2apic = true,
				.dest = 3,
				.mode = APIC_DM_NMI };

	cr_assert(vcpu_send_ipi(NULL, v, &nmi));
	cr_assert(vcpu_send_ipi(NULL, v, &nmi));
	cr_assert_eq(atomic_load(&v->nmi_posted), 2);
	cr_assert_eq(apic_deliverable(&v->apic), -1, "not a vector");
	nmi.dest = 4;
	cr_assert(vcpu_send_ipi(NULL, v, &nmi), "not ours: taken, ignored");
	cr_assert_eq(atomic_load(&v->nmi_posted), 2);
	nmi.mode = APIC_DM_SMI;
	nmi.dest = 3;
	cr_assert_not(vcpu_send_ipi(NULL, v, &nmi), "SMI is not modelled");
}

Test(apic, destinations)
{
	struct vcpu *v = x2apic_on(17);
	struct apic_ipi ipi = { .x2apic = true, .dest = 17 };

	cr_assert(apic_accepts(&v->apic, &ipi));
	ipi.dest = 16;
	cr_assert_not(apic_accepts(&v->apic, &ipi));
	ipi.dest = 0xffffffff;
	cr_assert(apic_accepts(&v->apic, &ipi), "broadcast");
	ipi.logical = true;
	ipi.dest = (1u << 16) | (1u << 1); /* cluster 1, member 1 = ID 17 */
	cr_assert(apic_accepts(&v->apic, &ipi));
	ipi.dest = (1u << 16) | (1u << 2);
	cr_assert_not(apic_accepts(&v->apic, &ipi));
	ipi.dest = (0u << 16) | (1u << 1);
	cr_assert_not(apic_accepts(&v->apic, &ipi), "cluster 0 is not ours");
}

/* The I/O APIC's 8-bit logical destinations at x2APIC-mode APICs. */
Test(apic, ioapic_logical_destination_at_an_x2apic)
{
	struct vcpu *v = x2apic_on(2);
	struct apic_ipi ipi = { .x2apic = false, .logical = true, .dest = 0x4 };

	cr_assert(apic_accepts(&v->apic, &ipi), "cluster 0, member 2");
	ipi.dest = 0x0b;
	cr_assert_not(apic_accepts(&v->apic, &ipi));
	ipi.dest = 0xff;
	cr_assert(apic_accepts(&v->apic, &ipi), "broadcast");
	v = x2apic_on(17); /* cluster 1: no 8-bit destination reaches it */
	ipi.dest = 0x02;
	cr_assert_not(apic_accepts(&v->apic, &ipi));
}

Test(apic, xapic_mmio_reads_the_same_registers)
{
	struct vcpu *v = fresh(4);
	uint32_t value = 0;

	cr_assert(apic_mmio(v, APIC_DEFAULT_BASE + APIC_ID * 16, false, 4,
			    (uint8_t *)&value));
	cr_assert_eq(value, 4u << 24, "xAPIC ID in bits 31:24");
	cr_assert(apic_mmio(v, APIC_DEFAULT_BASE + APIC_VERSION * 16, false, 4,
			    (uint8_t *)&value));
	cr_assert_eq(value, APIC_VERSION_VALUE);
	value = APIC_SVR_ENABLE | 0xff;
	cr_assert(apic_mmio(v, APIC_DEFAULT_BASE + APIC_SVR * 16, true, 4,
			    (uint8_t *)&value));
	cr_assert_eq(v->apic.svr, APIC_SVR_ENABLE | 0xff);
	cr_assert_not(apic_mmio(v, APIC_DEFAULT_BASE - 16, false, 4,
				(uint8_t *)&value),
		      "below the page is not the APIC's");
	wr(x2apic_on(4), APIC_TPR, 0);
	cr_assert_not(
		apic_mmio(v, APIC_DEFAULT_BASE, false, 4, (uint8_t *)&value),
		"x2APIC mode has no MMIO page");
}
