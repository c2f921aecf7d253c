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
 * Place the timers of @base's slot at @level that starts at w->clk again,
 * relative to the clock now at its first key. With the clock and the tick
 * in registers: stores through the lists could otherwise alias them.
 */
static void cascade(struct wheel *w, unsigned base, unsigned level)
{
	uint64_t clk = w->clk, tick_mask = w->tick_mask;
	unsigned shift = w->tick_shift;
	size_t g0 = base * WHEEL_BASE_SLOTS;
	size_t g = g0 + level * WHEEL_SLOTS +
		   ((clk >> (level * WHEEL_LVL_BITS)) & SLOT_MASK);
	struct wheel_link *l = w->slot[g], *next;

	w->slot[g] = NULL;
	wheel_slot_emptied(w, g);
	for (; l; l = next) {
		/*
		 * expires + tick - 1 cannot overflow: only the saturated key's
		 * timers have such expiries, and the clock never reaches their
		 * slot, so they never cascade.
		 */
		uint64_t key = (wheel_timer_of(l)->expires + tick_mask) >> shift;
		unsigned idx = wheel_slot_index(key, clk);

		next = l->next;
		__builtin_prefetch(next);
		wheel_slot_link(w, base, g0 + idx, idx, l);
	}
}

/*
 * Detach slot @g's timers, mark them due and append them to the chain
 * whose last link is *@tail (->pprev kept right). Returns the new last
 * link; *@count counts.
 */
static hot_inline struct wheel_link **take_slot(struct wheel *w, size_t g,
						struct wheel_link **tail,
						unsigned *count)
{
	struct wheel_link *l = w->slot[g];

	w->slot[g] = NULL;
	*tail = l;
	l->pprev = tail;
	for (; l; l = l->next) {
		struct wheel_timer *t = wheel_timer_of(l);

		t->priv = (t->priv & ~PRIV_STATE_MASK) | TIMER_DUE;
		tail = &l->next;
		++*count;
	}
	return tail;
}

/*
 * Move the slots @due[base] of @level, from every base, to the due list at
 * @tail in run order; returns its new last link. Slots are taken in key
 * order, each one's timers (from all bases) sorted by expiry, which is
 * needed only when a slot holds more than one.
 */
static struct wheel_link **take_level(struct wheel *w, unsigned level,
				      const uint64_t *due,
				      struct wheel_link **tail)
{
	uint64_t all = 0;
	unsigned base;

	for (base = 0; base < WHEEL_NR_BASES; base++) {
		size_t g0 = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS;
		uint64_t *occupied = &w->occupied[base * WHEEL_LEVELS + level];

		if (!due[base])
			continue;
		all |= due[base];
		*occupied &= ~due[base];
		if (!*occupied)
			w->level_mask[base] &= ~(1ull << level);
		if (w->sorted[base] - g0 < WHEEL_SLOTS &&
		    due[base] & (1ull << (w->sorted[base] - g0)))
			w->sorted[base] = NO_SLOT;
	}
	for (; all; all &= all - 1) {
		unsigned slot = __builtin_ctzll(all), count = 0;
		struct wheel_link *chain, **chain_tail = &chain;

		for (base = 0; base < WHEEL_NR_BASES; base++)
			if (due[base] & (1ull << slot))
				chain_tail = take_slot(
					w,
					base * WHEEL_BASE_SLOTS +
						level * WHEEL_SLOTS + slot,
					chain_tail, &count);
		if (count > 1)
			chain = wheel_chain_sort(chain, &chain_tail);
		*tail = chain;
		chain->pprev = tail;
		tail = chain_tail;
	}
	return tail;
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
	unsigned level[WHEEL_NR_BASES] = { 0 }, ran = 0, i;
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
			for (i = 0; i < WHEEL_NR_BASES; i++) {
				if (event[i] != first)
					continue;
				cascade(w, i, lvl);
				event[i] = base_event(w, i, &level[i]);
			}
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

	while (w->due) {
		struct wheel_link *l = w->due, *next = l->next;
		struct wheel_timer *t = wheel_timer_of(l);
		uint64_t deferrable = (t->priv >> PRIV_DEFERRABLE_SHIFT) & 1;

		w->due = next;
		if (next)
			next->pprev = &w->due;
		t->priv &= ~PRIV_STATE_MASK; /* TIMER_IDLE */
		w->nr_pending[deferrable]--;
		/* No branch: the kinds of due timers alternate at random. */
		w->stat_fired_deferrable += deferrable;
		w->stat_fired_hard += deferrable ^ 1;
		ran++;
		t->fn(t, now);
	}
	return ran;
}
