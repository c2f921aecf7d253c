// SPDX-License-Identifier: MIT
/* lapic.c: see lapic.h. */
#include "clock.h"
#include "idt.h"
#include "lapic.h"
#include "rt.h"
#include "x86.h"

#define MSR_APIC_BASE 0x1b
#define APIC_BASE_ENABLE (1u << 11)
#define APIC_BASE_X2APIC (1u << 10)
#define APIC_BASE_ADDR 0xfffff000u
#define MSR_X2APIC_BASE 0x800 /* x2APIC register r is MSR 0x800 + r / 16 */
#define MSR_TSC_DEADLINE 0x6e0

#define CPUID1_EDX_APIC (1u << 9)
#define CPUID1_ECX_X2APIC (1u << 21)
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define HV_LEAF_TIMING 0x10 /* base + 0x10: eax TSC kHz, ebx APIC bus kHz */
#define HV_LEAVES_MAX 0x100

#define APIC_TPR 0x080
#define APIC_EOI 0x0b0
#define APIC_SVR 0x0f0
#define APIC_ISR 0x100 /* 8 registers, 16 bytes apart, 32 vectors each */
#define APIC_LVT_TIMER 0x320
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_CUR 0x390
#define APIC_TIMER_DIV 0x3e0

#define SVR_ENABLE (1u << 8)
#define SPURIOUS_VECTOR 0xff
#define LVT_MASKED (1u << 16)
#define LVT_PERIODIC (1u << 17)
#define LVT_TSC_DEADLINE (2u << 17)
#define DIV_BY_1 0xb

#define CALIBRATE_NS 20000000ull
#define NOMINAL_HZ 1000000000ull

enum apic_mode { APIC_NONE, APIC_XAPIC, APIC_X2APIC };

/* One mode for all vCPUs: they share the firmware/VMM's reset state. */
static enum apic_mode mode;
static volatile uint32_t *apic;
static uint64_t timer_hz, measured_hz;
static const char *hz_source = "none";
static bool tsc_deadline;
static uint64_t spurious;

static uint32_t rd(unsigned reg)
{
	if (mode == APIC_X2APIC)
		return (uint32_t)rdmsr(MSR_X2APIC_BASE + reg / 16);
	return apic[reg / 4];
}

static void wr(unsigned reg, uint32_t v)
{
	if (mode == APIC_X2APIC)
		wrmsr(MSR_X2APIC_BASE + reg / 16, v);
	else
		apic[reg / 4] = v;
}

/*
 * The timer's rate is the APIC bus clock, which nothing reports
 * reliably, so it is measured against the runtime's clock. Register
 * accesses can be slow (~50 µs where the APIC is emulated by QEMU's
 * TCG, ~1 ms for lull's in the nested runner), so the clock is read on
 * both sides of the write that starts the count and of the read that
 * ends it: the count ran at least between the inner readings and at most
 * between the outer ones. *hi, from the inner ones, errs high, and a
 * timer armed with it fires late rather than early; *lo errs low.
 */
static void calibrate(uint64_t *lo, uint64_t *hi)
{
	uint64_t before_start, started, ended, after_end, counted;

	wr(APIC_TIMER_DIV, DIV_BY_1);
	wr(APIC_LVT_TIMER, LVT_MASKED | SPURIOUS_VECTOR);
	before_start = clock_ns();
	wr(APIC_TIMER_INIT, 0xffffffffu);
	started = clock_ns();
	clock_wait_until(started + CALIBRATE_NS);
	ended = clock_ns();
	counted = 0xffffffffu - rd(APIC_TIMER_CUR);
	after_end = clock_ns();
	wr(APIC_TIMER_INIT, 0);
	*hi = counted * 1000000000ull / (ended - started);
	*lo = counted * 1000000000ull / (after_end - before_start);
}

/* APIC bus kHz from the hypervisor's leaf base + 0x10, where its max leaf
 * covers it (past the end, Intel returns another leaf's data). */
static uint64_t hv_bus_hz(void)
{
	uint32_t base = rt_boot.hv_base ? rt_boot.hv_base : 0x40000000u;
	uint32_t max = cpuid(base, 0).eax;

	if (max < base + HV_LEAF_TIMING || max >= base + HV_LEAVES_MAX)
		return 0;
	return (uint64_t)cpuid(base + HV_LEAF_TIMING, 0).ebx * 1000;
}

/*
 * KVM's in-kernel APIC, QEMU's and lull's count at exactly 1 GHz of the
 * host's clock, and the measurement's bounds are a few 0.1 % apart (TCG:
 * 1.002-1.004 GHz from above) to 10 % (lull's APIC in the nested runner,
 * each access an exit to the VMM under emulation). A periodic timer
 * programmed from such a rate drifts against the guest's clock by as
 * much, milliseconds a second. So when 1 GHz lies between the bounds
 * (0.5 % more either way for the clock's own error), it is 1 GHz: no
 * bare-metal APIC bus is near it (crystals and buses are 25-200 MHz).
 * Otherwise the bound that errs high.
 */
static void pick_rate(void)
{
	uint64_t hz = hv_bus_hz(), lo;

	if (hz) {
		timer_hz = hz;
		hz_source = "cpuid-hv-0x10";
		return;
	}
	calibrate(&lo, &measured_hz);
	if (lo / 1005 * 1000 <= NOMINAL_HZ &&
	    measured_hz / 995 * 1000 >= NOMINAL_HZ) {
		timer_hz = NOMINAL_HZ;
		hz_source = "nominal-1ghz";
	} else {
		timer_hz = measured_hz;
		hz_source = "measured";
	}
}

/*
 * A spurious interrupt is the APIC withdrawing one it had signalled: it
 * is not in service and takes no EOI. Counted, never reported.
 */
static void on_spurious(unsigned vector)
{
	(void)vector;
	__atomic_fetch_add(&spurious, 1, __ATOMIC_RELAXED);
}

bool lapic_init(void)
{
	struct cpuid_regs id = cpuid(1, 0);
	uint64_t base;

	if (!(id.edx & CPUID1_EDX_APIC) || !clock_available())
		return false;
	tsc_deadline = id.ecx & CPUID1_ECX_TSC_DEADLINE;
	base = rdmsr(MSR_APIC_BASE);
	if (!(base & APIC_BASE_ENABLE)) {
		base |= APIC_BASE_ENABLE;
		wrmsr(MSR_APIC_BASE, base);
	}
	if (base & APIC_BASE_X2APIC) {
		mode = APIC_X2APIC;
	} else {
		apic = (volatile uint32_t *)(uintptr_t)(base & APIC_BASE_ADDR);
		mode = APIC_XAPIC;
	}
	irq_set_handler(SPURIOUS_VECTOR, on_spurious);
	wr(APIC_TPR, 0);
	wr(APIC_SVR, SVR_ENABLE | SPURIOUS_VECTOR);
	if (!timer_hz)
		pick_rate();
	return true;
}

/*
 * x2APIC is entered from the xAPIC-enabled state: a write that goes from
 * globally disabled straight to x2APIC is a #GP (SDM 10.12.5).
 */
bool lapic_init_x2apic(void)
{
	struct cpuid_regs id = cpuid(1, 0);
	uint64_t base;

	if (!(id.edx & CPUID1_EDX_APIC) || !clock_available())
		return false;
	if (id.ecx & CPUID1_ECX_X2APIC) {
		base = rdmsr(MSR_APIC_BASE);
		if (!(base & APIC_BASE_ENABLE)) {
			base |= APIC_BASE_ENABLE;
			wrmsr(MSR_APIC_BASE, base);
		}
		if (!(base & APIC_BASE_X2APIC))
			wrmsr(MSR_APIC_BASE, base | APIC_BASE_X2APIC);
	}
	return lapic_init();
}

const char *lapic_mode_name(void)
{
	switch (mode) {
	case APIC_XAPIC:
		return "xapic";
	case APIC_X2APIC:
		return "x2apic";
	default:
		return "none";
	}
}

uint64_t lapic_timer_hz(void)
{
	return timer_hz;
}

const char *lapic_timer_hz_source(void)
{
	return hz_source;
}

uint64_t lapic_timer_hz_measured(void)
{
	return measured_hz;
}

void lapic_timer_start(unsigned vector, uint32_t count, bool periodic)
{
	wr(APIC_TIMER_DIV, DIV_BY_1);
	wr(APIC_LVT_TIMER, (vector & 0xff) | (periodic ? LVT_PERIODIC : 0));
	wr(APIC_TIMER_INIT, count);
}

/*
 * Masking also leaves TSC-deadline mode, and a change of timer mode
 * disarms the timer (SDM 10.5.4.1), so this stops all three modes.
 */
void lapic_timer_set_count(uint32_t count)
{
	wr(APIC_TIMER_INIT, count);
}

void lapic_timer_stop(void)
{
	wr(APIC_LVT_TIMER, LVT_MASKED | SPURIOUS_VECTOR);
	wr(APIC_TIMER_INIT, 0);
}

uint32_t lapic_timer_current(void)
{
	return rd(APIC_TIMER_CUR);
}

bool lapic_has_tsc_deadline(void)
{
	return tsc_deadline;
}

void lapic_deadline_start(unsigned vector)
{
	wr(APIC_LVT_TIMER, (vector & 0xff) | LVT_TSC_DEADLINE);
	/*
	 * The LVT write must reach the APIC before a following write to
	 * IA32_TSC_DEADLINE, which is ignored outside TSC-deadline mode;
	 * WRMSR to an x2APIC register is not serializing, and the SDM
	 * (10.5.4.1) asks for an MFENCE between the two.
	 */
	asm volatile("mfence" : : : "memory");
}

void lapic_set_tsc_deadline(uint64_t tsc)
{
	wrmsr(MSR_TSC_DEADLINE, tsc);
}

void lapic_eoi(void)
{
	wr(APIC_EOI, 0);
}

/*
 * An unhandled vector the APIC delivered stays in service until an EOI,
 * and blocks every vector of its priority class and below: acknowledge
 * it, or the guest's own timer would never be heard from again.
 */
void lapic_ack_stray(unsigned vector)
{
	if (mode == APIC_NONE || vector == SPURIOUS_VECTOR)
		return;
	if (rd(APIC_ISR + (vector / 32) * 16) & (1u << (vector % 32)))
		lapic_eoi();
}

uint64_t lapic_spurious_count(void)
{
	return __atomic_load_n(&spurious, __ATOMIC_RELAXED);
}

uint32_t lapic_ns_to_count(uint64_t ns)
{
	uint64_t c;

	if (ns > 4000000000ull) /* keeps ns * hz in 64 bits (hz < 4 GHz) */
		return 0xffffffffu;
	c = (ns * timer_hz + 999999999u) / 1000000000u;
	if (c == 0)
		return 1;
	return c > 0xffffffffu ? 0xffffffffu : (uint32_t)c;
}
