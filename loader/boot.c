// SPDX-License-Identifier: MIT
#include <asm/kvm_para.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "loader/boot.h"
#include "loader/bzimage.h"
#include "loader/multiboot.h"
#include "lull_abi.h"

#define CPUID_1_ECX_X2APIC (1u << 21)
#define CPUID_1_ECX_HYPERVISOR (1u << 31)
#define CPUID_1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID_1_EDX_APIC (1u << 9)
#define CPUID_1_APIC_ECX (CPUID_1_ECX_X2APIC | CPUID_1_ECX_TSC_DEADLINE)
#define CPUID_80000007_EDX_INVARIANT_TSC (1u << 8)
#define LULL_LEAVES 5 /* lull's three, then KVM's two */

/*
 * KVM's PV leaves, one hypervisor base after lull's: guests find lull at
 * 0x40000000 first, and Linux (hypervisor_cpuid_base) and KVM itself
 * (kvm_update_kvm_cpuid_base, for its PV MSRs) both search every base
 * 0x40000000 + k * 0x100 for "KVMKVMKVM".
 */
#define KVM_LEAVES_BASE 0x40000100u
#define KVM_LEAF_SIGNATURE (KVM_LEAVES_BASE | KVM_CPUID_SIGNATURE)
#define KVM_LEAF_FEATURES (KVM_LEAVES_BASE | KVM_CPUID_FEATURES)

/*
 * Of KVM's PV features, those KVM serves all by itself, with no in-kernel
 * irqchip (docs/abi.md says why each): kvmclock through the MSR pair
 * 0x4b564d00/01, with the per-record "TSC stable" flag that KVM sets only
 * while its master clock holds, and no port 0x80 delays, since nothing
 * behind lull's ports needs them; these only where this KVM offers them.
 */
#define KVM_PV_OFFERED                                                         \
	((1u << KVM_FEATURE_NOP_IO_DELAY) | (1u << KVM_FEATURE_CLOCKSOURCE2) | \
	 (1u << KVM_FEATURE_CLOCKSOURCE_STABLE_BIT))
/* ...and the one lull's APIC serves, where the VM has it: PV EOI. */
#define KVM_PV_LULL_APIC (1u << KVM_FEATURE_PV_EOI)

int boot_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out)
{
	for (unsigned nent = 128; nent <= 4096; nent *= 2) {
		struct kvm_cpuid2 *c =
			calloc(1, sizeof(*c) + (nent + LULL_LEAVES) *
						       sizeof(c->entries[0]));

		if (!c)
			return -ENOMEM;
		c->nent = nent;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*out = c;
			return 0;
		}
		free(c);
		if (errno != E2BIG)
			return -errno;
	}
	return -E2BIG;
}

static void lull_leaf(struct kvm_cpuid_entry2 *e, uint32_t fn, uint32_t a,
		      uint32_t b, uint32_t c, uint32_t d)
{
	memset(e, 0, sizeof(*e));
	e->function = fn;
	e->eax = a;
	e->ebx = b;
	e->ecx = c;
	e->edx = d;
}

/* KVM's own feature bits, or none where it has no PV leaves. */
static uint32_t kvm_pv_features(const struct kvm_cpuid2 *supported)
{
	for (unsigned i = 0; i < supported->nent; i++)
		if (supported->entries[i].function == KVM_CPUID_FEATURES)
			return supported->entries[i].eax;
	return 0;
}

/*
 * The signature leaf's eax is the max leaf of KVM's range, as in KVM's
 * own; the features leaf's edx holds KVM's hints, of which lull gives none
 * (KVM_HINTS_REALTIME would promise each vCPU a host CPU of its own).
 */
static void kvm_leaves(struct kvm_cpuid_entry2 e[2],
		       const struct kvm_cpuid2 *supported, bool pv_eoi)
{
	static const char sig[12] = KVM_SIGNATURE;
	uint32_t s[3];

	memcpy(s, sig, sizeof(s));
	lull_leaf(&e[0], KVM_LEAF_SIGNATURE, KVM_LEAF_FEATURES, s[0], s[1],
		  s[2]);
	lull_leaf(&e[1], KVM_LEAF_FEATURES,
		  (kvm_pv_features(supported) & KVM_PV_OFFERED) |
			  (pv_eoi ? KVM_PV_LULL_APIC : 0),
		  0, 0, 0);
}

static struct kvm_cpuid2 *vcpu_cpuid(const struct kvm_cpuid2 *supported,
				     unsigned index,
				     const struct boot_leaves *leaves,
				     bool apic)
{
	struct kvm_cpuid2 *c =
		calloc(1, sizeof(*c) + (supported->nent + LULL_LEAVES) *
					       sizeof(c->entries[0]));
	unsigned n = 0;

	if (!c)
		return NULL;
	for (unsigned i = 0; i < supported->nent; i++) {
		struct kvm_cpuid_entry2 e = supported->entries[i];

		/* KVM's hypervisor leaves offer all of KVM's PV features, most
		 * of which need an in-kernel irqchip; ours replace them. */
		if (e.function >= 0x40000000 && e.function <= 0x400000ff)
			continue;
		switch (e.function) {
		case 1:
			e.ebx = (e.ebx & 0x00ffffff) | (index << 24);
			/* lull's APIC (vcpu/apic.h), where the VM has one, is
			 * an x2APIC with the TSC-deadline timer. */
			if (apic) {
				e.ecx |= CPUID_1_APIC_ECX;
				e.edx |= CPUID_1_EDX_APIC;
				if (leaves->no_x2apic)
					e.ecx &= ~CPUID_1_ECX_X2APIC;
			} else {
				e.ecx &= ~CPUID_1_APIC_ECX;
				e.edx &= ~CPUID_1_EDX_APIC;
			}
			/* A standard KVM leaves "hypervisor present" to the
			 * VMM; software that honours it looks for our leaves
			 * only when it is set. */
			e.ecx |= CPUID_1_ECX_HYPERVISOR;
			break;
		case 0xb:
		case 0x1f:
			e.edx = index;
			break;
		case 0x80000007:
			if (leaves->tsc_invariant)
				e.edx |= CPUID_80000007_EDX_INVARIANT_TSC;
			else
				e.edx &= ~CPUID_80000007_EDX_INVARIANT_TSC;
			break;
		}
		c->entries[n++] = e;
	}
	lull_leaf(&c->entries[n++], LULL_CPUID_SIGNATURE, LULL_CPUID_TIMING,
		  LULL_SIGNATURE_EBX, LULL_SIGNATURE_ECX, LULL_SIGNATURE_EDX);
	lull_leaf(&c->entries[n++], LULL_CPUID_FEATURES,
		  LULL_FEAT_PVCLOCK | LULL_FEAT_TIMERS | LULL_FEAT_IPI |
			  LULL_FEAT_UPCALL,
		  LULL_HCALL_PORT, leaves->nr_slots, leaves->nr_vcpus);
	lull_leaf(&c->entries[n++], LULL_CPUID_TIMING, LULL_ABI_VERSION,
		  (uint32_t)LULL_PERIOD_FLOOR_NS, leaves->missed_ticks,
		  leaves->timer_mode);
	kvm_leaves(&c->entries[n], supported, apic && !leaves->no_pv_eoi);
	n += 2;
	c->nent = n;
	return c;
}

static void flat_segment(struct kvm_segment *s, uint16_t selector, uint8_t type)
{
	*s = (struct kvm_segment){
		.base = 0,
		.limit = 0xffffffff,
		.selector = selector,
		.type = type,
		.present = 1,
		.dpl = 0,
		.db = 1,
		.s = 1,
		.l = 0,
		.g = 1,
	};
}

/*
 * PVH and multiboot entry: 32-bit protected mode, paging off, flat 4 GiB
 * segments, the boot information in ebx and, for multiboot, its magic in
 * eax. Without an APIC, IA32_APIC_BASE goes to 0, APIC disabled: KVM sets
 * CPUID.1:EDX.APIC from that MSR's enable bit whatever the VMM said
 * (kvm_update_cpuid_runtime), and its reset value has the APIC enabled.
 */
static int protected_mode_entry_state(int fd, uint32_t entry, uint32_t eax,
				      uint32_t ebx, bool apic)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs = {
		.rip = entry,
		.rax = eax,
		.rbx = ebx,
		.rflags = 0x2,
	};

	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	flat_segment(&sregs.cs, 0x08, 0xb); /* execute/read, accessed */
	flat_segment(&sregs.ds, 0x10, 0x3); /* read/write, accessed */
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.tr = (struct kvm_segment){ .limit = 0x67,
					 .type = 0xb,
					 .present = 1 };
	sregs.cr0 = 0x11; /* PE | ET */
	sregs.cr3 = 0;
	sregs.cr4 = 0;
	sregs.efer = 0;
	if (!apic)
		sregs.apic_base = 0;
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

static void long_mode_segment(struct kvm_segment *s, uint16_t selector,
			      uint8_t type, bool code)
{
	flat_segment(s, selector, type);
	s->l = code; /* 64-bit code; data keeps D/B */
	s->db = !code;
}

/*
 * Linux's 64-bit boot protocol: long mode, paging on the identity map of
 * the first 4 GiB that bzimage.c wrote, CS = __BOOT_CS and the data
 * segments __BOOT_DS from the GDT it wrote beside them, rsi = boot_params.
 */
static int linux64_entry_state(int fd, uint64_t entry, uint64_t boot_params,
			       bool apic)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs = {
		.rip = entry,
		.rsi = boot_params,
		.rflags = 0x2,
	};

	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	long_mode_segment(&sregs.cs, BZ_BOOT_CS, 0xb, true);
	long_mode_segment(&sregs.ds, BZ_BOOT_DS, 0x3, false);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.tr = (struct kvm_segment){ .limit = 0x67,
					 .type = 0xb,
					 .present = 1 };
	sregs.gdt.base = LULL_BOOT_GDT_GPA;
	sregs.gdt.limit = BZ_GDT_ENTRIES * 8 - 1;
	sregs.cr0 = 0x80000011; /* PG | ET | PE */
	sregs.cr3 = LULL_BOOT_PML4_GPA;
	sregs.cr4 = 0x20; /* PAE */
	sregs.efer = 0x500; /* LMA | LME */
	if (!apic)
		sregs.apic_base = 0;
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

/*
 * KVM serves its PV MSRs and hypercalls to any guest that knows their
 * numbers, advertised or not, unless the vCPU is held to its CPUID
 * (KVM_CAP_ENFORCE_PV_FEATURE_CPUID, Linux 5.10): then what lull does not
 * offer faults, as on a KVM without it. An older KVM has no such switch
 * (EINVAL) and serves everything, as before.
 */
static int enforce_pv_cpuid(int vcpu_fd)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_ENFORCE_PV_FEATURE_CPUID,
		.args[0] = 1,
	};

	if (ioctl(vcpu_fd, KVM_ENABLE_CAP, &cap) == 0 || errno == EINVAL)
		return 0;
	return -errno;
}

int boot_setup_vcpu(int vcpu_fd, const struct kvm_cpuid2 *supported,
		    unsigned index, const struct boot_leaves *leaves, bool apic,
		    const struct boot_entry *entry)
{
	struct kvm_cpuid2 *c = vcpu_cpuid(supported, index, leaves, apic);
	int r = 0;

	if (!c)
		return -ENOMEM;
	if (ioctl(vcpu_fd, KVM_SET_CPUID2, c) < 0)
		r = -errno;
	free(c);
	if (r == 0)
		r = enforce_pv_cpuid(vcpu_fd);
	if (r < 0)
		return r;
	if (entry->protocol == BOOT_LINUX_64)
		return linux64_entry_state(vcpu_fd, entry->rip, entry->info,
					   apic);
	return protected_mode_entry_state(
		vcpu_fd, (uint32_t)entry->rip,
		entry->protocol == BOOT_MULTIBOOT ? MULTIBOOT_BOOT_MAGIC : 0,
		(uint32_t)entry->info, apic);
}
