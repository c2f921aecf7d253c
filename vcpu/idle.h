/* SPDX-License-Identifier: MIT */
/*
 * The halted vCPU's sleep: one io_uring wait on two things, a read of the
 * vCPU's kick eventfd and (when a hard timer is pending) a timeout. With no
 * hard timer pending it sleeps with no timeout at all, so an idle vCPU whose
 * timers are all deferrable costs the host no wakeup.
 *
 * The eventfd read stays queued across waits (re-armed only after it
 * completes), so a plain wait is a single io_uring_enter with no submission.
 * The ring accepts nothing but reads (io_uring restrictions), so under
 * lull's seccomp filter it cannot be used to reach what the filter forbids.
 */
#ifndef LULL_IDLE_H
#define LULL_IDLE_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

struct idle_wait {
	struct io_uring ring;
	int kick_fd;
	bool read_queued;
	uint64_t read_buf;
};

int idle_init(struct idle_wait *iw);
/* The ring's fd: the one io_uring_enter() a vCPU's filter allows. */
static inline int idle_ring_fd(const struct idle_wait *iw)
{
	return iw->ring.ring_fd;
}
void idle_destroy(struct idle_wait *iw);
/* Sleeps until a kick or until CLOCK_MONOTONIC reaches deadline_ns
 * (UINT64_MAX: no timeout). Returns 0, or a negative errno on failure. */
int idle_sleep(struct idle_wait *iw, uint64_t deadline_ns);
/* Wakes a sleeper (or makes its next sleep return at once). Any thread. */
void idle_kick(struct idle_wait *iw);

#endif
