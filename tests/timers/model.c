// SPDX-License-Identifier: MIT
/* The reference model: see model.h. Every query is a linear scan. */
#include "model.h"

void model_init(struct model *m, struct model_timer *t, unsigned nr,
		uint64_t now, unsigned tick_shift)
{
	unsigned i;

	m->tick_shift = tick_shift ? tick_shift : 10;
	m->now = now;
	m->next_seq = 0;
	m->nr = nr;
	m->t = t;
	for (i = 0; i < nr; i++)
		m->t[i] = (struct model_timer){ 0 };
}

int model_add(struct model *m, unsigned id, uint64_t expires,
	      uint64_t tolerance)
{
	struct model_timer *t = &m->t[id];
	int was = t->pending;

	t->pending = true;
	t->expires = expires;
	t->tolerance = tolerance;
	t->seq = m->next_seq++;
	return was;
}

int model_del(struct model *m, unsigned id)
{
	int was = m->t[id].pending;

	m->t[id].pending = false;
	return was;
}

uint64_t model_ceil_tick(const struct model *m, uint64_t ns)
{
	uint64_t tick = 1ull << m->tick_shift;
	uint64_t rem = ns % tick;

	if (!rem)
		return ns;
	if (ns > UINT64_MAX - (tick - rem))
		return UINT64_MAX;
	return ns + (tick - rem);
}

bool model_runs_by(const struct model *m, const struct model_timer *t,
		   uint64_t now)
{
	uint64_t tick = 1ull << m->tick_shift;
	uint64_t rem = t->expires % tick;

	/* The first tick at or after the expiry; past UINT64_MAX there is
	 * none, so such a timer never runs. */
	if (!rem)
		return t->expires <= now;
	if (t->expires > UINT64_MAX - (tick - rem))
		return false;
	return t->expires + (tick - rem) <= now;
}

bool model_hard_wakes(const struct model_timer *t)
{
	return !t->deferrable || t->tolerance;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t at_least_now(const struct model *m, uint64_t t)
{
	return t > m->now ? t : m->now;
}

uint64_t model_next_hard_expiry(const struct model *m)
{
	uint64_t best = UINT64_MAX;
	unsigned i;

	for (i = 0; i < m->nr; i++) {
		const struct model_timer *t = &m->t[i];
		uint64_t wake;

		if (!t->pending || !model_hard_wakes(t))
			continue;
		wake = model_ceil_tick(m, sat_add(t->expires, t->tolerance));
		if (wake < best)
			best = wake;
	}
	return at_least_now(m, best);
}

uint64_t model_next_expiry(const struct model *m)
{
	uint64_t best = UINT64_MAX;
	unsigned i;

	for (i = 0; i < m->nr; i++) {
		uint64_t at = model_ceil_tick(m, m->t[i].expires);

		if (m->t[i].pending && at < best)
			best = at;
	}
	return at_least_now(m, best);
}

size_t model_pending(const struct model *m, bool deferrable)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < m->nr; i++)
		n += m->t[i].pending && m->t[i].deferrable == deferrable;
	return n;
}

static bool runs_before(const struct model *m, unsigned a, unsigned b)
{
	const struct model_timer *x = &m->t[a], *y = &m->t[b];

	if (x->expires != y->expires)
		return x->expires < y->expires;
	return x->seq < y->seq;
}

unsigned model_due(const struct model *m, uint64_t now, unsigned *ids)
{
	unsigned i, j, n = 0;

	if (now < m->now)
		return 0;
	for (i = 0; i < m->nr; i++) {
		const struct model_timer *t = &m->t[i];

		if (t->pending && model_runs_by(m, t, now))
			ids[n++] = i;
	}
	for (i = 1; i < n; i++) /* insertion sort: n is small */
		for (j = i; j > 0 && runs_before(m, ids[j], ids[j - 1]); j--) {
			unsigned swap = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = swap;
		}
	return n;
}
