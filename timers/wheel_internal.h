/* SPDX-License-Identifier: MIT */
/*
 * Private to timers/: the slot geometry, the layout of a timer's packed
 * private word, the hlist-style lists behind every slot and the due list,
 * and the two sorts. wheel.c arms and queries, wheel_advance.c moves the
 * clock, wheel_sort.c orders chains.
 *
 * A list head is a single pointer; each node points back at the pointer
 * that points at it (->pprev), so a node unlinks itself without knowing
 * which list holds it. Slots are unordered bags: run order comes from
 * (expires, seq) when timers become due, not from their place in a slot.
 * Because every slot head lives in one array, struct wheel::slot, a node
 * whose ->pprev points into that array is the first of that slot: that is
 * how a delete finds (and, if it empties, unmarks) its slot without the
 * timer recording where it sits.
 */
#ifndef LULL_TIMERS_WHEEL_INTERNAL_H
#define LULL_TIMERS_WHEEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container_of.h"
#include "timers/wheel.h"

/* Plain inline lays rearm() out worse: mod_far ~4% slower at N = 128. */
#define hot_inline inline __attribute__((always_inline))
/* On the arm path only: without them mod_far is 5-12% slower, N <= 10^4. */
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define SLOT_MASK ((uint64_t)WHEEL_SLOTS - 1)
#define NO_SLOT UINT32_MAX /* struct wheel::sorted: no slot is sorted */

/*
 * struct wheel_timer::priv:
 *   bits  0..1   state (enum timer_state)
 *   bits  2..3   base (enum wheel_base_id)
 *   bit   4      the WHEEL_DEFERRABLE flag
 *   bits 16..63  seq: arm order, wraps after 2^48 arms
 * The flag sits two bits above the base field so that flag >> 2 is the
 * deferred base: arming without tolerance needs no branch to pick a base.
 * The wheel keeps its sequence counter already shifted (struct wheel::seq).
 */
#define PRIV_STATE_MASK 0x3ull
#define PRIV_BASE_SHIFT 2
#define PRIV_TOLERANT ((uint64_t)WHEEL_BASE_TOLERANT << PRIV_BASE_SHIFT)
#define PRIV_DEFERRABLE_SHIFT 4
#define PRIV_DEFERRABLE (1ull << PRIV_DEFERRABLE_SHIFT)
#define PRIV_SEQ_ONE (1ull << 16)
#define PRIV_SEQ_MASK (~(PRIV_SEQ_ONE - 1))

enum timer_state {
	TIMER_IDLE,
	TIMER_IN_SLOT, /* in a slot of one of the bases */
	TIMER_DUE, /* on w->due: the advance in progress will run it */
};

static hot_inline struct wheel_timer *wheel_timer_of(struct wheel_link *link)
{
	return container_of(link, struct wheel_timer, link);
}

static hot_inline unsigned timer_state(const struct wheel_timer *t)
{
	return t->priv & PRIV_STATE_MASK;
}

/* ceil(ns / tick); the key past UINT64_MAX is 2^(64 - tick_shift). */
static hot_inline uint64_t wheel_key_of(uint64_t ns, unsigned tick_shift)
{
	return (ns >> tick_shift) + ((ns & ((1ull << tick_shift) - 1)) != 0);
}

/* A key's start time; the key past UINT64_MAX saturates to WHEEL_NEVER. */
static hot_inline uint64_t wheel_key_ns(const struct wheel *w, uint64_t key)
{
	if (key > (WHEEL_NEVER >> w->tick_shift))
		return WHEEL_NEVER;
	return key << w->tick_shift;
}

/*
 * Where a key goes: the level of the highest bit in which it differs from
 * the clock, and its 6 bits of that level. One table load gives both the
 * level's first slot (level * 64, bits 8..) and its shift (level * 6, bits
 * 0..7): a division by 6 instead makes add ~6% slower. (diff | 1) keeps clz
 * defined and puts key == clk at level 0. The result indexes one base's
 * WHEEL_BASE_SLOTS slots. Indexed by the highest set bit (63 ^ clz, which
 * is what bsr gives).
 */
/* clang-format off */
#define LEVEL(l) ((l) * WHEEL_SLOTS << 8 | (l) * WHEEL_LVL_BITS)
#define L6(l) LEVEL(l), LEVEL(l), LEVEL(l), LEVEL(l), LEVEL(l), LEVEL(l)
/* static: a global would be read through the GOT in a PIC library. */
static const uint32_t wheel_level_by_bit[64] = {
	L6(0), L6(1), L6(2), L6(3), L6(4), L6(5), L6(6), L6(7), L6(8), L6(9),
	LEVEL(10), LEVEL(10), LEVEL(10), LEVEL(10),
};
#undef L6
#undef LEVEL
/* clang-format on */

static hot_inline unsigned wheel_slot_index(uint64_t key, uint64_t clk)
{
	unsigned bit = 63 ^ (unsigned)__builtin_clzll((key ^ clk) | 1);
	uint32_t e = wheel_level_by_bit[bit];

	return (e >> 8) + ((key >> (e & 0xff)) & SLOT_MASK);
}

/* First key of @slot at @level, given the clock @clk. */
static hot_inline uint64_t wheel_slot_start(uint64_t clk, unsigned level,
					    unsigned slot)
{
	unsigned shift = level * WHEEL_LVL_BITS;
	unsigned upper = shift + WHEEL_LVL_BITS;
	uint64_t prefix = upper >= 64 ? 0 : (clk >> upper) << upper;

	return prefix | ((uint64_t)slot << shift);
}

/*
 * Link @node first in slot @idx of base @base (@g = base *
 * WHEEL_BASE_SLOTS + idx, which the caller usually has at hand) and mark
 * the slot occupied.
 */
static hot_inline void wheel_slot_link(struct wheel *w, unsigned base, size_t g,
				       unsigned idx, struct wheel_link *node)
{
	struct wheel_link **head = &w->slot[g], *first = *head;

	node->next = first;
	node->pprev = head;
	*head = node;
	if (likely(first)) {
		first->pprev = &node->next;
		if (base != WHEEL_BASE_TOLERANT)
			wheel_timer_of(node)->ahead = first->next;
	} else {
		unsigned level = idx / WHEEL_SLOTS;

		w->occupied[base * WHEEL_LEVELS + level] |=
			1ull << (idx & SLOT_MASK);
		w->level_mask[base] |= 1ull << level;
	}
}

/*
 * Start loading the timer two ahead of @l in its list (->ahead), so that a
 * cascade and the query's count and sort of a coarse slot have two misses
 * in flight instead of one: at N = 10^4 that makes the recompute ~10% and
 * expire ~6% faster (at N <= 10^3 it is a wash). A stale hint, or a wake
 * in the tolerant base, costs one useless load: a prefetch never faults.
 */
static hot_inline void wheel_prefetch_ahead(const struct wheel_link *l)
{
	__builtin_prefetch(wheel_timer_of((struct wheel_link *)l)->ahead);
}

/* Slot @g has just become empty. */
void wheel_slot_emptied(struct wheel *w, size_t g);

/* True if @a runs before @b when both are due in the same advance. */
static hot_inline bool wheel_timer_runs_before(const struct wheel_timer *a,
					       const struct wheel_timer *b)
{
	if (a->expires != b->expires)
		return a->expires < b->expires;
	/* seq is the top 48 bits and wraps: compare it as a signed distance. */
	return (int64_t)((a->priv & PRIV_SEQ_MASK) -
			 (b->priv & PRIV_SEQ_MASK)) < 0;
}

/*
 * Sort a NULL-terminated chain into run order: by expiry, then by arm
 * order. Returns the new first node and sets *@last_link to the last node's
 * ->next. Every ->pprev but the first node's is kept right, so the caller
 * only has to point the first one at its head.
 */
struct wheel_link *wheel_chain_sort(struct wheel_link *chain,
				    struct wheel_link ***last_link);

/*
 * Merge the run-ordered NULL-terminated chains @a and @b into *@link,
 * keeping ->pprev right; returns the last node's ->next.
 */
struct wheel_link **wheel_chain_merge(struct wheel_link **link,
				      struct wheel_link *a,
				      struct wheel_link *b);

/*
 * Sort the @n timers of the list at @head by key, ascending, given that
 * their keys differ only in their low @bits bits (the 6L of a level-L
 * slot, L >= 1).
 */
void wheel_slot_sort(struct wheel_link **head, unsigned tick_shift,
		     unsigned bits, size_t n);

#endif /* LULL_TIMERS_WHEEL_INTERNAL_H */
