// SPDX-License-Identifier: MIT
/* Binary min-heap of timers: see heap.h. */
#include <stdlib.h>

#include "heap.h"

static bool before(const struct heap_timer *a, const struct heap_timer *b)
{
	if (a->expires != b->expires)
		return a->expires < b->expires;
	return a->seq < b->seq;
}

static void put(struct heap *q, size_t i, struct heap_timer *t)
{
	q->node[i] = t;
	t->idx = i;
}

static void sift_up(struct heap *q, size_t i)
{
	struct heap_timer *t = q->node[i];

	while (i) {
		size_t parent = (i - 1) / 2;

		if (!before(t, q->node[parent]))
			break;
		put(q, i, q->node[parent]);
		i = parent;
	}
	put(q, i, t);
}

static void sift_down(struct heap *q, size_t i)
{
	struct heap_timer *t = q->node[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= q->nr)
			break;
		if (child + 1 < q->nr &&
		    before(q->node[child + 1], q->node[child]))
			child++;
		if (!before(q->node[child], t))
			break;
		put(q, i, q->node[child]);
		i = child;
	}
	put(q, i, t);
}

static void remove_at(struct heap *q, size_t i)
{
	struct heap_timer *last = q->node[--q->nr];

	q->node[i]->idx = HEAP_NOT_QUEUED;
	if (i == q->nr)
		return;
	put(q, i, last);
	sift_down(q, i);
	sift_up(q, last->idx);
}

int heap_timers_init(struct heap_timers *h, size_t cap)
{
	for (int k = 0; k < 2; k++) {
		h->kind[k].nr = 0;
		h->kind[k].cap = cap;
		h->kind[k].node = malloc(cap * sizeof(*h->kind[k].node));
		if (!h->kind[k].node)
			return -1;
	}
	h->next_seq = 0;
	return 0;
}

void heap_timers_free(struct heap_timers *h)
{
	free(h->kind[0].node);
	free(h->kind[1].node);
}

void heap_timer_init(struct heap_timer *t,
		     void (*fn)(struct heap_timer *t, uint64_t now),
		     bool deferrable)
{
	t->expires = 0;
	t->seq = 0;
	t->idx = HEAP_NOT_QUEUED;
	t->fn = fn;
	t->deferrable = deferrable;
}

int heap_add(struct heap_timers *h, struct heap_timer *t, uint64_t expires)
{
	struct heap *q = &h->kind[t->deferrable];

	t->expires = expires;
	t->seq = h->next_seq++;
	if (t->idx != HEAP_NOT_QUEUED) {
		sift_down(q, t->idx);
		sift_up(q, t->idx);
		return 1;
	}
	put(q, q->nr++, t);
	sift_up(q, t->idx);
	return 0;
}

int heap_del(struct heap_timers *h, struct heap_timer *t)
{
	if (t->idx == HEAP_NOT_QUEUED)
		return 0;
	remove_at(&h->kind[t->deferrable], t->idx);
	return 1;
}

uint64_t heap_next_hard_expiry(const struct heap_timers *h)
{
	const struct heap *q = &h->kind[0];

	return q->nr ? q->node[0]->expires : UINT64_MAX;
}

/* Run both heaps' due timers merged in expiry order, like the wheel. */
unsigned heap_advance(struct heap_timers *h, uint64_t now)
{
	unsigned ran = 0;

	for (;;) {
		struct heap_timer *hard =
			h->kind[0].nr ? h->kind[0].node[0] : NULL;
		struct heap_timer *def =
			h->kind[1].nr ? h->kind[1].node[0] : NULL;
		struct heap_timer *t = hard;

		if (!t || (def && before(def, t)))
			t = def;
		if (!t || t->expires > now)
			return ran;
		remove_at(&h->kind[t->deferrable], 0);
		ran++;
		t->fn(t, now);
	}
}
