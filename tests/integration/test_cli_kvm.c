// SPDX-License-Identifier: MIT
/*
 * The --vcpus limit: KVM tells lull how many vCPUs a VM may have, and a
 * request beyond it is a usage error (status 64) whose sentence names
 * that limit. Needs /dev/kvm, so it lives in the kvm suite.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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
