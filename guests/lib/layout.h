/* SPDX-License-Identifier: MIT */
/*
 * layout.h: sizes shared by the assembly entry and the C runtime.
 * Plain #defines only: this file is included from .S files too.
 */
#ifndef GUEST_LAYOUT_H
#define GUEST_LAYOUT_H

#define RT_MAX_VCPUS 64
#define RT_STACK_SIZE 16384 /* per vCPU; interrupts run on it too (no IST) */

#define GDT_CODE64 0x08
#define GDT_DATA 0x10

#endif
