// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the PVH loader: the input is a guest ELF file.
 *
 * It goes to pvh_load_elf() with 4 MiB of zeroed guest RAM and, when that
 * accepts it, hvm_start_info is built with a command line picked by the
 * file's last byte (none, short, the longest allowed, one too long).
 * Besides "no crash, no UB, no leak" (ASan+UBSan), it checks the contract
 * in pvh.h; a violation is __builtin_trap(), so a logic bug is a crash too:
 *  - a rejected image returns -ENOEXEC or -ERANGE with a sentence in err,
 *    and has not touched a byte of RAM;
 *  - an accepted one reports load_start < load_end <= RAM size, an entry
 *    inside [load_start, load_end), left the boot area alone and wrote no
 *    page outside [load_start, load_end);
 *  - start_info lands at LULL_START_INFO_GPA with the magic, a memory map
 *    inside RAM and the command line NUL-terminated at LULL_CMDLINE_GPA, and
 *    writes nothing outside the boot area.
 *
 * What was written is told by page residency, not by scanning 4 MiB per
 * input: RAM is an anonymous mapping dropped with MADV_DONTNEED after each
 * run, so a page is resident (mincore) exactly when something touched it.
 * The loader never reads RAM and the harness reads only pages it expects
 * to have been written.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#define RAM_SIZE (4ull << 20)

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

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static const char *pick_cmdline(const uint8_t *data, size_t size)
{
	switch (size ? data[size - 1] % 5 : 0) {
	case 0:
		return NULL;
	case 1:
		return "";
	case 2:
		return "seconds=5 quiet";
	case 3:
		/* the longest allowed: LULL_CMDLINE_MAX - 1 bytes */
		return long_cmdline + 1;
	default:
		return long_cmdline; /* one byte too long: -E2BIG */
	}
}

static void check_start_info(const char *cmdline)
{
	struct lull_hvm_start_info si;
	struct lull_hvm_memmap_entry e;
	size_t len = cmdline ? strlen(cmdline) : 0;
	uint64_t end = 0;

	memcpy(&si, ram + LULL_START_INFO_GPA, sizeof(si));
	check(si.magic == LULL_HVM_START_MAGIC && si.version == 1);
	check(si.memmap_entries >= 1 && si.memmap_entries <= 3);
	check(si.memmap_paddr >= LULL_START_INFO_GPA + sizeof(si));
	check(si.memmap_paddr + si.memmap_entries * sizeof(e) <=
	      LULL_CMDLINE_GPA);
	for (uint32_t i = 0; i < si.memmap_entries; i++) {
		memcpy(&e, ram + si.memmap_paddr + i * sizeof(e), sizeof(e));
		/* in order, back to back, inside RAM */
		check(e.addr == end && e.size && e.addr + e.size <= RAM_SIZE);
		end = e.addr + e.size;
	}
	check(end == RAM_SIZE);
	if (len) {
		check(si.cmdline_paddr == LULL_CMDLINE_GPA);
		check(memcmp(ram + LULL_CMDLINE_GPA, cmdline, len + 1) == 0);
	} else {
		check(si.cmdline_paddr == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvh_image img = { 0 };
	char err[256] = "";
	const char *cmdline;
	int64_t si;
	int ret;

	ret = pvh_load_elf(data, size, ram, RAM_SIZE, &img, err, sizeof(err));
	if (ret) {
		check(ret == -ENOEXEC || ret == -ERANGE);
		check(err[0] && memchr(err, 0, sizeof(err)));
		check(fuzz_ram_only_touched(0, 0, false));
		return 0;
	}

	check(img.load_start < img.load_end && img.load_end <= RAM_SIZE);
	check(img.entry >= img.load_start && img.entry < img.load_end);
	check(fuzz_ram_only_touched(img.load_start, img.load_end, false));
	/* No segment may touch the boot or ACPI area: still all zero. */
	check(all_zero(ram + LULL_START_INFO_GPA,
		       LULL_BOOT_AREA_END - LULL_START_INFO_GPA));

	cmdline = pick_cmdline(data, size);
	si = pvh_write_start_info(ram, RAM_SIZE, cmdline, 0, err, sizeof(err));
	if (cmdline && strlen(cmdline) >= LULL_CMDLINE_MAX) {
		check(si == -E2BIG);
	} else {
		check(si == LULL_START_INFO_GPA);
		check_start_info(cmdline);
	}
	check(fuzz_ram_only_touched(img.load_start, img.load_end, true));
	/* read only now: reading maps pages that fuzz_ram_only_touched() would see */
	check(all_zero(ram + LULL_ACPI_RSDP_GPA,
		       LULL_ACPI_AREA_END - LULL_ACPI_RSDP_GPA));

	/* Back to all-zero, unbacked RAM for the next input. */
	fuzz_ram_reset();
	return 0;
}
