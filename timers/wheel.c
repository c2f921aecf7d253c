// SPDX-License-Identifier: MIT
/*
 * The timer wheel: arming, modifying and deleting timers, and the two
 * wake-up queries. wheel.h has the contract and the geometry,
 * wheel_advance.c moves the clock, docs/timers.md explains the choices.
 *
 * Keys are ticks: key = ceil(expires / tick). A timer with key K sits at the
 * level of the highest bit in which K and the clock differ, in the slot given
 * by K's bits of that level. So a level-0 slot holds exactly one key, and a
 * slot of level L >= 1 is cascaded (its timers placed again) or, if the
 * clock passes all of it at once, collected whole. Every pending key is
 * >= clk.
 *
 * The hot paths (arming an idle timer with no tolerance, deleting, modifying
 * within a tick) touch the timer, its slot head and one neighbour, and keep
 * the cached wake-up time with a conditional store or a compare: the query
 * stays O(1) while nothing that could be the minimum moves.
 */
#include <assert.h>
#include <errno.h>

#include "timers/wheel.h"
#include "timers/wheel_internal.h"

static_assert(sizeof(struct wheel_timer) <= 48,
	      "a timer must fit in 48 bytes (it is embedded per guest timer)");
static_assert(WHEEL_BASE_HARD == 0 && WHEEL_BASE_DEFERRED == 1,
	      "the deferrable bit picks the base of a timer without tolerance");
static_assert(PRIV_DEFERRABLE >> 2 == (uint64_t)WHEEL_BASE_DEFERRED
					      << PRIV_BASE_SHIFT,
	      "the flag bit shifted down is the base bits");

/*
 * A coarse slot with at most this many timers is scanned for its earliest
 * key rather than sorted: sorting them too makes the recompute ~1.4x
 * slower at N <= 10^3.
 */
#define SCAN_MAX 4

static hot_inline uint64_t add_saturating(uint64_t a, uint64_t b)
{
	return a > WHEEL_NEVER - b ? WHEEL_NEVER : a + b;
}

static hot_inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ceil_tick(@ns): the start of its key, WHEEL_NEVER past the last tick. */
static hot_inline uint64_t ceil_tick(const struct wheel *w, uint64_t ns)
{
	uint64_t sum;

	if (__builtin_add_overflow(ns, w->tick_mask, &sum))
		return WHEEL_NEVER;
	return sum & ~w->tick_mask;
}

void wheel_init(struct wheel *w, uint64_t now, unsigned tick_shift)
{
	size_t i;

	if (!tick_shift)
		tick_shift = WHEEL_DEFAULT_TICK_SHIFT;
	if (tick_shift > WHEEL_MAX_TICK_SHIFT)
		tick_shift = WHEEL_MAX_TICK_SHIFT;
	w->tick_shift = tick_shift;
	w->tick_mask = (1ull << tick_shift) - 1;
	w->clk = now >> tick_shift;
	w->now = now;
	w->seq = 0;
	w->next_hard = WHEEL_NEVER;
	w->next_hard_valid = true;
	w->nr_pending[0] = 0;
	w->nr_pending[1] = 0;
	w->due = NULL;
	w->stat_backwards = 0;
	w->stat_fired_hard = 0;
	w->stat_fired_deferrable = 0;
	for (i = 0; i < WHEEL_NR_BASES; i++) {
		w->level_mask[i] = 0;
		w->sorted[i] = NO_SLOT;
	}
	for (i = 0; i < WHEEL_NR_BASES * WHEEL_LEVELS; i++)
		w->occupied[i] = 0;
	for (i = 0; i < WHEEL_NR_BASES * WHEEL_BASE_SLOTS; i++)
		w->slot[i] = NULL;
}

void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, unsigned flags)
{
	t->link.next = NULL;
	t->link.pprev = NULL;
	t->expires = 0;
	t->wake = WHEEL_NEVER;
	t->fn = fn;
	t->priv = TIMER_IDLE | (flags & WHEEL_DEFERRABLE ? PRIV_DEFERRABLE : 0);
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

uint64_t wheel_timer_hard_due(const struct wheel *w,
			      const struct wheel_timer *t)
{
	if (!wheel_timer_pending(t) || (t->priv & PRIV_DEFERRABLE))
		return WHEEL_NEVER;
	return ceil_tick(w, t->expires);
}

void wheel_slot_emptied(struct wheel *w, size_t g)
{
	unsigned word = g / WHEEL_SLOTS, base = word / WHEEL_LEVELS;

	w->occupied[word] &= ~(1ull << (g & SLOT_MASK));
	if (!w->occupied[word])
		w->level_mask[base] &= ~(1ull << (word - base * WHEEL_LEVELS));
	if (w->sorted[base] == g)
		w->sorted[base] = NO_SLOT;
}

/*
 * Take a pending @t off its slot or the due list. The cached next_hard is
 * dropped only if @t could have held it: next_hard is a multiple of the
 * tick and no earlier than the expiry of the timer whose wake it is (a
 * wake is ceil_tick(expires [+ tolerance])), so that timer has expires <=
 * next_hard. Others may pass the test too (an expiry in the past, a
 * deferrable timer): conservative, never wrong, and a delete reads no
 * field but the expiry.
 */
static hot_inline void unlink_pending(struct wheel *w, struct wheel_timer *t)
{
	struct wheel_link *next = t->link.next, **pprev = t->link.pprev;

	*pprev = next;
	if (next)
		next->pprev = pprev;
	else if ((uintptr_t)pprev - (uintptr_t)w->slot < sizeof(w->slot))
		wheel_slot_emptied(w, pprev - w->slot);
	if (unlikely(t->expires <= w->next_hard))
		w->next_hard_valid = false;
}

/*
 * Arm @t, idle or just unlinked, in base @base with key @key (>= clk):
 * the whole priv word is written at once.
 */
static hot_inline void arm(struct wheel *w, struct wheel_timer *t,
			   unsigned base, uint64_t key, uint64_t expires,
			   uint64_t wake)
{
	unsigned idx = wheel_slot_index(key, w->clk);
	size_t g = base * WHEEL_BASE_SLOTS + idx;

	/*
	 * A conditional store, not a min: most arms do not lower it, and a
	 * load-compare-store on every arm would chain each arm to the
	 * previous one through memory.
	 */
	if (unlikely(wake < w->next_hard))
		w->next_hard = wake;
	t->expires = expires;
	if (base == WHEEL_BASE_TOLERANT)
		t->wake = wake;
	t->priv = (t->priv & PRIV_DEFERRABLE) |
		  (uint64_t)base << PRIV_BASE_SHIFT | TIMER_IN_SLOT | w->seq;
	w->seq += PRIV_SEQ_ONE;
	/* A timer added to the sorted slot may be out of order there. */
	if (unlikely(g == w->sorted[base]))
		w->sorted[base] = NO_SLOT;
	wheel_slot_link(w, base, g, idx, &t->link);
}

static hot_inline unsigned base_for(bool deferrable, uint64_t tolerance)
{
	if (tolerance)
		return WHEEL_BASE_TOLERANT;
	return deferrable ? WHEEL_BASE_DEFERRED : WHEEL_BASE_HARD;
}

/*
 * Everything but arming an idle timer without tolerance: re-arming a
 * pending or due timer, a tolerance, an expiry in the last tick of time.
 * Returns 1 if @t was pending. noinline: inlined, its register saves land
 * on wheel_add's hot case too (add ~18% slower at every N up to 10^4).
 */
static __attribute__((noinline)) int rearm(struct wheel *w,
					   struct wheel_timer *t,
					   uint64_t expires, uint64_t tolerance)
{
	bool deferrable = t->priv & PRIV_DEFERRABLE;
	unsigned base = base_for(deferrable, tolerance);
	uint64_t key = wheel_key_of(expires, w->tick_shift), wake;
	int was_pending = timer_state(t) != TIMER_IDLE;

	if (was_pending)
		unlink_pending(w, t);
	else
		w->nr_pending[deferrable]++;
	if (key < w->clk)
		key = w->clk; /* already due: it runs at the next advance */
	if (base == WHEEL_BASE_HARD)
		wake = wheel_key_ns(w, key);
	else if (base == WHEEL_BASE_DEFERRED)
		wake = WHEEL_NEVER;
	else
		wake = ceil_tick(w, add_saturating(expires, tolerance));
	arm(w, t, base, key, expires, wake);
	return was_pending;
}

/*
 * The hot case, arming an idle timer without tolerance, is written out so
 * that it compiles to straight-line code: ceil(expires / tick) is one add
 * and a shift, the add's carry sending the last tick of time to rearm(),
 * and the deferrable bit, spread to a mask, picks the base, the priv bits
 * and the wake without a branch. A hard timer's wake is not stored: only
 * the tolerant base reads ->wake. Through arm() add is ~10% slower, through
 * rearm() ~40%, at every N up to 10^4.
 */
int wheel_add(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance)
{
	uint64_t priv = t->priv, sum, key, wake, deferrable, mask;
	unsigned idx;
	size_t g;

	if (unlikely((priv & PRIV_STATE_MASK) | tolerance) ||
	    unlikely(__builtin_add_overflow(expires, w->tick_mask, &sum)))
		return rearm(w, t, expires, tolerance);
	key = sum >> w->tick_shift;
	if (unlikely(key < w->clk))
		key = w->clk; /* already due: it runs at the next advance */
	deferrable = (priv >> PRIV_DEFERRABLE_SHIFT) & 1;
	mask = -deferrable;
	wake = key << w->tick_shift | mask; /* WHEEL_NEVER if deferrable */
	if (unlikely(wake < w->next_hard))
		w->next_hard = wake;
	w->nr_pending[deferrable]++;
	t->expires = expires;
	t->priv = (mask & (PRIV_DEFERRABLE | (uint64_t)WHEEL_BASE_DEFERRED
						     << PRIV_BASE_SHIFT)) |
		  TIMER_IN_SLOT | w->seq;
	w->seq += PRIV_SEQ_ONE;
	idx = wheel_slot_index(key, w->clk);
	g = (mask & WHEEL_BASE_SLOTS) + idx;
	if (unlikely(g == w->sorted[deferrable]))
		w->sorted[deferrable] = NO_SLOT;
	wheel_slot_link(w, deferrable, g, idx, &t->link);
	return 0;
}

/*
 * The hot case of a modify: another expiry in the same tick with no
 * tolerance, so the same key, slot and wake: only the expiry and the arm
 * order change. (The base cannot change: the flag is fixed while pending.)
 * A delete and an add instead make mod_same ~2.4x slower.
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

	if (likely((priv & (PRIV_STATE_MASK | PRIV_TOLERANT)) ==
			   TIMER_IN_SLOT &&
		   !tolerance && !((x ^ y) >> shift) && (~x >> shift))) {
		t->expires = expires;
		t->priv = (priv & ~PRIV_SEQ_MASK) | w->seq;
		w->seq += PRIV_SEQ_ONE;
		return 1;
	}
	return wheel_add(w, t, expires, tolerance);
}

int wheel_del(struct wheel *w, struct wheel_timer *t)
{
	uint64_t priv = t->priv;

	if (!(priv & PRIV_STATE_MASK))
		return 0;
	unlink_pending(w, t);
	t->priv = priv & ~PRIV_STATE_MASK; /* TIMER_IDLE */
	w->nr_pending[(priv >> PRIV_DEFERRABLE_SHIFT) & 1]--;
	return 1;
}

/*
 * ceil_tick of the earliest expiry in coarse slot @g (at @level of @base),
 * known not to be sorted: a few timers are scanned, more are sorted by key
 * once and the slot remembered as sorted.
 */
static uint64_t coarse_slot_min_at(struct wheel *w, unsigned base,
				   unsigned level, size_t g)
{
	struct wheel_link **head = &w->slot[g], *l;
	uint64_t best = WHEEL_NEVER;
	size_t n = 0;

	for (l = *head; l; l = l->next, n++) {
		wheel_prefetch_ahead(l);
		best = min_u64(best, wheel_timer_of(l)->expires);
	}
	if (n <= SCAN_MAX)
		return ceil_tick(w, best);
	wheel_slot_sort(head, w->tick_shift, level * WHEEL_LVL_BITS, n);
	w->sorted[base] = g;
	return ceil_tick(w, best);
}

/*
 * Earliest ceil_tick(expires) of @base, or WHEEL_NEVER. Every key of a
 * lower level is below every key of a higher one, and slots of a level are
 * in key order, so the answer is in the first occupied slot of the lowest
 * occupied level. At level 0 the slot is the key. A coarse slot is read
 * through coarse_slot_min_at() until it is sorted; then deleting its
 * earliest timer and asking again reads the new first node.
 */
static hot_inline uint64_t base_min_at(struct wheel *w, unsigned base)
{
	unsigned level, slot;
	size_t g;

	if (!w->level_mask[base])
		return WHEEL_NEVER;
	level = __builtin_ctzll(w->level_mask[base]);
	slot = __builtin_ctzll(w->occupied[base * WHEEL_LEVELS + level]);
	if (!level)
		return wheel_slot_start(w->clk, 0, slot) << w->tick_shift;
	g = base * WHEEL_BASE_SLOTS + level * WHEEL_SLOTS + slot;
	if (w->sorted[base] == g)
		return ceil_tick(w, wheel_timer_of(w->slot[g])->expires);
	return coarse_slot_min_at(w, base, level, g);
}

/*
 * Earliest wake of the tolerant base: its timers are keyed by expiry, and a
 * wake is never before its slot's start, so walk slots in time order and
 * stop at the first slot that starts at or after the best wake found.
 */
static uint64_t tolerant_min_wake(struct wheel *w)
{
	const unsigned base = WHEEL_BASE_TOLERANT;
	uint64_t levels, slots, best = WHEEL_NEVER;

	for (levels = w->level_mask[base]; levels; levels &= levels - 1) {
		unsigned level = __builtin_ctzll(levels);

		for (slots = w->occupied[base * WHEEL_LEVELS + level]; slots;
		     slots &= slots - 1) {
			unsigned slot = __builtin_ctzll(slots);
			size_t g = base * WHEEL_BASE_SLOTS +
				   level * WHEEL_SLOTS + slot;
			struct wheel_link *l;

			if (wheel_key_ns(w, wheel_slot_start(w->clk, level,
							     slot)) >= best)
				return best;
			for (l = w->slot[g]; l; l = l->next)
				best = min_u64(best, wheel_timer_of(l)->wake);
		}
	}
	return best;
}

/*
 * Refill the cache. noinline: inlined, its register saves land on the
 * cached query too (~1.4x slower in wheel-bench, N <= 10^4).
 */
static __attribute__((noinline)) uint64_t next_hard_recompute(struct wheel *w)
{
	uint64_t next = base_min_at(w, WHEEL_BASE_HARD);

	if (w->level_mask[WHEEL_BASE_TOLERANT])
		next = min_u64(next, tolerant_min_wake(w));
	w->next_hard = next;
	w->next_hard_valid = true;
	return next;
}

uint64_t wheel_next_hard_expiry(struct wheel *w)
{
	uint64_t next =
		w->next_hard_valid ? w->next_hard : next_hard_recompute(w);

	return next > w->now ? next : w->now;
}

/*
 * Not cached: the VMM asks once per guest entry, where a few bit scans do
 * not show, and keeping it would cost every arm and delete a compare.
 */
uint64_t wheel_next_expiry(struct wheel *w)
{
	uint64_t next = WHEEL_NEVER;
	unsigned i;

	for (i = 0; i < WHEEL_NR_BASES; i++)
		next = min_u64(next, base_min_at(w, i));
	return next > w->now ? next : w->now;
}

size_t wheel_pending(const struct wheel *w, unsigned kind)
{
	return w->nr_pending[!!(kind & WHEEL_DEFERRABLE)];
}

uint64_t wheel_now(const struct wheel *w)
{
	return w->now;
}
