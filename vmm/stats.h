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

struct vm;

/* path "-" is stdout. Returns 0 or a negative errno. */
int stats_write(struct vm *vm, const char *path, uint64_t process_start_ns);

#endif
