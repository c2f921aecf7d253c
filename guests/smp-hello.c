// SPDX-License-Identifier: MIT
/*
 * smp-hello: every vCPU prints "smp-hello: vcpu I" and checks in; vCPU 0
 * waits for all N, then prints "smp-hello: PASS vcpus=N".
 * Option: timeout_ms=T (default 5000) - FAIL if not all check in by then
 * (needs a clock; without one it waits forever).
 */
#include "guest.h"

static uint64_t checked_in; /* bit i: vCPU i reported */

static unsigned popcount(uint64_t m)
{
	unsigned n = 0;

	for (; m; m &= m - 1)
		n++;
	return n;
}

static void report(unsigned id)
{
	printf("smp-hello: vcpu %u (apic id %u)\n", id,
	       cpuid(1, 0).ebx >> 24);
	__atomic_fetch_or(&checked_in, 1ull << id, __ATOMIC_RELEASE);
}

void guest_ap_main(unsigned id)
{
	report(id);
	for (;;) {
		cli();
		hlt();
	}
}

int guest_main(void)
{
	unsigned n = smp_count();
	uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
	uint64_t deadline = clock_ns() + cmdline_u64("timeout_ms", 5000) * 1000000;
	uint64_t seen;

	report(0);
	while ((seen = __atomic_load_n(&checked_in, __ATOMIC_ACQUIRE)) != all) {
		if (clock_available() && clock_ns() > deadline) {
			printf("smp-hello: FAIL only %u of %u vcpus reported (mask %#lx)\n",
			       popcount(seen), n, seen);
			return 1;
		}
		cpu_relax();
	}
	printf("smp-hello: PASS vcpus=%u\n", n);
	return 0;
}
