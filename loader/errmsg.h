/* SPDX-License-Identifier: MIT */
/*
 * One sentence into a caller's buffer, and the negative errno to return:
 * how the loader reports a rejected input (main() prints the sentence).
 */
#ifndef LULL_ERRMSG_H
#define LULL_ERRMSG_H

#include <stddef.h>

int errmsg(char *err, size_t err_len, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
