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
	size_t g = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS +
		   ((clk >> (level * WHEEL_LVL_BITS)) & SLOT_MASK);
	size_t first_slot = base * WHEEL_BASE_SLOTS;
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

		next = l->next;
		__builtin_prefetch(next);
		wheel_slot_link(w, first_slot + wheel_slot_index(key, clk), l);
	}
}

/*
 * Detach slot @g's timers, mark them due and append them to the chain whose
 * last link is *@tail (->pprev kept right). Returns the new last link.
 */
static struct wheel_link **take_slot(struct wheel *w, size_t g,
				     struct wheel_link **tail, unsigned *count)
{
	struct wheel_link *l = w->slot[g];

	w->slot[g] = NULL;
	wheel_slot_emptied(w, g);
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
 * Move a group of due timers, chained at @chain, to the end of the due list
 * at @tail in run order. Returns the due list's new last link.
 */
static struct wheel_link **queue_due(struct wheel_link **tail,
				     struct wheel_link *chain,
				     struct wheel_link **chain_tail,
				     unsigned count)
{
	if (count > 1)
		chain = wheel_chain_sort(chain, &chain_tail);
	*tail = chain;
	chain->pprev = tail;
	return chain_tail;
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
		uint64_t first = event[0], last;
		struct wheel_link *chain = NULL, **chain_tail = &chain;
		unsigned lvl, count = 0;

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
		if (lvl && last > target) {
			for (i = 0; i < WHEEL_NR_BASES; i++) {
				if (event[i] != first)
					continue;
				cascade(w, i, lvl);
				event[i] = base_event(w, i, &level[i]);
			}
			continue;
		}
		for (i = 0; i < WHEEL_NR_BASES; i++) {
			size_t g0 = i * WHEEL_BASE_SLOTS;

			/*
			 * A coarse slot goes alone (with the same slot of the
			 * other bases); level-0 keys all precede every other
			 * slot, so every base's due ones go together.
			 */
			if (lvl ? event[i] != first :
				  event[i] > target || level[i])
				continue;
			if (lvl) {
				chain_tail = take_slot(w, g0 + lvl * WHEEL_SLOTS +
							   ((first >> (lvl * WHEEL_LVL_BITS)) &
							    SLOT_MASK),
						       chain_tail, &count);
			} else {
				/*
				 * Every level-0 key lies in the clock's
				 * 64-key block, before every other slot: take
				 * all of them up to the target, from every
				 * base.
				 */
				uint64_t due = w->occupied[i * WHEEL_LEVELS];

				if ((target ^ first) <= SLOT_MASK)
					due &= ~0ull >> (63 - (target & SLOT_MASK));
				for (; due; due &= due - 1)
					chain_tail = take_slot(
						w, g0 + __builtin_ctzll(due),
						chain_tail, &count);
			}
			event[i] = base_event(w, i, &level[i]);
		}
		tail = queue_due(tail, chain, chain_tail, count);
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
