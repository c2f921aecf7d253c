// SPDX-License-Identifier: MIT
/*
 * Moving the wheel's clock: wheel_advance() finds every timer whose key the
 * clock passes, in key order across the three bases, puts them on the due
 * list in run order and runs them.
 *
 * The clock visits slots, not ticks. At each step the earliest occupied slot
 * of any base (the first occupied slot of its lowest occupied level) is
 * either
 *  - wholly due (its last key <= the target): its timers are collected as
 *    they are, with no cascading, and sorted into run order; at level 0 all
 *    the due one-key slots of every base are collected together; or
 *  - partly due: cascaded, i.e. its timers placed again relative to its
 *    first key, each one level down or more.
 * A timer therefore moves down a level only when the clock stops inside its
 * slot, which is what keeps hard timers exact to the tick.
 */
#include "wheel.h"
#include "wheel_internal.h"

/* The first key of @base's earliest slot, and its level; NEVER if empty. */
static hot_inline uint64_t base_event(const struct wheel *w, unsigned base,
				      unsigned *level)
{
	unsigned slot;

	if (!w->level_mask[base])
		return WHEEL_NEVER;
	*level = __builtin_ctzll(w->level_mask[base]);
	slot = __builtin_ctzll(w->occupied[base * WHEEL_LEVELS + *level]);
	return wheel_slot_start(w->clk, *level, slot);
}

/*
 * Place timer @l of @base again, relative to the clock @clk. expires + tick
 * - 1 cannot overflow: only the saturated key's timers have such expiries,
 * and the clock never reaches their slot, so they never cascade.
 */
static hot_inline void place_again(struct wheel *w, unsigned base,
				   struct wheel_link *l, uint64_t clk,
				   uint64_t tick_mask, unsigned shift)
{
	uint64_t key = (wheel_timer_of(l)->expires + tick_mask) >> shift;
	unsigned idx = wheel_slot_index(key, clk);

	wheel_slot_link(w, base, base * WHEEL_BASE_SLOTS + idx, idx, l);
}

/*
 * The clock reached the first key of a @level slot in each of the @nr bases
 * @bases: place their timers again, relative to the clock now at that key.
 * Two bases' lists are walked side by side: they are independent, so when
 * their timers have left the cache the misses overlap (at N = 1e5 in
 * wheel-bench, a third less time). With the clock and the tick in
 * registers: stores through the lists could otherwise alias them.
 */
static void cascade(struct wheel *w, const unsigned *bases, unsigned nr,
		    unsigned level)
{
	uint64_t clk = w->clk, tick_mask = w->tick_mask;
	unsigned shift = w->tick_shift, slot, k;
	struct wheel_link *cur[WHEEL_NR_BASES], *next;

	slot = level * WHEEL_SLOTS +
	       ((clk >> (level * WHEEL_LVL_BITS)) & SLOT_MASK);
	for (k = 0; k < nr; k++) {
		size_t g = bases[k] * WHEEL_BASE_SLOTS + slot;

		cur[k] = w->slot[g];
		w->slot[g] = NULL;
		wheel_slot_emptied(w, g);
	}
	if (nr >= 2) {
		struct wheel_link *a = cur[0], *b = cur[1], *next_a, *next_b;

		while (a && b) {
			next_a = a->next;
			next_b = b->next;
			place_again(w, bases[0], a, clk, tick_mask, shift);
			place_again(w, bases[1], b, clk, tick_mask, shift);
			a = next_a;
			b = next_b;
		}
		cur[0] = a;
		cur[1] = b;
	}
	for (k = 0; k < nr; k++) {
		for (struct wheel_link *l = cur[k]; l; l = next) {
			next = l->next;
			place_again(w, bases[k], l, clk, tick_mask, shift);
		}
	}
}

/*
 * Detach the slots @due (a bit mask) of @base at @level and chain their
 * timers in run order at @chain, marked due: slot by slot, which is key
 * order, sorting only a slot that holds more than one timer. Returns the
 * last node's ->next; ->pprev links are right but the first node's.
 */
static struct wheel_link **take_slots(struct wheel *w, unsigned base,
				      unsigned level, uint64_t due,
				      struct wheel_link **chain)
{
	size_t g0 = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS;
	uint64_t *occupied = &w->occupied[base * WHEEL_LEVELS + level];
	struct wheel_link **tail = chain;

	*occupied &= ~due;
	if (!*occupied)
		w->level_mask[base] &= ~(1ull << level);
	if (w->sorted[base] - g0 < WHEEL_SLOTS &&
	    due & (1ull << (w->sorted[base] - g0)))
		w->sorted[base] = NO_SLOT;
	for (; due; due &= due - 1) {
		struct wheel_link **head = &w->slot[g0 + __builtin_ctzll(due)];
		struct wheel_link *l = *head, **slot_start = tail;

		*head = NULL;
		*tail = l;
		l->pprev = tail;
		for (; l; l = l->next) {
			struct wheel_timer *t = wheel_timer_of(l);

			t->priv = (t->priv & ~PRIV_STATE_MASK) | TIMER_DUE;
			tail = &l->next;
		}
		if ((*slot_start)->next) {
			*slot_start = wheel_chain_sort(*slot_start, &tail);
			(*slot_start)->pprev = slot_start;
		}
	}
	return tail;
}

/*
 * Move the slots @due[base] of @level, from every base, to the due list at
 * @tail in run order; returns its new last link. Each base's slots are in
 * key order; the bases' chains are then merged.
 */
static struct wheel_link **take_level(struct wheel *w, unsigned level,
				      const uint64_t *due,
				      struct wheel_link **tail)
{
	struct wheel_link *chain[WHEEL_NR_BASES], **end = tail;
	unsigned base, nr = 0;

	for (base = 0; base < WHEEL_NR_BASES; base++) {
		if (!due[base])
			continue;
		end = take_slots(w, base, level, due[base], &chain[nr]);
		chain[nr]->pprev = &chain[nr];
		nr++;
	}
	if (nr <= 1) {
		if (!nr)
			return tail;
		*tail = chain[0];
		chain[0]->pprev = tail;
		return end;
	}
	if (nr == 3) {
		struct wheel_link *ab;

		wheel_chain_merge(&ab, chain[0], chain[1]);
		chain[0] = ab;
		chain[1] = chain[2];
	}
	end = wheel_chain_merge(tail, chain[0], chain[1]);
	(*tail)->pprev = tail;
	return end;
}

/*
 * Slots of @level (in the clock's block of that level) whose every key is
 * <= @target, as a bit mask.
 */
static hot_inline uint64_t due_slots(uint64_t clk, uint64_t target,
				     unsigned level)
{
	unsigned shift = level * WHEEL_LVL_BITS;
	/* Slots of the block that end by the target: target + 1 cannot wrap. */
	uint64_t block = shift + WHEEL_LVL_BITS >= 64 ?
				 0 :
				 clk >> (shift + WHEEL_LVL_BITS)
					 << WHEEL_LVL_BITS;
	uint64_t n = ((target + 1) >> shift) - block;

	return n >= WHEEL_SLOTS ? ~0ull : (1ull << n) - 1;
}

unsigned wheel_advance(struct wheel *w, uint64_t now)
{
	uint64_t target = now >> w->tick_shift;
	struct wheel_link **tail = &w->due;
	uint64_t event[WHEEL_NR_BASES];
	unsigned level[WHEEL_NR_BASES] = { 0 }, ran = 0, ran_deferrable = 0, i;
	bool collected = false;

	if (now < w->now) {
		w->stat_backwards++;
		return 0;
	}
	w->now = now;

	/*
	 * A base's next event changes only when that base is cascaded or
	 * collected (callbacks run after this loop), so each is recomputed
	 * only then.
	 */
	for (i = 0; i < WHEEL_NR_BASES; i++)
		event[i] = base_event(w, i, &level[i]);
	for (;;) {
		uint64_t first = event[0], last, due[WHEEL_NR_BASES];
		unsigned lvl;

		/*
		 * Which base comes first is data, not pattern (hard and
		 * deferrable events interleave at random): select without
		 * branches.
		 */
		i = event[1] < first;
		first = event[1] < first ? event[1] : first;
		i = event[2] < first ? 2 : i;
		first = event[2] < first ? event[2] : first;
		if (first > target)
			break;
		w->clk = first;
		/*
		 * Bases whose events start at the same key have them at the
		 * same level: slot ranges do not depend on the base.
		 */
		lvl = level[i];
		last = first | ((1ull << (lvl * WHEEL_LVL_BITS)) - 1);
		if (last > target) {
			unsigned bases[WHEEL_NR_BASES], nr = 0;

			for (i = 0; i < WHEEL_NR_BASES; i++)
				if (event[i] == first)
					bases[nr++] = i;
			cascade(w, bases, nr, lvl);
			for (i = 0; i < WHEEL_NR_BASES; i++)
				if (event[i] == first)
					event[i] = base_event(w, i, &level[i]);
			continue;
		}
		/*
		 * The earliest slot is wholly due. No base has anything at a
		 * lower level, and every slot of this level (in the clock's
		 * block) comes before every slot of a higher one: so every
		 * wholly due slot of this level, from every base, goes in one
		 * group, taken slot by slot.
		 */
		for (i = 0; i < WHEEL_NR_BASES; i++)
			due[i] = event[i] > target || level[i] != lvl ?
					 0 :
					 w->occupied[i * WHEEL_LEVELS + lvl] &
						 due_slots(first, target, lvl);
		tail = take_level(w, lvl, due, tail);
		for (i = 0; i < WHEEL_NR_BASES; i++)
			if (due[i])
				event[i] = base_event(w, i, &level[i]);
		collected = true;
	}
	/*
	 * No slot starts in (clk, target]: every placement stays valid with
	 * the clock at the target.
	 */
	w->clk = target;
	if (collected)
		w->next_hard_valid = false;

	/*
	 * The counters of fired timers are kept in registers until the end:
	 * the callback is an indirect call, so w's fields would otherwise be
	 * reloaded and stored around every one. ->nr_pending stays exact, a
	 * callback may ask for it.
	 */
	while (w->due) {
		struct wheel_link *l = w->due, *next = l->next;
		struct wheel_timer *t = wheel_timer_of(l);
		uint64_t deferrable = (t->priv >> PRIV_DEFERRABLE_SHIFT) & 1;

		w->due = next;
		if (next)
			next->pprev = &w->due;
		t->priv &= ~PRIV_STATE_MASK; /* TIMER_IDLE */
		w->nr_pending[deferrable]--;
		ran++;
		/* No branch: the kinds of due timers alternate at random. */
		ran_deferrable += deferrable;
		t->fn(t, now);
	}
	w->stat_fired_deferrable += ran_deferrable;
	w->stat_fired_hard += ran - ran_deferrable;
	return ran;
}
