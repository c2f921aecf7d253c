// SPDX-License-Identifier: MIT
/*
 * triple-fault: loads an IDT with limit 0 and raises #UD. The #UD cannot
 * be delivered (#GP), neither can the #GP (#DF), nor the #DF: shutdown.
 * The VMM must report it (KVM_EXIT_SHUTDOWN) and exit non-zero. If the
 * guest is still running afterwards, it exits with status 1.
 */
#include "guest.h"

int guest_main(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) empty = { 0, 0 };

	printf("triple-fault: loading an empty IDT and raising #UD\n");
	asm volatile("lidt %0; ud2" : : "m"(empty) : "memory");
	printf("triple-fault: FAIL still running after the triple fault\n");
	return 1;
}
