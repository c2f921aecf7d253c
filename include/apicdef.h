/* SPDX-License-Identifier: MIT */
/*
 * The local APIC as the SDM defines it (vol. 3A, ch. 11): its MSRs, its
 * base and page, its register numbers and bits, the delivery modes and
 * shorthands of an interrupt message, and the message itself. Constants
 * only, like Linux's asm/apicdef.h: the local APIC (vcpu/apic.h) and the
 * I/O APIC (devices/ioapic.h) both speak in them, and neither has to
 * include the other to do so.
 *
 * Registers are numbered as x2APIC registers: reg = MSR - 0x800 = xAPIC
 * MMIO offset / 16.
 */
#ifndef LULL_APICDEF_H
#define LULL_APICDEF_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_IA32_APIC_BASE 0x1b
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define MSR_X2APIC_FIRST 0x800
#define MSR_X2APIC_LAST 0x8ff

#define APIC_DEFAULT_BASE 0xfee00000u
#define APIC_BASE_BSP (1u << 8)
#define APIC_BASE_EXTD (1u << 10) /* x2APIC mode */
#define APIC_BASE_EN (1u << 11)
#define APIC_PAGE_SIZE 4096u

/* Register numbers (x2APIC MSR - 0x800) */
#define APIC_ID 0x02
#define APIC_VERSION 0x03
#define APIC_TPR 0x08
#define APIC_APR 0x09
#define APIC_PPR 0x0a
#define APIC_EOI 0x0b
#define APIC_LDR 0x0d
#define APIC_DFR 0x0e
#define APIC_SVR 0x0f
#define APIC_ISR 0x10 /* 8 registers of 32 vectors each */
#define APIC_TMR 0x18
#define APIC_IRR 0x20
#define APIC_ESR 0x28
#define APIC_ICR 0x30
#define APIC_ICR2 0x31 /* xAPIC: the destination half of the ICR */
#define APIC_LVT_TIMER 0x32
#define APIC_LVT_THERMAL 0x33
#define APIC_LVT_PERF 0x34
#define APIC_LVT_LINT0 0x35
#define APIC_LVT_LINT1 0x36
#define APIC_LVT_ERROR 0x37
#define APIC_TIMER_INITIAL 0x38
#define APIC_TIMER_CURRENT 0x39
#define APIC_TIMER_DIVIDE 0x3e
#define APIC_SELF_IPI 0x3f /* x2APIC only */

#define APIC_NR_LVT 6 /* timer, thermal, perf, LINT0, LINT1, error */
/* Version 0x14 (integrated APIC), highest LVT entry 5: KVM's answer. */
#define APIC_VERSION_VALUE (0x14u | ((APIC_NR_LVT - 1u) << 16))

#define APIC_SVR_ENABLE (1u << 8)
#define APIC_LVT_MASKED (1u << 16)
#define APIC_TIMER_ONESHOT 0u
#define APIC_TIMER_PERIODIC 1u
#define APIC_TIMER_TSC_DEADLINE 2u

/* ESR bits */
#define APIC_ESR_SEND_ILLEGAL (1u << 5)
#define APIC_ESR_RECV_ILLEGAL (1u << 6)
#define APIC_ESR_ILLEGAL_REG (1u << 7)

/* ICR delivery modes and shorthands */
#define APIC_DM_FIXED 0
#define APIC_DM_LOWEST 1
#define APIC_DM_SMI 2
#define APIC_DM_NMI 4
#define APIC_DM_INIT 5
#define APIC_DM_SIPI 6
#define APIC_SH_NONE 0
#define APIC_SH_SELF 1
#define APIC_SH_ALL 2
#define APIC_SH_OTHERS 3

/*
 * One interrupt message: an ICR write, or an I/O APIC redirection entry
 * firing. The VM routes it to the local APICs it names (vcpu_ops.ipi,
 * vcpu_send_ipi).
 */
struct apic_ipi {
	uint32_t dest; /* x2APIC: 32 bits; xAPIC: ICR2[31:24] */
	uint8_t vector;
	uint8_t mode; /* APIC_DM_* */
	uint8_t shorthand; /* APIC_SH_* */
	bool logical;
	bool x2apic; /* the sender's mode: how dest is to be read */
	/* level-triggered (an I/O APIC's level pin): the receiving APIC sets
	 * the vector's TMR bit, and its EOI goes back to the sender
	 * (vcpu_ops.level_eoi). ICR IPIs are edges. */
	bool level;
};

#endif
