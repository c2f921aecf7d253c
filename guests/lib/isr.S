/* SPDX-License-Identifier: MIT */
/*
 * isr.S: the 256 interrupt/exception entry stubs and their common path.
 *
 * Stub v sits at isr_stubs + 16 * v (so no address table is needed). It
 * pushes a dummy error code where the CPU pushes none, then the vector.
 * Exceptions (0-31) go to isr_common, which saves every general-purpose
 * register, calls trap_dispatch(struct trap_frame *) and iretq's (the
 * layout pushed is struct trap_frame in idt.h); interrupts go to the
 * shorter irq_common, which calls irq_dispatch(vector).
 */
	.text
	.p2align 4
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.p2align 4
	.if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	pushq	$0
	.endif
	pushq	$vec
	.if vec < 32
	jmp	isr_common
	.else
	jmp	irq_common
	.endif
	.set vec, vec + 1
	.endr

/*
 * Interrupts (vectors 32-255) save only the registers a C call may
 * clobber: the handler preserves the rest. Where guest code is emulated
 * (docs/guests.md) every instruction on this path costs about a
 * microsecond, and it runs on every timer tick.
 * 9 regs + vector + error + 5-word frame: rsp stays 16-aligned.
 */
irq_common:
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	cld
	/*
	 * An interrupt can only stop at sti_hlt's HLT if it came inside the
	 * STI shadow, which QEMU's emulated SVM before 9.1 drops across a
	 * VM exit (VMRUN does not reload it). Returning to the HLT would
	 * halt with nothing left to wake it: step over it instead, so the
	 * caller's loop checks its condition again, and count it.
	 */
	leaq	sti_hlt_hlt(%rip), %rax
	cmpq	%rax, 88(%rsp)	/* the interrupted rip */
	jne	1f
	incq	88(%rsp)	/* hlt is one byte */
	lock incq	sti_hlt_shadow_lost(%rip)
1:
	mov	72(%rsp), %rdi	/* the vector */
	call	irq_dispatch
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	add	$16, %rsp	/* vector, error code */
	iretq

/* sti; hlt out of line, so that irq_common knows the HLT's address. */
	.globl sti_hlt, sti_hlt_hlt
sti_hlt:
	sti
sti_hlt_hlt:
	hlt
	ret

	.data
	.p2align 3
	.globl sti_hlt_shadow_lost
sti_hlt_shadow_lost:
	.quad 0
	.text

isr_common:
	push	%rax
	push	%rbx
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%rbp
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	cld
	mov	%rsp, %rdi	/* 15 regs + vec + err + 5-word frame: rsp stays 16-aligned */
	call	trap_dispatch
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rbp
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rbx
	pop	%rax
	add	$16, %rsp	/* vector, error code */
	iretq
