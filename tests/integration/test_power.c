// SPDX-License-Identifier: MIT
/*
 * Power off and reset: the power guest follows lull's ACPI tables to the
 * sleep control and reset registers (or pulses the i8042 reset line) and
 * lull must end with the documented status and one line saying why:
 * 0 and "the guest powered off" for S5, 32 (LULL_EXIT_REBOOT, --help's
 * exit status list) and "the guest asked for a reset" for either reset.
 * A sleep type lull does not have is ignored, logged once.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "runner.h"

#define QUICK_S 20.0

static void run_power(struct run *r, const char *mode, const char *vcpus)
{
	require_guest("power");
	run_lull(r, QUICK_S, "run", "--vcpus", vcpus, "--cmdline", mode,
		 guest("power"), NULL);
	cr_assert(!r->killed, "lull ran over %.0f s\nstdout:\n%s\nstderr:\n%s",
		  QUICK_S, r->out, r->err);
	cr_assert(strstr(r->out, "power: tables ok"),
		  "the guest did not find its tables\nstdout:\n%s\nstderr:\n%s",
		  r->out, r->err);
	cr_expect_null(strstr(r->out, "FAIL"), "stdout:\n%s", r->out);
}

static void expect_stop(struct run *r, int status, const char *line)
{
	cr_expect_eq(r->status, status, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r->status, r->out, r->err);
	cr_expect_str_eq(r->err, line, "stderr");
}

Test(power, s5_ends_lull_with_status_0)
{
	struct run r;

	run_power(&r, "poweroff", "1");
	cr_expect(strstr(r.out, "power: writing SLP_TYP 5 | SLP_EN to 0x600"),
		  "stdout:\n%s", r.out);
	expect_stop(&r, 0, "lull: the guest powered off\n");
	run_free(&r);
}

/* vCPU 1 is halted, not waiting on anything: the power-off stops it too. */
Test(power, s5_with_two_vcpus)
{
	struct run r;

	run_power(&r, "poweroff", "2");
	expect_stop(&r, 0, "lull: the guest powered off\n");
	run_free(&r);
}

Test(power, reset_register_ends_lull_with_the_reboot_status)
{
	struct run r;

	run_power(&r, "reset", "1");
	cr_expect(strstr(r.out, "power: writing 0x6 to 0xcf9"), "stdout:\n%s",
		  r.out);
	expect_stop(&r, REBOOT_STATUS, "lull: the guest asked for a reset\n");
	run_free(&r);
}

Test(power, i8042_reset_pulse_ends_lull_with_the_reboot_status)
{
	struct run r;

	run_power(&r, "kbd-reset", "1");
	expect_stop(&r, REBOOT_STATUS, "lull: the guest asked for a reset\n");
	run_free(&r);
}

/* The guest asks twice for a sleep state lull has not: one line, and the
 * guest runs on to its PASS. */
Test(power, other_sleep_types_are_ignored_and_logged_once)
{
	struct run r;

	run_power(&r, "bad-sleep-type", "1");
	cr_expect_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_expect(strstr(r.out, "power: PASS still running"), "stdout:\n%s",
		  r.out);
	cr_expect_eq(count_lines(r.err), 1, "stderr:\n%s", r.err);
	cr_expect(strstr(r.err, "lull: vcpu 0: sleep type 6 is no sleep state"),
		  "stderr:\n%s", r.err);
	run_free(&r);
}
