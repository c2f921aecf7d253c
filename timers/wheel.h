/* SPDX-License-Identifier: MIT */
/*
 * wheel: a per-vCPU hierarchical timer wheel with deferrable timers.
 *
 * Contract (docs/timers.md has the long version):
 *  - Time is absolute ns (uint64, monotonic). A wheel has a tick of 2^k ns
 *    (k = tick_shift, default 10). Expiries are rounded UP to the tick: a
 *    timer runs at the first wheel_advance(now) with
 *    now >= ceil_tick(expires), i.e. never early and less than one tick late
 *    relative to that advance. Due timers run in (expires, arm order) order.
 *  - Timers are caller-owned and intrusive: nothing here allocates.
 *  - Hard timer, tolerance = slack: the host may sleep until
 *    ceil_tick(expires + slack); everything due by then runs together.
 *    Deferrable timer, tolerance = max_defer: 0 never wakes the host;
 *    otherwise it wakes the host by ceil_tick(expires + max_defer).
 *  - wheel_next_hard_expiry() = max(wheel_now, min over hard and bounded
 *    deferrable timers of ceil_tick(expires + tolerance)); it never looks at
 *    unbounded deferrable timers. wheel_next_expiry() = max(wheel_now,
 *    min over all timers of ceil_tick(expires)). Sums saturate at
 *    WHEEL_NEVER; an expiry whose ceil_tick is past UINT64_MAX never runs.
 *  - Timers armed from a callback never run in the advance that called it
 *    (so a periodic timer re-armed in the past cannot loop forever); a
 *    pending timer deleted or re-armed by a callback does not run either.
 *    A callback may add, modify and delete any timer, but must not call
 *    wheel_advance.
 *  - Not thread-safe: one wheel belongs to one vCPU thread. A wheel and its
 *    pending timers must not be moved in memory (they hold list pointers).
 *
 * Geometry: 64 slots per level; level L holds keys whose highest bit that
 * differs from the wheel clock (both in ticks) lies in bits 6L..6L+5. When
 * an advance passes a whole slot its timers run from there; when it stops
 * inside one, the slot is cascaded a level down. That keeps every hard
 * timer exact to the tick. With the default tick (1024 ns):
 *
 * Level  Slot width                 Level spans (64 slots)
 *  0     1 tick     =  1.024 us      65.5 us
 *  1     64 ticks   =  65.5 us       4.19 ms
 *  2     2^12 ticks =  4.19 ms        268 ms
 *  3     2^18 ticks =   268 ms       17.2 s
 *  4     2^24 ticks =  17.2 s        18.3 min
 *  5     2^30 ticks =  18.3 min      19.5 h
 *  6     2^36 ticks =  19.5 h          52 days
 *  7     2^42 ticks =    52 days      9.1 years
 *  8     2^48 ticks =   9.1 years     584 years
 *  9     2^54 ticks: only the saturated key (expiry past UINT64_MAX)
 * 10     used only when tick_shift < 4
 *
 * Slot width is how coarsely a timer waits, not how late it runs: a slot
 * runs only once the clock has passed all of it, and one the clock stops in
 * is split finer, down to one-tick slots.
 */
#ifndef LULL_TIMERS_WHEEL_H
#define LULL_TIMERS_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WHEEL_NEVER UINT64_MAX
#define WHEEL_DEFERRABLE 0x1u /* timer flag; absence = hard */

#define WHEEL_DEFAULT_TICK_SHIFT 10
#define WHEEL_MAX_TICK_SHIFT 30 /* larger tick_shift values are clamped */
#define WHEEL_LVL_BITS 6
#define WHEEL_SLOTS (1u << WHEEL_LVL_BITS)
#define WHEEL_LEVELS 11 /* 11 * 6 bits >= 64 bits of key: no overflow list */

struct wheel_timer;
typedef void (*wheel_timer_fn)(struct wheel_timer *t, uint64_t now);

/*
 * Slot lists are hlist-style: a slot head is one pointer and a timer points
 * back at whatever points at it, so linking at the head and unlinking never
 * touch anything but the timer, the head and one neighbour.
 */
struct wheel_link {
	struct wheel_link *next, **pprev;
};

/* Embed in your own struct; initialize with wheel_timer_init(). */
struct wheel_timer {
	/*
	 * Field order is about cache lines: in an array of 48-byte timers
	 * (16-byte aligned), 16 bytes at a 16-byte offset never straddle two
	 * lines and 32 bytes straddle for one timer in four. Walking a slot
	 * reads ->expires and ->link.next: the first 16 bytes, always one line.
	 * Modifying and deleting touch only the first 32 bytes; arming also
	 * writes ->wake or ->ahead.
	 */
	uint64_t expires; /* absolute ns, as passed */
	struct wheel_link link;
	/*
	 * Private, one word so the timer stays at 48 bytes: state, base, the
	 * deferrable flag and a 48-bit arm sequence (breaks ties between equal
	 * expiries). timers/wheel_internal.h has the layout.
	 */
	uint64_t priv;
	union {
		/* Tolerant base: ceil_tick(expires + tolerance), its wake. */
		uint64_t wake;
		/*
		 * Other bases: the node two ahead in the slot list when this
		 * one was linked, which cascades and the sort of a coarse slot
		 * prefetch. Never followed: it goes stale when nodes move.
		 */
		struct wheel_link *ahead;
	};
	wheel_timer_fn fn;
};

/*
 * A wheel holds three hierarchical wheels ("bases") over one clock, so the
 * wake-up query never walks a timer that cannot wake the host.
 */
enum wheel_base_id {
	WHEEL_BASE_HARD, /* hard, zero slack: min is a bit scan */
	WHEEL_BASE_DEFERRED, /* deferrable, unbounded: never wakes the host */
	WHEEL_BASE_TOLERANT, /* hard with slack, or bounded deferrable */
	WHEEL_NR_BASES,
};

#define WHEEL_BASE_SLOTS (WHEEL_LEVELS * WHEEL_SLOTS)

struct wheel {
	/* Read or written by every arm: kept together at the front. */
	uint64_t clk; /* ticks: every key < clk has run; slot clk is due */
	uint64_t tick_mask; /* tick - 1 */
	unsigned tick_shift;
	bool next_hard_valid;
	uint64_t seq; /* the next arm's sequence, in place in ->priv */
	uint64_t next_hard; /* cached min ->wake of hard + tolerant bases */
	size_t nr_pending[2]; /* [0] hard, [1] deferrable */
	/* Per base: the one slot known sorted by key, or none (UINT32_MAX). */
	uint32_t sorted[WHEEL_NR_BASES];
	uint64_t now; /* the latest time passed to wheel_advance/wheel_init */
	struct wheel_link *due; /* timers the running advance will still run */
	uint64_t stat_backwards; /* advances to a time before wheel_now() */
	uint64_t stat_fired_hard;
	uint64_t stat_fired_deferrable;
	/* Per base: bit L set when some slot of level L is occupied. */
	uint64_t level_mask[WHEEL_NR_BASES];
	/* [base * WHEEL_LEVELS + level]: bit s set when slot s is occupied. */
	uint64_t occupied[WHEEL_NR_BASES * WHEEL_LEVELS];
	/* [base * WHEEL_BASE_SLOTS + level * 64 + s] */
	struct wheel_link *slot[WHEEL_NR_BASES * WHEEL_BASE_SLOTS];
};

void wheel_init(struct wheel *w, uint64_t now, unsigned tick_shift);
void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, unsigned flags);
int wheel_timer_set_flags(struct wheel_timer *t, unsigned flags);
bool wheel_timer_pending(const struct wheel_timer *t);
uint64_t wheel_timer_expires(const struct wheel_timer *t);
/* When an advance first runs t, hard and pending: ceil_tick(expires);
 * WHEEL_NEVER for a deferrable timer or one not pending. */
uint64_t wheel_timer_hard_due(const struct wheel *w,
			      const struct wheel_timer *t);

int wheel_add(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance);
int wheel_mod(struct wheel *w, struct wheel_timer *t, uint64_t expires,
	      uint64_t tolerance);
int wheel_del(struct wheel *w, struct wheel_timer *t);

uint64_t wheel_next_hard_expiry(struct wheel *w);
uint64_t wheel_next_expiry(struct wheel *w);
unsigned wheel_advance(struct wheel *w, uint64_t now);

size_t wheel_pending(const struct wheel *w, unsigned kind);
uint64_t wheel_now(const struct wheel *w);

#endif /* LULL_TIMERS_WHEEL_H */
