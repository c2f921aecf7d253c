/* SPDX-License-Identifier: MIT */
/*
 * Fixed-size latency histogram: log-linear buckets (16 per power of two),
 * so a percentile is exact to within 1/16 of its value, the maximum is exact,
 * and recording never allocates: a guest cannot grow host memory through it.
 */
#ifndef LULL_HISTOGRAM_H
#define LULL_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 4
#define HIST_SUBS (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUBS)

struct histogram {
	uint64_t count;
	uint64_t max;
	uint32_t bucket[HIST_BUCKETS];
};

void hist_record(struct histogram *h, uint64_t value);
/* Value at quantile q in [0, 1]: the upper edge of the bucket holding it,
 * capped at the exact maximum. 0 when empty. */
uint64_t hist_quantile(const struct histogram *h, double q);
void hist_merge(struct histogram *into, const struct histogram *from);

#endif
