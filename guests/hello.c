// SPDX-License-Identifier: MIT
/*
 * hello: the smallest boot test. Prints which hypervisor it found, its
 * vCPU count and command line, and exits 0.
 *   hello: lull guest up (vcpu 0 of N, hv lull, cmdline "...")
 *   hello: PASS hv=lull vcpus=N
 * lines=N first prints N numbered lines through the UART,
 * which waits whenever the VMM's console says it is busy: the console
 * tests use it to check that a slow reader loses nothing.
 *   hello: line 000001 ...
 */
#include "guest.h"

int guest_main(void)
{
	uint64_t lines = cmdline_u64("lines", 0);

	for (uint64_t i = 1; i <= lines; i++)
		printf("hello: line %06lu .........................................\n",
		       i);
	printf("hello: lull guest up (vcpu %u of %u, hv %s, clock %s, cmdline \"%s\")\n",
	       smp_id(), smp_count(), hv_name(rt_boot.hv), clock_name(),
	       cmdline());
	printf("hello: PASS hv=%s vcpus=%u\n", hv_name(rt_boot.hv),
	       smp_count());
	return 0;
}
