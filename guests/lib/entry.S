/* SPDX-License-Identifier: MIT */
/*
 * entry.S: PVH entry, 32-bit protected mode -> 64-bit long mode.
 *
 * PVH hands us (on every vCPU at once under lull, because the guest
 * carries lull's all-vCPUs note, all_vcpus_note.c; on vCPU 0 only under
 * QEMU): 32-bit flat protected mode, paging off, interrupts off,
 * ebx = physical address of hvm_start_info. A guest that starts its APs
 * itself with INIT/SIPI (apic) brings them here from its own real-mode
 * trampoline, in the same state.
 *
 * Nothing here writes shared memory, so any number of vCPUs can run it at
 * the same time: the page tables and the GDT are built by the assembler,
 * with their Accessed/Dirty bits already set so the CPU never updates them.
 * Each vCPU picks its stack from its initial APIC ID (CPUID 1 EBX[31:24]),
 * which lull sets to 0..N-1. vCPUs beyond RT_MAX_VCPUS park without a
 * stack; vCPU 0 notices the excess from the vCPU count and fails the run.
 *
 * We do not return to 32-bit code and never iret in it: under kvm_pvm a
 * protected-mode iret is an internal error (see docs/guests.md).
 */
#include "layout.h"

#define CR0_PE (1 << 0)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)

/* PVH ELF note: name "Xen", type XEN_ELFNOTE_PHYS32_ENTRY, 32-bit entry. */
	.section .note.pvh, "a", @note
	.p2align 2
	.long 4			/* namesz */
	.long 4			/* descsz */
	.long 18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.long pvh_entry

	.section .text.entry, "ax"
	.code32
	.globl pvh_entry
pvh_entry:
	cli
	cld
	mov	%ebx, %edi		/* start_info: first C argument */
	lgdt	gdt_ptr
	mov	%cr4, %eax
	or	$CR4_PAE, %eax
	mov	%eax, %cr4
	mov	$pml4, %eax
	mov	%eax, %cr3
	mov	$MSR_EFER, %ecx
	rdmsr
	or	$EFER_LME, %eax
	wrmsr
	mov	%cr0, %eax
	or	$(CR0_PG | CR0_PE), %eax
	mov	%eax, %cr0		/* now in compatibility mode */
	ljmp	$GDT_CODE64, $long_entry

	.code64
long_entry:
	mov	$GDT_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	xor	%eax, %eax
	mov	%eax, %fs
	mov	%eax, %gs
	mov	%edi, %edi		/* zero-extend start_info */
	mov	$1, %eax
	cpuid
	shr	$24, %ebx		/* initial APIC ID = vCPU index */
	cmp	$RT_MAX_VCPUS, %ebx
	jae	park
	mov	%ebx, %esi		/* second C argument */
	lea	1(%rbx), %rax
	imul	$RT_STACK_SIZE, %rax
	lea	rt_stacks(%rax), %rsp
	xor	%ebp, %ebp
	call	rt_entry		/* never returns */
park:
	cli
	hlt
	jmp	park

	.section .rodata
	.p2align 3
gdt:
	.quad 0				/* null */
	.quad 0x00af9b000000ffff	/* 0x08: 64-bit code, accessed */
	.quad 0x00cf93000000ffff	/* 0x10: flat data, accessed */
gdt_end:
	.p2align 3
gdt_ptr:
	.word gdt_end - gdt - 1
	.quad gdt

/*
 * Identity map of the first 4 GiB with 2 MiB pages: one PML4 entry, four
 * PDPT entries, 2048 PD entries. P|RW (+PS for 2 MiB) with A (and D for
 * leaves) preset. Covers RAM and the xAPIC page at 0xfee00000.
 */
	.section .data.pagetables, "aw"
	.p2align 12
pml4:
	.quad pdpt + 0x23
	.fill 511, 8, 0
pdpt:
	.quad pd + 0x0000 + 0x23
	.quad pd + 0x1000 + 0x23
	.quad pd + 0x2000 + 0x23
	.quad pd + 0x3000 + 0x23
	.fill 508, 8, 0
pd:
	.set i, 0
	.rept 2048
	.quad (i << 21) + 0xe3
	.set i, i + 1
	.endr

	.section .bss.stacks, "aw", @nobits
	.p2align 12
	.globl rt_stacks
rt_stacks:
	.skip RT_MAX_VCPUS * RT_STACK_SIZE
