// SPDX-License-Identifier: MIT
/*
 * The command line against the host's KVM: the --vcpus limit (KVM tells
 * lull how many vCPUs a VM may have, and a request beyond it is a usage
 * error, status 64, whose sentence names that limit), which KVM lull
 * says it runs on, and the host's task limit. Needs /dev/kvm, so it lives
 * in the kvm suite.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 20.0

/* KVM's vCPU limit on this host, as lull asks for it (0 if unknown). */
static int kvm_max_vcpus(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC), n;

	if (fd < 0)
		return 0;
	n = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (n <= 0)
		n = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS);
	close(fd);
	return n > 0 ? n : 0;
}

/* Far beyond what KVM allows: the sentence names KVM's actual limit. */
Test(cli, vcpus_beyond_kvm_limit_names_the_limit)
{
	char limit[16];
	struct run r;
	int max;

	max = kvm_max_vcpus();
	cr_assert_gt(max, 0, "KVM reports no vCPU limit");
	snprintf(limit, sizeof(limit), "%d", max);
	run_lull(&r, LIMIT_S, "run", "--vcpus", "100000", guest("hello"), NULL);

	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	assert_sentence(r.err, USAGE("--vcpus"));
	cr_assert(strstr(r.err, limit),
		  "the sentence does not name KVM's limit of %d vCPUs:\n%s",
		  max, r.err);
	run_free(&r);
}

/* Just over the limit: the same sentence. */
Test(cli, vcpus_just_beyond_kvm_limit_names_the_limit)
{
	char limit[16], vcpus[16];
	struct run r;
	int max;

	max = kvm_max_vcpus();
	cr_assert_gt(max, 0, "KVM reports no vCPU limit");
	snprintf(limit, sizeof(limit), "%d", max);
	snprintf(vcpus, sizeof(vcpus), "%d", max + 1);
	run_lull(&r, LIMIT_S, "run", "--vcpus", vcpus, guest("hello"), NULL);

	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.err, limit),
		  "the sentence does not name KVM's limit of %d vCPUs:\n%s",
		  max, r.err);
	run_free(&r);
}

/* Within KVM's limit but past 8-bit APIC IDs: refused, not duplicated. */
Test(cli, vcpus_past_256_are_refused)
{
	struct run r;

	if (kvm_max_vcpus() <= 256)
		cr_skip_test("KVM allows %d vCPUs here, not more than 256",
			     kvm_max_vcpus());
	run_lull(&r, LIMIT_S, "run", "--vcpus", "257", guest("hello"), NULL);
	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	assert_sentence(r.err, USAGE("--vcpus", "256"));
	run_free(&r);
}

/*
 * lull knows its KVM: `lull info` and --stats name the same module, the
 * one /sys/module and the CPU's features say; on kvm_pvm, which emulates
 * an ordinary guest, lull says so once, in one line, before it runs.
 */
Test(cli, names_its_kvm_and_warns_once_on_kvm_pvm)
{
	const struct host_kvm *h = host_kvm();
	bool pvm_only = access("/sys/module/kvm_pvm", F_OK) == 0 &&
			access("/sys/module/kvm_intel", F_OK) &&
			access("/sys/module/kvm_amd", F_OK);
	char want[64], *cpuinfo = read_file("/proc/cpuinfo", NULL);
	bool vmx_svm = cpuinfo && (strstr(cpuinfo, " vmx") || strstr(cpuinfo, " svm"));
	const char *json;
	struct run r;

	free(cpuinfo);
	cr_assert_eq(h->hardware, vmx_svm,
		     "lull info says hardware %d, /proc/cpuinfo %s VMX/SVM",
		     h->hardware, vmx_svm ? "has" : "has no");
	if (pvm_only)
		cr_assert_str_eq(h->module, "kvm_pvm");
	run_lull(&r, LIMIT_S, "run", "--stats", "-", guest("hello"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	json = find_json(r.out);
	snprintf(want, sizeof(want), "\"kvm\": {\"module\": \"%s\"", h->module);
	cr_assert(json && strstr(json, want), "want %s in --stats:\n%s", want,
		  r.out);
	cr_assert(strstr(json, h->hardware ? "\"hardware\": true" :
					     "\"hardware\": false"),
		  "--stats:\n%s", json);
	if (!strcmp(h->module, "kvm_pvm")) {
		cr_assert(strstr(r.kvm_note, "kvm_pvm") &&
				  strstr(r.kvm_note, "emulator"),
			  "no note on kvm_pvm; stderr:\n%s", r.err);
		cr_assert_null(strstr(r.err, "kvm_pvm"),
			       "said more than once:\n%s", r.err);
	} else {
		cr_assert_str_empty(r.kvm_note, "a note on %s: %s", h->module,
				    r.kvm_note);
	}
	run_free(&r);
}

/*
 * A pids cgroup of our own (v1's pids hierarchy, or v2 with the pids
 * controller given to children), made in `path`; NULL, or why not.
 */
static const char *make_pids_cgroup(char *path, size_t len)
{
	static const char *const parents[] = { "/sys/fs/cgroup/pids",
					       "/sys/fs/cgroup" };
	char probe[256];

	for (unsigned i = 0; i < 2; i++) {
		snprintf(probe, sizeof(probe), "%s/%s", parents[i],
			 i ? "cgroup.subtree_control" : "pids.max");
		if (i == 0 && access(parents[i], W_OK) < 0)
			continue;
		if (i == 1) {
			char *ctl = read_file(probe, NULL);
			bool pids = ctl && strstr(ctl, "pids");

			free(ctl);
			if (!pids)
				continue;
		}
		snprintf(path, len, "%s/lull-test-%d", parents[i], getpid());
		if (mkdir(path, 0755) == 0)
			return NULL;
	}
	return "no pids cgroup this test may make (cgroup v1's pids hierarchy, or v2 with pids in the root's subtree_control, as root)";
}

static void write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert(fd >= 0, "open %s: %m", path);
	cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s),
		     "write %s: %m", path);
	close(fd);
}

/*
 * lull in a cgroup that allows `tasks` of them: a vCPU thread and KVM's
 * own worker (made at the first KVM_RUN, on kernels that have one) each in
 * turn find the limit. lull ends with 71 and one line
 * that names the knob, never spins or hangs (KVM refuses every KVM_RUN
 * while it cannot make its worker).
 */
static void run_at_task_limit(const char *cg, unsigned tasks, struct run *r)
{
	char file[320], max[16];
	/* a leak check needs a task of its own at exit (LeakSanitizer's
	 * tracer), which a limit this low refuses: it is a sanitizer build's
	 * need, not lull's, so that build does without it here */
	char *argv[] = { "/bin/sh", "-c",
			 "echo $$ > \"$0/cgroup.procs\" && "
			 "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
			 "exec \"$@\"",
			 (char *)cg, (char *)lull_bin(), "run", "--timeout", "10",
			 (char *)guest("hello"), NULL };
	struct proc p;

	snprintf(file, sizeof(file), "%s/pids.max", cg);
	snprintf(max, sizeof(max), "%u", tasks);
	write_str(file, max);
	cr_assert_eq(proc_spawn(&p, argv), 0, "spawn: %m");
	proc_wait(&p, LIMIT_S, r);
}

Test(cli, stops_at_the_host_task_limit_with_its_knob)
{
	char cg[128];
	const char *why;
	unsigned refused = 0;

	require_guest("hello");
	why = make_pids_cgroup(cg, sizeof(cg));
	if (why)
		cr_skip_test("%s", why);
	for (unsigned tasks = 1; tasks <= 4; tasks++) {
		struct run r;

		run_at_task_limit(cg, tasks, &r);
		cr_expect_not(r.killed, "pids.max %u: ran over %.0f s", tasks,
			      LIMIT_S);
		if (r.status == 0) {
			/* room for lull's threads and any of KVM's */
			cr_expect_gt(tasks, 1, "pids.max %u: ran", tasks);
			run_free(&r);
			break;
		}
		refused++;
		cr_expect_eq(r.status, 71,
			     "pids.max %u: status %d, want 71\n%s", tasks,
			     r.status, r.err);
		cr_expect_eq(count_lines(r.err), 1, "pids.max %u:\n%s", tasks,
			     r.err);
		cr_expect(strstr(r.err, "kernel.pid_max") &&
				  strstr(r.err, "pids.max"),
			  "pids.max %u: no knob named:\n%s", tasks, r.err);
		run_free(&r);
	}
	rmdir(cg);
	cr_expect_geq(refused, 1, "the vCPU thread needs a task");
}
