/* SPDX-License-Identifier: MIT */
/*
 * Pending guest interrupts of one vCPU. lull has no in-kernel irqchip, so
 * this is the whole interrupt controller: a set of pending vectors, each an
 * edge (raising a pending vector again merges into it), delivered highest
 * vector first (staged in kvm_run's synced events, or KVM_INTERRUPT). A
 * vector may owe several deliveries (the "all" missed-ticks policy); that
 * count is capped so a guest cannot make it grow without bound. Owned by
 * the vCPU thread; other threads post vectors through vcpu_post_vector().
 */
#ifndef LULL_IRQ_H
#define LULL_IRQ_H

#include <stdbool.h>
#include <stdint.h>

#define IRQ_MAX_OWED 1024u

enum irq_source { IRQ_SRC_IPI = 0, IRQ_SRC_HARD, IRQ_SRC_DEFERRED };

struct irq_queue {
	uint64_t pending[4];
	uint32_t owed[256];
	/* expiry of the oldest undelivered timer raise; lateness is measured from it */
	uint64_t since[256];
	uint8_t source[256];
};

/* Raises vector `times` times. As an edge (accumulate false) a raise onto
 * a vector still owed merges into it; accumulating, every raise is owed a
 * delivery of its own. Returns how many raises merged or were dropped at
 * the cap. */
uint32_t irq_raise(struct irq_queue *q, uint8_t vector, uint32_t times,
		   bool accumulate, enum irq_source src, uint64_t since);
bool irq_any_pending(const struct irq_queue *q);
/* Highest pending vector, or -1. */
int irq_highest(const struct irq_queue *q);
/* Takes one delivery of vector off the queue. */
void irq_consume(struct irq_queue *q, uint8_t vector);

#endif
