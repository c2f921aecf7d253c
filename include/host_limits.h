/* SPDX-License-Identifier: MIT */
/*
 * What to raise when the host refuses lull a thread, a file or memory: a VMM that
 * runs by the thousand meets the host's limits first, and a bare
 * "Resource temporarily unavailable" names none of them.
 */
#ifndef LULL_HOST_LIMITS_H
#define LULL_HOST_LIMITS_H

#include <errno.h>

/* A clause to append to an error from creating a thread (or process). */
static inline const char *host_task_limit_hint(int err)
{
	if (err == EAGAIN)
		return " (the host's limit on tasks: raise kernel.pid_max or kernel.threads-max, ulimit -u, or the cgroup's pids.max)";
	if (err == ENOMEM)
		return " (the host is out of memory, or the cgroup's memory.max is reached)";
	return "";
}

/* A clause to append to an error from opening a file or an eventfd. */
static inline const char *host_fd_limit_hint(int err)
{
	if (err == EMFILE)
		return " (the limit on open files: ulimit -n)";
	if (err == ENFILE)
		return " (the host's limit on open files: fs.file-max)";
	return "";
}

#endif
