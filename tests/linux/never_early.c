// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "never_early.h"

/* The trace's timestamp: the token before ": EVENT:", which starts at end. */
static unsigned long long stamp_before(const char *line, const char *end)
{
	const char *start = end;

	while (start > line && start[-1] != ' ')
		start--;
	return strtoull(start, NULL, 10);
}

static void remember(struct never_early_cpu *c, char kind,
		     unsigned long long at, unsigned long long value)
{
	unsigned i = c->events++ % NEVER_EARLY_HISTORY;

	c->history[i].kind = kind;
	c->history[i].at = at;
	c->history[i].value = value;
}

/* The early entry (the last event remembered) and what came before it. */
static void show_history(const struct never_early *ne, int cpu,
			 const struct never_early_cpu *c)
{
	unsigned n = c->events < NEVER_EARLY_HISTORY ? c->events :
						       NEVER_EARLY_HISTORY;
	unsigned long long entry =
		c->history[(c->events - 1) % NEVER_EARLY_HISTORY].at;
	char line[96];

	for (unsigned k = n; k > 0; k--) {
		unsigned i = (c->events - k) % NEVER_EARLY_HISTORY;
		long long at = (long long)(c->history[i].at - entry);

		if (c->history[i].kind == 'w')
			snprintf(line, sizeof(line),
				 "cpu=%d at=%lld write deadline=%lld", cpu, at,
				 (long long)(c->history[i].value - entry));
		else
			snprintf(line, sizeof(line), "cpu=%d at=%lld entry",
				 cpu, at);
		ne->show(line);
	}
}

static void take_write(struct never_early_cpu *c, const char *line,
		       const char *event)
{
	const char *v = strstr(event, "value ");
	unsigned long long at;

	if (!v || strstr(event, "#GP"))
		return;
	at = stamp_before(line, event);
	c->seen = true;
	c->writes++;
	if (c->deadline && c->deadline <= at)
		c->owed = true;
	c->deadline = strtoull(v + 6, NULL, 16);
	remember(c, 'w', at, c->deadline);
}

static void take_entry(struct never_early *ne, int cpu, const char *line,
		       const char *event)
{
	struct never_early_cpu *c = &ne->cpu[cpu];
	unsigned long long at = stamp_before(line, event);
	long long by;

	c->seen = true;
	c->entries++;
	remember(c, 'e', at, 0);
	if (c->owed) {
		/* the replaced deadline's, and the new one's too where it has
		 * passed, unless its own comes next */
		c->owed = false;
		if (c->deadline && c->deadline <= at) {
			c->deadline = 0;
			c->second = true;
		}
		return;
	}
	if (c->second) {
		/* that deadline's own, late, if before the next */
		c->second = false;
		if (!c->deadline || at < c->deadline) {
			c->either++;
			return;
		}
	}
	if (!c->deadline) {
		c->unarmed++; /* a periodic or one-shot APIC timer */
		return;
	}
	by = (long long)(at - c->deadline);
	if (!c->checked || by < c->least)
		c->least = by;
	c->checked++;
	c->early += by < 0;
	if (by < 0 && ne->show && ne->shown++ < NEVER_EARLY_SHOWN)
		show_history(ne, cpu, c);
	c->deadline = 0; /* one interrupt per deadline */
}

void never_early_take(struct never_early *ne, const char *line)
{
	const char *p = strchr(line, '[');
	int cpu = p ? atoi(p + 1) : -1;

	if (line[0] == '#' || cpu < 0 || cpu >= NEVER_EARLY_CPUS)
		return;
	if ((p = strstr(line, ": write_msr: ")))
		take_write(&ne->cpu[cpu], line, p);
	else if ((p = strstr(line, ": local_timer_entry:")))
		take_entry(ne, cpu, line, p);
}
