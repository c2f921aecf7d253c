/* SPDX-License-Identifier: MIT */
/*
 * The VM's side of the vcpu_ops boundary (vm_vcpu_ops): what a vCPU
 * thread hands up to the VM. Port and MMIO exits go through the device
 * map, one table of ranges and handlers per address space in exits.c, in
 * the order of include/platform.h; MSRs the APIC does not have fault; IPIs
 * and the I/O APIC's messages are routed to the vCPUs they name; and the
 * vCPU's clock, confinement and crash hooks end here too.
 *
 * What no device claims reads as all ones and swallows writes (an MSR
 * faults, as on hardware); each such access is counted and the first one
 * per address is logged. Nothing a guest does here can stop the VMM.
 */
#ifndef LULL_EXITS_H
#define LULL_EXITS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vcpu/vcpu.h"

#define UNCLAIMED_LOGGED 64

/* Accesses no device claims: counted; the first per address logged. */
struct unclaimed {
	atomic_uint_fast64_t io, mmio, msr, ipi;
	_Atomic uint64_t port_logged[65536 / 64];
	pthread_mutex_t lock;
	/* MMIO addresses and MSRs (tagged) seen: a fixed table, so a guest
	 * sweeping addresses cannot grow it */
	uint64_t logged[UNCLAIMED_LOGGED];
	unsigned nr_logged;
};

void unclaimed_init(struct unclaimed *u);

extern const struct vcpu_ops vm_vcpu_ops;

/* The I/O APIC's messages to the vCPUs (an ioapic_deliver_fn; opaque is
 * the VM), and COM1's interrupt line to its pin (a serial_irq_fn). */
void vm_ioapic_deliver(void *opaque, const struct apic_ipi *msg);
void vm_serial_irq(void *opaque, bool level);

#endif
