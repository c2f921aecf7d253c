// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the userspace local APIC (vcpu/apic.c): its
 * registers through both guest paths, its IRR and priorities, its timer on
 * the vCPU's wheel, and the IPIs and INITs it sends to other vCPUs.
 *
 * Each input builds 1-3 vCPUs without KVM (vcpu_init with no fds, as
 * tests/vcpu does) whose vcpu_ops route IPIs among them the way vmm/exits.c
 * does: apic_accepts and the shorthand decide the targets, which get
 * vcpu_post_vector/init/sipi. Posted work joins a target's APIC only when
 * that vCPU catches up, as run.c's catch_up does on every return to the
 * VMM (static there, and it reads the clock, so it is redone here). A
 * guest TSC maps to host ns by a fuzz-chosen line.
 *
 * Input: 8 config bytes, then operations until the input runs out:
 *   config  [0] vCPUs (1 + n % 3); [1..3] ns per TSC tick, 16.16 fixed
 *           point (0: 1 ns); [4..7] how long before the start TSC 0 was
 *   WRMSR   vCPU, MSR, value: IA32_APIC_BASE, TSC_DEADLINE, 0x800+reg or
 *           any other MSR
 *   RDMSR   vCPU, MSR
 *   REGW    vCPU, reg, value: through whichever path the mode has (x2APIC
 *           MSR, or a 4-byte xAPIC MMIO write at reg * 16)
 *   REGR    vCPU, reg: the same, reading
 *   MMIO    vCPU, flags (write, length 1..8, page), offset, data: an access
 *           in and around the APIC page, the default page or anywhere
 *   RAISE   vCPU, vector >= 16, times, accumulate, source
 *   DELIVER vCPU, n: what inject() does, up to n times
 *   CR8     vCPU, value: a guest MOV to CR8
 *   TIME    vCPU, how far: harness time moves forward and the vCPU (or all
 *           of them) catches up: wheel_advance, posted vectors, INIT, SIPI
 *   INIT    vCPU: apic_init_reset
 *   POLICY  vCPU, max deferral, missed-ticks policy (any value)
 *   ENTRY   vCPU, what the guest does: what run.c does around KVM_RUN
 *           (apic_pv_eoi_offer, then apic_pv_eoi_collect), with the guest
 *           in between clearing its PV EOI flag as Linux does, or writing
 *           any byte there, or leaving it
 * A vCPU is one byte (modulo the count); MSRs, values and times are
 * decoded by take_msr, take_value and op_time. Reads past the end are 0.
 *
 * Time: the APIC arms its timer at clock_now_ns() + the period, so harness
 * time starts at clock_now_ns() and only moves forward from there; a timer
 * armed behind it runs at the next advance. That real clock (in arming and
 * in the current count) is the one thing an input does not decide: the
 * same input may fire a timer in one run and not in the next.
 *
 * Invariants after every operation (__builtin_trap() when broken):
 *  - a vector's IRR bit is set exactly while it owes deliveries, at most
 *    APIC_MAX_OWED; apic_raise reports merges and drops as apic.h says;
 *  - nothing below 16 is ever in the IRR or posted: the harness raises
 *    only >= 16, and the APIC must turn local ones (LVT, self-IPI, ICR)
 *    into an ESR bit instead;
 *  - PPR, read through the register path, is what SDM 11.8.3.1 makes of
 *    TPR and ISR; apic_deliverable() is the highest IRR vector when the
 *    APIC is software-disabled, else that vector when its class is above
 *    PPR's, else -1;
 *  - x2APIC MSRs: every read and write faults exactly where the SDM's
 *    x2APIC register table says (not readable, not writable, a non-zero
 *    EOI or ESR write, high bits in a register other than the ICR), and
 *    all of them fault in xAPIC mode; any other MSR is -ENOENT (the VM's
 *    to answer) and left alone; IA32_APIC_BASE moves only along the
 *    SDM's mode transitions, never into EXTD without EN, and reads back
 *    what was accepted;
 *  - the xAPIC page is there exactly in xAPIC mode at the base; an access
 *    of another size or alignment reads 0 and latches ESR bit 7;
 *  - current count <= initial count; both read 0 in TSC-deadline mode,
 *    where the timer is armed exactly while IA32_TSC_DEADLINE is non-zero,
 *    at the TSC line's time (or at once, if that has passed);
 *  - a one-shot or periodic timer expires within [arm, arm + 2^32 * 128
 *    ns]: an initial-count write arms it count * divisor (or the period
 *    floor) after the write, a periodic expiry re-arms it on its phase,
 *    after now and at most a period on; a pending periodic timer's period
 *    is at least LULL_PERIOD_FLOOR_NS;
 *  - after a catch-up to `now` the timer is not overdue (wheel.h: it runs
 *    at the first advance past ceil_tick(expires)) and no timer vector
 *    pending was raised for an expiry after now;
 *  - INIT, or disabling the APIC, leaves the reset state;
 *  - MSR_KVM_PV_EOI_EN faults for an unaligned flag, or an enabled one
 *    outside the harness's 4 KiB of guest RAM, reads back what it took,
 *    and INIT clears it; the flag is offered exactly where the one vector
 *    in service is edge-triggered and nothing is pending, the guest's
 *    clearing it retires that vector at the exit, and after the exit the
 *    flag is clear whatever the guest wrote.
 *
 * Seeds (tests/fuzz/corpus/apic, its README says what each does) are
 * written by hand in this encoding, with Python helpers like these:
 *   b = lambda *x: bytes(x)
 *   val = lambda n, kind=0: b(3 | kind << 2) + n.to_bytes(8, 'little')
 *   cfg = lambda nr: b(nr - 1) + (1 << 16).to_bytes(3, 'little') + bytes(4)
 *   wrmsr = lambda c, sel, n: b(0, c, sel) + val(n)  # sel 0x40: the base
 *   regw = lambda c, reg, n: b(2, c, reg) + val(n)
 *   time = lambda c, kind, *x: b(8, c, kind, *x)     # 5: to its expiry
 *   deliver = lambda c, n: b(6, c, n)
 *   open('x2apic-oneshot', 'wb').write(cfg(1) + wrmsr(0, 0x40, 0xfee00d00)
 *       + regw(0, 0x0f, 0x1ff) + regw(0, 0x32, 0x40) + regw(0, 0x3e, 0xb)
 *       + regw(0, 0x38, 100000) + time(0, 5, 0, 4) + deliver(0, 4) + ...)
 */
#include <asm/kvm_para.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lull_abi.h"
#include "timers/clock.h"
#include "vcpu/apic.h"
#include "vcpu/vcpu.h"

#define MAX_VCPUS 3
#define MAX_OPS 512
/* the longest count, 2^32 - 1 at the largest divisor (128), in ns */
#define TIMER_SPAN_NS ((1ull << 32) * 128)
#define BASE_RESERVED (~0ull << 52 | 0x2ffull) /* lull's MAXPHYADDR: 52 */
#define BASE_ADDR_MASK (((1ull << 52) - 1) & ~(uint64_t)(APIC_PAGE_SIZE - 1))

enum op {
	OP_WRMSR,
	OP_RDMSR,
	OP_REGW,
	OP_REGR,
	OP_MMIO,
	OP_RAISE,
	OP_DELIVER,
	OP_CR8,
	OP_TIME,
	OP_INIT,
	OP_POLICY,
	OP_ENTRY,
	NR_OPS
};

/*
 * What the harness knows of a vCPU's APIC timer as of the last check: an
 * arm is a timer that became pending or moved, and the window is when
 * that arm's "now" was.
 */
struct timer_track {
	bool pending;
	uint64_t expires;
	uint64_t arm_lo, arm_hi;
};

/* Which operation ran, for the timer checks: when its arms happened. */
struct op_ctx {
	uint64_t lo, hi; /* the real clock around it */
	int advanced; /* the vCPU whose wheel moved (its arms are at now) */
};

static struct vcpu cpus[MAX_VCPUS]; /* big: not on the stack */
/* guest RAM at gpa 0, where PV EOI flags may be (shared, if the guest
 * wants) */
static uint8_t ram[4096];
static uint64_t pv_eoi_msr[MAX_VCPUS]; /* what each MSR took */
static struct timer_track track[MAX_VCPUS];
static unsigned nr_cpus;
static uint64_t now; /* harness time: starts at clock_now_ns() */
static uint64_t tsc_origin, tsc_mul; /* ns = origin + tsc * mul / 2^16 */
static atomic_bool stop;

/* ---- the VM around the APICs ---- */

static uint64_t base_of(const struct vcpu *v)
{
	return atomic_load(&v->apic.base);
}

static bool hw_enabled(const struct vcpu *v)
{
	return base_of(v) & APIC_BASE_EN;
}

static bool x2_mode(const struct vcpu *v)
{
	return base_of(v) & APIC_BASE_EXTD;
}

static uint64_t page_of(const struct vcpu *v)
{
	return base_of(v) & BASE_ADDR_MASK;
}

/* vmm/exits.c's routing, over the harness's vCPUs. */
static void route(struct vcpu *from, const struct apic_ipi *ipi)
{
	/* the sender keeps self IPIs, rejects bad vectors, says its mode */
	check(ipi->shorthand != APIC_SH_SELF);
	check(ipi->x2apic == x2_mode(from));
	if (ipi->mode == APIC_DM_FIXED || ipi->mode == APIC_DM_LOWEST)
		check(ipi->vector >= 16);
	if (!ipi->x2apic && !ipi->shorthand)
		check(ipi->dest <= 0xff);

	for (unsigned i = 0; i < nr_cpus; i++)
		if (!vcpu_send_ipi(from, &cpus[i], ipi))
			return; /* NMI, SMI, ExtINT: lull drops them */
}

static uint64_t tsc_line(uint64_t tsc)
{
	unsigned __int128 ns =
		tsc_origin + ((unsigned __int128)tsc * tsc_mul >> 16);

	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* The line, and 0 for a TSC already passed (vcpu.h). */
static uint64_t tsc_to_ns(struct vcpu *v, uint64_t tsc)
{
	uint64_t ns = tsc_line(tsc);

	(void)v;
	return ns > clock_now_ns() ? ns : 0;
}

static bool no_msr(struct vcpu *v, uint32_t index, bool write, uint64_t *data)
{
	(void)v;
	(void)index;
	(void)write;
	(void)data;
	return false;
}

static void *guest_ram(struct vcpu *v, uint64_t gpa, uint64_t len)
{
	(void)v;
	return gpa < sizeof(ram) && len <= sizeof(ram) - gpa ? ram + gpa : NULL;
}

static const struct vcpu_ops ops = {
	.msr = no_msr,
	.guest_ram = guest_ram,
	.ipi = route,
	.tsc_to_ns = tsc_to_ns,
};

/* ---- the SDM's x2APIC register table (Intel SDM vol. 3, 11.12.1.2) ---- */

static bool x2_readable(unsigned reg)
{
	switch (reg) {
	case APIC_ID:
	case APIC_VERSION:
	case APIC_TPR:
	case APIC_PPR:
	case APIC_LDR:
	case APIC_SVR:
	case APIC_ISR ... APIC_IRR + 7: /* ISR, TMR, IRR */
	case APIC_ESR:
	case APIC_ICR:
	case APIC_LVT_TIMER ... APIC_LVT_ERROR:
	case APIC_TIMER_INITIAL:
	case APIC_TIMER_CURRENT:
	case APIC_TIMER_DIVIDE:
		return true;
	default: /* EOI, SELF IPI write-only; CMCI absent (5 LVTs); reserved */
		return false;
	}
}

static bool x2_writable(unsigned reg)
{
	switch (reg) {
	case APIC_TPR:
	case APIC_EOI:
	case APIC_SVR:
	case APIC_ESR:
	case APIC_ICR:
	case APIC_LVT_TIMER ... APIC_LVT_ERROR:
	case APIC_TIMER_INITIAL:
	case APIC_TIMER_DIVIDE:
	case APIC_SELF_IPI:
		return true;
	default: /* ID and LDR are read-only in x2APIC mode */
		return false;
	}
}

static int x2_expected_read(const struct vcpu *v, unsigned reg)
{
	return x2_mode(v) && x2_readable(reg) ? 0 : -EPERM;
}

static int x2_expected_write(const struct vcpu *v, unsigned reg, uint64_t value)
{
	if (!x2_mode(v) || !x2_writable(reg))
		return -EPERM;
	if (reg != APIC_ICR && value >> 32)
		return -EPERM;
	if ((reg == APIC_EOI || reg == APIC_ESR) && value)
		return -EPERM;
	return 0;
}

/* SDM 11.12.5: disabled <-> xAPIC -> x2APIC -> disabled; never EXTD alone. */
static int base_expected_write(uint64_t old, uint64_t value)
{
	bool was_en = old & APIC_BASE_EN, was_x2 = old & APIC_BASE_EXTD;
	bool en = value & APIC_BASE_EN, x2 = value & APIC_BASE_EXTD;

	if (value & BASE_RESERVED)
		return -EPERM;
	if (x2 && !en)
		return -EPERM;
	if (was_x2 && en && !x2)
		return -EPERM;
	if (!was_en && x2)
		return -EPERM;
	return 0;
}

/*
 * A register, read as the guest would: an x2APIC MSR or the xAPIC page.
 * False when the APIC is hardware-disabled: then no path reaches it.
 */
static bool get(struct vcpu *v, unsigned reg, uint64_t *value)
{
	uint8_t data[4];
	uint32_t low;

	if (!hw_enabled(v))
		return false;
	if (x2_mode(v)) {
		check(apic_rdmsr(v, MSR_X2APIC_FIRST + reg, value) == 0);
		return true;
	}
	check(apic_mmio(v, page_of(v) + reg * 16, false, 4, data));
	memcpy(&low, data, 4);
	*value = low;
	return true;
}

static uint64_t get_or(struct vcpu *v, unsigned reg, uint64_t dflt)
{
	uint64_t value;

	return get(v, reg, &value) ? value : dflt;
}

static bool sw_enabled(struct vcpu *v)
{
	return get_or(v, APIC_SVR, 0) & APIC_SVR_ENABLE;
}

static int highest(const uint64_t *map)
{
	for (int w = 3; w >= 0; w--)
		if (map[w])
			return w * 64 + 63 - __builtin_clzll(map[w]);
	return -1;
}

static bool bit(const uint64_t *map, unsigned vector)
{
	return map[vector / 64] >> (vector % 64) & 1;
}

/* The SDM's divide configuration: bits 0, 1, 3; 111b divides by 1. */
static uint64_t divisor(uint64_t reg)
{
	unsigned code = (unsigned)((reg & 3) | (reg >> 1 & 4));

	return code == 7 ? 1 : 2ull << code;
}

static uint64_t ceil_tick_sat(const struct wheel *w, uint64_t t)
{
	if (t > UINT64_MAX - w->tick_mask)
		return WHEEL_NEVER;
	return (t + w->tick_mask) & ~w->tick_mask;
}

/* ---- invariants ---- */

static void check_irr(struct vcpu *v)
{
	struct apic *a = &v->apic;

	check(!(a->irr[0] & 0xffff));
	check(!(atomic_load(&v->posted[0]) & 0xffff));
	for (unsigned vec = 0; vec < 256; vec++) {
		check(a->owed[vec] <= APIC_MAX_OWED);
		check(bit(a->irr, vec) == (a->owed[vec] != 0));
	}
}

static void check_base(struct vcpu *v)
{
	uint64_t base = base_of(v);

	check(!(base & BASE_RESERVED));
	check(!((base & APIC_BASE_EXTD) && !(base & APIC_BASE_EN)));
}

/* SDM 11.8.3.1: PPR from TPR and ISRV; then what may be delivered. */
static void check_priority(struct vcpu *v)
{
	struct apic *a = &v->apic;
	int deliverable = apic_deliverable(a), hi = highest(a->irr);
	uint64_t svr, tpr, ppr, isr[4] = { 0 }, isrv, want_ppr;
	int want;

	check(deliverable >= -1 && deliverable < 256);
	check(deliverable < 0 || bit(a->irr, (unsigned)deliverable));
	if (!get(v, APIC_SVR, &svr)) {
		check(deliverable == hi); /* hardware-disabled: the INTR line */
		return;
	}
	tpr = get_or(v, APIC_TPR, 0);
	for (unsigned r = 0; r < 8; r++)
		isr[r / 2] |= get_or(v, APIC_ISR + r, 0) << (r % 2 * 32);
	isrv = highest(isr) < 0 ? 0 : (uint64_t)highest(isr);
	want_ppr = (tpr & 0xf0) >= (isrv & 0xf0) ? tpr & 0xff : isrv & 0xf0;
	ppr = get_or(v, APIC_PPR, 0);
	check(ppr == want_ppr);
	if (!(svr & APIC_SVR_ENABLE)) {
		check(deliverable == hi);
		return;
	}
	want = hi >= 0 && (unsigned)hi >> 4 > ppr >> 4 ? hi : -1;
	check(deliverable == want);
}

/* Power-on values of everything INIT resets (SDM 11.4.7.3). */
static void check_reset(struct vcpu *v)
{
	struct apic *a = &v->apic;

	check(highest(a->irr) < 0 && highest(a->isr) < 0);
	check(!wheel_timer_pending(&a->timer));
	check(a->tpr == 0 && a->svr == 0xff);
	for (unsigned i = 0; i < APIC_NR_LVT; i++)
		check(a->lvt[i] == APIC_LVT_MASKED);
	check(get_or(v, APIC_TIMER_INITIAL, 0) == 0);
}

/*
 * After an INIT, by OP_INIT or by an IPI taken at a catch-up: the APIC is
 * at its reset state and PV EOI is off (the guest enables it anew), in
 * lull and in the harness's copy. A disabled APIC keeps PV EOI, as KVM's.
 */
static void after_init(struct vcpu *v)
{
	pv_eoi_msr[v->index] = 0;
	check(!v->apic.pv_eoi_flag && !v->apic.pv_eoi_offered);
	check_reset(v);
}

static void check_timer(unsigned i, const struct op_ctx *ctx)
{
	struct vcpu *v = &cpus[i];
	struct apic *a = &v->apic;
	struct timer_track *tr = &track[i];
	bool pending = wheel_timer_pending(&a->timer);
	uint64_t expires = wheel_timer_expires(&a->timer);
	unsigned mode = (a->lvt[0] >> 17) & 3;
	uint64_t lvt, initial, current, deadline;
	bool armed = pending && (!tr->pending || expires != tr->expires);

	/* SDM 11.5.4.1: armed while non-zero, cleared when it fires */
	check(apic_rdmsr(v, MSR_IA32_TSC_DEADLINE, &deadline) == 0);
	if (mode == APIC_TIMER_TSC_DEADLINE) {
		check((deadline != 0) == pending);
		/* on the line, or "now" for a deadline already passed */
		if (armed && expires != tsc_line(deadline))
			check(expires > tsc_line(deadline) &&
			      expires >= ctx->lo && expires <= ctx->hi);
	} else {
		check(deadline == 0);
	}

	if (get(v, APIC_LVT_TIMER, &lvt)) {
		check(lvt == a->lvt[0]);
		initial = get_or(v, APIC_TIMER_INITIAL, 0);
		current = get_or(v, APIC_TIMER_CURRENT, 0);
		check(current <= initial);
		if (mode == APIC_TIMER_TSC_DEADLINE)
			check(current == 0 && initial == 0);
	}

	if (armed && mode != APIC_TIMER_TSC_DEADLINE) {
		if (ctx->advanced == (int)i) {
			/* only its own expiry re-arms it: periodic, on phase */
			uint64_t period = a->timer_period_ns;

			check(mode == APIC_TIMER_PERIODIC && period);
			check(tr->pending && expires > tr->expires);
			/* saturated: past the last tick, it never runs */
			check(expires > now || expires == UINT64_MAX);
			check(expires <= sat_add(now, period));
			if (expires != UINT64_MAX)
				check((expires - tr->expires) % period == 0);
			tr->arm_lo = tr->arm_hi = now;
		} else {
			/* an initial-count write, between ctx->lo and ->hi */
			uint64_t p = get_or(v, APIC_TIMER_INITIAL, 0) *
				     divisor(get_or(v, APIC_TIMER_DIVIDE, 0));

			if (mode == APIC_TIMER_PERIODIC &&
			    p < LULL_PERIOD_FLOOR_NS)
				p = LULL_PERIOD_FLOOR_NS;
			check(p);
			check(expires >= sat_add(ctx->lo, p) &&
			      expires <= sat_add(ctx->hi, p));
			tr->arm_lo = ctx->lo;
			tr->arm_hi = ctx->hi;
		}
	}
	if (pending && mode != APIC_TIMER_TSC_DEADLINE) {
		check(expires >= tr->arm_lo);
		check(expires <= sat_add(tr->arm_hi, TIMER_SPAN_NS));
		if (mode == APIC_TIMER_PERIODIC)
			check(a->timer_period_ns >= LULL_PERIOD_FLOOR_NS);
	}
	tr->pending = pending;
	tr->expires = expires;
}

static void check_all(const struct op_ctx *ctx)
{
	for (unsigned i = 0; i < nr_cpus; i++) {
		check_irr(&cpus[i]);
		check_base(&cpus[i]);
		check_priority(&cpus[i]);
		check_timer(i, ctx);
	}
}

/* ---- operations ---- */

static struct vcpu *take_cpu(struct fuzz_input *in)
{
	return &cpus[fuzz_take(in, 1) % nr_cpus];
}

/*
 * A value: 1, 2, 4 or 8 raw bytes (tag bits 0-1), then maybe made into
 * an APIC base, moved to the high half (the x2APIC ICR's destination,
 * reserved bits elsewhere) or inverted (tag bits 2-4).
 */
static uint64_t take_value(struct fuzz_input *in)
{
	unsigned tag = (unsigned)fuzz_take(in, 1);
	uint64_t v = fuzz_take(in, 1u << (tag & 3));

	switch (tag >> 2 & 7) {
	case 1:
		return v | APIC_DEFAULT_BASE | APIC_BASE_EN;
	case 2:
		return v << 32;
	case 3:
		return ~v;
	default:
		return v;
	}
}

/*
 * 0x00-0x3f: that x2APIC register; then the base, the deadline, any
 * x2APIC register, and any MSR at all (mostly not the APIC's).
 */
static uint32_t take_msr(struct fuzz_input *in)
{
	unsigned sel = (unsigned)fuzz_take(in, 1);

	if (sel < 0x40)
		return MSR_X2APIC_FIRST + sel;
	if (sel < 0x80)
		return MSR_IA32_APIC_BASE;
	if (sel < 0xc0)
		return MSR_IA32_TSC_DEADLINE;
	if (sel < 0xf0)
		return MSR_X2APIC_FIRST + (uint32_t)fuzz_take(in, 1);
	if (sel < 0xf8)
		return MSR_KVM_PV_EOI_EN;
	return (uint32_t)fuzz_take(in, 4);
}

static bool apic_msr(uint32_t msr)
{
	return msr == MSR_IA32_APIC_BASE || msr == MSR_IA32_TSC_DEADLINE ||
	       msr == MSR_KVM_PV_EOI_EN ||
	       (msr >= MSR_X2APIC_FIRST && msr <= MSR_X2APIC_LAST);
}

static void do_wrmsr(struct vcpu *v, uint32_t msr, uint64_t value)
{
	uint64_t old = base_of(v);
	int want, r;

	if (!apic_msr(msr))
		want = -ENOENT; /* the VM's to answer (vcpu_ops.msr) */
	else if (msr == MSR_IA32_APIC_BASE)
		want = base_expected_write(old, value);
	else if (msr == MSR_IA32_TSC_DEADLINE)
		want = 0;
	else if (msr == MSR_KVM_PV_EOI_EN)
		want = ((value & ~1ull) % 4 ||
			((value & 1) && (value & ~1ull) >= sizeof(ram))) ?
			       -EPERM :
			       0;
	else
		want = x2_expected_write(v, msr - MSR_X2APIC_FIRST, value);
	r = apic_wrmsr(v, msr, value);
	check(r == want);
	if (msr == MSR_KVM_PV_EOI_EN && !r)
		pv_eoi_msr[v->index] = value;
	if (msr != MSR_IA32_APIC_BASE)
		return;
	check(base_of(v) == (r ? old : value));
	/* a disabled APIC comes back in its reset state */
	if (!r && (old & APIC_BASE_EN) && !(value & APIC_BASE_EN))
		check_reset(v);
}

static void do_rdmsr(struct vcpu *v, uint32_t msr)
{
	uint64_t value = 0x5a5a;
	unsigned reg = msr - MSR_X2APIC_FIRST;
	int r = apic_rdmsr(v, msr, &value);

	if (!apic_msr(msr)) {
		check(r == -ENOENT && value == 0x5a5a);
		return;
	}
	if (msr == MSR_IA32_APIC_BASE) {
		check(r == 0 && value == base_of(v));
		return;
	}
	if (msr == MSR_IA32_TSC_DEADLINE) {
		check(r == 0);
		return;
	}
	if (msr == MSR_KVM_PV_EOI_EN) {
		check(r == 0 && value == pv_eoi_msr[v->index]);
		return;
	}
	check(r == x2_expected_read(v, reg));
	if (r)
		return;
	if (reg == APIC_ID)
		check(value == v->index);
	else if (reg == APIC_VERSION)
		check(value == APIC_VERSION_VALUE);
	else if (reg == APIC_LDR) /* SDM 11.12.10.2: cluster, then a bit */
		check(value == ((v->index >> 4) << 16 | 1u << (v->index & 15)));
	else if (reg >= APIC_TMR && reg < APIC_TMR + 8)
		check(value == 0); /* every interrupt lull raises is an edge */
	else if (reg != APIC_ICR)
		check(value >> 32 == 0);
}

/* The xAPIC page, with exactly `len` bytes so ASan sees any overrun. */
static void do_mmio(struct vcpu *v, uint64_t gpa, bool write, unsigned len,
		    struct fuzz_input *in)
{
	uint8_t *data = malloc(len);
	uint64_t page = page_of(v), esr_before = v->apic.esr_pending;
	bool mine = hw_enabled(v) && !x2_mode(v) && gpa >= page &&
		    gpa - page < APIC_PAGE_SIZE;
	bool odd =
		len != 4 || (gpa & 0xf) || (gpa - page) >> 4 == APIC_SELF_IPI;

	check(data);
	for (unsigned i = 0; i < len; i++)
		data[i] = write ? (uint8_t)fuzz_take(in, 1) : 0xa5;
	check(apic_mmio(v, gpa, write, len, data) == mine);
	if (!mine) {
		check(v->apic.esr_pending == esr_before);
		for (unsigned i = 0; !write && i < len; i++)
			check(data[i] == 0xa5); /* not the APIC's: untouched */
	} else if (odd) {
		check(v->apic.esr_pending & APIC_ESR_ILLEGAL_REG);
		for (unsigned i = 0; !write && i < len; i++)
			check(data[i] == 0);
	}
	free(data);
}

static void op_mmio(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	unsigned flags = (unsigned)fuzz_take(in, 1);
	bool write = flags & 1;
	unsigned len = 1 + (flags >> 1 & 7);
	uint64_t gpa;

	switch (flags >> 4 & 3) {
	case 0: /* from 128 bytes below the page to 128 past it */
	case 1:
		gpa = page_of(v) - 128 +
		      fuzz_take(in, 2) % (APIC_PAGE_SIZE + 256);
		break;
	case 2: /* the default page, wherever the base is */
		gpa = APIC_DEFAULT_BASE + fuzz_take(in, 2) % APIC_PAGE_SIZE;
		break;
	default:
		gpa = fuzz_take(in, 8);
		break;
	}
	do_mmio(v, gpa, write, len, in);
}

/* A register through the path the APIC's mode gives the guest. */
static void op_reg(struct fuzz_input *in, bool write)
{
	struct vcpu *v = take_cpu(in);
	unsigned reg = (unsigned)fuzz_take(in, 1);
	uint64_t value = write ? take_value(in) : 0;
	uint8_t data[4];
	uint32_t low = (uint32_t)value;

	if (x2_mode(v) || !hw_enabled(v)) {
		if (write)
			do_wrmsr(v, MSR_X2APIC_FIRST + reg, value);
		else
			do_rdmsr(v, MSR_X2APIC_FIRST + reg);
		return;
	}
	memcpy(data, &low, 4);
	check(apic_mmio(v, page_of(v) + reg * 16, write, 4, data));
}

static void op_raise(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	struct apic *a = &v->apic;
	uint8_t vector = (uint8_t)(16 + fuzz_take(in, 1) % 240);
	unsigned flags = (unsigned)fuzz_take(in, 1);
	uint32_t times = (uint32_t)fuzz_take(in, 2) << (flags >> 4);
	bool accumulate = flags & 1;
	enum apic_source src = (enum apic_source)(flags >> 1 & 3) % 3;
	uint32_t owed = a->owed[vector], merged, want_owed;
	uint64_t since = flags & 8 ? now : 0;

	merged = apic_raise(a, vector, times, accumulate, src, since);
	/* apic.h: an edge onto an owed vector merges; the cap drops */
	if (owed && !accumulate)
		want_owed = owed;
	else
		want_owed = (uint64_t)owed + times > APIC_MAX_OWED ?
				    APIC_MAX_OWED :
				    owed + times;
	check(a->owed[vector] == want_owed);
	check(merged == times - (want_owed - owed));
}

/* inject(): one delivery at a time, while one is deliverable. */
static void op_deliver(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	struct apic *a = &v->apic;
	unsigned n = (unsigned)fuzz_take(in, 1);
	int last = 256;

	for (unsigned i = 0; i < n; i++) {
		int vec = apic_deliverable(a);
		bool enabled = sw_enabled(v);
		uint32_t owed;

		if (vec < 0)
			break;
		owed = a->owed[vec];
		apic_delivered(a, (uint8_t)vec);
		check(a->owed[vec] == owed - 1);
		if (enabled) {
			/* in service now, so the next one nests above it */
			check(bit(a->isr, (unsigned)vec));
			check(last == 256 || vec >> 4 > last >> 4);
		} else {
			check(vec <= last); /* the line: highest first */
		}
		last = vec;
		check_priority(v);
	}
}

static void op_cr8(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	uint8_t cr8 = (uint8_t)fuzz_take(in, 1);

	apic_set_cr8(&v->apic, cr8);
	check(apic_cr8(&v->apic) == (cr8 & 0xf));
	check(get_or(v, APIC_TPR, (cr8 & 0xfu) << 4) == (cr8 & 0xfu) << 4);
}

/* run.c's catch_up, at harness time, without the KVM half of a SIPI. */
static void catch_up(unsigned i)
{
	struct vcpu *v = &cpus[i];
	struct apic *a = &v->apic;
	struct wheel_timer *t = &a->timer;
	int sipi;

	wheel_advance(&v->wheel, now);
	check(wheel_now(&v->wheel) == now);
	for (unsigned w = 0; w < 4; w++) {
		uint64_t bits = atomic_exchange(&v->posted[w], 0);

		check(w || !(bits & 0xffff));
		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);

			bits &= bits - 1;
			apic_raise(a, (uint8_t)(w * 64 + b), 1, false,
				   APIC_SRC_IPI, 0);
		}
	}
	if (atomic_exchange(&v->init_posted, false)) {
		apic_init_reset(v);
		v->wait_for_sipi = true;
		after_init(v);
	}
	sipi = atomic_exchange(&v->sipi_posted, -1);
	if (sipi >= 0 && v->wait_for_sipi)
		v->wait_for_sipi = false; /* start_at_sipi, minus KVM */

	/* everything due by now has run; nothing ran early */
	if (wheel_timer_pending(t)) {
		uint64_t due = ceil_tick_sat(&v->wheel, wheel_timer_expires(t));

		check(due > now || due == WHEEL_NEVER);
	}
	for (unsigned vec = 16; vec < 256; vec++)
		if (a->owed[vec] && a->source[vec] != APIC_SRC_IPI)
			check(a->since[vec] <= now);
}

static void op_time(struct fuzz_input *in, struct op_ctx *ctx)
{
	unsigned sel = (unsigned)fuzz_take(in, 1);
	struct vcpu *v = &cpus[sel % nr_cpus];
	struct wheel_timer *t = &v->apic.timer;
	uint64_t to = now;

	switch (fuzz_take(in, 1) % 8) {
	case 0:
		to = sat_add(now, fuzz_take(in, 1) << 10);
		break;
	case 1:
		to = sat_add(now, fuzz_take(in, 2) * 1000);
		break;
	case 2:
		to = sat_add(now, fuzz_take(in, 4) * 1000);
		break;
	case 3:
		to = sat_add(now, fuzz_take(in, 8));
		break;
	case 4:
		to = sat_add(wheel_next_expiry(&v->wheel), fuzz_take(in, 1));
		break;
	case 5: /* to the APIC timer's expiry, give or take a tick */
		if (wheel_timer_pending(t)) {
			uint64_t e = wheel_timer_expires(t),
				 d = fuzz_take(in, 2);

			to = d & 0x8000 ? e - (d & 0x7fff) : sat_add(e, d);
		}
		break;
	case 6:
		break; /* a return to the VMM with no time passed */
	default: /* every vCPU catches up */
		ctx->advanced = -2;
		break;
	}
	if (to > now)
		now = to;
	if (ctx->advanced == -2) {
		/* none re-arms here: arms are checked per advanced vCPU */
		for (unsigned i = 0; i < nr_cpus; i++) {
			struct op_ctx one = { .advanced = (int)i };

			catch_up(i);
			check_timer(i, &one);
		}
		return;
	}
	ctx->advanced = (int)(sel % nr_cpus);
	catch_up(sel % nr_cpus);
}

static void op_init(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	uint64_t base = base_of(v);

	apic_init_reset(v);
	check(base_of(v) == base && v->apic.id == v->index);
	after_init(v);
}

/* Whether PV EOI may be offered: the one vector in service, edge, alone. */
static bool pv_eoi_expected(struct vcpu *v)
{
	const struct apic *a = &v->apic;
	unsigned in_service = 0;
	int top = -1;

	if (!(pv_eoi_msr[v->index] & 1))
		return false;
	for (unsigned w = 0; w < 4; w++) {
		if (a->irr[w])
			return false;
		in_service += (unsigned)__builtin_popcountll(a->isr[w]);
	}
	for (unsigned vec = 0; vec < 256; vec++)
		if (bit(a->isr, vec))
			top = (int)vec;
	return in_service == 1 && !bit(a->tmr, (unsigned)top);
}

/* An entry and an exit, with the guest's doing in between. */
static void op_entry(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	struct apic *a = &v->apic;
	unsigned guest = (unsigned)fuzz_take(in, 1) % 3;
	bool offered = pv_eoi_expected(v);
	uint8_t *flag = &ram[pv_eoi_msr[v->index] & ~1ull & (sizeof(ram) - 1)];
	uint64_t isr[4], eois = a->pv_eois;
	bool took;

	memcpy(isr, a->isr, sizeof(isr));
	apic_pv_eoi_offer(v);
	check(a->pv_eoi_offered == offered);
	if (!offered) {
		apic_pv_eoi_collect(v);
		check(a->pv_eois == eois && !memcmp(isr, a->isr, sizeof(isr)));
		return;
	}
	check(*flag & 1);
	if (guest == 1)
		*flag &= (uint8_t)~1u; /* Linux's EOI */
	else if (guest == 2)
		*flag = (uint8_t)fuzz_take(in, 1);
	took = !(*flag & 1);
	apic_pv_eoi_collect(v);
	check(!a->pv_eoi_offered && !(*flag & 1));
	check(a->pv_eois == eois + took);
	if (took)
		check(!a->isr[0] && !a->isr[1] && !a->isr[2] && !a->isr[3]);
	else
		check(!memcmp(isr, a->isr, sizeof(isr)));
	check_priority(v);
}

static void op_policy(struct fuzz_input *in)
{
	struct vcpu *v = take_cpu(in);
	uint64_t max_defer = take_value(in);
	unsigned policy = (unsigned)fuzz_take(in, 1);

	if (policy == 0xff)
		policy = (unsigned)fuzz_take(in, 4);
	apic_set_timer_policy(v, max_defer, policy);
}

/* ---- one input ---- */

static void build(struct fuzz_input *in)
{
	uint64_t back;

	nr_cpus = 1 + (unsigned)fuzz_take(in, 1) % MAX_VCPUS;
	tsc_mul = fuzz_take(in, 3);
	if (!tsc_mul)
		tsc_mul = 1 << 16;
	back = fuzz_take(in, 4);
	now = clock_now_ns();
	tsc_origin = now > back ? now - back : 0;
	memset(ram, 0, sizeof(ram));
	for (unsigned i = 0; i < nr_cpus; i++) {
		check(vcpu_init(&cpus[i], i, -1, -1, &ops, NULL, &stop, 0,
				now) == 0);
		memset(&track[i], 0, sizeof(track[i]));
		pv_eoi_msr[i] = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { .p = data, .left = size };

	build(&in);
	for (unsigned n = 0; n < MAX_OPS && in.left; n++) {
		struct op_ctx ctx = { .lo = clock_now_ns(), .advanced = -1 };
		struct vcpu *v;

		switch (fuzz_take(&in, 1) % NR_OPS) {
		case OP_WRMSR: {
			uint32_t msr;

			v = take_cpu(&in);
			msr = take_msr(&in);
			do_wrmsr(v, msr, take_value(&in));
			break;
		}
		case OP_RDMSR:
			v = take_cpu(&in);
			do_rdmsr(v, take_msr(&in));
			break;
		case OP_REGW:
			op_reg(&in, true);
			break;
		case OP_REGR:
			op_reg(&in, false);
			break;
		case OP_MMIO:
			op_mmio(&in);
			break;
		case OP_RAISE:
			op_raise(&in);
			break;
		case OP_DELIVER:
			op_deliver(&in);
			break;
		case OP_CR8:
			op_cr8(&in);
			break;
		case OP_TIME:
			op_time(&in, &ctx);
			break;
		case OP_INIT:
			op_init(&in);
			break;
		case OP_ENTRY:
			op_entry(&in);
			break;
		default:
			op_policy(&in);
			break;
		}
		ctx.hi = clock_now_ns();
		check_all(&ctx);
	}
	return 0;
}
