/* SPDX-License-Identifier: MIT */
/*
 * Where a late hard timer's time went.
 *
 * The vCPU thread marks each change of what it is doing: running the
 * guest (inside KVM_RUN), sleeping in its halt (idle_sleep), lull's own
 * work, and the catch-up within that work where the wheel runs what is due
 * and a due timer becomes a pending interrupt (it is "taken"). A hard timer
 * delivered more than the threshold after its expiry has that span laid
 * over the phases, each piece charged to a cause:
 *
 *   wake       halted, not yet taken: the host woke the thread late (its
 *              timer was late, or the thread was stopped)
 *   kick       in the guest, not yet taken: the kick out of KVM_RUN (the
 *              thread's timer signal) came late
 *   masked     taken, but the guest could not accept it: it ran or halted
 *              with interrupts off, a TPR or a vector in service above it
 *   vmm        lull's own work: handling exits, catching up, injecting
 *   blocked    of lull's work, the time its thread slept in it (a lock, a
 *              full console); only where the scheduler is sampled
 *   preempted  runnable but not running, out of any of the above; only
 *              where the scheduler is sampled
 *   unseen     before the oldest mark kept
 *
 * Up to the catch-up that takes it, a timer's span is read off the last few
 * marks; from then on off running sums per phase, snapshotted when it is
 * taken, so that a timer held off for a long run of exits is charged in
 * full. A mark costs a clock read. The scheduler's view of the thread
 * (time on a CPU from its CPU-time clock, time waiting for one from
 * /proc/thread-self/schedstat) costs two system calls per mark, so it is
 * sampled only on request; without it the
 * time the host did not run the thread stays in the cause of its phase.
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
	LATE_PHASES
};

enum late_cause {
	LATE_WAKE,
	LATE_KICK,
	LATE_MASKED,
	LATE_VMM,
	LATE_BLOCKED,
	LATE_PREEMPTED,
	LATE_UNSEEN,
	LATE_CAUSES
};

extern const char *const late_cause_names[LATE_CAUSES];

/* Marks kept: a timer is taken at most a few phases after its expiry. */
#define LATE_MARKS 32
/* Timers taken and not yet delivered, followed at once. */
#define LATE_PENDING 8
#define LATE_WORST 4

struct late_event {
	uint64_t expiry; /* CLOCK_MONOTONIC ns */
	uint64_t late_ns;
	uint64_t ns[LATE_CAUSES];
	uint8_t vector;
	uint8_t main_cause; /* the largest share */
};

/* The scheduler's view of the thread, in ns, when sampled. */
struct late_sched {
	uint64_t on_cpu, waiting;
};

/* Time per phase since the thread began, and the scheduler's share. */
struct late_sums {
	uint64_t ns[LATE_PHASES];
	struct late_sched sched[LATE_PHASES];
};

struct late_mark {
	uint64_t at;
	struct late_sched sched;
	uint8_t phase;
};

struct late_pending {
	uint64_t expiry; /* 0: a free entry */
	uint8_t vector;
	uint64_t taken_ns[LATE_CAUSES]; /* expiry to the catch-up */
	struct late_sums at_take;
};

struct lateness {
	uint64_t threshold_ns;
	int sched_fd; /* -1: the scheduler is not sampled */
	unsigned marks; /* written so far; mark[marks % LATE_MARKS] is next */
	struct late_mark mark[LATE_MARKS];
	struct late_sums sums; /* up to the last mark */
	struct late_pending pending[LATE_PENDING];

	uint64_t events;
	uint64_t main_cause_events[LATE_CAUSES];
	uint64_t ns[LATE_CAUSES];
	struct late_event
		worst[LATE_WORST]; /* the four most late, largest first */
};

void lateness_init(struct lateness *l, uint64_t threshold_ns);
/* Samples the calling thread's schedstat from now on; -errno if the kernel
 * does not offer it. */
int lateness_sample_sched(struct lateness *l);
void lateness_destroy(struct lateness *l);

/* The thread enters phase p at `now` (CLOCK_MONOTONIC ns). */
void lateness_mark(struct lateness *l, enum late_phase p, uint64_t now);

/* A hard timer that expired at `expiry` now times vector `vector`'s
 * delivery: called in the catch-up that took it. */
void lateness_taken(struct lateness *l, uint8_t vector, uint64_t expiry);

/*
 * Vector `vector`, timed from a hard expiry at `expiry`, was delivered at
 * `delivered`. Later than the threshold, its span is charged to causes,
 * counted, and copied to *ev: true. Otherwise false, nothing counted.
 */
bool lateness_delivered(struct lateness *l, uint8_t vector, uint64_t expiry,
			uint64_t delivered, struct late_event *ev);

#endif
