// SPDX-License-Identifier: MIT
#include "irq.h"

uint32_t irq_raise(struct irq_queue *q, uint8_t vector, uint32_t times,
		   bool accumulate, enum irq_source src, uint64_t since)
{
	uint32_t owed = q->owed[vector], merged = 0;

	if (!times)
		return 0;
	if (owed) {
		if (!accumulate) {
			merged = times;
			times = 0;
		}
	} else {
		q->pending[vector / 64] |= 1ull << (vector % 64);
		q->since[vector] = since;
		q->source[vector] = (uint8_t)src;
	}
	if (owed + times > IRQ_MAX_OWED) {
		merged += owed + times - IRQ_MAX_OWED;
		times = IRQ_MAX_OWED - owed;
	}
	q->owed[vector] = owed + times;
	return merged;
}

bool irq_any_pending(const struct irq_queue *q)
{
	return (q->pending[0] | q->pending[1] | q->pending[2] |
		q->pending[3]) != 0;
}

int irq_highest(const struct irq_queue *q)
{
	for (int w = 3; w >= 0; w--)
		if (q->pending[w])
			return w * 64 + 63 - __builtin_clzll(q->pending[w]);
	return -1;
}

void irq_consume(struct irq_queue *q, uint8_t vector)
{
	if (!q->owed[vector])
		return;
	if (--q->owed[vector] == 0)
		q->pending[vector / 64] &= ~(1ull << (vector % 64));
}
