// SPDX-License-Identifier: MIT
#include <asm/kvm_para.h>
#include <errno.h>
#include <string.h>

#include "container_of.h"
#include "lull_abi.h"
#include "timers/clock.h"
#include "timers/periodic.h"
#include "vcpu/apic.h"
#include "vcpu/vcpu.h"

/* Writable bits of each LVT entry (delivery status and remote IRR read 0). */
static const uint32_t lvt_writable[APIC_NR_LVT] = {
	[APIC_LVT_TIMER - APIC_LVT_TIMER] = 0x700ff,
	[APIC_LVT_THERMAL - APIC_LVT_TIMER] = 0x107ff,
	[APIC_LVT_PERF - APIC_LVT_TIMER] = 0x107ff,
	[APIC_LVT_LINT0 - APIC_LVT_TIMER] = 0x1a7ff,
	[APIC_LVT_LINT1 - APIC_LVT_TIMER] = 0x1a7ff,
	[APIC_LVT_ERROR - APIC_LVT_TIMER] = 0x100ff,
};

static int highest(const uint64_t *map)
{
	for (int w = 3; w >= 0; w--)
		if (map[w])
			return w * 64 + 63 - __builtin_clzll(map[w]);
	return -1;
}

static bool x2apic_mode(const struct apic *a)
{
	return atomic_load_explicit(&a->base, memory_order_relaxed) &
	       APIC_BASE_EXTD;
}

static bool sw_enabled(const struct apic *a)
{
	return (atomic_load_explicit(&a->base, memory_order_relaxed) &
		APIC_BASE_EN) &&
	       (a->svr & APIC_SVR_ENABLE);
}

static uint32_t *lvt(struct apic *a, unsigned reg)
{
	return &a->lvt[reg - APIC_LVT_TIMER];
}

static unsigned timer_mode(const struct apic *a)
{
	unsigned mode = (a->lvt[0] >> 17) & 3;

	/* the reserved mode 3 counts as one-shot, as KVM treats it */
	return mode == 3 ? APIC_TIMER_ONESHOT : mode;
}

static uint32_t ppr(const struct apic *a)
{
	int in_service = highest(a->isr);
	uint32_t isrv = in_service < 0 ? 0 : (uint32_t)in_service;

	if ((a->tpr & 0xf0) >= (isrv & 0xf0))
		return a->tpr & 0xff;
	return isrv & 0xf0;
}

uint32_t apic_raise(struct apic *a, uint8_t vector, uint32_t times,
		    bool accumulate, enum apic_source src, uint64_t since)
{
	uint32_t owed = a->owed[vector], merged = 0;

	/*
	 * A hard expiry that rides a delivery already owed (a deferred one,
	 * an IPI, an upcall it sets a bit for) is what that delivery is late
	 * for now: time it as hard, from this expiry, or --stats would lose
	 * the lateness of every hard timer that coincides with another.
	 */
	if (owed && src == APIC_SRC_HARD &&
	    a->source[vector] != APIC_SRC_HARD) {
		a->source[vector] = APIC_SRC_HARD;
		a->since[vector] = since;
	}
	if (!times)
		return 0;
	if (owed) {
		if (!accumulate) {
			merged = times;
			times = 0;
		}
	} else {
		a->irr[vector / 64] |= 1ull << (vector % 64);
		a->since[vector] = since;
		a->source[vector] = (uint8_t)src;
	}
	if (owed + times > APIC_MAX_OWED) {
		merged += owed + times - APIC_MAX_OWED;
		times = APIC_MAX_OWED - owed;
	}
	a->owed[vector] = owed + times;
	return merged;
}

int apic_deliverable(const struct apic *a)
{
	int vector = highest(a->irr);

	if (vector < 0 || !sw_enabled(a))
		return vector; /* the legacy line: no priorities */
	if (((uint32_t)vector & 0xf0) <= (ppr(a) & 0xf0))
		return -1;
	return vector;
}

void apic_delivered(struct apic *a, uint8_t vector)
{
	if (!a->owed[vector])
		return;
	if (--a->owed[vector] == 0)
		a->irr[vector / 64] &= ~(1ull << (vector % 64));
	if (sw_enabled(a))
		a->isr[vector / 64] |= 1ull << (vector % 64);
}

void apic_set_cr8(struct apic *a, uint8_t cr8)
{
	a->tpr = (uint32_t)(cr8 & 0xf) << 4;
}

void apic_set_trigger(struct apic *a, uint8_t vector, bool level)
{
	if (level)
		a->tmr[vector / 64] |= 1ull << (vector % 64);
	else
		a->tmr[vector / 64] &= ~(1ull << (vector % 64));
}

/*
 * Retires the highest vector in service. One accepted level-triggered
 * (TMR set) has a source that waits for this EOI before it may raise it
 * again, an I/O APIC's remote IRR: the EOI is broadcast to it.
 */
static void eoi(struct vcpu *v)
{
	struct apic *a = &v->apic;
	int vector = highest(a->isr);
	uint64_t bit;

	if (vector < 0)
		return;
	bit = 1ull << (vector % 64);
	a->isr[vector / 64] &= ~bit;
	if ((a->tmr[vector / 64] & bit) && v->ops->level_eoi)
		v->ops->level_eoi(v, (uint8_t)vector);
}

/* ---- PV EOI ---- */

/*
 * Whether the EOI that comes next can only retire the one vector in
 * service with nothing waiting behind it, as KVM decides it: any raise
 * pending, or more than one vector in service, wants the EOI's exit, so
 * that what it lets through is delivered at once; a level-triggered one
 * has an I/O APIC waiting for its EOI.
 */
static bool pv_eoi_may_skip_exit(const struct apic *a)
{
	unsigned in_service = 0;
	int vector = highest(a->isr);

	for (unsigned w = 0; w < 4; w++) {
		if (a->irr[w])
			return false;
		in_service += (unsigned)__builtin_popcountll(a->isr[w]);
	}
	return in_service == 1 &&
	       !(a->tmr[vector / 64] & (1ull << (vector % 64)));
}

void apic_pv_eoi_offer(struct vcpu *v)
{
	struct apic *a = &v->apic;

	if (!a->pv_eoi_flag || !pv_eoi_may_skip_exit(a))
		return;
	/* guest memory: other vCPUs may touch it, never tear it */
	__atomic_store_n(a->pv_eoi_flag, KVM_PV_EOI_ENABLED, __ATOMIC_RELAXED);
	a->pv_eoi_offered = true;
}

void apic_pv_eoi_collect(struct vcpu *v)
{
	struct apic *a = &v->apic;

	if (!a->pv_eoi_offered)
		return;
	a->pv_eoi_offered = false;
	if (__atomic_load_n(a->pv_eoi_flag, __ATOMIC_RELAXED) &
	    KVM_PV_EOI_ENABLED) {
		__atomic_store_n(a->pv_eoi_flag, KVM_PV_EOI_DISABLED,
				 __ATOMIC_RELAXED);
		return;
	}
	a->pv_eois++;
	eoi(v);
}

/*
 * MSR_KVM_PV_EOI_EN: bit 0 enables, the rest is the flag's guest-physical
 * address, 4-byte aligned, as KVM takes it. A flag outside RAM is a #GP.
 */
static int write_pv_eoi(struct vcpu *v, uint64_t value)
{
	struct apic *a = &v->apic;
	uint64_t gpa = value & ~(uint64_t)KVM_MSR_ENABLED;
	uint8_t *flag = NULL;

	if (a->pv_eoi_hidden || gpa % 4)
		return -EPERM;
	if (value & KVM_MSR_ENABLED) {
		flag = v->ops->guest_ram ? v->ops->guest_ram(v, gpa, 1) : NULL;
		if (!flag)
			return -EPERM;
	}
	a->pv_eoi_msr = value;
	a->pv_eoi_flag = flag;
	return 0;
}

/* An error the APIC detected: latched for the next ESR write, and
 * signalled through the error LVT when that is unmasked. */
static void apic_error(struct apic *a, uint32_t bits)
{
	uint32_t entry = *lvt(a, APIC_LVT_ERROR);

	a->esr_pending |= bits;
	if (!(entry & APIC_LVT_MASKED) && (entry & 0xff) >= 16)
		apic_raise(a, (uint8_t)entry, 1, false, APIC_SRC_IPI, 0);
}

/* A vector from this APIC's own sources (LVT, self-IPI). */
static bool local_vector(struct apic *a, uint32_t vector)
{
	if (vector >= 16)
		return true;
	apic_error(a, APIC_ESR_RECV_ILLEGAL);
	return false;
}

/* ---- the timer ---- */

static void timer_stop(struct vcpu *v)
{
	vcpu_timer_stop(v, &v->apic.timer);
}

/*
 * Under a max deferral B (apic_set_timer_policy) the timer, in any mode,
 * is deferrable: on a running vCPU it fires on time, on a halted one it
 * waits for another wake, and at the latest wakes the host at the first
 * point of the grid at or after its expiry: the multiples of B - B/16 on
 * CLOCK_MONOTONIC. The points are the same in every process on the host,
 * so the deferred timers of many VMs wake it at the same instants, and
 * the last sixteenth of B is the host's, to wake the vCPU within B when
 * all of them wake at once. An expiry on a point is hard: a deferrable
 * timer with no tolerance would wait for good.
 */
static uint64_t grid_wait(const struct apic *a, uint64_t expiry)
{
	uint64_t step = a->max_defer_ns - a->max_defer_ns / 16;

	return step ? (step - expiry % step) % step : 0;
}

static void timer_arm(struct vcpu *v, uint64_t expiry)
{
	struct apic *a = &v->apic;
	uint64_t wait = grid_wait(a, expiry);

	vcpu_timer_arm(v, &a->timer, expiry, wait != 0, wait);
}

static void timer_expired(struct wheel_timer *t, uint64_t now)
{
	struct vcpu *v = container_of(t, struct vcpu, apic.timer);
	struct apic *a = &v->apic;
	uint64_t expiry = wheel_timer_expires(t);
	uint32_t entry = a->lvt[0];
	uint64_t deliver = 1;
	bool deferred = grid_wait(a, expiry) != 0;

	if (timer_mode(a) == APIC_TIMER_TSC_DEADLINE) {
		/*
		 * Armed by a clock that only approximates the guest's TSC
		 * where the host's is not stable: due once the TSC is there.
		 * Run ahead to `now` (the timer advance), a TSC a little short
		 * of it holds the vector at the gate instead of re-arming.
		 */
		uint64_t due = v->ops->tsc_to_ns(v, a->tsc_deadline);

		if (due > now && !vcpu_hold_until(v, due)) {
			a->timer_rearmed++;
			a->timer_rearmed_halted += v->halted;
			timer_arm(v, due);
			return;
		}
	}
	a->timer_fired++;
	if (deferred && v->halted && now > sat_add(expiry, v->slop_ns)) {
		a->timer_deferred++;
		if (now >= sat_add(expiry, grid_wait(a, expiry)))
			a->timer_aligned++;
	}
	switch (timer_mode(a)) {
	case APIC_TIMER_PERIODIC: {
		struct periodic_catch_up c = periodic_catch_up(
			a->missed_policy, expiry, a->timer_period_ns,
			a->max_defer_ns, now);

		vcpu_count_catch_up(v, &c);
		deliver = c.deliver;
		timer_arm(v, c.next);
		break;
	}
	case APIC_TIMER_TSC_DEADLINE:
		a->tsc_deadline = 0; /* it disarms itself */
		break;
	default:
		break; /* one-shot: the current count reads 0 from now on */
	}
	if (deliver && !(entry & APIC_LVT_MASKED) &&
	    local_vector(a, entry & 0xff))
		vcpu_raise_timer(v, (uint8_t)entry, (uint32_t)deliver,
				 a->missed_policy == LULL_MISSED_ALL, deferred,
				 expiry);
}

static uint64_t divisor_of(uint32_t reg)
{
	unsigned code = (reg & 3) | ((reg & 8) >> 1);

	return 1ull << ((code + 1) & 7);
}

static void set_initial_count(struct vcpu *v, uint32_t count)
{
	struct apic *a = &v->apic;
	uint64_t period;

	if (timer_mode(a) == APIC_TIMER_TSC_DEADLINE)
		return; /* ignored in that mode */
	a->timer_initial = count;
	a->timer_divisor = divisor_of(a->timer_divide_reg);
	if (!count) {
		timer_stop(v);
		a->timer_period_ns = 0;
		return;
	}
	period = (uint64_t)count * a->timer_divisor; /* 1 ns per bus cycle */
	if (timer_mode(a) == APIC_TIMER_PERIODIC)
		period = vcpu_floor_period(v, period);
	a->timer_period_ns = period;
	timer_arm(v, sat_add(clock_now_ns(), period));
}

static uint32_t current_count(struct vcpu *v)
{
	struct apic *a = &v->apic;
	uint64_t now = clock_now_ns(), expires, left;

	if (timer_mode(a) == APIC_TIMER_TSC_DEADLINE ||
	    !wheel_timer_pending(&a->timer))
		return 0;
	expires = wheel_timer_expires(&a->timer);
	if (expires > now)
		left = expires - now;
	else if (timer_mode(a) == APIC_TIMER_PERIODIC)
		/* due, not yet run: the count has already reloaded */
		left = a->timer_period_ns -
		       (now - expires) % a->timer_period_ns;
	else
		return 0;
	left /= a->timer_divisor;
	return left > a->timer_initial ? a->timer_initial : (uint32_t)left;
}

static void set_tsc_deadline(struct vcpu *v, uint64_t tsc)
{
	struct apic *a = &v->apic;
	uint64_t due;

	if (timer_mode(a) != APIC_TIMER_TSC_DEADLINE)
		return; /* ignored outside that mode */
	a->tsc_deadline = tsc;
	if (!tsc) {
		timer_stop(v);
		return;
	}
	due = v->ops->tsc_to_ns(v, tsc);
	/* a deadline already past is due now: it runs on the way back in */
	timer_arm(v, due ? due : clock_now_ns());
}

static void write_lvt(struct vcpu *v, unsigned reg, uint32_t value)
{
	struct apic *a = &v->apic;
	uint32_t *entry = lvt(a, reg);

	value &= lvt_writable[reg - APIC_LVT_TIMER];
	/* a software-disabled APIC keeps every LVT masked */
	if (!(a->svr & APIC_SVR_ENABLE))
		value |= APIC_LVT_MASKED;
	if (reg == APIC_LVT_TIMER && ((value ^ *entry) & (3u << 17))) {
		/* a new mode starts disarmed, as KVM's does */
		timer_stop(v);
		a->timer_initial = 0;
		a->timer_period_ns = 0;
		a->tsc_deadline = 0;
	}
	*entry = value;
}

/*
 * Where KVM holds the TSC of a vCPU that is out, a halted vCPU reaches its
 * deadline later than the running one it was armed on would have
 * (pvclock_tsc_to_ns): re-armed for then, it wakes the host once for it,
 * rather than first too early to find it not yet reached.
 */
void apic_halting(struct vcpu *v)
{
	struct apic *a = &v->apic;
	uint64_t due;

	if (timer_mode(a) != APIC_TIMER_TSC_DEADLINE || !a->tsc_deadline ||
	    !wheel_timer_pending(&a->timer))
		return;
	due = v->ops->tsc_to_ns(v, a->tsc_deadline);
	if (due > wheel_timer_expires(&a->timer))
		timer_arm(v, due);
}

void apic_set_timer_policy(struct vcpu *v, uint64_t max_defer_ns,
			   unsigned missed_policy)
{
	v->apic.max_defer_ns = max_defer_ns;
	v->apic.missed_policy = missed_policy;
}

void apic_hide_x2apic(struct vcpu *v)
{
	v->apic.x2apic_hidden = true;
}

void apic_hide_pv_eoi(struct vcpu *v)
{
	v->apic.pv_eoi_hidden = true;
}

/* ---- state ---- */

static void reset_registers(struct vcpu *v)
{
	struct apic *a = &v->apic;

	timer_stop(v);
	memset(a->irr, 0, sizeof(a->irr));
	memset(a->owed, 0, sizeof(a->owed));
	memset(a->isr, 0, sizeof(a->isr));
	memset(a->tmr, 0, sizeof(a->tmr));
	a->tpr = 0;
	a->svr = 0xff;
	a->esr = a->esr_pending = 0;
	a->icr = 0;
	for (unsigned i = 0; i < APIC_NR_LVT; i++)
		a->lvt[i] = APIC_LVT_MASKED;
	a->timer_initial = 0;
	a->timer_divide_reg = 0;
	a->timer_divisor = divisor_of(0);
	a->timer_period_ns = 0;
	a->tsc_deadline = 0;
	atomic_store(&a->xapic_ldr, 0);
	atomic_store(&a->xapic_dfr, 0xffffffffu);
}

void apic_init(struct vcpu *v, bool bsp)
{
	struct apic *a = &v->apic;

	wheel_timer_init(&a->timer, timer_expired, 0);
	a->id = v->index;
	atomic_init(&a->base, APIC_DEFAULT_BASE | APIC_BASE_EN |
				      (bsp ? APIC_BASE_BSP : 0));
	atomic_init(&a->xapic_ldr, 0);
	atomic_init(&a->xapic_dfr, 0xffffffffu);
	reset_registers(v);
}

/* INIT turns PV EOI off, as on KVM: the guest enables it anew. */
void apic_init_reset(struct vcpu *v)
{
	reset_registers(v);
	v->apic.pv_eoi_msr = 0;
	v->apic.pv_eoi_flag = NULL;
	v->apic.pv_eoi_offered = false;
}

/* ---- IPIs ---- */

static uint32_t x2apic_ldr(uint32_t id)
{
	return ((id >> 4) << 16) | (1u << (id & 0xf));
}

bool apic_accepts(const struct apic *a, const struct apic_ipi *ipi)
{
	uint32_t ldr, dfr;

	if (!ipi->logical) {
		if (ipi->x2apic)
			return ipi->dest == 0xffffffffu || ipi->dest == a->id;
		return ipi->dest == 0xff || ipi->dest == a->id;
	}
	/*
	 * An 8-bit logical destination (the I/O APIC's) reaching an APIC in
	 * x2APIC mode is matched against its x2APIC LDR, as KVM does: it
	 * names members of cluster 0, and 0xff is still everyone.
	 */
	if (ipi->x2apic || x2apic_mode(a)) {
		if (ipi->dest == (ipi->x2apic ? 0xffffffffu : 0xffu))
			return true;
		ldr = x2apic_ldr(a->id);
		return (ipi->dest >> 16) == (ldr >> 16) &&
		       (ipi->dest & ldr & 0xffff);
	}
	ldr = atomic_load_explicit(&a->xapic_ldr, memory_order_relaxed) >> 24;
	dfr = atomic_load_explicit(&a->xapic_dfr, memory_order_relaxed);
	if (ipi->dest == 0xff)
		return true;
	if ((dfr >> 28) == 0xf) /* flat model: a bit per APIC */
		return (ipi->dest & ldr) != 0;
	/* cluster model: cluster in the high nibble, members in the low */
	return (ipi->dest >> 4) == (ldr >> 4) && (ipi->dest & ldr & 0xf);
}

static void send_ipi(struct vcpu *v, uint64_t icr, uint32_t dest)
{
	struct apic *a = &v->apic;
	struct apic_ipi ipi = {
		.dest = dest,
		.vector = (uint8_t)icr,
		.mode = (uint8_t)((icr >> 8) & 7),
		.shorthand = (uint8_t)((icr >> 18) & 3),
		.logical = icr & (1u << 11),
		.x2apic = x2apic_mode(a),
	};

	/* INIT level de-assert: a no-op since the integrated APIC */
	if (ipi.mode == APIC_DM_INIT && (icr & (1u << 15)) &&
	    !(icr & (1u << 14)))
		return;
	if ((ipi.mode == APIC_DM_FIXED || ipi.mode == APIC_DM_LOWEST) &&
	    ipi.vector < 16) {
		apic_error(a, APIC_ESR_SEND_ILLEGAL);
		return;
	}
	if (ipi.shorthand == APIC_SH_SELF) {
		if (ipi.mode == APIC_DM_FIXED)
			apic_raise(a, ipi.vector, 1, false, APIC_SRC_IPI, 0);
		return;
	}
	v->ops->ipi(v, &ipi);
}

/* ---- registers ---- */

static int read_reg(struct vcpu *v, unsigned reg, uint64_t *value)
{
	struct apic *a = &v->apic;
	bool x2 = x2apic_mode(a);

	switch (reg) {
	case APIC_ID:
		*value = x2 ? a->id : a->id << 24;
		return 0;
	case APIC_VERSION:
		*value = APIC_VERSION_VALUE;
		return 0;
	case APIC_TPR:
		*value = a->tpr;
		return 0;
	case APIC_APR:
		if (x2)
			return -EPERM;
		*value = 0;
		return 0;
	case APIC_PPR:
		*value = ppr(a);
		return 0;
	case APIC_LDR:
		*value = x2 ? x2apic_ldr(a->id) : atomic_load(&a->xapic_ldr);
		return 0;
	case APIC_DFR:
		if (x2)
			return -EPERM;
		*value = atomic_load(&a->xapic_dfr);
		return 0;
	case APIC_SVR:
		*value = a->svr;
		return 0;
	case APIC_ISR ... APIC_ISR + 7:
		*value = (uint32_t)(a->isr[(reg - APIC_ISR) / 2] >>
				    ((reg - APIC_ISR) % 2 * 32));
		return 0;
	case APIC_TMR ... APIC_TMR + 7:
		*value = (uint32_t)(a->tmr[(reg - APIC_TMR) / 2] >>
				    ((reg - APIC_TMR) % 2 * 32));
		return 0;
	case APIC_IRR ... APIC_IRR + 7:
		*value = (uint32_t)(a->irr[(reg - APIC_IRR) / 2] >>
				    ((reg - APIC_IRR) % 2 * 32));
		return 0;
	case APIC_ESR:
		*value = a->esr;
		return 0;
	case APIC_ICR:
		*value = x2 ? a->icr : (uint32_t)a->icr;
		return 0;
	case APIC_ICR2:
		if (x2)
			return -EPERM;
		*value = (uint32_t)(a->icr >> 32);
		return 0;
	case APIC_LVT_TIMER ... APIC_LVT_ERROR:
		*value = *lvt(a, reg);
		return 0;
	case APIC_TIMER_INITIAL:
		*value = timer_mode(a) == APIC_TIMER_TSC_DEADLINE ?
				 0 :
				 a->timer_initial;
		return 0;
	case APIC_TIMER_CURRENT:
		*value = current_count(v);
		return 0;
	case APIC_TIMER_DIVIDE:
		*value = a->timer_divide_reg;
		return 0;
	default: /* EOI and SELF_IPI are write-only; the rest reserved */
		return -EPERM;
	}
}

static void write_svr(struct vcpu *v, uint32_t value)
{
	struct apic *a = &v->apic;

	a->svr = value & 0x3ff;
	if (!(value & APIC_SVR_ENABLE))
		for (unsigned i = 0; i < APIC_NR_LVT; i++)
			a->lvt[i] |= APIC_LVT_MASKED;
}

static int write_reg(struct vcpu *v, unsigned reg, uint64_t value)
{
	struct apic *a = &v->apic;
	bool x2 = x2apic_mode(a);
	uint32_t low = (uint32_t)value;

	/* only the x2APIC ICR is 64 bits wide */
	if (x2 && reg != APIC_ICR && value >> 32)
		return -EPERM;
	switch (reg) {
	case APIC_TPR:
		a->tpr = low & 0xff;
		return 0;
	case APIC_EOI:
		if (x2 && low)
			return -EPERM;
		eoi(v);
		return 0;
	case APIC_LDR:
		if (x2)
			return -EPERM;
		atomic_store(&a->xapic_ldr, low & 0xff000000u);
		return 0;
	case APIC_DFR:
		if (x2)
			return -EPERM;
		atomic_store(&a->xapic_dfr, low | 0x0fffffffu);
		return 0;
	case APIC_SVR:
		write_svr(v, low);
		return 0;
	case APIC_ESR:
		if (x2 && low)
			return -EPERM;
		a->esr = a->esr_pending;
		a->esr_pending = 0;
		return 0;
	case APIC_ICR:
		if (x2) {
			a->icr = value & ~(1ull << 12); /* never "pending" */
			send_ipi(v, a->icr, (uint32_t)(value >> 32));
		} else {
			a->icr =
				(a->icr & ~0xffffffffull) | (low & ~(1u << 12));
			send_ipi(v, a->icr, (uint32_t)(a->icr >> 56));
		}
		return 0;
	case APIC_ICR2:
		if (x2)
			return -EPERM;
		a->icr = (a->icr & 0xffffffffull) |
			 (uint64_t)(low & 0xff000000u) << 32;
		return 0;
	case APIC_LVT_TIMER ... APIC_LVT_ERROR:
		write_lvt(v, reg, low);
		return 0;
	case APIC_TIMER_INITIAL:
		set_initial_count(v, low);
		return 0;
	case APIC_TIMER_DIVIDE:
		a->timer_divide_reg = low & 0xb;
		return 0;
	case APIC_SELF_IPI:
		if (!x2)
			return -EPERM;
		if (local_vector(a, low & 0xff))
			apic_raise(a, (uint8_t)low, 1, false, APIC_SRC_IPI, 0);
		return 0;
	case APIC_ID:
	case APIC_VERSION:
	case APIC_PPR:
	case APIC_TIMER_CURRENT:
	case APIC_ISR ... APIC_ISR + 7:
	case APIC_TMR ... APIC_TMR + 7:
	case APIC_IRR ... APIC_IRR + 7:
		/* read-only: a fault in x2APIC mode, ignored through MMIO */
		return x2 ? -EPERM : 0;
	default:
		return -EPERM;
	}
}

/*
 * IA32_APIC_BASE. The mode moves only along disabled <-> xAPIC -> x2APIC
 * -> disabled, as the SDM allows; anything else, or a reserved bit, is a
 * fault. Bit 8 (BSP) stays writable, as on KVM.
 */
static int write_base(struct vcpu *v, uint64_t value)
{
	struct apic *a = &v->apic;
	uint64_t old = atomic_load(&a->base);
	uint64_t reserved = ~0ull << 52 | 0x2ff;
	bool was_x2 = old & APIC_BASE_EXTD, is_x2 = value & APIC_BASE_EXTD;
	bool was_en = old & APIC_BASE_EN, is_en = value & APIC_BASE_EN;

	if (value & reserved)
		return -EPERM;
	if (is_x2 && a->x2apic_hidden)
		return -EPERM; /* EXTD is a reserved bit without x2APIC */
	if (is_x2 && !is_en)
		return -EPERM; /* invalid state */
	if (was_x2 && is_en && !is_x2)
		return -EPERM; /* x2APIC to xAPIC must pass through disabled */
	if (!was_en && is_x2)
		return -EPERM; /* disabled to x2APIC must pass through xAPIC */
	atomic_store(&a->base, value);
	if (was_en && !is_en)
		reset_registers(v); /* a disabled APIC comes back as at reset */
	return 0;
}

int apic_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *value)
{
	struct apic *a = &v->apic;

	if (msr == MSR_IA32_APIC_BASE) {
		*value = atomic_load(&a->base);
		return 0;
	}
	if (msr == MSR_IA32_TSC_DEADLINE) {
		*value = timer_mode(a) == APIC_TIMER_TSC_DEADLINE ?
				 a->tsc_deadline :
				 0;
		return 0;
	}
	if (msr == MSR_KVM_PV_EOI_EN) {
		*value = a->pv_eoi_msr;
		return a->pv_eoi_hidden ? -EPERM : 0;
	}
	if (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST)
		return -ENOENT;
	if (!x2apic_mode(a) || msr - MSR_X2APIC_FIRST == APIC_ICR2)
		return -EPERM;
	return read_reg(v, msr - MSR_X2APIC_FIRST, value);
}

int apic_wrmsr(struct vcpu *v, uint32_t msr, uint64_t value)
{
	if (msr == MSR_IA32_APIC_BASE)
		return write_base(v, value);
	if (msr == MSR_IA32_TSC_DEADLINE) {
		set_tsc_deadline(v, value);
		return 0;
	}
	if (msr == MSR_KVM_PV_EOI_EN)
		return write_pv_eoi(v, value);
	if (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST)
		return -ENOENT;
	if (!x2apic_mode(&v->apic))
		return -EPERM;
	return write_reg(v, msr - MSR_X2APIC_FIRST, value);
}

/*
 * xAPIC registers are 32 bits wide at 16-byte strides. An access of
 * another width or alignment, or to a register the xAPIC lacks, does
 * nothing (a read gives 0) and latches "illegal register address".
 */
bool apic_mmio(struct vcpu *v, uint64_t gpa, bool write, unsigned len,
	       uint8_t *data)
{
	struct apic *a = &v->apic;
	uint64_t base = atomic_load(&a->base);
	uint64_t page =
		base & ~(uint64_t)(APIC_PAGE_SIZE - 1) & ((1ull << 52) - 1);
	uint64_t offset = gpa - page, value = 0;
	unsigned reg = (unsigned)(offset >> 4);

	if (!(base & APIC_BASE_EN) || (base & APIC_BASE_EXTD) || gpa < page ||
	    offset >= APIC_PAGE_SIZE)
		return false;
	if (len != 4 || (offset & 0xf) || reg == APIC_SELF_IPI) {
		a->esr_pending |= APIC_ESR_ILLEGAL_REG;
		if (!write)
			memset(data, 0, len > 8 ? 8 : len);
		return true;
	}
	if (write) {
		uint32_t low;

		memcpy(&low, data, 4);
		if (write_reg(v, reg, low) < 0)
			a->esr_pending |= APIC_ESR_ILLEGAL_REG;
		return true;
	}
	if (read_reg(v, reg, &value) < 0)
		a->esr_pending |= APIC_ESR_ILLEGAL_REG;
	memcpy(data, &value, 4);
	return true;
}
