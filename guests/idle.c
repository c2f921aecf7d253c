// SPDX-License-Identifier: MIT
/*
 * idle: a mostly idle SMP guest, the case deferrable timers exist for.
 *
 * Every vCPU arms a 10 ms periodic DEFERRABLE housekeeping tick (slot 2)
 * and halts. vCPU 0 also arms one HARD one-shot (slot 3) seconds=N
 * (default 2) ahead: it is the only thing that may wake the host. When it
 * fires, vCPU 0 sends an IPI to every other vCPU so they run again. Each
 * vCPU then takes its deferred tick(s) - delivered while halted they
 * could not be - and checks its shared-page counters for slot 2:
 * delivered >= 1 (the tick reached it when it ran again) and, for the
 * record, merged (ticks collapsed into that delivery). vCPU 0 exits 0
 * when all have reported. In --timer-mode strict every tick wakes the
 * vCPU, so delivered is large and merged about 0: both pass.
 *
 * The APs wait at the runtime's gate until vCPU 0 has installed the
 * handlers, so that no tick arrives on a vector without one.
 *
 * Under QEMU (no lull) there is no deferral: vCPU 0 takes a 10 ms LAPIC
 * tick and stops after seconds=N; delivered = ticks handled, merged = 0.
 *
 * delivery=upcall|vector (lull; default upcall where lull has it): the
 * housekeeping tick and the end one-shot go through each vCPU's upcall
 * (upcall.h), or each on its own vector. The wake-up IPI is a vector.
 *
 * Under lull each vCPU, once its tick is stopped, waits until everything
 * raised is handled (lull_drain) and prints "idle: account" lines for
 * bench/soak.
 *   idle: vcpu I delivered=D merged=M handled=H
 *   idle: PASS vcpus=N seconds=S delivery=D delivered=.. merged=..
 */
#include "guest.h"

#define VEC_FENCE 0x3f /* below the ones it drains */
#define VEC_HK 0x40
#define VEC_END 0x41
#define VEC_WAKE 0x42
#define SLOT_HK 2
#define SLOT_END 3
#define SLOT_FENCE 4
#define HK_NS 10000000ull
#define SETTLE_NS 50000000ull /* wait for deferred ticks after waking */

struct vcpu_result {
	uint64_t handled; /* housekeeping handler runs */
	uint64_t woken_by; /* VEC_END (vCPU 0) or VEC_WAKE handler runs */
	uint64_t fences;
	uint64_t vector_irqs; /* interrupts that came on their own vector */
	uint64_t first; /* the tick's first deadline */
	uint64_t delivered, merged;
	bool woken, reported;
};

static struct vcpu_result res[RT_MAX_VCPUS];
static unsigned armed;
static int delivery;
static uint64_t end_ns; /* LAPIC fallback only */

static void hk(void)
{
	struct vcpu_result *me = &res[smp_id()];

	me->handled++;
	if (timer_backend() == TIMER_LAPIC && clock_ns() >= end_ns)
		WRITE_ONCE(me->woken, true);
	timer_irq_done();
}

static void wake(void)
{
	struct vcpu_result *me = &res[smp_id()];

	me->woken_by++;
	WRITE_ONCE(me->woken, true);
}

static void on_hk(unsigned vector)
{
	(void)vector;
	res[smp_id()].vector_irqs++;
	hk();
}

static void on_wake(unsigned vector)
{
	(void)vector;
	res[smp_id()].vector_irqs++;
	wake();
}

static void hk_slot(unsigned slot)
{
	(void)slot;
	hk();
}

static void end_slot(unsigned slot)
{
	(void)slot;
	wake();
}

static void on_fence(unsigned vector)
{
	(void)vector;
	res[smp_id()].vector_irqs++;
	res[smp_id()].fences++;
}

/*
 * The tick is stopped. Every vCPU ran its wheel at or after end_ns: vCPU 0
 * for its hard one-shot, the others after its IPI. None ticked after hi.
 */
static void account(unsigned id, uint64_t hi)
{
	struct vcpu_result *me = &res[id];
	struct account a = { .guest = "idle", .lo = end_ns, .hi = hi };

	lull_drain(SLOT_FENCE, VEC_FENCE, &me->fences);
	a.slot = SLOT_HK;
	a.deferrable = true;
	a.first = me->first;
	a.period = HK_NS;
	a.handled = me->handled;
	account_print(&a);
	a.deferrable = false;
	a.first = a.period = 0;
	if (!id) {
		a.slot = SLOT_END;
		a.handled = me->woken_by;
		account_print(&a);
	}
	a.slot = SLOT_FENCE;
	a.handled = me->fences;
	account_print(&a);
	/* interrupts, as lull counts its injections: upcalls, not slots */
	printf("idle: account vcpu=%u irqs=%lu\n", id,
	       me->vector_irqs +
		       (delivery == DELIVERY_UPCALL ? upcall_count() : 0));
}

static void halt_until_woken(struct vcpu_result *me)
{
	cli();
	while (!READ_ONCE(me->woken)) {
		sti_hlt();
		cli();
	}
}

/*
 * The wake-up interrupt and the deferred tick are injected one after the
 * other; give the tick a moment (interrupts on, not halted) to arrive.
 */
static void settle(struct vcpu_result *me)
{
	uint64_t until = clock_ns() + SETTLE_NS;

	sti();
	while (!READ_ONCE(me->handled) && clock_ns() < until)
		cpu_relax();
	cli();
}

static void report(unsigned id)
{
	struct vcpu_result *me = &res[id];

	timer_stop(SLOT_HK);
	if (timer_backend() == TIMER_LULL) {
		account(id, clock_ns());
		me->delivered = shared_page()->slot[SLOT_HK].delivered;
		me->merged = shared_page()->slot[SLOT_HK].merged;
	} else {
		me->delivered = me->handled;
	}
	printf("idle: vcpu %u delivered=%lu merged=%lu handled=%lu\n", id,
	       me->delivered, me->merged, me->handled);
	__atomic_store_n(&me->reported, true, __ATOMIC_RELEASE);
}

/* This vCPU's upcall, when it is the delivery: 0 or negative errno. */
static long bind_upcall(void)
{
	long r;

	if (delivery != DELIVERY_UPCALL)
		return 0;
	r = upcall_init();
	upcall_bind(SLOT_HK, hk_slot);
	upcall_bind(SLOT_END, end_slot);
	return r;
}

static unsigned bound(void)
{
	return delivery == DELIVERY_UPCALL ? TIMER_UPCALL : 0;
}

static long arm_housekeeping(struct vcpu_result *me)
{
	long r = bind_upcall();

	me->first = clock_ns() + HK_NS;
	if (r < 0)
		; /* reported by the caller */
	else if (timer_backend() == TIMER_LULL)
		r = lull_timer_set(SLOT_HK, me->first,
				   bound() ? 0 : VEC_HK,
				   LULL_TIMER_DEFERRABLE | LULL_TIMER_PERIODIC |
					   bound(),
				   HK_NS, 0);
	else
		r = timer_periodic(SLOT_HK, HK_NS, VEC_HK, 0);
	__atomic_fetch_add(&armed, 1, __ATOMIC_RELEASE);
	return r;
}

void guest_ap_main(unsigned id)
{
	struct vcpu_result *me = &res[id];

	smp_wait_gate(); /* vCPU 0's handlers first: our tick uses them */
	timer_init();
	if (arm_housekeeping(me) < 0)
		printf("idle: vcpu %u could not arm its tick\n", id);
	halt_until_woken(me);
	settle(me);
	report(id);
	for (;;) {
		cli();
		hlt();
	}
}

int guest_main(void)
{
	uint64_t seconds = cmdline_u64("seconds", 2);
	unsigned n = smp_count();
	enum timer_backend be = timer_init();
	uint64_t sum_d = 0, sum_m = 0;
	bool ok = true;
	long r;

	if (be == TIMER_NONE) {
		printf("idle: FAIL no timer backend (hv %s, clock %s)\n",
		       hv_name(rt_boot.hv), clock_name());
		return 1;
	}
	delivery = delivery_choose();
	if (delivery < 0) {
		printf("idle: FAIL delivery= takes upcall or vector\n");
		return 1;
	}
	irq_set_handler(VEC_HK, on_hk);
	irq_set_handler(VEC_END, on_wake);
	irq_set_handler(VEC_WAKE, on_wake);
	irq_set_handler(VEC_FENCE, on_fence);
	smp_open_gate();
	printf("idle: backend=%s clock=%s delivery=%s vcpus=%u: 10 ms %s ticks, end in %lu s\n",
	       timer_backend_name(), clock_name(), delivery_name(delivery), n,
	       be == TIMER_LULL ? "deferrable" : "LAPIC", seconds);

	cli();
	end_ns = clock_ns() + seconds * 1000000000ull;
	r = arm_housekeeping(&res[0]);
	while (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) < n)
		cpu_relax();
	if (be == TIMER_LULL && r >= 0)
		r = timer_oneshot(SLOT_END, end_ns, VEC_END, bound());
	if (r < 0) {
		printf("idle: FAIL arming timers returned %ld\n", r);
		return 1;
	}
	halt_until_woken(&res[0]);
	for (unsigned i = 1; i < n; i++)
		lull_send_ipi(i, VEC_WAKE);
	settle(&res[0]);
	report(0);

	for (unsigned i = 0; i < n; i++) {
		while (!__atomic_load_n(&res[i].reported, __ATOMIC_ACQUIRE))
			cpu_relax();
		sum_d += res[i].delivered;
		sum_m += res[i].merged;
		if (res[i].delivered < 1) {
			printf("idle: vcpu %u got no housekeeping tick delivered\n",
			       i);
			ok = false;
		}
	}
	if (!ok) {
		printf("idle: FAIL deferred ticks were not delivered on wake\n");
		return 1;
	}
	if (upcall_unbound()) {
		printf("idle: FAIL %lu upcall bit(s) for slots without a function\n",
		       upcall_unbound());
		return 1;
	}
	if (irq_unexpected_count()) {
		printf("idle: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	printf("idle: PASS vcpus=%u seconds=%lu delivery=%s delivered=%lu merged=%lu\n",
	       n, seconds, delivery_name(delivery), sum_d, sum_m);
	return 0;
}
