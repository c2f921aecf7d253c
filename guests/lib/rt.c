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
	outl(LULL_DEBUG_EXIT_PORT, code);
	for (;;) { /* no debug-exit device: stop here */
		cli();
		hlt();
	}
}

static enum hv_kind detect_hv(void)
{
	struct cpuid_regs r = cpuid(1, 0);
	char sig[13];

	if (!(r.ecx & (1u << 31))) /* hypervisor present bit */
		return HV_NONE;
	r = cpuid(0x40000000, 0);
	memcpy(sig + 0, &r.ebx, 4);
	memcpy(sig + 4, &r.ecx, 4);
	memcpy(sig + 8, &r.edx, 4);
	sig[12] = '\0';
	if (!memcmp(sig, "LULLLULLLULL", 12))
		return HV_LULL;
	if (!memcmp(sig, "KVMKVMKVM\0\0\0", 12))
		return HV_KVM;
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
	rt_boot.hv = detect_hv();
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
	idt_init();
	__atomic_store_n(&rt_go, 1, __ATOMIC_RELEASE);
	this_vcpu_init();
	rt_exit((uint32_t)guest_main());
}
