/* SPDX-License-Identifier: MIT */
/*
 * lull-init's never-early check, its reading of the trace: where the
 * guest's local APIC timer runs in TSC-deadline mode, every local timer
 * interrupt must enter no sooner than the deadline it fired for. Both are
 * on the guest's TSC: the trace clock x86-tsc stamps the interrupt's entry,
 * which is at or after its arrival, so an entry before its deadline is an
 * early interrupt, for sure, and one that arrived early by less than its
 * entry path took is not seen.
 *
 * Which deadline an entry is for: the last one written, unless that write
 * replaced a deadline that had already passed (stamped at or before the
 * write): that one's interrupt was already owed, and a write does not take
 * it back, so the next entry is its. Where the new deadline too has passed
 * by that entry's stamp, the entry may serve both (the new one passed
 * before the owed interrupt was accepted) or only the old one (it passed
 * after: between acceptance and the stamp, which a busy host can stretch
 * to milliseconds), and then the new one's own interrupt follows, late,
 * perhaps after the handler wrote the next deadline. Which, the trace
 * cannot tell: the next entry, if it comes before the deadline then armed,
 * is taken for that second one's and not checked (counted as `either`),
 * and the armed deadline is checked at the entry after. The caller's
 * buffer must hold the whole measurement: a lost write could leave a later
 * deadline than the one an entry was for.
 */
#ifndef LULL_INIT_NEVER_EARLY_H
#define LULL_INIT_NEVER_EARLY_H

#include <stdbool.h>

#define NEVER_EARLY_CPUS 64
/* an early entry is shown with its CPU's events before it, for the first
 * few of them: which write it was taken for, and what came before */
#define NEVER_EARLY_HISTORY 6
#define NEVER_EARLY_SHOWN 4

struct never_early_cpu {
	unsigned long long deadline; /* armed, not yet entered; 0: none */
	bool owed; /* a replaced deadline had passed: its interrupt comes */
	bool second; /* that entry may have served one deadline of two */
	long writes, entries, checked, early, unarmed;
	long either; /* entries taken for the second one's interrupt */
	long long least; /* cycles from deadline to entry, least checked */
	bool seen;
	struct {
		char kind; /* 'w': a write of `value`; 'e': an entry */
		unsigned long long at, value;
	} history[NEVER_EARLY_HISTORY];
	unsigned events;
};

struct never_early {
	struct never_early_cpu cpu[NEVER_EARLY_CPUS];
	long shown;
	/* given each line of an early entry's history, oldest first:
	 * "cpu=N at=CYCLES write deadline=CYCLES" or "cpu=N at=CYCLES entry",
	 * both relative to the early entry */
	void (*show)(const char *line);
};

/*
 * One line of the trace: a write_msr of IA32_TSC_DEADLINE or a
 * local_timer_entry, "... [CPU] ... STAMP: EVENT: ...", in the order the
 * trace gives them per CPU. Other lines, and CPUs from NEVER_EARLY_CPUS
 * on, are passed over.
 */
void never_early_take(struct never_early *ne, const char *line);

#endif
