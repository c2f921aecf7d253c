// SPDX-License-Identifier: MIT
/*
 * The kvm suite's entry point: every test in it boots a VM, so a host
 * that cannot open /dev/kvm skips the whole suite at once, with its reason
 * on stdout and exit status 77 (meson's SKIP), instead of passing with
 * every test skipped one by one.
 */
#include <stdio.h>

#include <criterion/criterion.h>

#include "runner.h"

int main(int argc, char *argv[])
{
	struct criterion_test_set *tests = criterion_initialize();
	const char *why = kvm_unavailable();
	int status = 0;

	if (why) {
		printf("SKIP: %s (the nested suite runs these tests on a "
		       "standard KVM)\n", why);
		criterion_finalize(tests);
		return 77;
	}
	if (criterion_handle_args(argc, argv, true))
		status = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return status;
}
