/* SPDX-License-Identifier: MIT */
/*
 * rt.h: the runtime's start and end, and what it found at boot.
 *
 * Boot order: vCPU 0 reads start_info (command line, RAM size), detects
 * the hypervisor, checks the vCPU count (at most RT_MAX_VCPUS), picks the
 * clock (clock.h; measuring the TSC takes ~60 ms where it must), builds
 * the IDT and then releases the other vCPUs. Every vCPU loads the IDT and
 * registers its clock (lull shared page, kvmclock or TSC) before guest code:
 * vCPU 0 calls guest_main() and exits with its return value; the others
 * call guest_ap_main(id), whose default halts with interrupts off forever.
 * Interrupts are off when guest code starts. The APs may be in
 * guest_ap_main() before vCPU 0 reaches guest_main(): anything they need
 * from guest_main() (handlers, deadlines) goes behind smp_open_gate() /
 * smp_wait_gate() (smp.h).
 */
#ifndef GUEST_RT_H
#define GUEST_RT_H

#include <stdint.h>

enum hv_kind { HV_NONE, HV_KVM, HV_LULL };

struct rt_boot {
	enum hv_kind hv;
	uint32_t hv_base; /* hv's CPUID leaves: 0x40000000 + k * 0x100 */
	unsigned nr_vcpus;
	uint64_t ram_end; /* end of the highest RAM range in the memmap, or 0 */
	const struct lull_hvm_start_info *start_info; /* NULL if bad magic */
};

extern struct rt_boot rt_boot;

const char *hv_name(enum hv_kind hv);

int guest_main(void);
void guest_ap_main(unsigned id);

/* A guest that cannot run here (e.g. needs lull) prints SKIP and exits with this. */
#define RT_EXIT_SKIP 77

/* Write code to the debug-exit port (0xf4); under QEMU the status becomes (code << 1) | 1. */
void rt_exit(uint32_t code) __attribute__((noreturn));

#endif
