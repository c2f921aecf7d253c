/* SPDX-License-Identifier: MIT */
/*
 * cmdline.h: the PVH command line as space-separated key=value words,
 * e.g. "seconds=3 count=100". vCPU 0 copies it once at boot (before any
 * other vCPU runs guest code); afterwards it is read-only.
 */
#ifndef GUEST_CMDLINE_H
#define GUEST_CMDLINE_H

#include <stdbool.h>
#include <stdint.h>

void cmdline_init(const char *src); /* NULL: empty command line */
const char *cmdline(void);
/* Value of key=N (decimal, or hex with 0x), or def if absent or malformed. */
uint64_t cmdline_u64(const char *key, uint64_t def);
bool cmdline_has(const char *key);
/* Whether key=value is there, value matching the whole word. */
bool cmdline_is(const char *key, const char *value);

#endif
