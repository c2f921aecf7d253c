/* SPDX-License-Identifier: MIT */
/*
 * lull guest ABI: the constants and layouts a guest and the VMM share.
 *
 * This header is included by both sides (the host VMM and the freestanding
 * guests), so it uses nothing but fixed-width integer types. docs/abi.md is
 * the prose version; when the two disagree, fix both.
 *
 * Discovery   CPUID 0x40000000: eax = max leaf, ebx:ecx:edx = "LULLLULLLULL"
 *             CPUID 0x40000001: eax = LULL_FEAT_*, ebx = hypercall port,
 *                               ecx = timer slots per vCPU, edx = vCPU count
 *             CPUID 0x40000002: eax = ABI version, ebx = period floor (ns),
 *                               ecx = missed-ticks policy, edx = timer mode
 * Hypercall   rax = op, args in rdi, rsi, r10, r8, r9, rbx;
 *             then `out %eax, %dx` with dx = LULL_HCALL_PORT.
 *             Result in rax: >= 0 success, negative errno on error.
 * Time        guest ns from the pvclock record in the per-vCPU shared page;
 *             it tracks the host's CLOCK_MONOTONIC. Deadlines are absolute.
 * Interrupts  a timer expiry or IPI injects its vector (32..255) through
 *             the vCPU's local APIC; a slot bound to the upcall
 *             (LULL_TIMER_UPCALL) sets its bit in the shared page and
 *             raises the vCPU's one upcall vector instead. While the guest leaves that APIC
 *             software-disabled (its reset state) there is no EOI: each
 *             delivery is an edge; a vector raised again before it was
 *             delivered merges into one delivery.
 */
#ifndef LULL_ABI_H
#define LULL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define LULL_ABI_VERSION 1

/* CPUID leaves */
#define LULL_CPUID_SIGNATURE 0x40000000u
#define LULL_CPUID_FEATURES 0x40000001u
#define LULL_CPUID_TIMING 0x40000002u
#define LULL_SIGNATURE_EBX 0x4c4c554cu /* "LULL" */
#define LULL_SIGNATURE_ECX 0x4c4c554cu
#define LULL_SIGNATURE_EDX 0x4c4c554cu

#define LULL_FEAT_PVCLOCK (1u << 0)
#define LULL_FEAT_TIMERS (1u << 1)
#define LULL_FEAT_IPI (1u << 2)
#define LULL_FEAT_UPCALL (1u << 3) /* LULL_HC_SET_UPCALL_VECTOR, LULL_TIMER_UPCALL */

/* Ports */
#define LULL_HCALL_PORT 0x0e11
#define LULL_DEBUG_EXIT_PORT 0xf4
#define LULL_DEBUGCON_PORT 0xe9
#define LULL_COM1_PORT 0x3f8

/* Hypercall numbers (rax) */
#define LULL_HC_NOP 0 /* () -> LULL_ABI_VERSION */
#define LULL_HC_SET_SHARED_PAGE 1 /* (gpa) -> 0 | -EFAULT */
#define LULL_HC_TIMER_SET 2 /* (slot, deadline, vector, flags, period, tolerance) */
#define LULL_HC_TIMER_STOP 3 /* (slot) -> 1 if it was pending, else 0 */
#define LULL_HC_SEND_IPI 4 /* (vcpu, vector) */
#define LULL_HC_XEN_SET_SINGLESHOT 5 /* (deadline, vector): slot 0, hard one-shot */
#define LULL_HC_XEN_STOP_SINGLESHOT 6 /* (): slot 0 */
#define LULL_HC_XEN_SET_PERIODIC 7 /* (period, vector): slot 1, first tick now+period */
#define LULL_HC_XEN_STOP_PERIODIC 8 /* (): slot 1 */
#define LULL_HC_SET_UPCALL_VECTOR 9 /* (vector 32..255, or 0 to unset) -> 0 | -EINVAL */
#define LULL_HC_MAX 9

#define LULL_XEN_SINGLESHOT_SLOT 0
#define LULL_XEN_PERIODIC_SLOT 1

/* Errors returned in rax (negated): Linux errno values */
#define LULL_EFAULT 14
#define LULL_EINVAL 22
#define LULL_ENOSYS 38
#define LULL_ESRCH 3

/* LULL_HC_TIMER_SET flags */
#define LULL_TIMER_DEFERRABLE (1u << 0)
#define LULL_TIMER_PERIODIC (1u << 1)
/* Delivered through the vCPU's upcall (vector argument must be 0). */
#define LULL_TIMER_UPCALL (1u << 2)
#define LULL_TIMER_FLAGS_ALL \
	(LULL_TIMER_DEFERRABLE | LULL_TIMER_PERIODIC | LULL_TIMER_UPCALL)

#define LULL_VECTOR_MIN 32
#define LULL_VECTOR_MAX 255

/* Timer limits (Xen semantics: clamp, never wrap, never -ETIME) */
#define LULL_PERIOD_FLOOR_NS 100000ull /* shorter periods are raised to this */
#define LULL_HORIZON_NS (1ull << 55) /* ~417 days: farther deadlines are clamped */
#define LULL_DEFAULT_SLOTS 64
#define LULL_MAX_SLOTS 128

/* CPUID 0x40000002 ecx: missed periodic ticks policy (--missed-ticks) */
#define LULL_MISSED_ONE 0
#define LULL_MISSED_ALL 1
#define LULL_MISSED_NONE 2
/* CPUID 0x40000002 edx: timer mode (--timer-mode) */
#define LULL_MODE_DEFERRABLE 0
#define LULL_MODE_STRICT 1

/*
 * pvclock record: the layout of Xen's vcpu_time_info and KVM's
 * pvclock_vcpu_time_info. Guest ns = system_time +
 * scale(tsc - tsc_timestamp) where scale(d) = ((d << shift) * mul) >> 32
 * (shift negative: d >> -shift). version is odd while the VMM updates it.
 */
struct lull_pvclock {
	uint32_t version;
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
};

#define LULL_PVCLOCK_TSC_STABLE (1u << 0)

struct lull_slot_counters {
	uint64_t delivered; /* expirations that raised the slot's vector or set its upcall bit */
	uint64_t merged; /* expirations collapsed into another delivery or dropped */
};

#define LULL_SHARED_PAGE_SIZE 4096

/*
 * The per-vCPU shared page, registered with LULL_HC_SET_SHARED_PAGE
 * (gpa LULL_SHARED_PAGE_SIZE-aligned, inside guest RAM). The VMM writes it only while the
 * vCPU is out of the guest, so a vCPU reading its own page sees it whole.
 */
struct lull_shared_page {
	struct lull_pvclock clock; /* offset 0 */
	uint32_t vcpu_id; /* offset 32 */
	uint32_t nr_slots; /* offset 36 */
	/*
	 * The upcall (docs/abi.md "Upcall delivery"), Xen's
	 * evtchn_upcall_pending and evtchn_pending[] for timer slots: the VMM
	 * sets bit i of upcall_bits when upcall-bound slot i expires, and
	 * raises the upcall vector only when it turns upcall_pending from 0
	 * to 1. The guest writes upcall_pending = 0, then takes each word
	 * with an atomic exchange. Both sides use atomic operations.
	 */
	uint32_t upcall_pending; /* offset 40 */
	uint32_t reserved0; /* offset 44 */
	uint64_t upcall_bits[LULL_MAX_SLOTS / 64]; /* offset 48 */
	struct lull_slot_counters slot[LULL_MAX_SLOTS]; /* offset 64 */
};

_Static_assert(offsetof(struct lull_shared_page, vcpu_id) == 32, "ABI");
_Static_assert(offsetof(struct lull_shared_page, nr_slots) == 36, "ABI");
_Static_assert(offsetof(struct lull_shared_page, upcall_pending) == 40, "ABI");
_Static_assert(offsetof(struct lull_shared_page, upcall_bits) == 48, "ABI");
_Static_assert(offsetof(struct lull_shared_page, slot) == 64, "ABI");
_Static_assert(sizeof(struct lull_shared_page) <= LULL_SHARED_PAGE_SIZE, "ABI");

/* PVH boot (hvm_start_info, Xen's arch-x86/hvm/start_info.h) */
#define LULL_PVH_NOTE_TYPE 18 /* XEN_ELFNOTE_PHYS32_ENTRY */
/*
 * An ELF note named "LULL" of this type (empty descriptor) says that every
 * vCPU enters at the PVH entry point at once, as lull's own guest runtime
 * expects. Without it vCPU 0 enters there and the others wait for INIT and
 * SIPI from its local APIC, as on hardware (an unmodified OS).
 */
#define LULL_NOTE_NAME "LULL"
#define LULL_NOTE_ALL_VCPUS_ENTER 1
#define LULL_HVM_START_MAGIC 0x336ec578u
#define LULL_START_INFO_GPA 0x1000 /* hvm_start_info, then the memory map */
#define LULL_CMDLINE_GPA 0x2000
#define LULL_CMDLINE_MAX 4096 /* including the NUL */
/*
 * The PVH module list: one hvm_modlist_entry, the --initrd, which Linux's
 * PVH entry takes for its initramfs. In the start_info page, after the
 * memory map.
 */
#define LULL_MODLIST_GPA 0x1800
/*
 * A bzImage (the Linux x86 64-bit boot protocol) gets, beside the command
 * line at LULL_CMDLINE_GPA: boot_params (the "zero page") at
 * LULL_BOOT_PARAMS_GPA, a GDT at LULL_BOOT_GDT_GPA, and identity-mapped
 * page tables for the first 4 GiB (2 MiB pages): the PML4 at
 * LULL_BOOT_PML4_GPA, then the PDPT, then one page directory per GiB.
 * The kernel copies what it keeps of them before it reuses any: the whole
 * boot area is RAM in the memory map.
 */
#define LULL_BOOT_PARAMS_GPA 0x3000
#define LULL_BOOT_GDT_GPA 0x4000
#define LULL_BOOT_PML4_GPA 0x5000
#define LULL_BOOT_PDPT_GPA 0x6000
#define LULL_BOOT_PD_GPA 0x7000 /* four pages: 0..4 GiB */
#define LULL_BOOT_AREA_END 0xB000 /* [0x1000, 0xB000) is the VMM's; ELF segments may not touch it */
/*
 * ACPI (docs/abi.md): with lull's local APIC, an RSDP (revision 2) at
 * LULL_ACPI_RSDP_GPA, which hvm_start_info.rsdp_paddr names, leads through
 * an XSDT to a FADT (hardware-reduced, with its DSDT) and a MADT with one
 * Processor Local x2APIC entry per vCPU and the I/O APIC. All of
 * them lie in [LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END), inside the range
 * the memory map reports reserved; ELF segments may not touch it either.
 * Without the APIC there are no tables and rsdp_paddr is 0.
 */
#define LULL_ACPI_RSDP_GPA 0xE0000
#define LULL_ACPI_AREA_END 0xF0000
/*
 * The x86 reset vector, 0xF000:0xFFF0: a few bytes of lull's there write
 * the reset register, for an OS that resets by jumping to it (docs/abi.md).
 * ELF segments may not touch it.
 */
#define LULL_RESET_VECTOR_GPA 0xFFFF0
#define LULL_RESET_VECTOR_END 0x100000

struct lull_hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct lull_hvm_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr; /* 0: none */
	uint64_t reserved;
};

struct lull_hvm_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* 1 = RAM, 2 = reserved */
	uint32_t reserved;
};

#endif
