// SPDX-License-Identifier: MIT
/*
 * The sorts of the wheel.
 *
 * Run order of due timers: expiry first, then arm order. Due slots are taken
 * in key order, so only the timers of one slot ever need sorting (a natural
 * merge sort, which finds the existing runs), and the per-base chains of a
 * due level are merged.
 *
 * Key order of a coarse slot: when the wake-up query needs the earliest key
 * of a big level >= 1 slot, the slot is sorted once by key, bucketed by its
 * top key bits (or, past 16384 timers, an LSD radix sort over just the key
 * bits that can differ inside it: two 9-bit passes for a 2^18-tick slot),
 * after which deleting the earliest timer and asking again reads the new
 * first node in O(1).
 */
#include "wheel_internal.h"

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

struct wheel_link **wheel_chain_merge(struct wheel_link **link,
				      struct wheel_link *a,
				      struct wheel_link *b)
{
	while (a && b) {
		struct wheel_link **from =
			wheel_timer_runs_before(wheel_timer_of(b),
						wheel_timer_of(a)) ?
				&b :
				&a;
		struct wheel_link *node = *from;

		*from = node->next;
		*link = node;
		node->pprev = link;
		link = &node->next;
	}
	*link = a ? a : b;
	if (*link)
		(*link)->pprev = link;
	while (*link)
		link = &(*link)->next;
	return link;
}

struct wheel_link *wheel_chain_sort(struct wheel_link *chain,
				    struct wheel_link ***last_link)
{
	for (;;) {
		struct wheel_link *sorted = NULL, **link = &sorted;
		unsigned runs = 0;

		while (chain) {
			struct wheel_link *a = chain, *b;

			chain = cut_run(a);
			b = chain;
			if (b)
				chain = cut_run(b);
			link = wheel_chain_merge(link, a, b);
			runs++;
		}
		chain = sorted;
		if (runs <= 1) {
			*last_link = link;
			return chain;
		}
	}
}

#define RADIX_MAX_BITS 9 /* 512 buckets: 8 KiB of stack */

/* One stable distribution pass on digit (key >> shift) & (nr - 1). */
static void radix_pass(struct wheel_link **head, unsigned tick_shift,
		       unsigned shift, unsigned nr)
{
	struct wheel_link *bucket[1u << RADIX_MAX_BITS];
	struct wheel_link **tail[1u << RADIX_MAX_BITS];
	struct wheel_link *node, *next, **link = head;
	unsigned i;

	for (i = 0; i < nr; i++)
		tail[i] = &bucket[i];
	for (node = *head; node; node = next) {
		uint64_t key =
			wheel_key_of(wheel_timer_of(node)->expires, tick_shift);
		unsigned d = (key >> shift) & (nr - 1);

		next = node->next;
		__builtin_prefetch(next);
		*tail[d] = node;
		node->pprev = tail[d];
		tail[d] = &node->next;
	}
	/* Concatenate; the first node of each bucket gets its real pprev. */
	for (i = 0; i < nr; i++) {
		if (tail[i] == &bucket[i])
			continue;
		*link = bucket[i];
		bucket[i]->pprev = link;
		link = tail[i];
	}
	*link = NULL;
}

/*
 * One pass for a slot of up to INSERT_MAX timers: each timer goes into one
 * of up to 512 buckets by its top key bits and is inserted in expiry order
 * (hence key order) into that bucket, usually at the tail. The bucket's
 * timers were touched a few hundred timers ago, so the walk stays in cache;
 * a second LSD pass would instead revisit every timer cold, in random order.
 */
#define INSERT_MAX 16384

static void bucket_insert_pass(struct wheel_link **head, unsigned tick_shift,
			       unsigned shift, unsigned nr)
{
	struct wheel_link *bucket[1u << RADIX_MAX_BITS];
	struct wheel_link *last[1u << RADIX_MAX_BITS];
	struct wheel_link *node, *next, **link = head;
	unsigned i;

	for (i = 0; i < nr; i++)
		bucket[i] = NULL;
	for (node = *head; node; node = next) {
		uint64_t expires = wheel_timer_of(node)->expires;
		unsigned d =
			(wheel_key_of(expires, tick_shift) >> shift) & (nr - 1);
		struct wheel_link **pos;

		next = node->next;
		__builtin_prefetch(next);
		if (!bucket[d] || expires >= wheel_timer_of(last[d])->expires) {
			pos = bucket[d] ? &last[d]->next : &bucket[d];
			last[d] = node;
		} else {
			pos = &bucket[d];
			while (wheel_timer_of(*pos)->expires <= expires)
				pos = &(*pos)->next;
		}
		node->next = *pos;
		node->pprev = pos;
		if (*pos)
			(*pos)->pprev = &node->next;
		*pos = node;
	}
	for (i = 0; i < nr; i++) {
		if (!bucket[i])
			continue;
		*link = bucket[i];
		bucket[i]->pprev = link;
		link = &last[i]->next;
	}
	*link = NULL;
}

void wheel_slot_sort(struct wheel_link **head, unsigned tick_shift,
		     unsigned bits, size_t n)
{
	unsigned passes, digit, shift, top;

	if (!*head || !(*head)->next || !bits)
		return;
	if (n <= INSERT_MAX) {
		/*
		 * Buckets of ~4 timers up to 512 buckets, by the top key
		 * bits; expiry order within a bucket is key order.
		 */
		top = 1;
		while (top < RADIX_MAX_BITS && top < bits && (n >> (top + 2)))
			top++;
		bucket_insert_pass(head, tick_shift, bits - top, 1u << top);
		return;
	}
	/*
	 * Keys of a level-L slot differ only in their low 6L bits: sort on
	 * those, in as few passes of up to RADIX_MAX_BITS as possible
	 * (two for a level-3 slot).
	 */
	passes = (bits + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
	digit = (bits + passes - 1) / passes;
	for (shift = 0; shift < bits; shift += digit)
		radix_pass(head, tick_shift, shift, 1u << digit);
}
