// SPDX-License-Identifier: MIT
/* rt.c: see rt.h. */
#include <lull_abi.h>

#include "clock.h"
#include "cmdline.h"
#include "idt.h"
#include "lull.h"
#include "printf.h"
#include "rt.h"
#include "smp.h"
#include "string.h"
#include "x86.h"

#define HV_CPUID_FIRST 0x40000000u
#define HV_CPUID_LAST 0x4000ff00u
#define HV_CPUID_STEP 0x100u

static const char KVM_SIGNATURE[12] = "KVMKVMKVM\0\0\0";

struct rt_boot rt_boot;
static int rt_go; /* vCPU 0 sets it when shared state is ready */

const char *hv_name(enum hv_kind hv)
{
	switch (hv) {
	case HV_LULL:
		return "lull";
	case HV_KVM:
		return "kvm";
	default:
		return "none";
	}
}

unsigned smp_count(void)
{
	return rt_boot.nr_vcpus;
}

static unsigned smp_gate;

void smp_open_gate(void)
{
	__atomic_store_n(&smp_gate, 1, __ATOMIC_RELEASE);
}

void smp_wait_gate(void)
{
	while (!__atomic_load_n(&smp_gate, __ATOMIC_ACQUIRE))
		cpu_relax();
}

void rt_exit(uint32_t code)
{
	uint64_t lost = __atomic_load_n(&sti_hlt_shadow_lost, __ATOMIC_RELAXED);

	if (lost)
		printf("rt: %lu interrupt(s) came inside sti;hlt's STI shadow (a CPU that loses it; stepped over the hlt)\n",
		       lost);
	outl(LULL_DEBUG_EXIT_PORT, code);
	for (;;) { /* no debug-exit device: stop here */
		cli();
		hlt();
	}
}

static bool is_lull(uint32_t leaf)
{
	struct cpuid_regs r = cpuid(leaf, 0);

	return r.ebx == LULL_SIGNATURE_EBX && r.ecx == LULL_SIGNATURE_ECX &&
	       r.edx == LULL_SIGNATURE_EDX;
}

static bool signature_is(uint32_t leaf, const char sig[12])
{
	struct cpuid_regs r = cpuid(leaf, 0);
	char got[12];

	memcpy(got + 0, &r.ebx, 4);
	memcpy(got + 4, &r.ecx, 4);
	memcpy(got + 8, &r.edx, 4);
	return !memcmp(got, sig, 12);
}

/*
 * The hypervisor signature leaves are read whether or not CPUID.1:ECX[31]
 * (hypervisor present) is set: a VMM that passes KVM's supported CPUID
 * through need not set it. Without a hypervisor these leaves are out of
 * range and return zeros (AMD) or the highest basic leaf (Intel), which
 * match no signature. lull is recognised by the first base only. KVM's
 * leaves may sit at any base 0x40000000 + k * 0x100 (k < 256, as Linux
 * searches), so that a VMM can offer its own at the first and KVM's
 * after them.
 */
static enum hv_kind detect_hv(uint32_t *base)
{
	if (is_lull(LULL_CPUID_SIGNATURE)) {
		*base = LULL_CPUID_SIGNATURE;
		return HV_LULL;
	}
	for (uint32_t b = HV_CPUID_FIRST; b <= HV_CPUID_LAST;
	     b += HV_CPUID_STEP) {
		if (signature_is(b, KVM_SIGNATURE)) {
			*base = b;
			return HV_KVM;
		}
	}
	*base = 0;
	return HV_NONE;
}

static void read_start_info(uint32_t gpa)
{
	const struct lull_hvm_start_info *si = (const void *)(uintptr_t)gpa;

	if (!gpa || si->magic != LULL_HVM_START_MAGIC) {
		cmdline_init(NULL);
		return;
	}
	rt_boot.start_info = si;
	cmdline_init(si->cmdline_paddr ?
			     (const char *)(uintptr_t)si->cmdline_paddr :
			     NULL);
	if (si->version >= 1 && si->memmap_paddr) {
		const struct lull_hvm_memmap_entry *m =
			(const void *)(uintptr_t)si->memmap_paddr;

		for (uint32_t i = 0; i < si->memmap_entries; i++)
			if (m[i].type == 1 && m[i].addr + m[i].size > rt_boot.ram_end)
				rt_boot.ram_end = m[i].addr + m[i].size;
	}
}

__attribute__((weak)) void guest_ap_main(unsigned id)
{
	(void)id;
	for (;;) {
		cli();
		hlt();
	}
}

static void this_vcpu_init(void)
{
	int err;

	idt_load();
	err = clock_init_this_vcpu();
	if (err)
		printf("rt: vcpu %u: clock registration failed (%d)\n",
		       smp_id(), err);
}

void rt_entry(uint32_t start_info, unsigned id) __attribute__((noreturn));

void rt_entry(uint32_t start_info, unsigned id)
{
	if (id != 0) {
		while (!__atomic_load_n(&rt_go, __ATOMIC_ACQUIRE))
			cpu_relax();
		this_vcpu_init();
		guest_ap_main(id);
		for (;;) {
			cli();
			hlt();
		}
	}

	read_start_info(start_info);
	rt_boot.hv = detect_hv(&rt_boot.hv_base);
	rt_boot.nr_vcpus = 1;
	if (rt_boot.hv == HV_LULL) {
		lull_detect();
		rt_boot.nr_vcpus = lull_info.nr_vcpus ? lull_info.nr_vcpus : 1;
	}
	if (rt_boot.nr_vcpus > RT_MAX_VCPUS) {
		printf("rt: %u vCPUs, this runtime supports at most %u\n",
		       rt_boot.nr_vcpus, RT_MAX_VCPUS);
		rt_exit(1);
	}
	clock_init();
	idt_init();
	__atomic_store_n(&rt_go, 1, __ATOMIC_RELEASE);
	this_vcpu_init();
	rt_exit((uint32_t)guest_main());
}
