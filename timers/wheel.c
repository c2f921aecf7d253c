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

static uint64_t ceil_key(const struct wheel *w, uint64_t ns)
{
	uint64_t part = ns & ((1ull << w->tick_shift) - 1);

	return (ns >> w->tick_shift) + (part != 0);
}

/* A key's start time; the key past UINT64_MAX saturates to WHEEL_NEVER. */
static uint64_t key_to_ns(const struct wheel *w, uint64_t key)
{
	if (key > (WHEEL_NEVER >> w->tick_shift))
		return WHEEL_NEVER;
	return key << w->tick_shift;
}

static uint64_t add_saturating(uint64_t a, uint64_t b)
{
	return a > WHEEL_NEVER - b ? WHEEL_NEVER : a + b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t timer_key(const struct wheel *w, const struct wheel_timer *t)
{
	return ceil_key(w, t->expires);
}

static unsigned level_of(const struct wheel *w, uint64_t key)
{
	uint64_t diff = key ^ w->clk;

	if (!diff)
		return 0;
	return (63 - __builtin_clzll(diff)) / WHEEL_LVL_BITS;
}

static unsigned slot_of(uint64_t key, unsigned level)
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

static enum wheel_base_id base_for(const struct wheel_timer *t,
				   uint64_t tolerance)
{
	if (tolerance)
		return WHEEL_BASE_TOLERANT;
	return t->deferrable ? WHEEL_BASE_DEFERRED : WHEEL_BASE_HARD;
}

/* Append @t to its slot; @key >= w->clk. */
static hot_inline void place(struct wheel *w, struct wheel_base *b,
			     struct wheel_timer *t, uint64_t key)
{
	unsigned level = level_of(w, key);
	unsigned slot = slot_of(key, level);
	struct wheel_link *head = &b->slot[level][slot];
	uint64_t bit = 1ull << slot;

	if (!(b->occupied[level] & bit)) {
		b->occupied[level] |= bit;
		b->level_mask |= 1ull << level;
		b->in_order[level] |= bit;
	} else if (level && t->expires < wheel_timer_of(head->prev)->expires) {
		b->in_order[level] &= ~bit; /* level 0 slots hold one key */
	}
	wheel_list_add_tail(&t->link, head);
	t->level = level;
	t->slot = slot;
	t->state = TIMER_IN_SLOT;
}

static hot_inline void unslot(struct wheel_base *b, struct wheel_timer *t)
{
	wheel_list_del(&t->link);
	if (wheel_list_empty(&b->slot[t->level][t->slot])) {
		b->occupied[t->level] &= ~(1ull << t->slot);
		if (!b->occupied[t->level])
			b->level_mask &= ~(1ull << t->level);
	}
}

/*
 * The cached minima only ever move down on arm; a removal can only spoil
 * them if it removes the minimum. A timer whose key was raised to the clock
 * (an expiry in the past) has ceil_key below the cache, so it spoils it too.
 */
static hot_inline void note_armed(struct wheel *w, struct wheel_base *b,
				  uint64_t key, uint64_t wake)
{
	b->min_key = min_u64(b->min_key, key);
	b->min_wake = min_u64(b->min_wake, wake);
	if (b != &w->base[WHEEL_BASE_DEFERRED])
		w->next_hard = min_u64(w->next_hard, wake);
}

static hot_inline void note_removed(struct wheel *w, struct wheel_base *b,
				    const struct wheel_timer *t)
{
	if (timer_key(w, t) <= b->min_key)
		b->min_key_valid = false;
	if (t->wake <= b->min_wake)
		b->min_wake_valid = false;
	if (t->base != WHEEL_BASE_DEFERRED && t->wake <= w->next_hard)
		w->next_hard_valid = false;
}

static void base_init(struct wheel_base *b)
{
	unsigned level, slot;

	b->level_mask = 0;
	for (level = 0; level < WHEEL_LEVELS; level++) {
		b->occupied[level] = 0;
		b->in_order[level] = 0;
		for (slot = 0; slot < WHEEL_SLOTS; slot++)
			wheel_list_init(&b->slot[level][slot]);
	}
	b->min_key = WHEEL_NEVER;
	b->min_wake = WHEEL_NEVER;
	b->min_key_valid = true;
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
	wheel_list_init(&w->due);
	for (i = 0; i < WHEEL_NR_BASES; i++)
		base_init(&w->base[i]);
}

void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, unsigned flags)
{
	t->link.next = NULL;
	t->link.prev = NULL;
	t->expires = 0;
	t->wake = WHEEL_NEVER;
	t->fn = fn;
	t->seq = 0;
	t->slot = 0;
	t->level = 0;
	t->state = TIMER_IDLE;
	t->base = WHEEL_BASE_HARD;
	t->deferrable = !!(flags & WHEEL_DEFERRABLE);
}

int wheel_timer_set_flags(struct wheel_timer *t, unsigned flags)
{
	if (t->state != TIMER_IDLE)
		return -EBUSY;
	t->deferrable = !!(flags & WHEEL_DEFERRABLE);
	return 0;
}

bool wheel_timer_pending(const struct wheel_timer *t)
{
	return t->state != TIMER_IDLE;
}

uint64_t wheel_timer_expires(const struct wheel_timer *t)
{
	return t->expires;
}

/*
 * Arm or re-arm @t. ->wake is what the timer contributes to the host wake-up
 * query: ceil_tick(expires + tolerance) in the tolerant base, the (clamped)
 * key's time in the hard base, and WHEEL_NEVER in the deferred base.
 */
static hot_inline int rearm(struct wheel *w, struct wheel_timer *t,
			    uint64_t expires, uint64_t tolerance)
{
	enum wheel_base_id id = base_for(t, tolerance);
	struct wheel_base *b = &w->base[id];
	uint64_t key = ceil_key(w, expires);
	uint64_t wake = WHEEL_NEVER;
	int was_pending = t->state != TIMER_IDLE;

	if (key < w->clk)
		key = w->clk; /* already due: it runs at the next advance */
	if (id == WHEEL_BASE_TOLERANT)
		wake = key_to_ns(
			w, ceil_key(w, add_saturating(expires, tolerance)));
	else if (id == WHEEL_BASE_HARD)
		wake = key_to_ns(w, key);

	if (t->state == TIMER_IN_SLOT) {
		struct wheel_base *old = &w->base[t->base];
		unsigned level = level_of(w, key);

		note_removed(w, old, t);
		if (old == b && t->level == level &&
		    t->slot == slot_of(key, level)) {
			/*
			 * Same slot: nothing moves. Run order comes from
			 * (expires, seq), not from the place in the slot; only
			 * a sorted upper slot may stop being sorted.
			 */
			if (level && expires != t->expires)
				b->in_order[level] &= ~(1ull << t->slot);
			t->expires = expires;
			t->wake = wake;
			t->seq = w->next_seq++;
			note_armed(w, b, key, wake);
			return 1;
		}
		unslot(old, t);
	} else if (t->state == TIMER_DUE) {
		wheel_list_del(&t->link);
	} else {
		w->nr_pending[t->deferrable]++;
	}

	t->expires = expires;
	t->wake = wake;
	t->seq = w->next_seq++;
	t->base = id;
	place(w, b, t, key);
	note_armed(w, b, key, wake);
	return was_pending;
}

int wheel_add(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance)
{
	return rearm(w, t, expires, tolerance);
}

int wheel_mod(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance)
{
	return rearm(w, t, expires, tolerance);
}

int wheel_del(struct wheel *w, struct wheel_timer *t)
{
	switch (t->state) {
	case TIMER_IN_SLOT:
		note_removed(w, &w->base[t->base], t);
		unslot(&w->base[t->base], t);
		break;
	case TIMER_DUE:
		wheel_list_del(&t->link);
		break;
	default:
		return 0;
	}
	t->state = TIMER_IDLE;
	w->nr_pending[t->deferrable]--;
	return 1;
}

/*
 * Earliest key of a base. At level 0 the slot is the key. A higher slot spans
 * many keys, so its timers are sorted by expiry once (and stay sorted while
 * arms append later expiries): repeated queries after deleting the earliest
 * timer then read the new head instead of rescanning the slot.
 */
static uint64_t base_min_key(struct wheel *w, struct wheel_base *b)
{
	struct wheel_link *head;
	unsigned level, slot;

	if (b->min_key_valid)
		return b->min_key;

	b->min_key_valid = true;
	if (!b->level_mask) {
		b->min_key = WHEEL_NEVER;
		return b->min_key;
	}
	level = __builtin_ctzll(b->level_mask);
	slot = __builtin_ctzll(b->occupied[level]);
	if (!level) {
		b->min_key = slot_start(w, 0, slot);
		return b->min_key;
	}
	head = &b->slot[level][slot];
	if (!(b->in_order[level] & (1ull << slot))) {
		wheel_list_sort(head);
		b->in_order[level] |= 1ull << slot;
	}
	b->min_key = timer_key(w, wheel_timer_of(head->next));
	return b->min_key;
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
			struct wheel_link *head = &b->slot[level][slot], *l;

			if (key_to_ns(w, slot_start(w, level, slot)) >= best)
				goto done;
			for (l = head->next; l != head; l = l->next)
				best = min_u64(best, wheel_timer_of(l)->wake);
		}
	}
done:
	b->min_wake = best;
	b->min_wake_valid = true;
	return best;
}

uint64_t wheel_next_hard_expiry(struct wheel *w)
{
	if (!w->next_hard_valid) {
		struct wheel_base *hard = &w->base[WHEEL_BASE_HARD];
		struct wheel_base *tolerant = &w->base[WHEEL_BASE_TOLERANT];

		w->next_hard = min_u64(key_to_ns(w, base_min_key(w, hard)),
				       base_min_wake(w, tolerant));
		w->next_hard_valid = true;
	}
	return w->next_hard > w->now ? w->next_hard : w->now;
}

uint64_t wheel_next_expiry(struct wheel *w)
{
	uint64_t key = WHEEL_NEVER, next;
	unsigned i;

	for (i = 0; i < WHEEL_NR_BASES; i++)
		key = min_u64(key, base_min_key(w, &w->base[i]));
	next = key_to_ns(w, key);
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

/* Move level 0's slot for key w->clk to the due list. */
static void collect_due(struct wheel *w, struct wheel_base *b)
{
	unsigned slot = w->clk & SLOT_MASK;
	struct wheel_link *head = &b->slot[0][slot], *l;

	for (l = head->next; l != head; l = l->next)
		wheel_timer_of(l)->state = TIMER_DUE;
	wheel_list_splice_tail(head, &w->due);
	b->occupied[0] &= ~(1ull << slot);
	if (!b->occupied[0])
		b->level_mask &= ~1ull;
	b->min_key_valid = false;
	b->min_wake_valid = false;
	w->next_hard_valid = false;
}

/* The clock reached the first key of a @level slot: place its timers again. */
static void cascade(struct wheel *w, struct wheel_base *b, unsigned level)
{
	unsigned slot = slot_of(w->clk, level);
	struct wheel_link list, *l, *next;

	wheel_list_init(&list);
	wheel_list_splice_tail(&b->slot[level][slot], &list);
	b->occupied[level] &= ~(1ull << slot);
	if (!b->occupied[level])
		b->level_mask &= ~(1ull << level);
	for (l = list.next; l != &list; l = next) {
		struct wheel_timer *t = wheel_timer_of(l);

		next = l->next;
		place(w, b, t, timer_key(w, t));
	}
}

unsigned wheel_advance(struct wheel *w, uint64_t now)
{
	uint64_t target = now >> w->tick_shift;
	unsigned ran = 0;

	if (now < w->now) {
		w->stat_backwards++;
		return 0;
	}
	w->now = now;

	for (;;) {
		uint64_t event[WHEEL_NR_BASES], first = WHEEL_NEVER;
		unsigned level[WHEEL_NR_BASES], i;

		for (i = 0; i < WHEEL_NR_BASES; i++) {
			event[i] = base_next_event(w, &w->base[i], &level[i]);
			first = min_u64(first, event[i]);
		}
		if (first > target)
			break;
		w->clk = first;
		for (i = 0; i < WHEEL_NR_BASES; i++) {
			if (event[i] != first)
				continue;
			if (level[i])
				cascade(w, &w->base[i], level[i]);
			else
				collect_due(w, &w->base[i]);
		}
	}
	/* No slot starts in (clk, target]: every placement stays valid. */
	w->clk = target;

	wheel_list_sort(&w->due);
	while (!wheel_list_empty(&w->due)) {
		struct wheel_timer *t = wheel_timer_of(w->due.next);

		wheel_list_del(&t->link);
		t->state = TIMER_IDLE;
		w->nr_pending[t->deferrable]--;
		if (t->deferrable)
			w->stat_fired_deferrable++;
		else
			w->stat_fired_hard++;
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
