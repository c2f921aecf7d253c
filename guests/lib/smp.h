/* SPDX-License-Identifier: MIT */
/*
 * smp.h: which vCPU am I, how many are there.
 *
 * Under lull every vCPU enters at the PVH entry point at once (the
 * guest's all-vCPUs note, all_vcpus_note.c); vCPU i
 * has initial APIC ID i and runs on rt_stacks[i], so smp_id() is derived
 * from the stack pointer (no MSR, no per-CPU segment needed). Without lull
 * there is one vCPU.
 */
#ifndef GUEST_SMP_H
#define GUEST_SMP_H

#include <stdint.h>

#include "layout.h"

extern char rt_stacks[];

static inline unsigned smp_id(void)
{
	uintptr_t sp;

	asm("mov %%rsp, %0" : "=r"(sp));
	return (unsigned)((sp - 1 - (uintptr_t)rt_stacks) / RT_STACK_SIZE);
}

/* Number of vCPUs running this guest (set by vCPU 0 before the others run). */
unsigned smp_count(void);

/*
 * The runtime releases the APs before vCPU 0 reaches guest_main(). A guest
 * whose APs need something guest_main() sets up (handlers, deadlines)
 * opens this gate once it is ready, and its APs wait at it first.
 */
void smp_open_gate(void);
void smp_wait_gate(void);

#endif
