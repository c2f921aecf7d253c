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
 * of a big level >= 1 slot, the slot is sorted once by key, after which
 * deleting the earliest timer and asking again reads the new first node in
 * O(1). The sort buckets the slot by its top key bits, ~4 timers a bucket,
 * inserting each timer in order into its bucket; a slot of more than 2048
 * timers is first split 64 ways by its top key bits, and each part sorted
 * so (split again if it is still that long).
 */
#include <assert.h>

#include "timers/wheel_internal.h"

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

#define INSERT_BITS_MAX 9 /* 512 buckets: 8 KiB of stack */
/* Up to this many timers, 512 buckets hold ~4 each: one insertion pass. */
#define INSERT_MAX 2048
static_assert(INSERT_MAX == 4u << INSERT_BITS_MAX, "~4 timers a bucket");

/*
 * Sort the list at *@head, of @n timers whose keys differ only in their low
 * @bits bits, by key in one pass: each timer goes into one of up to 512
 * buckets by its top key bits and is inserted in expiry order (hence key
 * order) into that bucket, usually at its tail, since buckets hold ~4
 * timers. When the buckets are whole keys nothing needs inserting. The list
 * was walked moments ago (to count it, or by the split), so it is in cache.
 * Returns the last node's ->next.
 */
static struct wheel_link **bucket_insert_pass(struct wheel_link **head,
					      unsigned tick_shift,
					      unsigned bits, size_t n)
{
	struct wheel_link *bucket[1u << INSERT_BITS_MAX];
	struct wheel_link *last[1u << INSERT_BITS_MAX];
	struct wheel_link *node, *next, **link = head;
	unsigned top = 1, shift, nr, i;

	while (top < INSERT_BITS_MAX && top < bits && (n >> (top + 2)))
		top++;
	shift = bits - top;
	nr = 1u << top;
	for (i = 0; i < nr; i++)
		bucket[i] = NULL;
	for (node = *head; node; node = next) {
		uint64_t expires = wheel_timer_of(node)->expires;
		unsigned d =
			(wheel_key_of(expires, tick_shift) >> shift) & (nr - 1);
		struct wheel_link **pos;

		wheel_prefetch_ahead(node);
		next = node->next;
		/* Append when in order: ~12% off the recompute at N = 10^4. */
		if (!bucket[d] || !shift ||
		    expires >= wheel_timer_of(last[d])->expires) {
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
	return link;
}

static struct wheel_link **split_pass(struct wheel_link **head,
				      unsigned tick_shift, unsigned bits);

/*
 * bucket_insert_pass(), or for a longer list with enough key bits, a split
 * first: in one pass, a bucket's insertion walk would grow with the list.
 */
static struct wheel_link **sort_part(struct wheel_link **head,
				     unsigned tick_shift, unsigned bits,
				     size_t n)
{
	if (n > INSERT_MAX && bits > WHEEL_LVL_BITS)
		return split_pass(head, tick_shift, bits);
	return bucket_insert_pass(head, tick_shift, bits, n);
}

/*
 * Split the list at *@head, whose keys differ only in their low @bits
 * (>= 6) bits, into 64 parts by the top 6 of them, in one stable walk that
 * counts each part; then sort each part on its own. Returns the last node's
 * ->next.
 */
static struct wheel_link **split_pass(struct wheel_link **head,
				      unsigned tick_shift, unsigned bits)
{
	struct wheel_link *first[WHEEL_SLOTS], **tail[WHEEL_SLOTS];
	struct wheel_link *node, *next, **link = head;
	unsigned shift = bits - WHEEL_LVL_BITS;
	size_t count[WHEEL_SLOTS];
	uint64_t used = 0; /* parts with a timer: only those are set up */

	for (node = *head; node; node = next) {
		uint64_t key =
			wheel_key_of(wheel_timer_of(node)->expires, tick_shift);
		unsigned d = (key >> shift) & SLOT_MASK;

		next = node->next;
		if (used & (1ull << d)) {
			*tail[d] = node;
			node->pprev = tail[d];
			count[d]++;
		} else {
			used |= 1ull << d;
			first[d] = node;
			node->pprev = &first[d];
			count[d] = 1;
		}
		tail[d] = &node->next;
	}
	for (; used; used &= used - 1) {
		unsigned i = __builtin_ctzll(used);

		*tail[i] = NULL;
		*link = first[i];
		first[i]->pprev = link;
		if (count[i] > 1 && shift)
			link = sort_part(link, tick_shift, shift, count[i]);
		else
			link = tail[i];
	}
	*link = NULL;
	return link;
}

void wheel_slot_sort(struct wheel_link **head, unsigned tick_shift,
		     unsigned bits, size_t n)
{
	sort_part(head, tick_shift, bits, n);
}
