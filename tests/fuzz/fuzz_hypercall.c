// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the guest-facing VMM path: hypercalls, port I/O,
 * guest writes to RAM (shared pages included) and the passing of time.
 *
 * Each input builds a VM without KVM, as tests/hypercall does: 1-3 vCPUs
 * with a wheel and PV timers but no fd, exact-size malloc'd RAM (so ASan
 * sees one byte past it), a console with no destination (its ring fills
 * and stays full, which is what COM1's LSR reports). A few config bytes
 * pick vCPUs, slots, RAM size, timer mode, missed-ticks policy, the pvclock
 * parameters and the start time; the rest is a sequence of operations:
 *
 *   HCALL    hypercall() with fuzz-chosen op and arguments, at harness time
 *   EXIT     the same arguments in the vCPU's registers, then an `out` to
 *            LULL_HCALL_PORT through vm_vcpu_ops.io: the real exit path
 *            (hypercall_exit), which takes its time from clock_now_ns()
 *   PORT     any port, direction, size and count through vm_vcpu_ops.io
 *   POKE     bytes written anywhere in guest RAM, shared pages included
 *   TIME     harness time moves forward (by up to 2^64 ns, or exactly to
 *            the next expiry) and one vCPU catches up: what the vCPU loop
 *            does on each return to the VMM (run.c's catch_up, which is
 *            static and reads the clock): vm_vcpu_ops.resync, then
 *            wheel_advance, then the IPIs posted to it join its queue
 *   DELIVER  up to n pending vectors taken as the injection path does
 *
 * Harness time is monotonic and fuzz-chosen; the harness never reads the
 * clock to decide anything. The code under test reads it in three places:
 * hypercall_exit (EXIT) passes clock_now_ns() as `now`, pvclock_write
 * stamps the record with clock_now_ns() and rdtsc, and console_putc notes
 * when the first byte came (a statistic). The harness puts the record's
 * last_sync_ns back on its own time line after each write, so whether a
 * resync is due depends on the input alone; an EXIT input may arm a timer
 * differently from run to run (clamping is relative to the real clock).
 *
 * Invariants checked after every operation (__builtin_trap() if broken):
 *  - a hypercall returns a value the ABI allows for its op, counts one
 *    call and exactly one error when it fails; a timer it arms is pending
 *    in a valid slot, no later than now + LULL_HORIZON_NS;
 *  - no pending slot beyond nr_slots; every armed slot has a vector in
 *    32..255 (0 if bound to the upcall, whose vector is 0 or in 32..255),
 *    a period 0 or within [floor, horizon]; strict mode arms no
 *    deferrable and no tolerant timer;
 *  - no vector below 32 is ever raised or posted, a vector owes at most
 *    APIC_MAX_OWED deliveries, and is pending exactly while it owes one;
 *  - deferrable timers never wake the host: with no hard or bounded slot
 *    armed, the next hard expiry is WHEEL_NEVER, and with one, it is no
 *    later than that slot's deadline plus tolerance (rounded to the tick);
 *  - right after a catch-up to `now`, no armed timer is overdue and no
 *    raised timer vector has an expiry after `now` (nothing fires early);
 *  - shared-page counters never go backwards (except where the guest wrote
 *    the page itself or registered a page, which zeroes it);
 *  - unclaimed ports read as all ones, debugcon reads 0xe9;
 *  - a pvclock record written by a resync has an even version, the
 *    VMM's shift and a multiplier within a quarter of its nominal one,
 *    and the nominal scale turns tsc_hz ticks into 1 s.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "timers/clock.h"
#include "fuzz.h"
#include "vmm/hypercall.h"
#include "vmm/exits.h"
#include "platform.h"
#include "devices/serial.h"
#include "vmm/vm.h"

#define MAX_VCPUS 3
#define MAX_OPS 512

enum op { OP_HCALL, OP_EXIT, OP_PORT, OP_POKE, OP_TIME, OP_DELIVER, NR_OPS };

static struct vm vm;
static uint64_t now; /* harness time, the same for every vCPU */

/* A counter snapshot, to see that none goes backwards. */
struct counters {
	struct lull_shared_page *page;
	struct lull_slot_counters slot[LULL_MAX_SLOTS];
};

/*
 * An argument: small values directly (slots, vectors, vCPUs, ops), else
 * times near `now`, edges near UINT64_MAX or eight raw bytes.
 */
static uint64_t take_arg(struct fuzz_input *in)
{
	uint8_t tag = (uint8_t)fuzz_take(in, 1);

	if (tag < 0xf0)
		return tag;
	switch (tag) {
	case 0xf0:
		return sat_add(now, fuzz_take(in, 4));
	case 0xf1: {
		uint64_t back = fuzz_take(in, 4);

		return now > back ? now - back : 0;
	}
	case 0xf2:
		return UINT64_MAX - fuzz_take(in, 1);
	case 0xf3:
		return fuzz_take(in, 2) * 4096; /* a page address */
	case 0xf4:
		return fuzz_take(in, 4) * 1000; /* a period in us */
	default:
		return fuzz_take(in, 8);
	}
}

static struct vm_cpu *take_cpu(struct fuzz_input *in)
{
	return &vm.cpus[fuzz_take(in, 1) % vm.cfg.nr_vcpus];
}

static void take_hc_args(struct fuzz_input *in, struct hc_args *a)
{
	a->op = take_arg(in);
	a->a0 = take_arg(in);
	a->a1 = take_arg(in);
	a->a2 = take_arg(in);
	a->a3 = take_arg(in);
	a->a4 = take_arg(in);
	a->a5 = take_arg(in);
}

static uint64_t errors(void)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < HC_ERR_KINDS; k++)
		n += atomic_load(&vm.hc_errors[k]);
	return n;
}

/* What the ABI (lull_abi.h, docs/abi.md) allows a call to return. */
static void check_result(const struct hc_args *a, int64_t ret)
{
	switch (a->op) {
	case LULL_HC_NOP:
		check(ret == LULL_ABI_VERSION);
		break;
	case LULL_HC_SET_SHARED_PAGE:
		check(ret == 0 || ret == -LULL_EFAULT);
		break;
	case LULL_HC_TIMER_SET:
	case LULL_HC_XEN_SET_SINGLESHOT:
	case LULL_HC_XEN_SET_PERIODIC:
		check(ret == 0 || ret == -LULL_EINVAL);
		break;
	case LULL_HC_TIMER_STOP:
		check(ret == 0 || ret == 1 || ret == -LULL_EINVAL);
		break;
	case LULL_HC_XEN_STOP_SINGLESHOT:
	case LULL_HC_XEN_STOP_PERIODIC:
		check(ret == 0 || ret == 1);
		break;
	case LULL_HC_SEND_IPI:
		check(ret == 0 || ret == -LULL_ESRCH || ret == -LULL_EINVAL);
		break;
	case LULL_HC_SET_UPCALL_VECTOR:
		check(ret == 0 || ret == -LULL_EINVAL);
		break;
	default:
		check(ret == -LULL_ENOSYS);
		break;
	}
}

/* The slot a successful timer op acted on, or -1. */
static int64_t slot_of(const struct hc_args *a)
{
	switch (a->op) {
	case LULL_HC_TIMER_SET:
	case LULL_HC_TIMER_STOP:
		return (int64_t)a->a0;
	case LULL_HC_XEN_SET_SINGLESHOT:
	case LULL_HC_XEN_STOP_SINGLESHOT:
		return LULL_XEN_SINGLESHOT_SLOT;
	case LULL_HC_XEN_SET_PERIODIC:
	case LULL_HC_XEN_STOP_PERIODIC:
		return LULL_XEN_PERIODIC_SLOT;
	default:
		return -1;
	}
}

static bool is_set(uint64_t op)
{
	return op == LULL_HC_TIMER_SET || op == LULL_HC_XEN_SET_SINGLESHOT ||
	       op == LULL_HC_XEN_SET_PERIODIC;
}

/* Checks a call's effects; `when` is its now, 0 if not known here. */
static void check_call(struct vm_cpu *cpu, const struct hc_args *a, int64_t ret,
		       uint64_t calls, uint64_t errs, uint64_t when)
{
	int64_t slot = slot_of(a);

	check_result(a, ret);
	check(atomic_load(&vm.hc_calls) == calls + 1);
	check(errors() == errs + (ret < 0));
	if (ret < 0)
		return;
	if (a->op == LULL_HC_SET_SHARED_PAGE) {
		check(a->a0 % 4096 == 0 && a->a0 <= vm.ram_size - 4096);
		check((uint8_t *)cpu->pv.shared == vm.ram + a->a0);
	} else if (slot >= 0) {
		struct pvtimer_slot *s = &cpu->pv.slot[slot];

		check((uint64_t)slot < cpu->pv.nr_slots);
		check(wheel_timer_pending(&s->timer) == is_set(a->op));
		if (is_set(a->op) && when)
			check(wheel_timer_expires(&s->timer) <=
			      sat_add(when, LULL_HORIZON_NS));
	}
}

static bool may_zero_counters(const struct hc_args *a)
{
	return a->op == LULL_HC_SET_SHARED_PAGE;
}

static void op_hcall(struct fuzz_input *in, struct hc_args *a)
{
	struct vm_cpu *cpu = take_cpu(in);
	uint64_t calls = atomic_load(&vm.hc_calls), errs = errors();
	int64_t ret;

	take_hc_args(in, a);
	ret = hypercall(&vm, cpu, a, now);
	check_call(cpu, a, ret, calls, errs, now);
}

/* The guest's `out %eax, %dx` with its arguments in registers. */
static void op_exit(struct fuzz_input *in, struct hc_args *a)
{
	struct vm_cpu *cpu = take_cpu(in);
	struct kvm_regs *regs = vcpu_regs(&cpu->vcpu);
	uint64_t calls = atomic_load(&vm.hc_calls), errs = errors();
	uint8_t data[4] = { 0 };

	take_hc_args(in, a);
	memset(regs, 0, sizeof(*regs));
	regs->rax = a->op;
	regs->rdi = a->a0;
	regs->rsi = a->a1;
	regs->r10 = a->a2;
	regs->r8 = a->a3;
	regs->r9 = a->a4;
	regs->rbx = a->a5;
	vm_vcpu_ops.io(&cpu->vcpu, LULL_HCALL_PORT, true, 4, 1, data);
	check_call(cpu, a, (int64_t)vcpu_regs(&cpu->vcpu)->rax, calls, errs, 0);
}

/* Does a device take this one access (data: what an out writes)? */
static bool claimed(uint16_t port, bool out, unsigned size, unsigned count,
		    const uint8_t *data)
{
	if (port >= LULL_COM1_PORT && port < LULL_COM1_PORT + SERIAL_PORTS)
		return size == 1;
	if (port == LULL_DEBUGCON_PORT)
		return true;
	if (port == LULL_DEBUG_EXIT_PORT || port == LULL_HCALL_PORT)
		return out && (port != LULL_HCALL_PORT || count == 1);
	if (port == PLATFORM_SLEEP_CONTROL_PORT ||
	    port == PLATFORM_SLEEP_STATUS_PORT || port == PLATFORM_RESET_PORT)
		return size == 1;
	if (port == PLATFORM_I8042_COMMAND_PORT) /* only the reset pulse */
		return size == 1 && out && data[0] == PLATFORM_I8042_PULSE_RESET;
	if (port == PLATFORM_FW_CFG_PORT) /* the selector, written */
		return out && size == 2;
	if (port == PLATFORM_FW_CFG_PORT + 1) /* the data, read */
		return !out && size == 1;
	/* the test device's lines: --test-device only, never set here */
	return false;
}

/*
 * Returns true if it was a hypercall, with whatever the vCPU's registers
 * held: it may have registered a shared page, zeroing its counters.
 */
static bool op_port(struct fuzz_input *in)
{
	static const uint16_t ports[] = {
		LULL_COM1_PORT,	      LULL_COM1_PORT + 1, LULL_COM1_PORT + 2,
		LULL_COM1_PORT + 3,   LULL_COM1_PORT + 4, LULL_COM1_PORT + 5,
		LULL_COM1_PORT + 6,   LULL_COM1_PORT + 7, LULL_DEBUGCON_PORT,
		LULL_DEBUG_EXIT_PORT, LULL_HCALL_PORT,
		PLATFORM_SLEEP_CONTROL_PORT, PLATFORM_SLEEP_STATUS_PORT,
		PLATFORM_RESET_PORT, PLATFORM_I8042_COMMAND_PORT,
		PLATFORM_FW_CFG_PORT, PLATFORM_FW_CFG_PORT + 1,
		PLATFORM_TEST_IRQ_PORT,
	};
	static const unsigned sizes[] = { 1, 2, 4, 1 };
	struct vm_cpu *cpu = take_cpu(in);
	unsigned sel = (unsigned)fuzz_take(in, 1), mode = (unsigned)fuzz_take(in, 1);
	const unsigned nr_ports = sizeof(ports) / sizeof(ports[0]);
	/* below 2 * nr_ports: a device port; else any port at all */
	uint16_t port = sel < 2 * nr_ports ? ports[sel % nr_ports] :
					     (uint16_t)fuzz_take(in, 2);
	bool out = mode & 1;
	unsigned size = sizes[(mode >> 1) & 3], count = 1 + ((mode >> 3) & 3);
	uint64_t unclaimed = atomic_load(&vm.unclaimed.io), nr_unclaimed = 0;
	bool hcall = port == LULL_HCALL_PORT && out && count == 1;
	uint8_t *data = malloc(size * count); /* exact: ASan sees overruns */

	check(data);
	for (unsigned i = 0; i < size * count; i++)
		data[i] = (uint8_t)fuzz_take(in, 1);
	vm_vcpu_ops.io(&cpu->vcpu, port, out, size, count, data);
	for (unsigned i = 0; i < count; i++) {
		const uint8_t *d = data + i * size;

		if (!claimed(port, out, size, count, d)) {
			nr_unclaimed++;
			for (unsigned j = 0; !out && j < size; j++)
				check(d[j] == 0xff);
		} else if (port == LULL_DEBUGCON_PORT && !out) {
			for (unsigned j = 0; j < size; j++)
				check(d[j] == 0xe9);
		}
	}
	check(atomic_load(&vm.unclaimed.io) == unclaimed + nr_unclaimed);
	free(data);
	return hcall;
}

static void op_poke(struct fuzz_input *in)
{
	uint64_t at = fuzz_take(in, 4) % vm.ram_size;
	uint64_t len = fuzz_take(in, 1) % 65;

	for (uint64_t i = 0; i < len && at + i < vm.ram_size; i++)
		vm.ram[at + i] = (uint8_t)fuzz_take(in, 1);
}

static uint64_t ceil_tick_sat(const struct wheel *w, uint64_t t)
{
	if (t > UINT64_MAX - w->tick_mask)
		return WHEEL_NEVER;
	return (t + w->tick_mask) & ~w->tick_mask;
}

/* The pvclock record, when a resync or registration just wrote it. */
static void check_clock_written(struct vm_cpu *cpu, uint64_t synced_before,
				uint64_t at)
{
	struct pvclock_src *src = &cpu->pv.clock;
	struct lull_pvclock *rec;
	uint64_t second;

	if (!src->ready || !cpu->pv.shared ||
	    src->last_sync_ns == synced_before)
		return;
	rec = &cpu->pv.shared->clock;
	check(rec->version % 2 == 0);
	/* the host clock's rate, never far from the nominal scale: a
	 * nominal second of ticks within a quarter of a second */
	check(rec->tsc_to_system_mul == src->rec_mul &&
	      rec->tsc_shift == src->rec_shift);
	second = pvclock_delta_ns((uint64_t)src->tsc_khz * 1000,
				  rec->tsc_to_system_mul, rec->tsc_shift);
	check(second >= 750000000ull && second <= 1250000000ull);
	/* back on harness time: see the comment at the top */
	src->last_sync_ns = at;
}

/* run.c's catch_up for one vCPU at harness time `now`. */
static void catch_up(struct vm_cpu *cpu)
{
	struct vcpu *v = &cpu->vcpu;
	struct apic *q = &v->apic;
	uint64_t synced = cpu->pv.clock.last_sync_ns;

	vm_vcpu_ops.resync(v, now);
	check_clock_written(cpu, synced, now);
	wheel_advance(&v->wheel, now);
	for (unsigned w = 0; w < 4; w++) {
		uint64_t bits = atomic_exchange(&v->posted[w], 0);

		check(w || !(bits & 0xffffffffull)); /* vectors 0..31 */
		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);

			bits &= bits - 1;
			apic_raise(q, (uint8_t)(w * 64 + b), 1, false,
				  APIC_SRC_IPI, 0);
		}
	}

	/* Everything due by now has run, and nothing ran early. */
	check(wheel_now(&v->wheel) == now);
	check(wheel_next_expiry(&v->wheel) >= now);
	check(wheel_next_hard_expiry(&v->wheel) >= now);
	for (unsigned i = 0; i < cpu->pv.nr_slots; i++) {
		struct wheel_timer *t = &cpu->pv.slot[i].timer;

		uint64_t due = ceil_tick_sat(&v->wheel, wheel_timer_expires(t));

		/* a due time past UINT64_MAX never comes (wheel.h) */
		if (wheel_timer_pending(t))
			check(due > now || due == WHEEL_NEVER);
	}
	for (unsigned vec = LULL_VECTOR_MIN; vec <= LULL_VECTOR_MAX; vec++)
		if (q->owed[vec] && q->source[vec] != APIC_SRC_IPI)
			check(q->since[vec] <= now);
}

static void op_time(struct fuzz_input *in)
{
	struct vm_cpu *cpu = take_cpu(in);
	struct wheel *w = &cpu->vcpu.wheel;
	uint64_t to = now;

	switch (fuzz_take(in, 1) % 7) {
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
		to = sat_add(wheel_next_expiry(w), fuzz_take(in, 1));
		break;
	case 5:
		to = sat_add(wheel_next_hard_expiry(w), fuzz_take(in, 1));
		break;
	default:
		break;
	}
	if (to > now)
		now = to;
	catch_up(cpu);
}

/* inject(): highest vector first, one delivery at a time. */
static void op_deliver(struct fuzz_input *in)
{
	struct vm_cpu *cpu = take_cpu(in);
	struct vcpu *v = &cpu->vcpu;
	unsigned n = (unsigned)fuzz_take(in, 1);
	int last = LULL_VECTOR_MAX + 1;

	for (unsigned i = 0; i < n; i++) {
		int vec = apic_deliverable(&v->apic);

		if (vec < 0)
			break;
		check(vec >= LULL_VECTOR_MIN && vec <= last);
		last = vec;
		if (v->apic.since[vec]) {
			uint64_t since = v->apic.since[vec];

			hist_record(&v->stats.hard_lateness_ns,
				    now > since ? now - since : 0);
			v->apic.since[vec] = 0;
		}
		v->stats.injections++;
		apic_delivered(&v->apic, (uint8_t)vec);
	}
}

/* Does anything armed on this vCPU wake the host, and by when at most? */
static void check_wakeups(struct vm_cpu *cpu)
{
	struct wheel *w = &cpu->vcpu.wheel;
	uint64_t next = wheel_next_hard_expiry(w), bound = WHEEL_NEVER;
	uint64_t at = wheel_now(w);

	for (unsigned i = 0; i < cpu->pv.nr_slots; i++) {
		struct pvtimer_slot *s = &cpu->pv.slot[i];
		uint64_t wake;

		if (!wheel_timer_pending(&s->timer) ||
		    (s->deferred && !s->tolerance))
			continue;
		wake = ceil_tick_sat(w, sat_add(wheel_timer_expires(&s->timer),
						s->tolerance));
		if (wake < bound)
			bound = wake;
	}
	/* wheel.h: max(wheel_now, min of ceil_tick(expires + tolerance)) */
	if (bound != WHEEL_NEVER && bound < at)
		bound = at;
	check(next == bound);
}

static void check_vcpu(struct vm_cpu *cpu)
{
	struct apic *q = &cpu->vcpu.apic;

	check(!(atomic_load(&cpu->vcpu.posted[0]) & 0xffffffffull));
	check(!(q->irr[0] & 0xffffffffull));
	for (unsigned vec = 0; vec < 256; vec++) {
		bool pending = q->irr[vec / 64] & (1ull << (vec % 64));

		check(q->owed[vec] <= APIC_MAX_OWED);
		check(pending == (q->owed[vec] != 0));
	}
	for (unsigned i = 0; i < LULL_MAX_SLOTS; i++) {
		struct pvtimer_slot *s = &cpu->pv.slot[i];

		if (!wheel_timer_pending(&s->timer))
			continue;
		check(i < cpu->pv.nr_slots);
		/* an upcall-bound slot raises the vCPU's vector, not its own */
		check(s->upcall ? s->vector == 0 : s->vector >= LULL_VECTOR_MIN);
		check(!s->period || (s->period >= LULL_PERIOD_FLOOR_NS &&
				     s->period <= LULL_HORIZON_NS));
		check(s->tolerance <= LULL_HORIZON_NS);
		if (cpu->pv.strict)
			check(!s->deferred && !s->tolerance);
	}
	check(!cpu->pv.upcall_vector ||
	      cpu->pv.upcall_vector >= LULL_VECTOR_MIN);
	check_wakeups(cpu);
}

static void snapshot(struct counters *c, const struct vm_cpu *cpu)
{
	c->page = cpu->pv.shared;
	if (c->page)
		memcpy(c->slot, c->page->slot, sizeof(c->slot));
}

/* A guest may write its own counters, so only values far from wrapping. */
static void check_counters(const struct counters *c, const struct vm_cpu *cpu)
{
	const uint64_t far = UINT64_MAX - (1ull << 60);

	if (!c->page || c->page != cpu->pv.shared)
		return;
	for (unsigned i = 0; i < LULL_MAX_SLOTS; i++) {
		const struct lull_slot_counters *was = &c->slot[i];
		const struct lull_slot_counters *is = &c->page->slot[i];

		if (was->delivered < far)
			check(is->delivered >= was->delivered);
		if (was->merged < far)
			check(is->merged >= was->merged);
	}
}

/* The config bytes: the VM's shape. */
static void vm_build(struct fuzz_input *in)
{
	unsigned shape = (unsigned)fuzz_take(in, 1);
	unsigned nr_slots = 2 + (unsigned)fuzz_take(in, 1) % (LULL_MAX_SLOTS - 1);
	uint64_t pages = 1 + fuzz_take(in, 1) % 64, tail = fuzz_take(in, 2) % 4096;
	uint32_t tsc_khz = (uint32_t)fuzz_take(in, 4);
	int64_t tsc_offset = (int64_t)fuzz_take(in, 8);
	bool clock = shape & 0x20, stable = shape & 0x40;
	uint64_t start = fuzz_take(in, 8);

	memset(&vm, 0, sizeof(vm));
	/* from 0 to near UINT64_MAX, small values as likely as large */
	now = start >> (fuzz_take(in, 1) % 64);
	vm.cfg.nr_vcpus = 1 + shape % MAX_VCPUS;
	vm.cfg.nr_slots = nr_slots;
	vm.cfg.timer_mode =
		shape & 4 ? LULL_MODE_STRICT : LULL_MODE_DEFERRABLE;
	vm.cfg.missed_ticks = (shape >> 3) % 3;
	vm.cfg.slop_ns = 50000;
	vm.ram_size = pages * 4096 + tail;
	vm.ram = calloc(1, vm.ram_size);
	vm.cpus = calloc(vm.cfg.nr_vcpus, sizeof(*vm.cpus));
	vm.kvm_fd = vm.vm_fd = -1;
	serial_init(&vm.serial, &vm.console);
	unclaimed_init(&vm.unclaimed);
	console_init(&vm.console, fuzz_take(in, 2));
	check(vm.ram && vm.cpus);

	for (unsigned i = 0; i < vm.cfg.nr_vcpus; i++) {
		struct vm_cpu *cpu = &vm.cpus[i];
		struct pvclock_src *src = &cpu->pv.clock;

		check(vcpu_init(&cpu->vcpu, i, -1, -1, &vm_vcpu_ops, &vm,
				&vm.stop, vm.cfg.slop_ns, now) == 0);
		pvtimer_init(&cpu->pv, &cpu->vcpu, nr_slots,
			     vm.cfg.timer_mode == LULL_MODE_STRICT,
			     vm.cfg.missed_ticks);
		if (!clock || !tsc_khz)
			continue;
		/* pvclock_init() minus the measurement, which needs KVM */
		src->tsc_stable = stable;
		src->tsc_offset = tsc_offset;
		pvclock_start(src, tsc_khz, 0);
		src->last_sync_ns = now;
	}
	vm.nr_cpus_made = vm.cfg.nr_vcpus;

	if (clock && tsc_khz) {
		/* The scale: tsc_hz ticks are one second, to 2^-20. */
		const struct pvclock_src *src = &vm.cpus[0].pv.clock;
		uint64_t s = pvclock_delta_ns((uint64_t)tsc_khz * 1000,
					      src->mul, src->shift);

		check(s <= 1000000000ull + (1000000000ull >> 20) &&
		      s >= 1000000000ull - (1000000000ull >> 20));
	}
}

static void vm_free(void)
{
	pthread_mutex_destroy(&vm.serial.lock);
	pthread_mutex_destroy(&vm.unclaimed.lock);
	pthread_mutex_destroy(&vm.console.lock);
	free(vm.ram);
	free(vm.cpus);
	vm.ram = NULL;
	vm.cpus = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { .p = data, .left = size };
	struct counters before[MAX_VCPUS];

	vm_build(&in);
	for (unsigned n = 0; n < MAX_OPS && in.left; n++) {
		struct hc_args a = { .op = UINT64_MAX };
		bool keep_counters = true;
		uint64_t synced[MAX_VCPUS];

		for (unsigned i = 0; i < vm.cfg.nr_vcpus; i++) {
			snapshot(&before[i], &vm.cpus[i]);
			synced[i] = vm.cpus[i].pv.clock.last_sync_ns;
		}
		switch (fuzz_take(&in, 1) % NR_OPS) {
		case OP_HCALL:
			op_hcall(&in, &a);
			break;
		case OP_EXIT:
			op_exit(&in, &a);
			break;
		case OP_PORT:
			if (op_port(&in))
				keep_counters = false;
			break;
		case OP_POKE:
			op_poke(&in);
			keep_counters = false;
			break;
		case OP_TIME:
			op_time(&in);
			break;
		default:
			op_deliver(&in);
			break;
		}
		if (may_zero_counters(&a))
			keep_counters = false;
		for (unsigned i = 0; i < vm.cfg.nr_vcpus; i++) {
			/* a registration writes the record at real time */
			check_clock_written(&vm.cpus[i], synced[i], now);
			check_vcpu(&vm.cpus[i]);
			if (keep_counters)
				check_counters(&before[i], &vm.cpus[i]);
		}
		/* A debug-exit write ends the VM: the vCPU threads stop. */
		if (atomic_load(&vm.stop))
			break;
	}
	vm_free();
	return 0;
}
