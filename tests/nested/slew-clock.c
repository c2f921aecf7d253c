// SPDX-License-Identifier: MIT
/*
 * slew-clock PERMILLE -- COMMAND [ARG...]
 *
 * Runs COMMAND while the machine's CLOCK_MONOTONIC runs PERMILLE parts in
 * a thousand faster than CLOCK_MONOTONIC_RAW (negative: slower), as NTP
 * makes it while it slews the clock towards its servers' time (chrony
 * does so at up to 83 parts in a thousand), then puts the clock's rate
 * back and exits with COMMAND's status.
 *
 * It lengthens the kernel's tick (adjtimex ADJ_TICK, at most 100 parts
 * in a thousand either way), which needs CAP_SYS_TIME and changes the
 * clock of the whole machine: it is for tests/nested/lull-nested's
 * disposable one. Before COMMAND starts it measures the two clocks over
 * half a second and refuses (status 1) unless they part as asked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int set_tick(long tick)
{
	struct timex tx = { .modes = ADJ_TICK, .tick = tick };

	if (adjtimex(&tx) < 0) {
		fprintf(stderr, "slew-clock: adjtimex(ADJ_TICK %ld): %s\n",
			tick, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * CLOCK_MONOTONIC_RAW read between two reads of CLOCK_MONOTONIC, the
 * tightest pair of a few: a preemption between the reads of the two
 * clocks would otherwise be counted as the clocks' parting (one of a
 * millisecond is a part in 500 of the measurement).
 */
static void read_pair(int64_t *mono, int64_t *raw)
{
	int64_t best = INT64_MAX;

	for (int i = 0; i < 8; i++) {
		int64_t before = read_ns(CLOCK_MONOTONIC);
		int64_t r = read_ns(CLOCK_MONOTONIC_RAW);
		int64_t after = read_ns(CLOCK_MONOTONIC);

		if (after - before < best) {
			best = after - before;
			*mono = before + best / 2;
			*raw = r;
		}
	}
}

/* CLOCK_MONOTONIC's rate over CLOCK_MONOTONIC_RAW's, less 1, in ppm,
 * over half a second. */
static long measured_ppm(void)
{
	const struct timespec pause = { .tv_nsec = 500000000 };
	int64_t mono0, raw0, mono1, raw1;

	read_pair(&mono0, &raw0);
	nanosleep(&pause, NULL);
	read_pair(&mono1, &raw1);
	return (long)(((mono1 - mono0) - (raw1 - raw0)) * 1000000 /
		      (raw1 - raw0));
}

int main(int argc, char **argv)
{
	struct timex now = { .modes = 0 };
	long permille, tick, ppm;
	char *end;
	int status;
	pid_t pid;

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: slew-clock PERMILLE -- COMMAND [ARG...]\n");
		return 2;
	}
	permille = strtol(argv[1], &end, 10);
	if (*end || permille < -100 || permille > 100) {
		fprintf(stderr, "slew-clock: PERMILLE is -100..100, not %s\n",
			argv[1]);
		return 2;
	}
	if (adjtimex(&now) < 0) {
		fprintf(stderr, "slew-clock: adjtimex: %s\n", strerror(errno));
		return 1;
	}
	tick = now.tick + now.tick * permille / 1000;
	if (set_tick(tick) < 0)
		return 1;
	ppm = measured_ppm();
	fprintf(stderr,
		"slew-clock: tick %ld -> %ld us: CLOCK_MONOTONIC runs %+ld ppm against CLOCK_MONOTONIC_RAW\n",
		now.tick, tick, ppm);
	/* within two parts in a thousand of what was asked, or the test
	 * is moot */
	if (labs(ppm - permille * 1000) > 2000) {
		fprintf(stderr, "slew-clock: asked for %+ld ppm\n", permille * 1000);
		set_tick(now.tick);
		return 1;
	}

	pid = fork();
	if (pid < 0) {
		perror("slew-clock: fork");
		set_tick(now.tick);
		return 1;
	}
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		fprintf(stderr, "slew-clock: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("slew-clock: waitpid");
			status = 1 << 8;
			break;
		}
	if (set_tick(now.tick) < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
