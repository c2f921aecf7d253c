/* SPDX-License-Identifier: MIT */
/*
 * The state a vCPU starts in: CPUID (KVM's supported set, one APIC ID per
 * vCPU, the local APIC only where the VM has lull's, lull's hypervisor
 * leaves at 0x40000000 and KVM's at 0x40000100 with only what KVM serves
 * without an irqchip: kvmclock) and the PVH entry state: 32-bit protected
 * mode, flat segments, paging off, ebx = start_info. Guests tell vCPUs
 * apart by APIC ID. docs/abi.md lists every leaf and bit.
 */
#ifndef LULL_BOOT_H
#define LULL_BOOT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

struct vm_config;

/* CPUID.1:EBX[31:24], the initial APIC ID, is how a vCPU finds its index. */
#define LULL_MAX_VCPUS 256u

/* Allocates *out (caller frees) with KVM_GET_SUPPORTED_CPUID's answer. */
int boot_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out);
/*
 * apic: the VM has lull's local APIC (x2APIC, TSC-deadline timer), so
 * CPUID.1 advertises it; otherwise it says there is none.
 */
int boot_setup_vcpu(int vcpu_fd, const struct kvm_cpuid2 *supported,
		    unsigned index, const struct vm_config *cfg, bool apic,
		    uint32_t entry, uint32_t start_info);

#endif
