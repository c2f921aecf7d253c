/* SPDX-License-Identifier: MIT */
/*
 * The hypercall decoder: an `out` to LULL_HCALL_PORT with rax = op and the
 * arguments in rdi, rsi, r10, r8, r9, rbx (read through KVM_CAP_SYNC_REGS,
 * so no extra ioctl per call). Every argument is untrusted: a bad one gets a
 * negative errno in rax, is counted, and the first of each kind is logged.
 */
#ifndef LULL_HYPERCALL_H
#define LULL_HYPERCALL_H

#include <stdint.h>

struct vm;
struct vm_cpu;

struct hc_args {
	uint64_t op, a0, a1, a2, a3, a4, a5;
};

/* Runs one hypercall for `cpu` at host time `now`; returns rax. */
int64_t hypercall(struct vm *vm, struct vm_cpu *cpu, const struct hc_args *a,
		  uint64_t now);
/* Reads the registers of the current exit, runs it, writes rax back. */
void hypercall_exit(struct vm *vm, struct vm_cpu *cpu);

#endif
