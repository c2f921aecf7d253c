// SPDX-License-Identifier: MIT
#include "vcpu/histogram.h"

/*
 * Values below HIST_SUBS get a bucket each. Above, a value with its top bit
 * at position e lands in row (e - HIST_SUB_BITS + 1), column given by the
 * HIST_SUB_BITS bits after the top bit.
 */
static unsigned bucket_of(uint64_t v)
{
	if (v < HIST_SUBS)
		return (unsigned)v;
	unsigned e = 63 - (unsigned)__builtin_clzll(v);
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUBS - 1);
	return (e - HIST_SUB_BITS + 1) * HIST_SUBS + sub;
}

static uint64_t bucket_upper_edge(unsigned b)
{
	if (b < HIST_SUBS)
		return b;
	unsigned row = b / HIST_SUBS, sub = b % HIST_SUBS;
	unsigned e = row + HIST_SUB_BITS - 1;
	uint64_t base = (1ull << e) | ((uint64_t)sub << (e - HIST_SUB_BITS));
	uint64_t width = 1ull << (e - HIST_SUB_BITS);
	return base + (width - 1);
}

void hist_record(struct histogram *h, uint64_t value)
{
	unsigned b = bucket_of(value);

	if (h->bucket[b] != UINT32_MAX)
		h->bucket[b]++;
	h->count++;
	if (value > h->max)
		h->max = value;
}

uint64_t hist_quantile(const struct histogram *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (uint64_t)(q * (double)(h->count - 1)) + 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t edge = bucket_upper_edge(b);
			return edge < h->max ? edge : h->max;
		}
	}
	return h->max;
}

void hist_merge(struct histogram *into, const struct histogram *from)
{
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		uint64_t sum = (uint64_t)into->bucket[b] + from->bucket[b];
		into->bucket[b] = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	}
	into->count += from->count;
	if (from->max > into->max)
		into->max = from->max;
}
