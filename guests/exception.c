// SPDX-License-Identifier: MIT
/*
 * exception: executes ud2. The runtime's exception handler must print
 * "exception 6 (#UD) on vcpu 0: error .. rip .. rsp .." and exit with
 * status 3 (EXCEPTION_EXIT_STATUS); the VM itself stays healthy.
 */
#include "guest.h"

int guest_main(void)
{
	printf("exception: executing ud2\n");
	asm volatile("ud2");
	printf("exception: FAIL ud2 returned\n");
	return 1;
}
