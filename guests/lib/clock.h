/* SPDX-License-Identifier: MIT */
/*
 * clock.h: guest time in ns from this vCPU's pvclock record.
 *
 * Under lull the record is the clock at the start of the vCPU's shared
 * page (registered with LULL_HC_SET_SHARED_PAGE); under KVM it is the
 * kvmclock of the same page (MSR_KVM_SYSTEM_TIME_NEW), which has the
 * same layout. Without either (QEMU with TCG, bare metal) the runtime
 * writes the record itself: the TSC at the rate tsc.h finds, 0 at boot.
 * Each vCPU reads only its own record. Without any of them,
 * clock_available() is false and clock_ns() returns 0.
 */
#ifndef GUEST_CLOCK_H
#define GUEST_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <lull_abi.h>

enum clock_source { CLOCK_NONE, CLOCK_LULL, CLOCK_KVM, CLOCK_TSC };

/* Picks the source; vCPU 0 before the others start (the runtime calls it). */
void clock_init(void);
/* Registers this vCPU's page; 0 or a negative errno (the runtime calls it). */
int clock_init_this_vcpu(void);
bool clock_available(void);
enum clock_source clock_source(void);
/* "lull-pvclock", "kvmclock", "tsc-<how>" (see tsc.h) or "none". */
const char *clock_name(void);
/* CLOCK_TSC: the TSC rate and how it was found ("pit", "cpuid-0x15", ...). */
uint64_t clock_tsc_hz(const char **how);
uint64_t clock_ns(void);
/* The version/retry read of one pvclock record. */
uint64_t pvclock_read(const volatile struct lull_pvclock *c);
/* This vCPU's page (lull: the whole shared page; KVM: only .clock is used). */
struct lull_shared_page *shared_page(void);
/* The shared page of vCPU i (for the abi guest's re-registration tests). */
struct lull_shared_page *shared_page_of(unsigned i);
/*
 * The TSC value at which this vCPU's clock_ns() reaches ns, rounded up
 * (a TSC-deadline timer armed with it is never early); the TSC now if ns
 * has passed, UINT64_MAX if it is centuries away.
 */
uint64_t clock_tsc_at(uint64_t ns);
/* Busy-wait (interrupts untouched) until clock_ns() >= t. */
void clock_wait_until(uint64_t t);

#endif
