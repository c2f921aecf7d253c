/* SPDX-License-Identifier: MIT */
/*
 * Private to timers/: the circular doubly linked list behind every wheel slot
 * and the due list, plus the sort that puts due timers in run order. A list
 * head links to itself when empty, so unlinking a timer never needs to know
 * which list holds it.
 */
#ifndef LULL_TIMERS_WHEEL_LIST_H
#define LULL_TIMERS_WHEEL_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "wheel.h"

static inline void wheel_list_init(struct wheel_link *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool wheel_list_empty(const struct wheel_link *head)
{
	return head->next == head;
}

static inline void wheel_list_add_tail(struct wheel_link *node,
				       struct wheel_link *head)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void wheel_list_del(struct wheel_link *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
}

/* Move every node of @from to the tail of @to, leaving @from empty. */
static inline void wheel_list_splice_tail(struct wheel_link *from,
					  struct wheel_link *to)
{
	if (wheel_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	wheel_list_init(from);
}

static inline struct wheel_timer *wheel_timer_of(struct wheel_link *link)
{
	return (struct wheel_timer *)((char *)link -
				      offsetof(struct wheel_timer, link));
}

/* Sort @head's nodes into run order: by expiry, then by arm order. */
void wheel_list_sort(struct wheel_link *head);

/* True if @a runs before @b when both are due in the same advance. */
bool wheel_timer_runs_before(const struct wheel_timer *a,
			     const struct wheel_timer *b);

#endif /* LULL_TIMERS_WHEEL_LIST_H */
