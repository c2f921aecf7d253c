/* SPDX-License-Identifier: MIT */
/*
 * The state a vCPU starts in: CPUID (KVM's supported set, one APIC ID per
 * vCPU, no local APIC advertised since lull has none, lull's hypervisor
 * leaves instead of KVM's) and the PVH entry state: 32-bit protected mode,
 * flat segments, paging off, ebx = start_info. Every vCPU starts this way
 * at the same entry point; guests tell themselves apart by APIC ID.
 */
#ifndef LULL_BOOT_H
#define LULL_BOOT_H

#include <linux/kvm.h>
#include <stdint.h>

struct vm_config;

/* CPUID.1:EBX[31:24], the initial APIC ID, is how a vCPU finds its index. */
#define LULL_MAX_VCPUS 256u

/* Allocates *out (caller frees) with KVM_GET_SUPPORTED_CPUID's answer. */
int boot_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out);
int boot_setup_vcpu(int vcpu_fd, const struct kvm_cpuid2 *supported,
		    unsigned index, const struct vm_config *cfg, uint32_t entry,
		    uint32_t start_info);

#endif
