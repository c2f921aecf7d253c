// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "vcpu/lateness.h"

const char *const late_cause_names[LATE_CAUSES] = {
	[LATE_WAKE] = "wake",		[LATE_KICK] = "kick",
	[LATE_MASKED] = "masked",	[LATE_VMM] = "vmm",
	[LATE_PREEMPTED] = "preempted", [LATE_UNSEEN] = "unseen",
};

void lateness_init(struct lateness *l, uint64_t threshold_ns)
{
	memset(l, 0, sizeof(*l));
	l->threshold_ns = threshold_ns;
	l->run_delay_fd = -1;
}

void lateness_destroy(struct lateness *l)
{
	if (l->run_delay_fd >= 0)
		close(l->run_delay_fd);
	l->run_delay_fd = -1;
}

/* The second of schedstat's three numbers: ns spent runnable, waiting for
 * a CPU. 0 if the read fails: the share is then not charged. */
static uint64_t read_run_delay(int fd)
{
	char buf[96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	uint64_t v = 0;
	char *p = buf;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

int lateness_sample_run_delay(struct lateness *l)
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
	l->run_delay_fd = fd;
	return 0;
}

void lateness_mark(struct lateness *l, enum late_phase p, uint64_t now)
{
	struct late_mark *m = &l->mark[l->marks % LATE_MARKS];

	m->at = now;
	m->phase = (uint8_t)p;
	m->run_delay =
		l->run_delay_fd >= 0 ? read_run_delay(l->run_delay_fd) : 0;
	l->marks++;
}

/* Which cause a phase's time is, before and after the timer was taken. */
static enum late_cause phase_cause(enum late_phase p, bool taken)
{
	switch (p) {
	case LATE_PHASE_GUEST:
		return taken ? LATE_MASKED : LATE_KICK;
	case LATE_PHASE_IDLE:
		return taken ? LATE_MASKED : LATE_WAKE;
	default:
		return LATE_VMM;
	}
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Lays [e->expiry, delivered] over the marks kept. */
static void charge(const struct lateness *l, struct late_event *e,
		   uint64_t delivered)
{
	unsigned kept = l->marks < LATE_MARKS ? l->marks : LATE_MARKS;
	unsigned first = l->marks - kept, i = l->marks;
	uint64_t expiry = e->expiry, now_delay = 0;
	bool taken = false;

	/* the mark the expiry fell after: the phase it came due in */
	while (i > first && l->mark[(i - 1) % LATE_MARKS].at > expiry)
		i--;
	if (i == first) {
		uint64_t oldest =
			kept ? l->mark[first % LATE_MARKS].at : delivered;

		e->ns[LATE_UNSEEN] = min_u64(oldest, delivered) - expiry;
	} else {
		i--;
	}
	if (l->run_delay_fd >= 0)
		now_delay = read_run_delay(l->run_delay_fd);
	for (; i < l->marks; i++) {
		const struct late_mark *m = &l->mark[i % LATE_MARKS];
		bool last = i + 1 == l->marks;
		uint64_t end =
			last ? delivered : l->mark[(i + 1) % LATE_MARKS].at;
		uint64_t start = m->at < expiry ? expiry : m->at;
		uint64_t span, share, delayed;
		enum late_cause c;

		if (m->phase == LATE_PHASE_TAKE && m->at >= expiry)
			taken = true;
		if (end > delivered)
			end = delivered;
		if (end <= start)
			continue;
		span = end - start;
		c = phase_cause((enum late_phase)m->phase, taken);
		share = span;
		if (l->run_delay_fd >= 0) {
			uint64_t len = end - m->at;
			uint64_t to =
				last ? now_delay :
				       l->mark[(i + 1) % LATE_MARKS].run_delay;

			/*
			 * A sleeping thread waits for a CPU only once woken,
			 * at the phase's end, which is late; a running one
			 * may wait at any point of its phase: its share is
			 * in proportion to the late part.
			 */
			delayed = to > m->run_delay ? to - m->run_delay : 0;
			if (m->phase != LATE_PHASE_IDLE && len)
				delayed =
					(uint64_t)((unsigned __int128)delayed *
						   span / len);
			delayed = min_u64(delayed, span);
			e->ns[LATE_PREEMPTED] += delayed;
			share -= delayed;
		}
		e->ns[c] += share;
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

bool lateness_attribute(struct lateness *l, uint8_t vector, uint64_t expiry,
			uint64_t delivered, struct late_event *ev)
{
	struct late_event e = { .expiry = expiry, .vector = vector };

	if (delivered <= expiry || delivered - expiry <= l->threshold_ns)
		return false;
	e.late_ns = delivered - expiry;
	charge(l, &e, delivered);
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
