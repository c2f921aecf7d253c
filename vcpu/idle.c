// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "timers/clock.h"
#include "vcpu/idle.h"

#define IDLE_READ_TAG 1

/*
 * A submission queue entry can do I/O that seccomp never sees (it filters
 * system calls, and an SQE is not one): this ring may only read, and it
 * is enabled only once that is registered. The raw system call, because
 * Debian 12's liburing declares its wrappers but does not export them.
 */
static int restrict_ring(struct io_uring *ring)
{
	struct io_uring_restriction only_read = {
		.opcode = IORING_RESTRICTION_SQE_OP,
		.sqe_op = IORING_OP_READ,
	};

	if (syscall(SYS_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_RESTRICTIONS, &only_read, 1) < 0 ||
	    syscall(SYS_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

int idle_init(struct idle_wait *iw)
{
	int r;

	memset(iw, 0, sizeof(*iw));
	/* Blocking on purpose: io_uring fails a read of an O_NONBLOCK
	 * eventfd with -EAGAIN instead of waiting for it. */
	iw->kick_fd = eventfd(0, EFD_CLOEXEC);
	if (iw->kick_fd < 0)
		return -errno;
	r = io_uring_queue_init(4, &iw->ring, IORING_SETUP_R_DISABLED);
	if (r < 0) {
		close(iw->kick_fd);
		iw->kick_fd = -1;
		return r;
	}
	r = restrict_ring(&iw->ring);
	if (r < 0) {
		idle_destroy(iw);
		return r;
	}
	return 0;
}

void idle_destroy(struct idle_wait *iw)
{
	if (iw->kick_fd < 0)
		return;
	io_uring_queue_exit(&iw->ring);
	close(iw->kick_fd);
	iw->kick_fd = -1;
}

static int queue_kick_read(struct idle_wait *iw)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&iw->ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, iw->kick_fd, &iw->read_buf,
			   sizeof(iw->read_buf), 0);
	io_uring_sqe_set_data64(sqe, IDLE_READ_TAG);
	iw->read_queued = true;
	return 0;
}

static void reap(struct idle_wait *iw)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&iw->ring, &cqe) == 0) {
		if (io_uring_cqe_get_data64(cqe) == IDLE_READ_TAG)
			iw->read_queued = false;
		io_uring_cqe_seen(&iw->ring, cqe);
	}
}

int idle_sleep(struct idle_wait *iw, uint64_t deadline_ns)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts, *tsp = NULL;
	int r;

	if (!iw->read_queued) {
		r = queue_kick_read(iw);
		if (r < 0)
			return r;
	}
	if (deadline_ns != UINT64_MAX) {
		/*
		 * The ext-arg timeout of io_uring_enter is relative; it is
		 * derived from CLOCK_MONOTONIC right here, so the absolute
		 * deadline is kept to within the few ns of this call.
		 */
		uint64_t now = clock_now_ns();
		uint64_t rel = deadline_ns > now ? deadline_ns - now : 0;

		ts.tv_sec = (long long)(rel / 1000000000ull);
		ts.tv_nsec = (long long)(rel % 1000000000ull);
		tsp = &ts;
	}
	r = io_uring_submit_and_wait_timeout(&iw->ring, &cqe, 1, tsp, NULL);
	if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN)
		return r;
	reap(iw);
	return 0;
}

void idle_kick(struct idle_wait *iw)
{
	uint64_t one = 1;
	ssize_t n = write(iw->kick_fd, &one, sizeof(one));

	(void)n; /* a failed write means the counter is already non-zero */
}
