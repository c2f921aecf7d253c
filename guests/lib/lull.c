// SPDX-License-Identifier: MIT
/* lull.c: see lull.h. */
#include "lull.h"
#include "x86.h"

struct lull_info lull_info;

void lull_detect(void)
{
	struct cpuid_regs r = cpuid(LULL_CPUID_SIGNATURE, 0);

	lull_info.max_leaf = r.eax;
	if (r.eax >= LULL_CPUID_FEATURES) {
		r = cpuid(LULL_CPUID_FEATURES, 0);
		lull_info.features = r.eax;
		lull_info.hcall_port = r.ebx;
		lull_info.nr_slots = r.ecx;
		lull_info.nr_vcpus = r.edx;
	}
	if (lull_info.max_leaf >= LULL_CPUID_TIMING) {
		r = cpuid(LULL_CPUID_TIMING, 0);
		lull_info.abi_version = r.eax;
		lull_info.period_floor_ns = r.ebx;
		lull_info.missed_policy = r.ecx;
		lull_info.timer_mode = r.edx;
	}
}
