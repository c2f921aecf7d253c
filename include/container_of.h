/* SPDX-License-Identifier: MIT */
/* The structure that holds a member, from a pointer to that member. */
#ifndef LULL_CONTAINER_OF_H
#define LULL_CONTAINER_OF_H

#include <stddef.h>

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif
