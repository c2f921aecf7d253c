// SPDX-License-Identifier: MIT
#include "lull_abi.h"
#include "timers/clock.h"
#include "timers/periodic.h"

struct periodic_catch_up periodic_catch_up(unsigned policy, uint64_t expiry,
					   uint64_t period, uint64_t grace,
					   uint64_t now)
{
	uint64_t behind = now > expiry ? (now - expiry) / period : 0;
	struct periodic_catch_up c = { .deliver = 1, .late = behind > 0 };
	uint64_t span;

	switch (policy) {
	case LULL_MISSED_ALL:
		c.deliver = behind + 1;
		if (c.deliver > PERIODIC_MAX_OWED) {
			c.merged = c.deliver - PERIODIC_MAX_OWED;
			c.deliver = PERIODIC_MAX_OWED;
		}
		break;
	case LULL_MISSED_NONE:
		if (now > sat_add(sat_add(expiry, grace), period) && behind) {
			c.deliver = 0;
			c.merged = behind + 1;
		} else {
			c.merged = behind;
		}
		break;
	default:
		c.merged = behind;
		break;
	}
	if (__builtin_mul_overflow(behind + 1, period, &span))
		span = UINT64_MAX;
	c.next = sat_add(expiry, span);
	return c;
}
