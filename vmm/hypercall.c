// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>

#include "timers/clock.h"
#include "vmm/hypercall.h"
#include "vmm/vm.h"

static int64_t bad(struct vm *vm, struct vm_cpu *cpu, enum hc_error kind,
		   int64_t err, const char *fmt, uint64_t value)
{
	char detail[96];

	snprintf(detail, sizeof(detail), fmt, value);
	vm_hc_error(vm, &cpu->vcpu, kind, detail);
	return err;
}

static bool vector_ok(uint64_t vector)
{
	return vector >= LULL_VECTOR_MIN && vector <= LULL_VECTOR_MAX;
}

static uint64_t clamp_horizon(uint64_t v)
{
	return v > LULL_HORIZON_NS ? LULL_HORIZON_NS : v;
}

/* Xen semantics: a past deadline fires at once; a far one is clamped. */
static uint64_t clamp_deadline(uint64_t deadline, uint64_t now)
{
	uint64_t limit = sat_add(now, LULL_HORIZON_NS);

	return deadline > limit ? limit : deadline;
}

static int64_t timer_set(struct vm *vm, struct vm_cpu *cpu, uint64_t slot,
			 uint64_t deadline, uint64_t vector, uint64_t flags,
			 uint64_t period, uint64_t tolerance, uint64_t now)
{
	if (slot >= cpu->pv.nr_slots)
		return bad(vm, cpu, HC_ERR_SLOT, -LULL_EINVAL,
			   "timer slot %" PRIu64 " out of range", slot);
	if (flags & ~(uint64_t)LULL_TIMER_FLAGS_ALL)
		return bad(vm, cpu, HC_ERR_FLAGS, -LULL_EINVAL,
			   "unknown timer flags 0x%" PRIx64, flags);
	if (flags & LULL_TIMER_UPCALL) {
		/* the upcall's vector is the vCPU's, never the slot's */
		if (vector)
			return bad(vm, cpu, HC_ERR_VECTOR, -LULL_EINVAL,
				   "vector %" PRIu64 " with UPCALL (must be 0)",
				   vector);
		if (!cpu->pv.upcall_vector)
			return bad(vm, cpu, HC_ERR_FLAGS, -LULL_EINVAL,
				   "UPCALL flag 0x%" PRIx64 " with no upcall vector set",
				   flags);
	} else if (!vector_ok(vector)) {
		return bad(vm, cpu, HC_ERR_VECTOR, -LULL_EINVAL,
			   "vector %" PRIu64 " outside 32..255", vector);
	}
	if (flags & LULL_TIMER_PERIODIC) {
		if (!period)
			return bad(vm, cpu, HC_ERR_PERIOD, -LULL_EINVAL,
				   "periodic timer with period %" PRIu64,
				   period);
		period = clamp_horizon(vcpu_floor_period(&cpu->vcpu, period));
	}
	pvtimer_set(&cpu->pv, (unsigned)slot, clamp_deadline(deadline, now),
		    (uint8_t)vector, (unsigned)flags, period,
		    clamp_horizon(tolerance));
	return 0;
}

static int64_t timer_stop(struct vm *vm, struct vm_cpu *cpu, uint64_t slot)
{
	if (slot >= cpu->pv.nr_slots)
		return bad(vm, cpu, HC_ERR_SLOT, -LULL_EINVAL,
			   "timer slot %" PRIu64 " out of range", slot);
	return pvtimer_stop(&cpu->pv, (unsigned)slot);
}

static int64_t set_shared_page(struct vm *vm, struct vm_cpu *cpu, uint64_t gpa)
{
	struct lull_shared_page *page;

	if (gpa % LULL_SHARED_PAGE_SIZE)
		return bad(vm, cpu, HC_ERR_POINTER, -LULL_EFAULT,
			   "shared page 0x%" PRIx64 " not 4 KiB aligned", gpa);
	page = vm_gpa_to_hva(vm, gpa, LULL_SHARED_PAGE_SIZE);
	if (!page)
		return bad(vm, cpu, HC_ERR_POINTER, -LULL_EFAULT,
			   "shared page 0x%" PRIx64 " outside guest RAM", gpa);
	pvtimer_set_shared(&cpu->pv, page);
	return 0;
}

/*
 * Per vCPU, like Xen's HVM_PARAM_CALLBACK_IRQ vector. The bits live in the
 * shared page, so it must be registered first; 0 unsets (masks) the upcall:
 * bound slots' expiries are then dropped and counted merged.
 */
static int64_t set_upcall_vector(struct vm *vm, struct vm_cpu *cpu,
				 uint64_t vector)
{
	if (vector && !vector_ok(vector))
		return bad(vm, cpu, HC_ERR_VECTOR, -LULL_EINVAL,
			   "upcall vector %" PRIu64 " outside 32..255",
			   vector);
	if (!cpu->pv.shared)
		return bad(vm, cpu, HC_ERR_POINTER, -LULL_EINVAL,
			   "upcall vector %" PRIu64 " before a shared page",
			   vector);
	pvtimer_set_upcall_vector(&cpu->pv, (uint8_t)vector);
	return 0;
}

static int64_t send_ipi(struct vm *vm, struct vm_cpu *cpu, uint64_t target,
			uint64_t vector)
{
	if (target >= vm->cfg.nr_vcpus)
		return bad(vm, cpu, HC_ERR_TARGET, -LULL_ESRCH,
			   "IPI to vCPU %" PRIu64 " that does not exist",
			   target);
	if (!vector_ok(vector))
		return bad(vm, cpu, HC_ERR_VECTOR, -LULL_EINVAL,
			   "IPI vector %" PRIu64 " outside 32..255", vector);
	vcpu_post_vector(&vm->cpus[target].vcpu, (uint8_t)vector);
	return 0;
}

int64_t hypercall(struct vm *vm, struct vm_cpu *cpu, const struct hc_args *a,
		  uint64_t now)
{
	atomic_fetch_add_explicit(&vm->hc_calls, 1, memory_order_relaxed);

	switch (a->op) {
	case LULL_HC_NOP:
		return LULL_ABI_VERSION;
	case LULL_HC_SET_SHARED_PAGE:
		return set_shared_page(vm, cpu, a->a0);
	case LULL_HC_TIMER_SET:
		return timer_set(vm, cpu, a->a0, a->a1, a->a2, a->a3, a->a4,
				 a->a5, now);
	case LULL_HC_TIMER_STOP:
		return timer_stop(vm, cpu, a->a0);
	case LULL_HC_SEND_IPI:
		return send_ipi(vm, cpu, a->a0, a->a1);
	case LULL_HC_XEN_SET_SINGLESHOT:
		return timer_set(vm, cpu, LULL_XEN_SINGLESHOT_SLOT, a->a0,
				 a->a1, 0, 0, 0, now);
	case LULL_HC_XEN_STOP_SINGLESHOT:
		return timer_stop(vm, cpu, LULL_XEN_SINGLESHOT_SLOT);
	case LULL_HC_XEN_SET_PERIODIC: {
		/* VCPUOP_set_periodic_timer: first tick one period from now */
		uint64_t period =
			vcpu_floor_period(&cpu->vcpu, clamp_horizon(a->a0));

		return timer_set(vm, cpu, LULL_XEN_PERIODIC_SLOT,
				 sat_add(now, period), a->a1,
				 LULL_TIMER_PERIODIC, period, 0, now);
	}
	case LULL_HC_XEN_STOP_PERIODIC:
		return timer_stop(vm, cpu, LULL_XEN_PERIODIC_SLOT);
	case LULL_HC_SET_UPCALL_VECTOR:
		return set_upcall_vector(vm, cpu, a->a0);
	default:
		return bad(vm, cpu, HC_ERR_OP, -LULL_ENOSYS,
			   "unknown hypercall %" PRIu64, a->op);
	}
}

void hypercall_exit(struct vm *vm, struct vm_cpu *cpu)
{
	struct kvm_regs *regs = vcpu_regs(&cpu->vcpu);
	struct hc_args a = {
		.op = regs->rax,
		.a0 = regs->rdi,
		.a1 = regs->rsi,
		.a2 = regs->r10,
		.a3 = regs->r8,
		.a4 = regs->r9,
		.a5 = regs->rbx,
	};

	regs->rax = (uint64_t)hypercall(vm, cpu, &a, clock_now_ns());
	vcpu_regs_changed(&cpu->vcpu);
}
