// SPDX-License-Identifier: MIT
/*
 * cpu-gaps: how much of a running thread's time its CPU spends elsewhere,
 * with the other CPUs idle and with them busy.
 *
 * A thread pinned to CPU 0 reads CLOCK_MONOTONIC in a loop; a step between
 * two reads longer than GAP_NS is time the thread was on its CPU by the
 * kernel's account but did not run. On a machine whose CPUs are real, or
 * are a hypervisor's vCPUs with their own host CPUs, the steps stay short
 * either way. On one whose CPUs take turns on fewer host threads (QEMU's
 * single-threaded TCG, which runs tests/nested/lull-nested), the thread
 * loses the other CPUs' turns once they are busy, and every figure that
 * counts a thread's running time as work (lull's `vmm` share of a late
 * timer, schedstat's CPU time) counts those turns too.
 *
 * usage: cpu-gaps [SECONDS]   (default 3; each half runs that long)
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timers/clock.h"

#define GAP_NS 100000ULL

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void measure(const char *what, uint64_t window_ns)
{
	uint64_t start = clock_now_ns(), last = start, lost = 0, worst = 0;
	unsigned long gaps = 0;

	while (last - start < window_ns) {
		uint64_t now = clock_now_ns(), step = now - last;

		if (step > GAP_NS) {
			gaps++;
			lost += step;
			if (step > worst)
				worst = step;
		}
		last = now;
	}
	printf("%-16s %8lu %9.1f %%  %9.3f ms\n", what, gaps,
	       100.0 * (double)lost / (double)(last - start), (double)worst / 1e6);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t window_ns = (uint64_t)(seconds * 1e9);
	pid_t *spinners;

	if (argc > 2 || seconds <= 0) {
		fprintf(stderr, "usage: cpu-gaps [SECONDS]\n");
		return 2;
	}
	if (cpus < 2) {
		fprintf(stderr, "cpu-gaps: needs two CPUs, this machine has %ld\n", cpus);
		return 1;
	}
	if (pin(0) < 0) {
		perror("cpu-gaps: sched_setaffinity");
		return 1;
	}
	printf("a thread on CPU 0, steps of its clock over %llu us, %.1f s each\n",
	       GAP_NS / 1000, seconds);
	printf("%-16s %8s %11s  %12s\n", "other CPUs", "gaps", "time lost", "worst gap");
	measure("idle", window_ns);

	spinners = calloc((size_t)cpus, sizeof(*spinners));
	if (!spinners)
		return 1;
	for (long cpu = 1; cpu < cpus; cpu++) {
		spinners[cpu] = fork();
		if (spinners[cpu] < 0) {
			perror("cpu-gaps: fork");
			return 1;
		}
		if (spinners[cpu] == 0) {
			if (pin((int)cpu) < 0)
				_exit(1);
			for (;;)
				;
		}
	}
	measure("busy (spinning)", window_ns);
	for (long cpu = 1; cpu < cpus; cpu++) {
		kill(spinners[cpu], SIGKILL);
		waitpid(spinners[cpu], NULL, 0);
	}
	free(spinners);
	return 0;
}
