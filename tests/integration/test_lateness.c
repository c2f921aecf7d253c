// SPDX-License-Identifier: MIT
/*
 * Where a late hard timer's time went (--stats "lateness", vcpu/lateness.h):
 * each cause forced on purpose and seen charged. The `latency` guest arms
 * one-shot hard timers a fixed time ahead and waits for each as told:
 * halted, spinning with interrupts on, or with them off for a while.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#define LIMIT_S 60.0
#define MS 1000000ull

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* vcpus[0].lateness.PATH */
static uint64_t late_stat(const char *json, const char *path)
{
	char full[96];
	uint64_t v;

	snprintf(full, sizeof(full), "vcpus[0].lateness.%s", path);
	cr_assert(stats_u64(json, full, &v), "no %s in --stats:\n%s", full,
		  json);
	return v;
}

/*
 * One timer `ahead_ms` ahead, waited for as `wait` says; the whole lull
 * process is stopped `stop_ms` after the guest starts, for `stopped_ms`.
 */
static void run_stopped(struct run *r, const char *wait, unsigned ahead_ms,
			unsigned stop_ms, unsigned stopped_ms)
{
	char cmdline[96];
	struct proc p;
	char *argv[] = { (char *)lull_bin(),
			 "run",
			 "--stats",
			 "-",
			 "--cmdline",
			 cmdline,
			 (char *)guest("latency"),
			 NULL };

	require_guest("latency");
	snprintf(cmdline, sizeof(cmdline), "count=1 ahead_us=%u wait=%s",
		 ahead_ms * 1000, wait);
	cr_assert_eq(proc_spawn(&p, argv), 0);
	cr_assert(proc_wait_output(&p, "hard one-shots", LIMIT_S),
		  "the guest never started");
	sleep_ms(stop_ms);
	kill(p.pid, SIGSTOP);
	sleep_ms(stopped_ms);
	kill(p.pid, SIGCONT);
	proc_wait(&p, LIMIT_S, r);
	cr_assert_eq(r->status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r->status, r->out, r->err);
	cr_assert(find_json(r->out), "no --stats:\n%s", r->out);
}

/*
 * One 300 ms timer waited for as `wait` says, the thread stopped from 50 to
 * 450 ms: the timer came due while the host was not running the thread,
 * and its ~150 ms are charged to `cause`, most of it (the rest is the
 * host's way back after the stop: 19 of 180 ms in a sanitizer build in
 * the loaded runner).
 */
static void check_stopped(const char *wait, const char *cause)
{
	char share[32], events[32];
	struct run r;
	const char *json;
	uint64_t late, charged;

	run_stopped(&r, wait, 300, 50, 400);
	json = find_json(r.out);
	cr_log_info("stopped (wait=%s): %s", wait,
		    strstr(json, "\"lateness\""));
	snprintf(share, sizeof(share), "worst[0].%s_ns", cause);
	snprintf(events, sizeof(events), "%s.events", cause);
	late = late_stat(json, "worst[0].late_ns");
	charged = late_stat(json, share);
	cr_assert_geq(late, 100 * MS, "late only %lu ns", late);
	cr_assert_geq(charged, late * 3 / 4, "%s %lu of %lu ns", cause,
		      charged, late);
	cr_assert_geq(late_stat(json, events), 1);
	run_free(&r);
}

/* Halted: to lull, a wake that came late. */
Test(lateness, a_stopped_halted_thread_is_a_late_wake)
{
	check_stopped("halt", "wake");
}

/* Spinning with interrupts on: the kick out of KVM_RUN could not come
 * until the thread ran again. */
Test(lateness, a_stopped_running_thread_is_a_late_kick)
{
	check_stopped("spin", "kick");
}

/*
 * Interrupts off for 60 ms past each expiry: the guest's own doing. With
 * --trace-late, whose scheduler samples split off the time the host kept
 * the thread from a CPU (a loaded host, the runner beside this suite: in
 * the guest, that reads as a late kick).
 */
Test(lateness, a_guest_with_interrupts_off_is_masked)
{
	struct run r;
	const char *json;

	require_guest("latency");
	run_lull(&r, LIMIT_S, "run", "--stats", "-", "--trace-late", "--cmdline",
		 "count=3 ahead_us=5000 wait=masked masked_us=60000",
		 guest("latency"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	json = find_json(r.out);
	cr_assert(json, "no --stats:\n%s", r.out);
	cr_log_info("masked: %s", strstr(json, "\"lateness\""));
	/*
	 * Each event is the guest's masking and lull's own work while the
	 * vector waited (a clock resync's exit: ms long in a sanitizer build
	 * on an emulated host, where it can outweigh an event's masked part
	 * and become its main cause), or the host's scheduler, and nothing of
	 * it a wake or a kick.
	 */
	cr_assert_eq(late_stat(json, "masked.events") +
			     late_stat(json, "vmm.events") +
			     late_stat(json, "preempted.events"),
		     3);
	cr_assert_geq(late_stat(json, "masked.events"), 1);
	cr_assert_geq(late_stat(json, "masked.ns"), 3 * 25 * MS);
	for (unsigned i = 0; i < 3; i++) {
		char masked[32], vmm[32], preempted[40], late[32];
		uint64_t late_ns;

		snprintf(masked, sizeof(masked), "worst[%u].masked_ns", i);
		snprintf(vmm, sizeof(vmm), "worst[%u].vmm_ns", i);
		snprintf(preempted, sizeof(preempted), "worst[%u].preempted_ns",
			 i);
		snprintf(late, sizeof(late), "worst[%u].late_ns", i);
		late_ns = late_stat(json, late);
		cr_assert_geq(late_stat(json, masked) + late_stat(json, vmm) +
				      late_stat(json, preempted),
			      late_ns * 8 / 10, "event %u: %s", i,
			      strstr(json, "\"lateness\""));
	}
	run_free(&r);
}

struct hog {
	int cpu;
	unsigned ms;
	int error; /* why it could not run as a real-time thread */
};

/* A real-time busy loop on one CPU: what runs there waits for it. */
static void *hog_cpu(void *arg)
{
	struct hog *h = arg;
	struct sched_param sp = { .sched_priority = 10 };
	cpu_set_t set;
	double end;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	h->error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!h->error)
		h->error =
			pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (h->error)
		return NULL;
	end = now_s() + h->ms / 1000.0;
	while (now_s() < end)
		;
	return NULL;
}

/*
 * lull pinned to one CPU, a real-time loop taking that CPU from before the
 * expiry to well after it: the woken thread waits, runnable, which
 * --trace-late measures (the run delay) and prints.
 */
Test(lateness, a_thread_kept_from_its_cpu_is_preempted)
{
	char cmdline[] = "count=1 ahead_us=200000 wait=halt";
	char *argv[] = { (char *)lull_bin(),
			 "run",
			 "--stats",
			 "-",
			 "--trace-late",
			 "--cmdline",
			 cmdline,
			 (char *)guest("latency"),
			 NULL };
	struct hog h = { .ms = 450 };
	cpu_set_t old, one;
	struct proc p;
	struct run r;
	pthread_t t;
	const char *json;
	uint64_t pre, late;

	require_guest("latency");
	cr_assert_eq(sched_getaffinity(0, sizeof(old), &old), 0);
	for (h.cpu = 0; h.cpu < CPU_SETSIZE && !CPU_ISSET(h.cpu, &old); h.cpu++)
		;
	CPU_ZERO(&one);
	CPU_SET(h.cpu, &one);
	/* the child inherits the mask it is spawned with */
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	cr_assert_eq(proc_spawn(&p, argv), 0);
	sched_setaffinity(0, sizeof(old), &old);
	cr_assert(proc_wait_output(&p, "hard one-shots", LIMIT_S),
		  "the guest never started");
	sleep_ms(50);
	pthread_create(&t, NULL, hog_cpu, &h);
	pthread_join(t, NULL);
	proc_wait(&p, LIMIT_S, &r);
	if (h.error)
		cr_skip_test("cannot run a real-time thread here (%s), so "
			     "nothing can be kept from its CPU",
			     strerror(h.error));
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	json = find_json(r.out);
	cr_assert(json, "no --stats:\n%s", r.out);
	cr_log_info("kept from its CPU: %s", strstr(json, "\"lateness\""));
	cr_assert(strstr(json, "\"sched_sampled\": true"), "%s", json);
	late = late_stat(json, "worst[0].late_ns");
	pre = late_stat(json, "worst[0].preempted_ns");
	cr_assert_geq(late, 100 * MS, "late only %lu ns", late);
	cr_assert_geq(pre, late * 8 / 10, "preempted %lu of %lu ns", pre, late);
	cr_assert(strstr(r.err, "lull: vcpu 0: hard timer on vector"),
		  "--trace-late printed nothing:\n%s", r.err);
	run_free(&r);
}
