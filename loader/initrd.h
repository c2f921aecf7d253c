/* SPDX-License-Identifier: MIT */
/*
 * Where the initrd goes in guest RAM, for either boot protocol: page
 * aligned, as high as the kernel allows, off the kernel's own range and
 * off everything below 1 MiB (low memory, the VMM's boot and ACPI areas).
 * High, as QEMU and the boot protocol advise, so that the kernel finds the
 * memory right after its own image free for its early allocations.
 *
 * Pure function: no KVM, no guest RAM, no globals.
 */
#ifndef LULL_INITRD_H
#define LULL_INITRD_H

#include <stddef.h>
#include <stdint.h>

/* Nothing goes below this: low memory and the VMM's areas (lull_abi.h). */
#define INITRD_LOWEST_GPA (1ull << 20)

/*
 * Picks *addr for an initrd of size bytes (size > 0) so that
 * [*addr, *addr + size) lies in [INITRD_LOWEST_GPA, min(ram_size, limit))
 * and misses [kernel_start, kernel_end). limit is one past the last byte
 * the kernel accepts (a bzImage's initrd_addr_max + 1; UINT64_MAX for
 * none). Errors: -E2BIG, with one sentence in err, when no such place
 * exists.
 */
int initrd_place(uint64_t ram_size, uint64_t size, uint64_t limit,
		 uint64_t kernel_start, uint64_t kernel_end, uint64_t *addr,
		 char *err, size_t err_len);

#endif
