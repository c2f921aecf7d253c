// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the bzImage loader: the input is a kernel file.
 *
 * It goes to bzimage_load() with 64 MiB of zeroed guest RAM and, when that
 * accepts it, an initrd is placed (initrd_place, its size taken from the
 * file's last bytes) and boot_params written with a command line picked by
 * the last byte (none, short, the kernel's limit, one past it, one past
 * lull's). Besides "no crash, no UB, no leak" (ASan+UBSan), it checks the
 * contract in bzimage.h and initrd.h; a violation is __builtin_trap():
 *  - a rejected image returns -ENOEXEC or -ERANGE with a sentence in err,
 *    and has not touched a byte of RAM;
 *  - an accepted one loads at 1 MiB or above, its init_size range ends
 *    inside RAM, the entry is load + 0x200, the kernel bytes are the
 *    file's tail and no page outside them was written;
 *  - the initrd, when placed, lies page-aligned inside RAM and the limit,
 *    above 1 MiB and off the kernel's range;
 *  - boot_params, the GDT and the page tables are written inside the boot
 *    area only, with the loader type, the command line pointer and string,
 *    the ramdisk and an e820 map that covers RAM back to back; a command
 *    line the kernel cannot take is -E2BIG and writes nothing.
 *
 * What was written is told by page residency, as in fuzz_pvh.c: RAM is an
 * anonymous mapping dropped with MADV_DONTNEED after each run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loader/bzimage.h"
#include "loader/initrd.h"
#include "lull_abi.h"

#define RAM_SIZE (64ull << 20)
#define PAGE 4096ull

static uint8_t *ram;
static char long_cmdline[LULL_CMDLINE_MAX + 1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ram = fuzz_ram_map(RAM_SIZE);
	memset(long_cmdline, 'x', sizeof(long_cmdline) - 1);
	return 0;
}

static const char *pick_cmdline(const struct bzimage_kernel *k,
				const uint8_t *data, size_t size)
{
	size_t at_limit = k->cmdline_max < LULL_CMDLINE_MAX - 1 ?
				  k->cmdline_max :
				  LULL_CMDLINE_MAX - 1;

	switch (data[size - 1] % 5) {
	case 0:
		return NULL;
	case 1:
		return "console=ttyS0";
	case 2:
		return long_cmdline + LULL_CMDLINE_MAX - at_limit;
	case 3: /* one past the kernel's limit, or lull's */
		return long_cmdline + LULL_CMDLINE_MAX - at_limit - 1;
	default:
		return long_cmdline;
	}
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void check_boot_params(const char *cmdline, uint64_t rd_addr,
			      uint64_t rd_size)
{
	const uint8_t *bp = ram + LULL_BOOT_PARAMS_GPA;
	size_t len = cmdline ? strlen(cmdline) : 0;
	uint64_t end = 0;

	check(bp[HDR_TYPE_OF_LOADER] == BZ_LOADER_UNDEFINED);
	check(get32(bp + HDR_CMD_LINE_PTR) == LULL_CMDLINE_GPA);
	check(memcmp(ram + LULL_CMDLINE_GPA, cmdline ? cmdline : "", len) == 0);
	check(ram[LULL_CMDLINE_GPA + len] == 0);
	check(get32(bp + HDR_RAMDISK_IMAGE) == rd_addr);
	check(get32(bp + HDR_RAMDISK_SIZE) == rd_size);
	check(bp[BP_E820_ENTRIES] >= 1 && bp[BP_E820_ENTRIES] <= 3);
	for (unsigned i = 0; i < bp[BP_E820_ENTRIES]; i++) {
		const uint8_t *e = bp + BP_E820_TABLE + i * 20;

		check(get64(e) == end && get64(e + 8));
		end += get64(e + 8);
	}
	check(end == RAM_SIZE);
	check(get64(ram + LULL_BOOT_PML4_GPA) == (LULL_BOOT_PDPT_GPA | 3));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bzimage_kernel k = { 0 };
	uint64_t kernel_end, rd_addr = 0, rd_size = 0, copied;
	char err[300] = "";
	const char *cmdline;
	int64_t bp;
	int ret;

	ret = bzimage_load(data, size, ram, RAM_SIZE, &k, err, sizeof(err));
	if (ret) {
		check(ret == -ENOEXEC || ret == -ERANGE);
		check(err[0] && memchr(err, 0, sizeof(err)));
		check(fuzz_ram_only_touched(0, 0, false));
		return 0;
	}

	kernel_end = k.load_addr + k.init_size;
	check(k.load_addr >= INITRD_LOWEST_GPA && k.load_addr % PAGE == 0);
	check(kernel_end <= RAM_SIZE && k.entry == k.load_addr + 0x200);
	copied = size - ((data[HDR_SETUP_SECTS] ? data[HDR_SETUP_SECTS] : 4) +
			 1ull) * 512;
	check(copied <= k.init_size);
	check(memcmp(ram + k.load_addr, data + size - copied, copied) == 0);
	check(fuzz_ram_only_touched(k.load_addr, k.load_addr + copied, false));

	/* an initrd of up to 64 MiB from the last three bytes */
	rd_size = (uint64_t)data[size - 1] << 18 | data[size - 2] << 10 |
		  data[size - 3];
	if (rd_size &&
	    initrd_place(RAM_SIZE, rd_size, k.initrd_limit, k.load_addr,
			 kernel_end, &rd_addr, err, sizeof(err)) == 0) {
		check(rd_addr % PAGE == 0 && rd_addr >= INITRD_LOWEST_GPA);
		check(rd_addr + rd_size <= RAM_SIZE &&
		      rd_addr + rd_size <= k.initrd_limit);
		check(rd_addr + rd_size <= k.load_addr || rd_addr >= kernel_end);
	} else {
		rd_size = 0;
		rd_addr = 0;
	}

	cmdline = pick_cmdline(&k, data, size);
	bp = bzimage_write_boot_params(ram, RAM_SIZE, &k, cmdline, rd_addr,
				       rd_size, LULL_ACPI_RSDP_GPA, err,
				       sizeof(err));
	if (cmdline && (strlen(cmdline) > k.cmdline_max ||
			strlen(cmdline) >= LULL_CMDLINE_MAX)) {
		check(bp == -E2BIG);
		check(fuzz_ram_only_touched(k.load_addr, k.load_addr + copied, false));
	} else {
		check(bp == LULL_BOOT_PARAMS_GPA);
		check(fuzz_ram_only_touched(k.load_addr, k.load_addr + copied, true));
		check_boot_params(cmdline, rd_addr, rd_size);
	}

	fuzz_ram_reset();
	return 0;
}
