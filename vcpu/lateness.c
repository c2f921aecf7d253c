// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "timers/clock.h"
#include "vcpu/lateness.h"

const char *const late_cause_names[LATE_CAUSES] = {
	[LATE_WAKE] = "wake",	    [LATE_KICK] = "kick",
	[LATE_MASKED] = "masked",   [LATE_VMM] = "vmm",
	[LATE_BLOCKED] = "blocked", [LATE_PREEMPTED] = "preempted",
	[LATE_UNSEEN] = "unseen",
};

void lateness_init(struct lateness *l, uint64_t threshold_ns)
{
	memset(l, 0, sizeof(*l));
	l->threshold_ns = threshold_ns;
	l->sched_fd = -1;
}

void lateness_destroy(struct lateness *l)
{
	if (l->sched_fd >= 0)
		close(l->sched_fd);
	l->sched_fd = -1;
}

static uint64_t parse_u64(const char **p)
{
	uint64_t v = 0;

	while (**p == ' ')
		(*p)++;
	while (**p >= '0' && **p <= '9')
		v = v * 10 + (uint64_t)(*(*p)++ - '0');
	return v;
}

/*
 * The thread's time on a CPU from its CPU-time clock, and its time runnable
 * and waiting from schedstat's second number. schedstat's first number,
 * the same sum, is read without bringing a running thread's share up to
 * date: behind by up to the time since the kernel last did (a tick, a
 * switch), which would show as time asleep. The wait changes only when the
 * thread is switched in, so a running thread's is current. Zeros if the read
 * of schedstat fails: nothing is then charged to them.
 */
static struct late_sched read_sched(const struct lateness *l)
{
	struct late_sched s = { 0, 0 };
	char buf[96];
	const char *p = buf;
	ssize_t n;

	if (l->sched_fd < 0)
		return s;
	n = pread(l->sched_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return s;
	buf[n] = '\0';
	parse_u64(&p);
	s.waiting = parse_u64(&p);
	s.on_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return s;
}

int lateness_sample_sched(struct lateness *l)
{
	int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	char c;

	if (fd < 0)
		return -errno;
	if (pread(fd, &c, 1, 0) != 1) {
		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	l->sched_fd = fd;
	return 0;
}

static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static const struct late_mark *last_mark(const struct lateness *l)
{
	return l->marks ? &l->mark[(l->marks - 1) % LATE_MARKS] : NULL;
}

/* The sums as they stand at `now`, the phase under way included. */
static struct late_sums sums_at(const struct lateness *l, uint64_t now,
				struct late_sched s)
{
	const struct late_mark *m = last_mark(l);
	struct late_sums sums = l->sums;

	if (m) {
		sums.ns[m->phase] += since(now, m->at);
		sums.sched[m->phase].on_cpu += since(s.on_cpu, m->sched.on_cpu);
		sums.sched[m->phase].waiting +=
			since(s.waiting, m->sched.waiting);
	}
	return sums;
}

void lateness_mark(struct lateness *l, enum late_phase p, uint64_t now)
{
	struct late_sched s = read_sched(l);
	struct late_mark *m;

	l->sums = sums_at(l, now, s);
	m = &l->mark[l->marks % LATE_MARKS];
	m->at = now;
	m->sched = s;
	m->phase = (uint8_t)p;
	l->marks++;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t share_of(uint64_t amount, uint64_t span, uint64_t len)
{
	if (!len || span >= len)
		return amount;
	return (uint64_t)((unsigned __int128)amount * span / len);
}

/*
 * Charges `span` ns of a phase `len` ns long, in which the scheduler saw
 * `s` (when sampled), to e. A sleeping thread waits for a CPU only once
 * woken, at its phase's end, which is late; a running one may wait at any
 * point of its phase, so its wait is shared in proportion.
 */
static void charge_phase(const struct lateness *l, struct late_event *e,
			 enum late_phase p, bool taken, uint64_t span,
			 uint64_t len, struct late_sched s)
{
	enum late_cause c;
	uint64_t waited, worked;

	switch (p) {
	case LATE_PHASE_GUEST:
		c = taken ? LATE_MASKED : LATE_KICK;
		break;
	case LATE_PHASE_IDLE:
		c = taken ? LATE_MASKED : LATE_WAKE;
		break;
	default:
		c = LATE_VMM;
		break;
	}
	if (l->sched_fd < 0) {
		e->ns[c] += span;
		return;
	}
	waited = min_u64(p == LATE_PHASE_IDLE ? s.waiting :
						share_of(s.waiting, span, len),
			 span);
	e->ns[LATE_PREEMPTED] += waited;
	span -= waited;
	if (c != LATE_VMM) {
		e->ns[c] += span;
		return;
	}
	/* lull's own work: on a CPU, or asleep in it */
	worked = min_u64(share_of(s.on_cpu, span, len), span);
	e->ns[LATE_VMM] += worked;
	e->ns[LATE_BLOCKED] += span - worked;
}

/* [from, to] laid over the marks kept; before the oldest is unseen. */
static void charge_marks(const struct lateness *l, struct late_event *e,
			 uint64_t from, uint64_t to)
{
	unsigned kept = l->marks < LATE_MARKS ? l->marks : LATE_MARKS;
	unsigned first = l->marks - kept, i = l->marks;
	struct late_sched now = { 0, 0 };
	bool taken = false;

	/* the mark `from` fell after: the phase the timer came due in */
	while (i > first && l->mark[(i - 1) % LATE_MARKS].at > from)
		i--;
	if (i == first) {
		uint64_t oldest = kept ? l->mark[first % LATE_MARKS].at : to;

		e->ns[LATE_UNSEEN] += since(min_u64(oldest, to), from);
	} else {
		i--;
	}
	if (l->sched_fd >= 0 && i < l->marks && last_mark(l)->at < to)
		now = read_sched(l);
	for (; i < l->marks; i++) {
		const struct late_mark *m = &l->mark[i % LATE_MARKS];
		bool last = i + 1 == l->marks;
		const struct late_mark *next =
			last ? NULL : &l->mark[(i + 1) % LATE_MARKS];
		uint64_t end = min_u64(last ? to : next->at, to);
		uint64_t start = m->at < from ? from : m->at;
		struct late_sched until = last ? now : next->sched, s;

		if (m->phase == LATE_PHASE_TAKE && m->at >= from)
			taken = true;
		if (end <= start)
			continue;
		s.on_cpu = since(until.on_cpu, m->sched.on_cpu);
		s.waiting = since(until.waiting, m->sched.waiting);
		charge_phase(l, e, (enum late_phase)m->phase, taken,
			     end - start, since(last ? to : next->at, m->at),
			     s);
	}
}

void lateness_taken(struct lateness *l, uint8_t vector, uint64_t expiry)
{
	const struct late_mark *m = last_mark(l);
	struct late_pending *p = NULL, *oldest = &l->pending[0];
	struct late_event e = { 0 };

	if (!m || !expiry)
		return;
	for (unsigned i = 0; i < LATE_PENDING && !p; i++) {
		struct late_pending *q = &l->pending[i];

		if (q->expiry && q->vector == vector)
			p = q; /* a vector is timed from one expiry at a time */
		else if (!q->expiry || q->expiry < oldest->expiry)
			oldest = q;
	}
	if (!p)
		p = oldest; /* free, or the oldest: it is likely lost */
	p->vector = vector;
	p->expiry = expiry;
	charge_marks(l, &e, expiry, m->at);
	memcpy(p->taken_ns, e.ns, sizeof(p->taken_ns));
	p->at_take = l->sums;
}

static struct late_pending *find_pending(struct lateness *l, uint8_t vector,
					 uint64_t expiry)
{
	for (unsigned i = 0; i < LATE_PENDING; i++) {
		struct late_pending *p = &l->pending[i];

		if (p->expiry == expiry && p->vector == vector)
			return p;
	}
	return NULL;
}

/* From the catch-up that took it on: every phase, as it was taken. */
static void charge_since_taken(const struct lateness *l, struct late_event *e,
			       const struct late_pending *p, uint64_t delivered)
{
	struct late_sums now = sums_at(
		l, delivered,
		l->sched_fd >= 0 ? read_sched(l) : (struct late_sched){ 0 });

	memcpy(e->ns, p->taken_ns, sizeof(e->ns));
	for (unsigned ph = 0; ph < LATE_PHASES; ph++) {
		uint64_t span = since(now.ns[ph], p->at_take.ns[ph]);
		struct late_sched s = {
			since(now.sched[ph].on_cpu,
			      p->at_take.sched[ph].on_cpu),
			since(now.sched[ph].waiting,
			      p->at_take.sched[ph].waiting),
		};

		charge_phase(l, e, (enum late_phase)ph, true, span, span, s);
	}
}

static void keep_worst(struct lateness *l, const struct late_event *e)
{
	unsigned at = LATE_WORST;

	while (at > 0 && l->worst[at - 1].late_ns < e->late_ns)
		at--;
	if (at == LATE_WORST)
		return;
	memmove(&l->worst[at + 1], &l->worst[at],
		(LATE_WORST - 1 - at) * sizeof(l->worst[0]));
	l->worst[at] = *e;
}

bool lateness_delivered(struct lateness *l, uint8_t vector, uint64_t expiry,
			uint64_t delivered, struct late_event *ev)
{
	struct late_pending *p = find_pending(l, vector, expiry);
	struct late_event e = { .expiry = expiry, .vector = vector };

	if (p)
		p->expiry = 0;
	if (delivered <= expiry || delivered - expiry <= l->threshold_ns)
		return false;
	e.late_ns = delivered - expiry;
	if (p)
		charge_since_taken(l, &e, p, delivered);
	else
		charge_marks(l, &e, expiry, delivered);
	for (unsigned c = 0; c < LATE_CAUSES; c++) {
		l->ns[c] += e.ns[c];
		if (e.ns[c] > e.ns[e.main_cause])
			e.main_cause = (uint8_t)c;
	}
	l->events++;
	l->main_cause_events[e.main_cause]++;
	keep_worst(l, &e);
	*ev = e;
	return true;
}
