// SPDX-License-Identifier: MIT
/*
 * The timer wheel: where a timer sits, how the clock moves it down a level,
 * and the two wake-up queries. wheel.h has the contract and the geometry;
 * docs/timers.md explains the choices.
 *
 * Keys are ticks: key = ceil(expires / tick). A timer with key K sits at the
 * level of the highest bit in which K and the clock differ, in the slot given
 * by K's bits of that level. So a level-0 slot holds exactly one key, and a
 * slot of level L >= 1 is cascaded (its timers placed again) when the clock
 * reaches its first key. The clock never passes a key that is still in the
 * wheel; every pending key is >= clk, and slot clk of level 0 is "due".
 */
#include <assert.h>
#include <errno.h>

#include "wheel.h"
#include "wheel_list.h"

static_assert(sizeof(struct wheel_timer) <= 48,
	      "a timer must fit in 48 bytes (it is embedded per guest timer)");

enum timer_state {
	TIMER_IDLE,
	TIMER_IN_SLOT, /* in one of the bases */
	TIMER_DUE, /* on w->due: the advance in progress will run it */
};

#define SLOT_MASK ((uint64_t)WHEEL_SLOTS - 1)
/* The add/del/mod paths are a handful of instructions each: keep them flat. */
#define hot_inline inline __attribute__((always_inline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/*
 * A coarse slot with at most this many timers is scanned for its earliest
 * key rather than sorted: a rescan is as cheap as keeping it sorted.
 */
#define SCAN_MAX 4

static hot_inline unsigned timer_state(const struct wheel_timer *t)
{
	return (t->priv & PRIV_STATE_MASK) >> PRIV_STATE_SHIFT;
}

static hot_inline unsigned timer_base(const struct wheel_timer *t)
{
	return (t->priv & PRIV_BASE_MASK) >> PRIV_BASE_SHIFT;
}

static hot_inline unsigned timer_pos(const struct wheel_timer *t)
{
	return (t->priv & PRIV_POS_MASK) >> PRIV_POS_SHIFT;
}

static hot_inline bool timer_deferrable(const struct wheel_timer *t)
{
	return t->priv & PRIV_DEFERRABLE;
}

static hot_inline void set_state(struct wheel_timer *t, unsigned state)
{
	t->priv = (t->priv & ~PRIV_STATE_MASK) |
		  (uint64_t)state << PRIV_STATE_SHIFT;
}

static hot_inline uint64_t ceil_key(const struct wheel *w, uint64_t ns)
{
	return wheel_key_of(ns, w->tick_shift);
}

/* A key's start time; the key past UINT64_MAX saturates to WHEEL_NEVER. */
static hot_inline uint64_t key_to_ns(const struct wheel *w, uint64_t key)
{
	if (key > (WHEEL_NEVER >> w->tick_shift))
		return WHEEL_NEVER;
	return key << w->tick_shift;
}

static hot_inline uint64_t add_saturating(uint64_t a, uint64_t b)
{
	return a > WHEEL_NEVER - b ? WHEEL_NEVER : a + b;
}

static hot_inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static hot_inline uint64_t timer_key(const struct wheel *w,
				     const struct wheel_timer *t)
{
	return ceil_key(w, t->expires);
}

/* (63 - clz) / 6, by clz: one load instead of a multiply and two shifts. */
static const uint8_t level_by_clz[64] = {
#define L6(l) l, l, l, l, l, l
	10, 10, 10, 10, L6(9), L6(8), L6(7), L6(6), L6(5), L6(4), L6(3),
	L6(2), L6(1), L6(0),
#undef L6
};

static hot_inline unsigned level_of_diff(uint64_t diff)
{
	/* | 1: a key equal to the clock is level 0, and clz(0) is undefined. */
	return level_by_clz[__builtin_clzll(diff | 1)];
}

/* Level of @key: the 6-bit group of its highest bit that differs from clk. */
static hot_inline unsigned level_of(const struct wheel *w, uint64_t key)
{
	return level_of_diff(key ^ w->clk);
}

static hot_inline unsigned slot_of(uint64_t key, unsigned level)
{
	return (key >> (level * WHEEL_LVL_BITS)) & SLOT_MASK;
}

/* First key of @slot at @level, given the current clock. */
static uint64_t slot_start(const struct wheel *w, unsigned level, unsigned slot)
{
	unsigned shift = level * WHEEL_LVL_BITS;
	unsigned upper = shift + WHEEL_LVL_BITS;
	uint64_t prefix = upper >= 64 ? 0 : (w->clk >> upper) << upper;

	return prefix | ((uint64_t)slot << shift);
}

static hot_inline enum wheel_base_id base_for(bool deferrable,
					      uint64_t tolerance)
{
	if (tolerance)
		return WHEEL_BASE_TOLERANT;
	return deferrable ? WHEEL_BASE_DEFERRED : WHEEL_BASE_HARD;
}

/*
 * Link @t at the head of its slot; @key >= w->clk. A slot stays marked in
 * key order while each new head expires no later than the old one (a
 * conservative test: equal keys with a later expiry also clear it), which
 * holds for free when timers are armed in expiry order. The test is
 * branch-free: with random expiries it would mispredict half the time.
 * Returns the position bits of the priv word.
 */
static hot_inline uint64_t place(struct wheel *w, struct wheel_base *b,
				 struct wheel_timer *t, uint64_t key)
{
	unsigned level = level_of(w, key);
	unsigned slot = slot_of(key, level);
	struct wheel_link **head = &b->slot[level * WHEEL_SLOTS + slot];
	struct wheel_link *first = *head;

	t->link.next = first;
	t->link.pprev = head;
	*head = &t->link;
	if (likely(first)) {
		uint64_t later = t->expires > wheel_timer_of(first)->expires;

		first->pprev = &t->link.next;
		b->in_order[level] &= ~(later << slot);
	} else {
		b->occupied[level] |= 1ull << slot;
		b->level_mask |= 1ull << level;
		b->in_order[level] |= 1ull << slot;
	}
	return (uint64_t)(level << WHEEL_LVL_BITS | slot) << PRIV_POS_SHIFT;
}

static hot_inline void unslot(struct wheel_base *b, struct wheel_timer *t)
{
	unsigned pos = timer_pos(t); /* level * WHEEL_SLOTS + slot */

	wheel_list_del(&t->link);
	if (!b->slot[pos]) {
		unsigned level = pos >> WHEEL_LVL_BITS, slot = pos & SLOT_MASK;

		b->occupied[level] &= ~(1ull << slot);
		if (!b->occupied[level])
			b->level_mask &= ~(1ull << level);
	}
}

/*
 * The cached minima only ever move down on arm; a removal can only spoil
 * them if it removes the minimum. Per base, ->min_at is the earliest key as
 * a time (ceil_tick), so in the hard base it equals the earliest ->wake.
 * ->wake is WHEEL_NEVER in the deferred base, so the wheel-wide minimum can
 * take every base's wake without asking which base it is.
 */
static hot_inline void note_armed(struct wheel *w, struct wheel_base *b,
				  enum wheel_base_id id, uint64_t at,
				  uint64_t wake)
{
	b->min_at = min_u64(b->min_at, at);
	if (id == WHEEL_BASE_TOLERANT)
		b->min_wake = min_u64(b->min_wake, wake);
	w->next_hard = min_u64(w->next_hard, wake);
}

/*
 * ->min_at is a multiple of the tick (or WHEEL_NEVER), so for the timer that
 * holds it ceil_tick(expires) == min_at, which is the same as expires <=
 * min_at: no key arithmetic on the delete path. Timers that cannot hold the
 * minimum may pass the test too (a key raised to the clock, an expiry in
 * the past; anything when min_at is WHEEL_NEVER): conservative, never wrong.
 * A WHEEL_NEVER wake never decides a minimum: removing it changes nothing.
 */
static hot_inline void note_removed(struct wheel *w, struct wheel_base *b,
				    enum wheel_base_id id,
				    const struct wheel_timer *t)
{
	if (t->expires <= b->min_at)
		b->min_at_valid = false;
	if (t->wake != WHEEL_NEVER) {
		if (id == WHEEL_BASE_TOLERANT && t->wake <= b->min_wake)
			b->min_wake_valid = false;
		if (t->wake <= w->next_hard)
			w->next_hard_valid = false;
	}
}

static void base_init(struct wheel_base *b)
{
	unsigned level, slot;

	b->level_mask = 0;
	for (level = 0; level < WHEEL_LEVELS; level++) {
		b->occupied[level] = 0;
		b->in_order[level] = 0;
		for (slot = 0; slot < WHEEL_SLOTS; slot++)
			b->slot[level * WHEEL_SLOTS + slot] = NULL;
	}
	b->min_at = WHEEL_NEVER;
	b->min_wake = WHEEL_NEVER;
	b->min_at_valid = true;
	b->min_wake_valid = true;
}

void wheel_init(struct wheel *w, uint64_t now, unsigned tick_shift)
{
	unsigned i;

	if (!tick_shift)
		tick_shift = WHEEL_DEFAULT_TICK_SHIFT;
	if (tick_shift > WHEEL_MAX_TICK_SHIFT)
		tick_shift = WHEEL_MAX_TICK_SHIFT;
	w->tick_shift = tick_shift;
	w->now = now;
	w->next_hard = WHEEL_NEVER;
	w->next_hard_valid = true;
	w->clk = now >> tick_shift;
	w->next_seq = 0;
	w->nr_pending[0] = 0;
	w->nr_pending[1] = 0;
	w->stat_backwards = 0;
	w->stat_fired_hard = 0;
	w->stat_fired_deferrable = 0;
	w->due = NULL;
	for (i = 0; i < WHEEL_NR_BASES; i++)
		base_init(&w->base[i]);
}

void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, unsigned flags)
{
	t->link.next = NULL;
	t->link.pprev = NULL;
	t->expires = 0;
	t->wake = WHEEL_NEVER;
	t->fn = fn;
	t->priv = (uint64_t)TIMER_IDLE << PRIV_STATE_SHIFT |
		  (flags & WHEEL_DEFERRABLE ? PRIV_DEFERRABLE : 0);
}

int wheel_timer_set_flags(struct wheel_timer *t, unsigned flags)
{
	if (timer_state(t) != TIMER_IDLE)
		return -EBUSY;
	t->priv &= ~PRIV_DEFERRABLE;
	if (flags & WHEEL_DEFERRABLE)
		t->priv |= PRIV_DEFERRABLE;
	return 0;
}

bool wheel_timer_pending(const struct wheel_timer *t)
{
	return timer_state(t) != TIMER_IDLE;
}

uint64_t wheel_timer_expires(const struct wheel_timer *t)
{
	return t->expires;
}

/* ->wake: see rearm(). */
static hot_inline uint64_t wake_of(const struct wheel *w, enum wheel_base_id id,
				   uint64_t key, uint64_t expires,
				   uint64_t tolerance)
{
	if (id == WHEEL_BASE_HARD)
		return key_to_ns(w, key);
	if (id == WHEEL_BASE_DEFERRED)
		return WHEEL_NEVER;
	return key_to_ns(w, ceil_key(w, add_saturating(expires, tolerance)));
}

/*
 * Link an idle (or just unlinked) @t into base @id. The whole priv word is
 * written at once: the arm sequence, position, state, base and flag.
 */
static hot_inline void arm(struct wheel *w, struct wheel_timer *t,
			   enum wheel_base_id id, uint64_t key,
			   uint64_t expires, uint64_t wake)
{
	struct wheel_base *b = &w->base[id];
	uint64_t priv = (t->priv & PRIV_DEFERRABLE) |
			priv_seq(w->next_seq++) |
			(uint64_t)TIMER_IN_SLOT << PRIV_STATE_SHIFT |
			(uint64_t)id << PRIV_BASE_SHIFT;

	t->expires = expires;
	t->wake = wake;
	t->priv = priv | place(w, b, t, key);
	note_armed(w, b, id, id == WHEEL_BASE_HARD ? wake : key_to_ns(w, key),
		   wake);
}

/*
 * Arm with a tolerance, or re-arm a pending @t. ->wake is what the timer contributes to the host
 * wake-up query: ceil_tick(expires + tolerance) in the tolerant base, the
 * (clamped) key's time in the hard base, and WHEEL_NEVER in the deferred
 * base.
 */
static __attribute__((noinline)) int rearm(struct wheel *w,
					   struct wheel_timer *t,
					   uint64_t expires, uint64_t tolerance)
{
	bool deferrable = timer_deferrable(t);
	enum wheel_base_id id = base_for(deferrable, tolerance);
	enum wheel_base_id old_id = timer_base(t);
	uint64_t key = ceil_key(w, expires);
	uint64_t wake;

	if (key < w->clk)
		key = w->clk; /* already due: it runs at the next advance */
	wake = wake_of(w, id, key, expires, tolerance);

	if (timer_state(t) == TIMER_IN_SLOT) {
		struct wheel_base *b = &w->base[old_id];
		unsigned level = level_of(w, key);
		unsigned slot = slot_of(key, level);

		if (old_id == id &&
		    timer_pos(t) == (level << WHEEL_LVL_BITS | slot)) {
			/*
			 * Same slot: nothing moves. Run order comes from
			 * (expires, seq), not from the place in the slot.
			 */
			note_removed(w, b, id, t);
			if (level && key != timer_key(w, t))
				b->in_order[level] &= ~(1ull << slot);
			t->expires = expires;
			t->wake = wake;
			t->priv = (t->priv & ~PRIV_SEQ_MASK) |
				  priv_seq(w->next_seq++);
			note_armed(w, b, id, key_to_ns(w, key), wake);
			return 1;
		}
		note_removed(w, b, old_id, t);
		unslot(b, t);
	} else if (timer_state(t) == TIMER_DUE) {
		wheel_list_del(&t->link); /* off the due list */
	} else {
		w->nr_pending[deferrable]++;
		arm(w, t, id, key, expires, wake);
		return 0;
	}
	arm(w, t, id, key, expires, wake);
	return 1;
}

/*
 * The hottest path: arm an idle timer with no tolerance, so in the hard or
 * the deferred base (WHEEL_BASE_DEFERRED is 1: the flag bit picks the base).
 * Written out flat so that it compiles to straight-line code.
 */
static_assert(WHEEL_BASE_HARD == 0 && WHEEL_BASE_DEFERRED == 1,
	      "add_idle() picks the base from the deferrable bit");

static hot_inline void add_idle(struct wheel *w, struct wheel_timer *t,
				uint64_t expires, uint64_t priv)
{
	unsigned shift = w->tick_shift;
	uint64_t clk = w->clk, key = wheel_key_of(expires, shift);
	uint64_t flag = priv & PRIV_DEFERRABLE, deferrable = flag >> PRIV_DEFERRABLE_SHIFT;
	struct wheel_base *b = &w->base[deferrable];
	struct wheel_link **head, *first;
	uint64_t at, wake, pos;
	unsigned level, slot;

	static_assert(PRIV_DEFERRABLE >> 2 ==
			      (uint64_t)WHEEL_BASE_DEFERRED << PRIV_BASE_SHIFT,
		      "the flag bit shifted down is the base bits");
	if (unlikely(key < clk))
		key = clk; /* already due: it runs at the next advance */
	at = key_to_ns(w, key);
	wake = at | -deferrable; /* WHEEL_NEVER if deferrable */
	/*
	 * Conditional stores, not a min: most arms do not lower a minimum,
	 * and a load-compare-store on every arm chains each add to the
	 * previous one through memory. Done first, so that at and wake are
	 * dead before the slot is linked (fewer registers to save).
	 */
	if (unlikely(at < b->min_at))
		b->min_at = at;
	if (unlikely(wake < w->next_hard))
		w->next_hard = wake;
	w->nr_pending[deferrable]++;
	t->expires = expires;
	t->wake = wake;
	level = level_of_diff(key ^ clk);
	slot = slot_of(key, level);
	pos = level * WHEEL_SLOTS + slot;
	t->priv = flag | flag >> 2 | priv_seq(w->next_seq++) |
		  (uint64_t)TIMER_IN_SLOT << PRIV_STATE_SHIFT |
		  pos << PRIV_POS_SHIFT;
	head = &b->slot[pos];
	first = *head;
	t->link.next = first;
	t->link.pprev = head;
	*head = &t->link;
	if (likely(first)) {
		uint64_t later = expires > wheel_timer_of(first)->expires;

		first->pprev = &t->link.next;
		b->in_order[level] &= ~(later << slot);
	} else {
		b->occupied[level] |= 1ull << slot;
		b->level_mask |= 1ull << level;
		b->in_order[level] |= 1ull << slot;
	}
}

/*
 * Arm or re-arm. Arming an idle timer with no tolerance is the hot case and
 * stays inline; everything else goes through rearm().
 */
int wheel_add(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance)
{
	uint64_t priv = t->priv;

	if (unlikely((priv & PRIV_STATE_MASK) || tolerance))
		return rearm(w, t, expires, tolerance);
	add_idle(w, t, expires, priv);
	return 0;
}

/*
 * The hot case of a modify: another expiry in the same tick with no
 * tolerance, so the same key, slot and wake: only the expiry and the arm
 * order change. (The base cannot change: the flag is fixed while pending.)
 */
int wheel_mod(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance)
{
	uint64_t priv = t->priv;
	unsigned shift = w->tick_shift;
	/*
	 * Same key without computing either: for x >= 1, ceil(x / tick) ==
	 * ((x - 1) >> shift) + 1, so two expiries share a key when x - 1 and
	 * y - 1 agree above the tick bits. That formula is wrong only for
	 * x == 0, whose x - 1 lands in the top tick-sized range of uint64_t;
	 * so the test also rejects that range (it holds only 0 and expiries
	 * in the last tick, which take the general path).
	 */
	uint64_t x = expires - 1, y = t->expires - 1;

	if (likely((priv & (PRIV_STATE_MASK | (uint64_t)WHEEL_BASE_TOLERANT
						      << PRIV_BASE_SHIFT)) ==
			   (uint64_t)TIMER_IN_SLOT << PRIV_STATE_SHIFT &&
		   !tolerance && !((x ^ y) >> shift) && (~x >> shift))) {
		t->expires = expires;
		t->priv = (priv & ~PRIV_SEQ_MASK) |
			  priv_seq(w->next_seq++);
		return 1;
	}
	return wheel_add(w, t, expires, tolerance);
}

int wheel_del(struct wheel *w, struct wheel_timer *t)
{
	uint64_t priv = t->priv;
	unsigned state = (priv & PRIV_STATE_MASK) >> PRIV_STATE_SHIFT;

	if (likely(state == TIMER_IN_SLOT)) {
		enum wheel_base_id id = timer_base(t);
		struct wheel_base *b = &w->base[id];

		note_removed(w, b, id, t);
		unslot(b, t);
	} else if (state == TIMER_DUE) {
		wheel_list_del(&t->link);
	} else {
		return 0;
	}
	t->priv = priv & ~PRIV_STATE_MASK; /* TIMER_IDLE */
	w->nr_pending[!!(priv & PRIV_DEFERRABLE)]--;
	return 1;
}

/*
 * Earliest key of a base. Every key of a lower level is below every key of
 * a higher one, and slots of a level are in key order, so the answer is in
 * the first occupied slot of the lowest occupied level. At level 0 the slot
 * is the key. A small coarse slot is scanned; a big one is sorted by key
 * once, and stays sorted while deletes and in-order arms touch it, so
 * deleting the earliest timer and asking again reads the new first node.
 */
static uint64_t base_min_at(struct wheel *w, struct wheel_base *b)
{
	struct wheel_link **head, *l;
	unsigned level, slot, n = 0;
	uint64_t best = WHEEL_NEVER;

	if (b->min_at_valid)
		return b->min_at;

	b->min_at_valid = true;
	if (!b->level_mask) {
		b->min_at = WHEEL_NEVER;
		return b->min_at;
	}
	level = __builtin_ctzll(b->level_mask);
	slot = __builtin_ctzll(b->occupied[level]);
	head = &b->slot[level * WHEEL_SLOTS + slot];
	if (!level) {
		best = slot_start(w, 0, slot);
	} else if (b->in_order[level] & (1ull << slot)) {
		best = timer_key(w, wheel_timer_of(*head));
	} else {
		for (l = *head; l; l = l->next, n++)
			best = min_u64(best, timer_key(w, wheel_timer_of(l)));
		if (n > SCAN_MAX) {
			wheel_slot_sort(head, w->tick_shift,
					level * WHEEL_LVL_BITS, n);
			b->in_order[level] |= 1ull << slot;
			best = timer_key(w, wheel_timer_of(*head));
		}
	}
	b->min_at = key_to_ns(w, best);
	return b->min_at;
}

/*
 * Earliest wake of the tolerant base: its timers are keyed by expiry, and a
 * wake is never before its slot's start, so walk slots in time order and
 * stop at the first slot that starts at or after the best wake found.
 */
static uint64_t base_min_wake(struct wheel *w, struct wheel_base *b)
{
	uint64_t levels, slots, best = WHEEL_NEVER;

	if (b->min_wake_valid)
		return b->min_wake;

	for (levels = b->level_mask; levels; levels &= levels - 1) {
		unsigned level = __builtin_ctzll(levels);

		for (slots = b->occupied[level]; slots; slots &= slots - 1) {
			unsigned slot = __builtin_ctzll(slots);
			struct wheel_link *l;

			if (key_to_ns(w, slot_start(w, level, slot)) >= best)
				goto done;
			for (l = b->slot[level * WHEEL_SLOTS + slot]; l; l = l->next)
				best = min_u64(best, wheel_timer_of(l)->wake);
		}
	}
done:
	b->min_wake = best;
	b->min_wake_valid = true;
	return best;
}

/* Out of line, so the cached query does not save and restore registers. */
static __attribute__((noinline)) uint64_t next_hard_recompute(struct wheel *w)
{
	struct wheel_base *hard = &w->base[WHEEL_BASE_HARD];
	struct wheel_base *tolerant = &w->base[WHEEL_BASE_TOLERANT];

	w->next_hard = min_u64(base_min_at(w, hard),
			       base_min_wake(w, tolerant));
	w->next_hard_valid = true;
	return w->next_hard;
}

/*
 * Cache-line aligned: the cached path is 7 instructions, and where it
 * straddles a 64-byte boundary it measured ~0.5 ns slower (2.0-2.2 vs
 * 1.5-1.7 ns), moved there by unrelated edits elsewhere in this file.
 */
__attribute__((aligned(64))) uint64_t wheel_next_hard_expiry(struct wheel *w)
{
	uint64_t next = likely(w->next_hard_valid) ? w->next_hard :
						     next_hard_recompute(w);

	return next > w->now ? next : w->now;
}

uint64_t wheel_next_expiry(struct wheel *w)
{
	uint64_t next = WHEEL_NEVER;
	unsigned i;

	for (i = 0; i < WHEEL_NR_BASES; i++)
		next = min_u64(next, base_min_at(w, &w->base[i]));
	return next > w->now ? next : w->now;
}

/* The next key at which @b needs the clock's attention, and at which level. */
static uint64_t base_next_event(const struct wheel *w,
				const struct wheel_base *b, unsigned *level)
{
	unsigned slot;

	if (!b->level_mask)
		return WHEEL_NEVER;
	/*
	 * Every slot of a lower level starts before every slot of a higher
	 * one, so the lowest occupied level has the next event.
	 */
	*level = __builtin_ctzll(b->level_mask);
	slot = __builtin_ctzll(b->occupied[*level]);
	return slot_start(w, *level, slot);
}

/*
 * Detach level 0's slot for key w->clk from @b and append it, marked due, to
 * the chain ending at @tail. Returns the new tail; *count counts the timers.
 */
static struct wheel_link **collect_due(struct wheel *w, struct wheel_base *b,
				       struct wheel_link **tail,
				       unsigned *count)
{
	unsigned slot = w->clk & SLOT_MASK;
	struct wheel_link *l = b->slot[slot];

	b->slot[slot] = NULL;
	*tail = l;
	for (; l; l = l->next) {
		set_state(wheel_timer_of(l), TIMER_DUE);
		tail = &l->next;
		++*count;
	}
	b->occupied[0] &= ~(1ull << slot);
	if (!b->occupied[0])
		b->level_mask &= ~1ull;
	b->min_at_valid = false;
	b->min_wake_valid = false;
	w->next_hard_valid = false;
	return tail;
}

/*
 * The clock reached the first key of a @level slot: place its timers again,
 * each at the level of its key's highest bit that differs from the new
 * clock. The same steps as place(), with the clock and tick in registers
 * (stores through the slot lists could otherwise alias them).
 */
static void cascade(struct wheel *w, struct wheel_base *b, unsigned level)
{
	uint64_t clk = w->clk, tick_mask = (1ull << w->tick_shift) - 1;
	unsigned shift = w->tick_shift, slot = slot_of(clk, level);
	struct wheel_link **slots = &b->slot[0];
	uint64_t *occupied = b->occupied, *in_order = b->in_order;
	uint64_t levels = b->level_mask;
	struct wheel_link *l = slots[level * WHEEL_SLOTS + slot], *next;

	slots[level * WHEEL_SLOTS + slot] = NULL;
	occupied[level] &= ~(1ull << slot);
	if (!occupied[level])
		levels &= ~(1ull << level);
	for (; l; l = next) {
		struct wheel_timer *t = wheel_timer_of(l);
		uint64_t expires = t->expires;
		/*
		 * (expires + tick - 1) >> shift cannot overflow here: only
		 * the saturated key's timers have such expiries, and the
		 * clock never reaches their slot, so they never cascade.
		 */
		uint64_t key = (expires + tick_mask) >> shift;
		unsigned lv = level_of_diff(key ^ clk);
		unsigned sl = slot_of(key, lv);
		uint64_t pos = lv * WHEEL_SLOTS + sl;
		struct wheel_link **head = &slots[pos];
		struct wheel_link *first = *head;

		next = l->next;
		__builtin_prefetch(next);
		l->next = first;
		l->pprev = head;
		*head = l;
		if (likely(first)) {
			uint64_t later =
				expires > wheel_timer_of(first)->expires;

			first->pprev = &l->next;
			in_order[lv] &= ~(later << sl);
		} else {
			occupied[lv] |= 1ull << sl;
			levels |= 1ull << lv;
			in_order[lv] |= 1ull << sl;
		}
		t->priv = (t->priv & ~PRIV_POS_MASK) | pos << PRIV_POS_SHIFT;
	}
	b->level_mask = levels;
}

/*
 * Append the due timers of key w->clk (from every base whose level-0 event
 * it is) to the due chain at @tail, in run order, and return the new tail.
 * One timer, the common case, needs no sorting.
 */
static struct wheel_link **collect_chain(struct wheel_link **tail,
					 struct wheel_link *chain,
					 unsigned count)
{
	struct wheel_link *l, **prev;

	if (count > 1)
		chain = wheel_chain_sort(chain);
	*tail = chain;
	prev = tail;
	for (l = chain; l; l = l->next) {
		l->pprev = prev;
		prev = &l->next;
	}
	return prev;
}

static struct wheel_link **collect_key(struct wheel *w, struct wheel_link **tail,
				       const uint64_t *event)
{
	struct wheel_link *chain = NULL, **end = &chain;
	unsigned i, count = 0;

	for (i = 0; i < WHEEL_NR_BASES; i++)
		if (event[i] == w->clk)
			end = collect_due(w, &w->base[i], end, &count);
	return collect_chain(tail, chain, count);
}

static struct wheel_link **collect_key_base(struct wheel *w,
					    struct wheel_base *b,
					    struct wheel_link **tail)
{
	struct wheel_link *chain = NULL;
	unsigned count = 0;

	collect_due(w, b, &chain, &count);
	return collect_chain(tail, chain, count);
}

/* collect_key() when only @b has timers at key w->clk. */
static struct wheel_link **collect_one(struct wheel *w, struct wheel_base *b,
				       struct wheel_link **tail)
{
	unsigned slot = w->clk & SLOT_MASK;
	struct wheel_link *l = b->slot[slot];

	if (l->next)
		return collect_key_base(w, b, tail);
	/* One timer: the usual case, nothing to sort. */
	b->slot[slot] = NULL;
	b->occupied[0] &= ~(1ull << slot);
	if (!b->occupied[0])
		b->level_mask &= ~1ull;
	b->min_at_valid = false;
	b->min_wake_valid = false;
	w->next_hard_valid = false;
	set_state(wheel_timer_of(l), TIMER_DUE);
	*tail = l;
	l->pprev = tail;
	return &l->next;
}

unsigned wheel_advance(struct wheel *w, uint64_t now)
{
	uint64_t target = now >> w->tick_shift;
	struct wheel_link **tail = &w->due;
	uint64_t event[WHEEL_NR_BASES];
	unsigned level[WHEEL_NR_BASES] = { 0 }, ran = 0, i;

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
		event[i] = base_next_event(w, &w->base[i], &level[i]);
	for (;;) {
		uint64_t first = event[0];
		unsigned nr_first;
		bool cascaded = false;

		/*
		 * Which base comes first is data, not pattern (hard and
		 * deferrable events interleave at random): select without
		 * branches.
		 */
		i = event[1] < first;
		first = min_u64(first, event[1]);
		i = event[2] < first ? 2 : i;
		first = min_u64(first, event[2]);
		if (first > target)
			break;
		w->clk = first;
		nr_first = (event[0] == first) + (event[1] == first) +
			   (event[2] == first);
		if (likely(nr_first == 1)) {
			/* The common case: one base has this event. */
			if (level[i])
				cascade(w, &w->base[i], level[i]);
			else
				tail = collect_one(w, &w->base[i], tail);
			event[i] = base_next_event(w, &w->base[i], &level[i]);
			continue;
		}
		for (i = 0; i < WHEEL_NR_BASES; i++) {
			if (event[i] == first && level[i]) {
				cascade(w, &w->base[i], level[i]);
				event[i] = base_next_event(w, &w->base[i],
							   &level[i]);
				cascaded = true;
			}
		}
		/*
		 * A cascade may bring timers down to key clk itself: look
		 * again, so that every timer of this key, from every base,
		 * is sorted into one group.
		 */
		if (cascaded)
			continue;
		tail = collect_key(w, tail, event);
		for (i = 0; i < WHEEL_NR_BASES; i++)
			if (event[i] == first)
				event[i] = base_next_event(w, &w->base[i],
							   &level[i]);
	}
	/* No slot starts in (clk, target]: every placement stays valid. */
	w->clk = target;

	while (w->due) {
		struct wheel_timer *t = wheel_timer_of(w->due);

		uint64_t deferrable = (t->priv & PRIV_DEFERRABLE) >>
				      PRIV_DEFERRABLE_SHIFT;

		wheel_list_del(&t->link);
		set_state(t, TIMER_IDLE);
		w->nr_pending[deferrable]--;
		/* No branch: the kinds of due timers alternate at random. */
		w->stat_fired_deferrable += deferrable;
		w->stat_fired_hard += deferrable ^ 1;
		ran++;
		t->fn(t, now);
	}
	return ran;
}

size_t wheel_pending(const struct wheel *w, unsigned kind)
{
	return w->nr_pending[!!(kind & WHEEL_DEFERRABLE)];
}

uint64_t wheel_now(const struct wheel *w)
{
	return w->now;
}
