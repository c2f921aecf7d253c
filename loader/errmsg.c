// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "loader/errmsg.h"

int errmsg(char *err, size_t err_len, int errnum, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -errnum;
}
