// SPDX-License-Identifier: MIT
/*
 * hello: the smallest boot test. Prints which hypervisor it found, its
 * vCPU count and command line, and exits 0.
 *   hello: lull guest up (vcpu 0 of N, hv lull, cmdline "...")
 *   hello: PASS hv=lull vcpus=N
 */
#include "guest.h"

int guest_main(void)
{
	printf("hello: lull guest up (vcpu %u of %u, hv %s, clock %s, cmdline \"%s\")\n",
	       smp_id(), smp_count(), hv_name(rt_boot.hv), clock_name(),
	       cmdline());
	printf("hello: PASS hv=%s vcpus=%u\n", hv_name(rt_boot.hv),
	       smp_count());
	return 0;
}
