/* SPDX-License-Identifier: MIT */
/*
 * The state a vCPU starts in: CPUID (KVM's supported set, one APIC ID per
 * vCPU, the local APIC only where the VM has lull's, lull's hypervisor
 * leaves at 0x40000000 and KVM's at 0x40000100 with only what KVM serves
 * without an irqchip: kvmclock) and the entry state of one of three boot
 * protocols. PVH: 32-bit protected mode, flat segments, paging off,
 * ebx = start_info; multiboot v1 the same, with eax = 0x2BADB002 and
 * ebx = the multiboot information. Linux's 64-bit boot protocol (a bzImage): long mode
 * on the page tables and GDT bzimage.c wrote in the boot area, CS
 * __BOOT_CS, the data segments __BOOT_DS, rsi = boot_params. Interrupts
 * off in both. Guests tell vCPUs apart by APIC ID. docs/abi.md lists
 * every leaf and bit.
 */
#ifndef LULL_BOOT_H
#define LULL_BOOT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

enum boot_protocol {
	BOOT_PVH, /* a PVH ELF: lull's guests, a Linux vmlinux */
	BOOT_LINUX_64, /* a bzImage, entered at its 64-bit entry point */
	BOOT_MULTIBOOT, /* multiboot v1: PVH's state, eax = 0x2BADB002 */
};

struct boot_entry {
	enum boot_protocol protocol;
	uint64_t rip;
	/* PVH: hvm_start_info's GPA (ebx); Linux: boot_params' GPA (rsi);
	 * multiboot: the multiboot information's GPA (ebx) */
	uint64_t info;
};

/*
 * What lull's CPUID leaves tell every vCPU about the VM (docs/abi.md):
 * the builder fills it from the command line, so that the loader needs
 * nothing of the VM's own types.
 */
struct boot_leaves {
	unsigned nr_vcpus;
	unsigned nr_slots; /* PV timer slots per vCPU */
	unsigned missed_ticks; /* LULL_MISSED_* */
	unsigned timer_mode; /* LULL_MODE_* */
	/*
	 * The guest's TSC runs at one rate, in step on every vCPU, through
	 * halts: KVM keeps it in its master clock (KVM_CLOCK_TSC_STABLE).
	 * CPUID 0x80000007 says so (invariant TSC) where this holds, and
	 * only there, whatever the host CPU reports: Linux trusts an
	 * invariant TSC that also has TSC_ADJUST and stops verifying it
	 * against another clock every half second.
	 */
	bool tsc_invariant;
	bool no_x2apic; /* --no-x2apic: CPUID.1 offers an xAPIC only */
	bool no_pv_eoi; /* --no-pv-eoi: KVM's leaf offers no PV EOI */
};

/* CPUID.1:EBX[31:24], the initial APIC ID, is how a vCPU finds its index. */
#define LULL_MAX_VCPUS 256u

/* Allocates *out (caller frees) with KVM_GET_SUPPORTED_CPUID's answer. */
int boot_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out);
/*
 * apic: the VM has lull's local APIC (x2APIC, TSC-deadline timer), so
 * CPUID.1 advertises it; otherwise it says there is none.
 */
int boot_setup_vcpu(int vcpu_fd, const struct kvm_cpuid2 *supported,
		    unsigned index, const struct boot_leaves *leaves, bool apic,
		    const struct boot_entry *entry);

#endif
