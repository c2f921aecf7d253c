/* SPDX-License-Identifier: MIT */
/*
 * --stats: one JSON object describing the run (README, docs/benchmarks.md):
 * wall and host CPU time, memory, untrusted-guest counters, and
 * per vCPU wakeups, halts, exits, injections, timers fired by kind and the
 * lateness / deferral histograms as p50, p99, max.
 */
#ifndef LULL_STATS_H
#define LULL_STATS_H

#include <stdint.h>
#include <stdio.h>

struct vm;

/*
 * Opens the --stats destination before the run, so that a path lull cannot
 * write is a usage error rather than a run lost at the end. path "-" is
 * stdout. Returns NULL with errno set.
 */
FILE *stats_open(const char *path);
/* Writes the object and closes f. Returns 0 or a negative errno. */
int stats_write(struct vm *vm, FILE *f, uint64_t process_start_ns);

#endif
