/* SPDX-License-Identifier: MIT */
/*
 * spinlock.h: a test-and-test-and-set lock for the few shared structures
 * (the serial line). Zero-initialised = unlocked, so a lock in BSS works
 * before vCPU 0 has run any init code.
 */
#ifndef GUEST_SPINLOCK_H
#define GUEST_SPINLOCK_H

#include "x86.h"

struct spinlock {
	int locked;
};

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (READ_ONCE(l->locked))
			cpu_relax();
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

#endif
