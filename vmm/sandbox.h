/* SPDX-License-Identifier: MIT */
/*
 * Least privilege, per thread. Once a thread has made the last system call
 * of its set-up, it confines itself: no_new_privs, no capabilities (bounding,
 * ambient, effective, permitted, inheritable), and a seccomp filter that
 * allows only the calls that thread makes from then on (docs/architecture.md
 * lists them, thread by thread, with the reason for each).
 *
 * Capabilities and filters belong to a thread, not to the process, so each
 * thread confines itself: each vCPU before it first enters the guest, the
 * main thread once the vCPUs are running.
 *
 * A call outside the filter is lull's bug, not the guest's: the thread that
 * made it names itself and the call on stderr and lull exits with
 * LULL_EXIT_SECCOMP at once. --no-seccomp (sandbox_init(false)) leaves the
 * filters out and keeps the rest, for debugging such a bug.
 */
#ifndef LULL_SANDBOX_H
#define LULL_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Before any thread confines itself: whether filters are used, and the
 * SIGSYS handler that reports a forbidden call. Returns 0 or -errno.
 */
int sandbox_init(bool seccomp);

/*
 * The calling thread confines itself. The main thread, which writes the
 * console, may read only the console's eventfd and send only to its
 * destination (a socket, console.h). The vCPU's may only use its own vCPU
 * fd, its own idle ring and, where it samples the scheduler (lateness.h),
 * read its schedstat fd (-1: none). Returns 0, or -errno with one sentence
 * in err.
 */
int sandbox_enter_main(int console_wake_fd, int console_out_fd, char *err,
		       size_t errlen);
int sandbox_enter_vcpu(unsigned index, int vcpu_fd, int ring_fd,
		       int sched_fd, char *err, size_t errlen);

#endif
