/* SPDX-License-Identifier: MIT */
/*
 * cases.h: a conformance guest's cases (apic, ioapic). Each case prints
 * "PASS name" or "FAIL name: why", with why the first check that failed in
 * it; the summary line is "<guest>: PASS n/n" or "<guest>: FAIL k/n failed",
 * the line the tests look for. One case at a time, on one vCPU.
 */
#ifndef GUEST_CASES_H
#define GUEST_CASES_H

#include <stdbool.h>

/* Inside a case: keeps the first failure, ignores the rest. */
void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void case_begin(void);
/* Prints the case's PASS or FAIL line and counts it. */
void case_end(const char *name);
/* Prints the summary; returns the guest's exit status (0: all passed). */
int cases_summary(const char *guest);

#endif
