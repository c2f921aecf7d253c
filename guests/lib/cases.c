// SPDX-License-Identifier: MIT
#include <stdarg.h>

#include "cases.h"
#include "printf.h"

static unsigned passed, failed;
static bool case_bad;
static char case_why[200];

void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok || case_bad)
		return;
	case_bad = true;
	va_start(ap, fmt);
	vsnprintf(case_why, sizeof(case_why), fmt, ap);
	va_end(ap);
}

void case_begin(void)
{
	case_bad = false;
	case_why[0] = '\0';
}

void case_end(const char *name)
{
	if (case_bad) {
		failed++;
		printf("FAIL %s: %s\n", name, case_why);
	} else {
		passed++;
		printf("PASS %s\n", name);
	}
}

int cases_summary(const char *guest)
{
	if (failed) {
		printf("%s: FAIL %u/%u failed\n", guest, failed, passed + failed);
		return 1;
	}
	printf("%s: PASS %u/%u\n", guest, passed, passed + failed);
	return 0;
}
