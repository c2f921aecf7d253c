// SPDX-License-Identifier: MIT
/*
 * halt-forever: `cli; hlt` in a loop on every vCPU: the VM never exits on
 * its own and never wants the CPU. For --timeout and signal tests.
 */
#include "guest.h"

int guest_main(void)
{
	printf("halt-forever: halting with interrupts off on %u vcpu(s), forever\n",
	       smp_count());
	for (;;) {
		cli();
		hlt();
	}
}
