/* SPDX-License-Identifier: MIT */
/*
 * Port and MMIO exits: the device map. What no device claims reads as all
 * ones and swallows writes; each such access is counted and the first one
 * per address is logged. Nothing a guest does here can stop the VMM.
 */
#ifndef LULL_IO_H
#define LULL_IO_H

#include "vcpu.h"

extern const struct vcpu_ops vm_vcpu_ops;

#endif
