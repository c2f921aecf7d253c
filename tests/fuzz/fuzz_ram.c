// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <sys/mman.h>

#include "fuzz.h"
#include "lull_abi.h"

#define PAGE 4096ull

static uint8_t *ram;
static uint64_t ram_size;
static unsigned char *resident; /* one byte per page, for mincore */

uint8_t *fuzz_ram_map(uint64_t size)
{
	check(!ram && size && size % PAGE == 0);
	ram = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	check(ram != MAP_FAILED);
	/* Residency is tracked per 4 KiB page: no transparent huge pages. */
	madvise(ram, size, MADV_NOHUGEPAGE);
	resident = malloc(size / PAGE);
	check(resident);
	ram_size = size;
	return ram;
}

bool fuzz_ram_only_touched(uint64_t lo, uint64_t hi, bool boot)
{
	check(mincore(ram, ram_size, resident) == 0);
	for (uint64_t p = 0; p < ram_size / PAGE; p++) {
		uint64_t a = p * PAGE;

		if (!(resident[p] & 1))
			continue;
		if (a + PAGE > lo && a < hi)
			continue;
		if (boot && a + PAGE > LULL_START_INFO_GPA &&
		    a < LULL_BOOT_AREA_END)
			continue;
		return false;
	}
	return true;
}

void fuzz_ram_reset(void)
{
	check(madvise(ram, ram_size, MADV_DONTNEED) == 0);
}
