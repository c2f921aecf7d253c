// SPDX-License-Identifier: MIT
/*
 * Moving the wheel's clock: wheel_advance() finds every timer whose key the
 * clock passes, in key order across the three bases, puts them on the due
 * list in run order and runs them.
 *
 * The clock visits slots, not ticks. At each step the earliest occupied slot
 * of any base (the first occupied slot of its lowest occupied level) is
 * either
 *  - wholly due (its last key <= the target): then every wholly due slot of
 *    that level, from every base, is collected as it is, with no cascading,
 *    and put in run order; or
 *  - partly due: cascaded, i.e. its timers placed again relative to its
 *    first key, each one level down or more.
 * A timer therefore moves down a level only when the clock stops inside its
 * slot, which is what keeps hard timers exact to the tick.
 */

#include "timers/wheel.h"
#include "timers/wheel_internal.h"

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
 * Place timer @l, of the level-L slot the clock has just reached, again.
 * The clock sits at the start of that slot, so its digits below L are all
 * zero, and the timer belongs at level L - 1 in the slot of its own digit
 * there (the digit is bits @digit_shift.. of expires + tick - 1, i.e.
 * @digit_shift = tick_shift + (L - 1) * 6; @slots is that level of its base),
 * unless that digit is zero too: then lower, by the general rule. The
 * common case needs no level computation, and its occupancy bit is
 * gathered in *@occupied, stored once by the caller (placing every timer
 * by the general rule makes expire 10-16% slower at N <= 10^4). Whether
 * the slot was empty is data, so instead of a branch an empty slot's back
 * link goes to @spare, a link whose ->next stays NULL (the ?: compiles to
 * a cmov).
 *
 * expires + tick - 1 cannot overflow: only the saturated key's timers have
 * such expiries, and the clock never reaches their slot, so they never
 * cascade.
 */
static hot_inline void place_again(struct wheel *w, unsigned base,
				   struct wheel_link **slots,
				   unsigned digit_shift, uint64_t *occupied,
				   struct wheel_link *l,
				   struct wheel_link *spare)
{
	uint64_t sum = wheel_timer_of(l)->expires + w->tick_mask;
	unsigned digit = (sum >> digit_shift) & SLOT_MASK;
	struct wheel_link **head, *first;

	if (unlikely(!digit)) {
		unsigned idx = wheel_slot_index(sum >> w->tick_shift, w->clk);

		wheel_slot_link(w, base, base * WHEEL_BASE_SLOTS + idx, idx, l);
		return;
	}
	head = &slots[digit];
	first = *head;
	l->next = first;
	l->pprev = head;
	*head = l;
	first = first ? first : spare;
	first->pprev = &l->next;
	if (base != WHEEL_BASE_TOLERANT)
		wheel_timer_of(l)->ahead = first->next;
	*occupied |= 1ull << digit;
}

/* place_again() every timer of the list @l, of the same base. */
static hot_inline void place_list(struct wheel *w, unsigned base,
				  struct wheel_link **slots,
				  unsigned digit_shift, uint64_t *occupied,
				  struct wheel_link *l,
				  struct wheel_link *spare)
{
	struct wheel_link *next;

	for (; l; l = next) {
		wheel_prefetch_ahead(l);
		next = l->next;
		place_again(w, base, slots, digit_shift, occupied, l, spare);
	}
}

/* Detach the timers of @base's slot at @level that the clock has reached. */
static hot_inline struct wheel_link *detach_slot(struct wheel *w, unsigned base,
						 unsigned level)
{
	size_t g = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS +
		   ((w->clk >> (level * WHEEL_LVL_BITS)) & SLOT_MASK);
	struct wheel_link *l = w->slot[g];

	w->slot[g] = NULL;
	wheel_slot_emptied(w, g);
	return l;
}

static hot_inline void mark_below(struct wheel *w, unsigned base,
				  unsigned level, uint64_t occupied)
{
	if (occupied) {
		w->occupied[base * WHEEL_LEVELS + level - 1] |= occupied;
		w->level_mask[base] |= 1ull << (level - 1);
	}
}

/*
 * The clock reached the first key of a @level slot (>= 1) of @base: place
 * its timers again, relative to the clock now at that key.
 */
static void cascade(struct wheel *w, unsigned base, unsigned level)
{
	unsigned digit_shift = w->tick_shift + (level - 1) * WHEEL_LVL_BITS;
	struct wheel_link **slots =
		&w->slot[base * WHEEL_BASE_SLOTS + (level - 1) * WHEEL_SLOTS];
	struct wheel_link *l = detach_slot(w, base, level), spare = { 0 };
	uint64_t occupied = 0;

	place_list(w, base, slots, digit_shift, &occupied, l, &spare);
	mark_below(w, base, level, occupied);
}

/*
 * cascade() of the same slot in two bases, their lists walked side by
 * side: their chains of dependent loads are independent, so they overlap,
 * which pays even with every timer in the L1 (expire 3-13%, N <= 10^4).
 */
static void cascade_two(struct wheel *w, unsigned base_a, unsigned base_b,
			unsigned level)
{
	uint64_t occupied_a = 0, occupied_b = 0;
	unsigned digit_shift = w->tick_shift + (level - 1) * WHEEL_LVL_BITS;
	size_t below = (level - 1) * WHEEL_SLOTS;
	struct wheel_link **slots_a =
		&w->slot[base_a * WHEEL_BASE_SLOTS + below];
	struct wheel_link **slots_b =
		&w->slot[base_b * WHEEL_BASE_SLOTS + below];
	struct wheel_link *a = detach_slot(w, base_a, level);
	struct wheel_link *b = detach_slot(w, base_b, level), *next_a, *next_b;
	struct wheel_link spare = { 0 };

	while (a && b) {
		wheel_prefetch_ahead(a);
		wheel_prefetch_ahead(b);
		next_a = a->next;
		next_b = b->next;
		place_again(w, base_a, slots_a, digit_shift, &occupied_a, a,
			    &spare);
		place_again(w, base_b, slots_b, digit_shift, &occupied_b, b,
			    &spare);
		a = next_a;
		b = next_b;
	}
	place_list(w, base_a, slots_a, digit_shift, &occupied_a, a, &spare);
	place_list(w, base_b, slots_b, digit_shift, &occupied_b, b, &spare);
	mark_below(w, base_a, level, occupied_a);
	mark_below(w, base_b, level, occupied_b);
}

static hot_inline void mark_timer_due(struct wheel_timer *t)
{
	t->priv = (t->priv & ~PRIV_STATE_MASK) | TIMER_DUE;
}

/*
 * Put the NULL-terminated chain @l, the timers of one due slot at @level
 * (>= 1), in run order and mark them due (this is the one walk over the
 * slot); returns its first node and sets *@last_link to the last node's
 * ->next. The timers are bucketed by the next digit of their keys (the key
 * itself at level 1): buckets are in key order and usually hold one timer,
 * so only a bucket that holds more is sorted. A merge sort of the whole
 * slot would cost a compare per timer whose outcome is data, a mispredicted
 * branch every other time; a bucket is an index. Only the buckets in
 * `used` are set up, so nothing is cleared first.
 *
 * The digit is one shift of expires + tick - 1: a due key is below
 * 2^(64 - tick_shift), so the shift is < 64, and no due expiry lies in the
 * last tick of time, so the sum does not wrap.
 */
static struct wheel_link *order_slot(struct wheel_link *l, unsigned level,
				     uint64_t tick_mask, unsigned tick_shift,
				     struct wheel_link ***last_link)
{
	struct wheel_link *first[WHEEL_SLOTS], **end[WHEEL_SLOTS];
	struct wheel_link *chain, **tail = &chain, *next;
	unsigned digit_shift = tick_shift + (level - 1) * WHEEL_LVL_BITS;
	uint64_t used = 0, multi = 0;

	for (; l; l = next) {
		struct wheel_timer *t = wheel_timer_of(l);
		unsigned d =
			((t->expires + tick_mask) >> digit_shift) & SLOT_MASK;
		uint64_t bit = 1ull << d;

		next = l->next;
		mark_timer_due(t);
		if (used & bit) {
			*end[d] = l;
			l->pprev = end[d];
			multi |= bit;
		} else {
			first[d] = l;
			used |= bit;
		}
		end[d] = &l->next;
	}
	for (; used; used &= used - 1) {
		unsigned d = __builtin_ctzll(used);
		struct wheel_link *b = first[d], **b_end = end[d];

		*b_end = NULL;
		if (multi & (1ull << d))
			b = wheel_chain_sort(b, &b_end);
		*tail = b;
		b->pprev = tail;
		tail = b_end;
	}
	*last_link = tail;
	return chain;
}

/* Mark the timers of the chain @l due; returns @l. */
static struct wheel_link *mark_due(struct wheel_link *l)
{
	struct wheel_link *first = l;

	for (; l; l = l->next)
		mark_timer_due(wheel_timer_of(l));
	return first;
}

/* The slots @due (a bit mask) of @base at @level are being emptied. */
static hot_inline void unmark_slots(struct wheel *w, unsigned base,
				    unsigned level, uint64_t due)
{
	size_t g0 = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS;
	uint64_t *occupied = &w->occupied[base * WHEEL_LEVELS + level];

	*occupied &= ~due;
	if (!*occupied)
		w->level_mask[base] &= ~(1ull << level);
	if (w->sorted[base] - g0 < WHEEL_SLOTS &&
	    due & (1ull << (w->sorted[base] - g0)))
		w->sorted[base] = NO_SLOT;
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
	struct wheel_link **tail = chain;

	unmark_slots(w, base, level, due);
	for (; due; due &= due - 1) {
		struct wheel_link **head = &w->slot[g0 + __builtin_ctzll(due)];
		struct wheel_link *l = *head, **end = &l->next;

		*head = NULL;
		/* Most hold one timer: sorting it too costs expire 15-50%. */
		if (!l->next)
			mark_due(l);
		else if (level)
			l = order_slot(l, level, w->tick_mask, w->tick_shift,
				       &end);
		else
			l = wheel_chain_sort(mark_due(l), &end);
		*tail = l;
		l->pprev = tail;
		tail = end;
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
	 * only then: recomputing all three every step costs expire up to 7%.
	 */
	for (i = 0; i < WHEEL_NR_BASES; i++)
		event[i] = base_event(w, i, &level[i]);
	for (;;) {
		uint64_t first = event[0], last, due[WHEEL_NR_BASES];
		unsigned lvl, b;

		for (i = 0, b = 1; b < WHEEL_NR_BASES; b++) {
			if (event[b] < first) {
				first = event[b];
				i = b;
			}
		}
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
			unsigned bases[WHEEL_NR_BASES] = { 0 }, nr = 0;

			for (i = 0; i < WHEEL_NR_BASES; i++)
				if (event[i] == first)
					bases[nr++] = i;
			if (nr >= 2)
				cascade_two(w, bases[0], bases[1], lvl);
			else
				cascade(w, bases[0], lvl);
			if (nr == 3)
				cascade(w, bases[2], lvl);
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
		/* No branch: kinds are random (expire 1.25x at N = 10^4). */
		ran_deferrable += deferrable;
		t->fn(t, now);
	}
	w->stat_fired_deferrable += ran_deferrable;
	w->stat_fired_hard += ran - ran_deferrable;
	return ran;
}
