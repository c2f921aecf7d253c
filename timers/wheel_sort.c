// SPDX-License-Identifier: MIT
/*
 * Run order of due timers: expiry first, then arm order. Timers reach the due
 * list slot by slot, so the list is almost sorted already (slots come in time
 * order; only a slot's own timers can be out of order). A natural merge sort
 * finds the existing runs and costs one pass when there is nothing to do.
 */
#include "wheel_list.h"

bool wheel_timer_runs_before(const struct wheel_timer *a,
			     const struct wheel_timer *b)
{
	uint64_t seq_diff;

	if (a->expires != b->expires)
		return a->expires < b->expires;
	/* seq is 48 bits wide and wraps: compare it as a signed distance. */
	seq_diff = ((uint64_t)a->seq - (uint64_t)b->seq) << 16;
	return (int64_t)seq_diff < 0;
}

/* Cut the ascending run that starts at @run; return what follows it. */
static struct wheel_link *cut_run(struct wheel_link *run)
{
	struct wheel_link *rest;

	while (run->next && !wheel_timer_runs_before(wheel_timer_of(run->next),
						     wheel_timer_of(run)))
		run = run->next;

	rest = run->next;
	run->next = NULL;
	return rest;
}

/* Merge two NULL-terminated sorted chains; *tail gets the last node. */
static struct wheel_link *merge(struct wheel_link *a, struct wheel_link *b,
				struct wheel_link **tail)
{
	struct wheel_link head = { NULL, NULL }, *last = &head;

	while (a && b) {
		if (wheel_timer_runs_before(wheel_timer_of(b),
					    wheel_timer_of(a))) {
			last->next = b;
			b = b->next;
		} else {
			last->next = a;
			a = a->next;
		}
		last = last->next;
	}
	last->next = a ? a : b;
	while (last->next)
		last = last->next;
	*tail = last;
	return head.next;
}

void wheel_list_sort(struct wheel_link *head)
{
	struct wheel_link *chain, *node, *prev;

	if (head->next == head->prev)
		return; /* zero or one node */

	head->prev->next = NULL;
	chain = head->next;
	for (;;) {
		struct wheel_link *sorted = NULL, **link = &sorted, *tail;
		unsigned runs = 0;

		while (chain) {
			struct wheel_link *a = chain, *b;

			chain = cut_run(a);
			b = chain;
			if (b)
				chain = cut_run(b);
			*link = merge(a, b, &tail);
			link = &tail->next;
			runs++;
		}
		chain = sorted;
		if (runs == 1)
			break;
	}

	/* Rebuild the back links and close the circle. */
	prev = head;
	for (node = chain; node; node = node->next) {
		node->prev = prev;
		prev->next = node;
		prev = node;
	}
	prev->next = head;
	head->prev = prev;
}
