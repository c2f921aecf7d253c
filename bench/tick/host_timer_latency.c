// SPDX-License-Identifier: MIT
/*
 * host-timer-latency: the floor under any VMM's timer lateness on this
 * host. Sleeps to absolute CLOCK_MONOTONIC deadlines (timer slack 1 ns, as
 * lull's vCPU threads) and prints how late each wake was: p50 p99 max in ns.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "timers/clock.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long period_us = argc > 1 ? atol(argv[1]) : 100000;
	long count = argc > 2 ? atol(argv[2]) : 50;
	uint64_t *late;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: host-timer-latency [PERIOD_US [COUNT]]   (default 100000 50)\n"
		     "prints: p50_ns p99_ns max_ns");
		return 0;
	}
	if (period_us <= 0 || count <= 0 || !(late = calloc((size_t)count, sizeof(*late)))) {
		fputs("host-timer-latency: PERIOD_US and COUNT must be positive\n", stderr);
		return 64;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (long i = 0; i < count; i++) {
		uint64_t deadline = clock_now_ns() + (uint64_t)period_us * 1000;
		struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ull),
				       .tv_nsec = (long)(deadline % 1000000000ull) };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		late[i] = clock_now_ns() - deadline;
	}
	qsort(late, (size_t)count, sizeof(*late), cmp_u64);
	printf("%lu %lu %lu\n", late[count / 2], late[(count * 99) / 100], late[count - 1]);
	free(late);
	return 0;
}
