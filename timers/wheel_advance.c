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
 *
 * The usual advance, a short way within levels 0 and 1, skips the steps:
 * take_near() buckets every due timer of those levels by key at once, and
 * splits the level-1 slot the clock stops in as the cascade would have.
 */
#include <assert.h>
#include <string.h>

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
 * Place timer @l, of the level-L slot the clock has just reached, again.
 * The clock sits at the start of that slot, so its digits below L are all
 * zero, and the timer belongs at level L - 1 in the slot of its own digit
 * there (the digit is bits @digit_shift.. of expires + tick - 1, i.e.
 * @digit_shift = tick_shift + (L - 1) * 6; @slots is that level of its base),
 * unless that digit is zero too: then lower, by the general rule. The
 * common case needs no level computation, and its occupancy bit is
 * gathered in *@occupied, stored once by the caller. Whether the slot was
 * empty is data (at N = 1e5 one timer in six opens its level-1 slot), so
 * instead of a branch an empty slot's back link goes to @spare, a link
 * whose ->next stays NULL.
 *
 * expires + tick - 1 cannot overflow: only the saturated key's timers have
 * such expiries, and the clock never reaches their slot, so they never
 * cascade.
 */
static hot_inline void place_again(struct wheel *w, unsigned base,
				   struct wheel_link **slots,
				   unsigned digit_shift, uint64_t *occupied,
				   struct wheel_link *l, uint64_t clk,
				   uint64_t tick_mask, unsigned tick_shift,
				   struct wheel_link *spare)
{
	uint64_t sum = wheel_timer_of(l)->expires + tick_mask;
	unsigned digit = (sum >> digit_shift) & SLOT_MASK;
	struct wheel_link **head, *first;

	if (unlikely(!digit)) {
		unsigned idx = wheel_slot_index(sum >> tick_shift, clk);

		wheel_slot_link(w, base, base * WHEEL_BASE_SLOTS + idx, idx, l);
		return;
	}
	head = &slots[digit];
	first = *head;
	l->next = first;
	l->pprev = head;
	*head = l;
	first = wheel_link_or(first, spare);
	first->pprev = &l->next;
	if (base != WHEEL_BASE_TOLERANT)
		wheel_timer_of(l)->ahead = first->next;
	*occupied |= 1ull << digit;
}

/* place_again() every timer of the list @l, of the same base. */
static hot_inline void place_list(struct wheel *w, unsigned base,
				  struct wheel_link **slots,
				  unsigned digit_shift, uint64_t *occupied,
				  struct wheel_link *l, uint64_t clk,
				  uint64_t tick_mask, unsigned tick_shift,
				  struct wheel_link *spare)
{
	struct wheel_link *next;

	for (; l; l = next) {
		wheel_prefetch_ahead(l);
		next = l->next;
		place_again(w, base, slots, digit_shift, occupied, l, clk,
			    tick_mask, tick_shift, spare);
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
 * its timers again, relative to the clock now at that key. With the clock
 * and the tick in registers: stores through the lists could otherwise
 * alias them.
 */
static void cascade(struct wheel *w, unsigned base, unsigned level)
{
	uint64_t clk = w->clk, tick_mask = w->tick_mask, occupied = 0;
	unsigned tick_shift = w->tick_shift;
	unsigned digit_shift = tick_shift + (level - 1) * WHEEL_LVL_BITS;
	struct wheel_link **slots =
		&w->slot[base * WHEEL_BASE_SLOTS + (level - 1) * WHEEL_SLOTS];
	struct wheel_link *l = detach_slot(w, base, level), spare = { 0 };

	place_list(w, base, slots, digit_shift, &occupied, l, clk, tick_mask,
		   tick_shift, &spare);
	mark_below(w, base, level, occupied);
}

/*
 * cascade() of the same slot in two bases, their lists walked side by
 * side: they are independent, so when their timers have left the cache the
 * misses overlap (wheel-bench expire at N = 1e5: 92 -> 68 ns per timer,
 * fastest of 8 runs each, alternated).
 */
static void cascade_two(struct wheel *w, unsigned base_a, unsigned base_b,
			unsigned level)
{
	uint64_t clk = w->clk, tick_mask = w->tick_mask;
	uint64_t occupied_a = 0, occupied_b = 0;
	unsigned tick_shift = w->tick_shift;
	unsigned digit_shift = tick_shift + (level - 1) * WHEEL_LVL_BITS;
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
			    clk, tick_mask, tick_shift, &spare);
		place_again(w, base_b, slots_b, digit_shift, &occupied_b, b,
			    clk, tick_mask, tick_shift, &spare);
		a = next_a;
		b = next_b;
	}
	place_list(w, base_a, slots_a, digit_shift, &occupied_a, a, clk,
		   tick_mask, tick_shift, &spare);
	place_list(w, base_b, slots_b, digit_shift, &occupied_b, b, clk,
		   tick_mask, tick_shift, &spare);
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

/*
 * Buckets by key for take_near(): NEAR_KEYS due keys, counted from the
 * group's first key, then one level-0 slot's worth per base for the timers
 * of a partly due level-1 slot that are not due yet.
 */
#define NEAR_KEYS 256
#define NEAR_BUCKETS (NEAR_KEYS + WHEEL_NR_BASES * WHEEL_SLOTS)
#define NEAR_WORDS (NEAR_BUCKETS / 64)

struct near_buckets {
	struct wheel_link *first[NEAR_BUCKETS], **end[NEAR_BUCKETS];
	uint64_t used[NEAR_WORDS], multi[NEAR_WORDS];
};

/* Append @l to bucket @k (its chain ends open: ->next is set later). */
static hot_inline void near_append(struct near_buckets *b, unsigned k,
				   struct wheel_link *l)
{
	uint64_t bit = 1ull << (k % 64);

	if (b->used[k / 64] & bit) {
		*b->end[k] = l;
		l->pprev = b->end[k];
		b->multi[k / 64] |= bit;
	} else {
		b->first[k] = l;
		b->used[k / 64] |= bit;
	}
	b->end[k] = &l->next;
}

/*
 * Bucket the timers of the list @l of a wholly due level-1 slot, all due, by
 * key - @origin. Their keys are in range (no timer armed in the past sits
 * above level 0, and no level-1 key is before the group's first); the clamp
 * only keeps the stack safe regardless, as in near_split(). No wrap in the
 * sum: keys of levels 0 and 1 are never the saturated key.
 */
static hot_inline void near_take_all(struct near_buckets *b,
				     struct wheel_link *l, uint64_t origin,
				     uint64_t tick_mask, unsigned tick_shift)
{
	struct wheel_link *next;

	for (; l; l = next) {
		struct wheel_timer *t = wheel_timer_of(l);
		uint64_t key = (t->expires + tick_mask) >> tick_shift;
		uint64_t k = key - origin;

		k = k < NEAR_KEYS ? k : NEAR_KEYS - 1;
		next = l->next;
		mark_timer_due(t);
		near_append(b, k, l);
	}
}

/*
 * Bucket the list @l of a due level-0 slot, all of key @k from the origin:
 * a level-0 slot is one key, so its list goes into the bucket whole, to be
 * sorted if it holds more than one timer. (A timer armed in the past sits
 * in the clock's slot with its old expiry: the sort by expiry puts it
 * first.)
 */
static hot_inline void near_take_key(struct near_buckets *b, unsigned k,
				     struct wheel_link *l)
{
	struct wheel_link *last = l;

	k = k < NEAR_KEYS ? k : NEAR_KEYS - 1; /* as in near_take_all() */
	mark_timer_due(wheel_timer_of(l));
	while (last->next) {
		last = last->next;
		mark_timer_due(wheel_timer_of(last));
	}
	near_append(b, k, l);
	b->end[k] = &last->next;
	b->multi[k / 64] |= (uint64_t)(last != l) << (k % 64);
}

/*
 * Bucket timer @l of @base's level-1 slot that holds @target: due (key <=
 * @target) by key; otherwise to @base's bucket of its level-0 slot, which
 * it takes when the clock stops at @target. Returns the next timer of the
 * slot.
 */
static hot_inline struct wheel_link *
near_split(struct near_buckets *b, unsigned base, struct wheel_link *l,
	   uint64_t origin, uint64_t target, uint64_t tick_mask,
	   unsigned tick_shift)
{
	static_assert(TIMER_DUE == TIMER_IN_SLOT + 1, "due = in slot + 1");
	struct wheel_timer *t = wheel_timer_of(l);
	struct wheel_link *next;
	uint64_t key = (t->expires + tick_mask) >> tick_shift;
	uint64_t k = key - origin, due = key <= target;

	k = k < NEAR_KEYS ? k : NEAR_KEYS - 1;
	k = due ? k : NEAR_KEYS + base * WHEEL_SLOTS + (key & SLOT_MASK);
	next = l->next;
	t->priv = (t->priv & ~PRIV_STATE_MASK) | (TIMER_IN_SLOT + due);
	near_append(b, k, l);
	return next;
}

/*
 * near_split() the slots @part[base]. Those of the hard and the deferred
 * base are walked side by side, as cascade_two() walks them: at N = 1e6
 * they have left the cache, and one after the other they measured 1.14x
 * slower than the cascade they replace.
 */
static hot_inline void near_split_all(struct near_buckets *b,
				      struct wheel_link **part, uint64_t origin,
				      uint64_t target, uint64_t tick_mask,
				      unsigned tick_shift)
{
	struct wheel_link *hard = part[WHEEL_BASE_HARD];
	struct wheel_link *deferred = part[WHEEL_BASE_DEFERRED];
	struct wheel_link *tolerant = part[WHEEL_BASE_TOLERANT];

	while (hard && deferred) {
		hard = near_split(b, WHEEL_BASE_HARD, hard, origin, target,
				  tick_mask, tick_shift);
		deferred = near_split(b, WHEEL_BASE_DEFERRED, deferred, origin,
				      target, tick_mask, tick_shift);
	}
	while (hard)
		hard = near_split(b, WHEEL_BASE_HARD, hard, origin, target,
				  tick_mask, tick_shift);
	while (deferred)
		deferred = near_split(b, WHEEL_BASE_DEFERRED, deferred, origin,
				      target, tick_mask, tick_shift);
	while (tolerant)
		tolerant = near_split(b, WHEEL_BASE_TOLERANT, tolerant, origin,
				      target, tick_mask, tick_shift);
}

/*
 * The clock's earliest slot starts at @first, at level 0 or 1, and
 * @target - @first < NEAR_KEYS. Collect every due timer of levels 0 and 1,
 * from every base, at once: each into the bucket of its own key, so the
 * buckets are in run order as they stand but for timers that share a key,
 * which are sorted. No per-base chains to merge: that merge was a coin
 * toss per timer, a mispredicted branch every other time. If @within
 * (@target is in @first's level-2 block, so nothing of levels >= 2 is due),
 * the level-1 slot that holds @target is split too: its due timers join
 * the buckets, the rest become level-0 slots as they would in a cascade,
 * and nothing is left due below @target: the caller stops with the clock
 * at @target. Returns the due list's new last link.
 */
static struct wheel_link **take_near(struct wheel *w, uint64_t first,
				     uint64_t target, bool within,
				     struct wheel_link **tail)
{
	struct near_buckets b;
	struct wheel_link *parts[WHEEL_NR_BASES] = { NULL };
	uint64_t tick_mask = w->tick_mask, mask0, mask1, split = 0;
	unsigned tick_shift = w->tick_shift, base, word, last_word;

	memset(b.used, 0, sizeof(b.used));
	memset(b.multi, 0, sizeof(b.multi));
	mask0 = due_slots(first, target, 0);
	mask1 = due_slots(first, target, 1);
	if (within && (target & SLOT_MASK) != SLOT_MASK)
		split = 1ull << ((target >> WHEEL_LVL_BITS) & SLOT_MASK);
	/*
	 * Start loading the first timer of every level-1 slot the group can
	 * reach (at most four, as it spans < 256 keys) before walking any:
	 * each walk ends in a mispredicted exit, after which the next list's
	 * first load would start only then.
	 */
	for (base = 0; base < WHEEL_NR_BASES; base++)
		for (word = 0; word < NEAR_KEYS / WHEEL_SLOTS; word++)
			__builtin_prefetch(
				w->slot[base * WHEEL_BASE_SLOTS + WHEEL_SLOTS +
					(((first >> WHEEL_LVL_BITS) + word) &
					 SLOT_MASK)]);
	for (base = 0; base < WHEEL_NR_BASES; base++) {
		const uint64_t *occupied = &w->occupied[base * WHEEL_LEVELS];
		struct wheel_link **slot = &w->slot[base * WHEEL_BASE_SLOTS];
		uint64_t due0 = occupied[0] & mask0, due1 = occupied[1] & mask1;
		uint64_t part = occupied[1] & split;

		if (due0) {
			unmark_slots(w, base, 0, due0);
			for (; due0; due0 &= due0 - 1) {
				struct wheel_link **head =
					&slot[__builtin_ctzll(due0)];

				near_take_key(&b,
					      __builtin_ctzll(due0) -
						      (first & SLOT_MASK),
					      *head);
				*head = NULL;
			}
		}
		if (due1 | part) {
			unmark_slots(w, base, 1, due1 | part);
			for (; due1; due1 &= due1 - 1) {
				struct wheel_link **head =
					&slot[WHEEL_SLOTS +
					      __builtin_ctzll(due1)];

				near_take_all(&b, *head, first, tick_mask,
					      tick_shift);
				*head = NULL;
			}
			if (part) {
				struct wheel_link **head =
					&slot[WHEEL_SLOTS +
					      __builtin_ctzll(part)];

				parts[base] = *head;
				*head = NULL;
			}
		}
	}
	if (split)
		near_split_all(&b, parts, first, target, tick_mask, tick_shift);
	last_word = (target - first) / 64;
	for (word = 0; word <= last_word; word++) {
		uint64_t keys;

		for (keys = b.used[word]; keys; keys &= keys - 1) {
			unsigned k = word * 64 + __builtin_ctzll(keys);
			struct wheel_link *l = b.first[k], **end = b.end[k];

			if (b.multi[word] & (1ull << (k % 64))) {
				*end = NULL;
				l = wheel_chain_sort(l, &end);
			}
			/* This store also ends the bucket before. */
			*tail = l;
			l->pprev = tail;
			tail = end;
		}
	}
	*tail = NULL;
	/*
	 * What is left of the split slots becomes level 0 at the clock's new
	 * position, @target. Those level-0 slots are empty: the clock has left
	 * the level-1 slot it was in, so every level-0 slot was due.
	 */
	for (base = 0; split && base < WHEEL_NR_BASES; base++) {
		uint64_t slots = b.used[NEAR_KEYS / 64 + base];
		struct wheel_link **slot = &w->slot[base * WHEEL_BASE_SLOTS];

		if (!slots)
			continue;
		w->occupied[base * WHEEL_LEVELS] |= slots;
		w->level_mask[base] |= 1;
		for (; slots; slots &= slots - 1) {
			unsigned s = __builtin_ctzll(slots);
			unsigned k = NEAR_KEYS + base * WHEEL_SLOTS + s;

			*b.end[k] = NULL;
			slot[s] = b.first[k];
			b.first[k]->pprev = &slot[s];
		}
	}
	return tail;
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
		/*
		 * Levels 0 and 1 in one go, when the span fits the buckets. If
		 * the target is in the same level-2 block, that is all that is
		 * due, and the timers left are placed for the clock at the
		 * target; otherwise the block is collected whole and the
		 * steps go on. An advance that stays in the clock's level-1
		 * slot has only level-0 slots to take, each a single key:
		 * take_level() does that with less work (N = 1e6 in
		 * wheel-bench, where a key holds about one timer: 204 -> 185
		 * instructions per expired timer).
		 */
		if (lvl <= 1 && target - first < NEAR_KEYS &&
		    (first ^ target) >> WHEEL_LVL_BITS) {
			bool within =
				!((first ^ target) >> (2 * WHEEL_LVL_BITS));

			tail = take_near(w, first, target, within, tail);
			collected = true;
			if (within)
				break;
			for (i = 0; i < WHEEL_NR_BASES; i++)
				event[i] = base_event(w, i, &level[i]);
			continue;
		}
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
		/* No branch: the kinds of due timers alternate at random. */
		ran_deferrable += deferrable;
		t->fn(t, now);
	}
	w->stat_fired_deferrable += ran_deferrable;
	w->stat_fired_hard += ran - ran_deferrable;
	return ran;
}
