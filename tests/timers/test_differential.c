// SPDX-License-Identifier: MIT
/*
 * Differential test: long random sequences of add / mod / del / set_flags /
 * advance, run on the wheel and on the reference model in lockstep. Each
 * callback the wheel makes is matched against the model's next due timer,
 * and callbacks themselves re-arm, delete and add timers at random.
 *
 * LULL_TEST_SEED=n replays a run; LULL_TEST_OPS=n changes its length.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model.h"
#include "timers/wheel.h"

#define CHECK(cond, ...)                             \
	do {                                         \
		if (!(cond))                         \
			cr_assert_fail(__VA_ARGS__); \
	} while (0)

#define MAX_TIMERS 256

struct harness;

struct test_timer {
	struct wheel_timer t; /* first: the callback gets this pointer */
	struct harness *h;
	unsigned id;
};

enum advance_mode {
	ADVANCE_FREE, /* an arbitrary step: no lateness bound applies */
	ADVANCE_IDLE, /* to wheel_next_hard_expiry: host woke from sleep */
	ADVANCE_BUSY, /* to wheel_next_expiry: a busy vCPU's kick */
};

struct harness {
	struct wheel w;
	struct model m;
	struct model_timer mt[MAX_TIMERS];
	struct test_timer tt[MAX_TIMERS];
	unsigned nr;
	uint64_t rng;
	uint64_t seed;
	uint64_t tick;
	uint64_t cluster; /* many timers in one coarse slot: the sorted path */

	/* The advance in progress: what the model says must run. */
	unsigned due[MAX_TIMERS];
	uint64_t due_seq[MAX_TIMERS];
	unsigned nr_due, next_due;
	uint64_t adv_now, prev_now;
	enum advance_mode mode;
	unsigned ran;

	unsigned long ops, callbacks, runs_checked;
};

static uint64_t next_rand(struct harness *h)
{
	/* splitmix64: tiny, and every seed gives a good stream */
	uint64_t z = (h->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct harness *h, uint64_t n)
{
	return n ? next_rand(h) % n : 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t random_expiry(struct harness *h)
{
	uint64_t now = wheel_now(&h->w), r = below(h, 100);

	if (r < 4)
		return 0;
	if (r < 6)
		return UINT64_MAX;
	if (r < 9)
		return UINT64_MAX - below(h, 4 * h->tick);
	if (r < 14) /* a crowd in one coarse slot: it gets sorted */
		return sat_add(h->cluster, below(h, h->tick << 6));
	if (r < 18)
		return now -
		       below(h, now < 8 * h->tick ? now + 1 : 8 * h->tick);
	if (r < 45) /* near: the same slot, the next few ticks */
		return sat_add(now, below(h, 4 * h->tick));
	if (r < 52) /* exactly on ticks and level boundaries */
		return sat_add(now - now % h->tick,
			       (1ull << (6 * below(h, 4))) * h->tick);
	if (r < 75)
		return sat_add(now, below(h, h->tick << 12));
	if (r < 90)
		return sat_add(now, below(h, h->tick << 24));
	return sat_add(now, next_rand(h) >> below(h, 64));
}

static uint64_t random_tolerance(struct harness *h)
{
	uint64_t r = below(h, 100);

	if (r < 60)
		return 0;
	if (r < 80)
		return below(h, 8 * h->tick);
	if (r < 90)
		return below(h, h->tick << 14);
	if (r < 95)
		return UINT64_MAX;
	return next_rand(h) >> below(h, 64);
}

static void check_queries(struct harness *h)
{
	uint64_t got, want;

	got = wheel_next_hard_expiry(&h->w);
	want = model_next_hard_expiry(&h->m);
	CHECK(got == want,
	      "seed %" PRIu64 " op %lu: next_hard_expiry %" PRIu64
	      ", model %" PRIu64,
	      h->seed, h->ops, got, want);
	got = wheel_next_expiry(&h->w);
	want = model_next_expiry(&h->m);
	CHECK(got == want,
	      "seed %" PRIu64 " op %lu: next_expiry %" PRIu64
	      ", model %" PRIu64,
	      h->seed, h->ops, got, want);
	CHECK(wheel_pending(&h->w, 0) == model_pending(&h->m, false) &&
		      wheel_pending(&h->w, WHEEL_DEFERRABLE) ==
			      model_pending(&h->m, true),
	      "seed %" PRIu64 " op %lu: pending counts differ", h->seed,
	      h->ops);
	CHECK(wheel_now(&h->w) == h->m.now, "seed %" PRIu64 ": now differs",
	      h->seed);
}

static void arm(struct harness *h, unsigned id)
{
	uint64_t expires = random_expiry(h), tolerance = random_tolerance(h);
	struct wheel_timer *t = &h->tt[id].t;
	int got = below(h, 2) ? wheel_add(&h->w, t, expires, tolerance) :
				wheel_mod(&h->w, t, expires, tolerance);
	int want = model_add(&h->m, id, expires, tolerance);

	CHECK(got == want,
	      "seed %" PRIu64 " op %lu: add of timer %u returned %d, model %d",
	      h->seed, h->ops, id, got, want);
	CHECK(wheel_timer_pending(t) && wheel_timer_expires(t) == expires,
	      "seed %" PRIu64 ": timer %u not pending after add", h->seed, id);
}

static void delete (struct harness *h, unsigned id)
{
	int got = wheel_del(&h->w, &h->tt[id].t);
	int want = model_del(&h->m, id);

	CHECK(got == want,
	      "seed %" PRIu64 " op %lu: del of timer %u returned %d, model %d",
	      h->seed, h->ops, id, got, want);
	CHECK(!wheel_timer_pending(&h->tt[id].t),
	      "seed %" PRIu64 ": timer %u pending after del", h->seed, id);
}

/* The model's next timer that is still due (not deleted or re-armed). */
static int next_expected(struct harness *h)
{
	while (h->next_due < h->nr_due) {
		unsigned id = h->due[h->next_due++];

		if (h->mt[id].pending &&
		    h->mt[id].seq == h->due_seq[h->next_due - 1])
			return id;
	}
	return -1;
}

static void check_lateness(struct harness *h, const struct model_timer *mt,
			   uint64_t now)
{
	uint64_t late = now - mt->expires;

	if (mt->expires <= h->prev_now)
		return; /* due before this advance: the step chose the delay */
	if (h->mode == ADVANCE_BUSY) {
		CHECK(late < h->tick,
		      "seed %" PRIu64 ": busy wake %" PRIu64 " ns late",
		      h->seed, late);
		h->runs_checked++;
	} else if (h->mode == ADVANCE_IDLE && model_hard_wakes(mt)) {
		CHECK(late < sat_add(mt->tolerance, h->tick),
		      "seed %" PRIu64 ": %" PRIu64
		      " ns late, tolerance %" PRIu64,
		      h->seed, late, mt->tolerance);
		h->runs_checked++;
	}
}

static void on_expiry(struct wheel_timer *t, uint64_t now)
{
	struct test_timer *tt = (struct test_timer *)t;
	struct harness *h = tt->h;
	struct model_timer *mt = &h->mt[tt->id];
	int want = next_expected(h);
	uint64_t r;

	CHECK(want == (int)tt->id,
	      "seed %" PRIu64 " op %lu: wheel ran timer %u, model expects %d",
	      h->seed, h->ops, tt->id, want);
	CHECK(now == h->adv_now && now >= mt->expires &&
		      wheel_timer_expires(t) == mt->expires,
	      "seed %" PRIu64 " op %lu: timer %u ran early or with a wrong now",
	      h->seed, h->ops, tt->id);
	CHECK(!wheel_timer_pending(t), "seed %" PRIu64 ": pending in callback",
	      h->seed);
	check_lateness(h, mt, now);
	mt->pending = false;
	h->ran++;
	h->callbacks++;

	r = below(h, 100);
	if (r < 20) {
		arm(h, tt->id); /* periodic, or a one-shot re-armed anywhere */
	} else if (r < 35) {
		delete (h, below(h, h->nr));
	} else if (r < 45) {
		arm(h, below(h, h->nr));
	} else if (r < 50) {
		delete (h, tt->id); /* already not pending: a no-op */
	}
}

static void advance(struct harness *h)
{
	uint64_t now = wheel_now(&h->w), r = below(h, 100), to;
	unsigned got;

	h->mode = ADVANCE_FREE;
	if (r < 25) {
		to = sat_add(now, below(h, 3 * h->tick));
	} else if (r < 40) {
		to = sat_add(now, below(h, h->tick << 12));
	} else if (r < 45) {
		to = sat_add(now, below(h, h->tick << 26));
	} else if (r < 70) {
		to = wheel_next_hard_expiry(&h->w);
		h->mode = ADVANCE_IDLE;
	} else if (r < 95) {
		to = wheel_next_expiry(&h->w);
		h->mode = ADVANCE_BUSY;
	} else {
		uint64_t before = h->w.stat_backwards;

		if (!now)
			return;
		to = now - 1 - below(h, now);
		got = wheel_advance(&h->w, to);
		CHECK(got == 0 && h->w.stat_backwards == before + 1,
		      "seed %" PRIu64 ": a backwards advance ran %u timers",
		      h->seed, got);
		return;
	}
	/* Rarely jump far: the clock would soon saturate at the end of time,
	 * where every new timer is parked past UINT64_MAX. */
	if (to - now > (h->tick << 28) && below(h, 16))
		return;

	h->nr_due = model_due(&h->m, to, h->due);
	for (unsigned i = 0; i < h->nr_due; i++)
		h->due_seq[i] = h->mt[h->due[i]].seq;
	h->next_due = 0;
	h->adv_now = to;
	h->prev_now = now;
	h->ran = 0;
	h->m.now = to; /* the model's clock moves before any callback */

	got = wheel_advance(&h->w, to);

	CHECK(next_expected(h) < 0,
	      "seed %" PRIu64 " op %lu: the wheel skipped a due timer", h->seed,
	      h->ops);
	CHECK(got == h->ran, "seed %" PRIu64 ": advance returned %u, ran %u",
	      h->seed, got, h->ran);
}

static void set_flags(struct harness *h, unsigned id)
{
	unsigned flags = below(h, 2) ? WHEEL_DEFERRABLE : 0;
	int got = wheel_timer_set_flags(&h->tt[id].t, flags);

	if (h->mt[id].pending) {
		CHECK(got == -EBUSY, "seed %" PRIu64 ": set_flags on pending",
		      h->seed);
		return;
	}
	CHECK(got == 0, "seed %" PRIu64 ": set_flags failed", h->seed);
	h->mt[id].deferrable = flags;
}

static void run_round(struct harness *h, unsigned long nr_ops)
{
	static const unsigned shifts[] = { 0, 1, 3, 10, 10, 10, 13, 20 };
	unsigned shift = shifts[below(h, 8)];
	uint64_t r = below(h, 10), now;
	unsigned i;

	if (r < 4)
		now = below(h, 1ull << 20);
	else if (r < 7)
		now = below(h, 1ull << 50);
	else if (r < 9)
		now = next_rand(h);
	else
		now = UINT64_MAX - below(h, 1ull << 30);

	h->nr = 1 + below(h, below(h, 2) ? 16 : MAX_TIMERS);
	wheel_init(&h->w, now, shift);
	model_init(&h->m, h->mt, h->nr, now, shift);
	h->tick = 1ull << h->m.tick_shift;
	h->cluster = sat_add(now, (h->tick << (6 * (1 + below(h, 3)))) +
					  below(h, h->tick << 12));
	for (i = 0; i < h->nr; i++) {
		h->tt[i].h = h;
		h->tt[i].id = i;
		h->mt[i].deferrable = below(h, 2);
		wheel_timer_init(&h->tt[i].t, on_expiry,
				 h->mt[i].deferrable ? WHEEL_DEFERRABLE : 0);
	}

	while (nr_ops--) {
		unsigned id = below(h, h->nr);

		h->ops++;
		r = below(h, 100);
		if (r < 40)
			arm(h, id);
		else if (r < 55)
			delete (h, id);
		else if (r < 60)
			set_flags(h, id);
		else
			advance(h);
		/*
		 * Skip some checks, so that several removals and arms pile
		 * up between two recomputations of the cached minima.
		 */
		if (below(h, 4))
			check_queries(h);
	}
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : fallback;
}

Test(timers_differential, random_ops_match_model, .timeout = 110)
{
	struct harness *h = calloc(1, sizeof(*h));
	unsigned long total = env_u64("LULL_TEST_OPS", 1000000);
	unsigned long per_round = 20000;
	struct timespec ts;

	cr_assert_not_null(h);
	clock_gettime(CLOCK_REALTIME, &ts);
	h->seed = env_u64("LULL_TEST_SEED",
			  (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec);
	h->rng = h->seed;
	fprintf(stderr,
		"timers_differential: LULL_TEST_SEED=%" PRIu64
		" LULL_TEST_OPS=%lu\n",
		h->seed, total);

	while (h->ops < total) {
		unsigned long n = total - h->ops;

		run_round(h, n < per_round ? n : per_round);
	}
	fprintf(stderr,
		"timers_differential: %lu ops, %lu callbacks, %lu lateness "
		"checks\n",
		h->ops, h->callbacks, h->runs_checked);
	cr_expect_gt(h->callbacks, h->ops / 20, "too few timers ran to matter");
	free(h);
}
