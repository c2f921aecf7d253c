/* SPDX-License-Identifier: MIT */
/*
 * lull.h: lull's discovery leaves and hypercall wrappers (lull_abi.h).
 *
 * A hypercall is `out %eax, %dx` to the hypercall port with the op in rax
 * and arguments in rdi, rsi, r10, r8, r9, rbx; the VMM returns the result
 * in rax (>= 0 success, negative errno). Only rax changes. The wrappers
 * do not check arguments: the VMM does, and the abi guest tests that.
 */
#ifndef GUEST_LULL_H
#define GUEST_LULL_H

#include <stdint.h>

#include <lull_abi.h>

struct lull_info {
	uint32_t max_leaf;
	uint32_t features;	  /* LULL_FEAT_* */
	uint32_t hcall_port;	  /* CPUID 0x40000001 ebx */
	uint32_t nr_slots;	  /* timer slots per vCPU */
	uint32_t nr_vcpus;
	uint32_t abi_version;	  /* CPUID 0x40000002 */
	uint32_t period_floor_ns;
	uint32_t missed_policy;	  /* LULL_MISSED_* */
	uint32_t timer_mode;	  /* LULL_MODE_* */
};

/* Filled by vCPU 0 at boot when lull is detected (rt.c). */
extern struct lull_info lull_info;

void lull_detect(void);

static inline long lull_hcall(uint64_t op, uint64_t a1, uint64_t a2,
			      uint64_t a3, uint64_t a4, uint64_t a5,
			      uint64_t a6)
{
	register uint64_t r10 asm("r10") = a3;
	register uint64_t r8 asm("r8") = a4;
	register uint64_t r9 asm("r9") = a5;
	uint64_t rax = op;

	asm volatile("outl %%eax, %%dx"
		     : "+a"(rax)
		     : "d"((uint16_t)LULL_HCALL_PORT), "D"(a1), "S"(a2),
		       "r"(r10), "r"(r8), "r"(r9), "b"(a6)
		     : "memory");
	return (long)rax;
}

static inline long lull_nop(void)
{
	return lull_hcall(LULL_HC_NOP, 0, 0, 0, 0, 0, 0);
}

static inline long lull_set_shared_page(uint64_t gpa)
{
	return lull_hcall(LULL_HC_SET_SHARED_PAGE, gpa, 0, 0, 0, 0, 0);
}

static inline long lull_timer_set(uint64_t slot, uint64_t deadline_ns,
				  uint64_t vector, uint64_t flags,
				  uint64_t period_ns, uint64_t tolerance_ns)
{
	return lull_hcall(LULL_HC_TIMER_SET, slot, deadline_ns, vector, flags,
			  period_ns, tolerance_ns);
}

static inline long lull_timer_stop(uint64_t slot)
{
	return lull_hcall(LULL_HC_TIMER_STOP, slot, 0, 0, 0, 0, 0);
}

static inline long lull_send_ipi(uint64_t vcpu, uint64_t vector)
{
	return lull_hcall(LULL_HC_SEND_IPI, vcpu, vector, 0, 0, 0, 0);
}

static inline long lull_xen_set_singleshot(uint64_t deadline_ns,
					   uint64_t vector)
{
	return lull_hcall(LULL_HC_XEN_SET_SINGLESHOT, deadline_ns, vector, 0,
			  0, 0, 0);
}

static inline long lull_xen_stop_singleshot(void)
{
	return lull_hcall(LULL_HC_XEN_STOP_SINGLESHOT, 0, 0, 0, 0, 0, 0);
}

static inline long lull_xen_set_periodic(uint64_t period_ns, uint64_t vector)
{
	return lull_hcall(LULL_HC_XEN_SET_PERIODIC, period_ns, vector, 0, 0, 0,
			  0);
}

static inline long lull_xen_stop_periodic(void)
{
	return lull_hcall(LULL_HC_XEN_STOP_PERIODIC, 0, 0, 0, 0, 0, 0);
}

static inline long lull_set_upcall_vector(uint64_t vector)
{
	return lull_hcall(LULL_HC_SET_UPCALL_VECTOR, vector, 0, 0, 0, 0, 0);
}

#endif
