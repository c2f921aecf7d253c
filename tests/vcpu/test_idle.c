// SPDX-License-Identifier: MIT
/*
 * The halted vCPU's wait (vcpu/idle.c) and the kick handshake
 * (vcpu_kick): a kick is never lost, whichever side comes first, and a
 * wait with no deadline ends only for a kick.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "timers/clock.h"
#include "vcpu/vcpu.h"

static bool kick_fd_readable(struct idle_wait *iw)
{
	struct pollfd p = { .fd = iw->kick_fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

Test(idle, a_kick_before_the_wait_ends_it_at_once)
{
	struct idle_wait iw;

	cr_assert_eq(idle_init(&iw), 0);
	idle_kick(&iw);
	/* no deadline: only the kick already made can end this */
	cr_assert_eq(idle_sleep(&iw, UINT64_MAX), 0);
	idle_destroy(&iw);
}

/* Without a kick the deadline ends the wait (a hang fails the test by
 * its timeout), and the wait sleeps rather than spins until then. */
Test(idle, a_deadline_ends_an_unkicked_wait)
{
	struct idle_wait iw;
	uint64_t deadline;
	unsigned returns = 0;

	cr_assert_eq(idle_init(&iw), 0);
	deadline = clock_now_ns() + 20000000;
	while (clock_now_ns() < deadline) {
		cr_assert_eq(idle_sleep(&iw, deadline), 0);
		returns++;
	}
	cr_assert_lt(returns, 1000, "%u returns in 20 ms: a spin", returns);
	idle_destroy(&iw);
}

static void *kick_later(void *arg)
{
	usleep(20000);
	idle_kick(arg);
	return NULL;
}

Test(idle, a_kick_from_another_thread_wakes_an_untimed_wait)
{
	struct idle_wait iw;
	pthread_t t;

	cr_assert_eq(idle_init(&iw), 0);
	cr_assert_eq(pthread_create(&t, NULL, kick_later, &iw), 0);
	cr_assert_eq(idle_sleep(&iw, UINT64_MAX), 0);
	pthread_join(t, NULL);
	idle_destroy(&iw);
}

/* vcpu_kick writes the eventfd only when the vCPU says it is idle; in the
 * VMM, the flag alone, which the vCPU checks before it sleeps. */
Test(idle, kick_handshake_follows_the_vcpu_state)
{
	static struct vcpu v;
	static atomic_bool stop;

	cr_assert_eq(vcpu_init(&v, 0, -1, -1, NULL, NULL, &stop, 0,
			       clock_now_ns()),
		     0);
	cr_assert_eq(idle_init(&v.idle), 0);

	atomic_store(&v.state, VCPU_IN_VMM);
	vcpu_kick(&v);
	cr_assert(atomic_load(&v.kick_pending));
	cr_assert_not(kick_fd_readable(&v.idle), "no wakeup for a busy vCPU");

	atomic_store(&v.kick_pending, false);
	atomic_store(&v.state, VCPU_IDLE);
	vcpu_kick(&v);
	cr_assert(atomic_load(&v.kick_pending));
	cr_assert(kick_fd_readable(&v.idle), "an idle vCPU is woken");
	cr_assert_eq(idle_sleep(&v.idle, UINT64_MAX), 0,
		     "and its next wait returns at once");
	idle_destroy(&v.idle);
}
