// SPDX-License-Identifier: MIT
/* stats.c: see stats.h. */
#include "stats.h"

/* Shell sort: small, no recursion, fine for a few thousand samples. */
void sort_u64(uint64_t *a, size_t n)
{
	static const size_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };

	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		size_t gap = gaps[g];

		for (size_t i = gap; i < n; i++) {
			uint64_t v = a[i];
			size_t j = i;

			for (; j >= gap && a[j - gap] > v; j -= gap)
				a[j] = a[j - gap];
			a[j] = v;
		}
	}
}

static uint64_t rank(const uint64_t *a, size_t n, unsigned pct)
{
	size_t r = (n * pct + 99) / 100; /* nearest rank, 1-based */

	return a[r ? r - 1 : 0];
}

struct percentiles percentiles(uint64_t *a, size_t n)
{
	struct percentiles p = { 0, 0, 0 };

	if (!n)
		return p;
	sort_u64(a, n);
	p.p50 = rank(a, n, 50);
	p.p99 = rank(a, n, 99);
	p.max = a[n - 1];
	return p;
}

void ptrack_init(struct ptrack *t, uint64_t first, uint64_t period,
		 int catch_up_all, uint64_t *buf, size_t cap)
{
	*t = (struct ptrack){ .first = first, .period = period,
			      .catch_up_all = catch_up_all, .samples = buf,
			      .cap = cap };
}

void ptrack_fire(struct ptrack *t, uint64_t now)
{
	uint64_t deadline = t->first + t->k * t->period;
	uint64_t next;

	t->fires++;
	if (now < deadline) {
		t->early++;
		t->k++;
		return;
	}
	if (t->n < t->cap)
		t->samples[t->n++] = now - deadline;
	next = t->catch_up_all ? t->k + 1 : (now - t->first) / t->period + 1;
	t->skipped += next - t->k - 1;
	t->k = next;
}
