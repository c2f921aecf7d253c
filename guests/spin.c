// SPDX-License-Identifier: MIT
/*
 * spin: never exits, never halts: interrupts off and a busy loop on every
 * vCPU. For the VMM's --timeout (the run has to be ended from outside).
 */
#include "guest.h"

static __attribute__((noreturn)) void spin_forever(void)
{
	cli();
	for (;;)
		cpu_relax();
}

void guest_ap_main(unsigned id)
{
	(void)id;
	spin_forever();
}

int guest_main(void)
{
	printf("spin: spinning with interrupts off on %u vcpu(s), forever\n",
	       smp_count());
	spin_forever();
}
