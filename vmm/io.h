/* SPDX-License-Identifier: MIT */
/*
 * Port and MMIO exits: the device map. What no device claims reads as all
 * ones and swallows writes; each such access is counted and the first one
 * per address is logged. Nothing a guest does here can stop the VMM.
 */
#ifndef LULL_IO_H
#define LULL_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "vcpu.h"

#define UNCLAIMED_MMIO_LOGGED 64

/* Accesses no device claims: counted; the first per address logged. */
struct unclaimed {
	atomic_uint_fast64_t io, mmio;
	_Atomic uint64_t port_logged[65536 / 64];
	pthread_mutex_t mmio_lock;
	/* a fixed table: a guest sweeping addresses cannot grow it */
	uint64_t mmio_logged[UNCLAIMED_MMIO_LOGGED];
	unsigned nr_mmio_logged;
};

void unclaimed_init(struct unclaimed *u);

extern const struct vcpu_ops vm_vcpu_ops;

#endif
