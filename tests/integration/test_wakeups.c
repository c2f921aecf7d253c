// SPDX-License-Identifier: MIT
/*
 * Host wakeups, cross-checked against the kernel rather than lull's own
 * stats: while the idle guest runs, the voluntary context switches of
 * each vCPU thread (lull names them vcpu<N>) over a window inside the run.
 * A halted vCPU sleeps in one wait per wakeup, so the delta counts them.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "runner.h"

#define MAX_VCPUS 8
#define TICK_HZ 100 /* idle's 10 ms housekeeping tick */

/* voluntary_ctxt_switches of each vcpuN thread of pid; -1 if not found. */
static void vcpu_switches(pid_t pid, long sw[MAX_VCPUS])
{
	char path[320], buf[64];
	struct dirent *d;
	DIR *dir;

	for (int i = 0; i < MAX_VCPUS; i++)
		sw[i] = -1;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	cr_assert_not_null(dir, "cannot list %s", path);
	while ((d = readdir(dir))) {
		unsigned idx;
		char *text, *p;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid,
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread just ended */
		buf[0] = '\0';
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
		if (sscanf(buf, "vcpu%u\n", &idx) != 1 || idx >= MAX_VCPUS)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid,
			 d->d_name);
		text = read_file(path, NULL);
		p = text ? strstr(text, "\nvoluntary_ctxt_switches:") : NULL;
		if (p)
			sw[idx] =
				strtol(p + strlen("\nvoluntary_ctxt_switches:"),
				       NULL, 10);
		free(text);
	}
	closedir(dir);
}

/*
 * One run of idle with 2 vCPUs for `seconds` in mode, sampling the vCPU
 * threads at two instants window_s apart inside it. The window counts
 * only if it closed before the guest's end timer could fire: idle arms
 * it `seconds` after it started, which is after the spawn. False when a
 * slow host stretched the sampling past that (the deltas are then not of
 * an idle window at all).
 */
static bool sample_idle_once(const char *mode, unsigned seconds,
			     long delta[2], double *window_s)
{
	struct timespec settle = { 0, 300000000 }, window = { 1, 0 };
	long before[MAX_VCPUS], after[MAX_VCPUS];
	char arg[32];
	double t0, t1;
	struct proc p;
	struct run r;

	snprintf(arg, sizeof(arg), "seconds=%u", seconds);
	cr_assert_eq(spawn_lull(&p, "run", "--vcpus", "2", "--timer-mode", mode,
				"--cmdline", arg, guest("idle"), NULL),
		     0);
	cr_assert(proc_wait_output(&p, "idle: backend=", 10.0 + seconds),
		  "idle never started");
	nanosleep(&settle, NULL); /* let both vCPUs arm their ticks and halt */

	vcpu_switches(p.pid, before);
	t0 = now_s();
	nanosleep(&window, NULL);
	vcpu_switches(p.pid, after);
	t1 = now_s();
	proc_wait(&p, 30.0 + seconds, &r);

	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	run_free(&r);
	if (t1 >= p.started + seconds) {
		cr_log_info("%s: sampling ended %.3f s after the spawn, past the %u s run: again, longer",
			    mode, t1 - p.started, seconds);
		return false;
	}
	for (int i = 0; i < 2; i++) {
		cr_assert(before[i] >= 0 && after[i] >= 0,
			  "no thread named vcpu%d in /proc/%d/task", i, p.pid);
		delta[i] = after[i] - before[i];
	}
	cr_log_info("%s: vcpu0 +%ld, vcpu1 +%ld voluntary switches in %.3f s",
		    mode, delta[0], delta[1], t1 - t0);
	*window_s = t1 - t0;
	return true;
}

/* The deltas of an idle window inside the run; returns its length. */
static double sample_idle(const char *mode, long delta[2])
{
	unsigned seconds = 2;
	double window_s = 0;

	require_guest("idle");
	for (int i = 0; i < 4; i++, seconds *= 2)
		if (sample_idle_once(mode, seconds, delta, &window_s))
			return window_s;
	cr_assert_fail("%s: no 1 s sampling window fitted in a %u s run",
		       mode, seconds / 2);
	return 0;
}

Test(wakeups, idle_deferrable_vcpu_threads_stay_asleep)
{
	long delta[2];

	sample_idle("deferrable", delta);

	/* vCPU 1 has only its deferrable tick: no wakeup inside the window. */
	cr_assert_leq(delta[1], 2, "vcpu1 woke %ld times in a 1 s idle window",
		      delta[1]);
	/* vCPU 0's one hard timer ends the run, after the window. */
	cr_assert_leq(delta[0], 2, "vcpu0 woke %ld times in a 1 s idle window",
		      delta[0]);
}

Test(wakeups, idle_strict_vcpu_threads_wake_per_tick)
{
	long delta[2];
	double window = sample_idle("strict", delta);
	double want = TICK_HZ * window;

	for (int i = 0; i < 2; i++) {
		cr_assert_geq(delta[i], 0.5 * want,
			      "vcpu%d: %ld switches, want about %.0f", i,
			      delta[i], want);
		cr_assert_leq(delta[i], 1.5 * want,
			      "vcpu%d: %ld switches, want about %.0f", i,
			      delta[i], want);
	}
}

/*
 * lull's own count against the kernel's, for the whole run of every vCPU
 * thread: --stats reports host_wakeups (returns from the idle wait) next
 * to kernel_voluntary_switches (each vCPU thread's sleeps from its first
 * entry into the guest to its exit). A running vCPU sleeps a few times for
 * other reasons (the console lock, which four vCPUs printing at once
 * contend for; the sanitizer runtimes add their own), and a wait that
 * finds its kick already there
 * returns without sleeping: the two may differ by a few, not by a trend
 * (a deferrable tick waking the host unseen would show ~100 here).
 */
static void check_counts_agree(const char *mode)
{
	const char *json;
	struct run r;
	char path[64];

	require_guest("idle");
	run_lull(&r, 60.0, "run", "--vcpus", "4", "--timer-mode", mode,
		 "--cmdline", "seconds=1", "--stats", "-", guest("idle"), NULL);
	json = find_json(r.out);
	cr_assert_eq(r.status, 0, "status %d\n%s\n%s", r.status, r.out, r.err);
	cr_assert_not_null(json, "no stats:\n%s", r.out);

	for (unsigned i = 0; i < 4; i++) {
		uint64_t lull, kernel;

		snprintf(path, sizeof(path), "vcpus[%u].host_wakeups", i);
		cr_assert(stats_u64(json, path, &lull), "%s missing", path);
		snprintf(path, sizeof(path), "vcpus[%u].kernel_voluntary_switches", i);
		cr_assert(stats_u64(json, path, &kernel), "%s missing", path);
		uint64_t slack = 10 + lull / 10;

		cr_assert(kernel + slack >= lull && kernel <= lull + slack,
			  "%s vCPU %u: lull counted %lu wakeups, the kernel %lu sleeps\n%s",
			  mode, i, lull, kernel, json);
	}
	run_free(&r);
}

Test(wakeups, stats_agree_with_the_kernel_deferrable)
{
	check_counts_agree("deferrable");
}

Test(wakeups, stats_agree_with_the_kernel_strict)
{
	check_counts_agree("strict");
}

static uint64_t stat_of(const char *json, const char *group, const char *key)
{
	char path[128];
	uint64_t v;

	snprintf(path, sizeof(path), "vcpus[0].%s%s", group, key);
	cr_assert(stats_u64(json, path, &v), "%s missing\n%s", path, json);
	return v;
}

/*
 * Every exit has one reason and every port exit one device: the
 * breakdowns add up to the totals, halts are the HLT exits, and the tick
 * guest's hypercalls and console lines show where they went.
 */
Test(wakeups, exits_by_reason_add_up)
{
	static const char *const reasons[] = { "hlt", "io", "mmio", "msr",
					       "irq_window", "kick", "other" };
	static const char *const devices[] = { "hypercall", "console",
					       "platform", "unclaimed" };
	const char *json, *by = "exits_by_reason.", *dev = "io_exits_by_device.";
	uint64_t sum = 0, io = 0;
	struct run r;

	require_guest("tick");
	run_lull(&r, 30.0, "run", "--cmdline", "seconds=1", "--stats", "-",
		 guest("tick"), NULL);
	json = find_json(r.out);
	cr_assert_eq(r.status, 0, "status %d\n%s\n%s", r.status, r.out, r.err);
	cr_assert_not_null(json, "no stats:\n%s", r.out);
	for (unsigned k = 0; k < sizeof(reasons) / sizeof(*reasons); k++)
		sum += stat_of(json, by, reasons[k]);
	for (unsigned k = 0; k < sizeof(devices) / sizeof(*devices); k++)
		io += stat_of(json, dev, devices[k]);
	cr_assert_eq(sum, stat_of(json, "", "exits"),
		     "the reasons add up to %lu exits\n%s", sum, json);
	cr_assert_eq(io, stat_of(json, by, "io"),
		     "the devices add up to %lu port exits\n%s", io, json);
	cr_assert_eq(stat_of(json, by, "hlt"), stat_of(json, "", "halts"),
		     "HLT exits are not the halts\n%s", json);
	cr_assert_gt(stat_of(json, dev, "hypercall"), 0,
		     "no hypercall exit\n%s", json);
	cr_assert_gt(stat_of(json, dev, "console"), 0,
		     "the guest printed through no console exit\n%s", json);
	run_free(&r);
}
