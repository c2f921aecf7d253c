// SPDX-License-Identifier: MIT
/*
 * The never-early check's reading of a trace (never_early.h), on traces
 * written here in ftrace's own line format, stamps and deadlines in TSC
 * cycles from a common origin.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "never_early.h"

#define ORIGIN 100000000ull

static struct never_early ne;
static char shown[NEVER_EARLY_SHOWN * NEVER_EARLY_HISTORY][96];
static int nshown;

static void keep_shown(const char *line)
{
	if (nshown < (int)(sizeof(shown) / sizeof(shown[0])))
		snprintf(shown[nshown++], sizeof(shown[0]), "%s", line);
}

static void setup(void)
{
	memset(&ne, 0, sizeof(ne));
	ne.show = keep_shown;
	nshown = 0;
}

/* the guest wrote IA32_TSC_DEADLINE = deadline at `at` on `cpu` */
static void write_at(int cpu, long long at, long long deadline)
{
	char line[160];

	snprintf(line, sizeof(line),
		 "      cyclictest-201     [%03d] d..1. %llu: write_msr: 6e0, value %llx",
		 cpu, ORIGIN + at, ORIGIN + deadline);
	never_early_take(&ne, line);
}

/* a local timer interrupt entered at `at` on `cpu` */
static void entry_at(int cpu, long long at)
{
	char line[160];

	snprintf(line, sizeof(line),
		 "          <idle>-0       [%03d] d.h1. %llu: local_timer_entry: vector=236",
		 cpu, ORIGIN + at);
	never_early_take(&ne, line);
}

TestSuite(never_early, .init = setup);

Test(never_early, an_entry_at_or_after_its_deadline_is_checked_and_on_time)
{
	write_at(0, 0, 1000);
	entry_at(0, 1000);
	write_at(0, 1100, 2000);
	entry_at(0, 2500);
	cr_assert_eq(ne.cpu[0].checked, 2);
	cr_assert_eq(ne.cpu[0].early, 0);
	cr_assert_eq(ne.cpu[0].least, 0);
	cr_assert_eq(nshown, 0);
}

Test(never_early, an_entry_before_the_last_deadline_written_is_early_and_shown)
{
	entry_at(1, -5000);
	write_at(1, -4000, 2000);
	write_at(1, -700, 500); /* replaces one not yet passed: not owed */
	entry_at(1, 0);
	cr_assert_eq(ne.cpu[1].checked, 1);
	cr_assert_eq(ne.cpu[1].early, 1);
	cr_assert_eq(ne.cpu[1].least, -500);
	cr_assert_eq(nshown, 4);
	cr_assert_str_eq(shown[0], "cpu=1 at=-5000 entry");
	cr_assert_str_eq(shown[1], "cpu=1 at=-4000 write deadline=2000");
	cr_assert_str_eq(shown[2], "cpu=1 at=-700 write deadline=500");
	cr_assert_str_eq(shown[3], "cpu=1 at=0 entry");
}

Test(never_early, a_write_after_a_deadline_passed_leaves_its_interrupt_owed)
{
	write_at(0, 0, 1000);
	write_at(0, 1500, 5000); /* 1000 had passed: its interrupt comes */
	entry_at(0, 1600);
	cr_assert_eq(ne.cpu[0].checked, 0, "the owed entry is 1000's");
	entry_at(0, 5000);
	cr_assert_eq(ne.cpu[0].checked, 1);
	cr_assert_eq(ne.cpu[0].early, 0);
}

/*
 * D1 passed, D2 written and passed, one entry after both, the next
 * deadline written in the handler, a second entry before it: D2's own,
 * late, where it passed after the first was accepted.
 */
Test(never_early, a_passed_deadlines_own_late_interrupt_is_either_not_early)
{
	entry_at(0, -7238390);
	write_at(0, -6847110, -4874938);
	write_at(0, -1736530, -1351544);
	entry_at(0, -629644);
	write_at(0, -250678, 5524944);
	entry_at(0, 0);
	cr_assert_eq(ne.cpu[0].early, 0);
	cr_assert_eq(ne.cpu[0].either, 1);
	cr_assert_eq(nshown, 0);
	/* the deadline armed then is still checked, at the entry after */
	entry_at(0, 5524944);
	cr_assert_eq(ne.cpu[0].checked, 1);
	cr_assert_eq(ne.cpu[0].early, 0);
}

Test(never_early, only_the_entry_right_after_the_pair_is_let_go)
{
	write_at(0, 0, 1000);
	write_at(0, 1500, 1800);
	entry_at(0, 2000); /* owed, and 1800 has passed too */
	write_at(0, 2100, 9000);
	entry_at(0, 9000); /* at the armed deadline: checked */
	write_at(0, 9100, 12000);
	entry_at(0, 11000); /* early, and nothing left to excuse it */
	cr_assert_eq(ne.cpu[0].either, 0);
	cr_assert_eq(ne.cpu[0].checked, 2);
	cr_assert_eq(ne.cpu[0].early, 1);
	cr_assert_eq(ne.cpu[0].least, -1000);
}

Test(never_early, an_entry_with_no_deadline_armed_is_unarmed)
{
	entry_at(0, 100);
	write_at(0, 200, 1000);
	entry_at(0, 1200);
	entry_at(0, 1300);
	cr_assert_eq(ne.cpu[0].unarmed, 2);
	cr_assert_eq(ne.cpu[0].checked, 1);
}

Test(never_early, cpus_are_kept_apart_and_others_passed_over)
{
	write_at(0, 0, 1000);
	write_at(1, 0, 5000);
	entry_at(1, 5000);
	entry_at(0, 1000);
	never_early_take(&ne, "# tracer: nop");
	never_early_take(&ne, "  x-1 [064] d..1. 100000500: local_timer_entry: vector=236");
	never_early_take(&ne, "  x-1 [000] d..1. 100000500: write_msr: 6e0, value 5 #GP");
	cr_assert_eq(ne.cpu[0].checked, 1);
	cr_assert_eq(ne.cpu[1].checked, 1);
	cr_assert_eq(ne.cpu[0].early + ne.cpu[1].early, 0);
	cr_assert_eq(ne.cpu[0].writes, 1, "a faulting write is not a deadline");
}

Test(never_early, no_more_than_the_first_few_early_entries_are_shown)
{
	int after_the_few = 0;

	for (int i = 0; i < NEVER_EARLY_SHOWN + 2; i++) {
		write_at(0, i * 10000, i * 10000 + 5000);
		entry_at(0, i * 10000 + 4000);
		if (i == NEVER_EARLY_SHOWN - 1)
			after_the_few = nshown;
	}
	cr_assert_eq(ne.cpu[0].early, NEVER_EARLY_SHOWN + 2);
	cr_assert_gt(after_the_few, 0);
	cr_assert_eq(nshown, after_the_few);
	cr_assert_str_eq(shown[nshown - 1], "cpu=0 at=0 entry");
}
