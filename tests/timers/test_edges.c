// SPDX-License-Identifier: MIT
/*
 * Edge cases of the wheel, one behaviour per test: tick, slot and level
 * boundaries, saturation, callbacks that change the wheel, and bad input.
 * The default tick is 1024 ns (tick_shift 10) unless a test says otherwise.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "timers/wheel.h"

#define TICK 1024ull
#define MAX_LOG 64

struct probe {
	struct wheel_timer t; /* first: callbacks cast back to the probe */
	struct fixture *f;
	int id;
	uint64_t expires_seen; /* wheel_timer_expires() inside the callback */
	uint64_t now_seen;
	unsigned runs;
	void (*then)(struct probe *p, uint64_t now); /* extra callback work */
	struct probe *other;
	uint64_t period;
};

struct fixture {
	struct wheel w;
	int log[MAX_LOG];
	unsigned nr_log;
};

static void on_expiry(struct wheel_timer *t, uint64_t now)
{
	struct probe *p = (struct probe *)t;

	p->expires_seen = wheel_timer_expires(t);
	p->now_seen = now;
	p->runs++;
	if (p->f->nr_log < MAX_LOG)
		p->f->log[p->f->nr_log++] = p->id;
	if (p->then)
		p->then(p, now);
}

static struct fixture *fixture_new(uint64_t now, unsigned tick_shift)
{
	struct fixture *f = calloc(1, sizeof(*f));

	cr_assert_not_null(f);
	wheel_init(&f->w, now, tick_shift);
	return f;
}

static void probe_init(struct probe *p, struct fixture *f, int id,
		       unsigned flags)
{
	*p = (struct probe){ .f = f, .id = id };
	wheel_timer_init(&p->t, on_expiry, flags);
}

Test(timers_edges, expiry_rounds_up_to_the_tick)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe on, off;

	probe_init(&on, f, 1, 0);
	probe_init(&off, f, 2, 0);
	wheel_add(&f->w, &on.t, 5 * TICK, 0);
	wheel_add(&f->w, &off.t, 5 * TICK + 1, 0);

	cr_assert_eq(wheel_next_hard_expiry(&f->w), 5 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 5 * TICK - 1), 0);
	cr_assert_eq(wheel_advance(&f->w, 5 * TICK), 1);
	cr_assert_eq(on.runs, 1);
	/* 5 ticks + 1 ns waits for the tick boundary after it. */
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 6 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 6 * TICK - 1), 0);
	cr_assert_eq(wheel_advance(&f->w, 6 * TICK), 1);
	cr_assert_eq(off.now_seen, 6 * TICK);
	free(f);
}

/* Timers on both sides of every slot and level boundary run exactly then. */
Test(timers_edges, level_boundaries_are_exact)
{
	for (unsigned level = 1; level <= 8; level++) {
		uint64_t boundary = 1ull << (6 * level); /* in ticks */
		struct fixture *f = fixture_new(0, 0);
		struct probe p[3];

		for (int i = 0; i < 3; i++) {
			probe_init(&p[i], f, i, i == 1 ? WHEEL_DEFERRABLE : 0);
			wheel_add(&f->w, &p[i].t, (boundary - 1 + i) * TICK, 0);
		}
		/* Jump close, then walk tick by tick across the boundary. */
		cr_assert_eq(wheel_advance(&f->w, (boundary - 2) * TICK), 0);
		for (int i = 0; i < 3; i++) {
			uint64_t at = (boundary - 1 + i) * TICK;

			cr_assert_eq(wheel_next_expiry(&f->w), at,
				     "level %u timer %d", level, i);
			cr_assert_eq(wheel_advance(&f->w, at - 1), 0);
			cr_assert_eq(wheel_advance(&f->w, at), 1,
				     "level %u timer %d", level, i);
			cr_assert_eq(p[i].now_seen, at);
		}
		free(f);
	}
}

/* A far timer cascades down through every level and still runs on time. */
Test(timers_edges, cascade_keeps_far_timer_exact)
{
	struct fixture *f = fixture_new(777, 0);
	uint64_t at = 777 + (((1ull << 31) + 12345) * TICK) + 3;
	uint64_t due = (at / TICK + 1) * TICK;
	struct probe p;

	probe_init(&p, f, 1, 0);
	wheel_add(&f->w, &p.t, at, 0);
	for (uint64_t now = 777; now + (TICK << 20) < due;
	     now += (TICK << 20) + 17) {
		cr_assert_eq(wheel_advance(&f->w, now), 0);
		cr_assert_eq(wheel_next_hard_expiry(&f->w), due);
	}
	cr_assert_eq(wheel_advance(&f->w, due - 1), 0);
	cr_assert_eq(wheel_advance(&f->w, due), 1);
	free(f);
}

Test(timers_edges, expiry_zero_runs_at_next_advance)
{
	struct fixture *f = fixture_new(5000, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	wheel_add(&f->w, &p.t, 0, 0);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 5000);
	cr_assert_eq(wheel_next_expiry(&f->w), 5000);
	/* Even an advance to the same time runs it. */
	cr_assert_eq(wheel_advance(&f->w, 5000), 1);
	cr_assert_eq(p.expires_seen, 0);
	free(f);
}

Test(timers_edges, expiry_never_and_saturation)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe never, last, tolerant;
	uint64_t last_tick = UINT64_MAX - (TICK - 1); /* 2^64 - 1024 */

	probe_init(&never, f, 1, 0);
	probe_init(&last, f, 2, 0);
	probe_init(&tolerant, f, 3, 0);
	/* No tick starts at or after UINT64_MAX: this one never runs. */
	wheel_add(&f->w, &never.t, WHEEL_NEVER, 0);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), WHEEL_NEVER);
	cr_assert_eq(wheel_next_expiry(&f->w), WHEEL_NEVER);
	cr_assert(wheel_timer_pending(&never.t));

	/* expires + slack saturates; the expiry itself still counts. */
	wheel_add(&f->w, &tolerant.t, 1ull << 62, UINT64_MAX);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), WHEEL_NEVER);
	cr_assert_eq(wheel_next_expiry(&f->w), 1ull << 62);

	wheel_add(&f->w, &last.t, last_tick, 0);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), last_tick);
	cr_assert_eq(wheel_advance(&f->w, last_tick - 1), 1); /* tolerant */
	cr_assert_eq(wheel_advance(&f->w, UINT64_MAX), 1);
	cr_assert_eq(last.runs, 1);
	cr_assert_eq(never.runs, 0);
	cr_assert(wheel_timer_pending(&never.t));
	cr_assert_eq(wheel_del(&f->w, &never.t), 1);
	free(f);
}

Test(timers_edges, deferrable_unbounded_never_wakes_the_host)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe d;

	probe_init(&d, f, 1, WHEEL_DEFERRABLE);
	wheel_add(&f->w, &d.t, 10 * TICK, 0);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), WHEEL_NEVER);
	cr_assert_eq(wheel_next_expiry(&f->w), 10 * TICK);
	cr_assert_eq(wheel_pending(&f->w, WHEEL_DEFERRABLE), 1);
	cr_assert_eq(wheel_pending(&f->w, 0), 0);
	/* A late wake (for any other reason) runs it. */
	cr_assert_eq(wheel_advance(&f->w, 1000 * TICK), 1);
	cr_assert_eq(d.now_seen, 1000 * TICK);
	free(f);
}

Test(timers_edges, tolerances_set_the_wakeup)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe a, b, d;

	probe_init(&a, f, 1, 0);
	probe_init(&b, f, 2, 0);
	probe_init(&d, f, 3, WHEEL_DEFERRABLE);
	/* 100 us and 130 us with 50 us slack: one wake at 150 us, rounded up
	 * to the tick, runs both. */
	wheel_add(&f->w, &a.t, 100000, 50000);
	wheel_add(&f->w, &b.t, 130000, 50000);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 147 * TICK); /* >=150000 */
	cr_assert_eq(wheel_next_expiry(&f->w), 98 * TICK); /* >= 100000 */
	/* A bounded deferrable timer wakes the host by expires + max_defer. */
	wheel_add(&f->w, &d.t, 90000, 20000);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 108 * TICK); /* 110000 */
	cr_assert_eq(wheel_del(&f->w, &d.t), 1);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 147 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 147 * TICK), 2);
	cr_assert_eq(f->log[0], 1);
	cr_assert_eq(f->log[1], 2);
	free(f);
}

/* One timer's own due time: its expiry to the tick, not its tolerance. */
Test(timers_edges, hard_due_is_the_tick_a_hard_timer_runs_at)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe a, d;

	probe_init(&a, f, 1, 0);
	probe_init(&d, f, 2, WHEEL_DEFERRABLE);
	cr_assert_eq(wheel_timer_hard_due(&f->w, &a.t), WHEEL_NEVER,
		     "not pending");
	wheel_add(&f->w, &a.t, 100000, 50000);
	wheel_add(&f->w, &d.t, 90000, 20000);
	cr_assert_eq(wheel_timer_hard_due(&f->w, &a.t), 98 * TICK);
	cr_assert_eq(wheel_timer_hard_due(&f->w, &d.t), WHEEL_NEVER,
		     "deferrable");
	cr_assert_eq(wheel_advance(&f->w, 98 * TICK - 1), 1, "d only");
	cr_assert_eq(wheel_advance(&f->w, 98 * TICK), 1, "a, at its due");
	cr_assert_eq(wheel_timer_hard_due(&f->w, &a.t), WHEEL_NEVER, "ran");
	free(f);
}

Test(timers_edges, equal_expiries_run_in_arm_order_across_kinds)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p[4];

	probe_init(&p[0], f, 0, 0);
	probe_init(&p[1], f, 1, WHEEL_DEFERRABLE);
	probe_init(&p[2], f, 2, 0);
	probe_init(&p[3], f, 3, 0);
	wheel_add(&f->w, &p[3].t, 999, 0); /* earlier expiry, armed first */
	wheel_add(&f->w, &p[0].t, 1000, 0);
	wheel_add(&f->w, &p[1].t, 1000, 0);
	wheel_add(&f->w, &p[2].t, 1000, 7); /* tolerant base */
	wheel_add(&f->w, &p[3].t, 1000, 0); /* re-armed: now the last */
	wheel_add(&f->w, &p[0].t, 1000, 0); /* re-armed after 3 */
	cr_assert_eq(wheel_advance(&f->w, 1024), 4);
	cr_assert_arr_eq(f->log, ((int[]){ 1, 2, 3, 0 }), 4 * sizeof(int));
	free(f);
}

/*
 * The arm sequence is 48 bits wide and wraps: timers armed just before and
 * just after the wrap, with equal expiries, still run in arm order (it is
 * compared as a distance, not as a number).
 */
Test(timers_edges, equal_expiries_run_in_arm_order_across_seq_wrap)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p[4];
	int i;

	f->w.seq = ((1ull << 48) - 2) << 16; /* the counter is kept in place */
	for (i = 0; i < 4; i++) {
		probe_init(&p[i], f, i, i == 2 ? WHEEL_DEFERRABLE : 0);
		wheel_add(&f->w, &p[i].t, 5000, 0);
	}
	wheel_mod(&f->w, &p[0].t, 5000, 0); /* re-armed after the wrap */
	cr_assert_eq(wheel_advance(&f->w, 5 * TICK), 4);
	cr_assert_arr_eq(f->log, ((int[]){ 1, 2, 3, 0 }), 4 * sizeof(int));
	free(f);
}

/*
 * Expiry 0 (key 0) and an expiry in the last tick (the saturated key) are
 * ticks apart, whatever wrap-around arithmetic says: a modify between them
 * moves the timer.
 */
Test(timers_edges, modify_between_zero_and_last_tick_moves)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p[2];

	probe_init(&p[0], f, 0, 0);
	probe_init(&p[1], f, 1, 0);
	wheel_add(&f->w, &p[0].t, 0, 0);
	wheel_add(&f->w, &p[1].t, UINT64_MAX - 5, 0);
	cr_assert_eq(wheel_mod(&f->w, &p[0].t, UINT64_MAX - 5, 0), 1);
	cr_assert_eq(wheel_mod(&f->w, &p[1].t, 0, 0), 1);
	cr_assert_eq(wheel_next_expiry(&f->w), 0);
	cr_assert_eq(wheel_advance(&f->w, 4 * TICK), 1);
	cr_assert_eq(f->log[0], 1);
	cr_assert(wheel_timer_pending(&p[0].t));
	cr_assert_eq(wheel_next_expiry(&f->w), WHEEL_NEVER);
	free(f);
}

Test(timers_edges, earlier_expiry_in_same_tick_runs_first)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p[2];

	probe_init(&p[0], f, 0, 0);
	probe_init(&p[1], f, 1, 0);
	wheel_add(&f->w, &p[0].t, 1500, 0);
	wheel_add(&f->w, &p[1].t, 1100, 0);
	cr_assert_eq(wheel_advance(&f->w, 4096), 2);
	cr_assert_eq(f->log[0], 1);
	cr_assert_eq(f->log[1], 0);
	free(f);
}

static void rearm_periodic(struct probe *p, uint64_t now)
{
	(void)now;
	wheel_add(&p->f->w, &p->t, wheel_timer_expires(&p->t) + p->period, 0);
}

Test(timers_edges, periodic_rearm_from_callback)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	p.then = rearm_periodic;
	p.period = 10 * TICK;
	wheel_add(&f->w, &p.t, 10 * TICK, 0);
	for (uint64_t now = 0; now <= 100 * TICK; now += TICK)
		wheel_advance(&f->w, now);
	cr_assert_eq(p.runs, 10);
	cr_assert_eq(p.expires_seen, 100 * TICK);
	cr_assert_eq(wheel_timer_expires(&p.t), 110 * TICK);
	/* A big jump runs a periodic timer once per advance, not in a loop:
	 * the re-armed expiry (120 us) is already past, so it is due next. */
	cr_assert_eq(wheel_advance(&f->w, 1000 * TICK), 1);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 1000 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 1000 * TICK), 1);
	free(f);
}

static void delete_other(struct probe *p, uint64_t now)
{
	(void)now;
	cr_assert_eq(wheel_del(&p->f->w, &p->other->t), 1);
}

Test(timers_edges, callback_deletes_the_next_due_timer)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe a, b, c;

	probe_init(&a, f, 1, 0);
	probe_init(&b, f, 2, WHEEL_DEFERRABLE);
	probe_init(&c, f, 3, 0);
	a.then = delete_other;
	a.other = &b;
	wheel_add(&f->w, &a.t, 100 * TICK, 0);
	wheel_add(&f->w, &b.t, 100 * TICK, 0); /* same tick, armed after a */
	wheel_add(&f->w, &c.t, 200 * TICK, 0);
	cr_assert_eq(wheel_advance(&f->w, 300 * TICK), 2);
	cr_assert_eq(b.runs, 0);
	cr_assert(!wheel_timer_pending(&b.t));
	cr_assert_eq(wheel_pending(&f->w, WHEEL_DEFERRABLE), 0);
	cr_assert_eq(c.runs, 1);
	free(f);
}

static void delete_self(struct probe *p, uint64_t now)
{
	(void)now;
	cr_assert(!wheel_timer_pending(&p->t));
	cr_assert_eq(wheel_del(&p->f->w, &p->t), 0);
	cr_assert_eq(wheel_now(&p->f->w), p->now_seen);
}

Test(timers_edges, callback_deletes_itself)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	p.then = delete_self;
	wheel_add(&f->w, &p.t, 3 * TICK, 0);
	cr_assert_eq(wheel_advance(&f->w, 3 * TICK + 5), 1);
	cr_assert_eq(p.now_seen, 3 * TICK + 5);
	cr_assert_eq(p.expires_seen, 3 * TICK);
	free(f);
}

static void rearm_other_later(struct probe *p, uint64_t now)
{
	wheel_mod(&p->f->w, &p->other->t, now + 5 * TICK, 0);
}

Test(timers_edges, callback_rearms_a_due_timer)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe a, b;

	probe_init(&a, f, 1, 0);
	probe_init(&b, f, 2, 0);
	a.then = rearm_other_later;
	a.other = &b;
	wheel_add(&f->w, &a.t, 1 * TICK, 0);
	wheel_add(&f->w, &b.t, 2 * TICK, 0);
	cr_assert_eq(wheel_advance(&f->w, 2 * TICK), 1);
	cr_assert(wheel_timer_pending(&b.t));
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 7 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 7 * TICK), 1);
	free(f);
}

Test(timers_edges, backwards_advance_is_counted)
{
	struct fixture *f = fixture_new(10 * TICK, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	wheel_add(&f->w, &p.t, 0, 0);
	cr_assert_eq(wheel_advance(&f->w, 10 * TICK - 1), 0);
	cr_assert_eq(f->w.stat_backwards, 1);
	cr_assert_eq(wheel_now(&f->w), 10 * TICK);
	cr_assert_eq(wheel_advance(&f->w, 10 * TICK), 1);
	cr_assert_eq(f->w.stat_backwards, 1);
	free(f);
}

Test(timers_edges, double_add_is_a_modify)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	cr_assert_eq(wheel_add(&f->w, &p.t, 50 * TICK, 0), 0);
	cr_assert_eq(wheel_add(&f->w, &p.t, 80 * TICK, 0), 1);
	cr_assert_eq(wheel_pending(&f->w, 0), 1);
	cr_assert_eq(wheel_advance(&f->w, 79 * TICK), 0);
	cr_assert_eq(wheel_advance(&f->w, 80 * TICK), 1);
	cr_assert_eq(wheel_pending(&f->w, 0), 0);
	free(f);
}

Test(timers_edges, delete_of_idle_timer_is_a_noop)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	cr_assert_eq(wheel_del(&f->w, &p.t), 0);
	wheel_add(&f->w, &p.t, 5 * TICK, 0);
	cr_assert_eq(wheel_del(&f->w, &p.t), 1);
	cr_assert_eq(wheel_del(&f->w, &p.t), 0);
	cr_assert_eq(wheel_pending(&f->w, 0), 0);
	cr_assert_eq(wheel_next_expiry(&f->w), WHEEL_NEVER);
	cr_assert_eq(wheel_advance(&f->w, 10 * TICK), 0);
	free(f);
}

Test(timers_edges, set_flags_only_when_idle)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe p;

	probe_init(&p, f, 1, 0);
	wheel_add(&f->w, &p.t, 5 * TICK, 0);
	cr_assert_eq(wheel_timer_set_flags(&p.t, WHEEL_DEFERRABLE), -EBUSY);
	wheel_del(&f->w, &p.t);
	cr_assert_eq(wheel_timer_set_flags(&p.t, WHEEL_DEFERRABLE), 0);
	wheel_add(&f->w, &p.t, 5 * TICK, 0);
	cr_assert_eq(wheel_pending(&f->w, WHEEL_DEFERRABLE), 1);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), WHEEL_NEVER);
	free(f);
}

Test(timers_edges, same_slot_modify_keeps_queries_right)
{
	struct fixture *f = fixture_new(0, 0);
	struct probe a, b;

	probe_init(&a, f, 1, 0);
	probe_init(&b, f, 2, 0);
	/* Both in one level-2 slot; moving the earliest inside it must
	 * update the cached minimum. */
	wheel_add(&f->w, &a.t, 5000 * TICK, 0);
	wheel_add(&f->w, &b.t, 5100 * TICK, 0);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 5000 * TICK);
	cr_assert_eq(wheel_mod(&f->w, &a.t, 5200 * TICK, 0), 1);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 5100 * TICK);
	cr_assert_eq(wheel_mod(&f->w, &a.t, 4900 * TICK, 0), 1);
	cr_assert_eq(wheel_next_hard_expiry(&f->w), 4900 * TICK);
	free(f);
}

Test(timers_edges, small_and_large_ticks)
{
	unsigned shifts[] = { 1, 20, 30, 99 };

	for (unsigned i = 0; i < 4; i++) {
		struct fixture *f = fixture_new(3, shifts[i]);
		unsigned shift = shifts[i] > 30 ? 30 : shifts[i];
		uint64_t tick = 1ull << shift;
		struct probe p;

		probe_init(&p, f, 1, 0);
		wheel_add(&f->w, &p.t, 3 * tick + 1, 0);
		cr_assert_eq(wheel_next_hard_expiry(&f->w), 4 * tick);
		cr_assert_eq(wheel_advance(&f->w, 4 * tick - 1), 0);
		cr_assert_eq(wheel_advance(&f->w, 4 * tick), 1);
		free(f);
	}
}

static uint64_t edge_rng = 0x9e3779b97f4a7c15ull;

static uint64_t edge_rand(void)
{
	uint64_t z = (edge_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t ceil_tick(uint64_t ns)
{
	return (ns + TICK - 1) / TICK * TICK;
}

/*
 * A big coarse slot: the wake-up query sorts it once (bucket-sorted in one
 * pass up to 2048 timers; a longer list is first split 64 ways by its top
 * key bits, a part that is still that long split again), and
 * then reads the earliest after each delete. Arms into the sorted slot, in
 * order and out of order, and same-tick modifies must keep every answer
 * exact. The model is a brute force minimum over the pending timers.
 * Expiries are uniform over the first @span ns of the slot.
 */
static void big_slot_case(unsigned n, unsigned steps, uint64_t span)
{
	struct wheel *w = calloc(1, sizeof(*w));
	struct wheel_timer *t = calloc(n, sizeof(*t));
	uint64_t *exp = calloc(n, sizeof(*exp));
	bool *on = calloc(n, sizeof(*on));
	/* Level 3 at the default tick: keys 2^18..2^19 ticks ahead. */
	uint64_t base = (1ull << 30) + (1ull << 28);
	unsigned i, step, first;

	cr_assert(w && t && exp && on);
	wheel_init(w, 1ull << 30, 0);
	for (i = 0; i < n; i++) {
		wheel_timer_init(&t[i], on_expiry,
				 i % 3 ? 0 : WHEEL_DEFERRABLE);
		exp[i] = base + edge_rand() % span;
		wheel_add(w, &t[i], exp[i], 0);
		on[i] = true;
	}
	/*
	 * Deleting the earliest hard timer drops the cached answer, so the
	 * first query meets the slot unsorted and the hard answer comes from
	 * the sort itself.
	 */
	for (i = 1, first = 1; i < n; i++)
		if (i % 3 && exp[i] < exp[first])
			first = i;
	wheel_del(w, &t[first]);
	on[first] = false;
	for (step = 0; step < steps; step++) {
		uint64_t want = WHEEL_NEVER, any = WHEEL_NEVER;
		unsigned r = edge_rand() % 16;

		first = n;

		for (i = 0; i < n; i++) {
			if (!on[i])
				continue;
			any = any < ceil_tick(exp[i]) ? any : ceil_tick(exp[i]);
			if (i % 3 && ceil_tick(exp[i]) < want) {
				want = ceil_tick(exp[i]);
				first = i;
			}
		}
		cr_assert_eq(wheel_next_hard_expiry(w), want, "step %u", step);
		cr_assert_eq(wheel_next_expiry(w), any, "step %u", step);
		if (first == n)
			break;
		i = edge_rand() % n;
		if (r < 10) { /* delete the earliest hard timer */
			wheel_del(w, &t[first]);
			on[first] = false;
		} else if (r < 12) { /* another ns of the same tick */
			if (on[i]) {
				exp[i] = ceil_tick(exp[i]) - edge_rand() % TICK;
				wheel_mod(w, &t[i], exp[i], 0);
			}
		} else if (r < 14) { /* re-arm anywhere in the slot */
			exp[i] = base + edge_rand() % span;
			wheel_add(w, &t[i], exp[i], 0);
			on[i] = true;
		} else if (r < 15) { /* earlier than everything */
			exp[i] = base + edge_rand() % TICK;
			wheel_mod(w, &t[i], exp[i], 0);
			on[i] = true;
		} else {
			wheel_del(w, &t[i]);
			on[i] = false;
		}
	}
	free(w);
	free(t);
	free(exp);
	free(on);
}

Test(timers_edges, big_coarse_slot_bucket_sorted)
{
	/* 4000 hard timers over the whole 2^18-tick slot: one split. */
	big_slot_case(6000, 6000, 1ull << 28);
}

Test(timers_edges, huge_coarse_slot_part_split_again)
{
	/*
	 * 20000 hard timers in 2^12 ticks, i.e. one part of the first
	 * split: still past the one-pass limit, so it is split again. The
	 * brute-force model is O(n) a step, so fewer steps.
	 */
	big_slot_case(30000, 3000, 1ull << 22);
}

/*
 * The any-kind query sorts a big coarse slot of the tolerant base too,
 * which must leave each timer's wake alone: every hard answer after it
 * must still be the earliest expiry + slack. Deleting the timer that
 * gave the answer, again and again, reads many wakes.
 */
Test(timers_edges, big_tolerant_slot_sort_keeps_wakes)
{
	enum { N = 3000, STEPS = 200 };
	struct wheel *w = calloc(1, sizeof(*w));
	struct wheel_timer *t = calloc(N, sizeof(*t));
	uint64_t *wake = calloc(N, sizeof(*wake));
	uint64_t *exp = calloc(N, sizeof(*exp));
	bool *on = calloc(N, sizeof(*on));
	uint64_t base = (1ull << 30) + (1ull << 28); /* level 3, as above */
	unsigned i, step;

	cr_assert(w && t && wake && exp && on);
	wheel_init(w, 1ull << 30, 0);
	for (i = 0; i < N; i++) {
		uint64_t slack = 1 + edge_rand() % (1ull << 20);

		wheel_timer_init(&t[i], on_expiry, 0);
		exp[i] = base + edge_rand() % (1ull << 28);
		wake[i] = ceil_tick(exp[i] + slack);
		wheel_add(w, &t[i], exp[i], slack);
		on[i] = true;
	}
	for (step = 0; step < STEPS; step++) {
		uint64_t want = WHEEL_NEVER, any = WHEEL_NEVER;
		unsigned first = 0;

		for (i = 0; i < N; i++) {
			if (!on[i])
				continue;
			if (ceil_tick(exp[i]) < any)
				any = ceil_tick(exp[i]);
			if (wake[i] < want) {
				want = wake[i];
				first = i;
			}
		}
		cr_assert_eq(wheel_next_expiry(w), any, "step %u", step);
		cr_assert_eq(wheel_next_hard_expiry(w), want, "step %u", step);
		wheel_del(w, &t[first]);
		on[first] = false;
	}
	free(w);
	free(t);
	free(wake);
	free(exp);
	free(on);
}

/*
 * A level-2 slot (4096 ticks) that one advance passes whole is collected
 * without cascading, from the hard and the deferred base together: the
 * timers still run in (expiry, arm order) across both kinds and across the
 * slot's keys, equal expiries included.
 */
Test(timers_edges, whole_coarse_slot_runs_in_order_across_bases)
{
	static const uint64_t ticks[] = {
		900, 17, 900, 4000, 17, 2048, 17, 4095
	};
	static const uint64_t in_order[] = { 17, 900, 2048, 4000, 4095 };
	struct fixture *f = fixture_new(0, 0);
	uint64_t base = 1ull << 12; /* level 2, slot 1, from a clock at 0 */
	struct probe p[8];
	int want[8];
	unsigned i, j, k = 0;

	for (i = 0; i < 8; i++) {
		probe_init(&p[i], f, i, i % 2 ? WHEEL_DEFERRABLE : 0);
		wheel_add(&f->w, &p[i].t, (base + ticks[i]) * TICK - 3, 0);
	}
	/* Expected: by expiry, then by index (arm order). */
	for (j = 0; j < 5; j++)
		for (i = 0; i < 8; i++)
			if (ticks[i] == in_order[j])
				want[k++] = i;
	cr_assert_eq(k, 8);
	cr_assert_eq(wheel_advance(&f->w, (base + 4096) * TICK), 8);
	cr_assert_arr_eq(f->log, want, sizeof(want));
	free(f);
}

/*
 * An advance that stops inside a coarse slot holding hard and deferrable
 * timers cascades both bases' lists together; each timer still runs at its
 * own tick, never before.
 */
Test(timers_edges, cascade_of_both_bases_stays_exact)
{
	struct fixture *f = fixture_new(0, 0);
	uint64_t base = 1ull << 18;
	struct probe p[40];
	unsigned i, ran = 0;

	for (i = 0; i < 40; i++) {
		probe_init(&p[i], f, i, i % 2 ? WHEEL_DEFERRABLE : 0);
		/* Spread over the slot, with digit 0 at levels 0 and 1 too. */
		wheel_add(&f->w, &p[i].t, (base + i * 97 + (i % 3) * 64) * TICK,
			  0);
	}
	for (uint64_t tick = base; tick < base + 4096 + 64; tick += 13) {
		ran += wheel_advance(&f->w, tick * TICK);
		for (i = 0; i < 40; i++) {
			uint64_t at = base + i * 97 + (i % 3) * 64;

			cr_assert_eq(p[i].runs, at <= tick,
				     "timer %u at tick %llu", i,
				     (unsigned long long)tick);
			if (p[i].runs)
				cr_assert_lt(p[i].now_seen - at * TICK,
					     13 * TICK);
		}
	}
	cr_assert_eq(ran, 40);
	free(f);
}

/*
 * A short advance over levels 0 and 1 that stops inside a level-1 slot:
 * what is due runs in (expiry, arm order) across the kinds, the timer at
 * the stopping tick included, and the rest of that slot stays exact to the
 * tick, after a timer armed in the past among them.
 */
Test(timers_edges, near_advance_splits_the_slot_it_stops_in)
{
	/* Ticks; the level-1 slot 128..191 is the one the clock stops in. */
	static const uint64_t at[] = { 5, 130, 130, 150, 150, 160, 170, 190 };
	static const uint64_t minus_ns[] = { 0, 0, 0, 0, 100, 0, 0, 0 };
	struct fixture *f = fixture_new(0, 0);
	struct probe p[9];
	unsigned i;

	for (i = 0; i < 8; i++) {
		probe_init(&p[i], f, i, i % 2 ? WHEEL_DEFERRABLE : 0);
		wheel_add(&f->w, &p[i].t, at[i] * TICK - minus_ns[i], 0);
	}
	/* 4 was armed after 3 but expires 100 ns before it: it runs first. */
	cr_assert_eq(wheel_advance(&f->w, 160 * TICK), 6);
	cr_assert_arr_eq(f->log, ((int[]){ 0, 1, 2, 4, 3, 5 }),
			 6 * sizeof(int));

	probe_init(&p[8], f, 8, WHEEL_DEFERRABLE);
	wheel_add(&f->w, &p[8].t, 10 * TICK, 0); /* in the past */
	cr_assert_eq(wheel_advance(&f->w, 170 * TICK - 1), 1);
	cr_assert_eq(f->log[6], 8);
	cr_assert_eq(p[6].runs, 0, "170 ran before its tick");
	cr_assert_eq(wheel_advance(&f->w, 170 * TICK), 1);
	cr_assert_eq(f->log[7], 6);
	cr_assert_eq(wheel_advance(&f->w, 189 * TICK), 0);
	cr_assert_eq(wheel_advance(&f->w, 190 * TICK), 1);
	cr_assert_eq(f->log[8], 7);
	cr_assert_eq(wheel_pending(&f->w, 0) + wheel_pending(&f->w, 1), 0);
	free(f);
}
