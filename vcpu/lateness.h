/* SPDX-License-Identifier: MIT */
/*
 * Where a late hard timer's time went.
 *
 * The vCPU thread marks each change of what it is doing: running the
 * guest (inside KVM_RUN), sleeping in its halt (idle_sleep), lull's own
 * work, and the catch-up within that work where the wheel runs what is due,
 * which is where a due timer becomes a pending interrupt (it is "taken").
 * A hard timer delivered more than the threshold after its expiry has that
 * span laid over the marks, and each piece is charged to a cause:
 *
 *   wake       halted, not yet taken: the host woke the thread late (its
 *              timer was late, or the thread was stopped)
 *   kick       in the guest, not yet taken: the kick out of KVM_RUN (the
 *              thread's timer signal, an IPI's kick) came late
 *   masked     taken, but the guest could not accept it: it ran or halted
 *              with interrupts off, a TPR or a vector in service above it
 *   vmm        lull's own work: handling an exit, catching up, injecting
 *   preempted  runnable but not running, out of any of the above; only
 *              where the scheduler's run delay is sampled (below)
 *   unseen     before the oldest mark kept
 *
 * A mark costs a clock read. The run delay (/proc/thread-self/schedstat)
 * costs a system call per mark, so it is sampled only on request; without
 * it, time the host did not run the thread stays in the cause of the
 * phase it fell in.
 *
 * Everything here runs on the vCPU's own thread.
 */
#ifndef LULL_LATENESS_H
#define LULL_LATENESS_H

#include <stdbool.h>
#include <stdint.h>

enum late_phase {
	LATE_PHASE_VMM,
	LATE_PHASE_TAKE, /* the catch-up: due timers become interrupts */
	LATE_PHASE_GUEST,
	LATE_PHASE_IDLE,
};

enum late_cause {
	LATE_WAKE,
	LATE_KICK,
	LATE_MASKED,
	LATE_VMM,
	LATE_PREEMPTED,
	LATE_UNSEEN,
	LATE_CAUSES
};

extern const char *const late_cause_names[LATE_CAUSES];

/* Marks kept: a few hundred phases, enough to span a long stall (which has
 * few) and a run of interrupt-window exits while the guest masks one. */
#define LATE_MARKS 128
#define LATE_WORST 4

struct late_event {
	uint64_t expiry; /* CLOCK_MONOTONIC ns */
	uint64_t late_ns;
	uint64_t ns[LATE_CAUSES];
	uint8_t vector;
	uint8_t main_cause; /* the largest share */
};

struct late_mark {
	uint64_t at;
	uint64_t run_delay; /* the thread's, when sampled */
	uint8_t phase;
};

struct lateness {
	uint64_t threshold_ns;
	int run_delay_fd; /* -1: the run delay is not sampled */
	unsigned marks; /* written so far; mark[marks % LATE_MARKS] is next */
	struct late_mark mark[LATE_MARKS];

	uint64_t events;
	uint64_t main_cause_events[LATE_CAUSES];
	uint64_t ns[LATE_CAUSES];
	struct late_event
		worst[LATE_WORST]; /* the four most late, largest first */
};

void lateness_init(struct lateness *l, uint64_t threshold_ns);
/* Samples the calling thread's run delay from now on; -errno if the
 * kernel does not offer it (no schedstat). */
int lateness_sample_run_delay(struct lateness *l);
void lateness_destroy(struct lateness *l);

/* The thread enters phase p at `now` (CLOCK_MONOTONIC ns). */
void lateness_mark(struct lateness *l, enum late_phase p, uint64_t now);

/*
 * A hard timer that expired at `expiry` was delivered on vector `vector`
 * at `delivered`. Later than the threshold, its span is charged to causes,
 * counted, and copied to *ev: true. Otherwise false, nothing counted.
 */
bool lateness_attribute(struct lateness *l, uint8_t vector, uint64_t expiry,
			uint64_t delivered, struct late_event *ev);

#endif
