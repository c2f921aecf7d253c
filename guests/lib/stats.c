// SPDX-License-Identifier: MIT
/* stats.c: see stats.h. */
#include "stats.h"
#include "clock.h"
#include "lull.h"
#include "printf.h"
#include "smp.h"
#include "x86.h"

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
		 uint64_t merged_now, uint64_t *buf, size_t cap)
{
	*t = (struct ptrack){ .first = first, .period = period,
			      .merged_seen = merged_now, .samples = buf,
			      .cap = cap };
}

/* Records the delivery of tick k; false if it came before its deadline. */
static int record(struct ptrack *t, uint64_t now)
{
	uint64_t deadline = t->first + t->k * t->period;

	t->fires++;
	if (now < deadline) {
		t->early++;
		return 0;
	}
	if (t->n < t->cap)
		t->samples[t->n++] = now - deadline;
	return 1;
}

void ptrack_fire(struct ptrack *t, uint64_t now)
{
	uint64_t next;

	if (!record(t, now)) {
		t->k++;
		return;
	}
	next = (now - t->first) / t->period + 1;
	t->skipped += next - t->k - 1;
	t->k = next;
}

void ptrack_fire_merged(struct ptrack *t, uint64_t now, uint64_t merged_now)
{
	uint64_t merged = merged_now - t->merged_seen;

	record(t, now);
	t->merged_seen = merged_now;
	t->skipped += merged;
	t->k += 1 + merged;
}

void lull_drain(unsigned slot, unsigned vector, const uint64_t *seen)
{
	uint64_t before = READ_ONCE(*seen);

	lull_timer_set(slot, clock_ns(), vector, 0, 0, 0);
	while (READ_ONCE(*seen) == before) {
		sti_hlt();
		cli();
	}
}

void account_print(const struct account *a)
{
	struct lull_slot_counters *c = &shared_page()->slot[a->slot];

	printf("%s: account vcpu=%u slot=%u kind=%s first_ns=%lu period_ns=%lu lo_ns=%lu hi_ns=%lu handled=%lu delivered=%lu merged=%lu\n",
	       a->guest, smp_id(), a->slot,
	       a->deferrable ? "deferrable" : "hard", a->first, a->period,
	       a->lo, a->hi, a->handled, c->delivered, c->merged);
}
