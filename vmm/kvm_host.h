/* SPDX-License-Identifier: MIT */
/*
 * kvm_host: which KVM serves /dev/kvm, and what lull relies on of it.
 *
 * A /dev/kvm is not always hardware virtualization. kvm_intel and kvm_amd
 * run a guest on VMX or SVM. kvm_pvm (PVM, a KVM for cloud VMs that have
 * neither) runs only a guest kernel built for it (Linux with
 * CONFIG_PVM_GUEST) natively; any other guest it runs through KVM's
 * instruction emulator: hundreds of times slower, and only as far as the
 * emulator goes (CMPXCHG16B, XRSTOR, INT3 stop it). lull cannot tell a
 * PVM guest from its image, so on kvm_pvm it says so once, before the
 * guest runs (kvm_host_warning). The facts go to --stats and `lull info`.
 *
 * kvm_host_probe reads /sys/module and CPUID; it opens nothing and needs
 * /dev/kvm's descriptor only for KVM_CHECK_EXTENSION.
 */
#ifndef LULL_VMM_KVM_HOST_H
#define LULL_VMM_KVM_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum kvm_module {
	KVM_MODULE_OTHER, /* none of those below: a KVM lull does not know */
	KVM_MODULE_INTEL,
	KVM_MODULE_AMD,
	KVM_MODULE_PVM,
};

/* The KVM capabilities lull uses, each with what lacks without it. */
enum kvm_feature {
	KVM_FEATURE_USER_SPACE_MSR, /* the local APIC reaches lull */
	KVM_FEATURE_MSR_FILTER, /* ...through an MSR filter */
	KVM_FEATURE_ENFORCE_PV_CPUID, /* the guest sees only lull's PV bits */
	KVM_FEATURE_SYNC_REGS, /* hypercall arguments without an ioctl */
	KVM_FEATURE_GET_TSC_KHZ, /* the guest TSC's rate */
	KVM_FEATURE_ADJUST_CLOCK, /* KVM's verdict on the host TSC */
	KVM_FEATURES
};

struct kvm_host {
	enum kvm_module module;
	/* the host CPU has VMX or SVM: a guest runs on it, not emulated */
	bool hardware;
	int features[KVM_FEATURES]; /* KVM_CHECK_EXTENSION's answer; > 0: has it */
	int max_vcpus;
};

/*
 * Opens /dev/kvm and checks its API version: the descriptor, or -errno
 * with one sentence in err (what is missing, and what to do about it).
 */
int kvm_host_open(char *err, size_t len);
void kvm_host_probe(struct kvm_host *h, int kvm_fd);
const char *kvm_module_name(enum kvm_module m);
const char *kvm_feature_name(enum kvm_feature f);
/* One line for the user, or NULL: what this KVM does to an ordinary guest. */
const char *kvm_host_warning(const struct kvm_host *h);
/* "kvm": {...} for --stats, without a trailing comma or newline. */
void kvm_host_json(FILE *f, const struct kvm_host *h);

#endif
