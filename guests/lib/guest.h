/* SPDX-License-Identifier: MIT */
/* guest.h: everything a test guest includes. */
#ifndef GUEST_GUEST_H
#define GUEST_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lull_abi.h>

#include "clock.h"
#include "cmdline.h"
#include "idt.h"
#include "lapic.h"
#include "lull.h"
#include "printf.h"
#include "rt.h"
#include "smp.h"
#include "stats.h"
#include "string.h"
#include "timer.h"
#include "upcall.h"
#include "x86.h"

#endif
