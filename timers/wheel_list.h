/* SPDX-License-Identifier: MIT */
/*
 * Private to timers/: the hlist-style lists behind every wheel slot and the
 * due list, the layout of a timer's packed private word, and the two sorts
 * (run order for due timers, key order for a coarse slot).
 *
 * A list head is a single pointer; each node points back at the pointer
 * that points at it (->pprev), so a node unlinks itself without knowing
 * which list holds it, and linking at the head touches only the old first
 * node. There is no tail: slots are unordered bags (run order comes from
 * (expires, seq) when a slot becomes due, not from list position).
 */
#ifndef LULL_TIMERS_WHEEL_LIST_H
#define LULL_TIMERS_WHEEL_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wheel.h"

/*
 * struct wheel_timer::priv:
 *   bits  0..9   pos: level << 6 | slot, while in a slot
 *   bits 10..11  state (enum timer_state in wheel.c)
 *   bits 12..13  base (enum wheel_base_id)
 *   bit  14      the WHEEL_DEFERRABLE flag
 *   bit  15      unused
 *   bits 16..63  seq: arm order, wraps after 2^48 arms
 * The sequence sits on top so that re-stamping it is a shift and an or
 * with the low bits, and the masks of the other fields are small
 * immediates.
 */
#define PRIV_POS_SHIFT 0
#define PRIV_POS_MASK (0x3ffull << PRIV_POS_SHIFT)
#define PRIV_STATE_SHIFT 10
#define PRIV_STATE_MASK (3ull << PRIV_STATE_SHIFT)
#define PRIV_BASE_SHIFT 12
#define PRIV_BASE_MASK (3ull << PRIV_BASE_SHIFT)
#define PRIV_DEFERRABLE_SHIFT 14
#define PRIV_DEFERRABLE (1ull << PRIV_DEFERRABLE_SHIFT)
#define PRIV_SEQ_SHIFT 16
#define PRIV_SEQ_MASK (~0ull << PRIV_SEQ_SHIFT) /* in place */

/* The priv bits of arm sequence number @seq (its low 48 bits). */
static inline uint64_t priv_seq(uint64_t seq)
{
	return seq << PRIV_SEQ_SHIFT;
}

static inline uint64_t timer_seq(const struct wheel_timer *t)
{
	return t->priv >> PRIV_SEQ_SHIFT;
}

static inline void wheel_list_add_head(struct wheel_link *node,
				       struct wheel_link **head)
{
	struct wheel_link *first = *head;

	node->next = first;
	if (first)
		first->pprev = &node->next;
	*head = node;
	node->pprev = head;
}

static inline void wheel_list_del(struct wheel_link *node)
{
	struct wheel_link *next = node->next, **pprev = node->pprev;

	*pprev = next;
	if (next)
		next->pprev = pprev;
}

static inline struct wheel_timer *wheel_timer_of(struct wheel_link *link)
{
	return (struct wheel_timer *)((char *)link -
				      offsetof(struct wheel_timer, link));
}

static inline uint64_t wheel_key_of(uint64_t ns, unsigned tick_shift)
{
	return (ns >> tick_shift) + ((ns & ((1ull << tick_shift) - 1)) != 0);
}

/* True if @a runs before @b when both are due in the same advance. */
bool wheel_timer_runs_before(const struct wheel_timer *a,
			     const struct wheel_timer *b);

/*
 * Sort a NULL-terminated chain (->next only) into run order: by expiry,
 * then by arm order. Returns the new first node; ->pprev is left stale.
 */
struct wheel_link *wheel_chain_sort(struct wheel_link *chain);

/*
 * Sort the @n timers of the list at @head by key, ascending, given that
 * their keys differ only in their low @bits bits.
 */
void wheel_slot_sort(struct wheel_link **head, unsigned tick_shift,
		     unsigned bits, size_t n);

#endif /* LULL_TIMERS_WHEEL_LIST_H */
