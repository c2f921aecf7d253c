/* SPDX-License-Identifier: MIT */
/*
 * --stats: one JSON object describing the run (README, docs/benchmarks.md):
 * wall and host CPU time, memory, untrusted-guest counters, and
 * per vCPU wakeups, halts, exits (in all, by reason and, for port exits,
 * by device), injections, timers fired by kind and the lateness /
 * deferral histograms as p50, p99, max.
 */
#ifndef LULL_STATS_H
#define LULL_STATS_H

#include <stdint.h>
#include <stdio.h>

struct vm;

struct stats_out {
	FILE *f;
	/* /proc/self/status, for the resident set: opened with the output,
	 * because the main thread cannot open files once it is confined */
	int proc_status;
};

/*
 * Opens the --stats destination before the run, so that a path lull cannot
 * write is a usage error rather than a run lost at the end. path "-" is
 * stdout. Returns 0 or a negative errno.
 */
int stats_open(struct stats_out *s, const char *path);
/* Writes the object and closes s. Returns 0 or a negative errno. */
int stats_write(struct vm *vm, struct stats_out *s,
		uint64_t process_start_ns);

#endif
