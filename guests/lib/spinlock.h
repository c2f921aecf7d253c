/* SPDX-License-Identifier: MIT */
/*
 * spinlock.h: a test-and-test-and-set lock for the few shared structures
 * (the serial line). Zero-initialised = unlocked, so a lock in BSS works
 * before vCPU 0 has run any init code. A lock that interrupt handlers
 * also take is held with interrupts off (spin_lock_irqsave), or a handler
 * on the holder's vCPU would spin on it forever.
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

static inline uint64_t spin_lock_irqsave(struct spinlock *l)
{
	uint64_t flags = irq_save();

	spin_lock(l);
	return flags;
}

static inline void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
	spin_unlock(l);
	irq_restore(flags);
}

#endif
