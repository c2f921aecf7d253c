// SPDX-License-Identifier: MIT
/*
 * Least privilege on a running lull: every thread confined (no_new_privs,
 * no capabilities, a seccomp filter), every guest still passing under the
 * filters, and lull running as an unprivileged member of /dev/kvm's group.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "runner.h"

/* One thread's confinement, from /proc/PID/task/TID/status. */
struct confinement {
	char name[32];
	char seccomp[8], no_new_privs[8], cap_eff[20], cap_prm[20];
	bool kvm_worker; /* KVM's, not lull's: see kvm_worker() */
};

/*
 * KVM starts workers of its own inside the VMM's thread group (its
 * NX-hugepage recovery, "kvm-nx-lpage-recovery", a vhost_task made at the
 * first KVM_RUN since Linux 6.13 or so): user workers (PF_USER_WORKER in
 * /proc/.../stat's flags) named "kvm-". They run kernel code only, and
 * they are counted apart from lull's threads, which must all be confined.
 */
#define PF_USER_WORKER 0x00004000u

static bool kvm_worker(const char *stat, const char *name)
{
	const char *rest = strrchr(stat, ')');
	unsigned long flags = 0;

	/* after "pid (comm)": state ppid pgrp session tty_nr tpgid flags */
	return rest &&
	       sscanf(rest + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
	       (flags & PF_USER_WORKER) && !strncmp(name, "kvm-", 4);
}

static void status_field(const char *status, const char *key, char *out,
			 size_t len)
{
	const char *p = strstr(status, key);

	out[0] = 0;
	if (p)
		sscanf(p + strlen(key), " %19s", out);
	out[len - 1] = 0;
}

/* Every thread of pid; returns how many. */
static unsigned read_threads(pid_t pid, struct confinement *t, unsigned max)
{
	char path[320];
	struct dirent *d;
	unsigned n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max) {
		char *status, *comm, *stat;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status",
			 (int)pid, d->d_name);
		status = read_file(path, NULL);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid,
			 d->d_name);
		comm = read_file(path, NULL);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid,
			 d->d_name);
		stat = read_file(path, NULL);
		if (status && comm && stat) {
			struct confinement *c = &t[n++];

			snprintf(c->name, sizeof(c->name), "%.*s",
				 (int)strcspn(comm, "\n"), comm);
			c->kvm_worker = kvm_worker(stat, c->name);
			status_field(status, "\nSeccomp:", c->seccomp,
				     sizeof(c->seccomp));
			status_field(status, "\nNoNewPrivs:", c->no_new_privs,
				     sizeof(c->no_new_privs));
			status_field(status, "\nCapEff:", c->cap_eff,
				     sizeof(c->cap_eff));
			status_field(status, "\nCapPrm:", c->cap_prm,
				     sizeof(c->cap_prm));
		}
		free(status);
		free(comm);
		free(stat);
	}
	closedir(dir);
	return n;
}

static bool confined(const struct confinement *c, const char *seccomp)
{
	return !strcmp(c->seccomp, seccomp) && !strcmp(c->no_new_privs, "1") &&
	       !strcmp(c->cap_eff, "0000000000000000") &&
	       !strcmp(c->cap_prm, "0000000000000000");
}

/*
 * Runs halt-forever on two vCPUs with a console file (and `option`, if
 * any) and waits until every thread of lull's (main, vcpu0, vcpu1) shows `seccomp` and the rest of its confinement; the main thread
 * confines itself last, once the vCPUs run, so this polls rather than
 * reads once. KVM's own workers are listed, not counted.
 */
static void check_every_thread(const char *option, const char *seccomp)
{
	char console[] = "/tmp/lull-sandbox-console-XXXXXX";
	struct confinement t[16];
	char report[2048] = "";
	unsigned n = 0, good = 0, lulls = 0;
	struct proc p;
	struct run r;
	int fd = mkstemp(console);
	double until;

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(
		proc_spawn(&p, (char *const[]){ (char *)lull_bin(), "run",
						"--vcpus", "2", "--console",
						console, "--timeout", "30",
						(char *)guest("halt-forever"),
						(char *)option, NULL }),
		0);
	until = now_s() + 20.0;
	while (now_s() < until) {
		n = read_threads(p.pid, t, 16);
		good = lulls = 0;
		for (unsigned i = 0; i < n; i++) {
			lulls += !t[i].kvm_worker;
			good += !t[i].kvm_worker && confined(&t[i], seccomp);
		}
		if (lulls == 3 && good == lulls)
			break;
		usleep(50000);
	}
	for (unsigned i = 0; i < n; i++) {
		size_t used = strlen(report);

		snprintf(report + used, sizeof(report) - used,
			 "  %s: Seccomp %s NoNewPrivs %s CapEff %s CapPrm %s%s\n",
			 t[i].name, t[i].seccomp, t[i].no_new_privs,
			 t[i].cap_eff, t[i].cap_prm,
			 t[i].kvm_worker ? " (KVM's worker)" : "");
	}
	kill(p.pid, SIGTERM);
	proc_wait(&p, 10.0, &r);
	unlink(console);

	cr_log_info("threads:\n%s", report);
	cr_assert_eq(lulls, 3,
		     "want 3 threads of lull's (main, vcpu0, vcpu1):\n%s",
		     report);
	cr_assert_eq(good, lulls, "not every thread of lull's is confined:\n%s",
		     report);
	cr_assert(strstr(report, "lull:") && strstr(report, "vcpu0:") &&
			  strstr(report, "vcpu1:"),
		  "threads:\n%s", report);
	cr_assert_eq(r.status, 143, "status %d\nstderr:\n%s", r.status, r.err);
	run_free(&r);
}

Test(sandbox, every_thread_filtered_without_privileges)
{
	check_every_thread(NULL, "2");
}

Test(sandbox, no_seccomp_keeps_the_rest)
{
	check_every_thread("--no-seccomp", "0");
}

/*
 * --stats to a character device (/dev/null here, a terminal for a user):
 * stdio asks whether such a stream is a terminal when it first buffers,
 * which must not happen under the filter, at the run's end.
 */
Test(sandbox, stats_to_a_character_device)
{
	struct run r;

	require_guest("hello");
	run_lull(&r, 30, "run", "--stats", "/dev/null", guest("hello"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	run_free(&r);
}

/* Each guest as its own tests run it, but cut short where it can be. */
struct confined_run {
	char guest[16];
	char cmdline[48];
	int status;
	char pass[24]; /* in stdout when it passed; "" for a crash guest */
	char timer_mode[12];
	char vcpus[4];
};

/* both timer modes, 1 and 4 vCPUs */
#define GUEST_RUNS(g, cmd, st, pass)                     \
	{ g, cmd, st, pass, "deferrable", "1" },         \
		{ g, cmd, st, pass, "deferrable", "4" }, \
		{ g, cmd, st, pass, "strict", "1" },     \
	{                                                \
		g, cmd, st, pass, "strict", "4"          \
	}

ParameterizedTestParameters(sandbox, every_guest_passes_confined)
{
	/* criterion copies the array, so it must be static */
	static struct confined_run runs[] = {
		GUEST_RUNS("hello", "", 0, "hello: PASS"),
		GUEST_RUNS("smp-hello", "", 0, "smp-hello: PASS"),
		GUEST_RUNS("tick", "seconds=1", 0, "tick: PASS"),
		GUEST_RUNS("latency", "count=40", 0, "latency: PASS"),
		GUEST_RUNS("idle", "seconds=1", 0, "idle: PASS"),
		/* lateness is not what this test is about */
		GUEST_RUNS("smp-timers", "seconds=1 max_p99_us=1000000", 0,
			   "smp-timers: PASS"),
		GUEST_RUNS("storm", "seconds=1", 0, "storm: PASS"),
		GUEST_RUNS("hcall-garbage", "count=2000", 0,
			   "hcall-garbage: PASS"),
		GUEST_RUNS("abi", "", 0, "abi: PASS"),
		GUEST_RUNS("exception", "", 3, "exception 6 (#UD)"),
		GUEST_RUNS("triple-fault", "", 125, ""),
		GUEST_RUNS("spin", "", 124, ""),
		GUEST_RUNS("halt-forever", "", 124, ""),
	};

	return cr_make_param_array(struct confined_run, runs,
				   sizeof(runs) / sizeof(runs[0]));
}

ParameterizedTest(struct confined_run *c, sandbox, every_guest_passes_confined,
		  .timeout = 120)
{
	struct run r;

	require_guest(c->guest);
	run_lull(&r, 90.0, "run", "--timer-mode", c->timer_mode, "--vcpus",
		 c->vcpus, "--cmdline", c->cmdline, "--timeout",
		 c->status == 124 ? "1" : "60", guest(c->guest), NULL);

	cr_assert_eq(
		r.status, c->status,
		"%s %s %s vCPU(s): status %d, want %d\nstdout:\n%s\nstderr:\n%s",
		c->guest, c->timer_mode, c->vcpus, r.status, c->status, r.out,
		r.err);
	cr_assert(strstr(r.out, c->pass), "%s %s %s: stdout:\n%s", c->guest,
		  c->timer_mode, c->vcpus, r.out);
	cr_assert_null(strstr(r.err, "seccomp"), "%s %s %s: stderr:\n%s",
		       c->guest, c->timer_mode, c->vcpus, r.err);
	run_free(&r);
}

/*
 * Run as nobody with /dev/kvm's group, as a user in group kvm would.
 * Needs root to switch user, and /dev/kvm open to its group.
 */
Test(sandbox, runs_as_an_unprivileged_member_of_the_kvm_group)
{
	char gid[16], groups[32];
	struct stat st;
	struct proc p;
	struct run r;

	if (geteuid() != 0)
		cr_skip("not root: this suite itself runs lull unprivileged");
	cr_assert_eq(stat("/dev/kvm", &st), 0);
	if (st.st_gid == 0 || (st.st_mode & 060) != 060)
		cr_skip("/dev/kvm is not open to a group here (gid %u, mode %o)",
			st.st_gid, st.st_mode & 0777);
	snprintf(gid, sizeof(gid), "%u", st.st_gid);
	snprintf(groups, sizeof(groups), "--groups=%u", st.st_gid);
	cr_assert_eq(
		proc_spawn(&p,
			   (char *const[]){
				   "/usr/bin/setpriv", "--reuid=65534",
				   "--regid=65534", groups, "--inh-caps=-all",
				   (char *)lull_bin(), "run", "--stats", "-",
				   (char *)guest("hello"), NULL }),
		0);
	proc_wait(&p, 60.0, &r);

	cr_assert_eq(r.status, 0, "as nobody in group %s: status %d\n%s\n%s",
		     gid, r.status, r.out, r.err);
	cr_assert(strstr(r.out, "hello: PASS"), "stdout:\n%s", r.out);
	cr_assert_not_null(find_json(r.out), "no --stats:\n%s", r.out);
	run_free(&r);
}
