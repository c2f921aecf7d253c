// SPDX-License-Identifier: MIT
/*
 * The initrd's place: the highest page-aligned range under the top that
 * ends below the kernel's range or starts above it. Two candidates are
 * enough: right under the top, and right under the kernel's start.
 */
#include <errno.h>
#include <stdbool.h>

#include "loader/errmsg.h"
#include "loader/initrd.h"

#define PAGE_SIZE 4096ull

static uint64_t page_down(uint64_t v)
{
	return v & ~(PAGE_SIZE - 1);
}

static bool fits(uint64_t addr, uint64_t size, uint64_t top,
		 uint64_t kernel_start, uint64_t kernel_end)
{
	return addr >= INITRD_LOWEST_GPA && addr <= top && size <= top - addr &&
	       (addr + size <= kernel_start || addr >= kernel_end);
}

int initrd_place(uint64_t ram_size, uint64_t size, uint64_t limit,
		 uint64_t kernel_start, uint64_t kernel_end, uint64_t *addr,
		 char *err, size_t err_len)
{
	uint64_t top = page_down(ram_size < limit ? ram_size : limit);

	if (size && size <= top) {
		uint64_t high = page_down(top - size);

		if (fits(high, size, top, kernel_start, kernel_end)) {
			*addr = high;
			return 0;
		}
		if (size <= kernel_start) {
			uint64_t below = page_down(kernel_start - size);

			if (fits(below, size, top, kernel_start, kernel_end)) {
				*addr = below;
				return 0;
			}
		}
	}
	return errmsg(
		err, err_len, E2BIG,
		"the initrd (%llu bytes) does not fit in guest RAM between 1 MiB and 0x%llx beside the kernel at [0x%llx, 0x%llx): give more --mem",
		(unsigned long long)size, (unsigned long long)top,
		(unsigned long long)kernel_start,
		(unsigned long long)kernel_end);
}
